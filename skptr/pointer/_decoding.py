"""Decoding a :class:`PointerNetwork`: candidate orderings, compiled, batched.

Every decoding runs as *lanes* beside each other: a sample's encodings are computed once
and shared by all its lanes, and each lane carries its own decoder state and the
positions it has chosen. A lane chooses the most probable allowed position at every
step (greedy), unless its first position is given (``starts``: multistart decoding) or
Gumbel noise is added to its logits (sampling, by the Gumbel-max trick). Beam search
keeps ``width`` lanes per sample and refills them at every step with the most likely
continuations of all of them.

The loops over output steps run with a scan (:func:`skptr._backend.scan`) inside a Keras
model, so ``predict`` runs them as one compiled graph per batch. Padding positions and
positions already chosen get exactly zero probability, so every decoded ordering is
valid. Only orderings and their log-likelihoods leave the loop: a lane holds ``O(T)``
numbers per step for ``T`` positions, never the pointer distributions of its steps,
which :class:`PointerScorer` recomputes for the kept ordering when they are asked for.
"""

from __future__ import annotations

import keras
from keras import ops

from .._backend import NetworkWrapper, scan
from ._layers import NEGATIVE_LOGIT
from ._noise import gumbel_step_noise

__all__ = [
    "PointerDecoder",
    "PointerScorer",
    "beam_search",
    "decode_lanes",
    "static_or_dynamic",
    "teacher_targets",
]


def static_or_dynamic(tensor, axis):
    """The size of ``tensor`` along ``axis``: static where known, else a tensor."""
    size = tensor.shape[axis]
    return ops.shape(tensor)[axis] if size is None else size


def _advance(chosen, finished, choice, lengths, n_steps):
    """Record ``choice`` (n, C) for the lanes still running.

    Returns the updated chosen-position mask (n, C, P), the emitted index (-1 for the
    end of output and for lanes that had already finished), the updated finished flags,
    and which lanes were running before this step.
    """
    running = ops.logical_not(finished)
    picked = ops.logical_and(ops.one_hot(choice, n_steps + 1) > 0.5, running[..., None])
    chosen = ops.logical_or(chosen, picked)
    emitted = ops.where(
        ops.logical_and(running, choice != n_steps), choice, ops.full_like(choice, -1)
    )
    count = ops.sum(ops.cast(chosen[..., :n_steps], "int32"), axis=-1)
    ended = ops.logical_or(choice == n_steps, count >= lengths[:, None])
    return chosen, emitted, ops.logical_or(finished, ended), running


def _lane_log_probs(network, keys, prepared, valid, states, previous, chosen):
    """One decoder step of every lane: the log-probabilities (n, C, P) of the next
    position and the new decoder states (lanes flattened to rows)."""
    n_lanes = static_or_dynamic(previous, 1)
    inputs = network.decoder_inputs(keys, previous)
    output, states = network.decoder_step(ops.reshape(inputs, (-1, inputs.shape[-1])), states)
    output = ops.reshape(output, (-1, n_lanes, output.shape[-1]))
    allowed = ops.logical_and(valid[:, None, :], ops.logical_not(chosen))
    logits = network.pointer_logits(output, keys, prepared, allowed)
    return logits, ops.log_softmax(logits, axis=-1), states


def _lane_states(states, n_lanes):
    """Each sample's initial decoder states repeated for its lanes."""
    return [[ops.repeat(s, n_lanes, axis=0) for s in layer] for layer in states]


def decode_lanes(network, encoded, lengths, n_lanes, *, starts=None, noise_keys=None):
    """Greedy decoding in ``n_lanes`` lanes per sample.

    Parameters
    ----------
    network : PointerNetwork
        A built pointer network.
    encoded : tuple
        :meth:`PointerNetwork.encode` of ``n`` samples.
    lengths : tensor of shape (n,)
        The samples' lengths.
    n_lanes : int
        Lanes per sample.
    starts : int tensor of shape (n, n_lanes), optional
        The position each lane chooses first, within its sample's length, or -1 where
        the lane chooses it as it chooses the others.
    noise_keys : int tensor of shape (n,), optional
        Each sample's key of the Gumbel noise added to each step's logits before the
        choice (:func:`~skptr.pointer._noise.gumbel_step_noise`), which turns the most
        probable choice into a sample of the pointer distribution.

    Returns
    -------
    orderings : int32 tensor of shape (n, n_lanes, T)
        Chosen positions, -1 after the end of output.
    log_likelihood : tensor of shape (n, n_lanes)
        Log-probability of each lane's ordering, end of output included.
    """
    keys, valid, states = encoded
    prepared = network.prepare_keys(keys)
    n_samples = ops.shape(keys)[0]
    n_pointers = static_or_dynamic(keys, 1)
    n_steps = n_pointers - 1
    lengths = ops.cast(lengths, "int32")

    def step(carry, step_index):
        states, previous, chosen, finished, log_likelihood = carry
        logits, log_probs, states = _lane_log_probs(
            network, keys, prepared, valid, states, previous, chosen
        )
        if noise_keys is not None:
            logits = logits + gumbel_step_noise(noise_keys, step_index, n_lanes, n_pointers)
        choice = ops.cast(ops.argmax(logits, axis=-1), "int32")
        if starts is not None:
            given = ops.logical_and(step_index == 0, starts >= 0)
            choice = ops.where(given, starts, choice)
        chosen, emitted, finished, running = _advance(chosen, finished, choice, lengths, n_steps)
        picked = ops.take_along_axis(log_probs, choice[..., None], axis=-1)[..., 0]
        log_likelihood = log_likelihood + ops.where(running, picked, 0.0)
        return (states, choice, chosen, finished, log_likelihood), emitted

    carry = (
        _lane_states(states, n_lanes),
        ops.full((n_samples, n_lanes), -1, dtype="int32"),
        ops.zeros((n_samples, n_lanes, n_pointers), dtype="bool"),
        ops.zeros((n_samples, n_lanes), dtype="bool"),
        ops.zeros((n_samples, n_lanes), dtype="float32"),
    )
    if starts is not None:
        starts = ops.cast(starts, "int32")
    carry, emitted = scan(step, carry, ops.arange(n_steps, dtype="int32"))
    return ops.transpose(emitted, (1, 2, 0)), carry[4]


def beam_search(network, encoded, lengths, width):
    """Beam search over orderings, keeping ``width`` partial orderings per sample.

    A hypothesis that has ended (end of output, or all positions used) is carried
    unchanged with log-probability 0 per further step, so hypotheses of different
    lengths compete on their full log-likelihood. With ``width=1`` this is greedy
    decoding.

    Parameters
    ----------
    network, encoded, lengths
        As for :func:`decode_lanes`.
    width : int
        Hypotheses kept per sample.

    Returns
    -------
    orderings : int32 tensor of shape (n, width, T)
        Every hypothesis of the final beam, most likely first.
    log_likelihood : tensor of shape (n, width)
        Their log-likelihoods; a hypothesis impossible for a short sample (fewer
        orderings than ``width``) has one near ``NEGATIVE_LOGIT``.
    """
    keys, valid, states = encoded
    prepared = network.prepare_keys(keys)
    n_samples = ops.shape(keys)[0]
    n_pointers = static_or_dynamic(keys, 1)
    n_steps = n_pointers - 1
    lengths = ops.cast(lengths, "int32")
    only_end = ops.arange(n_pointers) == n_steps
    # Row of each sample's first lane when lanes are flattened to rows.
    first_row = ops.arange(n_samples, dtype="int32")[:, None] * width

    def step(carry, _):
        states, previous, chosen, finished, scores = carry
        _, log_probs, states = _lane_log_probs(
            network, keys, prepared, valid, states, previous, chosen
        )
        continuation = ops.where(
            finished[..., None], ops.where(only_end, 0.0, NEGATIVE_LOGIT), log_probs
        )
        candidates = ops.reshape(scores[..., None] + continuation, (-1, width * n_pointers))
        scores, flat_choice = ops.top_k(candidates, k=width, sorted=True)
        flat_choice = ops.cast(flat_choice, "int32")
        source, choice = flat_choice // n_pointers, flat_choice % n_pointers
        rows = ops.reshape(first_row + source, (-1,))

        states = [[ops.take(s, rows, axis=0) for s in layer] for layer in states]
        chosen = ops.take(ops.reshape(chosen, (-1, n_pointers)), rows, axis=0)
        chosen = ops.reshape(chosen, (-1, width, n_pointers))
        finished = ops.reshape(ops.take(ops.reshape(finished, (-1,)), rows), (-1, width))
        chosen, emitted, finished, _ = _advance(chosen, finished, choice, lengths, n_steps)
        return (states, choice, chosen, finished, scores), (source, emitted)

    # The beam starts from its first lane alone.
    first_scores = ops.where(ops.arange(width) == 0, 0.0, NEGATIVE_LOGIT)
    carry = (
        _lane_states(states, width),
        ops.full((n_samples, width), -1, dtype="int32"),
        ops.zeros((n_samples, width, n_pointers), dtype="bool"),
        ops.zeros((n_samples, width), dtype="bool"),
        ops.tile(ops.cast(first_scores, "float32")[None, :], (n_samples, 1)),
    )
    carry, (sources, emitted) = scan(step, carry, ops.arange(n_steps, dtype="int32"))

    # Follow the back-pointers from the final lanes: at step t, lane r continues the
    # hypothesis of lane sources[t, r] of step t - 1.
    def back(lanes, current):
        step_sources, step_emitted = current
        return (
            ops.take_along_axis(step_sources, lanes, axis=1),
            ops.take_along_axis(step_emitted, lanes, axis=1),
        )

    last = ops.tile(ops.arange(width, dtype="int32")[None, :], (n_samples, 1))
    _, orderings = scan(back, last, (ops.flip(sources, axis=0), ops.flip(emitted, axis=0)))
    return ops.transpose(ops.flip(orderings, axis=0), (1, 2, 0)), carry[4]


@keras.saving.register_keras_serializable(package="skptr")
class PointerDecoder(NetworkWrapper):
    """Wrap a :class:`PointerNetwork` so ``predict`` decodes candidates in a compiled
    loop.

    Its inputs are ``values`` (n, T, F) and ``lengths`` (n,); for ``"lanes"`` also
    ``starts`` (n, lanes), and for sampled lanes ``noise_keys`` (n,) (see
    :func:`decode_lanes`). It returns ``orderings`` (n, candidates, T) and their
    ``log_likelihood`` (n, candidates).

    Parameters
    ----------
    network : PointerNetwork
        The trained network (weights are shared, not copied).
    method : {"lanes", "beam"}
        Lanes of greedy decoding (:func:`decode_lanes`), or beam search
        (:func:`beam_search`).
    width : int
        Lanes, or the width of the beam.
    sampled : bool
        Whether the lanes take Gumbel noise.
    """

    def __init__(self, network, method="lanes", width=1, sampled=False, **kwargs):
        super().__init__(network, **kwargs)
        self.method = method
        self.width = int(width)
        self.sampled = bool(sampled)

    def call(self, inputs):
        values, lengths = inputs["values"], inputs["lengths"]
        encoded = self.network.encode(values, lengths, training=False)
        if self.method == "beam":
            orderings, log_likelihood = beam_search(self.network, encoded, lengths, self.width)
        else:
            orderings, log_likelihood = decode_lanes(
                self.network,
                encoded,
                lengths,
                self.width,
                starts=inputs["starts"],
                noise_keys=inputs["noise_keys"] if self.sampled else None,
            )
        return {"orderings": orderings, "log_likelihood": log_likelihood}


def teacher_targets(orderings, lengths, allow_end):
    """Orderings (n, S) of samples of ``lengths`` as teacher-forcing targets: with an
    end pointer, it follows each ordering that stops before its sample's end (index
    ``S``, one more step); an ordering of every element ends by itself."""
    if not allow_end:
        return orderings
    n_positions = ops.shape(orderings)[1]
    padded = ops.pad(orderings, ((0, 0), (0, 1)), constant_values=-1)
    count = ops.sum(ops.cast(orderings >= 0, "int32"), axis=1)
    stops = count < ops.cast(lengths, "int32")
    at_end = ops.logical_and(
        ops.arange(n_positions + 1)[None, :] == count[:, None], stops[:, None]
    )
    return ops.where(at_end, n_positions, padded)


@keras.saving.register_keras_serializable(package="skptr")
class PointerScorer(NetworkWrapper):
    """Wrap a :class:`PointerNetwork` so ``predict`` returns the pointer distributions
    along given orderings.

    Its inputs are ``values`` (n, T, F), ``lengths`` (n,) and ``orderings`` (n, T), -1
    after each end; it returns ``distributions`` (n, T, T + 1): at each step the
    distribution over the positions still allowed (the last column: ending the
    output), zeros after the end.
    """

    def call(self, inputs):
        network = self.network
        encoded = network.encode(inputs["values"], inputs["lengths"], training=False)
        orderings = ops.cast(inputs["orderings"], "int32")
        targets = teacher_targets(orderings, inputs["lengths"], network.allow_end)
        logits = network.teacher_forced_logits(encoded, targets, training=False)
        real = ops.cast(targets >= 0, "float32")[..., None]
        distributions = ops.softmax(ops.cast(logits, "float32"), axis=-1) * real
        n_steps = static_or_dynamic(inputs["orderings"], 1)
        return {"distributions": distributions[:, :n_steps]}
