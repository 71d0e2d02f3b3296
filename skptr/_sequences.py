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
    "check_numeric_sequences",
    "check_orderings",
    "check_token_sequences",
    "ordering_lengths",
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


def _as_numeric_array(sample, index, name):
    """Return one sample as an array of numbers (integers, booleans or floats)."""
    try:
        array = np.asarray(sample)
    except ValueError as exc:
        raise ValueError(f"{name}[{index}] could not be read as an array: {exc}") from None
    if array.dtype == object or not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
        try:
            array = array.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise NonNumericSequenceError(
                f"{name}[{index}] is not numeric (dtype {array.dtype}: {exc}); skptr "
                "sequence estimators need numbers, one number or one vector of numbers "
                "per step."
            ) from None
    if np.iscomplexobj(array):
        raise ValueError(f"{name}[{index}] holds complex numbers: Complex data not supported.")
    return array


def _check_integers_stay_distinct(array, index, name, dtype):
    """Refuse integers that become equal once converted to the float ``dtype``."""
    exact_limit = 2 ** (np.finfo(dtype).nmant + 1)  # 2**24 for float32
    if array.max() <= exact_limit and array.min() >= -exact_limit:
        return
    distinct = np.unique(array)
    rounded = distinct.astype(dtype)
    collapsed = np.flatnonzero(rounded[1:] == rounded[:-1])
    if collapsed.size:
        first = collapsed[0]
        raise ValueError(
            f"{name}[{index}] holds the distinct integers {distinct[first]} and "
            f"{distinct[first + 1]}, which are the same {np.dtype(dtype).name} value "
            f"({float(rounded[first]):.8g}), so they cannot be told apart once converted. "
            f"Rescale the data (e.g. subtract an offset) so that its integers stay within "
            f"+-2**{np.finfo(dtype).nmant + 1}, where {np.dtype(dtype).name} is exact."
        )


def _convert_sample(array, index, name, dtype):
    """Convert one sample to ``dtype``, refusing values the conversion would spoil."""
    if array.dtype.kind in "iu":
        _check_integers_stay_distinct(array, index, name, dtype)
    with np.errstate(over="ignore"):
        converted = array.astype(dtype)
    finite = np.isfinite(converted)
    if not finite.all():
        step, feature = np.argwhere(~finite)[0]
        value = array[step, feature]
        if not np.isfinite(value):
            raise ValueError(f"{name}[{index}] contains NaN or infinity (first at step {step}).")
        raise ValueError(
            f"{name}[{index}] holds {float(value):g} at step {step}, which overflows "
            f"{np.dtype(dtype).name} (largest finite value ~{np.finfo(dtype).max:.1e}); "
            "rescale the data."
        )
    return converted


def _split_samples(X, name, *, what, array_layout, array_ndims):
    """Return the samples of any accepted container as a list.

    Parameters
    ----------
    X : object
        The user's container of samples.
    name : str
        Name of the argument, used in error messages.
    what : str
        What the samples are (e.g. ``"token sequences"``), used in error messages.
    array_layout : str
        The accepted array shapes in words, used in error messages.
    array_ndims : tuple of int
        Dimensions a non-object NumPy array may have.

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
        raise TypeError(
            f"{name} must be a collection of {what} (an array or a list), got a single "
            f"{type(X).__name__}."
        )
    if not isinstance(X, list | tuple | np.ndarray):
        if hasattr(X, "to_numpy"):
            X = X.to_numpy()
        elif hasattr(X, "__array__"):
            X = np.asarray(X)
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
    dtype : numpy dtype, default=np.float32
        Dtype of the padded values.

    Returns
    -------
    PaddedSequences
        The zero-padded values and the length of each sample.

    Raises
    ------
    ValueError
        If a sample is empty, not numeric, holds NaN or infinity, holds a value that
        overflows ``dtype`` or distinct integers that ``dtype`` cannot tell apart, has
        more than two dimensions, or has a different number of features per step than
        the others (or than ``n_features``).
    TypeError
        If ``X`` is not a collection of samples.
    """
    samples = _split_samples(
        X,
        name,
        what="numeric sequences",
        array_layout="2-D (n_samples, n_steps), 3-D (n_samples, n_steps, n_features)",
        array_ndims=(2, 3),
    )
    arrays = []
    reference = None
    for index, sample in enumerate(samples):
        array = _as_numeric_array(sample, index, name)
        if array.ndim == 1:
            array = array[:, None]
        elif array.ndim != 2:
            raise ValueError(
                f"{name}[{index}] has {array.ndim} dimensions; each sample must be "
                "(n_steps,) or (n_steps, n_features)."
            )
        if array.shape[0] == 0:
            raise ValueError(f"{name}[{index}] is an empty sequence; every sample needs a step.")
        if array.shape[1] == 0:
            raise ValueError(f"{name}[{index}] has zero features per step.")
        array = _convert_sample(array, index, name, dtype)
        if reference is None:
            reference = array.shape[1]
        elif array.shape[1] != reference:
            raise ValueError(
                f"{name}[{index}] has {array.shape[1]} features per step but {name}[0] has "
                f"{reference}; all samples must have the same number of features."
            )
        arrays.append(array)
    if n_features is not None and reference != n_features:
        raise ValueError(
            f"{name} has {reference} features per step, but the estimator was fitted with "
            f"{n_features} features per step."
        )
    lengths = np.fromiter((a.shape[0] for a in arrays), dtype=np.int64, count=len(arrays))
    values = np.zeros((len(arrays), int(lengths.max()), reference), dtype=dtype)
    for i, array in enumerate(arrays):
        values[i, : array.shape[0]] = array
    return PaddedSequences(values, lengths)


def _check_token(token, index, position, name):
    try:
        hash(token)
    except TypeError:
        raise ValueError(
            f"{name}[{index}] has an unhashable token at position {position} "
            f"({type(token).__name__}); tokens must be hashable (str, int, tuple, ...)."
        ) from None
    if isinstance(token, complex):
        raise ValueError(
            f"{name}[{index}] has the complex token {token!r} at position {position}: "
            "Complex data not supported; tokens are discrete symbols (str, int, tuple, ...)."
        )
    if isinstance(token, float):
        what = "a NaN token" if math.isnan(token) else f"the number token {token!r}"
        raise ValueError(
            f"{name}[{index}] has {what} at position {position}; tokens are "
            "discrete symbols (str, int, tuple, ...), not floating-point numbers. Convert "
            "integer-valued floats with .astype(int)."
        )


def _sample_tokens(sample, index, name):
    if sample is None:
        raise ValueError(f"{name}[{index}] is None; every sample must be a token sequence.")
    if isinstance(sample, str):
        return list(sample)
    if isinstance(sample, bytes):
        raise ValueError(
            f"{name}[{index}] is a bytes object; decode it to str first (or pass a list "
            "of tokens)."
        )
    if isinstance(sample, np.ndarray):
        if sample.ndim != 1:
            raise ValueError(
                f"{name}[{index}] must be a 1-D sequence of tokens, got an array of shape "
                f"{sample.shape}."
            )
        tokens = sample.tolist()
    elif isinstance(sample, list | tuple):
        tokens = list(sample)
    elif isinstance(sample, dict | set | frozenset) or not hasattr(sample, "__iter__"):
        raise ValueError(
            f"{name}[{index}] is a {type(sample).__name__}, not a token sequence (a string, "
            "a list or tuple of tokens, or a 1-D array)."
        )
    else:
        tokens = list(sample)
    for position, token in enumerate(tokens):
        if isinstance(token, np.generic):
            token = token.item()
            tokens[position] = token
        _check_token(token, index, position, name)
    return tokens


def check_token_sequences(X, name="X"):
    """Validate a collection of token sequences.

    Parameters
    ----------
    X : sequence of token sequences
        Strings, lists or tuples of hashable tokens, or 1-D arrays; a 2-D array is read
        as one sequence per row. Lengths may differ; empty sequences are allowed.
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
        multi-dimensional array, naming the sample.
    TypeError
        If ``X`` is not a collection of samples.
    """
    samples = _split_samples(
        X,
        name,
        what="token sequences",
        array_layout="2-D (one token sequence per row)",
        array_ndims=(2,),
    )
    return [_sample_tokens(s, i, name) for i, s in enumerate(samples)], samples


def _ordering_samples(y, name):
    if isinstance(y, str | bytes):
        raise TypeError(f"{name} must be a collection of index sequences, got a string.")
    if isinstance(y, np.ndarray) and y.dtype != object and y.ndim != 2:
        raise ValueError(
            f"{name} must be 2-D (n_samples, n_outputs) with -1 padding or a list of "
            f"index sequences; got an array of shape {y.shape}."
        )
    try:
        return list(y)
    except TypeError:
        raise TypeError(
            f"{name} must be a 2-D int array or a list of index sequences, got {type(y).__name__}."
        ) from None


def _strip_padding(row, index, name):
    padding = np.flatnonzero(row == -1)
    if padding.size == 0:
        return row
    first = padding[0]
    if not np.all(row[first:] == -1):
        raise ValueError(f"{name}[{index}] has -1 padding before its last index.")
    return row[:first]


def check_orderings(y, lengths, *, name="y"):
    """Validate target orderings against the lengths of their input sequences.

    Parameters
    ----------
    y : array-like
        A 2-D int array ``(n_samples, n_outputs)`` padded with -1 after each sample's
        last output, or a list of 1-D index sequences. Each ``y[i]`` is a permutation of
        ``range(lengths[i])`` or an ordered subset of it.
    lengths : ndarray of shape (n_samples,)
        Length of each input sequence.
    name : str, default="y"
        Name of the argument, used in error messages.

    Returns
    -------
    targets : ndarray of shape (n_samples, max_outputs)
        The orderings as int32, padded with -1.
    target_lengths : ndarray of shape (n_samples,)
        Number of outputs of each sample.

    Raises
    ------
    ValueError
        On a length mismatch with X, non-integer or out-of-range indices, repeated
        indices, padding (-1) before the end of a sample, or an empty ordering.
    """
    samples = _ordering_samples(y, name)
    if len(samples) != len(lengths):
        raise ValueError(
            f"X and {name} have different numbers of samples: {len(lengths)} and {len(samples)}."
        )
    rows = []
    for index, sample in enumerate(samples):
        row = np.asarray(sample)
        if row.ndim != 1:
            raise ValueError(
                f"{name}[{index}] must be a 1-D sequence of indices, got shape {row.shape}."
            )
        if row.dtype == object:
            row = np.asarray(row.tolist())
        if row.size and not np.issubdtype(row.dtype, np.integer):
            numeric = row.dtype.kind == "f"
            if not numeric or not np.all(np.isfinite(row)) or np.any(row != np.round(row)):
                raise ValueError(
                    f"{name}[{index}] holds non-integer values {row.tolist()}: Unknown label "
                    "type; an ordering is a sequence of integer positions."
                )
        row = _strip_padding(row.astype(np.int64), index, name)
        if row.size == 0:
            raise ValueError(f"{name}[{index}] is empty; every sample needs at least one index.")
        length = int(lengths[index])
        out_of_range = (row < 0) | (row >= length)
        if np.any(out_of_range):
            raise ValueError(
                f"{name}[{index}] holds index {int(row[out_of_range][0])}, outside the "
                f"{length} positions of X[{index}] (valid: 0..{length - 1})."
            )
        unique, counts = np.unique(row, return_counts=True)
        if np.any(counts > 1):
            raise ValueError(
                f"{name}[{index}] repeats index {int(unique[counts > 1][0])}; an ordering "
                "must use each position at most once."
            )
        rows.append(row)
    target_lengths = np.fromiter((r.size for r in rows), dtype=np.int64, count=len(rows))
    targets = np.full((len(rows), int(target_lengths.max())), -1, dtype=np.int32)
    for i, row in enumerate(rows):
        targets[i, : row.size] = row
    return targets, target_lengths


def ordering_lengths(orderings):
    """Return the number of real (non -1) entries of each row of a padded ordering."""
    orderings = np.asarray(orderings)
    return (orderings != -1).sum(axis=1)
