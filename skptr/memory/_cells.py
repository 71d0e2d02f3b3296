"""The controller's recurrent cells (LSTM, GRU, simple RNN) on one fused kernel.

Each step multiplies ``[x_t; r_{t-1}; h_{t-1}]`` by a single kernel; the functions here
lay out that kernel and its bias from the layer's weights, and turn the product into the
cell's new state.
"""

from __future__ import annotations

from keras import ops

__all__ = [
    "CELLS",
    "cell_step",
    "fused_kernel",
    "initial_gate_bias",
    "keep_where_idle",
    "n_recurrent",
    "truncate_gradients",
]

#: Recurrent cells, with their number of gate blocks.
CELLS = {"lstm": 4, "gru": 3, "rnn": 1}


def n_recurrent(cell):
    """Number of recurrent state tensors: 2 (``h``, ``c``) for the LSTM, else 1."""
    return 2 if cell == "lstm" else 1


def initial_gate_bias(cell, units, dtype=None):
    """The gates' initial bias: zeros, with the LSTM's forget gate open (ones)."""
    if cell != "lstm":
        return ops.zeros((CELLS[cell] * units,), dtype=dtype)
    zeros = ops.zeros((units,), dtype)
    return ops.concatenate([zeros, ops.ones((units,), dtype), zeros, zeros])


def fused_kernel(cell, units, input_kernels, recurrent_kernel, bias, recurrent_bias=None):
    """The kernel applied to ``[inputs; h_{t-1}]`` and its bias.

    Parameters
    ----------
    cell : {"lstm", "gru", "rnn"}
    units : int
    input_kernels : list of tensors
        The kernels of the step's inputs (token, then read vector), stacked in order.
    recurrent_kernel, bias : tensors
    recurrent_bias : tensor, optional
        The GRU's bias of its recurrent part.

    Returns
    -------
    kernel, bias : tensors
        For the GRU the columns are: update and reset gates, candidate input part,
        candidate recurrent part (which the reset gate scales).
    """
    if cell != "gru":
        kernel = ops.concatenate([*input_kernels, recurrent_kernel], axis=-2)
        return kernel, ops.convert_to_tensor(bias)
    h = units
    inputs = ops.concatenate(input_kernels, axis=-2)
    recurrent = ops.convert_to_tensor(recurrent_kernel)
    input_rows = ops.concatenate([inputs, ops.zeros_like(inputs[..., :h])], axis=-1)
    recurrent_rows = ops.concatenate(
        [recurrent[..., : 2 * h], ops.zeros_like(recurrent[..., :h]), recurrent[..., 2 * h :]],
        axis=-1,
    )
    kernel = ops.concatenate([input_rows, recurrent_rows], axis=-2)
    bias = ops.concatenate(
        [
            bias[..., : 2 * h] + recurrent_bias[..., : 2 * h],
            bias[..., 2 * h :],
            recurrent_bias[..., 2 * h :],
        ],
        axis=-1,
    )
    return kernel, bias


def cell_step(cell, units, z, state, reset_cell_state=False):
    """The cell's new recurrent state from the fused product ``z``.

    Parameters
    ----------
    cell : {"lstm", "gru", "rnn"}
    units : int
    z : tensor of shape (batch, columns of the fused kernel)
    state : tuple of tensors
        The previous recurrent state, ``h`` first (then ``c`` for the LSTM).
    reset_cell_state : bool, default=False
        LSTM only: ignore the previous cell state ``c``.

    Returns
    -------
    tuple of tensors
        ``(h, c)`` for the LSTM, ``(h,)`` otherwise.
    """
    if cell == "lstm":
        i = ops.sigmoid(z[:, :units])
        f = ops.sigmoid(z[:, units : 2 * units])
        g = ops.tanh(z[:, 2 * units : 3 * units])
        o = ops.sigmoid(z[:, 3 * units :])
        c = i * g if reset_cell_state else f * state[1] + i * g
        return (o * ops.tanh(c), c)
    if cell == "gru":
        gates = ops.sigmoid(z[:, : 2 * units])
        update, reset = gates[:, :units], gates[:, units:]
        candidate = ops.tanh(z[:, 2 * units : 3 * units] + reset * z[:, 3 * units :])
        return (update * state[0] + (1.0 - update) * candidate,)
    return (ops.tanh(z),)


def truncate_gradients(state, n_recurrent_tensors, bptt_steps, step):
    """Stop gradients through the first ``n_recurrent_tensors`` tensors of ``state``
    (the recurrent state) at every step (``bptt_steps=0``), every ``bptt_steps + 1``
    steps, or never (None)."""
    if bptt_steps is None:
        return state
    recurrent = state[:n_recurrent_tensors]
    stopped = tuple(ops.stop_gradient(x) for x in recurrent)
    if bptt_steps > 0:
        cut = ops.equal(ops.mod(step, bptt_steps + 1), 0)
        stopped = tuple(ops.where(cut, a, b) for a, b in zip(stopped, recurrent, strict=True))
    return stopped + tuple(state[n_recurrent_tensors:])


def keep_where_idle(new_state, state, active, indices):
    """``new_state`` with the tensors at ``indices`` taken from ``state`` for the
    samples that are not ``active`` (bool, shape (batch,))."""
    new_state = list(new_state)
    for i in indices:
        rank = len(new_state[i].shape)
        where_active = ops.reshape(active, (-1,) + (1,) * (rank - 1))
        new_state[i] = ops.where(where_active, new_state[i], state[i])
    return tuple(new_state)
