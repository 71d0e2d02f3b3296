"""Decoding validated samples as a fitted estimator's settings say: the plan of a call
(method, candidates, mirror images, batches), the candidates of each batch, and the
choice of one ordering per sample.

Every method but ``"greedy"`` decodes several candidate orderings of each sample and
keeps one: the cheapest under the estimator's ``cost``, ties (and every candidate,
without a cost) going to the likeliest. The greedy orderings are always candidates,
decoded by the very pass that ``decode="greedy"`` runs, so with a cost no method
returns an ordering costlier than greedy decoding's, and without one none returns an
ordering less likely than it.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from .._backend import quiet_retracing
from .._batches import power_of_two_at_most, take
from .._random import draw_seed
from . import _sizes
from ._codec import PointerCodec
from ._costs import call_cost, check_cost_applies, samples_at
from ._decoding import PointerDecoder, PointerScorer
from ._layers import NEGATIVE_LOGIT
from ._symmetries import check_augment, mirror_images

__all__ = ["DECODE_METHODS", "DecodingPlan", "decode_sequences"]

#: The values of ``decode``.
DECODE_METHODS = ("greedy", "sample", "multistart", "beam")

#: Costs within this relative distance of the cheapest count as ties.
_COST_TIE = 1e-9


@dataclass(frozen=True)
class DecodingPlan:
    """How one inference call decodes, resolved once from the estimator's settings
    and the samples' longest length.

    Attributes
    ----------
    method : str
        The ``decode`` setting.
    n_candidates : int
        Candidates per image: start elements, samples or the beam's width (1 for
        greedy decoding); the greedy orderings come from a pass of their own.
    n_images : int
        Images decoded per sample (the sample and its mirror images).
    lanes : int
        Candidates a decoder call decodes per image (the beam: its width).
    samples_per_call : int
        Samples per decoder call.
    seed : int or None
        Root seed of the sampled candidates.
    """

    method: str
    n_candidates: int
    n_images: int
    lanes: int
    samples_per_call: int
    seed: int | None

    @classmethod
    def resolve(cls, estimator, sequences, method=None):
        """The plan of ``estimator`` (fitted, parameters checked) for ``sequences``,
        decoding by its ``decode`` or by ``method``, after checking that a decoder call
        fits in memory."""
        method, n_steps = method or estimator.decode, sequences.max_length
        requested = estimator.n_candidates
        if method == "greedy":
            n_candidates = 1
        elif method == "beam":
            n_candidates = _sizes.count_orderings(
                n_steps, estimator.ordered_subsets_, int(estimator.beam_width)
            )
        elif method == "multistart":
            n_candidates = n_steps if requested is None else min(int(requested), n_steps)
        else:
            n_candidates = n_steps if requested is None else int(requested)
        n_images = 8 if estimator.augment else 1
        check_augment(estimator.augment, sequences.n_features)
        if estimator.cost is not None:
            check_cost_applies(estimator.cost, estimator.ordered_subsets_)
        view = estimator._as_fitted()
        sampled = method == "sample"
        shared, per_lane = _sizes.decoding_numbers(view, n_steps, sampled)
        lanes = n_candidates
        if method != "beam":
            lanes = int(min(lanes, max(1, (_sizes.DECODER_NUMBERS - shared) // per_lane)))
        per_row = shared + lanes * per_lane
        rows = min(_sizes.DECODER_ROWS // lanes, _sizes.DECODER_NUMBERS // per_row)
        rows = max(rows, min(int(estimator.batch_size), _sizes.DECODER_NUMBERS // per_row))
        samples_per_call = power_of_two_at_most(max(rows // n_images, 1))
        samples_per_call = estimator._placement().inference.rows(samples_per_call)
        call_rows = samples_per_call * n_images
        view._check_memory(
            "decoding",
            call_rows * per_row + _sizes.encoding_count(view, call_rows, n_steps),
            longest_sequence=n_steps,
            decode=method,
            candidates=n_candidates,
            augment=estimator.augment,
        )
        seed = draw_seed(estimator.random_state) if sampled else None
        return cls(method, n_candidates, n_images, lanes, samples_per_call, seed)

    @property
    def decoder_key(self):
        """The key of the plan's decoder among the estimator's inference models."""
        kind = "beam" if self.method == "beam" else "lanes"
        return ("decoder", kind, self.lanes, self.method == "sample")

    def decoder(self, network):
        """A new decoder of ``network`` for this plan."""
        kind = "beam" if self.method == "beam" else "lanes"
        return PointerDecoder(network, kind, self.lanes, sampled=self.method == "sample")

    # ------------------------------------------------------------ candidates
    def _lane_starts(self, lengths):
        """Each image's first positions, one column per candidate: -1 (chosen by the
        network) for greedy and sampled orderings, given starts for multistart
        decoding; and which candidates are possible (distinct)."""
        n_rows = len(lengths)
        starts = np.full((n_rows, self.n_candidates), -1, dtype=np.int32)
        possible = np.ones(starts.shape, dtype=bool)
        if self.method == "multistart":
            column = np.arange(self.n_candidates)[None, :]
            length = lengths[:, None]
            # Up to n starts evenly spread over each sample; every start when it has
            # fewer elements than candidates.
            few = length <= self.n_candidates
            spread = column * length // self.n_candidates
            starts[:] = np.where(few, np.minimum(column, length - 1), spread)
            possible[:] = np.where(few, column < length, True)
        return starts, possible

    def _chunks(self, n_columns):
        """The decoder calls that decode ``n_columns`` candidates: each call's columns
        (the last call's spare lanes repeat the first columns, to keep one shape) and
        how many of its lanes are its own."""
        return [
            (np.arange(first, first + self.lanes) % n_columns, min(self.lanes, n_columns - first))
            for first in range(0, n_columns, self.lanes)
        ]

    def _noise_keys(self, batch, chunk):
        """The key of the Gumbel noise (:mod:`._noise`) of each image row in one call,
        drawn from a seed of the row's own content, so that a sample's candidates
        depend on the sample alone, not on the others in the call."""
        values, lengths = batch["values"], batch["lengths"]
        keys = np.empty(len(lengths), dtype=np.int32)
        for row, length in enumerate(lengths):
            content = zlib.crc32(np.ascontiguousarray(values[row, :length]).tobytes())
            keys[row] = np.random.default_rng([self.seed, content, chunk]).integers(2**31)
        return keys

    def candidates(self, estimator, decoder, batch):
        """Every candidate of a batch of image rows.

        Returns
        -------
        orderings : ndarray of shape (n_rows, n_columns, T)
        log_likelihood : ndarray of shape (n_rows, n_columns)
        possible : bool ndarray of shape (n_rows, n_columns)
        """
        n_rows, n_steps = batch["values"].shape[:2]
        if self.method == "beam":
            outputs = estimator._predict_on_batch(decoder, batch, n_rows)
            likelihood = np.asarray(outputs["log_likelihood"])
            return np.asarray(outputs["orderings"]), likelihood, likelihood > NEGATIVE_LOGIT / 2
        starts, possible = self._lane_starts(batch["lengths"])
        n_columns = starts.shape[1]
        orderings = np.empty((n_rows, n_columns, n_steps), dtype=np.int32)
        likelihood = np.empty((n_rows, n_columns), dtype=np.float32)
        for chunk, (columns, own) in enumerate(self._chunks(n_columns)):
            inputs = {**batch, "starts": starts[:, columns]}
            if self.method == "sample":
                inputs["noise_keys"] = self._noise_keys(batch, chunk)
            outputs = estimator._predict_on_batch(decoder, inputs, n_rows)
            orderings[:, columns[:own]] = np.asarray(outputs["orderings"])[:, :own]
            likelihood[:, columns[:own]] = np.asarray(outputs["log_likelihood"])[:, :own]
        return orderings, likelihood, possible


def _chosen(costs, likelihood, possible):
    """The column of each row's kept candidate: the cheapest possible one (costs
    within :data:`_COST_TIE` of each other tie), the likeliest among ties; without
    ``costs``, the likeliest."""
    likelihood = np.where(possible, likelihood, -np.inf)
    if costs is None:
        return np.argmax(likelihood, axis=1)
    costs = np.where(possible, costs, np.inf)
    cheapest = costs.min(axis=1, keepdims=True)
    tied = costs <= cheapest + _COST_TIE * np.maximum(np.abs(cheapest), 1.0)
    return np.argmax(np.where(tied, likelihood, -np.inf), axis=1)


def _candidate_costs(estimator, codec, orderings, possible, samples, ids):
    """The cost of every possible candidate (n, C, T) of the samples ``ids``, inf for
    the others."""
    sample, column = np.nonzero(possible)
    candidates = orderings[sample, column].astype(np.int64)
    candidates = codec.canonical(candidates, (candidates >= 0).sum(axis=1))
    costs = np.full(possible.shape, np.inf)
    costs[sample, column] = call_cost(
        estimator.cost, samples_at(samples, ids[sample]), candidates, ids[sample]
    )
    return costs


def _decoded_batches(estimator, plan, sequences):
    """Every candidate of every batch of the samples, decoded as ``plan`` says: for
    each batch, the index of its first sample, its image rows (the sample and its
    mirror images in turn), and the candidates of each sample, those of each of its
    images in turn (orderings (n, images * C, T), log-likelihoods and whether each is
    possible)."""
    per_call = plan.samples_per_call
    n_padded = estimator._inference_rows(sequences.n_samples, per_call)
    decoder = estimator._inference_model(
        plan.decoder_key, plan.decoder, n_padded * plan.n_images, sequences.max_length
    )
    inputs = PointerCodec.decoder_inputs(sequences, n_padded)
    with quiet_retracing():
        for first in range(0, n_padded, per_call):
            batch = take(inputs, slice(first, first + per_call))
            images = mirror_images(batch, plan.n_images) if plan.n_images > 1 else batch
            orderings, likelihood, possible = plan.candidates(estimator, decoder, images)
            n_rows = len(batch["lengths"])
            yield (
                first,
                images,
                orderings.reshape(n_rows, -1, orderings.shape[-1]),
                likelihood.reshape(n_rows, -1),
                possible.reshape(n_rows, -1),
            )


def _greedy_orderings(estimator, sequences):
    """The orderings and log-likelihoods of ``decode="greedy"`` (with the estimator's
    ``augment``), of shape (n_samples, images, T) and (n_samples, images)."""
    plan = DecodingPlan.resolve(estimator, sequences, "greedy")
    batches = list(_decoded_batches(estimator, plan, sequences))
    orderings = np.concatenate([b[2] for b in batches])[: sequences.n_samples]
    likelihood = np.concatenate([b[3] for b in batches])[: sequences.n_samples]
    return orderings, likelihood


def decode_sequences(estimator, sequences, codec, samples=None, distributions=True):
    """Orderings (and pointer distributions) of validated sequences, decoded by a
    fitted :class:`~skptr.PointerNetworkOrderer` as its ``decode``, ``n_candidates``,
    ``beam_width``, ``augment`` and ``cost`` say.

    Parameters
    ----------
    estimator : PointerNetworkOrderer
        A fitted estimator whose decoding parameters are checked.
    sequences : PaddedSequences
        Validated input sequences.
    codec : PointerCodec
        The estimator's codec.
    samples : array-like, optional
        The samples as a cost receives them (see :func:`~skptr.pointer._codec.given_form`);
        required with a cost.
    distributions : bool, default=True
        Whether to compute the pointer distributions along the kept orderings.

    Returns
    -------
    tuple
        What :meth:`PointerCodec.decode` returns: orderings, then distributions (None
        unless asked for).
    """
    plan = DecodingPlan.resolve(estimator, sequences)
    greedy = None if plan.method == "greedy" else _greedy_orderings(estimator, sequences)
    kept_orderings, kept_images = [], []
    for first, images, orderings, likelihood, possible in _decoded_batches(
        estimator, plan, sequences
    ):
        n_rows, n_columns = orderings.shape[:2]
        ids = np.arange(first, min(first + n_rows, sequences.n_samples))
        # The image each column of a sample's candidates was decoded from.
        column_image = np.repeat(np.arange(plan.n_images), n_columns // plan.n_images)
        if greedy is not None:  # the greedy orderings come first
            padding = n_rows - len(ids)
            extra = np.pad(greedy[0][ids], ((0, padding), (0, 0), (0, 0)), constant_values=-1)
            orderings = np.concatenate([extra, orderings], axis=1)
            likelihood = np.concatenate(
                [np.pad(greedy[1][ids], ((0, padding), (0, 0))), likelihood], axis=1
            )
            possible = np.concatenate([np.ones(extra.shape[:2], bool), possible], axis=1)
            column_image = np.concatenate([np.arange(plan.n_images), column_image])
        possible[len(ids) :] = False
        possible[len(ids) :, 0] = True  # padding rows keep any candidate
        costs = None
        if estimator.cost is not None and orderings.shape[1] > 1:
            costs = np.zeros(possible.shape)
            costs[: len(ids)] = _candidate_costs(
                estimator, codec, orderings[: len(ids)], possible[: len(ids)], samples, ids
            )
        column = _chosen(costs, likelihood, possible)
        rows = np.arange(n_rows)
        kept_orderings.append(orderings[rows, column])
        kept_images.append(take(images, rows * plan.n_images + column_image[column]))
    orderings = np.concatenate(kept_orderings)
    found = None
    if distributions:
        found = _distributions(estimator, kept_images, kept_orderings, len(orderings))
    return codec.decode(orderings, found, sequences.n_samples)


def _distributions(estimator, images, orderings, per_call):
    """The pointer distributions along the kept orderings of each batch, on the image
    each was decoded from."""
    scorer = estimator._inference_model(
        ("scorer",), PointerScorer, per_call, images[0]["values"].shape[1]
    )
    found = []
    with quiet_retracing():
        for batch, ordering in zip(images, orderings, strict=True):
            inputs = {**batch, "orderings": ordering}
            found.append(
                np.asarray(estimator._predict_on_batch(scorer, inputs, per_call)["distributions"])
            )
    return np.concatenate(found)
