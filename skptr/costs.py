"""Costs of orderings, for :class:`~skptr.PointerNetworkOrderer` learning from a cost.

A cost is a function ``cost(X, orderings) -> ndarray of shape (n_samples,)``, lower is
better: ``X`` is a batch of samples in the form the estimator received them (an array
when all have one length, a list of sequences otherwise) and ``orderings`` their
orderings in ``predict``'s format (positions, -1 after the end of a shorter sample).
Each cost is a finite real number (not complex, not a boolean) of magnitude at most
1e30, since training computes with the costs in float32: rescale larger costs.
Pass one as ``PointerNetworkOrderer(cost=...)``, or the name of a built-in one:

- ``"tour"``: :func:`tour_length`, the length of the closed tour (the same function
  as :func:`skptr.metrics.tour_length`);
- ``"path"``: :func:`path_length`, the length of the open path.

The estimator computes the built-in costs inside its compiled training step; these
NumPy versions compute the same values, for scoring and for your own code.
"""

from __future__ import annotations

import numpy as np

from ._sequences import check_numeric_sequences, check_orderings
from .metrics import _route_lengths, tour_length

__all__ = ["BUILT_IN_COSTS", "path_length", "tour_length"]


def path_length(X, orderings):
    """Length of each open path: the Euclidean distances between the feature vectors
    of consecutive elements, from the first element to the last.

    Parameters
    ----------
    X : array-like
        A 2-D array ``(n_samples, n_steps)``, a 3-D array ``(n_samples, n_steps,
        n_features)`` or a list of ``(n_steps_i,)`` / ``(n_steps_i, n_features)``
        arrays.
    orderings : array-like
        For each sample, the order in which its elements are visited: an int array
        padded with -1, or a list of index sequences. As for
        :func:`~skptr.metrics.tour_length`, an ordering may leave elements out (the
        length is that of the listed ones) but may not repeat one.

    Returns
    -------
    ndarray of shape (n_samples,)
        The path lengths.

    See Also
    --------
    tour_length : the closed tour, back from the last element to the first.

    Examples
    --------
    >>> from skptr.costs import path_length
    >>> path_length([[0.0, 3.0, 1.0]], [[0, 2, 1]])
    array([3.])
    """
    sequences = check_numeric_sequences(X, dtype=np.float64)
    order, lengths = check_orderings(
        orderings, sequences.lengths, name="orderings", allow_empty=True
    )
    return _route_lengths(sequences.values, order, lengths, closed=False)


#: The costs ``PointerNetworkOrderer(cost=...)`` accepts by name: :func:`tour_length`
#: (the same function as :func:`skptr.metrics.tour_length`) and :func:`path_length`.
BUILT_IN_COSTS = {"tour": tour_length, "path": path_length}
