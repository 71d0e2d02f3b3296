"""Metrics for orderings, tours and token sequences.

Orderings (the outputs of a pointer network) are compared with
:func:`position_accuracy` and :func:`sequence_accuracy`; travelling-salesman tours are
measured with :func:`tour_length`. Token sequences (the outputs of a transducer) are
compared with :func:`coarse_accuracy` and :func:`fine_accuracy`, the two measures of
Grefenstette et al. (2015).

All functions take the true values first and the predictions second, as in
:mod:`sklearn.metrics`.
"""

from __future__ import annotations

import numpy as np

from skptr._sequences import check_numeric_sequences

__all__ = [
    "coarse_accuracy",
    "fine_accuracy",
    "position_accuracy",
    "sequence_accuracy",
    "tour_length",
]


# --------------------------------------------------------------------------------------
# input checks
# --------------------------------------------------------------------------------------


def _samples(y, name, what):
    """Split a collection of per-sample sequences into a list."""
    if isinstance(y, str | bytes):
        raise TypeError(f"{name} must be a collection of {what}, got a single string.")
    if isinstance(y, np.ndarray) and y.dtype != object and y.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array (one row per sample) or a list of {what}; got an "
            f"array of shape {y.shape}."
        )
    try:
        samples = list(y)
    except TypeError:
        raise TypeError(
            f"{name} must be a collection of {what}, got {type(y).__name__}."
        ) from None
    if len(samples) == 0:
        raise ValueError(f"{name} holds no samples.")
    return samples


def _check_same_length(true, pred, true_name="y_true", pred_name="y_pred"):
    if len(true) != len(pred):
        raise ValueError(
            f"{true_name} and {pred_name} have different numbers of samples: "
            f"{len(true)} and {len(pred)}."
        )


def _index_row(sample, index, name):
    row = np.asarray(sample)
    if row.ndim != 1:
        raise ValueError(
            f"{name}[{index}] must be a 1-D sequence of indices, got shape {row.shape}."
        )
    if row.size == 0:
        return np.zeros(0, dtype=np.int64)
    if not np.issubdtype(row.dtype, np.integer):
        numeric = row.dtype != object and np.issubdtype(row.dtype, np.number)
        if not numeric or not np.all(np.isfinite(row)) or np.any(row != np.round(row)):
            raise ValueError(f"{name}[{index}] holds non-integer values: {row.tolist()}.")
    row = row.astype(np.int64)
    padding = np.flatnonzero(row == -1)
    if padding.size:
        if not np.all(row[padding[0] :] == -1):
            raise ValueError(
                f"{name}[{index}] has -1 padding before its last index; -1 may only "
                "pad the end of an ordering."
            )
        row = row[: padding[0]]
    if np.any(row < 0):
        raise ValueError(
            f"{name}[{index}] holds the negative index {int(row[row < 0][0])}; indices "
            "are >= 0 and -1 is only for padding."
        )
    return row


def _orderings(y, name):
    """Return orderings as a -1 padded int64 matrix and the length of each row."""
    rows = [_index_row(sample, i, name) for i, sample in enumerate(_samples(y, name, "orderings"))]
    lengths = np.fromiter((r.size for r in rows), dtype=np.int64, count=len(rows))
    matrix = np.full((len(rows), max(1, int(lengths.max()))), -1, dtype=np.int64)
    for i, row in enumerate(rows):
        matrix[i, : row.size] = row
    return matrix, lengths


def _pad_to(matrix, width):
    if matrix.shape[1] == width:
        return matrix
    padded = np.full((matrix.shape[0], width), -1, dtype=matrix.dtype)
    padded[:, : matrix.shape[1]] = matrix
    return padded


def _elements(X, n_samples, orderings, names):
    """Gather ``X[i][orderings[k][i]]`` for each matrix of orderings, checking ranges."""
    sequences = check_numeric_sequences(X, name="X", dtype=np.float64)
    if sequences.n_samples != n_samples:
        raise ValueError(
            f"X and {names[0]} have different numbers of samples: {sequences.n_samples} "
            f"and {n_samples}."
        )
    gathered = []
    for matrix, name in zip(orderings, names, strict=True):
        outside = matrix >= sequences.lengths[:, None]
        if np.any(outside):
            i, k = np.argwhere(outside)[0]
            raise ValueError(
                f"{name}[{i}] holds index {int(matrix[i, k])}, outside the "
                f"{int(sequences.lengths[i])} elements of X[{i}]."
            )
        indices = np.maximum(matrix, 0)[:, :, None]
        gathered.append(np.take_along_axis(sequences.values, indices, axis=1))
    return gathered


def _position_matches(y_true, y_pred, X):
    """Per-position correctness and the lengths of both orderings."""
    true, true_lengths = _orderings(y_true, "y_true")
    pred, pred_lengths = _orderings(y_pred, "y_pred")
    _check_same_length(true, pred)
    width = max(true.shape[1], pred.shape[1])
    true, pred = _pad_to(true, width), _pad_to(pred, width)
    if X is None:
        equal = true == pred
    else:
        true_elements, pred_elements = _elements(X, len(true), (true, pred), ("y_true", "y_pred"))
        equal = np.all(true_elements == pred_elements, axis=-1)
    shared = np.arange(width)[None, :] < np.minimum(true_lengths, pred_lengths)[:, None]
    return equal & shared, true_lengths, pred_lengths


# --------------------------------------------------------------------------------------
# orderings
# --------------------------------------------------------------------------------------


def position_accuracy(y_true, y_pred, X=None):
    """Share of output positions where the predicted ordering is right.

    Parameters
    ----------
    y_true, y_pred : array-like
        Orderings: 2-D int arrays ``(n_samples, n_outputs)`` padded with -1 after each
        sample's last index, or lists of 1-D index sequences. Both must hold the same
        number of samples.
    X : array-like, default=None
        The sequences the indices point into: a 2-D array ``(n_samples, n_steps)``, a
        3-D array ``(n_samples, n_steps, n_features)`` or a list of ``(n_steps_i,)`` or
        ``(n_steps_i, n_features)`` arrays. When given, a position counts as right when
        the predicted *element* equals the true one (all features equal), so swapping
        two equal values is not penalised. Indices must then be valid for their sample.

    Returns
    -------
    float
        Right positions over all positions of all samples (a micro average). A sample
        counts ``max(len(y_true[i]), len(y_pred[i]))`` positions (padding excluded), so
        orderings that are too short or too long lose the missing or extra positions.
        1.0 when every ordering is empty.

    See Also
    --------
    sequence_accuracy : Share of orderings that are entirely right.

    Examples
    --------
    >>> from skptr.metrics import position_accuracy
    >>> position_accuracy([[0, 1, 2], [2, 1, 0]], [[0, 1, 2], [2, 0, 1]])
    0.6666666666666666
    >>> position_accuracy([[0, 1]], [[1, 0]], X=[[5.0, 5.0]])
    1.0
    """
    correct, true_lengths, pred_lengths = _position_matches(y_true, y_pred, X)
    total = int(np.maximum(true_lengths, pred_lengths).sum())
    if total == 0:
        return 1.0
    return float(correct.sum() / total)


def sequence_accuracy(y_true, y_pred, X=None):
    """Share of samples whose predicted ordering is entirely right.

    Parameters
    ----------
    y_true, y_pred : array-like
        Orderings: 2-D int arrays padded with -1, or lists of 1-D index sequences.
    X : array-like, default=None
        The sequences the indices point into (see :func:`position_accuracy`). When
        given, an ordering is right when it visits the same sequence of elements as the
        true one, so orderings that differ only by swapping equal values count as right.

    Returns
    -------
    float
        Share of samples whose prediction has the true length and is right at every
        position.

    Examples
    --------
    >>> from skptr.metrics import sequence_accuracy
    >>> sequence_accuracy([[0, 1, 2], [2, 1, 0]], [[0, 1, 2], [2, 0, 1]])
    0.5
    """
    correct, true_lengths, pred_lengths = _position_matches(y_true, y_pred, X)
    right = (true_lengths == pred_lengths) & (correct.sum(axis=1) == true_lengths)
    return float(right.mean())


def tour_length(X, tours):
    """Euclidean length of closed tours.

    Parameters
    ----------
    X : array-like
        City coordinates: a 3-D array ``(n_samples, n_cities, n_dims)`` or a list of
        ``(n_cities_i, n_dims)`` arrays (any number of cities per sample).
    tours : array-like
        For each sample, the order in which the cities are visited: a 2-D int array
        padded with -1, or a list of 1-D index sequences.

    Returns
    -------
    ndarray of shape (n_samples,), dtype float64
        The length of each closed tour, the return from the last city to the first
        included. A tour of zero or one city has length 0. Tours are not checked to
        visit every city exactly once: the length is that of the listed cities.

    Examples
    --------
    >>> from skptr.metrics import tour_length
    >>> tour_length([[[0, 0], [1, 0], [1, 1], [0, 1]]], [[0, 1, 2, 3]])
    array([4.])
    """
    order, lengths = _orderings(tours, "tours")
    (points,) = _elements(X, len(order), (order,), ("tours",))
    hops = np.linalg.norm(np.diff(points, axis=1), axis=-1)
    inside = np.arange(1, order.shape[1])[None, :] < lengths[:, None]
    open_length = np.where(inside, hops, 0.0).sum(axis=1)
    rows = np.arange(len(order))
    closing = np.linalg.norm(points[rows, np.maximum(lengths - 1, 0)] - points[:, 0], axis=-1)
    return open_length + closing


# --------------------------------------------------------------------------------------
# token sequences
# --------------------------------------------------------------------------------------


def _token_list(sample, index, name):
    if isinstance(sample, str | bytes):
        return list(sample)
    if isinstance(sample, np.ndarray):
        if sample.ndim != 1:
            raise ValueError(
                f"{name}[{index}] must be a 1-D sequence of tokens, got shape {sample.shape}."
            )
        return sample.tolist()
    try:
        return list(sample)
    except TypeError:
        raise TypeError(
            f"{name}[{index}] must be a sequence of tokens (a string, a list, a tuple or a "
            f"1-D array), got {type(sample).__name__}."
        ) from None


def _token_pairs(y_true, y_pred):
    true = _samples(y_true, "y_true", "token sequences")
    pred = _samples(y_pred, "y_pred", "token sequences")
    _check_same_length(true, pred)
    return [
        (_token_list(t, i, "y_true"), _token_list(p, i, "y_pred"))
        for i, (t, p) in enumerate(zip(true, pred, strict=True))
    ]


def coarse_accuracy(y_true, y_pred):
    """Share of predicted token sequences that equal their target exactly.

    Parameters
    ----------
    y_true, y_pred : sequence of token sequences
        Strings (each character a token), lists or tuples of tokens, or 1-D arrays; a
        string and a sequence of the same characters are equal.

    Returns
    -------
    float
        The coarse accuracy of Grefenstette et al. (2015).

    Examples
    --------
    >>> from skptr.metrics import coarse_accuracy
    >>> coarse_accuracy(["abc", "abc"], ["abc", "abd"])
    0.5
    """
    pairs = _token_pairs(y_true, y_pred)
    return float(np.mean([true == pred for true, pred in pairs]))


def _correct_prefix(true, pred):
    """Symbols of ``true`` plus its end that ``pred`` gets right before its first error."""
    correct = 0
    for true_token, pred_token in zip(true, pred, strict=False):
        if true_token != pred_token:
            return correct
        correct += 1
    # Every shared token is right: the end is right too when both sequences stop here.
    if len(pred) == len(true):
        return correct + 1
    return correct


def fine_accuracy(y_true, y_pred):
    """Mean share of each target produced correctly before the first error.

    A target of ``L`` tokens is ``L + 1`` symbols: its tokens, then the end of the
    sequence. A prediction's end comes right after its last token. The fine accuracy of
    a sample is the number of target symbols the prediction reproduces before its first
    mistake, divided by ``L + 1``, so a prediction that is right but does not stop in
    time scores ``L / (L + 1)``.

    Parameters
    ----------
    y_true, y_pred : sequence of token sequences
        Strings (each character a token), lists or tuples of tokens, or 1-D arrays.

    Returns
    -------
    float
        The fine accuracy of Grefenstette et al. (2015), averaged over samples.

    Examples
    --------
    >>> from skptr.metrics import fine_accuracy
    >>> fine_accuracy(["abc"], ["abc"]), fine_accuracy(["abc"], ["abd"])
    (1.0, 0.5)
    >>> fine_accuracy(["abc"], ["abcd"]), fine_accuracy(["abc"], ["ab"])
    (0.75, 0.5)
    """
    pairs = _token_pairs(y_true, y_pred)
    return float(np.mean([_correct_prefix(t, p) / (len(t) + 1) for t, p in pairs]))
