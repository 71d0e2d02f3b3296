"""Calling the cost of a :class:`~skptr.PointerNetworkOrderer`: by name or a user's
function, on the user's own samples, with its answers checked."""

from __future__ import annotations

import numbers
import threading

import keras
import numpy as np

from ..costs import BUILT_IN_COSTS

__all__ = [
    "MAX_COST_MAGNITUDE",
    "CostErrors",
    "call_cost",
    "check_cost_applies",
    "cost_function",
    "cost_name",
    "samples_at",
]


#: The largest magnitude of a cost. Training computes with the costs in float32, whose
#: largest finite value is about 3.4e38: sums of many costs, and the gradients scaled
#: by them, overflow to inf and then nan well before a single cost does. Larger costs
#: are refused, asking for the cost to be rescaled (a constant factor changes nothing
#: that is learned).
MAX_COST_MAGNITUDE = 1e30


def cost_function(cost):
    """The NumPy function of a ``cost`` hyperparameter (a built-in's name, or itself)."""
    return BUILT_IN_COSTS[cost] if isinstance(cost, str) else cost


def cost_name(cost):
    """How error messages name a cost."""
    if isinstance(cost, str):
        return repr(cost)
    return getattr(cost, "__qualname__", None) or repr(cost)


def check_cost_applies(cost, ordered_subsets):
    """Refuse a built-in cost, which scores permutations, for a model that predicts
    ordered subsets."""
    if ordered_subsets and isinstance(cost, str):
        raise ValueError(
            f"The {cost!r} cost needs orderings of every element, but this estimator was "
            "fitted on ordered subsets (targets shorter than their inputs), whose "
            "orderings may stop early; pass a cost function that scores them."
        )


def samples_at(samples, index):
    """The samples at positions ``index`` of ``samples``, in the form they were given:
    rows of an array, else a list."""
    if isinstance(samples, np.ndarray):
        return samples[index]
    return [samples[i] for i in index]


def call_cost(cost, samples, orderings, sample_ids):
    """The costs ``cost(samples, orderings)``, checked.

    Parameters
    ----------
    cost : str or callable
        The ``cost`` hyperparameter.
    samples : array-like
        The samples, in the form the user gave them.
    orderings : ndarray of shape (n_samples, n_outputs)
        One ordering per sample, -1 after its end.
    sample_ids : ndarray of shape (n_samples,)
        The position of each sample in the data the user passed, for messages.

    Returns
    -------
    ndarray of shape (n_samples,), float64

    Raises
    ------
    ValueError
        If the cost raises, or does not return one finite real number per sample
        (complex numbers, booleans and strings are refused, not converted), or returns
        a number whose magnitude exceeds :data:`MAX_COST_MAGNITUDE`.
    """
    name = cost_name(cost)
    try:
        values = cost_function(cost)(samples, orderings)
    except Exception as error:  # a user's function: any failure is reported as one
        raise ValueError(
            f"The cost {name} raised {type(error).__name__} on the samples starting at "
            f"X[{int(sample_ids[0])}]: {error}"
        ) from error
    values = _real_values(values, name, orderings, sample_ids)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        i = int(bad[0])
        raise ValueError(
            f"The cost {name} returned {values[i]} for X[{int(sample_ids[i])}] with ordering "
            f"{_ordering(orderings, i)}; costs must be finite numbers."
        )
    bad = np.flatnonzero(np.abs(values) > MAX_COST_MAGNITUDE)
    if bad.size:
        i = int(bad[0])
        raise ValueError(
            f"The cost {name} returned {values[i]:.3g} for X[{int(sample_ids[i])}] with "
            f"ordering {_ordering(orderings, i)}; training computes with costs in float32, "
            f"so their magnitude must not exceed {MAX_COST_MAGNITUDE:.0e}: rescale the cost "
            "(divide it by a constant or change its units; that changes nothing learned)."
        )
    return values


def _ordering(orderings, i):
    return orderings[i][orderings[i] >= 0].tolist()


def _real_values(values, name, orderings, sample_ids):
    """The values a cost returned as float64, one per sample; anything but real numbers
    (complex numbers, booleans, strings, other objects) is refused, not converted."""
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as error:  # ragged nested lists
        raise ValueError(
            f"{_NUMBERS.format(name=name)}; it returned {type(values).__name__}."
        ) from error
    if array.shape != (len(orderings),):
        raise ValueError(
            f"The cost {name} must return an array of shape ({len(orderings)},), one "
            f"number per sample; it returned shape {array.shape}."
        )
    if array.dtype.kind == "O":  # a list of Python objects: name the first non-number
        for i, item in enumerate(array.tolist()):
            if isinstance(item, bool) or not isinstance(item, numbers.Real):
                raise ValueError(
                    f"{_NUMBERS.format(name=name)}; it returned {item!r} for "
                    f"X[{int(sample_ids[i])}]."
                )
    elif array.dtype.kind not in "iuf":
        raise ValueError(
            f"{_NUMBERS.format(name=name)}; it returned values of dtype {array.dtype} "
            "(complex numbers, booleans and strings are refused, not converted)."
        )
    try:
        return array.astype(np.float64)
    except OverflowError as error:  # Python integers beyond float64
        raise ValueError(
            f"{_NUMBERS.format(name=name)}; it returned integers too large for a float: "
            "rescale the cost."
        ) from error


_NUMBERS = "The cost {name} must return an array of numbers, one real number per sample"


class CostErrors(keras.callbacks.Callback):
    """Carries the first error of a cost called from inside the training step (where
    raising would surface as a backend error) out of ``fit``, after the step."""

    def __init__(self):
        super().__init__()
        self._lock = threading.Lock()
        self.error = None

    def record(self, error):
        with self._lock:
            self.error = self.error or error

    def raise_recorded(self):
        if self.error is not None:
            raise self.error

    def on_train_batch_end(self, batch, logs=None):
        self.raise_recorded()

    def on_test_batch_end(self, batch, logs=None):
        self.raise_recorded()

    def on_train_end(self, logs=None):
        self.raise_recorded()
