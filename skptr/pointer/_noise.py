"""Gumbel noise for sampled decoding, computed step by step from one key per sample.

A sampled lane adds standard Gumbel noise to each step's logits and takes the most
probable position (the Gumbel-max trick). The noise of a sample at step ``t``, lane
``l`` and position ``p`` is a hash of the sample's key and of ``(t, l, p)``, computed
inside the decoding loop with ``keras.ops``. So a step holds only its own noise
(lanes × positions numbers per sample, never those of every step), nothing is drawn
on the host, and a sample's candidates depend on its key alone: not on the other
samples of the call, nor on the backend.

The hash is MurmurHash3's 32-bit finaliser (Appleby 2011), applied to the row
``(t, l)`` and then to the position, each mixed with the key; its output bits pass
the usual avalanche tests, which is all the Gumbel-max trick needs of them.
"""

from __future__ import annotations

from keras import ops

__all__ = ["gumbel_step_noise", "uniform_step_noise"]

_GOLDEN = 0x9E3779B9  # 2**32 / golden ratio: keeps the counters away from 0
_MIX_1 = 0x85EBCA6B
_MIX_2 = 0xC2B2AE35
_FRACTION_BITS = 23  # a float32 holds (k + 0.5) / 2**23 exactly, and 1 - 2**-24


def _uint32(value):
    return ops.convert_to_tensor(value, dtype="uint32")


def _mix(h):
    """MurmurHash3's finaliser of uint32 ``h``: every output bit depends on every input
    bit."""
    h = ops.bitwise_xor(h, ops.right_shift(h, _uint32(16)))
    h = ops.multiply(h, _uint32(_MIX_1))
    h = ops.bitwise_xor(h, ops.right_shift(h, _uint32(13)))
    h = ops.multiply(h, _uint32(_MIX_2))
    return ops.bitwise_xor(h, ops.right_shift(h, _uint32(16)))


def uniform_step_noise(keys, step, n_lanes, n_positions):
    """Uniform noise in (0, 1) of one decoding step.

    Parameters
    ----------
    keys : int tensor of shape (n,)
        Each sample's key (its bits are used as they are).
    step : int scalar tensor
        The decoding step.
    n_lanes, n_positions : int
        Lanes per sample, and positions to choose from at each step.

    Returns
    -------
    float32 tensor of shape (n, n_lanes, n_positions)
        ``(k + 0.5) / 2**23`` for a hashed ``k`` in ``[0, 2**23)``: never 0 or 1.
    """
    keys = ops.cast(keys, "uint32")
    lanes = ops.cast(ops.arange(n_lanes), "uint32")
    row = ops.cast(step, "uint32") * _uint32(n_lanes) + lanes + _uint32(_GOLDEN)
    positions = _mix(ops.cast(ops.arange(n_positions), "uint32") * _uint32(_GOLDEN))
    per_row = _mix(ops.bitwise_xor(keys[:, None], _mix(row)[None, :]))
    hashed = _mix(ops.bitwise_xor(per_row[:, :, None], positions[None, None, :]))
    fraction = ops.cast(ops.right_shift(hashed, _uint32(32 - _FRACTION_BITS)), "float32")
    return (fraction + 0.5) * (0.5**_FRACTION_BITS)


def gumbel_step_noise(keys, step, n_lanes, n_positions):
    """Standard Gumbel noise (n, ``n_lanes``, ``n_positions``) of one decoding step,
    from :func:`uniform_step_noise`; finite, so a masked position (logit -1e9) is never
    chosen."""
    return -ops.log(-ops.log(uniform_step_noise(keys, step, n_lanes, n_positions)))
