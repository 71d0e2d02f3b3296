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

from skptr._sequences import (
    check_numeric_sequences,
    check_orderings,
    check_token_sequences,
    token_key,
)

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


def _check_same_length(true, pred):
    if len(true) != len(pred):
        raise ValueError(
            f"y_true and y_pred have different numbers of samples: {len(true)} and {len(pred)}."
        )


def _pad_to(matrix, width):
    padded = np.full((matrix.shape[0], width), -1, dtype=matrix.dtype)
    padded[:, : matrix.shape[1]] = matrix
    return padded


def _gather(values, orderings):
    """The elements ``values[i, orderings[i, k]]`` (those of padding are ``values[i, 0]``)."""
    indices = np.maximum(orderings, 0)[:, :, None]
    return np.take_along_axis(values, indices, axis=1)


def _checked_position_matches(true, pred, values=None):
    """Per-position correctness of validated orderings (2-D, -1 padded) of equal count.

    ``values`` are the padded sequences ``(n_samples, n_steps, n_features)`` the
    indices point into, or None to compare indices.
    """
    width = max(true.shape[1], pred.shape[1])
    true, pred = _pad_to(true, width), _pad_to(pred, width)
    if values is None:
        equal = true == pred
    else:
        equal = np.all(_gather(values, true) == _gather(values, pred), axis=-1)
    true_lengths, pred_lengths = (true >= 0).sum(axis=1), (pred >= 0).sum(axis=1)
    shared = np.arange(width)[None, :] < np.minimum(true_lengths, pred_lengths)[:, None]
    return equal & shared, true_lengths, pred_lengths


def _checked_position_accuracy(true, pred, values=None):
    """:func:`position_accuracy` of validated orderings (see
    :func:`_checked_position_matches`)."""
    correct, true_lengths, pred_lengths = _checked_position_matches(true, pred, values)
    total = int(np.maximum(true_lengths, pred_lengths).sum())
    if total == 0:
        return 1.0
    return float(correct.sum() / total)


def _checked_orderings(y_true, y_pred, X):
    """Validated true and predicted orderings and the padded values of ``X`` (or None)."""
    sequences = None if X is None else check_numeric_sequences(X, dtype=np.float64)
    lengths = None if X is None else sequences.lengths
    true, _ = check_orderings(y_true, lengths, name="y_true", allow_empty=True)
    pred, _ = check_orderings(y_pred, lengths, name="y_pred", allow_empty=True, allow_repeats=True)
    _check_same_length(true, pred)
    return true, pred, None if X is None else sequences.values


def _position_matches(y_true, y_pred, X):
    """Per-position correctness and the lengths of both orderings."""
    return _checked_position_matches(*_checked_orderings(y_true, y_pred, X))


# --------------------------------------------------------------------------------------
# orderings
# --------------------------------------------------------------------------------------


def position_accuracy(y_true, y_pred, X=None):
    """Share of output positions where the predicted ordering is right.

    Parameters
    ----------
    y_true, y_pred : array-like
        Orderings: 2-D int arrays ``(n_samples, n_outputs)`` padded with -1 after each
        sample's last index, or lists of 1-D index sequences, each using a position at
        most once. Both must hold the same number of samples.
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
    return _checked_position_accuracy(*_checked_orderings(y_true, y_pred, X))


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
        included. A tour of zero or one city has length 0. A tour may leave cities out
        (the length is that of the listed ones) but may not repeat one.

    Examples
    --------
    >>> from skptr.metrics import tour_length
    >>> tour_length([[[0, 0], [1, 0], [1, 1], [0, 1]]], [[0, 1, 2, 3]])
    array([4.])
    """
    sequences = check_numeric_sequences(X, dtype=np.float64)
    order, lengths = check_orderings(tours, sequences.lengths, name="tours", allow_empty=True)
    return _route_lengths(sequences.values, order, lengths, closed=True)


def _route_lengths(values, order, lengths, closed, xp=np):
    """Euclidean length of the routes through ``values`` (n, T, F) in the validated
    ``order`` (n, S), ``lengths`` indices each, back to the start when ``closed``.

    ``xp`` is :mod:`numpy` or :mod:`keras.ops`: the estimator computes the built-in
    costs with this same function inside its compiled training step.
    """
    points = xp.take_along_axis(values, xp.maximum(order, 0)[:, :, None], axis=1)
    hops = xp.sqrt(xp.sum(xp.square(points[:, 1:] - points[:, :-1]), axis=-1))
    inside = xp.arange(1, order.shape[1])[None, :] < lengths[:, None]
    length = xp.sum(xp.where(inside, hops, 0.0), axis=1)
    if not closed:
        return length
    last = xp.take_along_axis(points, xp.maximum(lengths - 1, 0)[:, None, None], axis=1)
    return length + xp.sqrt(xp.sum(xp.square(last[:, 0] - points[:, 0]), axis=-1))


# --------------------------------------------------------------------------------------
# token sequences
# --------------------------------------------------------------------------------------


def _checked_token_pairs(true, pred):
    """The tokens of each pair of validated token lists, as keys that tell ``True`` from
    ``1``."""
    return [
        ([token_key(t) for t in true_tokens], [token_key(t) for t in pred_tokens])
        for true_tokens, pred_tokens in zip(true, pred, strict=True)
    ]


def _token_pairs(y_true, y_pred):
    """:func:`_checked_token_pairs` of token sequences, validated first."""
    true, _ = check_token_sequences(y_true, "y_true")
    pred, _ = check_token_sequences(y_pred, "y_pred")
    _check_same_length(true, pred)
    return _checked_token_pairs(true, pred)


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
    true, _ = check_token_sequences(y_true, "y_true")
    pred, _ = check_token_sequences(y_pred, "y_pred")
    _check_same_length(true, pred)
    return _checked_fine_accuracy(true, pred)


def _checked_fine_accuracy(true, pred):
    """:func:`fine_accuracy` of validated token lists of equal count."""
    pairs = _checked_token_pairs(true, pred)
    return float(np.mean([_correct_prefix(t, p) / (len(t) + 1) for t, p in pairs]))
