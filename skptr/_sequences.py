"""Turning user input into padded arrays with lengths, and validating it.

Every estimator in skptr accepts sequences in several shapes: numeric sequences,
orderings (index sequences into them) and token sequences. This module is the one place
where they are checked and converted, so that bad input fails early with a message that
names the offending sample instead of a backend traceback.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "PaddedSequences",
    "check_numeric_sequence",
    "check_numeric_sequences",
    "check_ordering",
    "check_orderings",
    "check_token_sequences",
    "token_key",
]


class NonNumericSequenceError(ValueError, TypeError):
    """A sequence step is not a number.

    A ``ValueError`` (the input is malformed) that is also a ``TypeError``, the error
    NumPy raises for the same conversion.
    """


class PaddedSequences:
    """Right-padded numeric sequences with their true lengths.

    Parameters
    ----------
    values : ndarray of shape (n_samples, max_length, n_features)
        The sequences, zero-padded after each sample's last step.
    lengths : ndarray of shape (n_samples,)
        Number of real steps of each sample.
    """

    def __init__(self, values, lengths):
        self.values = values
        self.lengths = lengths

    @property
    def n_samples(self):
        """Number of sequences."""
        return self.values.shape[0]

    @property
    def max_length(self):
        """Length of the longest sequence (the padded length)."""
        return self.values.shape[1]

    @property
    def n_features(self):
        """Number of features per step."""
        return self.values.shape[2]

    @property
    def mask(self):
        """Boolean array of shape (n_samples, max_length), True on real steps."""
        return np.arange(self.max_length)[None, :] < self.lengths[:, None]

    def sequence(self, i):
        """Return sample ``i`` without padding, shape (length_i, n_features)."""
        return self.values[i, : self.lengths[i]]


def _as_array(sample, label):
    try:
        return np.asarray(sample)
    except ValueError as exc:
        raise ValueError(f"{label} could not be read as an array: {exc}") from None


def _as_numeric_array(sample, label):
    """Return one sample as an array of numbers (integers, booleans or floats)."""
    array = _as_array(sample, label)
    if array.dtype.kind in "USMmV":
        raise NonNumericSequenceError(
            f"{label} is not numeric (dtype {array.dtype}); skptr sequence estimators need "
            "numbers, one number or one vector of numbers per step (convert texts, dates "
            "and times to numbers first)."
        )
    if array.dtype == object and any(
        isinstance(item, np.datetime64 | np.timedelta64) for item in array.flat
    ):  # NumPy would turn them into counts of days or seconds
        raise NonNumericSequenceError(
            f"{label} holds dates or times; skptr sequence estimators need numbers (convert "
            "dates and times to numbers first)."
        )
    if array.dtype == object or not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
        try:
            array = array.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise NonNumericSequenceError(
                f"{label} is not numeric (dtype {array.dtype}: {exc}); skptr sequence "
                "estimators need numbers, one number or one vector of numbers per step."
            ) from None
    if np.iscomplexobj(array):
        raise ValueError(f"{label} holds complex numbers: Complex data not supported.")
    return array


def _exact_integers(array, dtype):
    """Whether every integer of ``array`` is exact in the float ``dtype`` (within
    +-2**24 for float32)."""
    limit = 2 ** (np.finfo(dtype).nmant + 1)
    return bool(array.max() <= limit and array.min() >= -limit)


def _check_integers_stay_distinct(array, label, dtype):
    """Refuse integers that become equal once converted to the float ``dtype``."""
    if _exact_integers(array, dtype):
        return
    exact_bits = np.finfo(dtype).nmant + 1
    distinct = np.unique(array)
    rounded = distinct.astype(dtype)
    collapsed = np.flatnonzero(rounded[1:] == rounded[:-1])
    if collapsed.size:
        first = collapsed[0]
        raise ValueError(
            f"{label} holds the distinct integers {distinct[first]} and {distinct[first + 1]}, "
            f"which are the same {np.dtype(dtype).name} value ({float(rounded[first]):.8g}), "
            "so they cannot be told apart once converted. Rescale the data (e.g. subtract "
            f"an offset) so that its integers stay within +-2**{exact_bits}, where "
            f"{np.dtype(dtype).name} is exact."
        )


def check_numeric_sequence(sequence, *, name, dtype=np.float64):
    """Validate one numeric sequence and convert it to ``dtype``.

    Parameters
    ----------
    sequence : array-like of shape (n_steps,) or (n_steps, n_features)
        One number or one vector of numbers per step.
    name : str
        Name of the sequence, used in error messages (e.g. ``"X[3]"`` or ``"points"``).
    dtype : numpy float dtype, default=np.float64
        Dtype to convert to.

    Returns
    -------
    ndarray of shape (n_steps, n_features)

    Raises
    ------
    ValueError
        If the sequence is empty, not numeric, has more than two dimensions, holds NaN
        or infinity, a value that overflows ``dtype``, or distinct integers that
        ``dtype`` cannot tell apart.
    """
    array = _as_numeric_array(sequence, name)
    if array.ndim == 1:
        array = array[:, None]
    elif array.ndim != 2:
        raise ValueError(
            f"{name} has {array.ndim} dimensions; each sample must be (n_steps,) or "
            "(n_steps, n_features)."
        )
    if array.shape[0] == 0:
        raise ValueError(f"{name} is an empty sequence; every sample needs a step.")
    if array.shape[1] == 0:
        raise ValueError(f"{name} has zero features per step.")
    if array.dtype.kind in "iu":
        _check_integers_stay_distinct(array, name, dtype)
    with np.errstate(over="ignore"):
        converted = array.astype(dtype)
    finite = np.isfinite(converted)
    if not finite.all():
        step, feature = np.argwhere(~finite)[0]
        value = array[step, feature]
        if not np.isfinite(value):
            raise ValueError(f"{name} contains NaN or infinity (first at step {step}).")
        raise ValueError(
            f"{name} holds {float(value):g} at step {step}, which overflows "
            f"{np.dtype(dtype).name} (largest finite value ~{np.finfo(dtype).max:.1e}); "
            "rescale the data."
        )
    return converted


# Each kind of sample: the array shapes that may hold a collection of them (in words, and
# as numbers of dimensions of a non-object NumPy array).
_ARRAY_LAYOUTS = {
    "numeric sequences": (
        "2-D (n_samples, n_steps), 3-D (n_samples, n_steps, n_features)",
        (2, 3),
    ),
    "orderings": ("2-D (n_samples, n_outputs) with -1 padding", (2,)),
    "token sequences": ("2-D (one token sequence per row)", (2,)),
}


def _as_array_if_array_like(X):
    """A container that converts to NumPy (a pandas DataFrame or Series, an object with
    ``__array__``) as its array; lists, tuples, arrays and anything else unchanged."""
    if isinstance(X, list | tuple | np.ndarray | str | bytes):
        return X
    if hasattr(X, "to_numpy"):
        return X.to_numpy()
    if hasattr(X, "__array__"):
        return np.asarray(X)
    return X


def _split_samples(X, name, what):
    """Return the samples of any accepted container as a list.

    Parameters
    ----------
    X : object
        The user's container of samples.
    name : str
        Name of the argument, used in error messages.
    what : {"numeric sequences", "orderings", "token sequences"}
        What the samples are.

    Raises
    ------
    TypeError
        If ``X`` is sparse, a single string or not a collection.
    ValueError
        If ``X`` is an array with the wrong number of dimensions, or is empty.
    """
    if hasattr(X, "toarray") or hasattr(X, "tocsr"):
        raise TypeError(
            f"{name} is a sparse matrix; sparse input is not supported, pass dense {what}."
        )
    if isinstance(X, str | bytes):
        single = "string" if isinstance(X, str) else "bytes object"
        raise TypeError(
            f"{name} must be a collection of {what} (an array or a list), got a single {single}."
        )
    X = _as_array_if_array_like(X)
    array_layout, array_ndims = _ARRAY_LAYOUTS[what]
    if isinstance(X, np.ndarray) and X.dtype != object and X.ndim not in array_ndims:
        raise ValueError(
            f"{name} must be {array_layout} or a list of {what}; got an array of shape "
            f"{X.shape}. Reshape your data: a single sequence s is passed as [s]."
        )
    try:
        samples = list(X)
    except TypeError:
        raise TypeError(
            f"{name} must be a collection of {what} (an array or a list), got {type(X).__name__}."
        ) from None
    if not samples:
        raise ValueError(f"{name} holds no samples; at least one sequence is required.")
    return samples


def _regular_numeric_array(X, dtype):
    """``X`` as a valid (n_samples, n_steps, n_features) array of ``dtype``, when it is a
    2-D or 3-D array of real numbers that passes every check of
    :func:`check_numeric_sequence` as a whole; None otherwise (the sample-by-sample
    checks then name the problem and the sample)."""
    if not (isinstance(X, np.ndarray) and X.ndim in (2, 3) and X.dtype.kind in "biuf"):
        return None
    array = X if X.ndim == 3 else X[:, :, None]
    if 0 in array.shape:
        return None
    if array.dtype.kind in "iu" and not _exact_integers(array, dtype):
        return None
    with np.errstate(over="ignore"):
        converted = array.astype(dtype)
    return converted if np.isfinite(converted).all() else None


def check_numeric_sequences(X, *, n_features=None, name="X", dtype=np.float32):
    """Validate numeric sequences and pad them into one array.

    Parameters
    ----------
    X : array-like
        A 2-D array ``(n_samples, n_steps)`` (one number per step), a 3-D array
        ``(n_samples, n_steps, n_features)``, or a list of ``(n_steps_i,)`` or
        ``(n_steps_i, n_features)`` arrays whose lengths may differ.
    n_features : int, optional
        Number of features per step the data must have (the one seen in ``fit``).
    name : str, default="X"
        Name of the argument, used in error messages.
    dtype : numpy float dtype, default=np.float32
        Dtype of the padded values.

    Returns
    -------
    PaddedSequences
        The zero-padded values and the length of each sample.

    Raises
    ------
    ValueError
        If a sample fails :func:`check_numeric_sequence`, or has a different number of
        features per step than the others (or than ``n_features``).
    TypeError
        If ``X`` is not a collection of samples.
    """
    regular = _regular_numeric_array(X, dtype)
    if regular is not None:
        if n_features is None or regular.shape[2] == n_features:
            return PaddedSequences(regular, np.full(len(regular), regular.shape[1]))
    samples = _split_samples(X, name, "numeric sequences")
    arrays = []
    for index, sample in enumerate(samples):
        array = check_numeric_sequence(sample, name=f"{name}[{index}]", dtype=dtype)
        if arrays and array.shape[1] != arrays[0].shape[1]:
            raise ValueError(
                f"{name}[{index}] has {array.shape[1]} features per step but {name}[0] has "
                f"{arrays[0].shape[1]}; all samples must have the same number of features."
            )
        arrays.append(array)
    width = arrays[0].shape[1]
    if n_features is not None and width != n_features:
        raise ValueError(
            f"{name} has {width} features per step, but the estimator was fitted with "
            f"{n_features} features per step."
        )
    lengths = np.fromiter((a.shape[0] for a in arrays), dtype=np.int64, count=len(arrays))
    values = np.zeros((len(arrays), int(lengths.max()), width), dtype=dtype)
    for i, array in enumerate(arrays):
        values[i, : array.shape[0]] = array
    return PaddedSequences(values, lengths)


def token_key(token):
    """Key telling tokens apart by type as well as value.

    ``True == 1`` and ``(True,) == (1,)`` in Python, so comparing or hashing tokens
    directly would merge such tokens; keys differ by type (inside tuples and frozensets
    too), so ``True`` and ``1`` stay distinct tokens.
    """
    if isinstance(token, tuple):
        return type(token), tuple(token_key(item) for item in token)
    if isinstance(token, frozenset):
        return type(token), frozenset(token_key(item) for item in token)
    return type(token), token


def _check_token(token, label, position):
    try:
        hash(token)
    except TypeError:
        raise ValueError(
            f"{label} has an unhashable token at position {position} "
            f"({type(token).__name__}); tokens must be hashable (str, int, tuple, ...)."
        ) from None
    if isinstance(token, complex):
        raise ValueError(
            f"{label} has the complex token {token!r} at position {position}: Complex data "
            "not supported; tokens are discrete symbols (str, int, tuple, ...)."
        )
    if isinstance(token, float):
        what = "a NaN token" if math.isnan(token) else f"the number token {token!r}"
        raise ValueError(
            f"{label} has {what} at position {position}; tokens are discrete symbols (str, "
            "int, tuple, ...), not floating-point numbers. Convert integer-valued floats "
            "with .astype(int)."
        )


def _sample_tokens(sample, label):
    if sample is None:
        raise ValueError(f"{label} is None; every sample must be a token sequence.")
    if isinstance(sample, str):
        return list(sample)
    if isinstance(sample, bytes):
        raise ValueError(
            f"{label} is a bytes object; decode it to str first (or pass a list of tokens)."
        )
    if isinstance(sample, np.ndarray):
        if sample.ndim != 1:
            raise ValueError(
                f"{label} must be a 1-D sequence of tokens, got an array of shape {sample.shape}."
            )
        tokens = sample.tolist()
    elif isinstance(sample, dict | set | frozenset) or not hasattr(sample, "__iter__"):
        raise ValueError(
            f"{label} is of type {type(sample).__name__}, not a token sequence (a string, a "
            "list or tuple of tokens, or a 1-D array)."
        )
    else:
        tokens = list(sample)
    for position, token in enumerate(tokens):
        if isinstance(token, np.generic):
            token = token.item()
            tokens[position] = token
        _check_token(token, label, position)
    return tokens


def _refuse_tables_of_several_columns(X, name):
    """Refuse a table with named columns (a pandas DataFrame) of several columns.

    A table's columns are variables, but a sample of token sequences is one sequence:
    reading each row as a sequence of one token per column would silently turn a table
    of texts into sequences of whole texts. A 2-D array stays one sequence per row.
    """
    columns = getattr(X, "columns", None)
    shape = getattr(X, "shape", None)
    if columns is None or not isinstance(shape, tuple) or len(shape) != 2 or shape[1] <= 1:
        return
    columns = list(columns)
    names = ", ".join(repr(column) for column in columns[:5])
    more = ", ..." if shape[1] > 5 else ""
    raise ValueError(
        f"{name} is a {type(X).__name__} of {shape[1]} columns ({names}{more}), but each "
        "sample is one token sequence, not a row of a table. Pass one column (such as "
        f"{name}[{columns[0]!r}], one string per sample), a list of token lists, or "
        f"{name}.to_numpy() to read each row as a sequence of one token per column."
    )


def check_token_sequences(X, name="X"):
    """Validate a collection of token sequences.

    Parameters
    ----------
    X : sequence of token sequences
        Strings, lists or tuples of hashable tokens, or 1-D arrays; a 2-D array is read
        as one sequence per row, a 1-D array of strings as one string per sample, and a
        table of one column of strings or sequences (such as a one-column DataFrame)
        as one sequence per row. A table of several named columns (a DataFrame) is
        refused: its rows are not token sequences.
        Lengths may differ; empty sequences are allowed.
    name : str, default="X"
        Name of the argument, used in error messages.

    Returns
    -------
    tokens : list of list
        The tokens of each sample, as Python objects (NumPy scalars are converted).
    samples : list
        The samples as given, used to learn the kind of the sequences.

    Raises
    ------
    ValueError
        If a sample is not a token sequence, holds an unhashable or NaN token, or is a
        multi-dimensional array, naming the sample; or if ``X`` is a DataFrame of
        several columns.
    TypeError
        If ``X`` is not a collection of samples.
    """
    _refuse_tables_of_several_columns(X, name)
    X = _as_array_if_array_like(X)
    if isinstance(X, np.ndarray) and X.dtype.kind in "OU" and X.ndim == 2 and X.shape[1] == 1:
        X = X[:, 0]  # a table of one column: one sequence (such as a string) per row
    if isinstance(X, np.ndarray) and X.dtype.kind == "U" and X.ndim == 1:
        X = X.astype(object)  # one string per sample
    samples = _split_samples(X, name, "token sequences")
    return [_sample_tokens(s, f"{name}[{i}]") for i, s in enumerate(samples)], samples


def check_ordering(
    indices, *, name, n_positions=None, sequence_name="the sequence", allow_repeats=False
):
    """Validate one ordering and remove its -1 padding.

    Parameters
    ----------
    indices : array-like of shape (n_outputs,)
        Integer positions (integral floats are accepted), optionally followed by -1
        padding.
    name : str
        Name of the ordering, used in error messages (e.g. ``"y[3]"``).
    n_positions : int, default=None
        Length of the sequence the indices point into; None skips the upper bound.
    sequence_name : str, default="the sequence"
        Name of that sequence, used in error messages.
    allow_repeats : bool, default=False
        Whether an index may appear more than once (a prediction scored by a metric
        may repeat one; an ordering to learn may not).

    Returns
    -------
    ndarray of shape (n_indices,), dtype int64
        The indices without padding; it may be empty.

    Raises
    ------
    ValueError
        If the ordering is not 1-D, holds non-integer, negative (other than trailing -1
        padding), repeated or out-of-range indices, or -1 before its last index.
    """
    row = _as_array(indices, name)
    if row.ndim != 1:
        raise ValueError(f"{name} must be a 1-D sequence of indices, got shape {row.shape}.")
    if row.dtype == object:
        row = _as_array(row.tolist(), name)
    if row.size and not np.issubdtype(row.dtype, np.integer):
        numeric = row.dtype.kind == "f"
        if not numeric or not np.all(np.isfinite(row)) or np.any(row != np.round(row)):
            raise ValueError(
                f"{name} holds non-integer values {row.tolist()}: Unknown label type; an "
                "ordering is a sequence of integer positions."
            )
    row = row.astype(np.int64)
    padding = np.flatnonzero(row == -1)
    if padding.size:
        if np.any(row[padding[0] :] != -1):
            raise ValueError(
                f"{name} has -1 padding before its last index; -1 may only pad the end."
            )
        row = row[: padding[0]]
    if np.any(row < 0):
        raise ValueError(
            f"{name} holds index {int(row[row < 0][0])}, a negative index; positions are "
            ">= 0 and -1 only pads the end."
        )
    if n_positions is not None and np.any(row >= n_positions):
        raise ValueError(
            f"{name} holds index {int(row[row >= n_positions][0])}, outside the {n_positions} "
            f"positions of {sequence_name} (valid: 0..{n_positions - 1})."
        )
    unique, counts = np.unique(row, return_counts=True)
    if not allow_repeats and np.any(counts > 1):
        raise ValueError(
            f"{name} repeats index {int(unique[counts > 1][0])}; an ordering must use each "
            "position at most once."
        )
    return row


def _padded_index_rows(rows):
    """A list of 1-D integer arrays as one 2-D int64 array padded with -1, or None."""
    if not rows or not all(
        isinstance(row, np.ndarray) and row.ndim == 1 and row.dtype.kind in "iu" for row in rows
    ):
        return None
    counts = np.fromiter((row.size for row in rows), dtype=np.int64, count=len(rows))
    padded = np.full((len(rows), max(1, int(counts.max()))), -1, dtype=np.int64)
    padded[np.arange(padded.shape[1])[None, :] < counts[:, None]] = np.concatenate(rows)
    return padded


def _regular_orderings(y, lengths, allow_empty, allow_repeats):
    """:func:`check_orderings`' result for a 2-D integer array that passes every check as
    a whole; None otherwise (the row-by-row checks then name the problem and the row).
    A list of 1-D integer arrays is padded into one such array first."""
    if isinstance(y, list | tuple):
        y = _padded_index_rows(y)
    if not (isinstance(y, np.ndarray) and y.ndim == 2 and y.dtype.kind in "iu"):
        return None
    if 0 in y.shape or (lengths is not None and len(y) != len(lengths)):
        return None
    rows = y.astype(np.int64)
    padding = rows == -1
    if np.any(padding[:, :-1] & ~padding[:, 1:]) or np.any(rows < -1):
        return None
    counts = rows.shape[1] - padding.sum(axis=1)
    upper = np.iinfo(np.int32).max if lengths is None else np.asarray(lengths)[:, None]
    if np.any(rows >= upper) or (not allow_empty and np.any(counts == 0)):
        return None
    if not allow_repeats:
        ordered = np.sort(rows, axis=1)
        if np.any((ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)):
            return None
    return rows[:, : max(1, int(counts.max()))].astype(np.int32), counts


def check_orderings(y, lengths=None, *, name="y", allow_empty=False, allow_repeats=False):
    """Validate orderings, against the lengths of their input sequences when given.

    Parameters
    ----------
    y : array-like
        A 2-D int array ``(n_samples, n_outputs)`` padded with -1 after each sample's
        last output, or a list of 1-D index sequences. Each ``y[i]`` is a permutation of
        ``range(lengths[i])`` or an ordered subset of it.
    lengths : ndarray of shape (n_samples,), default=None
        Length of each input sequence ``X[i]``; None checks the indices without an
        upper bound (e.g. to compare two sets of orderings).
    name : str, default="y"
        Name of the argument, used in error messages.
    allow_empty : bool, default=False
        Whether an ordering may hold no index (a prediction may; a target may not).
    allow_repeats : bool, default=False
        Whether an ordering may repeat an index (see :func:`check_ordering`).

    Returns
    -------
    orderings : ndarray of shape (n_samples, max(1, max_outputs))
        The orderings as int32, padded with -1.
    ordering_lengths : ndarray of shape (n_samples,)
        Number of indices of each sample.

    Raises
    ------
    ValueError
        On a sample-count mismatch with ``lengths``, or an ordering that fails
        :func:`check_ordering`, or an empty ordering unless ``allow_empty``.
    TypeError
        If ``y`` is not a collection of orderings.
    """
    regular = _regular_orderings(y, lengths, allow_empty, allow_repeats)
    if regular is not None:
        return regular
    samples = _split_samples(y, name, "orderings")
    if lengths is not None and len(samples) != len(lengths):
        raise ValueError(
            f"X and {name} have different numbers of samples: {len(lengths)} and {len(samples)}."
        )
    rows = []
    for index, sample in enumerate(samples):
        row = check_ordering(
            sample,
            name=f"{name}[{index}]",
            n_positions=None if lengths is None else int(lengths[index]),
            sequence_name=f"X[{index}]",
            allow_repeats=allow_repeats,
        )
        if row.size == 0 and not allow_empty:
            raise ValueError(f"{name}[{index}] is empty; every sample needs at least one index.")
        rows.append(row)
    counts = np.fromiter((r.size for r in rows), dtype=np.int64, count=len(rows))
    orderings = np.full((len(rows), max(1, int(counts.max()))), -1, dtype=np.int32)
    for i, row in enumerate(rows):
        orderings[i, : row.size] = row
    return orderings, counts
