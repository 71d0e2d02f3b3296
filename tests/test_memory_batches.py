"""Training batches of the transducer: a length curriculum, each stage cut to its streams."""

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


def test_each_stage_cuts_its_batches_to_its_longest_stream():
    rng = np.random.default_rng(0)
    lengths = rng.integers(4, 41, size=120)
    X, y = _numpy_pairs(rng, lengths)
    data = _encoded(X, y)
    extents = TransducerCodec.training_extents(data)
    # Source, separator and target (the end token is predicted at the last of them).
    expected_extents = [len(a) + 1 + len(b) for a, b in zip(X, y, strict=True)]
    np.testing.assert_array_equal(extents, expected_extents)
    assert data.n_steps == max(expected_extents)

    batches = CurriculumBatches(data, 16, seed=0, extents=extents)
    assert batches.varying_steps
    assert batches.limits == [13, 22, 31, 40]  # a quarter of 4..40, then three stages
    for stage, limit in enumerate(batches.limits):
        batches.stage = stage
        batches.shuffle()
        longest = max(e for e, n in zip(expected_extents, lengths, strict=True) if n <= limit)
        for index in range(len(batches)):
            members = batches.epoch_order()[index]
            inputs, targets = batches.batch(index)
            assert inputs.shape == targets.shape == (16, longest)
            assert data.lengths[members].max() <= limit
            np.testing.assert_array_equal(inputs, data.inputs[members, :longest])
            np.testing.assert_array_equal(targets, data.targets[members, :longest])
            # Only padding is cut away.
            assert np.all(data.inputs[members, longest:] == PAD)
            assert np.all(data.targets[members, longest:] == -1)
    assert batches.stage_steps[-1] == data.n_steps


@pytest.mark.parametrize(
    ("curriculum", "lengths"),
    [(False, [3, 40, 5, 7]), (True, [40, 40, 40, 40]), (True, [3, 9, 5, 7])],
)
def test_batches_keep_every_step_without_stages_or_long_streams(curriculum, lengths):
    X, y = _numpy_pairs(np.random.default_rng(1), lengths)
    data = _encoded(X, y)
    batches = CurriculumBatches(
        data, 2, seed=0, curriculum=curriculum, extents=TransducerCodec.training_extents(data)
    )
    assert not batches.varying_steps
    assert len(batches.limits) == 1 or data.n_steps < MIN_CUT_STEPS
    inputs, targets = batches.batch(0)
    assert inputs.shape == targets.shape == (2, data.n_steps)


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
    assert data.n_steps >= MIN_CUT_STEPS
    longest_of_first_stage = int(TransducerCodec.training_extents(data)[data.lengths <= 12].max())
    assert longest_of_first_stage < data.n_steps
    shapes = []
    batch = CurriculumBatches.batch

    def recorded(self, index):
        inputs, targets = batch(self, index)
        shapes.append(inputs.shape)
        return inputs, targets

    monkeypatch.setattr(CurriculumBatches, "batch", recorded)
    est = NeuralStackTransducer(n_init=1, epochs=3, batch_size=16, random_state=0).fit(X, y)
    # Three epochs in the first stage (sources of up to a quarter of 2..40).
    assert est.history_["max_length"] == [12.0, 12.0, 12.0]
    assert len(shapes) >= 3 * 4
    assert set(shapes) == {(16, longest_of_first_stage)}
    assert np.all(np.isfinite(est.history_["loss"]))
