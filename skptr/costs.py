"""Costs of orderings, for :class:`~skptr.PointerNetworkOrderer` learning from a cost.

A cost is a function ``cost(X, orderings) -> ndarray of shape (n_samples,)``, lower is
better: ``X`` is a batch of samples in the form the estimator received them (an array
when all have one length, a list of sequences otherwise) and ``orderings`` their
orderings in ``predict``'s format (positions, -1 after the end of a shorter sample).
Each cost is a finite real number (not complex, not a boolean) of magnitude at most
1e30, since training computes with the costs in float32: rescale larger costs.
Pass one as ``PointerNetworkOrderer(cost=...)``, or the name of a built-in one:

- ``"tour"``: :func:`tour_length`, the length of the closed tour;
- ``"path"``: :func:`path_length`, the length of the open path.

The estimator computes the built-in costs inside its compiled training step; these
NumPy versions compute the same values, for scoring and for your own code.
"""

from __future__ import annotations

import numpy as np

from ._sequences import check_numeric_sequences, check_orderings
from .metrics import _route_lengths

__all__ = ["BUILT_IN_COSTS", "path_length", "tour_length"]


def _length(X, orderings, closed, cost_name):
    """Route lengths of orderings that must each use every element of their sample."""
    sequences = check_numeric_sequences(X, dtype=np.float64)
    orderings, ordering_lengths = check_orderings(orderings, sequences.lengths, name="orderings")
    short = np.flatnonzero(ordering_lengths < sequences.lengths)
    if short.size:
        i = int(short[0])
        raise ValueError(
            f"The {cost_name} cost needs orderings of every element, but orderings[{i}] "
            f"orders {ordering_lengths[i]} of the {sequences.lengths[i]} elements of X[{i}]."
        )
    return _route_lengths(sequences.values, orderings, ordering_lengths, closed)


def tour_length(X, orderings):
    """Length of each closed tour: the Euclidean distances between the feature vectors
    of consecutive elements, and from the last back to the first.

    Parameters
    ----------
    X : array-like
        A 2-D array ``(n_samples, n_steps)``, a 3-D array ``(n_samples, n_steps,
        n_features)`` or a list of ``(n_steps_i,)`` / ``(n_steps_i, n_features)``
        arrays (for example the cities' coordinates).
    orderings : array-like
        One permutation of its sample's positions per sample: an int array padded
        with -1, or a list of index sequences.

    Returns
    -------
    ndarray of shape (n_samples,)
        The tour lengths.

    Raises
    ------
    ValueError
        If an ordering does not visit every element of its sample exactly once.

    See Also
    --------
    skptr.metrics.tour_length : the same length, for tours that may leave cities out.

    Examples
    --------
    >>> import numpy as np
    >>> from skptr.costs import tour_length
    >>> square = np.array([[[0, 0], [1, 1], [0, 1], [1, 0]]])
    >>> tour_length(square, [[0, 2, 1, 3]])
    array([4.])
    """
    return _length(X, orderings, True, "tour")


def path_length(X, orderings):
    """Length of each open path: the Euclidean distances between the feature vectors
    of consecutive elements, from the first element to the last.

    Parameters
    ----------
    X : array-like
        Samples, as for :func:`tour_length`.
    orderings : array-like
        One permutation of its sample's positions per sample, as for
        :func:`tour_length`.

    Returns
    -------
    ndarray of shape (n_samples,)
        The path lengths.

    Raises
    ------
    ValueError
        If an ordering does not visit every element of its sample exactly once.

    Examples
    --------
    >>> from skptr.costs import path_length
    >>> path_length([[0.0, 3.0, 1.0]], [[0, 2, 1]])
    array([3.])
    """
    return _length(X, orderings, False, "path")


#: The costs ``PointerNetworkOrderer(cost=...)`` accepts by name.
BUILT_IN_COSTS = {"tour": tour_length, "path": path_length}
