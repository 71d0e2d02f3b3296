"""Plain Keras sequence-to-sequence baselines that the pointer network is measured against.

The reference is the cheapest model that could order its input: a bidirectional-LSTM
encoder, an LSTM decoder started from the encoder's final states, and a softmax over a
*fixed* number of input positions (plus an end class when outputs may stop early). With
``attention=True`` the decoder output is combined with a dot-product ("general",
Luong et al. 2015) context over the encoder outputs before the softmax; this is the
"attention seq2seq" of the seed comparison. Neither model masks positions it already
chose, so their outputs need not be permutations.

Both are built with stock Keras layers only. Training is teacher-forced: the decoder
reads, at each step, the input element chosen at the previous step (a zero vector and
a start flag at the first step). Greedy decoding loops over output steps with
``keras.ops.fori_loop`` inside a model, so ``predict`` compiles it, as skptr's
decoders are.
"""

from __future__ import annotations

import math

import keras
from keras import layers, ops

from skptr.pointer._layers import recurrent_directions

__all__ = [
    "ReferenceGreedyDecoder",
    "Seq2SeqReference",
    "build_reference",
    "multiply_adds_per_sequence",
]


class Seq2SeqReference(keras.Model):
    """Bidirectional-LSTM encoder, LSTM decoder and a softmax over input positions.

    Parameters
    ----------
    hidden_size : int
        Units per encoder direction; the decoder has ``2 * hidden_size`` units, as the
        pointer network's decoder has.
    n_classes : int
        Size of the output softmax: the number of input positions, plus one for an end
        class when outputs are ordered subsets.
    attention : bool, default=False
        Add a dot-product attention over the encoder outputs before the softmax.
    **kwargs
        Passed to :class:`keras.Model`.
    """

    def __init__(self, hidden_size, n_classes, attention=False, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = int(hidden_size)
        self.n_classes = int(n_classes)
        self.use_attention = bool(attention)
        width = 2 * self.hidden_size
        self.encoder = layers.Bidirectional(
            layers.LSTM(self.hidden_size, return_sequences=True, return_state=True),
            name="encoder",
        )
        self.decoder = layers.LSTM(width, return_sequences=True, name="decoder")
        if self.use_attention:
            self.query = layers.Dense(width, use_bias=False, name="query")
            self.combine = layers.Dense(width, activation="tanh", name="combine")
        self.classifier = layers.Dense(self.n_classes, name="classifier")

    def encode(self, values, lengths):
        """Encoder outputs, their mask and the decoder's initial state."""
        mask = ops.arange(ops.shape(values)[1])[None, :] < ops.cast(lengths, "int32")[:, None]
        outputs, forward_h, forward_c, backward_h, backward_c = self.encoder(values, mask=mask)
        state = [
            ops.concatenate([forward_h, backward_h], axis=-1),
            ops.concatenate([forward_c, backward_c], axis=-1),
        ]
        return outputs, mask, state

    @staticmethod
    def step_inputs(values, previous):
        """The element chosen at ``previous`` (-1: none yet) and a start flag."""
        safe = ops.clip(previous, 0, ops.shape(values)[1] - 1)
        if len(previous.shape) == 1:
            gathered = ops.take_along_axis(values, safe[:, None, None], axis=1)[:, 0]
            started = ops.cast(previous[:, None] >= 0, values.dtype)
        else:
            gathered = ops.take_along_axis(values, safe[:, :, None], axis=1)
            started = ops.cast(previous[:, :, None] >= 0, values.dtype)
        return ops.concatenate([gathered * started, 1.0 - started], axis=-1)

    def logits(self, hidden, encodings, mask):
        """Class logits from decoder outputs (n, S, D) or (n, D)."""
        if self.use_attention:
            single = len(hidden.shape) == 2
            queries = hidden[:, None, :] if single else hidden
            scores = ops.einsum("nsd,ntd->nst", self.query(queries), encodings)
            scores = ops.where(mask[:, None, :], scores, -1e9)
            context = ops.einsum("nst,ntd->nsd", ops.softmax(scores, axis=-1), encodings)
            combined = self.combine(ops.concatenate([queries, context], axis=-1))
            hidden = combined[:, 0] if single else combined
        return self.classifier(hidden)

    def call(self, inputs):
        values = ops.cast(inputs["values"], "float32")
        targets = ops.cast(inputs["targets"], "int32")
        encodings, mask, state = self.encode(values, inputs["lengths"])
        start = ops.full((ops.shape(targets)[0], 1), -1, dtype="int32")
        previous = ops.concatenate([start, targets[:, :-1]], axis=1)
        hidden = self.decoder(self.step_inputs(values, previous), initial_state=state)
        return self.logits(hidden, encodings, mask)

    def get_config(self):
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            n_classes=self.n_classes,
            attention=self.use_attention,
        )
        return config


class ReferenceGreedyDecoder(keras.Model):
    """Greedy decoding of a :class:`Seq2SeqReference`, one compiled loop per batch.

    Parameters
    ----------
    network : Seq2SeqReference
        The trained reference (its layers are shared).
    n_steps : int
        Number of output steps.
    **kwargs
        Passed to :class:`keras.Model`.
    """

    def __init__(self, network, n_steps, **kwargs):
        super().__init__(**kwargs)
        self.network = network
        self.n_steps = int(n_steps)

    def call(self, inputs):
        network = self.network
        values = ops.cast(inputs["values"], "float32")
        encodings, mask, state = network.encode(values, inputs["lengths"])
        batch = ops.shape(values)[0]
        positions = ops.arange(self.n_steps, dtype="int32")
        cell = network.decoder.cell

        def step(i, carry):
            previous, orderings, h, c = carry
            output, (h, c) = cell(network.step_inputs(values, previous), [h, c])
            choice = ops.cast(ops.argmax(network.logits(output, encodings, mask), -1), "int32")
            orderings = ops.where(positions[None, :] == i, choice[:, None], orderings)
            return choice, orderings, h, c

        carry = (
            ops.full((batch,), -1, dtype="int32"),
            ops.zeros((batch, self.n_steps), dtype="int32"),
            *state,
        )
        return ops.fori_loop(0, self.n_steps, step, carry)[1]


def build_reference(hidden_size, n_classes, n_features, attention=False, learning_rate=3e-3):
    """Build and compile a reference seq2seq with the pointer network's optimiser.

    Parameters
    ----------
    hidden_size : int
        Units per encoder direction.
    n_classes : int
        Size of the output softmax.
    n_features : int
        Features per input element.
    attention : bool, default=False
        Whether to add dot-product attention.
    learning_rate : float, default=3e-3
        Adam step size (gradients clipped at norm 1, as for the pointer network).

    Returns
    -------
    Seq2SeqReference
        A built, compiled model taking the pointer network's training inputs.
    """
    model = Seq2SeqReference(hidden_size, n_classes, attention=attention)
    model(
        {
            "values": ops.zeros((1, 2, n_features)),
            "lengths": ops.convert_to_tensor([2], dtype="int32"),
            "targets": ops.convert_to_tensor([[0, 1]], dtype="int32"),
        }
    )
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate=learning_rate, clipnorm=1.0),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-1),
    )
    return model


def _size(variable):
    """Number of entries of a Keras variable."""
    return math.prod(variable.shape)


def _recurrent_multiply_adds(layer, n_steps):
    """Multiply-adds of a Keras recurrent layer (or ``Bidirectional`` pair) per sequence."""
    return sum(
        n_steps * (_size(d.cell.kernel) + _size(d.cell.recurrent_kernel))
        for d in recurrent_directions(layer)
    )


def _scorer_multiply_adds(scorer, n_positions, n_steps):
    """Multiply-adds of a pointer scorer (``PointerAttention``) per sequence."""
    if scorer.kind == "additive":
        return (
            n_positions * _size(scorer.key_projection.kernel)
            + n_steps * _size(scorer.query_projection.kernel)
            + n_steps * n_positions * _size(scorer.score_vector.kernel)
        )
    if scorer.kind == "general":
        width = int(scorer.key_projection.kernel.shape[0])
        return n_positions * _size(scorer.key_projection.kernel) + n_steps * n_positions * width
    raise ValueError(f"no count for the {scorer.kind!r} scorer")


def multiply_adds_per_sequence(model, n_positions, n_steps):
    """Multiply-adds of one teacher-forced forward pass, in the matrix products.

    Counts the products of every dense and recurrent kernel with the rows it is applied
    to (and the pointer scorer's products over steps and positions); element-wise
    operations are left out. The backward pass costs about twice the forward one in
    both models, so the ratio of two counts is that of their training steps' work.

    Parameters
    ----------
    model : PointerNetwork or Seq2SeqReference
        A built model; the pointer network with its recurrent encoder, no glimpses.
    n_positions : int
        Input steps of the padded batch.
    n_steps : int
        Output (decoder) steps of the padded batch.

    Returns
    -------
    int
    """
    if isinstance(model, Seq2SeqReference):
        if model.use_attention:
            raise ValueError("no count for the reference with attention")
        return (
            _recurrent_multiply_adds(model.encoder, n_positions)
            + _recurrent_multiply_adds(model.decoder, n_steps)
            + n_steps * _size(model.classifier.kernel)
        )
    if model.encoder_kind != "recurrent" or model.glimpses:
        raise ValueError("counted for the recurrent encoder without glimpses only")
    encoder = model.encoder
    return (
        n_positions * _size(encoder.embedding.kernel)
        + sum(_recurrent_multiply_adds(layer, n_positions) for layer in encoder.recurrent)
        + sum(_recurrent_multiply_adds(layer, n_steps) for layer in model.decoder_layers)
        + _scorer_multiply_adds(model.attention, n_positions + 1, n_steps)
    )
