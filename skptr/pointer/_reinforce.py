"""Learning orderings from a cost alone: REINFORCE with a shared baseline.

Each training instance is decoded several times by sampling the network's own pointer
distributions: for cycles, one rollout from every start element, as POMO does (Kwon et
al. 2020), otherwise :data:`SAMPLED_ROLLOUTS` independent samples. The rollouts are
scored with the cost, and each rollout's advantage is its instance's mean cost minus
its own: the rollouts of one instance are each other's baseline, so no critic is
learned. The loss is minus the mean of advantage times log-probability of each rollout
(Williams 1992).

Everything runs inside the compiled training step: the sampling loop, a teacher-forced
pass that gives the rollouts' log-probabilities (with gradients), and the built-in
costs; a cost of the user's runs on the host through :func:`skptr._backend.host_function`.
"""

from __future__ import annotations

import keras
import numpy as np
from keras import ops

from .._backend import NetworkWrapper, host_function
from .._training import WEIGHT_COPIES
from . import _sizes
from ._codec import PointerCodec
from ._costs import CostErrors, call_cost, check_cost_applies, samples_at
from ._decoding import decode_encoded, repeat_encoded

__all__ = [
    "SAMPLED_ROLLOUTS",
    "CostTrainer",
    "cost_training_model",
    "graph_costs",
    "gumbel_noise",
    "rollout_count",
]

#: Rollouts sampled per instance when the targets are not cycles.
SAMPLED_ROLLOUTS = 8

#: The uniform noise behind the Gumbel noise stays this far from 0 and 1, so that the
#: noise is finite and a masked position (logit -1e9) is never sampled.
_UNIFORM_MARGIN = 1e-6


def gumbel_noise(n_positions, n_rows, seed):
    """Standard Gumbel noise that makes :func:`~skptr.pointer._decoding.decode_encoded`
    draw ``n_rows`` rows of ``n_positions`` positions from the pointer distribution
    (shape ``(T, n, T + 1)``); ``seed`` is an int or a
    :class:`keras.random.SeedGenerator`."""
    uniform = keras.random.uniform(
        (n_positions, n_rows, n_positions + 1),
        minval=_UNIFORM_MARGIN,
        maxval=1.0 - _UNIFORM_MARGIN,
        seed=seed,
    )
    return -ops.log(-ops.log(uniform))


def rollout_count(every_start, n_positions):
    """Rollouts per training instance: one per start element, or the samples."""
    return n_positions if every_start else SAMPLED_ROLLOUTS


def graph_length(values, orderings, closed):
    """Length of each path (``closed``: tour) through ``values`` (n, T, F) in the
    order of ``orderings`` (n, S), -1 after each end; the in-graph twin of
    :func:`skptr.costs.tour_length` and :func:`skptr.costs.path_length`."""
    values = ops.cast(values, "float32")
    valid = orderings >= 0
    points = ops.take_along_axis(values, ops.maximum(orderings, 0)[:, :, None], axis=1)
    legs = ops.sqrt(ops.sum(ops.square(points[:, 1:] - points[:, :-1]), axis=-1))
    length = ops.sum(legs * ops.cast(valid[:, 1:], "float32"), axis=1)
    if closed:
        last = ops.sum(ops.cast(valid, "int32"), axis=1) - 1
        last_points = ops.take_along_axis(points, last[:, None, None], axis=1)[:, 0]
        length = length + ops.sqrt(ops.sum(ops.square(last_points - points[:, 0]), axis=-1))
    return length


def graph_costs(cost, host_cost=None):
    """The cost of a fit as a function ``(values, lengths, orderings, index) -> (n,)``
    of tensors: the in-graph length for a built-in cost's name, else ``host_cost``
    (a NumPy function of the same arguments) called on the host."""
    if cost in ("tour", "path"):
        closed = cost == "tour"
        return lambda values, lengths, orderings, index: graph_length(values, orderings, closed)
    return lambda *arguments: host_function(host_cost, arguments)


def _outputs_mean(targets, outputs):
    """The training loss of a :class:`CostTrainer`: its outputs, averaged by Keras."""
    return outputs


def _teacher_targets(orderings, lengths, allow_end):
    """Decoded orderings as teacher-forcing targets: with an end pointer, it follows
    each ordering (index ``T``, one more step)."""
    if not allow_end:
        return orderings
    n_positions = ops.shape(orderings)[1]
    padded = ops.pad(orderings, ((0, 0), (0, 1)), constant_values=-1)
    count = ops.sum(ops.cast(orderings >= 0, "int32"), axis=1)
    at_end = ops.arange(n_positions + 1)[None, :] == count[:, None]
    return ops.where(at_end, n_positions, padded)


class CostTrainer(NetworkWrapper):
    """A training model around a :class:`PointerNetwork` that learns from a cost.

    Its output in training is, per instance, a number whose value is the mean cost of
    the instance's rollouts and whose gradient is that of the REINFORCE loss with the
    shared baseline; Keras' ``loss`` is its mean, so the progress bar, the history and
    early stopping follow the mean cost of the sampled orderings. Outside training (the
    validation samples) it returns the cost of each greedy ordering.

    Parameters
    ----------
    network : PointerNetwork
        The network trained (weights shared).
    cost : callable
        ``cost(values, lengths, orderings, index)``, see :func:`graph_costs`.
    every_start : bool
        One rollout from every start element (cycles), else sampled rollouts.
    seed : int
        Seed of the sampling.
    """

    def __init__(self, network, cost, every_start, seed, **kwargs):
        super().__init__(network, **kwargs)
        self.cost = cost
        self.every_start = bool(every_start)
        self.seed_generator = keras.random.SeedGenerator(int(seed))

    def compile(self, **kwargs):
        super().compile(**{**kwargs, "loss": _outputs_mean})

    def call(self, inputs, training=None):
        values, index = inputs["values"], inputs["index"]
        lengths = ops.cast(inputs["lengths"], "int32")
        network = self.network
        encoded = network.encode(values, lengths, training=training)
        if not training:
            orderings = decode_encoded(network, encoded, lengths)[0]
            return self.cost(values, lengths, orderings, index)
        n_samples, n_positions = ops.shape(values)[0], ops.shape(values)[1]
        n_rollouts = rollout_count(self.every_start, n_positions)
        rollouts = n_samples * n_rollouts

        def repeat(tensor):
            return ops.repeat(tensor, n_rollouts, axis=0)

        encoded = repeat_encoded(encoded, n_rollouts)
        lengths, values, index = repeat(lengths), repeat(values), repeat(index)
        weights = ops.ones((rollouts,), "float32")
        starts = None
        if self.every_start:
            start = ops.tile(ops.arange(n_rollouts, dtype="int32"), (n_samples,))
            inside = start < lengths
            starts = ops.where(inside, start, 0)
            weights = ops.cast(inside, "float32")
        noise = gumbel_noise(n_positions, rollouts, self.seed_generator)
        frozen = keras.tree.map_structure(ops.stop_gradient, encoded)
        orderings = decode_encoded(network, frozen, lengths, noise=noise, starts=starts)[0]
        costs = ops.stop_gradient(self.cost(values, lengths, orderings, index))
        targets = _teacher_targets(orderings, lengths, network.allow_end)
        logits = network.teacher_forced_logits(encoded, targets, training=training)
        log_probs = ops.log_softmax(logits, axis=-1)
        picked = ops.take_along_axis(log_probs, ops.maximum(targets, 0)[:, :, None], axis=-1)
        picked = picked[:, :, 0] * ops.cast(targets >= 0, log_probs.dtype)
        if self.every_start:  # the start was given, not chosen
            picked = picked[:, 1:]
        log_likelihood = ops.reshape(ops.sum(picked, axis=1), (n_samples, n_rollouts))
        costs = ops.reshape(costs, (n_samples, n_rollouts))
        weights = ops.reshape(weights, (n_samples, n_rollouts))
        n_valid = ops.sum(weights, axis=1)
        mean_cost = ops.sum(costs * weights, axis=1) / n_valid
        advantage = (mean_cost[:, None] - costs) * weights
        surrogate = -ops.sum(advantage * log_likelihood, axis=1) / n_valid
        return surrogate - ops.stop_gradient(surrogate) + mean_cost


def _identity_orderings(lengths):
    positions = np.arange(int(lengths.max()))
    return np.where(positions[None, :] < lengths[:, None], positions[None, :], -1)


def cost_training_model(estimator, network, data, seed):
    """The :class:`CostTrainer` that fits ``network`` to ``estimator.cost`` on
    ``data`` (from :meth:`PointerCodec.encode_samples`).

    Before anything is compiled, the cost is checked to apply to the network's
    orderings, a training step to fit in memory, and the cost to answer for the
    first samples in their given order; a cost that fails inside training stops the
    fit after that step with the cost's error (:class:`CostErrors`).
    """
    cost, cycle = estimator.cost, estimator.cycle
    check_cost_applies(cost, network.allow_end)
    n_positions = data.n_steps
    batch = min(int(estimator.batch_size), len(data.lengths))
    rows = batch * rollout_count(cycle is not None, n_positions)
    estimator._check_memory(
        "a training step from a cost",
        WEIGHT_COPIES * _sizes.weight_count(estimator)
        + _sizes.activation_count(estimator, rows, n_positions)
        + rows * n_positions * (n_positions + 1),
        rollouts=rows,
        longest_sequence=n_positions,
    )
    first = np.arange(min(8, len(data.lengths)))
    call_cost(
        cost, samples_at(data.samples, first), _identity_orderings(data.lengths[first]), first
    )
    codec, errors = PointerCodec.of(estimator), CostErrors()

    def host_cost(values, lengths, orderings, index):
        orderings = codec.canonical(orderings.astype(np.int64), (orderings >= 0).sum(axis=1))
        try:
            return call_cost(cost, samples_at(data.samples, index), orderings, index)
        except ValueError as error:
            errors.record(error)
            return np.zeros(len(index))

    trainer = CostTrainer(network, graph_costs(cost, host_cost), cycle is not None, seed)
    trainer.own_callbacks = [errors]
    return trainer
