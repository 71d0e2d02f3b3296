"""Batched greedy and beam-search decoding of a :class:`PointerNetwork`.

The decoders loop over output steps with a scan (:func:`skptr._backend.scan`) inside a
Keras model, so ``model.predict`` runs them as one compiled graph per batch; there is no
Python loop over samples or steps at run time. At every step, padding positions and
positions already chosen get exactly zero probability, so every decoded ordering is
valid.

Each step costs work proportional to the input length ``T`` (the attention over the
input, the mask of chosen positions): a step's outputs are stacked by the scan instead
of written into full-size buffers, and beam search records one back-pointer per beam
and step and follows them from the best final beam once, at the end, instead of
reordering the beams' whole histories at every step. Decoding a sequence thus costs
``O(T**2)``, the cost of its attention.
"""

from __future__ import annotations

import keras
import numpy as np
from keras import ops

from .._backend import NetworkWrapper, quiet_retracing, scan
from .._batches import take
from . import _sizes
from ._codec import PointerCodec
from ._costs import call_cost, check_cost_applies, samples_at
from ._layers import NEGATIVE_LOGIT
from ._symmetries import check_symmetries, mirror_images

__all__ = [
    "PointerDecoder",
    "beam_decode",
    "decode_encoded",
    "decode_sequences",
    "greedy_decode",
    "repeat_encoded",
]


def _static_or_dynamic(tensor, axis):
    size = tensor.shape[axis]
    return ops.shape(tensor)[axis] if size is None else size


def _advance(chosen, finished, choice, lengths, n_steps):
    """Record ``choice`` for the rows still running.

    Returns the updated chosen-position mask, the emitted index (-1 for the end of
    output and for rows that had already finished), the updated finished flags, and
    which rows were running before this step.
    """
    running = ops.logical_not(finished)
    n_pointers = n_steps + 1
    picked = ops.logical_and(ops.one_hot(choice, n_pointers) > 0.5, running[:, None])
    chosen = ops.logical_or(chosen, picked)
    emitted = ops.where(
        ops.logical_and(running, choice != n_steps), choice, ops.full_like(choice, -1)
    )
    count = ops.sum(ops.cast(chosen[:, :n_steps], "int32"), axis=-1)
    ended = ops.logical_or(choice == n_steps, count >= lengths)
    return chosen, emitted, ops.logical_or(finished, ended), running


def _follow_back_pointers(sources, last):
    """The beam rows that a hypothesis occupied at each step, from its final row.

    Parameters
    ----------
    sources : int32 tensor of shape (S, R)
        ``sources[t, r]``: the row at step ``t - 1`` whose hypothesis the row ``r``
        continues at step ``t``.
    last : int32 tensor of shape (m,)
        Rows of the hypotheses at the last step.

    Returns
    -------
    int32 tensor of shape (S, m)
        The row of each hypothesis at each step.
    """

    def step(rows, step_sources):
        return ops.take(step_sources, rows, axis=0), rows

    _, rows = scan(step, last, ops.flip(sources, axis=0))
    return ops.flip(rows, axis=0)


def greedy_decode(network, values, lengths, *, noise=None, starts=None):
    """Choose the most probable allowed position at every step.

    Parameters
    ----------
    network : PointerNetwork
        A built pointer network.
    values : tensor of shape (n, T, F)
        Padded input sequences.
    lengths : tensor of shape (n,)
        Their lengths.
    noise : tensor of shape (T, n, T + 1), optional
        Standard Gumbel noise added to each step's logits before the choice, which
        turns the most probable choice into a sample of the pointer distribution (the
        Gumbel-max trick).
    starts : int32 tensor of shape (n,), optional
        The position chosen first, instead of the model's choice (starts within each
        sample's length).

    Returns
    -------
    orderings : int32 tensor of shape (n, T)
        Chosen positions, -1 after the end of output.
    distributions : tensor of shape (n, T, T + 1)
        The pointer distribution at each step (zeros after the end); the last column
        is the probability of ending the output.
    log_likelihood : tensor of shape (n,)
        Log-probability of the decoded ordering, end of output included.
    """
    encoded = network.encode(values, lengths, training=False)
    return decode_encoded(network, encoded, lengths, noise=noise, starts=starts)


def every_start_decode(network, values, lengths):
    """Greedy decoding from every start position: row ``i * T + k`` of the outputs
    (as for :func:`greedy_decode`) starts at position ``k`` of sample ``i`` (at 0 when
    ``k`` is past the sample's end)."""
    encoded = network.encode(values, lengths, training=False)
    n_positions = _static_or_dynamic(encoded[0], 1) - 1
    lengths = ops.repeat(ops.cast(lengths, "int32"), n_positions, axis=0)
    starts = ops.tile(ops.arange(n_positions, dtype="int32"), (ops.shape(encoded[0])[0],))
    encoded = repeat_encoded(encoded, n_positions)
    return decode_encoded(network, encoded, lengths, starts=ops.where(starts < lengths, starts, 0))


def repeat_encoded(encoded, repeats):
    """:meth:`PointerNetwork.encode` outputs with each sample's row repeated ``repeats``
    times in a row, for several decodings of each sample."""
    keys, valid, states = encoded

    def repeat(tensor):
        return ops.repeat(tensor, repeats, axis=0)

    return repeat(keys), repeat(valid), [[repeat(s) for s in layer] for layer in states]


def decode_encoded(network, encoded, lengths, *, noise=None, starts=None):
    """:func:`greedy_decode` of inputs already encoded (``network.encode``)."""
    keys, valid, states = encoded
    prepared = network.prepare_keys(keys)
    n_samples = ops.shape(keys)[0]
    n_pointers = _static_or_dynamic(keys, 1)
    n_steps = n_pointers - 1
    lengths = ops.cast(lengths, "int32")

    def step(carry, current):
        states, previous, chosen, finished, log_likelihood = carry
        output, states = network.decoder_step(network.decoder_inputs(keys, previous), states)
        allowed = ops.logical_and(valid, ops.logical_not(chosen))
        logits = network.pointer_logits(output, keys, prepared, allowed)
        log_probs = ops.log_softmax(logits, axis=-1)
        scores = logits if noise is None else logits + current[1]
        choice = ops.cast(ops.argmax(scores, axis=-1), "int32")
        if starts is not None:
            choice = ops.where(current[0] == 0, ops.cast(starts, "int32"), choice)
        chosen, emitted, finished, running = _advance(chosen, finished, choice, lengths, n_steps)
        picked = ops.take_along_axis(log_probs, choice[:, None], axis=-1)[:, 0]
        log_likelihood = log_likelihood + ops.where(running, picked, 0.0)
        probabilities = ops.where(running[:, None], ops.exp(log_probs), 0.0)
        return (states, choice, chosen, finished, log_likelihood), (emitted, probabilities)

    carry = (
        states,
        ops.full((n_samples,), -1, dtype="int32"),
        ops.zeros((n_samples, n_pointers), dtype="bool"),
        ops.zeros((n_samples,), dtype="bool"),
        ops.zeros((n_samples,), dtype="float32"),
    )
    per_step = ops.arange(n_steps, dtype="int32")
    per_step = (per_step,) if noise is None else (per_step, ops.cast(noise, "float32"))
    carry, (orderings, distributions) = scan(step, carry, per_step)
    return ops.transpose(orderings), ops.transpose(distributions, (1, 0, 2)), carry[4]


def beam_decode(network, values, lengths, beam_width, all_beams=False):
    """Beam search over orderings, keeping ``beam_width`` partial orderings per sample.

    A beam that has ended (end of output, or all positions used) is carried unchanged
    with log-probability 0 per further step, so beams of different lengths compete on
    their full log-likelihood. The returned ordering is the most likely one of the
    final beam; with ``beam_width=1`` this is exactly greedy decoding.

    Parameters
    ----------
    network : PointerNetwork
        A built pointer network.
    values : tensor of shape (n, T, F)
        Padded input sequences.
    lengths : tensor of shape (n,)
        Their lengths.
    beam_width : int
        Number of hypotheses kept per sample.
    all_beams : bool, default=False
        Return every hypothesis of the final beam (``beam_width`` rows per sample, best
        first; hypotheses impossible for a short sample have a log-likelihood near
        ``NEGATIVE_LOGIT``), not only the best.

    Returns
    -------
    orderings, distributions, log_likelihood
        As for :func:`greedy_decode`, for the best hypothesis of the final beam.
    """
    keys, valid, states = network.encode(values, lengths, training=False)
    n_samples = ops.shape(keys)[0]
    n_pointers = _static_or_dynamic(keys, 1)
    n_steps = n_pointers - 1
    width = beam_width
    flat = n_samples * width

    keys = ops.repeat(keys, width, axis=0)
    valid = ops.repeat(valid, width, axis=0)
    lengths = ops.repeat(ops.cast(lengths, "int32"), width, axis=0)
    states = [[ops.repeat(s, width, axis=0) for s in layer] for layer in states]
    prepared = network.prepare_keys(keys)
    only_end = ops.arange(n_pointers)[None, :] == n_steps
    sample_offsets = ops.arange(n_samples, dtype="int32")[:, None] * width

    def step(carry, _):
        states, previous, chosen, finished, scores = carry
        output, states = network.decoder_step(network.decoder_inputs(keys, previous), states)
        allowed = ops.logical_and(valid, ops.logical_not(chosen))
        logits = network.pointer_logits(output, keys, prepared, allowed)
        log_probs = ops.log_softmax(logits, axis=-1)
        probabilities = ops.exp(log_probs)
        continuation = ops.where(
            finished[:, None],
            ops.where(only_end, 0.0, NEGATIVE_LOGIT),
            log_probs,
        )
        candidates = ops.reshape(scores, (-1, 1)) + continuation
        candidates = ops.reshape(candidates, (n_samples, width * n_pointers))
        scores, flat_choice = ops.top_k(candidates, k=width, sorted=True)
        flat_choice = ops.cast(flat_choice, "int32")
        source = ops.reshape(sample_offsets + flat_choice // n_pointers, (-1,))
        choice = ops.reshape(flat_choice % n_pointers, (-1,))

        def gather(tensor):
            return ops.take(tensor, source, axis=0)

        states = [[gather(s) for s in layer] for layer in states]
        chosen, emitted, finished, running = _advance(
            gather(chosen), gather(finished), choice, lengths, n_steps
        )
        probabilities = ops.where(running[:, None], gather(probabilities), 0.0)
        carry = (states, choice, chosen, finished, scores)
        return carry, (source, emitted, probabilities)

    first_beam_only = ops.where(ops.arange(width) == 0, 0.0, NEGATIVE_LOGIT)
    carry = (
        states,
        ops.full((flat,), -1, dtype="int32"),
        ops.zeros((flat, n_pointers), dtype="bool"),
        ops.zeros((flat,), dtype="bool"),
        ops.tile(ops.cast(first_beam_only, "float32")[None, :], (n_samples, 1)),
    )
    carry, (sources, emitted, distributions) = scan(
        step, carry, ops.arange(n_steps, dtype="int32")
    )
    scores = carry[4]
    # The final beams are sorted by score: the first of each sample's is its best.
    if all_beams:
        last, n_rows, scores = ops.arange(flat, dtype="int32"), flat, ops.reshape(scores, (-1,))
    else:
        last, n_rows, scores = (
            ops.arange(n_samples, dtype="int32") * width,
            n_samples,
            scores[:, 0],
        )
    path = _follow_back_pointers(sources, last)
    # Rows of the step-major outputs, row-major: (m, S) from (S, m) indices.
    at = ops.transpose(path + ops.arange(n_steps, dtype="int32")[:, None] * flat)
    at = ops.reshape(at, (-1,))
    orderings = ops.reshape(ops.take(ops.reshape(emitted, (-1,)), at), (n_rows, n_steps))
    distributions = ops.reshape(
        ops.take(ops.reshape(distributions, (-1, n_pointers)), at, axis=0),
        (n_rows, n_steps, n_pointers),
    )
    return orderings, distributions, scores


@keras.saving.register_keras_serializable(package="skptr")
class PointerDecoder(NetworkWrapper):
    """Wrap a :class:`PointerNetwork` so ``predict`` decodes with a compiled loop.

    Parameters
    ----------
    network : PointerNetwork
        The trained network (weights are shared, not copied).
    method : {"greedy", "beam", "beams", "every_start"}
        Decoding strategy: greedy, beam search (its best hypothesis, or with
        ``"beams"`` every hypothesis of the final beam), or greedy from every start
        (:func:`every_start_decode`).
    beam_width : int
        Beam width of beam search.
    """

    def __init__(self, network, method="greedy", beam_width=5, **kwargs):
        super().__init__(network, **kwargs)
        self.method = method
        self.beam_width = beam_width

    def call(self, inputs):
        values, lengths = inputs["values"], inputs["lengths"]
        if self.method in ("beam", "beams"):
            all_beams = self.method == "beams"
            result = beam_decode(self.network, values, lengths, self.beam_width, all_beams)
        elif self.method == "every_start":
            result = every_start_decode(self.network, values, lengths)
        else:
            result = greedy_decode(self.network, values, lengths)
        orderings, distributions, log_likelihood = result
        return {
            "orderings": orderings,
            "distributions": distributions,
            "log_likelihood": log_likelihood,
        }


def _decoding(estimator, n_positions):
    """The decoder's method for ``estimator`` and its candidates per sample (several
    with a cost: the cheapest is kept)."""
    beams = _sizes.beams(
        estimator.decode, int(estimator.beam_width), n_positions, estimator.ordered_subsets_
    )
    if estimator.cost is None:
        return estimator.decode, beams
    if estimator.decode == "beam":
        return "beams", beams
    return "every_start", n_positions


def _best_candidates(outputs, method, n_candidates, estimator, codec, sequences, samples, first):
    """The outputs of the best candidate of each sample, for the samples from ``first``
    on: the cheapest with a cost, else the likeliest (rows past the last sample keep
    their first candidate). A sample's candidates are ``n_candidates`` consecutive
    rows: the decoder's candidates of each of its mirror images in turn."""
    orderings = np.asarray(outputs["orderings"])
    likelihood = np.asarray(outputs["log_likelihood"])
    n_rows = len(orderings) // n_candidates
    rows = np.arange(n_rows)
    ids = np.arange(first, min(first + n_rows, sequences.n_samples))
    lengths = sequences.lengths[ids]
    if method == "every_start":
        n_starts = sequences.max_length
        starts = np.arange(n_candidates) % n_starts
        possible = starts[None, :] < lengths[:, None]
    elif method == "beams":  # a short sample's beam may hold impossible hypotheses
        possible = likelihood.reshape(n_rows, n_candidates)[: len(ids)] > NEGATIVE_LOGIT / 2
    else:
        possible = np.ones((len(ids), n_candidates), dtype=bool)
    sample, option = np.nonzero(possible)
    chosen_rows = sample * n_candidates + option
    costs = np.full((n_rows, n_candidates), np.inf)
    if estimator.cost is None:
        costs[sample, option] = -likelihood[chosen_rows]
    else:
        candidates = orderings[chosen_rows].astype(np.int64)
        candidates = codec.canonical(candidates, (candidates >= 0).sum(axis=1))
        costs[sample, option] = call_cost(
            estimator.cost, samples_at(samples, ids[sample]), candidates, ids[sample]
        )
    best = rows * n_candidates + np.where(rows < len(ids), np.argmin(costs, axis=1), 0)
    return {key: np.asarray(value)[best] for key, value in outputs.items()}


def decode_sequences(estimator, sequences, codec, samples=None):
    """Orderings and pointer distributions of validated sequences, decoded by a fitted
    :class:`~skptr.pointer.PointerNetworkOrderer` as its ``decode`` and ``cost`` say.

    The sequences are decoded in batches of about 2,048 rows (see
    :func:`~skptr.pointer._sizes.decoder_batch_size`) after checking that a batch fits
    in memory. With ``symmetries`` above 1, each sample's mirror images (see
    :func:`~skptr.pointer._symmetries.mirror_images`) are decoded too. With a cost, each
    sample's candidates (its final beam or its greedy orderings from every start, of
    every image) are scored and the cheapest kept; without, the likeliest of its
    images is kept.

    Parameters
    ----------
    estimator : PointerNetworkOrderer
        A fitted estimator.
    sequences : PaddedSequences
        Validated input sequences.
    codec : PointerCodec
        The estimator's codec.
    samples : array-like, optional
        The samples as a cost receives them (see :func:`~skptr.pointer._codec.given_form`);
        required with a cost.

    Returns
    -------
    tuple
        What :meth:`PointerCodec.decode` returns: orderings, then distributions.
    """
    view = estimator._as_fitted()
    method, n_candidates = _decoding(estimator, sequences.max_length)
    if estimator.cost is not None:
        check_cost_applies(estimator.cost, estimator.ordered_subsets_)
    n_images = int(estimator.symmetries)
    check_symmetries(n_images, sequences.n_features)
    batch_size = estimator._placement().inference.rows(
        _sizes.decoder_batch_size(
            int(estimator.batch_size), sequences.max_length, n_candidates * n_images
        )
    )
    rows = batch_size * n_images * n_candidates
    view._check_memory(
        "decoding",
        _sizes.decoding_count(view, rows, sequences.max_length),
        longest_sequence=sequences.max_length,
        symmetries=n_images,
        **{"beams" if method in ("beam", "beams") else "starts": n_candidates},
    )
    n_rows = estimator._inference_rows(sequences.n_samples, batch_size)
    width = n_candidates if method in ("beam", "beams") else 1
    decoder = estimator._inference_model(
        ("decoder", method, width),
        lambda network: PointerDecoder(network, method=method, beam_width=width),
        n_rows * n_images,
        sequences.max_length,
    )
    # Rows the decoder returns per sample: each image's candidates in turn.
    returned = n_images * (n_candidates if method in ("beams", "every_start") else 1)
    inputs = PointerCodec.decoder_inputs(sequences, n_rows)
    batches = []
    with quiet_retracing():
        for start in range(0, n_rows, batch_size):
            batch = take(inputs, slice(start, start + batch_size))
            if n_images > 1:
                batch = mirror_images(batch, n_images)
            outputs = estimator._predict_on_batch(decoder, batch, batch_size * n_images)
            if returned > 1:
                outputs = _best_candidates(
                    outputs, method, returned, estimator, codec, sequences, samples, start
                )
            batches.append(outputs)
    outputs = {key: np.concatenate([np.asarray(b[key]) for b in batches]) for key in batches[0]}
    return codec.decode(outputs, sequences.n_samples)
