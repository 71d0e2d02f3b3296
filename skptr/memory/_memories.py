"""Differentiable stack, queue and double-ended queue (Grefenstette et al. 2015).

Each memory is a pure function of ``keras.ops`` that performs one time step: it pops,
pushes and reads, and returns the new memory. The memory is held in two buffers:

``values``, shape (batch, n_slots, width)
    The vectors ever pushed, one slot per push. Slots are written once and never
    change afterwards.
``strengths``, shape (batch, n_slots)
    How much of each vector is still "in" the memory, a number in [0, 1].

A slot that was never written has strength 0 and is invisible to pops and reads, so the
buffers can be larger than needed: callers size them from the number of time steps of
the sequence at hand (one slot per step for the stack and the queue, two for the deque),
which is what lets a model trained on short sequences run on much longer ones. The
slot written at step ``t`` is ``t`` (stack, queue) or ``n_slots // 2 + t`` for the top and
``n_slots // 2 - 1 - t`` for the bottom of the deque, so that slot order is memory order:
index 0 is the bottom (oldest end) and the last index the top.

All strength updates and reads are vectorised over the slots with cumulative sums.
"""

from __future__ import annotations

from numbers import Real

import numpy as np
from keras import ops

from .._backend import write_slot

__all__ = [
    "MEMORY_KINDS",
    "deque_step",
    "initial_memory",
    "memory_ends",
    "memory_operations",
    "memory_slots",
    "memory_step",
    "push_biases",
    "queue_step",
    "stack_step",
    "unpadded_slots",
]

#: The memories this module implements.
MEMORY_KINDS = ("stack", "queue", "deque")


def _strength_above(strengths):
    """Sum of the strengths strictly above each slot (towards the top)."""
    total = ops.sum(strengths, axis=-1, keepdims=True)
    return total - ops.cumsum(strengths, axis=-1)


def _strength_below(strengths):
    """Sum of the strengths strictly below each slot (towards the bottom)."""
    return ops.cumsum(strengths, axis=-1) - strengths


def _remove(strengths, amount, covering):
    """Remove ``amount`` of strength, starting from the slots that nothing covers.

    ``covering`` is the strength lying between each slot and the end popped from; a
    slot loses what of ``amount`` is left once the covering slots have been consumed.
    """
    return ops.relu(strengths - ops.relu(amount[:, None] - covering))


def _read(values, strengths, covering, final_values=None):
    """Weighted sum of the slots holding the first 1.0 of strength from one end.

    With ``final_values`` the read is that of :func:`_read_with_final_values`.
    """
    weights = ops.minimum(strengths, ops.relu(1.0 - covering))
    if final_values is None:
        return ops.einsum("bn,bnw->bw", weights, values)
    return _read_with_final_values(weights, values, final_values)


def _read_with_final_values(weights, values, final_values):
    """The read ``weights @ values``, differentiated without the step's ``values``.

    ``final_values`` is the values buffer at the end of the sequence, from an earlier
    run of the same steps. It holds the step's vectors in the slots written so far,
    and the other slots have zero weight, so the read's value is the same. Its gradient
    splits in two: towards the weights through ``final_values``, a constant of the
    loop, and towards the values with the weights held fixed, which needs the weights
    only. (The gradient that reaches the zero weights of unwritten slots stops where
    their zero strengths come from: a ``relu`` of a number at most 0.) Differentiating
    ``weights @ values`` directly would keep a copy of the whole buffer for every step,
    which grows with the square of the sequence length.
    """
    through_weights = ops.einsum("bn,bnw->bw", weights, ops.stop_gradient(final_values))
    through_values = ops.einsum("bn,bnw->bw", ops.stop_gradient(weights), values)
    return through_weights + (through_values - ops.stop_gradient(through_values))


def _write(values, strengths, slot, push, value):
    """Write ``value`` with strength ``push`` into slot ``slot`` of every sample."""
    return write_slot(values, slot, value), write_slot(strengths, slot, push)


def stack_step(values, strengths, push, pop, value, step, final_values=None):
    """One step of the neural stack: pop, then push, then read the top.

    Implements equations (1)-(3) of Grefenstette et al. (2015): the pop removes ``pop``
    units of strength from the top down, the push writes ``value`` with strength
    ``push`` on top, and the read is the weighted sum of the vectors holding the top
    1.0 of strength.

    Parameters
    ----------
    values : tensor of shape (batch, n_slots, width)
        Vectors pushed so far.
    strengths : tensor of shape (batch, n_slots)
        Their strengths.
    push : tensor of shape (batch,)
        Push strength ``d_t`` in [0, 1].
    pop : tensor of shape (batch,)
        Pop strength ``u_t`` in [0, 1].
    value : tensor of shape (batch, width)
        Vector ``v_t`` to push.
    step : int or scalar int tensor
        Time step ``t`` (from 0); the push goes to slot ``step``.
    final_values : tensor of shape (batch, n_slots, width), optional
        The values buffer after the last step of an earlier run of the same steps.
        The read is then the same, but its gradient needs no copy of ``values`` per
        step (see :func:`_read_with_final_values`).

    Returns
    -------
    values : tensor of shape (batch, n_slots, width)
    strengths : tensor of shape (batch, n_slots)
    read : tensor of shape (batch, width)
        The read vector ``r_t``.
    """
    strengths = _remove(strengths, pop, _strength_above(strengths))
    values, strengths = _write(values, strengths, step, push, value)
    covering = _strength_above(strengths)
    return values, strengths, _read(values, strengths, covering, final_values)


def queue_step(values, strengths, push, pop, value, step, final_values=None):
    """One step of the neural queue: pop from the front, push at the back, read the front.

    Implements equations (4)-(5) of Grefenstette et al. (2015). Arguments and return
    values are those of :func:`stack_step`; the difference is that pops and reads work
    from the oldest slot (index 0) upwards.

    Parameters
    ----------
    values : tensor of shape (batch, n_slots, width)
        Vectors pushed so far.
    strengths : tensor of shape (batch, n_slots)
        Their strengths.
    push : tensor of shape (batch,)
        Push strength ``d_t``.
    pop : tensor of shape (batch,)
        Pop strength ``u_t``.
    value : tensor of shape (batch, width)
        Vector ``v_t`` to enqueue.
    step : int or scalar int tensor
        Time step ``t`` (from 0); the push goes to slot ``step``.
    final_values : tensor of shape (batch, n_slots, width), optional
        The values buffer after the last step of an earlier run of the same steps.
        The read is then the same, but its gradient needs no copy of ``values`` per
        step (see :func:`_read_with_final_values`).

    Returns
    -------
    values : tensor of shape (batch, n_slots, width)
    strengths : tensor of shape (batch, n_slots)
    read : tensor of shape (batch, width)
        The read vector ``r_t`` (the front of the queue).
    """
    strengths = _remove(strengths, pop, _strength_below(strengths))
    values, strengths = _write(values, strengths, step, push, value)
    covering = _strength_below(strengths)
    return values, strengths, _read(values, strengths, covering, final_values)


def deque_step(values, strengths, push, pop, value, step, final_values=None):
    """One step of the neural double-ended queue.

    Implements equations (6)-(11) of Grefenstette et al. (2015): both ends pop from the
    previous strengths (the smaller of the two results is kept), then each end pushes its
    own vector, then each end reads its first 1.0 of strength. Index 0 of the second
    axis of ``push``, ``pop`` and ``value`` is the top end, index 1 the bottom end.

    Parameters
    ----------
    values : tensor of shape (batch, n_slots, width)
        Vectors pushed so far; ``n_slots`` is even, the top end grows from slot
        ``n_slots // 2`` upwards and the bottom end from slot ``n_slots // 2 - 1`` down.
    strengths : tensor of shape (batch, n_slots)
        Their strengths.
    push : tensor of shape (batch, 2)
        Push strengths at the top and at the bottom.
    pop : tensor of shape (batch, 2)
        Pop strengths at the top and at the bottom.
    value : tensor of shape (batch, 2, width)
        Vectors to push at the top and at the bottom.
    step : int or scalar int tensor
        Time step ``t`` (from 0).
    final_values : tensor of shape (batch, n_slots, width), optional
        As in :func:`stack_step`.

    Returns
    -------
    values : tensor of shape (batch, n_slots, width)
    strengths : tensor of shape (batch, n_slots)
    read : tensor of shape (batch, 2 * width)
        The top read followed by the bottom read.
    """
    middle = ops.shape(strengths)[-1] // 2
    popped_top = _remove(strengths, pop[:, 0], _strength_above(strengths))
    popped_bottom = _remove(strengths, pop[:, 1], _strength_below(strengths))
    strengths = ops.minimum(popped_top, popped_bottom)
    step = ops.cast(step, "int32")
    values, strengths = _write(values, strengths, middle + step, push[:, 0], value[:, 0])
    values, strengths = _write(values, strengths, middle - 1 - step, push[:, 1], value[:, 1])
    read_top = _read(values, strengths, _strength_above(strengths), final_values)
    read_bottom = _read(values, strengths, _strength_below(strengths), final_values)
    return values, strengths, ops.concatenate([read_top, read_bottom], axis=-1)


_STEPS = {"stack": stack_step, "queue": queue_step, "deque": deque_step}


def memory_ends(kind):
    """Number of ends the controller pushes to and pops from (1, or 2 for the deque).

    Parameters
    ----------
    kind : {"stack", "queue", "deque"}
        The memory.

    Returns
    -------
    int
    """
    _check_kind(kind)
    return 2 if kind == "deque" else 1


def push_biases(push_bias, n_ends):
    """The initial push bias of each end of a memory.

    Parameters
    ----------
    push_bias : float or sequence of float
        One bias for every end, or one per end (top first for the deque).
    n_ends : int
        Number of ends, as returned by :func:`memory_ends` (0 without a memory).

    Returns
    -------
    tuple of float
        ``n_ends`` biases.
    """
    if isinstance(push_bias, Real):
        return (float(push_bias),) * n_ends
    biases = tuple(float(bias) for bias in push_bias)
    if len(biases) != n_ends:
        raise ValueError(
            f"push_bias needs one value per memory end ({n_ends}), got {len(biases)}."
        )
    return biases


def memory_slots(kind, n_steps):
    """Number of slots a memory needs to run for ``n_steps`` steps.

    Parameters
    ----------
    kind : {"stack", "queue", "deque"}
        The memory.
    n_steps : int or scalar int tensor
        Number of time steps.

    Returns
    -------
    int or scalar int tensor
    """
    return memory_ends(kind) * n_steps


def initial_memory(kind, batch_size, n_steps, width, dtype="float32"):
    """Empty buffers for ``n_steps`` steps of a memory.

    Parameters
    ----------
    kind : {"stack", "queue", "deque"}
        The memory.
    batch_size : int or scalar int tensor
        Number of sequences.
    n_steps : int or scalar int tensor
        Number of time steps the memory will run for.
    width : int
        Width of the stored vectors.
    dtype : str, default="float32"
        Floating point type of the buffers.

    Returns
    -------
    values : tensor of shape (batch_size, n_slots, width)
    strengths : tensor of shape (batch_size, n_slots)
    """
    n_slots = memory_slots(kind, n_steps)
    values = ops.zeros((batch_size, n_slots, width), dtype=dtype)
    strengths = ops.zeros((batch_size, n_slots), dtype=dtype)
    return values, strengths


def memory_operations(heads, n_ends, noise=None, rounded=False, active=None):
    """The push and pop strengths and the pushed values of a step, in float32.

    Parameters
    ----------
    heads : tensor of shape (batch, 2 * n_ends + n_ends * width)
        The controller's head logits: push, pop (one per end), then the values.
    n_ends : int
    noise : tensor of shape (batch, 2 * n_ends), optional
        Added to the push and pop logits.
    rounded : bool, default=False
        Whether the strengths are rounded to 0 or 1.
    active : bool tensor of shape (batch,), optional
        Samples whose step counts; the others neither push nor pop.

    Returns
    -------
    push, pop : tensors of shape (batch, n_ends)
    value : tensor of shape (batch, n_ends, width)
    """
    k = n_ends
    gates = heads[:, : 2 * k] if noise is None else heads[:, : 2 * k] + noise
    push, pop = ops.sigmoid(gates[:, :k]), ops.sigmoid(gates[:, k:])
    if rounded:
        push, pop = ops.round(push), ops.round(pop)
    if active is not None:
        on = ops.cast(active, push.dtype)[:, None]
        push, pop = push * on, pop * on
    width = (heads.shape[-1] - 2 * k) // k
    value = ops.reshape(ops.tanh(heads[:, 2 * k :]), (-1, k, width))
    return tuple(ops.cast(x, "float32") for x in (push, pop, value))


def memory_step(kind, values, strengths, push, pop, value, step, final_values=None):
    """Run one step of the memory ``kind``.

    Parameters
    ----------
    kind : {"stack", "queue", "deque"}
        The memory.
    values, strengths : tensors
        The buffers, as returned by :func:`initial_memory` or a previous step.
    push, pop : tensors of shape (batch, n_ends)
        Push and pop strengths, one column per end (see :func:`memory_ends`).
    value : tensor of shape (batch, n_ends, width)
        Vectors to push, one per end.
    step : int or scalar int tensor
        Time step (from 0).
    final_values : tensor of shape (batch, n_slots, width), optional
        The values buffer after the last step of an earlier run of the same steps,
        for a read whose gradient keeps no copy of the buffer per step (see
        :func:`stack_step`).

    Returns
    -------
    values, strengths, read
        The new buffers and the read vector, shape (batch, n_ends * width).
    """
    _check_kind(kind)
    if kind == "deque":
        return deque_step(values, strengths, push, pop, value, step, final_values)
    return _STEPS[kind](values, strengths, push[:, 0], pop[:, 0], value[:, 0], step, final_values)


def _check_kind(kind):
    if kind not in _STEPS:
        raise ValueError(f"memory must be one of {MEMORY_KINDS} or None, got {kind!r}.")


def unpadded_slots(strengths, memory, n_padding):
    """The strengths of the slots that real steps of a left-padded stream can write.

    Parameters
    ----------
    strengths : ndarray of shape (n_steps, n_slots)
        Slot strengths recorded along a stream whose first ``n_padding`` steps are
        padding.
    memory : {"stack", "queue", "deque"}
        The memory; the stack and the queue write slot ``t`` at step ``t``, the deque
        has ``n_slots / 2`` bottom slots (latest push first) then as many top slots.
    n_padding : int
        Number of padding steps at the start of the stream.

    Returns
    -------
    ndarray of shape (n_steps, n_slots - n_padding * ends)
    """
    if memory == "deque":
        middle = strengths.shape[1] // 2
        return np.concatenate(
            [strengths[:, : middle - n_padding], strengths[:, middle + n_padding :]], axis=1
        )
    return strengths[:, n_padding:]
