"""The Keras network behind :class:`~skptr.memory.NeuralStackTransducer`.

The network reads one *stream* of token ids per sample: the source tokens, a separator,
then the target tokens (teacher forcing). Its output at the separator and at every
target token is the distribution of the next target token, the end token included.

Token ids in the stream:

- 0: padding,
- 1: the separator (also fed back after an end token while decoding),
- 2: an unknown input token,
- ``3 .. 3 + n_input_tokens - 1``: the input vocabulary,
- ``3 + n_input_tokens ..``: the output vocabulary, fed back while producing the target.

Output classes: 0 is the end token, ``1 + j`` the output token ``j``.
"""

from __future__ import annotations

import keras
from keras import layers, ops

from .._backend import NetworkWrapper, replica_sum
from .._random import SeedStream
from ._controller import MemoryController

__all__ = [
    "FIRST_INPUT_ID",
    "PAD",
    "SEPARATOR",
    "UNKNOWN",
    "TokenCrossentropy",
    "TransducerNetwork",
]

PAD = 0
SEPARATOR = 1
UNKNOWN = 2
FIRST_INPUT_ID = 3


@keras.saving.register_keras_serializable(package="skptr")
class TransducerNetwork(keras.Model):
    """Embedding, memory controller and read-out for sequence transduction.

    Parameters
    ----------
    n_input_tokens : int
        Size of the input vocabulary.
    n_output_tokens : int
        Size of the output vocabulary (the end token excluded).
    memory : {"stack", "queue", "deque"} or None
        The controller's memory.
    cell : {"lstm", "gru", "rnn"}
        The controller's recurrent cell.
    hidden_size : int
        Size of the controller's recurrent state.
    embedding_dim : int
        Size of the token embeddings.
    memory_width : int
        Width of the memory vectors.
    pop_bias : float
        Initial bias of the pop strengths.
    push_bias : float or sequence of float
        Initial bias of the push strengths, for every end or one per end.
    state_bptt_steps : int or None
        Truncation of the gradients through the controller's recurrent state (see
        :class:`~skptr.memory._controller.MemoryController`).
    gate_noise : float, default=0.0
        Training noise on the push and pop logits (see
        :class:`~skptr.memory._controller.MemoryController`).
    reset_cell_state : bool, default=False
        Whether the LSTM controller starts every step from a zero cell state (see
        :class:`~skptr.memory._controller.MemoryController`).
    seed : int, default=0
        Seed of the initial weights and of the gate noise; the same seed gives the
        same network.
    **kwargs
        Passed to :class:`keras.Model`.
    """

    def __init__(
        self,
        n_input_tokens,
        n_output_tokens,
        memory="stack",
        cell="lstm",
        hidden_size=64,
        embedding_dim=16,
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
        self.n_input_tokens = int(n_input_tokens)
        self.n_output_tokens = int(n_output_tokens)
        self.memory = memory
        self.cell = cell
        self.hidden_size = int(hidden_size)
        self.embedding_dim = int(embedding_dim)
        self.memory_width = int(memory_width)
        self.pop_bias = float(pop_bias)
        self.state_bptt_steps = state_bptt_steps
        self.gate_noise = float(gate_noise)
        self.reset_cell_state = bool(reset_cell_state)
        self.seed = int(seed)
        seeds = SeedStream(self.seed)
        self.output_offset = FIRST_INPUT_ID + self.n_input_tokens
        self.embedding = layers.Embedding(
            self.output_offset + self.n_output_tokens,
            self.embedding_dim,
            embeddings_initializer=seeds.uniform(),
            name="embedding",
        )
        self.controller = MemoryController(
            self.hidden_size,
            memory=memory,
            cell=cell,
            memory_width=memory_width,
            pop_bias=pop_bias,
            push_bias=push_bias,
            state_bptt_steps=state_bptt_steps,
            gate_noise=gate_noise,
            reset_cell_state=reset_cell_state,
            seed=seeds.next(),
            name="controller",
        )
        self.push_bias = self.controller.push_bias
        self.readout = layers.Dense(
            self.n_output_tokens + 1, kernel_initializer=seeds.glorot_uniform(), name="readout"
        )

    def build(self, input_shape=None):
        self.embedding.build((None, None))
        self.controller.build((None, None, self.embedding_dim))
        self.readout.build((None, None, self.hidden_size))
        self.built = True

    def call(self, stream, training=None):
        """Logits of the next target token at every step of the stream.

        Parameters
        ----------
        stream : int tensor of shape (batch, steps)
        training : bool, optional
            Whether the call is a training step (which adds the gate noise).

        Returns
        -------
        tensor of shape (batch, steps, n_output_tokens + 1)
        """
        hidden = self.controller(self.embedding(stream), training=training)
        return ops.cast(self.readout(hidden), "float32")

    def traces(self, stream, snap=False):
        """Hidden states and memory traces of the controller along a stream.

        Parameters
        ----------
        stream : int tensor of shape (batch, steps)
            Left-padded streams (padding steps leave the state unchanged).
        snap : bool, default=False
            Whether the push and pop strengths are rounded to 0 or 1, as in
            :meth:`decode`.

        Returns
        -------
        dict of tensors
            ``logits`` and, with a memory, ``push``, ``pop``, ``strengths`` and ``read``.
        """
        hidden, traces = self.controller(
            self.embedding(stream),
            mask=ops.not_equal(stream, PAD),
            return_traces=True,
            snap=snap,
        )
        return {"logits": self.readout(hidden), **traces}

    def decode(self, source, n_steps, snap=False, discrete=None):
        """Greedy decoding of a batch of left-padded sources.

        Parameters
        ----------
        source : int tensor of shape (batch, source_steps)
            Stream ids of the source tokens, padded with 0 on the left so that every
            sample reaches the separator at the same step.
        n_steps : int or scalar int tensor
            Maximum number of output tokens (end token included) to produce.
        snap : bool, default=False
            Whether to round the push and pop strengths to 0 or 1 at every step, so
            that the memory holds whole items only.
        discrete : bool, optional
            With ``snap``, whether the memory is the discrete one of
            :mod:`~skptr.memory._discrete`, whose steps cost the same at any length, or
            the continuous one, whose steps touch every slot (the same results). The
            discrete memory pays off only where the loop updates its buffers in place,
            which XLA does and a TensorFlow graph does not (it copies them at every
            step). Default: ``snap``.

        Returns
        -------
        int tensor of shape (batch, n_steps)
            Output classes (0 = end token); entries after a sample's end token are 0.
        """
        controller = self.controller
        dtype = controller.compute_dtype
        embeddings = ops.cast(self.embedding.embeddings, dtype)
        readout_kernel = ops.cast(self.readout.kernel, dtype)
        readout_bias = ops.cast(self.readout.bias, dtype)
        discrete = snap if discrete is None else discrete
        discrete = bool(snap and discrete) and controller.memory is not None
        source = ops.cast(source, "int32")
        batch_size, source_steps = ops.shape(source)[0], ops.shape(source)[1]
        weights = controller.step_weights()
        state = controller.get_initial_state(batch_size, source_steps + n_steps, discrete)
        state, _ = controller.run(
            state,
            ops.take(embeddings, source, axis=0),
            weights,
            mask=ops.not_equal(source, PAD),
            snap=snap,
            discrete=discrete,
        )

        def keep_going(i, previous, finished, produced, *state):
            return ops.logical_and(i < n_steps, ops.logical_not(ops.all(finished)))

        def produce(i, previous, finished, produced, *state):
            state, _ = controller.step(
                state,
                ops.take(embeddings, previous, axis=0),
                source_steps + i,
                weights,
                snap=snap,
                discrete=discrete,
            )
            logits = ops.matmul(state[0], readout_kernel) + readout_bias
            token = ops.where(finished, 0, ops.cast(ops.argmax(logits, axis=-1), "int32"))
            produced = ops.slice_update(produced, (0, i), token[:, None])
            finished = ops.logical_or(finished, ops.equal(token, 0))
            previous = ops.where(ops.equal(token, 0), SEPARATOR, token - 1 + self.output_offset)
            return (i + 1, previous, finished, produced, *state)

        loop_vars = (
            ops.convert_to_tensor(0, dtype="int32"),
            ops.full((batch_size,), SEPARATOR, dtype="int32"),
            ops.zeros((batch_size,), dtype="bool"),
            ops.zeros((batch_size, n_steps), dtype="int32"),
            *state,
        )
        return ops.while_loop(keep_going, produce, loop_vars, maximum_iterations=n_steps)[3]

    def get_config(self):
        config = super().get_config()
        config.update(
            n_input_tokens=self.n_input_tokens,
            n_output_tokens=self.n_output_tokens,
            memory=self.memory,
            cell=self.cell,
            hidden_size=self.hidden_size,
            embedding_dim=self.embedding_dim,
            memory_width=self.memory_width,
            pop_bias=self.pop_bias,
            push_bias=list(self.push_bias),
            state_bptt_steps=self.state_bptt_steps,
            gate_noise=self.gate_noise,
            reset_cell_state=self.reset_cell_state,
            seed=self.seed,
        )
        return config


@keras.saving.register_keras_serializable(package="skptr")
class TokenCrossentropy(keras.losses.Loss):
    """Mean cross-entropy of a batch's target tokens, padding (-1) excluded.

    The mean is taken over the tokens of the whole batch, also when a ``tf.distribute``
    strategy splits it over replicas: each replica divides its sum by the batch's
    token count, so that the gradients the replicas add up are those of one device.
    (Keras' masked mean divides by each replica's own count, which weights the tokens
    of short sequences differently.)
    """

    def __init__(self, name="token_crossentropy", **kwargs):
        kwargs.setdefault("reduction", "sum")
        super().__init__(name=name, **kwargs)

    def call(self, y_true, y_pred):
        y_true = ops.cast(y_true, "int32")
        real = ops.cast(y_true >= 0, y_pred.dtype)
        losses = ops.sparse_categorical_crossentropy(
            ops.maximum(y_true, 0), y_pred, from_logits=True
        )
        return losses * real / ops.maximum(replica_sum(ops.sum(real)), 1.0)


@keras.saving.register_keras_serializable(package="skptr")
class GreedyDecoder(NetworkWrapper):
    """Wraps :meth:`TransducerNetwork.decode` so that ``predict`` compiles it.

    Parameters
    ----------
    network : TransducerNetwork
        The trained network (its layers are shared, not copied).
    snap_gates : bool, default=False
        Whether the push and pop strengths are rounded to 0 or 1 while decoding; the
        memory is then the discrete one when the model is compiled with XLA (see
        :meth:`TransducerNetwork.decode`).
    **kwargs
        Passed to :class:`keras.Model`.

    Notes
    -----
    Inputs are a dict with ``"source"`` (left-padded source stream ids) and ``"canvas"``,
    an int array of shape (batch, n_steps) whose second dimension sets the maximum number
    of output tokens (its values are ignored).
    """

    def __init__(self, network, snap_gates=False, **kwargs):
        super().__init__(network, **kwargs)
        self.snap_gates = bool(snap_gates)

    def call(self, inputs):
        return self.network.decode(
            inputs["source"],
            ops.shape(inputs["canvas"])[1],
            snap=self.snap_gates,
            discrete=self.snap_gates and bool(self.jit_compile),
        )

    def get_config(self):
        config = super().get_config()
        config["network"] = keras.saving.serialize_keras_object(self.network)
        config["snap_gates"] = self.snap_gates
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["network"] = keras.saving.deserialize_keras_object(config["network"])
        return cls(**config)
