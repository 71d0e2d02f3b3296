"""Discrete stack, queue and double-ended queue, for strengths rounded to 0 or 1.

With push and pop strengths of exactly 0 or 1 (``snap_gates``), every slot of the
continuous memories of :mod:`~skptr.memory._memories` holds strength 0 or 1, and each
read returns exactly one vector: the one at the end read from. The continuous step still
touches every slot (``O(n_slots * width)`` per step, so decoding ``T`` tokens costs
``O(T^2)``). This module keeps the same slots, but links the live ones into a list and
points at its ends, so that a step costs ``O(width)``: decoding becomes linear in ``T``.

The memory is a :class:`DiscreteMemory` of tensors:

``values``, shape (batch, n_slots, width)
    The vectors pushed, in the slots the continuous memory writes them to (slot ``t``
    at step ``t``; ``n_slots // 2 + t`` and ``n_slots // 2 - 1 - t`` for the deque).
``below``, ``above``, shape (batch, n_slots + 1), int32
    For each live slot, the next live slot towards the bottom, and towards the top;
    the last column takes the writes that a sample skips.
``bottom``, ``top``, ``size``, shape (batch,), int32
    The live slots at either end, and the number of live slots (the end pointers mean
    nothing while it is 0).
``step``, ``pushed``, ``linked_below``, ``linked_above``, ``above_at``, ``above_link``,
``below_at``, ``below_link``
    The writes of the last step, not yet made (see below).

Pops and pushes follow :func:`~skptr.memory._memories.memory_step`: both ends pop from
the memory as it was, then the top pushes, then the bottom (deque), then each end reads.
The reads equal those of the continuous memory given the same 0/1 strengths, exactly.

A compiled loop updates a buffer in place only if nothing reads it afterwards in the same
iteration. Each step therefore first makes the writes of the previous step, then reads,
and keeps its own writes for the next step (its reads see the vectors it pushes
directly). The functions hold no gradient path worth having and serve inference only.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from keras import ops

from ._memories import memory_ends, memory_slots

__all__ = ["DiscreteMemory", "discrete_memory_step", "initial_discrete_memory"]


class DiscreteMemory(NamedTuple):
    """The tensors of a discrete memory (see the module docstring)."""

    values: Any
    below: Any
    above: Any
    bottom: Any
    top: Any
    size: Any
    step: Any
    pushed: Any
    linked_below: Any
    linked_above: Any
    above_at: Any
    above_link: Any
    below_at: Any
    below_link: Any


def initial_discrete_memory(kind, batch_size, n_steps, width, dtype="float32"):
    """An empty discrete memory with room for ``n_steps`` steps.

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
        Floating point type of the values.

    Returns
    -------
    DiscreteMemory
    """
    n_slots = memory_slots(kind, n_steps)
    links = ops.zeros((batch_size, n_slots + 1), dtype="int32")
    pointer = ops.zeros((batch_size,), dtype="int32")
    skipped = ops.full((batch_size,), n_slots, dtype="int32")
    # The pending writes of a step -1 that wrote zeros where everything is zero already.
    return DiscreteMemory(
        values=ops.zeros((batch_size, n_slots, width), dtype=dtype),
        below=links,
        above=links,
        bottom=pointer,
        top=pointer,
        size=pointer,
        step=ops.convert_to_tensor(-1, dtype="int32"),
        pushed=ops.zeros((batch_size, memory_ends(kind), width), dtype=dtype),
        linked_below=pointer,
        linked_above=pointer,
        above_at=skipped,
        above_link=pointer,
        below_at=skipped,
        below_link=pointer,
    )


def _end_slots(kind, n_slots, step):
    """The slots the top (and the deque's bottom) write at ``step``."""
    if kind != "deque":
        return (step,)
    middle = n_slots // 2
    return middle + step, middle - 1 - step


def _gather(table, slot):
    """``table[b, slot[b]]`` for every sample ``b`` (any trailing axes kept)."""
    index = ops.reshape(slot, (-1, 1) + (1,) * (len(table.shape) - 2))
    if len(table.shape) > 2:
        index = ops.broadcast_to(index, (ops.shape(table)[0], 1, *table.shape[2:]))
    return ops.squeeze(ops.take_along_axis(table, index, axis=1), axis=1)


def _scatter(table, slot, value):
    """``table[b, slot[b]] = value[b]`` for every sample ``b``."""
    rows = ops.arange(ops.shape(table)[0], dtype="int32")
    return ops.scatter_update(table, ops.stack([rows, slot], axis=1), value)


def _set_column(table, slot, value):
    """``table[:, slot] = value``: the same slot of every sample."""
    start = (0, slot) + (0,) * (len(table.shape) - 2)
    return ops.slice_update(table, start, ops.expand_dims(value, 1))


def _flushed(kind, memory):
    """``memory`` with the writes of its last step made."""
    m = memory
    slots = _end_slots(kind, ops.shape(m.values)[1], ops.maximum(m.step, 0))
    values = m.values
    for end, slot in enumerate(slots):
        values = _set_column(values, slot, m.pushed[:, end])
    below = _scatter(_set_column(m.below, slots[0], m.linked_below), m.below_at, m.below_link)
    above = m.above
    if kind == "deque":
        above = _set_column(above, slots[1], m.linked_above)
    above = _scatter(above, m.above_at, m.above_link)
    return m._replace(values=values, below=below, above=above)


def _pop(memory, pop_top, pop_bottom):
    """Remove the top and / or the bottom live slot; an empty memory stays empty."""
    m = memory
    live = m.size > 0
    pop_top = ops.logical_and(pop_top, live)
    pop_bottom = ops.logical_and(pop_bottom, live)
    removed = ops.cast(pop_top, "int32") + ops.cast(pop_bottom, "int32")
    return m._replace(
        top=ops.where(pop_top, _gather(m.below, m.top), m.top),
        bottom=ops.where(pop_bottom, _gather(m.above, m.bottom), m.bottom),
        size=ops.maximum(m.size - removed, 0),
    )


def _push(memory, push, slot, skipped, end):
    """Link ``slot`` beyond the ``end`` ("top" or "bottom") and, where ``push``, make it
    the new end (and the other end too, where the memory was empty).

    The top's push links the new slot ``below`` and the old top ``above`` it; the
    bottom's mirrors it. The bottom follows the top in the same step, and both writes
    are pending: the one link both may write (``below`` at the top's slot, when the top
    pushed onto an empty memory) is written by the bottom's last.
    """
    other = "bottom" if end == "top" else "top"
    inward, outward = ("below", "above") if end == "top" else ("above", "below")
    m = memory
    live = m.size > 0
    slots = ops.full(ops.shape(m.size), slot, dtype="int32")
    old_end, old_other = getattr(m, end), getattr(m, other)
    return m._replace(
        **{
            f"linked_{inward}": old_end,
            f"{outward}_at": ops.where(ops.logical_and(push, live), old_end, skipped),
            f"{outward}_link": slots,
            other: ops.where(ops.logical_and(push, ops.logical_not(live)), slots, old_other),
            end: ops.where(push, slots, old_end),
            "size": m.size + ops.cast(push, "int32"),
        }
    )


def _read(memory, end, slots):
    """The vector at ``end`` (a slot per sample), zeros where the memory is empty.

    The vectors of this step's ``slots`` are still pending and read from there.
    """
    read = _gather(memory.values, end)
    for i, slot in enumerate(slots):
        read = ops.where(ops.expand_dims(ops.equal(end, slot), -1), memory.pushed[:, i], read)
    return ops.where(ops.expand_dims(memory.size > 0, -1), read, ops.zeros_like(read))


def discrete_memory_step(kind, memory, push, pop, value, step):
    """Run one step of the discrete memory ``kind``.

    Parameters
    ----------
    kind : {"stack", "queue", "deque"}
        The memory.
    memory : DiscreteMemory or tuple of tensors
        As returned by :func:`initial_discrete_memory` or a previous step.
    push, pop : tensors of shape (batch, n_ends)
        Push and pop strengths, each 0 or 1 (any value above 0.5 counts as 1), one
        column per end, the top first.
    value : tensor of shape (batch, n_ends, width)
        Vectors to push, one per end.
    step : int or scalar int tensor
        Time step (from 0).

    Returns
    -------
    memory : DiscreteMemory
        The new memory.
    read : tensor of shape (batch, n_ends * width)
        The vector at the end read from (the top of a stack, the front of a queue, the
        top then the bottom of a deque), zeros for an empty memory.
    """
    memory_ends(kind)  # validates the name
    push, pop = push > 0.5, pop > 0.5
    step = ops.cast(step, "int32")
    memory = _flushed(kind, DiscreteMemory(*memory))
    n_slots = ops.shape(memory.values)[1]
    skipped = ops.full(ops.shape(memory.top), n_slots, dtype="int32")
    slots = _end_slots(kind, n_slots, step)
    memory = memory._replace(step=step, pushed=value)
    if kind == "deque":
        memory = _pop(memory, pop[:, 0], pop[:, 1])
        memory = _push(memory, push[:, 0], slots[0], skipped, "top")
        memory = _push(memory, push[:, 1], slots[1], skipped, "bottom")
        ends = (memory.top, memory.bottom)
    else:
        never = ops.zeros_like(pop[:, 0])
        memory = _pop(memory, *((pop[:, 0], never) if kind == "stack" else (never, pop[:, 0])))
        memory = _push(memory, push[:, 0], slots[0], skipped, "top")
        ends = (memory.top if kind == "stack" else memory.bottom,)
    read = ops.concatenate([_read(memory, end, slots) for end in ends], axis=-1)
    return memory, read
