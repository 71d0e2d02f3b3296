"""Learning orderings from a cost alone: REINFORCE with a shared baseline.

Each training instance is rolled out several times (:func:`rollouts`): orderings
sampled from the network's own pointer distributions, or one sampled from each of
several start elements, as POMO does (Kwon et al. 2020). The rollouts are scored
with the cost, and each rollout's advantage is its instance's mean cost minus its own:
the rollouts of one instance are each other's baseline, so no critic is learned
(:func:`shared_baseline_loss`). The loss is minus the mean of advantage times
log-probability of each rollout (Williams 1992), the log-probabilities coming from a
teacher-forced pass with gradients (:func:`rollout_log_likelihood`).

Everything runs inside the compiled training step: the rollouts, the teacher-forced
pass and the built-in costs; a cost of the user's runs on the host through
:func:`skptr._backend.host_function`.
"""

from __future__ import annotations

import keras
import numpy as np
from keras import ops

from .._backend import NetworkWrapper, host_function, replica_rows
from .._training import WEIGHT_COPIES
from ..metrics import _route_lengths
from . import _sizes
from ._codec import PointerCodec
from ._costs import CostErrors, call_cost, check_cost_applies, samples_at
from ._decoding import decode_lanes, static_or_dynamic, teacher_targets

__all__ = [
    "ROLLOUTS",
    "CostTrainer",
    "cost_training_model",
    "graph_costs",
    "rollout_count",
    "rollout_log_likelihood",
    "rollouts",
    "shared_baseline_loss",
]

#: The values of ``rollouts``: sampled orderings, or greedy ones from given starts.
ROLLOUTS = ("sample", "multistart")

#: Keys of the sampling noise are drawn below this bound (int32 on every backend).
_KEY_BOUND = 2**31 - 1


def rollout_count(n_rollouts, n_positions):
    """Rollouts per training instance: ``n_rollouts``, or None: one per position."""
    return n_positions if n_rollouts is None else int(n_rollouts)


def spread_starts(n_starts, lengths):
    """Start positions (n, ``n_starts``) spread evenly over each sample's length, and
    which are distinct (a sample shorter than ``n_starts`` has one per position)."""
    column = ops.arange(n_starts, dtype="int32")[None, :]
    length = ops.cast(lengths, "int32")[:, None]
    few = length <= n_starts
    spread = (column * length) // n_starts
    starts = ops.where(few, ops.minimum(column, length - 1), spread)
    return starts, ops.logical_or(ops.logical_not(few), column < length)


def rollouts(network, encoded, lengths, n_rollouts, multistart, seed):
    """Orderings of each instance sampled from the network (after the given start of
    each, with ``multistart``), without gradients.

    Returns
    -------
    orderings : int32 tensor of shape (n * n_rollouts, T)
        Rows ``i * n_rollouts`` to ``(i + 1) * n_rollouts - 1`` are instance ``i``'s.
    weights : tensor of shape (n, n_rollouts)
        1 for a rollout that counts, 0 for a repeated start of a short instance.
    """
    frozen = keras.tree.map_structure(ops.stop_gradient, encoded)
    n_samples, n_positions = ops.shape(lengths)[0], ops.shape(frozen[0])[1] - 1
    keys = replica_rows(
        lambda shape: keras.random.randint(shape, 0, _KEY_BOUND, "int32", seed=seed),
        (n_samples,),
    )
    starts, weights = None, ops.ones((n_samples, n_rollouts), "float32")
    if multistart:
        starts, distinct = spread_starts(n_rollouts, lengths)
        weights = ops.cast(distinct, "float32")
    orderings, _ = decode_lanes(
        network, frozen, lengths, n_rollouts, starts=starts, noise_keys=keys
    )
    return ops.reshape(orderings, (-1, n_positions)), weights


def rollout_log_likelihood(
    network, encoded, lengths, orderings, n_rollouts, given_start, training
):
    """Log-probability (n, ``n_rollouts``) of each rollout under the network, with
    gradients, by teacher forcing; ``given_start``: the first position was given, not
    chosen, and does not count."""
    repeated = keras.tree.map_structure(lambda t: ops.repeat(t, n_rollouts, axis=0), encoded)
    lengths = ops.repeat(lengths, n_rollouts, axis=0)
    targets = teacher_targets(orderings, lengths, network.allow_end)
    logits = network.teacher_forced_logits(repeated, targets, training=training)
    log_probs = ops.log_softmax(logits, axis=-1)
    picked = ops.take_along_axis(log_probs, ops.maximum(targets, 0)[:, :, None], axis=-1)
    picked = picked[:, :, 0] * ops.cast(targets >= 0, log_probs.dtype)
    if given_start:
        picked = picked[:, 1:]
    return ops.reshape(ops.sum(picked, axis=1), (-1, n_rollouts))


def shared_baseline_loss(costs, log_likelihood, weights):
    """Per instance, a number whose value is the mean cost of its rollouts and whose
    gradient is that of the REINFORCE loss with the instance's mean cost as baseline.

    Parameters
    ----------
    costs, log_likelihood, weights : tensors of shape (n, R)
        Each rollout's cost, log-probability (with gradients) and weight (0: not
        counted).
    """
    n_valid = ops.sum(weights, axis=1)
    mean_cost = ops.sum(costs * weights, axis=1) / n_valid
    advantage = (mean_cost[:, None] - costs) * weights
    surrogate = -ops.sum(advantage * log_likelihood, axis=1) / n_valid
    return surrogate - ops.stop_gradient(surrogate) + mean_cost


def graph_length(values, orderings, closed):
    """Length of each path (``closed``: tour) through ``values`` (n, T, F) in the
    order of ``orderings`` (n, S), -1 after each end, in the compiled step: the
    built-in costs' own function (:func:`skptr.metrics._route_lengths`) on tensors."""
    lengths = ops.sum(ops.cast(orderings >= 0, "int32"), axis=1)
    values = ops.cast(values, "float32")
    return _route_lengths(values, orderings, lengths, closed, xp=ops)


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


class CostTrainer(NetworkWrapper):
    """A training model around a :class:`PointerNetwork` that learns from a cost.

    Its output in training is, per instance, :func:`shared_baseline_loss` of the
    instance's rollouts, and Keras' ``loss`` is its mean, so the progress bar, the
    history and early stopping follow the mean cost of the rollouts. Outside training
    (the validation samples) it returns the cost of each greedy ordering.

    Parameters
    ----------
    network : PointerNetwork
        The network trained (weights shared).
    cost : callable
        ``cost(values, lengths, orderings, index)``, see :func:`graph_costs`.
    n_rollouts : int or None
        Rollouts per instance (None: one per position).
    multistart : bool
        Greedy rollouts from spread start elements, else sampled ones.
    seed : int
        Seed of the sampling.
    """

    def __init__(self, network, cost, n_rollouts, multistart, seed, **kwargs):
        super().__init__(network, **kwargs)
        self.cost = cost
        self.n_rollouts = n_rollouts
        self.multistart = bool(multistart)
        self.seed_generator = keras.random.SeedGenerator(int(seed))

    def compile(self, **kwargs):
        super().compile(**{**kwargs, "loss": _outputs_mean})

    def call(self, inputs, training=None):
        values, index = inputs["values"], inputs["index"]
        lengths = ops.cast(inputs["lengths"], "int32")
        network = self.network
        encoded = network.encode(values, lengths, training=training)
        if not training:
            orderings = decode_lanes(network, encoded, lengths, 1)[0][:, 0]
            return self.cost(values, lengths, orderings, index)
        n_rollouts = rollout_count(self.n_rollouts, static_or_dynamic(values, 1))
        orderings, weights = rollouts(
            network, encoded, lengths, n_rollouts, self.multistart, self.seed_generator
        )

        def repeat(tensor):
            return ops.repeat(tensor, n_rollouts, axis=0)

        costs = self.cost(repeat(values), repeat(lengths), orderings, repeat(index))
        costs = ops.reshape(ops.stop_gradient(costs), (-1, n_rollouts))
        log_likelihood = rollout_log_likelihood(
            network, encoded, lengths, orderings, n_rollouts, self.multistart, training
        )
        return shared_baseline_loss(costs, log_likelihood, weights)


def _identity_orderings(lengths):
    positions = np.arange(int(lengths.max()))
    return np.where(positions[None, :] < lengths[:, None], positions[None, :], -1)


def cost_training_model(estimator, network, data, seed):
    """The :class:`CostTrainer` that fits ``network`` to ``estimator.cost`` on
    ``data`` (from :meth:`PointerCodec.encode_samples`), and the callbacks it needs.

    Before anything is compiled, the cost is checked to apply to the network's
    orderings, a training step to fit in memory, and the cost to answer for the
    first samples in their given order; a cost that fails inside training stops the
    fit after that step with the cost's error (:class:`CostErrors`).
    """
    cost = estimator.cost
    check_cost_applies(cost, network.allow_end)
    n_positions = data.n_steps
    batch = min(int(estimator.batch_size), len(data.lengths))
    multistart = estimator.rollouts == "multistart"
    rows = batch * rollout_count(estimator.n_rollouts, n_positions)
    shared, per_lane = _sizes.decoding_numbers(estimator, n_positions, sampled=True)
    estimator._check_memory(
        "a training step from a cost",
        WEIGHT_COPIES * _sizes.weight_count(estimator)
        + _sizes.activation_count(estimator, batch, n_positions, decoded_rows=rows)
        + batch * shared
        + rows * per_lane,
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

    trainer = CostTrainer(
        network, graph_costs(cost, host_cost), estimator.n_rollouts, multistart, seed
    )
    return trainer, [errors]
