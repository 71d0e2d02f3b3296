"""Keras layers of the pointer network: encoder, pointer attention and the network.

Shapes used throughout: ``n`` samples, ``T`` padded input positions, ``P = T + 1``
pointer positions (the last one is the learned end-of-output element), ``S`` output
steps, ``D`` the width of the encodings and of the decoder state.
"""

from __future__ import annotations

import math

import keras
from keras import layers, ops

from .._random import SeedStream

RECURRENT_LAYERS = {"lstm": layers.LSTM, "gru": layers.GRU, "rnn": layers.SimpleRNN}
STATES_PER_CELL = {"lstm": 2, "gru": 1, "rnn": 1}
NEGATIVE_LOGIT = -1e9


def recurrent_layer(cell, units, seeds, **kwargs):
    """A Keras recurrent layer of the given cell with seeded initial weights.

    Parameters
    ----------
    cell : {"lstm", "gru", "rnn"}
    units : int
    seeds : SeedStream
        Source of the seeds of the kernel and recurrent initializers and of the
        layer's own dropout seed generator.
    **kwargs
        Passed to the layer.
    """
    return RECURRENT_LAYERS[cell](
        units,
        kernel_initializer=seeds.glorot_uniform(),
        recurrent_initializer=seeds.orthogonal(),
        seed=seeds.next(),
        **kwargs,
    )


def recurrent_directions(layer):
    """The recurrent layers of ``layer``: both of a ``Bidirectional`` pair, or itself."""
    if isinstance(layer, layers.Bidirectional):
        return (layer.forward_layer, layer.backward_layer)
    return (layer,)


def dense_layer(units, seeds, **kwargs):
    """A ``keras.layers.Dense`` whose kernel is initialised from ``seeds``."""
    return layers.Dense(units, kernel_initializer=seeds.glorot_uniform(), **kwargs)


def masked_logits(logits, allowed):
    """Give disallowed positions a logit whose softmax probability is exactly zero.

    The logits are float32 also under a mixed-precision policy, so that the pointer
    distributions over many positions keep their precision."""
    logits = ops.cast(logits, "float32")
    return ops.where(allowed, logits, ops.full_like(logits, NEGATIVE_LOGIT))


@keras.saving.register_keras_serializable(package="skptr")
class SequenceEncoder(layers.Layer):
    """Embed each element, then run stacked (bidirectional) recurrent layers.

    Parameters
    ----------
    hidden_size : int
        Units of each recurrent layer (per direction) and width of the embedding.
    cell : {"lstm", "gru", "rnn"}
        Recurrent cell.
    bidirectional : bool
        Read the sequence in both directions; encodings are then ``2 * hidden_size``
        wide.
    num_layers : int
        Number of stacked recurrent layers.
    dropout : float
        Dropout rate on the embedding and between recurrent layers.
    seed : int
        Seed of the initial weights and of the dropout masks.
    """

    def __init__(
        self,
        hidden_size,
        cell="lstm",
        bidirectional=True,
        num_layers=1,
        dropout=0.0,
        seed=0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.cell = cell
        self.bidirectional = bidirectional
        self.num_layers = num_layers
        self.dropout = dropout
        self.seed = int(seed)
        seeds = SeedStream(self.seed)
        self.embedding = dense_layer(hidden_size, seeds, activation="tanh", name="embedding")
        self.dropout_layer = layers.Dropout(dropout, seed=seeds.next())
        self.recurrent = []
        for index in range(num_layers):
            options = {"return_sequences": True, "return_state": True}
            recurrent = recurrent_layer(
                cell, hidden_size, seeds, name=f"{cell}_{index}", **options
            )
            if bidirectional:
                backward = recurrent_layer(
                    cell,
                    hidden_size,
                    seeds,
                    go_backwards=True,
                    name=f"{cell}_{index}_backward",
                    **options,
                )
                recurrent = layers.Bidirectional(
                    recurrent, backward_layer=backward, name=f"bidirectional_{index}"
                )
            self.recurrent.append(recurrent)

    @property
    def output_size(self):
        """Width ``D`` of the encodings and of the final states."""
        return self.hidden_size * (2 if self.bidirectional else 1)

    def call(self, values, mask, training=None):
        """Encode padded sequences.

        Parameters
        ----------
        values : tensor of shape (n, T, F)
        mask : bool tensor of shape (n, T)
        training : bool, optional

        Returns
        -------
        encodings : tensor of shape (n, T, D)
        final_states : list of lists of tensors of shape (n, D)
            For each layer, its final recurrent states (both directions concatenated).
        """
        hidden = self.dropout_layer(self.embedding(values), training=training)
        final_states = []
        n_states = STATES_PER_CELL[self.cell]
        for index, recurrent in enumerate(self.recurrent):
            outputs = recurrent(hidden, mask=mask, training=training)
            hidden, states = outputs[0], list(outputs[1:])
            if self.bidirectional:
                states = [
                    ops.concatenate([forward, backward], axis=-1)
                    for forward, backward in zip(states[:n_states], states[n_states:], strict=True)
                ]
            final_states.append(states)
            if index < self.num_layers - 1:
                hidden = self.dropout_layer(hidden, training=training)
        return hidden, final_states

    def get_config(self):
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            cell=self.cell,
            bidirectional=self.bidirectional,
            num_layers=self.num_layers,
            dropout=self.dropout,
            seed=self.seed,
        )
        return config


@keras.saving.register_keras_serializable(package="skptr")
class SetEncoder(layers.Layer):
    """Embed each element, then run self-attention blocks that know no positions.

    Each block is multi-head self-attention over the valid elements followed by a
    two-layer feed-forward network, each with a residual connection and layer
    normalisation (the encoder of Vaswani et al. 2017, without positional encodings, as
    in the attention model of Kool, van Hoof and Welling 2019). Nothing depends on the
    order of the elements: permuting the input permutes the encodings the same way and
    leaves the decoder's initial state (the mean of the encodings) unchanged.

    Parameters
    ----------
    hidden_size : int
        Width of the embedding, of every block and of the encodings.
    num_layers : int
        Number of blocks, and of decoder layers to give an initial state.
    n_heads : int
        Attention heads per block, each ``max(1, hidden_size // n_heads)`` wide.
    dropout : float
        Dropout rate on the embedding and on each sublayer's output.
    cell : {"lstm", "gru", "rnn"}
        The decoder's cell, which sets the number of initial states per layer.
    seed : int
        Seed of the initial weights and of the dropout masks.
    """

    def __init__(
        self, hidden_size, num_layers=1, n_heads=8, dropout=0.0, cell="lstm", seed=0, **kwargs
    ):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.n_heads = n_heads
        self.dropout = dropout
        self.cell = cell
        self.seed = int(seed)
        seeds = SeedStream(self.seed)
        self.embedding = dense_layer(hidden_size, seeds, name="embedding")
        self.dropout_layer = layers.Dropout(dropout, seed=seeds.next())
        self.blocks = []
        for index in range(num_layers):
            attention = layers.MultiHeadAttention(
                n_heads,
                max(1, hidden_size // n_heads),
                kernel_initializer=seeds.glorot_uniform(),
                name=f"self_attention_{index}",
            )
            expand = dense_layer(
                4 * hidden_size, seeds, activation="relu", name=f"feed_forward_{index}_in"
            )
            contract = dense_layer(hidden_size, seeds, name=f"feed_forward_{index}_out")
            norms = (
                layers.LayerNormalization(name=f"attention_norm_{index}"),
                layers.LayerNormalization(name=f"feed_forward_norm_{index}"),
            )
            self.blocks.append((attention, expand, contract, *norms))

    @property
    def output_size(self):
        """Width ``D`` of the encodings and of the initial decoder states."""
        return self.hidden_size

    def call(self, values, mask, training=None):
        """Encode padded sets.

        Parameters
        ----------
        values : tensor of shape (n, T, F)
        mask : bool tensor of shape (n, T)
        training : bool, optional

        Returns
        -------
        encodings : tensor of shape (n, T, D)
        initial_states : list of lists of tensors of shape (n, D)
            For each decoder layer: the mean of the valid encodings, and for the LSTM a
            zero cell state.
        """
        hidden = self.dropout_layer(self.embedding(values), training=training)
        n_positions = ops.shape(mask)[1]
        # Every query, padding included, attends to the valid elements only.
        attends_to = ops.broadcast_to(
            mask[:, None, :], (ops.shape(mask)[0], n_positions, n_positions)
        )
        for attention, expand, contract, attention_norm, feed_forward_norm in self.blocks:
            attended = attention(hidden, hidden, attention_mask=attends_to, training=training)
            hidden = attention_norm(hidden + self.dropout_layer(attended, training=training))
            changed = contract(expand(hidden))
            hidden = feed_forward_norm(hidden + self.dropout_layer(changed, training=training))
        weights = ops.cast(mask, hidden.dtype)[:, :, None]
        pooled = ops.sum(hidden * weights, axis=1) / ops.maximum(ops.sum(weights, axis=1), 1.0)
        states = [pooled, ops.zeros_like(pooled)] if STATES_PER_CELL[self.cell] == 2 else [pooled]
        return hidden, [list(states) for _ in range(self.num_layers)]

    def get_config(self):
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            num_layers=self.num_layers,
            n_heads=self.n_heads,
            dropout=self.dropout,
            cell=self.cell,
            seed=self.seed,
        )
        return config


ENCODERS = ("recurrent", "attention")


def decoder_depth(num_layers, decoder_layers):
    """Number of recurrent decoder layers: ``decoder_layers``, or ``num_layers`` for None."""
    return num_layers if decoder_layers is None else int(decoder_layers)


@keras.saving.register_keras_serializable(package="skptr")
class PointerAttention(layers.Layer):
    """Unnormalised pointer scores of decoder states over encoded positions.

    Parameters
    ----------
    kind : {"additive", "dot", "general"}
        ``"additive"``: ``vᵀ tanh(W1 e_j + W2 d_i)`` (Bahdanau; Vinyals et al. 2015);
        ``"dot"``: ``d_iᵀ e_j``; ``"general"``: ``d_iᵀ W e_j`` (Luong).
    units : int
        Width of the additive scorer's hidden layer (ignored by the others).
    width : int, optional
        Width ``D`` of keys and queries; required by ``"general"``.
    seed : int
        Seed of the initial weights.
    """

    def __init__(self, kind="additive", units=128, width=None, seed=0, **kwargs):
        super().__init__(**kwargs)
        self.kind = kind
        self.units = units
        self.width = width
        self.seed = int(seed)
        seeds = SeedStream(self.seed)
        if kind == "additive":
            self.key_projection = dense_layer(units, seeds, use_bias=False, name="W1")
            self.query_projection = dense_layer(units, seeds, use_bias=True, name="W2")
            self.score_vector = dense_layer(1, seeds, use_bias=False, name="v")
        elif kind == "general":
            self.key_projection = dense_layer(width, seeds, use_bias=False, name="W")

    def build(self, keys_shape):
        if self.kind == "additive":
            self.key_projection.build(keys_shape)
            self.query_projection.build((None, keys_shape[-1]))
            self.score_vector.build((None, self.units))
        elif self.kind == "general":
            self.key_projection.build(keys_shape)
        self.built = True

    def prepare_keys(self, keys):
        """Project the encodings once, before any decoding step."""
        if self.kind == "dot":
            return keys
        return self.key_projection(keys)

    def score(self, queries, prepared_keys):
        """Scores of shape (n, P) for queries (n, D), or (n, S, P) for (n, S, D)."""
        if self.kind == "additive":
            projected = self.query_projection(queries)
            if len(queries.shape) == 2:
                hidden = ops.tanh(prepared_keys + projected[:, None, :])
            else:
                hidden = ops.tanh(prepared_keys[:, None, :, :] + projected[:, :, None, :])
            return ops.squeeze(self.score_vector(hidden), axis=-1)
        if len(queries.shape) == 2:
            return ops.einsum("nd,npd->np", queries, prepared_keys)
        return ops.einsum("nsd,npd->nsp", queries, prepared_keys)

    def call(self, queries, keys):
        return self.score(queries, self.prepare_keys(keys))

    def get_config(self):
        config = super().get_config()
        config.update(kind=self.kind, units=self.units, width=self.width, seed=self.seed)
        return config


@keras.saving.register_keras_serializable(package="skptr")
class PointerNetwork(keras.Model):
    """Encoder, recurrent pointer decoder and attention, trained by teacher forcing.

    The model's inputs are a dict with ``"values"`` (n, T, F) padded sequences,
    ``"lengths"`` (n,) their lengths and ``"targets"`` (n, S) pointer indices padded
    with -1, where index ``T`` is the end of output. It returns pointer logits of
    shape (n, S, T + 1) in which padding positions, positions already chosen by the
    target prefix and (unless ``allow_end``) the end position are masked out.

    Parameters
    ----------
    hidden_size, cell, bidirectional, num_layers, dropout
        See :class:`SequenceEncoder`.
    decoder_layers : int, optional
        Recurrent layers of the decoder, of the same cell, each started from the final
        state of the matching one of the last ``decoder_layers`` encoder layers; at
        most ``num_layers``, which None gives.
    encoder : {"recurrent", "attention"}, default="recurrent"
        :class:`SequenceEncoder`, or :class:`SetEncoder` with ``num_layers`` blocks
        (``bidirectional`` then plays no part).
    n_heads : int, default=8
        Attention heads of the :class:`SetEncoder`.
    attention : {"additive", "dot", "general"}
        Pointer scorer, see :class:`PointerAttention`.
    glimpses : int
        Glimpses taken before pointing (Bello et al. 2016): each replaces the query
        by the mean of the encodings of the allowed positions, weighted by a softmax
        of a second scorer of the same kind, so that the pointer compares every
        position with a summary of the others. 0 points with the decoder state.
    allow_end : bool
        Whether outputs may stop before all positions are used (ordered subsets).
    seed : int
        Seed of the initial weights and of the dropout masks; the same seed gives the
        same network.
    input_scale : sequence of float, optional
        Each input feature is divided by its entry before encoding, so that features
        of different magnitudes reach the network on one scale; None leaves them as
        they are.
    logit_clip : float, optional
        Bound ``C`` of the pointer logits: a score ``s`` becomes ``C tanh(s / √D)``
        (``"dot"``, ``"general"``) or ``C tanh(s)`` (``"additive"``, already a sum
        of bounded terms), as Bello et al. (2016) and Kool et al. (2019) clip them;
        None leaves the scores as they are.
    """

    def __init__(
        self,
        hidden_size=128,
        cell="lstm",
        bidirectional=True,
        num_layers=1,
        decoder_layers=None,
        attention="additive",
        glimpses=0,
        dropout=0.0,
        allow_end=False,
        encoder="recurrent",
        n_heads=8,
        seed=0,
        input_scale=None,
        logit_clip=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if encoder not in ENCODERS:
            raise ValueError(f"encoder must be one of {ENCODERS}, got {encoder!r}.")
        self.encoder_kind = encoder
        self.n_heads = int(n_heads)
        self.hidden_size = hidden_size
        self.cell = cell
        self.bidirectional = bidirectional
        self.num_layers = num_layers
        self.decoder_depth = decoder_depth(num_layers, decoder_layers)
        self.attention_kind = attention
        self.glimpses = int(glimpses)
        self.dropout = dropout
        self.allow_end = allow_end
        self.seed = int(seed)
        self.input_scale = None if input_scale is None else [float(s) for s in input_scale]
        self.logit_clip = None if logit_clip is None else float(logit_clip)
        seeds = SeedStream(self.seed)
        if encoder == "attention":
            self.encoder = SetEncoder(
                hidden_size,
                num_layers,
                self.n_heads,
                dropout,
                cell,
                seed=seeds.next(),
                name="encoder",
            )
        else:
            self.encoder = SequenceEncoder(
                hidden_size,
                cell,
                bidirectional,
                num_layers,
                dropout,
                seed=seeds.next(),
                name="encoder",
            )
        width = self.encoder.output_size
        self.decoder_layers = [
            recurrent_layer(cell, width, seeds, return_sequences=True, name=f"decoder_{cell}_{i}")
            for i in range(self.decoder_depth)
        ]
        self.attention = PointerAttention(
            attention, units=hidden_size, width=width, seed=seeds.next(), name="attention"
        )
        self.output_dropout = layers.Dropout(dropout, seed=seeds.next())
        self._vector_initializers = (seeds.normal(), seeds.normal())
        # Drawn last, so that a network without glimpses keeps the weights it had
        # before glimpses existed.
        self.glimpse_attention = (
            PointerAttention(
                attention, units=hidden_size, width=width, seed=seeds.next(), name="glimpse"
            )
            if self.glimpses
            else None
        )

    def build_for(self, n_features):
        """Create all weights by running the network once on a dummy batch.

        Parameters
        ----------
        n_features : int
            Number of features per input step.
        """
        self.n_features = int(n_features)
        self(
            {
                "values": ops.zeros((1, 2, self.n_features)),
                "lengths": ops.convert_to_tensor([2], dtype="int32"),
                "targets": ops.convert_to_tensor([[0, 1]], dtype="int32"),
            }
        )
        return self

    def get_build_config(self):
        return {"n_features": getattr(self, "n_features", None)}

    def build_from_config(self, config):
        if config.get("n_features") is not None:
            self.build_for(config["n_features"])

    def build(self, input_shape):
        width = self.encoder.output_size
        start_initializer, end_initializer = self._vector_initializers
        self.start_vector = self.add_weight(
            shape=(width,), initializer=start_initializer, name="start_vector"
        )
        self.end_vector = self.add_weight(
            shape=(width,), initializer=end_initializer, name="end_vector"
        )
        self.attention.build((None, None, width))
        if self.glimpse_attention is not None:
            self.glimpse_attention.build((None, None, width))
        super().build(input_shape)

    @property
    def width(self):
        """Width ``D`` of encodings and decoder states."""
        return self.encoder.output_size

    def encode(self, values, lengths, training=None):
        """Encode the input and append the end element.

        Returns
        -------
        keys : tensor (n, P, D)
            Encodings of the positions followed by the end vector.
        valid : bool tensor (n, P)
            Positions that may ever be chosen.
        states : list of lists of tensors (n, D)
            Initial decoder states, one list per layer.
        """
        n_positions = ops.shape(values)[1]
        mask = ops.arange(n_positions)[None, :] < ops.cast(lengths, "int32")[:, None]
        if self.input_scale is not None:
            values = values / ops.convert_to_tensor(self.input_scale, dtype=values.dtype)
        encodings, states = self.encoder(values, mask, training=training)
        states = states[len(states) - self.decoder_depth :]
        end = ops.broadcast_to(self.end_vector, (ops.shape(encodings)[0], 1, self.width))
        keys = ops.concatenate([encodings, ops.cast(end, encodings.dtype)], axis=1)
        end_allowed = ops.full((ops.shape(mask)[0], 1), self.allow_end)
        valid = ops.concatenate([mask, end_allowed], axis=1)
        return keys, valid, states

    def decoder_inputs(self, keys, previous):
        """Decoder inputs: the encoding at ``previous`` (n, ...) or the start vector (-1)."""
        safe = ops.maximum(previous, 0)
        if len(previous.shape) == 1:
            gathered = ops.take_along_axis(keys, safe[:, None, None], axis=1)[:, 0]
            started = previous[:, None] >= 0
        else:
            gathered = ops.take_along_axis(keys, safe[:, :, None], axis=1)
            started = previous[:, :, None] >= 0
        return ops.where(started, gathered, ops.cast(self.start_vector, keys.dtype))

    def prepare_keys(self, keys):
        """Project the keys (n, P, D) once for the pointer and the glimpse scorers."""
        glimpse_keys = (
            None if self.glimpse_attention is None else self.glimpse_attention.prepare_keys(keys)
        )
        return self.attention.prepare_keys(keys), glimpse_keys

    def pointer_logits(self, queries, keys, prepared, allowed):
        """Masked pointer logits of decoder outputs, after the glimpses.

        Parameters
        ----------
        queries : tensor of shape (n, D) or (n, S, D)
            Decoder outputs.
        keys : tensor of shape (n, P, D)
            Encodings followed by the end vector.
        prepared : tuple
            :meth:`prepare_keys` of ``keys``.
        allowed : bool tensor of shape (n, P) or (n, S, P)
            Positions that may be chosen at each step; the glimpses look at them only.

        Returns
        -------
        tensor of shape (n, P) or (n, S, P)
        """
        pointer_keys, glimpse_keys = prepared
        for _ in range(self.glimpses):
            scores = masked_logits(self.glimpse_attention.score(queries, glimpse_keys), allowed)
            queries = ops.einsum(
                "n...p,npd->n...d", ops.cast(ops.softmax(scores, axis=-1), keys.dtype), keys
            )
        scores = self.attention.score(queries, pointer_keys)
        if self.logit_clip is not None:
            if self.attention_kind != "additive":
                scores = scores / math.sqrt(self.width)
            scores = self.logit_clip * ops.tanh(scores)
        return masked_logits(scores, allowed)

    def decoder_step(self, inputs, states, training=None):
        """Run one decoder step for all layers; return (output, new states)."""
        hidden = inputs
        new_states = []
        for layer, layer_states in zip(self.decoder_layers, states, strict=True):
            hidden, cell_states = layer.cell(hidden, layer_states, training=training)
            if not isinstance(cell_states, list | tuple):
                cell_states = [cell_states]
            new_states.append(list(cell_states))
        return hidden, new_states

    def call(self, inputs, training=None):
        encoded = self.encode(inputs["values"], inputs["lengths"], training=training)
        return self.teacher_forced_logits(encoded, inputs["targets"], training=training)

    def teacher_forced_logits(self, encoded, targets, training=None):
        """Masked pointer logits (n, S, P) of every step of the ``targets`` (n, S),
        given the :meth:`encode` outputs of their inputs."""
        keys, valid, states = encoded
        targets = ops.cast(targets, "int32")
        n_pointers = ops.shape(keys)[1]
        previous = ops.concatenate(
            [ops.full((ops.shape(targets)[0], 1), -1, dtype="int32"), targets[:, :-1]], axis=1
        )
        hidden = self.decoder_inputs(keys, previous)
        for layer, layer_states in zip(self.decoder_layers, states, strict=True):
            hidden = layer(hidden, initial_state=layer_states, training=training)
        hidden = self.output_dropout(hidden, training=training)
        chosen = ops.one_hot(ops.maximum(targets, 0), n_pointers) * ops.cast(
            targets[:, :, None] >= 0, "float32"
        )
        chosen_before = ops.cumsum(chosen, axis=1) - chosen
        allowed = ops.logical_and(valid[:, None, :], chosen_before < 0.5)
        return self.pointer_logits(hidden, keys, self.prepare_keys(keys), allowed)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "hidden_size": self.hidden_size,
                "cell": self.cell,
                "bidirectional": self.bidirectional,
                "num_layers": self.num_layers,
                # None where it is num_layers, as in networks saved before it existed.
                "decoder_layers": (
                    None if self.decoder_depth == self.num_layers else self.decoder_depth
                ),
                "attention": self.attention_kind,
                "glimpses": self.glimpses,
                "dropout": self.dropout,
                "allow_end": self.allow_end,
                "encoder": self.encoder_kind,
                "n_heads": self.n_heads,
                "seed": self.seed,
                "input_scale": self.input_scale,
                "logit_clip": self.logit_clip,
            }
        )
        return config


@keras.saving.register_keras_serializable(package="skptr")
def masked_pointer_crossentropy(targets, logits):
    """Mean negative log-likelihood of the target pointers of each sample.

    Steps whose target is -1 (padding) are ignored.
    """
    targets = ops.cast(targets, "int32")
    real = ops.cast(targets >= 0, logits.dtype)
    log_probs = ops.log_softmax(logits, axis=-1)
    picked = ops.take_along_axis(log_probs, ops.maximum(targets, 0)[:, :, None], axis=-1)
    step_losses = -ops.squeeze(picked, axis=-1) * real
    return ops.sum(step_losses, axis=1) / ops.maximum(ops.sum(real, axis=1), 1.0)
