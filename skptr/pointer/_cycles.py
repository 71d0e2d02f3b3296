"""Cyclic orderings: the canonical rotation (and direction) a cycle is learned and
returned in.

A convex hull or a tour is a cycle: any rotation of it (and, for a tour, its reversal)
is the same answer. The network is trained on one representative of each cycle that it
can find from the input's values alone: the cycle starts at its member whose feature
vector comes first in lexicographic order (for points in the plane, the leftmost one)
and, when reversals are equivalent too, goes on towards the lexicographically smaller of
that member's two neighbours. Predictions are handed back in the index convention of
Vinyals et al. (2015) and :func:`skptr.datasets.solve_tsp_exact`: from the smallest
index, and, when reversals are equivalent, towards the smaller-indexed neighbour.
"""

from __future__ import annotations

import numpy as np

__all__ = ["CYCLE_KINDS", "canonical_indices", "canonical_training"]

#: Values of the estimator's ``cycle`` parameter that declare cyclic targets.
CYCLE_KINDS = ("directed", "undirected")


def _lexicographic_ranks(values, lengths):
    """Rank of each element of each sequence in the lexicographic order of its features.

    Parameters
    ----------
    values : ndarray of shape (n, T, F)
    lengths : ndarray of shape (n,)

    Returns
    -------
    ndarray of shape (n, T)
        Ranks ``0 .. lengths[i] - 1``; equal elements are ranked by position, padding
        comes last.
    """
    n, n_steps, n_features = values.shape
    padding = np.arange(n_steps)[None, :] >= np.asarray(lengths)[:, None]
    keys = [np.broadcast_to(np.arange(n_steps), (n, n_steps))]
    keys += [values[..., f] for f in range(n_features - 1, -1, -1)]
    keys.append(padding)
    order = np.lexsort(keys, axis=-1)
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(n_steps)[None, :], axis=-1)
    return ranks


def _rotate(orderings, lengths, keys, undirected):
    """Rotate each cycle to start at its member of smallest key, and with
    ``undirected`` turn it towards the neighbour of smaller key.

    ``keys[i, j]`` orders the members of cycle ``i`` by the key of ``orderings[i, j]``;
    keys are distinct within a cycle. Cycles of length 0 are left as they are.
    """
    n, width = orderings.shape
    lengths = np.asarray(lengths, dtype=np.int64)
    steps = np.arange(width)[None, :]
    real = steps < lengths[:, None]
    safe_lengths = np.maximum(lengths, 1)[:, None]
    start = np.where(real, keys, np.iinfo(np.int64).max).argmin(axis=1)[:, None]
    direction = np.ones((n, 1), dtype=np.int64)
    if undirected:
        rows = np.arange(n)[:, None]
        following = keys[rows, (start + 1) % safe_lengths]
        preceding = keys[rows, (start - 1) % safe_lengths]
        direction = np.where(preceding < following, -1, 1)
    source = (start + direction * steps) % safe_lengths
    rotated = np.take_along_axis(orderings, source, axis=1)
    return np.where(real, rotated, orderings), np.where(real, source, steps)


def canonical_training(orderings, lengths, values, sequence_lengths, cycle):
    """The representative of each target cycle that the network is trained on.

    Parameters
    ----------
    orderings : ndarray of shape (n, K)
        Validated target cycles, padded with -1.
    lengths : ndarray of shape (n,)
        Number of members of each cycle.
    values : ndarray of shape (n, T, F)
        The padded input sequences.
    sequence_lengths : ndarray of shape (n,)
    cycle : {"directed", "undirected"}

    Returns
    -------
    ndarray of shape (n, K)
        Each cycle from its lexicographically first member (by feature values), and for
        ``"undirected"`` towards its lexicographically smaller neighbour.
    """
    ranks = _lexicographic_ranks(values, sequence_lengths)
    keys = np.take_along_axis(ranks, np.maximum(orderings, 0), axis=1).astype(np.int64)
    return _rotate(orderings, lengths, keys, cycle == "undirected")[0]


def canonical_indices(orderings, lengths, cycle):
    """Cycles from their smallest index, and for ``"undirected"`` towards the smaller-
    indexed neighbour.

    Parameters
    ----------
    orderings : ndarray of shape (n, K)
        Cycles padded with -1.
    lengths : ndarray of shape (n,)
        Number of members of each cycle.
    cycle : {"directed", "undirected"}

    Returns
    -------
    rotated : ndarray of shape (n, K)
    source : ndarray of shape (n, K)
        ``rotated[i, k] == orderings[i, source[i, k]]``, so that per-step outputs can be
        moved along with the indices (``source[i, k] == k`` past each cycle's end).
    """
    return _rotate(orderings, lengths, orderings.astype(np.int64), cycle == "undirected")
