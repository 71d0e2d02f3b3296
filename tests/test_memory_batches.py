"""Training batches of the transducer: a length curriculum, each batch cut to its streams."""

import keras
import numpy as np
import pytest

from skptr.memory import NeuralStackTransducer
from skptr.memory._codec import TransducerCodec
from skptr.memory._curriculum import MIN_CUT_STEPS, CurriculumBatches
from skptr.memory._network import PAD, TokenCrossentropy, TransducerNetwork


def _numpy_pairs(rng, lengths, vocabulary=("a", "b", "c")):
    """Sources of the given lengths over ``vocabulary``, each target the source reversed
    with a random number (0-2) of extra tokens."""
    X = [list(rng.choice(vocabulary, size=n)) for n in lengths]
    y = [x[::-1] + list(rng.choice(vocabulary, size=rng.integers(0, 3))) for x in X]
    return X, y


def _encoded(X, y):
    return TransducerCodec.learn(X, y)[1]


def _power_of_two_cut(n_steps, widest):
    """The width a batch whose longest stream has ``n_steps`` steps is cut to, in a
    stage whose longest stream has ``widest``."""
    return min(max(8, 1 << (int(n_steps) - 1).bit_length()), widest)


def test_each_batch_is_cut_to_its_longest_stream_within_its_stage():
    rng = np.random.default_rng(0)
    lengths = rng.integers(4, 41, size=120)
    X, y = _numpy_pairs(rng, lengths)
    data = _encoded(X, y)
    extents = TransducerCodec.training_extents(data)
    # Source, separator and target (the end token is predicted at the last of them).
    expected_extents = np.array([len(a) + 1 + len(b) for a, b in zip(X, y, strict=True)])
    np.testing.assert_array_equal(extents, expected_extents)
    assert data.n_steps == expected_extents.max() >= MIN_CUT_STEPS

    batches = CurriculumBatches(data, 16, seed=0, extents=extents)
    assert batches.varying_steps
    assert batches.limits == [13, 22, 31, 40]  # a quarter of 4..40, then three stages
    widths = {}
    for stage, limit in enumerate(batches.limits):
        batches.stage = stage
        batches.shuffle()
        widths[stage] = []
        stage_longest = expected_extents[lengths <= limit].max()
        assert batches.stage_steps[stage] == stage_longest
        for index in range(len(batches)):
            members = batches.epoch_order()[index]
            inputs, targets = batches.batch(index)
            width = _power_of_two_cut(expected_extents[members].max(), stage_longest)
            assert inputs.shape == targets.shape == (16, width)
            assert data.lengths[members].max() <= limit
            np.testing.assert_array_equal(inputs, data.inputs[members, :width])
            np.testing.assert_array_equal(targets, data.targets[members, :width])
            # Only padding is cut away.
            assert np.all(data.inputs[members, width:] == PAD)
            assert np.all(data.targets[members, width:] == -1)
            widths[stage].append(width)
    # Samples of similar lengths share batches: in the last stage (every source
    # admitted, streams of 7-83 steps) 6 of the 8 batches are cut.
    assert sorted(set(widths[3])) == [16, 32, 64, data.n_steps]
    assert sum(w < data.n_steps for w in widths[3]) == 6
    # No batch is wider than its stage's longest stream (29 steps in the first).
    assert max(widths[0]) == expected_extents[lengths <= 13].max() == 29


@pytest.mark.parametrize("curriculum", [True, False])
@pytest.mark.parametrize("long_streams", [True, False])
def test_batches_keep_every_step_of_short_or_equal_streams(curriculum, long_streams):
    rng = np.random.default_rng(1)
    if long_streams:  # all of one length: nothing to cut
        X = [list(rng.choice(["a", "b"], size=40)) for _ in range(4)]
        y = [x[::-1] for x in X]
    else:
        X, y = _numpy_pairs(rng, [3, 9, 5, 7])
    data = _encoded(X, y)
    assert (data.n_steps >= MIN_CUT_STEPS) == long_streams
    batches = CurriculumBatches(
        data, 2, seed=0, curriculum=curriculum, extents=TransducerCodec.training_extents(data)
    )
    assert not batches.varying_steps
    assert len(batches.limits) == (4 if curriculum and not long_streams else 1)
    for stage in range(len(batches.limits)):
        batches.stage = stage
        batches.shuffle()
        inputs, targets = batches.batch(0)
        assert inputs.shape == targets.shape == (2, data.n_steps)


def test_batches_are_cut_also_without_the_curriculum():
    X, y = _numpy_pairs(np.random.default_rng(1), [3, 40, 5, 7])
    data = _encoded(X, y)
    extents = TransducerCodec.training_extents(data)
    batches = CurriculumBatches(data, 2, seed=0, curriculum=False, extents=extents)
    assert batches.varying_steps and batches.limits == [40]
    batches.shuffle()
    widths = sorted(batches.batch(index)[0].shape[1] for index in range(len(batches)))
    # The 40-token source shares its batch with one of the short ones.
    assert widths == [_power_of_two_cut(np.sort(extents)[1], data.n_steps), data.n_steps]


@pytest.mark.parametrize("memory", ["stack", "queue", "deque"])
def test_a_cut_batch_has_the_loss_and_gradients_of_the_full_batch(memory):
    rng = np.random.default_rng(2)
    X, y = _numpy_pairs(rng, [3, 5, 2, 4, 14])
    data = _encoded(X, y)
    extents = TransducerCodec.training_extents(data)
    short = np.arange(4)  # the 14-token source is left out of the cut batch
    n_steps = int(extents[short].max())
    assert n_steps < data.n_steps
    network = TransducerNetwork(
        3, 3, memory=memory, hidden_size=8, memory_width=4, push_bias=0.5, seed=4
    )
    network.build()
    loss = TokenCrossentropy()

    def loss_and_gradients(streams, labels):
        streams = keras.ops.convert_to_tensor(streams)
        if keras.backend.backend() == "jax":
            import jax

            def of(weights):
                values, _ = network.stateless_call(
                    weights, [v.value for v in network.non_trainable_variables], streams
                )
                return loss(labels, values)

            weights = [v.value for v in network.trainable_variables]
            value, gradients = jax.value_and_grad(of)(weights)
            return float(value), [np.asarray(g) for g in gradients]
        import tensorflow as tf

        with tf.GradientTape() as tape:
            value = loss(labels, network(streams))
        gradients = tape.gradient(value, network.trainable_variables)
        return float(value), [np.asarray(tf.convert_to_tensor(g)) for g in gradients]

    full = loss_and_gradients(data.inputs[short], data.targets[short])
    cut = loss_and_gradients(data.inputs[short, :n_steps], data.targets[short, :n_steps])
    assert np.isfinite(full[0]) and full[0] > 0
    np.testing.assert_allclose(cut[0], full[0], rtol=1e-5)
    assert len(cut[1]) == len(full[1]) > 0
    for cut_gradient, full_gradient in zip(cut[1], full[1], strict=True):
        np.testing.assert_allclose(cut_gradient, full_gradient, rtol=1e-4, atol=1e-6)
    assert any(np.abs(g).max() > 1e-4 for g in full[1])


def test_a_fit_trains_on_the_cut_batches_of_its_stages(monkeypatch):
    rng = np.random.default_rng(3)
    X, y = _numpy_pairs(rng, rng.integers(2, 41, size=64))
    data = _encoded(X, y)
    extents = TransducerCodec.training_extents(data)
    assert data.n_steps >= MIN_CUT_STEPS
    first_stage_longest = int(extents[data.lengths <= 12].max())
    seen = []
    batch = CurriculumBatches.batch

    def recorded(self, index):
        inputs, targets = batch(self, index)
        seen.append((inputs.shape, extents[self.epoch_order()[index]].max()))
        return inputs, targets

    monkeypatch.setattr(CurriculumBatches, "batch", recorded)
    est = NeuralStackTransducer(n_init=1, epochs=3, batch_size=16, random_state=0).fit(X, y)
    # Three epochs in the first stage (sources of up to a quarter of 2..40).
    assert est.history_["max_length"] == [12.0, 12.0, 12.0]
    assert len(seen) >= 3 * 4
    for shape, longest in seen:
        assert shape == (16, _power_of_two_cut(longest, first_stage_longest))
    assert max(shape[1] for shape, _ in seen) == first_stage_longest < data.n_steps
    assert np.all(np.isfinite(est.history_["loss"]))
