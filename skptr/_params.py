"""Checks of hyperparameter values beyond scikit-learn's constraints, and of warm starts.

scikit-learn's ``_validate_params`` checks each hyperparameter against its constraints;
these checks add what the constraints cannot say (a bool is not a number, a number must
be finite, devices and callbacks of the right kinds) and whether a warm start can
continue the fitted network.
"""

from __future__ import annotations

import math
import reprlib
from numbers import Integral, Real

import keras
import numpy as np
from sklearn.utils._param_validation import Interval, InvalidParameterError, Options

from ._devices import ALL_DEVICES
from ._precision import global_dtype_policy

__all__ = ["check_numbers", "check_values", "check_warm_start", "network_params", "plain"]


def plain(value):
    """A NumPy scalar as the Python number it holds; anything else unchanged."""
    return value.item() if isinstance(value, np.generic) else value


def _takes_numbers(constraints):
    """Whether a parameter's constraints take numbers (but not booleans)."""
    numeric = any(
        isinstance(c, Interval)
        or (isinstance(c, Options) and issubclass(c.type, Real))
        or c in (Integral, Real)
        for c in constraints
    )
    return numeric and "boolean" not in constraints


def check_numbers(estimator):
    """Refuse a bool, or a number of a foreign type, where a number is expected (run
    before scikit-learn's checks, which would accept them)."""
    owner = type(estimator).__name__
    for name, value in estimator.get_params(deep=False).items():
        constraints = estimator._parameter_constraints[name]
        if not (_takes_numbers(constraints) or name == "random_state"):
            continue
        if isinstance(value, bool | np.bool_):
            raise InvalidParameterError(
                f"The {name!r} parameter of {owner} must be a number, not a bool. "
                f"Got {value!r} instead."
            )
        if isinstance(value, Real) and not isinstance(value, int | float | np.number):
            raise InvalidParameterError(
                f"The {name!r} parameter of {owner} must be an int or a float, got a "
                f"{type(value).__name__} ({value!r})."
            )


def check_values(estimator):
    """Refuse numbers that are not finite, unknown device names and callbacks that are
    not Keras callbacks (run after scikit-learn's checks)."""
    owner = type(estimator).__name__
    for name, value in estimator.get_params(deep=False).items():
        if isinstance(value, Real) and not isinstance(value, bool):
            try:
                finite = math.isfinite(float(value))
            except OverflowError:
                finite = False
            if not finite:
                raise InvalidParameterError(
                    f"The {name!r} parameter of {owner} must be a finite number that a "
                    f"float can hold. Got {reprlib.repr(value)} instead."
                )
    devices = getattr(estimator, "devices", None)
    if isinstance(devices, str) and devices != ALL_DEVICES:
        raise InvalidParameterError(
            f"The 'devices' parameter of {owner} must be None, {ALL_DEVICES!r}, a "
            "keras.distribution.DataParallel (JAX) or a tf.distribute strategy "
            f"(TensorFlow). Got {devices!r} instead."
        )
    for index, callback in enumerate(estimator.callbacks or ()):
        if not isinstance(callback, keras.callbacks.Callback):
            raise InvalidParameterError(
                f"The 'callbacks' parameter of {owner} must hold keras.callbacks.Callback "
                f"instances; callbacks[{index}] is a {type(callback).__name__}."
            )


def network_params(estimator):
    """The network hyperparameters a new network of ``estimator`` is built with now
    (``dtype_policy=None`` resolved to Keras' global policy)."""
    params = {name: plain(getattr(estimator, name)) for name in estimator._network_params}
    if params.get("dtype_policy", "") is None:
        params["dtype_policy"] = global_dtype_policy(type(estimator).__name__)
    return params


def check_warm_start(estimator):
    """Raise a ``ValueError`` when a warm start cannot continue the fitted network: a
    hyperparameter it was built with has changed since."""
    fitted = estimator.network_params_
    changed = [
        (name, fitted[name], value)
        for name, value in network_params(estimator).items()
        if value != fitted[name]
    ]
    if changed:
        now = ", ".join(f"{name}={value!r}" for name, _, value in changed)
        then = ", ".join(f"{name}={before!r}" for name, before, _ in changed)
        raise ValueError(
            f"{type(estimator).__name__}: warm_start=True continues the fitted network, "
            f"which was built with {then}; the estimator now has {now}. Set "
            "warm_start=False to fit a new network with the new settings, or set "
            f"{'them' if len(changed) > 1 else 'it'} back to continue training."
        )
