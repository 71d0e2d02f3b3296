"""Training batches of the pointer network grouped by length and cut to their samples."""

import dataclasses

import keras
import numpy as np
import pytest

from skptr import PointerNetworkOrderer
from skptr import _base as skptr_base
from skptr._batches import EXTENT_STEP, LengthGroupedBatches
from skptr._training import COMPILE_POLICY
from skptr.pointer._codec import PointerCodec
from skptr.pointer._layers import PointerNetwork, masked_pointer_crossentropy


def _ordered_subsets(rng, lengths, n_features=2):
    """Random sets of the given sizes, each with a random ordered subset as target."""
    X = [rng.normal(size=(length, n_features)) for length in lengths]
    y = [rng.permutation(length)[: rng.integers(1, length + 1)] for length in lengths]
    return X, y


def _encoded(X, y, cycle=None):
    return PointerCodec.learn(X, y, cycle)[1]


@pytest.mark.parametrize(
    ("encoder", "bidirectional"), [("recurrent", True), ("recurrent", False), ("attention", True)]
)
def test_a_cut_batch_has_the_losses_of_the_padded_batch(encoder, bidirectional):
    rng = np.random.default_rng(0)
    X, y = _ordered_subsets(rng, [3, 5, 2, 4, 12])
    data = _encoded(X, y)
    network = PointerNetwork(
        hidden_size=8,
        bidirectional=bidirectional,
        encoder=encoder,
        n_heads=2,
        allow_end=True,
        seed=3,
    ).build_for(2)
    short = np.arange(4)  # the 12-element sample is left out of the cut batch
    inputs = {key: value[short] for key, value in data.inputs.items()}
    longest_target = int((data.targets[short] >= 0).sum(axis=1).max())
    cut_inputs, cut_targets = PointerCodec.trim_batch(
        inputs, data.targets[short], (5, longest_target)
    )
    assert cut_inputs["values"].shape == (4, 5, 2)
    assert cut_targets.shape == (4, longest_target)
    # The end of output moves from the padded length (12) to the cut one (5).
    ends = data.targets[short] == 12
    assert ends.sum() == 4
    np.testing.assert_array_equal(cut_targets[ends[:, :longest_target]], 5)
    assert not np.any(cut_targets == 12)
    padded_losses = masked_pointer_crossentropy(data.targets[short], network(inputs))
    cut_losses = masked_pointer_crossentropy(cut_targets, network(cut_inputs))
    np.testing.assert_allclose(np.asarray(cut_losses), np.asarray(padded_losses), rtol=1e-5)
    assert np.all(np.isfinite(np.asarray(cut_losses)))


def _batches(lengths, batch_size, seed=0, powers_of_two=False):
    rng = np.random.default_rng(1)
    data = _encoded(*_ordered_subsets(rng, lengths))
    extents = PointerCodec.training_extents(data)
    batches = LengthGroupedBatches(
        data, batch_size, seed, extents, PointerCodec.trim_batch, powers_of_two=powers_of_two
    )
    return data, batches


def _rounded(extent, full):
    return min(-(-extent // EXTENT_STEP) * EXTENT_STEP, full)


def test_grouped_batches_cover_the_samples_and_are_cut_to_their_longest_sample():
    lengths = np.random.default_rng(2).integers(2, 41, size=300)
    data, batches = _batches(lengths, batch_size=16)
    full_steps, full_outputs = data.inputs["values"].shape[1], data.targets.shape[1]
    assert full_steps == 40
    shapes = set()
    for _ in range(3):
        batches.shuffle()
        order = batches.epoch_order()
        assert order.shape == (19, 16)
        # Every sample is drawn once per epoch, then some again to fill the last batch.
        counts = np.bincount(order.ravel(), minlength=300)
        assert counts.min() == 1 and counts.sum() == 304
        for index in range(len(batches)):
            members = order[index]
            inputs, targets = batches.batch(index)
            steps = _rounded(int(data.lengths[members].max()), full_steps)
            outputs = _rounded(int((data.targets[members] >= 0).sum(axis=1).max()), full_outputs)
            assert inputs["values"].shape == (16, steps, 2)
            assert targets.shape == (16, outputs)
            assert inputs["targets"] is targets
            np.testing.assert_array_equal(inputs["values"], data.inputs["values"][members, :steps])
            expected = data.targets[members, :outputs].copy()
            expected[expected == full_steps] = steps
            np.testing.assert_array_equal(targets, expected)
            shapes.add((steps, outputs))
    # Sorted windows of 8 batches cut at about the eighths of 2..40 (rounded up to 8):
    # 27-28 steps on average (measured on seeds 0-2), where random batches of 16 take 40.
    cut_steps = [
        _rounded(int(data.lengths[members].max()), full_steps) for members in batches.epoch_order()
    ]
    assert np.mean(cut_steps) < 0.72 * full_steps
    assert len(shapes) <= 5 * 6  # input steps in 8..40 by 8, target steps in 8..41


def test_cuts_to_powers_of_two_meet_fewer_shapes():
    lengths = np.random.default_rng(2).integers(2, 41, size=300)
    data, batches = _batches(lengths, batch_size=16, powers_of_two=True)
    full_steps, full_outputs = data.inputs["values"].shape[1], data.targets.shape[1]
    assert full_steps == 40 and 32 < full_outputs <= 41
    shapes = set()
    for _ in range(3):
        batches.shuffle()
        for index, members in enumerate(batches.epoch_order()):
            inputs, targets = batches.batch(index)
            longest = int(data.lengths[members].max())
            steps = inputs["values"].shape[1]
            # The smallest of 8, 16, 32 and the full 40 that holds the longest sample.
            assert steps == min(s for s in (8, 16, 32, 40) if s >= longest)
            outputs = int((data.targets[members] >= 0).sum(axis=1).max())
            assert targets.shape[1] == min(s for s in (8, 16, 32, full_outputs) if s >= outputs)
            assert np.all(targets[targets >= 0] <= steps)
            shapes.add((steps, targets.shape[1]))
    assert len(shapes) <= 4 * 4


def test_grouped_batches_are_repeatable_and_change_between_epochs():
    lengths = np.random.default_rng(3).integers(2, 30, size=200)
    _, first = _batches(lengths, batch_size=8, seed=5)
    _, second = _batches(lengths, batch_size=8, seed=5)
    orders = []
    for batches in (first, second):
        batches.shuffle()
        orders.append(batches.epoch_order().copy())
    np.testing.assert_array_equal(orders[0], orders[1])
    first.shuffle()
    assert not np.array_equal(first.epoch_order(), orders[0])


def test_samples_of_one_length_make_the_plain_shuffled_batches():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(50, 6, 1))
    y = np.argsort(X[:, :, 0], axis=1)
    data = _encoded(X, y)
    batches = LengthGroupedBatches(
        data, 16, 0, PointerCodec.training_extents(data), PointerCodec.trim_batch
    )
    batches.shuffle()
    inputs, targets = batches.batch(0)
    assert inputs["values"].shape == (16, 6, 1) and targets.shape == (16, 6)


def test_fits_of_enough_steps_for_the_backend_cut_their_batches(monkeypatch):
    rng = np.random.default_rng(0)
    X = [rng.random(size) for size in rng.integers(2, 9, size=256)]
    y = [np.argsort(x) for x in X]
    backend = keras.backend.backend()
    for powers_of_two in (False, True):
        policy = dataclasses.replace(
            COMPILE_POLICY[backend],
            cut_batches_steps={"recurrent": 10, "attention": 10},
            cut_powers_of_two=powers_of_two,
        )
        monkeypatch.setitem(COMPILE_POLICY, backend, policy)
        for epochs, cut in ((4, False), (5, True)):  # 2 batches of 128 per epoch
            est = PointerNetworkOrderer(epochs=epochs)
            data, _ = est._prepare_training_data(X, y, reset=True)
            batches = est._training_batches(data, est.batch_size, 0)
            assert isinstance(batches, LengthGroupedBatches) is cut
            assert not cut or batches.powers_of_two is powers_of_two


@pytest.mark.parametrize("cut_on_accelerators", [False, True])
def test_on_an_accelerator_batches_are_cut_only_where_the_policy_says(
    monkeypatch, cut_on_accelerators
):
    rng = np.random.default_rng(1)
    X = [rng.random(size) for size in rng.integers(2, 9, size=256)]
    y = [np.argsort(x) for x in X]
    backend = keras.backend.backend()
    policy = dataclasses.replace(
        COMPILE_POLICY[backend],
        cut_batches_steps={"recurrent": 0, "attention": 0},
        cut_on_accelerators=cut_on_accelerators,
    )
    monkeypatch.setitem(COMPILE_POLICY, backend, policy)
    est = PointerNetworkOrderer(epochs=5)
    data, _ = est._prepare_training_data(X, y, reset=True)
    for accelerator, cut in ((False, True), (True, cut_on_accelerators)):
        monkeypatch.setattr(skptr_base, "on_accelerator", lambda a=accelerator: a)
        batches = est._training_batches(data, est.batch_size, 0)
        assert isinstance(batches, LengthGroupedBatches) is cut


def test_jax_keeps_padded_batches_on_accelerators_only():
    assert COMPILE_POLICY["jax"].cuts_batches("attention", 256, accelerator=False)
    assert not COMPILE_POLICY["jax"].cuts_batches("attention", 255, accelerator=False)
    assert not COMPILE_POLICY["jax"].cuts_batches("attention", 10**6, accelerator=True)
    assert COMPILE_POLICY["tensorflow"].cuts_batches("recurrent", 1, accelerator=True)


def _cutting_every_fit(monkeypatch):
    backend = keras.backend.backend()
    policy = dataclasses.replace(
        COMPILE_POLICY[backend], cut_batches_steps={"recurrent": 0, "attention": 0}
    )
    monkeypatch.setitem(COMPILE_POLICY, backend, policy)


def test_a_fit_in_cut_batches_runs_on_every_backend(monkeypatch):
    _cutting_every_fit(monkeypatch)
    rng = np.random.default_rng(5)
    X, y = _ordered_subsets(rng, [10] * 96)  # targets of 1-10 steps and the end: 2 cuts
    est = PointerNetworkOrderer(hidden_size=8, batch_size=16, epochs=2, random_state=0)
    est.fit(X, y)
    assert np.all(np.isfinite(est.history_["loss"]))
    prediction = est.predict(X[:5])
    for ordering, points in zip(prediction, X[:5], strict=True):
        chosen = ordering[ordering >= 0]
        assert len(set(chosen)) == len(chosen) and np.all(chosen < len(points))


@pytest.mark.skipif(
    keras.backend.backend() == "jax", reason="compiles a step per pair of lengths on JAX"
)
def test_sequences_of_mixed_lengths_train_in_grouped_batches_and_learn(monkeypatch):
    backend = keras.backend.backend()
    policy = dataclasses.replace(
        COMPILE_POLICY[backend], cut_batches_steps={"recurrent": 0, "attention": 0}
    )
    monkeypatch.setitem(COMPILE_POLICY, backend, policy)
    rng = np.random.default_rng(0)
    X = [rng.random(size) for size in rng.integers(2, 25, size=3000)]
    y = [np.argsort(x) for x in X]
    est = PointerNetworkOrderer(hidden_size=32, bidirectional=False, epochs=8, random_state=0)
    data, _ = est._prepare_training_data(X, y, reset=True)
    assert isinstance(est._training_batches(data, est.batch_size, 0), LengthGroupedBatches)
    est.fit(X, y)
    X_test = [rng.random(size) for size in rng.integers(2, 25, size=300)]
    y_test = [np.argsort(x) for x in X_test]
    assert est.score(X_test, y_test) > 0.9
