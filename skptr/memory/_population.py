"""Initialisations of the transducer trained side by side, as one population.

A :class:`PopulationNetwork` holds ``P`` transducer networks of one architecture in
one: every weight gains a leading population axis, every member reads the same batch,
and one compiled training step updates all of them. The members stay independent:
the loss is the sum of their own losses, so each one's gradients are those it would
get alone; Adam's moments are kept per weight, hence per member; gradients are clipped
per member; and each member keeps its own initial weights, truncation of
backpropagation through its state, cell-state reset, gate-noise draws and noise start.
A member trained in a population therefore ends where the same network, trained
alone on the same batches, ends (up to float rounding).

Members that stall are dropped after the stall check: the others go on as a smaller
population (:func:`~skptr.memory._restarts.train_population`).

Measured on one H200 GPU (JAX), a population of 8 took longer than 8 runs one after
another: compiling its step costs more than the runs it saves at the sizes measured.
On a 2-core CPU, where a step's time grows with its work, it was faster than runs one
after another on TensorFlow and slower on JAX, and faster on one grammar task (SVO to
SOV) and slower on another (gender conjugation). ``population=False`` is therefore the default (see
:class:`~skptr.memory.NeuralStackTransducer`).
"""

from __future__ import annotations

import keras
import numpy as np
from keras import ops

from .._backend import DenseGradientAdam
from ._controller import MemoryController
from ._network import greedy_decode

__all__ = [
    "MemberLosses",
    "PopulationAdam",
    "PopulationController",
    "PopulationCrossentropy",
    "PopulationNetwork",
]


def _member_rows(values, n_rows):
    """A (population,) tensor repeated for each member's rows: shape (population * rows, 1)."""
    population = ops.shape(values)[0]
    return ops.reshape(ops.broadcast_to(values[:, None], (population, n_rows)), (-1, 1))


class PopulationController(MemoryController):
    """A :class:`~skptr.memory._controller.MemoryController` of ``population`` members.

    Its weights have a leading population axis, and its batch holds the members' rows
    one member after the other (member-major). Its weights start at zero:
    :class:`PopulationNetwork` fills them in from its members.

    Parameters
    ----------
    units : int
        Size of each member's recurrent state.
    population : int
        Number of members.
    member_bptt_steps : sequence of (int or None)
        Each member's ``state_bptt_steps``.
    member_reset_cell_state : sequence of bool
        Each member's ``reset_cell_state``.
    **kwargs
        Passed to :class:`~skptr.memory._controller.MemoryController`.
    """

    def __init__(self, units, population, member_bptt_steps, member_reset_cell_state, **kwargs):
        super().__init__(units, **kwargs)
        self.population = int(population)
        self.member_bptt_steps = tuple(None if s is None else int(s) for s in member_bptt_steps)
        self.member_reset_cell_state = tuple(bool(r) for r in member_reset_cell_state)
        if not len(self.member_bptt_steps) == len(self.member_reset_cell_state) == population:
            raise ValueError("Every member needs its truncation and cell-state reset.")
        self.member_seed_generators = []
        if self.seed_generator is not None:
            self.member_seed_generators = [
                keras.random.SeedGenerator(seed=k, name=f"gate_noise_seed_{k}")
                for k in range(self.population)
            ]

    def add_weight(self, shape=None, initializer=None, **kwargs):
        return super().add_weight(
            shape=(self.population, *tuple(shape or ())), initializer="zeros", **kwargs
        )

    def _affine(self, inputs, kernel, bias):
        grouped = ops.reshape(inputs, (self.population, -1, inputs.shape[-1]))
        outputs = ops.matmul(grouped, kernel) + bias[:, None, :]
        return ops.reshape(outputs, (-1, outputs.shape[-1]))

    def _new_cell_state(self, input_gate, forget_gate, candidate, cell_state):
        resets = self.member_reset_cell_state
        if all(resets) or not any(resets):
            return (
                input_gate * candidate
                if resets[0]
                else forget_gate * cell_state + input_gate * candidate
            )
        reset = _member_rows(
            ops.convert_to_tensor(np.array(resets)), ops.shape(cell_state)[0] // self.population
        )
        kept = ops.where(reset, ops.zeros_like(cell_state), cell_state)
        return forget_gate * kept + input_gate * candidate

    def _truncate(self, state, step):
        steps = self.member_bptt_steps
        if all(s is None for s in steps):
            return state
        cuts = [
            ops.convert_to_tensor(False) if s is None else ops.equal(ops.mod(step, s + 1), 0)
            for s in steps
        ]
        n_recurrent = self.n_recurrent
        rows = ops.shape(state[0])[0] // self.population
        cut = _member_rows(ops.stack(cuts), rows)
        recurrent = tuple(ops.where(cut, ops.stop_gradient(x), x) for x in state[:n_recurrent])
        return recurrent + tuple(state[n_recurrent:])

    def _training_noise(self, batch_size, n_steps):
        rows = batch_size // self.population
        draws = [
            keras.random.normal(
                (rows, n_steps, 2 * self.n_ends), dtype=self.compute_dtype, seed=generator
            )
            for generator in self.member_seed_generators
        ]
        scale = self.gate_noise * ops.cast(self.gate_noise_scale, self.compute_dtype)
        noise = ops.stack(draws) * scale[:, None, None, None]
        return ops.reshape(noise, (batch_size, n_steps, 2 * self.n_ends))

    def get_config(self):
        config = super().get_config()
        config.update(
            population=self.population,
            member_bptt_steps=list(self.member_bptt_steps),
            member_reset_cell_state=list(self.member_reset_cell_state),
        )
        return config


class PopulationNetwork(keras.Model):
    """Several :class:`~skptr.memory._network.TransducerNetwork` of one architecture,
    trained as one.

    Parameters
    ----------
    members : sequence of TransducerNetwork
        Built networks that differ only in their seed, ``state_bptt_steps`` and
        ``reset_cell_state``; the population starts from their weights and noise
        seeds (the networks themselves are not kept).
    **kwargs
        Passed to :class:`keras.Model`.

    Notes
    -----
    ``call(stream)`` takes one batch of streams (batch, steps), which every member
    reads, and returns the logits of every member, shape (population, batch, steps,
    classes); :meth:`decode` decodes one batch of sources by every member. Training
    logs each member's loss as ``member_<k>_loss``.
    :meth:`load_member` puts a member's weights into a network of its own.
    """

    def __init__(self, members, **kwargs):
        super().__init__(**kwargs)
        members = list(members)
        template = members[0]
        self.population = len(members)
        self.n_classes = template.n_output_tokens + 1
        self.n_tokens = template.output_offset + template.n_output_tokens
        self.embedding_dim = template.embedding_dim
        self.hidden_size = template.hidden_size
        self.output_offset = template.output_offset
        controller = template.controller
        self.controller = PopulationController(
            controller.units,
            population=self.population,
            member_bptt_steps=[network.controller.state_bptt_steps for network in members],
            member_reset_cell_state=[network.controller.reset_cell_state for network in members],
            memory=controller.memory,
            cell=controller.cell,
            memory_width=controller.memory_width,
            pop_bias=controller.pop_bias,
            push_bias=controller.push_bias,
            gate_noise=controller.gate_noise,
            name="controller",
        )
        self.member_losses = MemberLosses(self.population)
        self.build()
        self._assign_members(members)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        results = super().compute_metrics(x, y, y_pred, sample_weight)
        self.member_losses.update_state(y, y_pred)
        results.update(self.member_losses.result())
        return results

    def build(self, input_shape=None):
        if self.built:
            return
        p = self.population
        self.embeddings = self.add_weight(
            name="embeddings", shape=(p, self.n_tokens, self.embedding_dim), initializer="zeros"
        )
        self.controller.build((None, None, self.embedding_dim))
        self.readout_kernel = self.add_weight(
            name="readout_kernel", shape=(p, self.hidden_size, self.n_classes), initializer="zeros"
        )
        self.readout_bias = self.add_weight(
            name="readout_bias", shape=(p, self.n_classes), initializer="zeros"
        )
        self.built = True

    def _pairs(self, network):
        """The population's variables, each with the member ``network``'s counterpart."""
        mine = self.controller
        theirs = network.controller
        pairs = [
            (self.embeddings, network.embedding.embeddings),
            *zip(mine.trainable_weights, theirs.trainable_weights, strict=True),
            (self.readout_kernel, network.readout.kernel),
            (self.readout_bias, network.readout.bias),
        ]
        if theirs.seed_generator is not None:
            pairs.append((mine.gate_noise_scale, theirs.gate_noise_scale))
        return pairs

    def _assign_members(self, members):
        columns = zip(*(self._pairs(network) for network in members), strict=True)
        for column in columns:
            variable = column[0][0]
            variable.assign(np.stack([ops.convert_to_numpy(theirs) for _, theirs in column]))
        for generator, network in zip(
            self.controller.member_seed_generators, members, strict=False
        ):
            generator.state.assign(network.controller.seed_generator.state.value)

    def load_member(self, k, network):
        """Put member ``k``'s weights and noise seed state into ``network``.

        Parameters
        ----------
        k : int
        network : TransducerNetwork
            A built network of the member's configuration (one of the networks the
            population was made from).
        """
        for variable, counterpart in self._pairs(network):
            counterpart.assign(ops.convert_to_numpy(variable)[k])
        if self.controller.member_seed_generators:
            generator = self.controller.member_seed_generators[k]
            network.controller.seed_generator.state.assign(generator.state.value)

    def call(self, stream, training=None):
        """Logits of every member, shape (population, batch, steps, classes)."""
        stream = ops.cast(stream, "int32")
        n_steps = ops.shape(stream)[1]
        dtype = self.controller.compute_dtype
        embedded = ops.take(ops.cast(self.embeddings, dtype), stream, axis=1)
        embedded = ops.reshape(embedded, (-1, n_steps, self.embedding_dim))
        hidden = self.controller(embedded, training=training)
        hidden = ops.reshape(hidden, (self.population, -1, n_steps, self.hidden_size))
        kernel = ops.cast(self.readout_kernel, dtype)[:, None]
        bias = ops.cast(self.readout_bias, dtype)[:, None, None, :]
        return ops.cast(ops.matmul(hidden, kernel) + bias, "float32")

    def decode(self, source, n_steps, snap=False, discrete=None):
        """Greedy decoding of one batch of sources by every member.

        Parameters
        ----------
        source, n_steps, snap, discrete
            As in :meth:`~skptr.memory._network.TransducerNetwork.decode`.

        Returns
        -------
        int tensor of shape (population, batch, n_steps)
            Each member's output classes, as its own network decodes them.
        """
        source = ops.cast(source, "int32")
        n_rows = ops.shape(source)[0]
        dtype = self.controller.compute_dtype
        tables = ops.reshape(ops.cast(self.embeddings, dtype), (-1, self.embedding_dim))
        kernel = ops.cast(self.readout_kernel, dtype)
        bias = ops.cast(self.readout_bias, dtype)[:, None, :]
        first_ids = ops.repeat(ops.arange(self.population, dtype="int32") * self.n_tokens, n_rows)

        def embed(ids):
            offsets = ops.reshape(first_ids, (-1,) + (1,) * (len(ids.shape) - 1))
            return ops.take(tables, ids + offsets, axis=0)

        def read_out(hidden):
            grouped = ops.reshape(hidden, (self.population, -1, self.hidden_size))
            return ops.reshape(ops.matmul(grouped, kernel) + bias, (-1, self.n_classes))

        produced = greedy_decode(
            self.controller,
            embed,
            read_out,
            self.output_offset,
            ops.tile(source, (self.population, 1)),
            n_steps,
            snap=snap,
            discrete=discrete,
        )
        return ops.reshape(produced, (self.population, n_rows, -1))


def _member_token_losses(y_true, y_pred):
    """Each member's mean cross-entropy over the batch's target tokens, shape
    (population,)."""
    y_true = ops.cast(y_true, "int32")
    labels = ops.broadcast_to(ops.maximum(y_true, 0)[None], ops.shape(y_pred)[:-1])
    real = ops.cast(y_true >= 0, y_pred.dtype)
    losses = ops.sparse_categorical_crossentropy(labels, y_pred, from_logits=True)
    return ops.sum(losses * real[None], axis=(1, 2)) / ops.maximum(ops.sum(real), 1.0)


class PopulationCrossentropy(keras.losses.Loss):
    """The sum over a population's members of each one's mean token cross-entropy
    (:class:`~skptr.memory._network.TokenCrossentropy`)."""

    def __init__(self, name="population_crossentropy", **kwargs):
        kwargs.setdefault("reduction", "sum")
        super().__init__(name=name, **kwargs)

    def call(self, y_true, y_pred):
        return _member_token_losses(y_true, y_pred)


class MemberLosses(keras.metrics.Metric):
    """The training loss of each member of a population, averaged as Keras averages a
    network's ``loss`` (over batches, weighted by their rows), logged as
    ``member_<k>_loss``.

    Parameters
    ----------
    population : int
        Number of members.
    """

    def __init__(self, population, name="member_losses", **kwargs):
        super().__init__(name=name, **kwargs)
        self.population = int(population)
        self.totals = self.add_variable(
            shape=(self.population,), initializer="zeros", name="totals"
        )
        self.rows = self.add_variable(shape=(), initializer="zeros", name="rows")

    def update_state(self, y_true, y_pred, sample_weight=None):
        rows = ops.cast(ops.shape(y_true)[0], "float32")
        self.totals.assign(self.totals + _member_token_losses(y_true, y_pred) * rows)
        self.rows.assign(self.rows + rows)

    def result(self):
        means = self.totals / ops.maximum(self.rows, 1.0)
        return {f"member_{k}_loss": means[k] for k in range(self.population)}


class PopulationAdam(DenseGradientAdam):
    """Adam whose ``clipnorm`` clips each member's part of a gradient on its own, as
    the member's own optimiser would."""

    def _clip_gradients(self, grads):
        if not self.clipnorm:
            return super()._clip_gradients(grads)
        clipped = []
        for g in grads:
            if g is None:
                clipped.append(g)
                continue
            axes = tuple(range(1, len(g.shape)))
            squares = ops.sum(ops.square(g), axis=axes, keepdims=True) if axes else ops.square(g)
            norm = ops.sqrt(squares)
            clipped.append(g * self.clipnorm / ops.maximum(norm, self.clipnorm))
        return clipped
