"""The recurrent controller that drives a differentiable memory.

At every step ``t`` the controller reads the embedded token ``x_t`` and the previous read
vector ``r_{t-1}``, updates its recurrent state, and from its output ``o'_t`` (the new
hidden state) emits a push strength ``d_t = σ(·)``, a pop strength ``u_t = σ(·)`` and a
value ``v_t = tanh(·)`` for the memory, which in turn yields the read ``r_t`` fed to the
next step (Grefenstette et al. 2015, §3.2). The output logits are computed from the
hidden states by the enclosing network. With ``memory=None`` the same layer is a plain
recurrent network: no read vector, no memory heads, everything else identical.

The time loop is a single compiled scan (:func:`skptr._backend.scan`) whose body
multiplies the small ``[x_t; r_{t-1}; h_{t-1}]`` vector by one fused kernel.
"""

from __future__ import annotations

import keras
from keras import ops

from .._backend import replica_rows, scan
from .._random import SeedStream
from ._cells import (
    CELLS,
    cell_step,
    fused_kernel,
    initial_gate_bias,
    keep_where_idle,
    n_recurrent,
    truncate_gradients,
)
from ._discrete import discrete_memory_step, initial_discrete_memory
from ._memories import (
    initial_memory,
    memory_ends,
    memory_operations,
    memory_step,
    push_biases,
)

__all__ = ["MemoryController"]

#: Sequence length (steps) from which a JAX training call runs its steps twice, the
#: first time for the memory's final values (see ``_final_values``):
#: below it the second run costs more than the copies of the memory it saves.
TWO_RUNS_MIN_STEPS = 32


@keras.saving.register_keras_serializable(package="skptr")
class MemoryController(keras.layers.Layer):
    """Recurrent controller with an optional stack, queue or deque memory.

    Parameters
    ----------
    units : int
        Size of the recurrent state.
    memory : {"stack", "queue", "deque"} or None, default="stack"
        The memory the controller drives; ``None`` gives a plain recurrent network.
    cell : {"lstm", "gru", "rnn"}, default="lstm"
        The recurrent cell.
    memory_width : int, default=32
        Width of the vectors pushed to the memory.
    pop_bias : float, default=-1.0
        Initial bias of the pop strength (before the sigmoid).
    push_bias : float or sequence of float, default=0.0
        Initial bias of the push strength (before the sigmoid): one value for every
        end, or one per end (top first for the deque).
    state_bptt_steps : int or None, default=None
        How many steps back gradients flow through the controller's own recurrent
        state (``h``, and ``c`` for the LSTM); ``None``: all of them. Gradients through
        the memory and the read vector are never truncated.
    gate_noise : float, default=0.0
        Standard deviation of the Gaussian noise added, in training only, to the push
        and pop logits, times the non-trainable weight ``gate_noise_scale`` (1 at
        first; a training schedule sets it to 0 to switch the noise off).
    reset_cell_state : bool, default=False
        LSTM only: start every step from a zero cell state, so that the output ``h`` of
        the previous step is the controller's only recurrent state.
    seed : int, default=0
        Seed of the initial weights and of the gate noise.
    **kwargs
        Passed to :class:`keras.layers.Layer`.

    Notes
    -----
    ``call(inputs, mask=None, training=None)`` takes embedded tokens of shape (batch,
    steps, features) and returns the hidden states, shape (batch, steps, units).
    ``mask`` (batch, steps), if given, marks the steps that count (batched decoding
    left-pads its sources). With ``training`` true, ``gate_noise`` is added to the push
    and pop logits.
    ``call(..., return_traces=True)`` also returns a dict with the per-step push and pop
    strengths, the memory strengths and the read vectors.
    """

    def __init__(
        self,
        units,
        memory="stack",
        cell="lstm",
        memory_width=32,
        pop_bias=-1.0,
        push_bias=0.0,
        state_bptt_steps=None,
        gate_noise=0.0,
        reset_cell_state=False,
        seed=0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if cell not in CELLS:
            raise ValueError(f"cell must be one of {sorted(CELLS)}, got {cell!r}.")
        if memory is not None:
            memory_ends(memory)  # validates the name
        self.units = int(units)
        self.memory = memory
        self.cell = cell
        self.memory_width = int(memory_width)
        self.pop_bias = float(pop_bias)
        self.state_bptt_steps = None if state_bptt_steps is None else int(state_bptt_steps)
        self.gate_noise = float(gate_noise)
        self.reset_cell_state = bool(reset_cell_state)
        self.seed = int(seed)
        seeds = SeedStream(self.seed)
        self._initializers = {
            name: seeds.glorot_uniform() if name != "recurrent_kernel" else seeds.orthogonal()
            for name in ("input_kernel", "recurrent_kernel", "read_kernel", "head_kernel")
        }
        self.seed_generator = None
        if memory is not None and self.gate_noise > 0:
            self.seed_generator = seeds.seed_generator("gate_noise_seed")
        self.n_ends = 0 if memory is None else memory_ends(memory)
        self.read_size = self.n_ends * self.memory_width
        self.push_bias = push_biases(push_bias, self.n_ends)
        self.supports_masking = True

    # ------------------------------------------------------------------ weights
    def build(self, input_shape):
        n_in = int(input_shape[-1])
        gates = CELLS[self.cell] * self.units
        self.input_kernel = self.add_weight(
            name="input_kernel",
            shape=(n_in, gates),
            initializer=self._initializers["input_kernel"],
        )
        self.recurrent_kernel = self.add_weight(
            name="recurrent_kernel",
            shape=(self.units, gates),
            initializer=self._initializers["recurrent_kernel"],
        )
        self.bias = self.add_weight(name="bias", shape=(gates,), initializer=self._gate_bias)
        if self.cell == "gru":
            self.recurrent_bias = self.add_weight(
                name="recurrent_bias", shape=(gates,), initializer="zeros"
            )
        if self.memory is not None:
            self.read_kernel = self.add_weight(
                name="read_kernel",
                shape=(self.read_size, gates),
                initializer=self._initializers["read_kernel"],
            )
            k = self.n_ends
            self.head_kernel = self.add_weight(
                name="head_kernel",
                shape=(self.units, 2 * k + self.read_size),
                initializer=self._initializers["head_kernel"],
            )
            self.head_bias = self.add_weight(
                name="head_bias", shape=(2 * k + self.read_size,), initializer=self._head_bias
            )
            if self.seed_generator is not None:
                self.gate_noise_scale = self.add_weight(
                    name="gate_noise_scale", shape=(), initializer="ones", trainable=False
                )

    def _gate_bias(self, shape, dtype=None):
        return initial_gate_bias(self.cell, self.units, dtype)

    def _head_bias(self, shape, dtype=None):
        push = ops.convert_to_tensor(self.push_bias, dtype=dtype)
        pop = ops.full((self.n_ends,), self.pop_bias, dtype=dtype)
        return ops.concatenate([push, pop, ops.zeros((self.read_size,), dtype=dtype)])

    def compute_output_shape(self, input_shape):
        return (*tuple(input_shape[:-1]), self.units)

    # -------------------------------------------------------------- recurrence
    def step_weights(self):
        """The weights used by :meth:`step`, read once outside the time loop, in the
        layer's compute dtype.

        Returns
        -------
        dict of tensors
            ``kernel`` (applied to ``[x_t; r_{t-1}; h_{t-1}]``), ``bias`` and, with a
            memory, ``head_kernel`` and ``head_bias``. For the GRU the kernel's columns
            are: update and reset gates, candidate input part, candidate recurrent part.
        """
        input_kernels = [self.input_kernel]
        if self.memory is not None:
            input_kernels.append(self.read_kernel)
        kernel, bias = fused_kernel(
            self.cell,
            self.units,
            input_kernels,
            self.recurrent_kernel,
            self.bias,
            getattr(self, "recurrent_bias", None),
        )
        weights = {"kernel": kernel, "bias": bias}
        if self.memory is not None:
            weights["head_kernel"] = ops.convert_to_tensor(self.head_kernel)
            weights["head_bias"] = ops.convert_to_tensor(self.head_bias)
        # In the compute dtype also when called outside the layer's own call (decoders),
        # where Keras does not cast the variables of a mixed-precision policy.
        return {key: ops.cast(value, self.compute_dtype) for key, value in weights.items()}

    @property
    def n_recurrent(self):
        """Number of recurrent state tensors: 2 (``h``, ``c``) for the LSTM, else 1."""
        return n_recurrent(self.cell)

    def get_initial_state(self, batch_size, n_steps, discrete=False):
        """Zero recurrent state and an empty memory sized for ``n_steps`` steps.

        Parameters
        ----------
        batch_size : int or scalar int tensor
        n_steps : int or scalar int tensor
            Number of steps the state will be run for.
        discrete : bool, default=False
            Whether the memory is the discrete one of :mod:`~skptr.memory._discrete`
            (rounded strengths, linear time) instead of the continuous buffers.

        Returns
        -------
        tuple of tensors
            ``(h, c)`` for the LSTM, ``(h,)`` otherwise, followed when there is a
            memory by the memory's tensors (values and strengths, or the discrete
            memory's tuple) and the last read vector.
        """
        dtype = self.compute_dtype
        h = ops.zeros((batch_size, self.units), dtype=dtype)
        state = (h, ops.zeros_like(h)) if self.cell == "lstm" else (h,)
        if self.memory is not None:
            empty = initial_discrete_memory if discrete else initial_memory
            # The memory is float32 under a mixed-precision policy too: its strengths
            # are sums over many steps.
            memory = empty(self.memory, batch_size, n_steps, self.memory_width, "float32")
            read = ops.zeros((batch_size, self.read_size), dtype=dtype)
            state = (*state, *memory, read)
        return state

    def step(
        self,
        state,
        inputs,
        step,
        weights,
        active=None,
        noise=None,
        snap=False,
        discrete=False,
        final_values=None,
    ):
        """Advance the controller and its memory by one step.

        Parameters
        ----------
        state : tuple of tensors
            As returned by :meth:`get_initial_state` or a previous call.
        inputs : tensor of shape (batch, features)
            The step's input ``x_t`` (an embedded token).
        step : scalar int tensor
            Index of the step, which selects the memory slot written.
        weights : dict of tensors
            As returned by :meth:`step_weights`.
        active : bool tensor of shape (batch,), optional
            Samples for which the step counts; the others keep their state.
        noise : tensor of shape (batch, 2 * ends), optional
            Added to the push and pop logits (push columns first).
        snap : bool, default=False
            Whether to round the push and pop strengths to 0 or 1.
        discrete : bool, default=False
            Whether ``state`` holds a discrete memory, which implies ``snap``.
        final_values : tensor, optional
            The memory's values buffer after the last step of an earlier run of the
            same steps, for reads whose gradient keeps no copy of the buffer per step
            (see :func:`~skptr.memory._memories.stack_step`).

        Returns
        -------
        state : tuple of tensors
            The new state.
        trace : tuple of tensors
            Push strengths (batch, ends), pop strengths (batch, ends), memory strengths
            (batch, slots) and read vector (batch, ends * width); empty without a
            memory or with a discrete one.
        """
        h_prev = state[0]
        parts = [inputs, state[-1], h_prev] if self.memory is not None else [inputs, h_prev]
        z = ops.matmul(ops.concatenate(parts, axis=-1), weights["kernel"]) + weights["bias"]
        new_state = cell_step(self.cell, self.units, z, state, self.reset_cell_state)
        h = new_state[0]

        trace = ()
        if self.memory is not None:
            heads = ops.matmul(h, weights["head_kernel"]) + weights["head_bias"]
            push, pop, value = memory_operations(
                heads, self.n_ends, noise=noise, rounded=snap or discrete, active=active
            )
            memory = state[self.n_recurrent : -1]
            if discrete:
                memory, read = discrete_memory_step(self.memory, memory, push, pop, value, step)
            else:
                values, strengths, read = memory_step(
                    self.memory, *memory, push, pop, value, step, final_values
                )
                memory = (values, strengths)
                trace = (push, pop, strengths, read)
            new_state = (*new_state, *memory, ops.cast(read, self.compute_dtype))

        if active is not None:  # an idle step keeps its state (its memory: zero gates)
            kept = [*range(self.n_recurrent)] + ([] if self.memory is None else [len(state) - 1])
            new_state = keep_where_idle(new_state, state, active, kept)
        return new_state, trace

    def run(
        self,
        state,
        inputs,
        weights,
        mask=None,
        first_step=0,
        return_traces=False,
        noise=None,
        snap=False,
        discrete=False,
        final_values=None,
    ):
        """Run :meth:`step` over a whole sequence in one compiled loop.

        Parameters
        ----------
        state : tuple of tensors
            Initial state, from :meth:`get_initial_state` sized for at least
            ``first_step + steps`` steps.
        inputs : tensor of shape (batch, steps, features)
            Embedded tokens.
        weights : dict of tensors
            As returned by :meth:`step_weights`.
        mask, noise : tensors of shape (batch, steps) and (batch, steps, 2 * ends)
            Per step, as ``active`` and ``noise`` in :meth:`step`.
        first_step : int or scalar int tensor, default=0
            Index of the first step (memory slot of its push).
        return_traces : bool, default=False
            Whether to collect the per-step memory traces (not with ``discrete``).
        snap, discrete, final_values
            As in :meth:`step`.

        Returns
        -------
        state : tuple of tensors
            The state after the last step.
        outputs : list of tensors
            The hidden states (batch, steps, units), followed with ``return_traces`` by
            the push and pop strengths, memory strengths and read vectors, each with
            the step as second axis.
        """
        time_major = ops.transpose(inputs, (1, 0, 2))
        n_steps = ops.shape(time_major)[0]
        per_step = {"inputs": time_major, "step": ops.arange(n_steps, dtype="int32") + first_step}
        if mask is not None:
            per_step["active"] = ops.transpose(ops.cast(mask, "bool"), (1, 0))
        if noise is not None:
            per_step["noise"] = ops.transpose(noise, (1, 0, 2))

        def body(state, current):
            state = truncate_gradients(
                state, self.n_recurrent, self.state_bptt_steps, current["step"]
            )
            new_state, trace = self.step(
                state,
                current["inputs"],
                current["step"],
                weights,
                active=current.get("active"),
                noise=current.get("noise"),
                snap=snap,
                discrete=discrete,
                final_values=final_values,
            )
            produced = (new_state[0], *trace) if return_traces else (new_state[0],)
            return new_state, produced

        state, outputs = scan(body, tuple(state), per_step)
        return state, [ops.transpose(value, (1, 0, 2)) for value in outputs]

    def call(self, inputs, mask=None, training=None, return_traces=False, snap=False):
        batch_size, n_steps = ops.shape(inputs)[0], ops.shape(inputs)[1]
        state = self.get_initial_state(batch_size, n_steps)
        noise = None
        if training and self.seed_generator is not None:
            noise = replica_rows(
                lambda shape: keras.random.normal(
                    shape, dtype=self.compute_dtype, seed=self.seed_generator
                ),
                (batch_size, n_steps, 2 * self.n_ends),
            )
            noise = noise * (self.gate_noise * ops.cast(self.gate_noise_scale, noise.dtype))
        weights = self.step_weights()
        options = {"mask": mask, "noise": noise, "snap": snap}
        final_values = None
        if training and self.memory is not None:
            final_values = _final_values(self, state, inputs, weights, options)
        _, outputs = self.run(
            state,
            inputs,
            weights,
            return_traces=return_traces,
            final_values=final_values,
            **options,
        )
        if not return_traces:
            return outputs[0]
        names = ("push", "pop", "strengths", "read")
        return outputs[0], dict(zip(names, outputs[1:], strict=False))

    def compute_mask(self, inputs, mask=None):
        return mask

    def get_config(self):
        config = super().get_config()
        config.update(
            units=self.units,
            memory=self.memory,
            cell=self.cell,
            memory_width=self.memory_width,
            pop_bias=self.pop_bias,
            push_bias=list(self.push_bias),
            state_bptt_steps=self.state_bptt_steps,
            gate_noise=self.gate_noise,
            reset_cell_state=self.reset_cell_state,
            seed=self.seed,
        )
        return config


def _final_values(controller, state, inputs, weights, options):
    """The memory's values after a run of ``controller`` without gradients, or ``None``.

    On JAX a training call of at least :data:`TWO_RUNS_MIN_STEPS` steps runs them
    twice: once for the final values buffer, then again with reads whose gradient
    needs only that buffer (see :func:`~skptr.memory._memories.stack_step`). The
    gradient is the same; differentiating the reads directly keeps a copy of the
    buffer for every step, quadratic in the length. TensorFlow's compiled loop
    gains nothing from it, and shorter sequences lose more to the second run than
    they save.
    """
    n_steps = inputs.shape[1]
    if keras.backend.backend() != "jax" or n_steps is None or n_steps < TWO_RUNS_MIN_STEPS:
        return None
    state = tuple(ops.stop_gradient(x) for x in state)
    weights = {name: ops.stop_gradient(w) for name, w in weights.items()}
    final, _ = controller.run(state, ops.stop_gradient(inputs), weights, **options)
    return final[controller.n_recurrent]
