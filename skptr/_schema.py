"""Types of fitted attributes, declared by each estimator and checked when a file is read.

Each estimator lists the attributes ``fit`` sets, with one :class:`Rule` each, in its
``_fitted_attributes`` (beside ``_parameter_constraints``); its codec declares the
attributes that store it. :mod:`skptr._persistence` writes exactly those attributes and
reads exactly those, checking each value against its rule.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ._sequences import token_key

__all__ = [
    "BOOL",
    "DTYPE_OR_NONE",
    "HISTORY",
    "PARAMETERS",
    "POSITIVE_FLOATS_OR_NONE",
    "SCORES",
    "VOCABULARY",
    "Rule",
    "float_between",
    "int_between",
    "int_between_or_none",
    "number_between",
    "one_of",
]


class Rule(NamedTuple):
    """The expected type of a fitted attribute: a description and a test."""

    description: str
    test: Callable[[object], bool]


def _is_number(value):
    return type(value) in (int, float)


def int_between(low, high):
    """An int (not a bool) in ``[low, high]``."""
    return Rule(
        f"an int in [{low}, {high}]", lambda value: type(value) is int and low <= value <= high
    )


def int_between_or_none(low, high):
    """None, or an int (not a bool) in ``[low, high]``."""
    return Rule(
        f"None or an int in [{low}, {high}]",
        lambda value: value is None or (type(value) is int and low <= value <= high),
    )


def number_between(low, high):
    """An int or float in ``[low, high]`` (so finite)."""
    return Rule(
        f"a number in [{low}, {high}]",
        lambda value: _is_number(value) and low <= value <= high,
    )


def float_between(low, high):
    """A float in ``[low, high]``."""
    return Rule(
        f"a float in [{low:g}, {high:g}]",
        lambda value: type(value) is float and low <= value <= high,
    )


def one_of(*options):
    """One of the given strings."""
    return Rule(
        f"one of {', '.join(map(repr, options))}",
        lambda value: isinstance(value, str) and value in options,
    )


def _is_history(value):
    return isinstance(value, dict) and all(
        isinstance(key, str) and isinstance(values, list) and all(map(_is_number, values))
        for key, values in value.items()
    )


def _is_hashable(value):
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _is_vocabulary(value):
    if not (isinstance(value, np.ndarray) and value.dtype == object and value.ndim == 1):
        return False
    if not all(map(_is_hashable, value)):
        return False
    keys = [token_key(token) for token in value]
    return len(set(keys)) == len(keys)


def _is_dtype_string_or_none(value):
    if value is None:
        return True
    if not isinstance(value, str):
        return False
    try:
        return np.dtype(value).str == value
    except (TypeError, ValueError, OverflowError):
        return False


def _is_scores(value):
    return (
        isinstance(value, np.ndarray)
        and value.dtype.kind == "f"
        and value.ndim == 1
        and bool(np.all(np.isnan(value) | ((value >= 0) & (value <= 1))))
    )


def _is_positive_floats_or_none(value):
    return value is None or (
        isinstance(value, np.ndarray)
        and value.dtype.kind == "f"
        and value.ndim == 1
        and bool(np.all(np.isfinite(value) & (value > 0)))
    )


def _is_parameters(value):
    return isinstance(value, dict) and all(isinstance(key, str) for key in value)


BOOL = Rule("a bool", lambda value: type(value) is bool)
HISTORY = Rule("a dict of str to lists of numbers", _is_history)
VOCABULARY = Rule("a 1-D object array of distinct hashable tokens", _is_vocabulary)
#: A dict of hyperparameters by name; their values are checked by the estimator's own
#: parameter validation.
PARAMETERS = Rule("a dict of hyperparameters by name", _is_parameters)
DTYPE_OR_NONE = Rule("None or a NumPy dtype string such as '<i8'", _is_dtype_string_or_none)
SCORES = Rule("a 1-D float array of scores in [0, 1] or NaN", _is_scores)
POSITIVE_FLOATS_OR_NONE = Rule(
    "None or a 1-D float array of positive finite numbers", _is_positive_floats_or_none
)
