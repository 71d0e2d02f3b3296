"""The dtype policies skptr builds networks with.

A network is built under its estimator's ``dtype_policy`` (Keras' global policy
when it is None), set for the building thread only: Keras keeps its global policy per
thread, so fits running concurrently in threads do not affect each other.
"""

from __future__ import annotations

import contextlib

import keras

__all__ = ["DTYPE_POLICIES", "dtype_policy_scope", "global_dtype_policy"]

#: The policies skptr trains with: float32 weights, computing in float32, bfloat16 or
#: float16 (with loss scaling).
DTYPE_POLICIES = ("float32", "mixed_bfloat16", "mixed_float16")


def global_dtype_policy(owner):
    """The name of Keras' global dtype policy, which must be one of
    :data:`DTYPE_POLICIES`.

    Parameters
    ----------
    owner : str
        The estimator's class name, for the message.

    Raises
    ------
    ValueError
        For another global policy (float64, pure 16-bit or quantized policies).
    """
    name = keras.config.dtype_policy().name
    if name not in DTYPE_POLICIES:
        raise ValueError(
            f"{owner} trains with float32 weights; Keras' global dtype policy is "
            f"{name!r}. Set dtype_policy to one of {', '.join(DTYPE_POLICIES)}, or the "
            "global policy (keras.config.set_dtype_policy) to one of them."
        )
    return name


@contextlib.contextmanager
def dtype_policy_scope(name):
    """Build layers with the dtype policy ``name`` (None: the global one) inside."""
    if name is None:
        yield
        return
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(name)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)
