"""Layers, masking and decoding of the pointer network (no estimator training here)."""

import itertools
import math

import keras
import numpy as np
import pytest
from _marks import once
from hypothesis import given, settings
from hypothesis import strategies as st

from skptr.pointer import _decoding
from skptr.pointer._decoding import PointerDecoder, PointerScorer, beam_search, teacher_targets
from skptr.pointer._layers import (
    NEGATIVE_LOGIT,
    PointerAttention,
    PointerNetwork,
    masked_pointer_crossentropy,
)


def _network(allow_end=False, n_features=1, **kwargs):
    params = {"hidden_size": 8, "cell": "lstm", "bidirectional": True, "attention": "additive"}
    params.update(kwargs)
    return PointerNetwork(allow_end=allow_end, seed=0, **params).build_for(n_features)


def _softmax(logits):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return np.exp(shifted) / np.exp(shifted).sum(axis=-1, keepdims=True)


def _random_batch(rng, lengths, n_features=1):
    values = np.zeros((len(lengths), max(lengths), n_features), "float32")
    for i, length in enumerate(lengths):
        values[i, :length] = rng.normal(size=(length, n_features))
    return values, np.asarray(lengths, "int32")


@pytest.mark.parametrize("cell", ["lstm", "gru", "rnn"])
@pytest.mark.parametrize("attention", ["additive", "dot", "general"])
@pytest.mark.parametrize("bidirectional", [True, False])
@once
def test_teacher_forced_logits_shape(cell, attention, bidirectional):
    network = _network(cell=cell, attention=attention, bidirectional=bidirectional, num_layers=2)
    values, lengths = _random_batch(np.random.RandomState(0), [4, 2, 3])
    targets = np.array([[3, 0, 1, 2], [1, 0, -1, -1], [2, 1, 0, -1]], "int32")
    logits = network({"values": values, "lengths": lengths, "targets": targets})
    assert tuple(logits.shape) == (3, 4, 5)
    width = 16 if bidirectional else 8
    assert network.width == width


@pytest.mark.parametrize("encoder", ["recurrent", "attention"])
def test_a_shallower_decoder_starts_from_the_last_encoder_layers(encoder):
    network = _network(encoder=encoder, n_features=2, num_layers=3, decoder_layers=2, n_heads=2)
    assert len(network.decoder_layers) == 2
    values, lengths = _random_batch(np.random.default_rng(3), [4, 2], n_features=2)
    mask = np.arange(4)[None, :] < lengths[:, None]
    _, encoder_states = network.encoder(values, mask)
    _, _, states = network.encode(values, lengths)
    assert len(encoder_states) == 3 and len(states) == 2
    for layer, encoder_layer in zip(states, encoder_states[1:], strict=True):
        for state, encoder_state in zip(layer, encoder_layer, strict=True):
            np.testing.assert_array_equal(np.asarray(state), np.asarray(encoder_state))
    targets = np.array([[3, 0, 1, 2], [1, 0, -1, -1]], "int32")
    logits = network({"values": values, "lengths": lengths, "targets": targets})
    assert tuple(logits.shape) == (2, 4, 5)
    clone = PointerNetwork.from_config(network.get_config())
    assert len(clone.decoder_layers) == 2


def test_padding_chosen_and_end_positions_get_exactly_zero_probability():
    network = _network()
    values, lengths = _random_batch(np.random.RandomState(1), [4, 2])
    targets = np.array([[3, 0, 1, 2], [1, 0, -1, -1]], "int32")
    probabilities = _softmax(
        np.asarray(network({"values": values, "lengths": lengths, "targets": targets}))
    )
    # Sample 0, step 2: positions 3 and 0 were chosen before; end is not allowed.
    np.testing.assert_array_equal(probabilities[0, 2, [0, 3, 4]], 0.0)
    assert probabilities[0, 2, [1, 2]].sum() == pytest.approx(1.0, abs=1e-6)
    # Sample 1 has two real positions: padding 2, 3 and end are always impossible.
    np.testing.assert_array_equal(probabilities[1, :2, 2:], 0.0)
    np.testing.assert_array_equal(probabilities[1, 1, 1], 0.0)
    assert probabilities[1, 1, 0] == pytest.approx(1.0)


def test_end_position_is_allowed_for_ordered_subsets():
    network = _network(allow_end=True)
    values, lengths = _random_batch(np.random.RandomState(2), [3])
    targets = np.array([[2, 0, 3]], "int32")  # 3 == end of output
    probabilities = _softmax(
        np.asarray(network({"values": values, "lengths": lengths, "targets": targets}))
    )
    assert np.all(probabilities[0, :, 3] > 0)
    np.testing.assert_array_equal(probabilities[0, 1, 2], 0.0)
    np.testing.assert_array_equal(probabilities[0, 2, [0, 2]], 0.0)


def test_masked_crossentropy_ignores_padding_steps():
    logits = np.log(np.array([[[0.5, 0.5], [0.25, 0.75]]], "float32"))
    loss = masked_pointer_crossentropy(np.array([[0, -1]]), logits)
    assert float(loss[0]) == pytest.approx(np.log(2.0), rel=1e-6)
    loss = masked_pointer_crossentropy(np.array([[0, 1]]), logits)
    assert float(loss[0]) == pytest.approx((np.log(2.0) - np.log(0.75)) / 2, rel=1e-6)


def test_general_attention_matches_its_equation():
    attention = PointerAttention("general", width=3, seed=3)
    keys = np.random.RandomState(0).normal(size=(2, 4, 3)).astype("float32")
    queries = np.random.RandomState(1).normal(size=(2, 3)).astype("float32")
    scores = np.asarray(attention(queries, keys))
    weight = np.asarray(attention.key_projection.kernel)
    np.testing.assert_allclose(
        scores, np.einsum("ne,npd,de->np", queries, keys, weight), rtol=1e-5
    )


def _encoded(network, values, lengths):
    return network.encode(values, lengths, training=False)


def _greedy(network, values, lengths):
    """Greedy decoding: one lane per sample, every position chosen by the network."""
    orderings, log_likelihood = _decoding.decode_lanes(
        network, _encoded(network, values, lengths), lengths, 1
    )
    return np.asarray(orderings)[:, 0], np.asarray(log_likelihood)[:, 0]


def _beam(network, values, lengths, width):
    decoded = beam_search(network, _encoded(network, values, lengths), lengths, width)
    return tuple(np.asarray(t) for t in decoded)


def _noise_keys(values, seed):
    """A key of the sampling noise for each sample."""
    return np.random.default_rng(seed).integers(2**31, size=len(values)).astype("int32")


def _scored(network, values, lengths, orderings):
    """PointerScorer's distributions (n, T, T + 1) along ``orderings`` (n, T)."""
    inputs = {"values": values, "lengths": lengths, "orderings": np.asarray(orderings, "int32")}
    return np.asarray(PointerScorer(network)(inputs)["distributions"])


def _teacher_forced_log_likelihood(network, values, lengths, orderings):
    """Log-probability of each ordering (n, T) by teacher forcing, the end of output
    included where the network may end early."""
    orderings = np.asarray(orderings, "int32")
    targets = np.asarray(teacher_targets(orderings, lengths, network.allow_end))
    logits = np.asarray(network({"values": values, "lengths": lengths, "targets": targets}))
    log_probs = np.log(np.maximum(_softmax(logits), 1e-30))
    picked = np.take_along_axis(log_probs, np.maximum(targets, 0)[..., None], -1)[..., 0]
    return (picked * (targets >= 0)).sum(axis=1)


def _check_valid(orderings, lengths, allow_end):
    for row, length in zip(orderings, lengths, strict=True):
        real = row[row >= 0]
        assert len(set(real.tolist())) == len(real), row
        assert np.all(real < length), row
        n_real = len(real)
        assert np.all(row[n_real:] == -1), row  # -1 only after the end
        if not allow_end:
            assert n_real == length, row


def _n_orderings(length, allow_end):
    """How many orderings a sample of ``length`` has: its permutations, or with an end
    of output its ordered subsets (the empty one included)."""
    if not allow_end:
        return math.factorial(length)
    return sum(math.perm(length, k) for k in range(length + 1))


def _possible(log_likelihood):
    return log_likelihood > NEGATIVE_LOGIT / 2


# JAX compiles a decoder per new shape: a quarter of the examples there.
@settings(max_examples=12 if keras.backend.backend() == "tensorflow" else 3, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 7), min_size=1, max_size=5),
    allow_end=st.booleans(),
    beam_width=st.integers(1, 4),
    seed=st.integers(0, 1000),
)
def test_decoded_orderings_are_always_valid(lengths, allow_end, beam_width, seed):
    network = _VALIDITY_NETWORKS[allow_end]
    values, lengths = _random_batch(np.random.RandomState(seed), lengths)
    orderings, _ = _greedy(network, values, lengths)
    _check_valid(orderings, lengths, allow_end)
    # Padding and the positions chosen before get no probability along the way.
    distributions = _scored(network, values, lengths, orderings)
    for i, length in enumerate(lengths):
        np.testing.assert_array_equal(distributions[i, :, length:-1], 0.0)
        for t, position in enumerate(orderings[i]):
            if position >= 0:
                np.testing.assert_array_equal(distributions[i, t + 1 :, position], 0.0)
    # A beam holds every ordering of a short sample once, then impossible hypotheses.
    beam_orderings, beam_likelihood = _beam(network, values, lengths, beam_width)
    assert beam_orderings.shape == (len(lengths), beam_width, values.shape[1])
    assert np.all(np.diff(beam_likelihood, axis=1) <= 0)
    for i, length in enumerate(lengths):
        possible = _possible(beam_likelihood[i])
        assert possible.sum() == min(beam_width, _n_orderings(length, allow_end))
        assert np.all(possible[: possible.sum()])  # the possible ones first
        kept = beam_orderings[i][possible]
        _check_valid(kept, np.full(len(kept), length), allow_end)
        assert len({tuple(row) for row in kept.tolist()}) == len(kept)
    # Sampled lanes (training rollouts) and lanes with given first positions.
    n_lanes = 3
    encoded = _encoded(network, values, lengths)
    sampled, _ = _decoding.decode_lanes(
        network, encoded, lengths, n_lanes, noise_keys=_noise_keys(values, seed)
    )
    starts = np.random.RandomState(seed).randint(-1, 7, size=(len(lengths), n_lanes))
    starts = np.where(starts < lengths[:, None], starts, -1).astype("int32")
    started, _ = _decoding.decode_lanes(network, encoded, lengths, n_lanes, starts=starts)
    for decoded in (sampled, started):
        decoded = np.asarray(decoded)
        assert decoded.shape == (len(lengths), n_lanes, values.shape[1])
        _check_valid(decoded.reshape(-1, values.shape[1]), np.repeat(lengths, n_lanes), allow_end)
    given = starts >= 0
    np.testing.assert_array_equal(np.asarray(started)[..., 0][given], starts[given])


_VALIDITY_NETWORKS = {flag: _network(allow_end=flag) for flag in (False, True)}


@pytest.mark.parametrize(
    ("allow_end", "glimpses", "encoder"),
    [
        (False, 0, "recurrent"),
        (True, 0, "recurrent"),
        (True, 1, "recurrent"),
        (True, 0, "attention"),
    ],
)
def test_beam_width_one_equals_greedy(allow_end, glimpses, encoder):
    network = _network(allow_end=allow_end, hidden_size=16, glimpses=glimpses, encoder=encoder)
    values, lengths = _random_batch(np.random.RandomState(4), [6, 3, 5, 1, 6, 2, 4, 6])
    greedy = _greedy(network, values, lengths)
    beam = _beam(network, values, lengths, 1)
    np.testing.assert_array_equal(greedy[0], beam[0][:, 0])
    np.testing.assert_allclose(greedy[1], beam[1][:, 0], rtol=1e-5)
    # Each greedy choice is the most probable one of its step's distribution.
    distributions = _scored(network, values, lengths, greedy[0])
    for i, length in enumerate(lengths):
        n_real = int((greedy[0][i] >= 0).sum())
        np.testing.assert_array_equal(distributions[i, :n_real].argmax(-1), greedy[0][i, :n_real])
        if n_real < length:  # it ended early: the end was the most probable
            assert distributions[i, n_real].argmax() == values.shape[1]


def test_exhaustive_beam_finds_the_most_likely_permutation():
    network = _network(hidden_size=16)
    values, lengths = _random_batch(np.random.RandomState(5), [4, 4, 4])
    permutations = np.array(list(itertools.permutations(range(4))), "int32")
    orderings, log_likelihood = _beam(network, values, lengths, 24)
    for i in range(len(values)):
        all_scores = _teacher_forced_log_likelihood(
            network,
            np.repeat(values[i : i + 1], 24, 0),
            np.repeat(lengths[i : i + 1], 24),
            permutations,
        )
        best = permutations[np.argmax(all_scores)]
        np.testing.assert_array_equal(orderings[i, 0], best)
        assert float(log_likelihood[i, 0]) == pytest.approx(all_scores.max(), abs=1e-4)


def _peaked_network(**kwargs):
    """A small network whose pointer distributions are far from uniform."""
    network = _network(hidden_size=16, **kwargs)
    for weight in network.attention.weights:
        weight.assign(weight * 4)
    return network


def test_a_beam_as_wide_as_all_permutations_is_an_exhaustive_search():
    network = _peaked_network()
    values, lengths = _random_batch(np.random.RandomState(11), [5, 5, 5])
    permutations = np.array(list(itertools.permutations(range(5))), "int32")
    width = len(permutations)  # 5! = 120: every partial permutation stays in the beam
    orderings, log_likelihood = _beam(network, values, lengths, width)
    for i in range(len(values)):
        all_scores = _teacher_forced_log_likelihood(
            network,
            np.repeat(values[i : i + 1], width, 0),
            np.repeat(lengths[i : i + 1], width),
            permutations,
        )
        ranked = np.sort(all_scores)[::-1]
        assert ranked[0] > np.log(3 / width)  # peaked: thrice a uniform draw's 1 / 120 at least
        assert ranked[0] - ranked[1] > 1e-3  # a unique most likely ordering
        np.testing.assert_array_equal(orderings[i, 0], permutations[np.argmax(all_scores)])
        assert float(log_likelihood[i, 0]) == pytest.approx(ranked[0], abs=1e-4)
        # The final beam is every permutation, once each, most likely first.
        assert {tuple(row) for row in orderings[i].tolist()} == {
            tuple(p) for p in permutations.tolist()
        }
        np.testing.assert_allclose(log_likelihood[i], ranked, atol=1e-4)


@pytest.mark.parametrize(
    ("allow_end", "glimpses", "encoder"), [(False, 0, "recurrent"), (True, 1, "attention")]
)
def test_beam_log_likelihoods_of_long_inputs_match_teacher_forcing(allow_end, glimpses, encoder):
    network = _network(allow_end=allow_end, hidden_size=16, glimpses=glimpses, encoder=encoder)
    values, lengths = _random_batch(np.random.RandomState(12), [30, 17, 30, 4])
    width = 4
    orderings, log_likelihood = _beam(network, values, lengths, width)
    assert _possible(log_likelihood).all()
    flat = orderings.reshape(-1, 30)
    _check_valid(flat, np.repeat(lengths, width), allow_end)
    expected = _teacher_forced_log_likelihood(
        network, np.repeat(values, width, 0), np.repeat(lengths, width), flat
    )
    np.testing.assert_allclose(log_likelihood.reshape(-1), expected, atol=1e-3)
    assert np.all(np.diff(log_likelihood, axis=1) <= 0)


@pytest.mark.parametrize(
    ("glimpses", "encoder"), [(0, "recurrent"), (2, "recurrent"), (0, "attention")]
)
def test_decoder_log_likelihood_matches_teacher_forcing(glimpses, encoder):
    network = _network(hidden_size=16, glimpses=glimpses, encoder=encoder)
    values, lengths = _random_batch(np.random.RandomState(6), [5, 3])
    orderings, log_likelihood = _greedy(network, values, lengths)
    expected = _teacher_forced_log_likelihood(network, values, lengths, orderings)
    np.testing.assert_allclose(log_likelihood, expected, atol=1e-4)
    orderings, log_likelihood = _beam(network, values, lengths, 3)
    for k in range(3):
        expected = _teacher_forced_log_likelihood(network, values, lengths, orderings[:, k])
        np.testing.assert_allclose(log_likelihood[:, k], expected, atol=1e-4)


def _reference_decode(network, values, lengths, beam_width):
    """Beam search written out step by step, each hypothesis carrying its whole history.

    With ``beam_width=1`` this is greedy decoding. Returns, for each sample, its final
    hypotheses, most likely first (fewer than ``beam_width`` for a sample with fewer
    orderings), as dicts with their ``ordering``, the ``distributions`` of their steps
    and their log-likelihood ``score``.
    """
    keys, valid, states = network.encode(values, lengths, training=False)
    keys, valid = np.asarray(keys), np.asarray(valid)
    states = [[np.asarray(s) for s in layer] for layer in states]
    n_pointers = keys.shape[1]
    n_steps = n_pointers - 1
    beams = [
        [
            {
                "score": np.float32(0.0),
                "states": [[s[i] for s in layer] for layer in states],
                "previous": -1,
                "chosen": np.zeros(n_pointers, bool),
                "finished": False,
                "ordering": [],
                "distributions": [],
            }
        ]
        for i in range(len(keys))
    ]
    for _ in range(n_steps):
        flat = [hypothesis for sample in beams for hypothesis in sample]
        rows = [i for i, sample in enumerate(beams) for _ in sample]
        batch_keys = keys[rows]
        previous = np.array([h["previous"] for h in flat], "int32")
        batch_states = [
            [np.stack([h["states"][k][j] for h in flat]) for j in range(len(layer))]
            for k, layer in enumerate(states)
        ]
        output, new_states = network.decoder_step(
            network.decoder_inputs(batch_keys, previous), batch_states
        )
        allowed = valid[rows].astype(bool) & ~np.stack([h["chosen"] for h in flat])
        logits = network.pointer_logits(
            output, batch_keys, network.prepare_keys(batch_keys), allowed
        )
        log_probs = np.asarray(keras.ops.log_softmax(logits, axis=-1))
        new_states = [[np.asarray(s) for s in layer] for layer in new_states]
        offset = 0
        for i, sample in enumerate(beams):
            candidates = []
            for f in range(offset, offset + len(sample)):
                if flat[f]["finished"]:
                    candidates.append((flat[f]["score"], f, None))
                else:
                    candidates.extend(
                        (flat[f]["score"] + log_probs[f, p], f, p)
                        for p in np.flatnonzero(allowed[f])
                    )
            offset += len(sample)
            candidates.sort(key=lambda candidate: -candidate[0])
            extended = []
            for score, f, p in candidates[:beam_width]:
                parent = flat[f]
                if p is None:
                    extended.append(
                        dict(
                            parent,
                            ordering=[*parent["ordering"], -1],
                            distributions=[*parent["distributions"], np.zeros(n_pointers)],
                        )
                    )
                    continue
                chosen = parent["chosen"].copy()
                chosen[p] = True
                extended.append(
                    {
                        "score": score,
                        "states": [[s[f] for s in layer] for layer in new_states],
                        "previous": p,
                        "chosen": chosen,
                        "finished": p == n_steps or chosen[:n_steps].sum() >= lengths[i],
                        "ordering": [*parent["ordering"], -1 if p == n_steps else p],
                        "distributions": [*parent["distributions"], np.exp(log_probs[f])],
                    }
                )
            beams[i] = extended
    return [sorted(sample, key=lambda h: -h["score"]) for sample in beams]


@pytest.mark.parametrize(
    ("allow_end", "glimpses", "beam_width"),
    [(False, 0, 1), (False, 0, 3), (True, 0, 3), (True, 1, 4)],
)
def test_decoders_match_a_step_by_step_reference(allow_end, glimpses, beam_width):
    network = _network(allow_end=allow_end, hidden_size=16, glimpses=glimpses, cell="gru")
    values, lengths = _random_batch(np.random.RandomState(8), [6, 3, 5, 1, 6, 2, 4])
    expected = _reference_decode(network, values, lengths, beam_width)
    inputs = {"values": values, "lengths": lengths}
    model = PointerDecoder(network, "beam", beam_width).predict_on_batch(inputs)
    assert model["orderings"].shape == (7, beam_width, 6)
    assert model["log_likelihood"].shape == (7, beam_width)
    decoders = {
        "direct": _beam(network, values, lengths, beam_width),
        "model": (model["orderings"], model["log_likelihood"]),
    }
    greedy = _greedy(network, values, lengths)
    if beam_width == 1:
        decoders["greedy"] = greedy[0][:, None], greedy[1][:, None]
    for name, (orderings, log_likelihood) in decoders.items():
        orderings, log_likelihood = np.asarray(orderings), np.asarray(log_likelihood)
        assert orderings.dtype == np.int32, name
        assert orderings.shape == (7, beam_width, 6), name
        for i, hypotheses in enumerate(expected):
            n_kept = len(hypotheses)
            np.testing.assert_array_equal(
                orderings[i, :n_kept], [h["ordering"] for h in hypotheses], err_msg=name
            )
            np.testing.assert_allclose(
                log_likelihood[i, :n_kept], [h["score"] for h in hypotheses], rtol=1e-5
            )
            assert np.all(log_likelihood[i, n_kept:] < NEGATIVE_LOGIT / 2), name
    # The distributions along the most likely ordering, recomputed by teacher forcing,
    # are the ones the step-by-step decoding saw, and the log-likelihood adds up their
    # logs along the path: the chosen positions, then the end of output for a sample
    # that ended early.
    orderings, log_likelihood = decoders["direct"]
    distributions = _scored(network, values, lengths, orderings[:, 0])
    assert distributions.shape == (7, 6, 7)
    for i, length in enumerate(lengths):
        n_real = int((orderings[i, 0] >= 0).sum())
        n_path = n_real + (n_real < length)
        path = [distributions[i, t, orderings[i, 0, t]] for t in range(n_real)]
        if n_real < length:
            path.append(distributions[i, n_real, -1])
        reference = np.array(expected[i][0]["distributions"], "float32")
        np.testing.assert_allclose(
            distributions[i, :n_path], reference[:n_path], rtol=1e-5, atol=1e-7
        )
        assert log_likelihood[i, 0] == pytest.approx(np.log(path).sum(), abs=1e-4)
        np.testing.assert_allclose(distributions[i, :n_path].sum(axis=-1), 1.0, atol=1e-5)
        # Nothing has any probability after the end.
        np.testing.assert_array_equal(distributions[i, n_path:], 0.0)


def test_decoder_models_match_the_direct_decoding():
    network = _network(allow_end=True, hidden_size=8)
    values, lengths = _random_batch(np.random.RandomState(13), [5, 2, 4, 1])
    n_lanes = 3
    starts = np.array([[-1, 0, 4], [-1, 1, -1], [2, -1, 3], [0, -1, -1]], "int32")
    keys = _noise_keys(values, seed=5)
    inputs = {"values": values, "lengths": lengths, "starts": starts}
    encoded = _encoded(network, values, lengths)
    cases = {
        "lanes": (
            PointerDecoder(network, "lanes", n_lanes),
            inputs,
            _decoding.decode_lanes(network, encoded, lengths, n_lanes, starts=starts),
        ),
        "sampled": (
            PointerDecoder(network, "lanes", n_lanes, sampled=True),
            {**inputs, "noise_keys": keys},
            _decoding.decode_lanes(
                network, encoded, lengths, n_lanes, starts=starts, noise_keys=keys
            ),
        ),
    }
    for name, (decoder, decoder_inputs, (orderings, log_likelihood)) in cases.items():
        outputs = decoder.predict_on_batch(decoder_inputs)
        np.testing.assert_array_equal(outputs["orderings"], np.asarray(orderings), err_msg=name)
        np.testing.assert_allclose(
            outputs["log_likelihood"], np.asarray(log_likelihood), rtol=1e-5, err_msg=name
        )
        given = starts >= 0
        np.testing.assert_array_equal(outputs["orderings"][..., 0][given], starts[given])


def test_lanes_with_given_starts_continue_greedily():
    network = _network(hidden_size=16)
    values, lengths = _random_batch(np.random.RandomState(14), [5, 3, 5])
    starts = np.array([[-1, 0, 2, 4], [-1, 2, 1, 0], [3, -1, 1, 0]], "int32")
    orderings, log_likelihood = (
        np.asarray(t)
        for t in _decoding.decode_lanes(
            network, _encoded(network, values, lengths), lengths, 4, starts=starts
        )
    )
    greedy = _greedy(network, values, lengths)
    flat = orderings.reshape(-1, 5)
    rows = np.repeat(np.arange(3), 4)
    _check_valid(flat, lengths[rows], allow_end=False)
    for i, lane in zip(*np.nonzero(starts < 0), strict=True):  # chosen by the network
        np.testing.assert_array_equal(orderings[i, lane], greedy[0][i])
        assert log_likelihood[i, lane] == pytest.approx(greedy[1][i], rel=1e-5)
    given = starts >= 0
    np.testing.assert_array_equal(orderings[..., 0][given], starts[given])
    # After its start each lane takes the most probable position; its log-likelihood
    # counts the probability of the start too.
    distributions = _scored(network, values[rows], lengths[rows], flat)
    for row, ordering in enumerate(flat):
        n_real = int(lengths[rows[row]])
        np.testing.assert_array_equal(distributions[row, 1:n_real].argmax(-1), ordering[1:n_real])
    expected = _teacher_forced_log_likelihood(network, values[rows], lengths[rows], flat)
    np.testing.assert_allclose(log_likelihood.reshape(-1), expected, atol=1e-4)


@pytest.mark.parametrize("allow_end", [False, True])
def test_sampling_with_zero_noise_is_greedy(allow_end, monkeypatch):
    # Sampled lanes differ from greedy ones by the noise added to their logits alone.
    monkeypatch.setattr(
        _decoding,
        "gumbel_step_noise",
        lambda keys, step, lanes, positions: keras.ops.zeros(
            (keras.ops.shape(keys)[0], lanes, positions)
        ),
    )
    network = _network(allow_end=allow_end, hidden_size=16)
    values, lengths = _random_batch(np.random.RandomState(15), [6, 3, 1, 5])
    encoded = _encoded(network, values, lengths)
    keys = _noise_keys(values, seed=0)
    orderings, log_likelihood = (
        np.asarray(t)
        for t in _decoding.decode_lanes(network, encoded, lengths, 2, noise_keys=keys)
    )
    greedy = _greedy(network, values, lengths)
    for lane in range(2):
        np.testing.assert_array_equal(orderings[:, lane], greedy[0])
        np.testing.assert_allclose(log_likelihood[:, lane], greedy[1], rtol=1e-5)
    decoder = PointerDecoder(network, "lanes", 2, sampled=True)
    outputs = decoder.predict_on_batch(
        {
            "values": values,
            "lengths": lengths,
            "starts": np.full((4, 2), -1, "int32"),
            "noise_keys": keys,
        }
    )
    np.testing.assert_array_equal(outputs["orderings"], orderings)
    np.testing.assert_allclose(outputs["log_likelihood"], log_likelihood, rtol=1e-5)


def test_decoder_model_runs_compiled_and_handles_new_lengths():
    network = _network(hidden_size=8)
    values, lengths = _random_batch(np.random.RandomState(7), [9, 12, 3])
    decoder = PointerDecoder(network, "beam", 3)
    outputs = decoder.predict({"values": values, "lengths": lengths}, verbose=0, batch_size=2)
    assert outputs["orderings"].shape == (3, 3, 12)
    assert outputs["log_likelihood"].shape == (3, 3)
    _check_valid(outputs["orderings"].reshape(-1, 12), np.repeat(lengths, 3), allow_end=False)
    sampler = PointerDecoder(network, "lanes", 2, sampled=True)
    starts = np.full((3, 2), -1, "int32")
    inputs = {"values": values, "lengths": lengths, "starts": starts}
    outputs = sampler.predict({**inputs, "noise_keys": _noise_keys(values, seed=1)}, verbose=0)
    assert outputs["orderings"].shape == (3, 2, 12)
    _check_valid(outputs["orderings"].reshape(-1, 12), np.repeat(lengths, 2), allow_end=False)


def test_the_compiled_decoder_runs_the_decoding_once_on_its_first_call(monkeypatch):
    # An unbuilt wrapper would be run once more outside the compiled function, to
    # build it (Keras' predict_on_batch on JAX): a whole decoding more.
    runs = []
    decode_lanes = _decoding.decode_lanes

    def counted(*args, **kwargs):
        runs.append(args)
        return decode_lanes(*args, **kwargs)

    monkeypatch.setattr(_decoding, "decode_lanes", counted)
    network = _network(hidden_size=8)
    decoder = PointerDecoder(network, "lanes", 1)
    decoder.compile(jit_compile=True)
    values, lengths = _random_batch(np.random.RandomState(3), [5, 2, 4])
    outputs = decoder.predict_on_batch(
        {"values": values, "lengths": lengths, "starts": np.full((3, 1), -1, "int32")}
    )
    assert len(runs) == 1
    expected = decode_lanes(network, _encoded(network, values, lengths), lengths, 1)
    np.testing.assert_array_equal(outputs["orderings"], np.asarray(expected[0]))


def test_glimpses_match_their_equation_and_look_at_allowed_positions_only():
    network = _network(attention="dot", glimpses=2)
    rng = np.random.RandomState(8)
    keys = rng.normal(size=(2, 5, network.width)).astype("float32")
    queries = rng.normal(size=(2, network.width)).astype("float32")
    allowed = np.array([[True, False, True, True, False], [False, True, True, False, True]])
    logits = np.asarray(network.pointer_logits(queries, keys, network.prepare_keys(keys), allowed))
    expected = queries
    for _ in range(2):
        scores = np.where(allowed, np.einsum("nd,npd->np", expected, keys), -np.inf)
        expected = np.einsum("np,npd->nd", _softmax(scores), keys)
    expected_logits = np.einsum("nd,npd->np", expected, keys)
    np.testing.assert_allclose(logits[allowed], expected_logits[allowed], rtol=1e-4, atol=1e-5)
    assert np.all(_softmax(logits)[~allowed] == 0.0)


def test_glimpses_ignore_the_encodings_of_disallowed_positions():
    network = _network(glimpses=1)
    rng = np.random.RandomState(9)
    keys = rng.normal(size=(1, 4, network.width)).astype("float32")
    queries = rng.normal(size=(1, 3, network.width)).astype("float32")
    allowed = np.array(
        [[[True, True, True, False], [True, False, True, False], [False, False, True, False]]]
    )
    changed = keys.copy()
    changed[0, 3] = rng.normal(size=network.width)
    before, after = (
        np.asarray(network.pointer_logits(queries, k, network.prepare_keys(k), allowed))
        for k in (keys, changed)
    )
    np.testing.assert_allclose(before[allowed], after[allowed], rtol=1e-5)


def test_glimpses_leave_the_other_initial_weights_unchanged():
    plain, glimpsing = (
        {w.path.split("/", 1)[1]: np.asarray(w) for w in network.weights}
        for network in (_network(), _network(glimpses=1))
    )
    extra = set(glimpsing) - set(plain)
    assert extra and all(path.startswith("glimpse/") for path in extra)
    for path, weight in plain.items():
        np.testing.assert_array_equal(weight, glimpsing[path])


@pytest.mark.parametrize("attention", ["additive", "dot", "general"])
def test_clipped_logits_are_the_tanh_of_the_scores_bounded_by_the_clip(attention):
    plain, clipped = (_network(attention=attention, logit_clip=c) for c in (None, 0.5))
    rng = np.random.RandomState(10)
    keys = rng.normal(size=(2, 5, plain.width)).astype("float32") * 30  # large scores
    queries = rng.normal(size=(2, 3, plain.width)).astype("float32")
    allowed = np.array([[True, True, False, True, True], [True, False, True, True, False]])
    allowed = np.repeat(allowed[:, None, :], 3, axis=1)
    scores, logits = (
        np.asarray(network.pointer_logits(queries, keys, network.prepare_keys(keys), allowed))
        for network in (plain, clipped)
    )
    divisor = 1.0 if attention == "additive" else np.sqrt(plain.width)  # width 16
    expected = 0.5 * np.tanh(scores / divisor)
    np.testing.assert_allclose(logits[allowed], expected[allowed], rtol=1e-5, atol=1e-6)
    assert np.abs(logits[allowed]).max() <= 0.5
    assert np.abs(scores[allowed] / divisor).max() > 1.0  # where tanh bends
    assert np.all(_softmax(logits)[~allowed] == 0.0)


def test_network_config_round_trip():
    network = _network(attention="dot", cell="gru", glimpses=2, logit_clip=10)
    clone = PointerNetwork.from_config(network.get_config())
    assert clone.get_config() == network.get_config()
    assert isinstance(keras.saving.get_registered_object("skptr>PointerNetwork"), type)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_attention_encoder_is_blind_to_the_order_of_the_input(cell):
    network = _network(encoder="attention", n_features=2, cell=cell, num_layers=2, n_heads=4)
    rng = np.random.default_rng(1)
    values, lengths = _random_batch(rng, [6, 6, 6], n_features=2)
    permutation = rng.permutation(6)
    keys, valid, states = network.encode(values, lengths)
    permuted_keys, _, permuted_states = network.encode(values[:, permutation], lengths)
    # Positions move with their elements; the end element and the states stay put.
    np.testing.assert_allclose(
        np.asarray(permuted_keys)[:, :6], np.asarray(keys)[:, permutation], atol=1e-5
    )
    np.testing.assert_allclose(np.asarray(permuted_keys)[:, 6], np.asarray(keys)[:, 6])
    assert len(states) == 2 and len(states[0]) == (2 if cell == "lstm" else 1)
    for layer, permuted_layer in zip(states, permuted_states, strict=True):
        for state, permuted in zip(layer, permuted_layer, strict=True):
            np.testing.assert_allclose(np.asarray(permuted), np.asarray(state), atol=1e-5)
    assert np.asarray(valid)[:, :6].all()
    # Teacher-forced logits of a permuted input are the permuted logits.
    targets = np.argsort(values[:, :, 0], axis=1).astype("int32")
    logits = network({"values": values, "lengths": lengths, "targets": targets})
    inverse = np.argsort(permutation)
    permuted_logits = network(
        {"values": values[:, permutation], "lengths": lengths, "targets": inverse[targets]}
    )
    np.testing.assert_allclose(
        np.asarray(permuted_logits)[:, :, :6], np.asarray(logits)[:, :, permutation], atol=1e-4
    )


def test_attention_encoder_ignores_padding():
    network = _network(encoder="attention", n_features=2, num_layers=2, n_heads=2)
    rng = np.random.default_rng(2)
    values, lengths = _random_batch(rng, [4, 4], n_features=2)
    padded = np.concatenate([values, rng.normal(size=(2, 3, 2)).astype("float32")], axis=1)
    keys, _, states = network.encode(values, lengths)
    padded_keys, valid, padded_states = network.encode(padded, lengths)
    np.testing.assert_allclose(np.asarray(padded_keys)[:, :4], np.asarray(keys)[:, :4], atol=1e-5)
    np.testing.assert_allclose(
        np.asarray(padded_states[0][0]), np.asarray(states[0][0]), atol=1e-5
    )
    assert not np.asarray(valid)[:, 4:7].any()


def test_the_training_rollouts_follow_the_pointer_distribution():
    network = _network(hidden_size=16)
    values, lengths = _random_batch(np.random.RandomState(7), [3, 2])
    for weight in network.attention.weights:  # a distribution far from uniform
        weight.assign(weight * 4)
    n_draws = 1500  # lanes of each sample, sharing its encodings

    def draw():
        decoded = _decoding.decode_lanes(
            network,
            _encoded(network, values, lengths),
            lengths,
            n_draws,
            noise_keys=_noise_keys(values, seed=3),
        )
        return [np.asarray(t) for t in decoded]

    orderings, log_likelihood = draw()
    assert orderings.shape == (2, n_draws, 3)
    flat, rows = orderings.reshape(-1, 3), np.repeat(np.arange(2), n_draws)
    _check_valid(flat, lengths[rows], allow_end=False)
    expected = _teacher_forced_log_likelihood(network, values[rows], lengths[rows], flat)
    np.testing.assert_allclose(log_likelihood.reshape(-1), expected, atol=1e-4)
    permutations = np.array(list(itertools.permutations(range(3))), "int32")
    probabilities = np.exp(
        _teacher_forced_log_likelihood(
            network, np.repeat(values[:1], 6, 0), np.full(6, 3, "int32"), permutations
        )
    )
    drawn = orderings[0]
    frequencies = [np.mean(np.all(drawn == p, axis=1)) for p in permutations]
    assert probabilities.max() > 0.3  # the check below is not one of a uniform draw
    np.testing.assert_allclose(frequencies, probabilities, atol=0.05)
    np.testing.assert_array_equal(draw()[0], orderings)  # an int seed fixes the draws
