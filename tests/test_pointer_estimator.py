"""PointerNetworkOrderer as a scikit-learn estimator: learning, persistence, contract."""

import pickle
import subprocess
import sys

import joblib
import keras
import numpy as np
import pytest
from _marks import once, process_fixture
from scipy.special import logsumexp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import InvalidParameterError

from skptr import PointerNetworkOrderer
from skptr._inference import inference_models
from skptr._sequences import check_numeric_sequences
from skptr.datasets import make_sorting
from skptr.metrics import position_accuracy, sequence_accuracy
from skptr.pointer._candidates import DecodingPlan
from skptr.pointer._codec import PointerCodec

SMALL = {"hidden_size": 16, "epochs": 1, "batch_size": 64, "random_state": 0}


@process_fixture
def sorting_split():
    X, y = make_sorting(n_samples=5000, n_steps=8, random_state=0)
    return X[:4000], y[:4000], X[4000:], y[4000:]


@process_fixture
def sorter(sorting_split):
    X_train, y_train, _, _ = sorting_split
    return PointerNetworkOrderer(hidden_size=32, epochs=4, random_state=0).fit(X_train, y_train)


@process_fixture
def tiny_data():
    return make_sorting(n_samples=300, n_steps=5, random_state=1)


def test_learns_the_seed_sorting_task(sorter, sorting_split):
    _, _, X_test, y_test = sorting_split
    assert sorter.score(X_test, y_test) >= 0.99
    predicted = sorter.predict(X_test)
    assert predicted.shape == (1000, 8)
    assert predicted.dtype.kind == "i"
    assert all(sorted(row) == list(range(8)) for row in predicted.tolist())
    assert sequence_accuracy(y_test, predicted, X=X_test) >= 0.9


def test_predict_proba_is_the_distribution_along_the_decoded_path(sorter, sorting_split):
    _, _, X_test, _ = sorting_split
    probabilities = sorter.predict_proba(X_test[:50])
    predicted = sorter.predict(X_test[:50])
    assert probabilities.shape == (50, 8, 9)
    np.testing.assert_allclose(probabilities.sum(axis=-1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(probabilities[..., -1], 0.0)
    np.testing.assert_array_equal(probabilities.argmax(axis=-1), predicted)
    # A position chosen at step k has probability zero at every later step.
    for k in range(1, 8):
        earlier = predicted[:, :k]
        assert np.all(np.take_along_axis(probabilities[:, k], earlier, axis=1) == 0)


def test_generalises_to_other_lengths_than_seen_in_fit(sorter):
    X = [np.array([3.0, 9.0, 1.0]), np.array([5.0, 2.0, 8.0, 0.0, 7.0, 6.0, 4.0, 9.0, 1.0, 3.0])]
    predicted = sorter.predict(X)
    assert predicted.shape == (2, 10)
    np.testing.assert_array_equal(predicted[0, 3:], -1)
    assert sorted(predicted[1].tolist()) == list(range(10))
    np.testing.assert_array_equal(X[0][predicted[0, :3]], [9.0, 3.0, 1.0])


def _log_likelihood(est, X, orderings):
    """Log-probability the fitted network assigns to given orderings of ``X``."""
    inputs, targets = PointerCodec.of(est).encode_training(X, orderings)[:2]
    logits = keras.ops.convert_to_numpy(est.network_(inputs, training=False))
    log_probs = logits - logsumexp(logits, axis=-1, keepdims=True)
    picked = np.take_along_axis(log_probs, np.maximum(targets, 0)[..., None], axis=-1)
    return (picked[..., 0] * (targets >= 0)).sum(axis=1)


def test_beam_search_is_at_least_as_likely_as_greedy(sorter, sorting_split):
    _, _, X_test, _ = sorting_split
    beam = clone(sorter).set_params(decode="beam", beam_width=3)
    beam.__dict__.update({k: v for k, v in vars(sorter).items() if k.endswith("_")})
    greedy_paths = sorter.predict(X_test[:300])
    beam_paths = beam.predict(X_test[:300])
    greedy_ll = _log_likelihood(sorter, X_test[:300], greedy_paths)
    beam_ll = _log_likelihood(beam, X_test[:300], beam_paths)
    assert np.all(beam_ll >= greedy_ll - 1e-4)
    assert beam_ll.mean() >= greedy_ll.mean()


@pytest.mark.parametrize(("decode", "beam_width"), [("greedy", 1), ("beam", 3)])
def test_large_calls_decode_as_small_ones_do(sorter, decode, beam_width):
    # 1,100 rows compile the decoder with XLA on TensorFlow; 100-row calls trace a graph.
    est = clone(sorter).set_params(decode=decode, beam_width=beam_width)
    est.__dict__.update({k: v for k, v in vars(sorter).items() if k.endswith("_")})
    X = np.random.default_rng(5).integers(0, 10, size=(1100, 8)).astype(float)
    whole = est.predict_proba(X)
    pieces = np.concatenate([est.predict_proba(X[i : i + 100]) for i in range(0, 1100, 100)])
    np.testing.assert_array_equal(whole.argmax(-1), pieces.argmax(-1))
    np.testing.assert_allclose(whole, pieces, atol=1e-5)
    orderings = np.concatenate([est.predict(X[i : i + 100]) for i in range(0, 1100, 100)])
    np.testing.assert_array_equal(est.predict(X), orderings)
    compiled = {jit for _, jit in inference_models(est.network_)}
    assert compiled == {keras.backend.backend() == "tensorflow", False}


@pytest.mark.parametrize(
    ("params", "n_positions", "lanes", "samples"),
    [
        ({}, 10, 1, 2048),
        ({"decode": "beam", "beam_width": 3}, 10, 3, 512),
        ({}, 500, 1, 512),
        ({}, 5000, 1, 32),
        ({"batch_size": 4096}, 10, 1, 4096),
        ({"decode": "multistart"}, 100, 100, 64),
        ({"decode": "multistart"}, 1000, 925, 1),  # every start, in two calls
        ({"decode": "sample", "n_candidates": 7}, 200, 7, 256),
    ],
)
def test_decoding_calls_hold_about_2048_lanes_within_memory(params, n_positions, lanes, samples):
    X, y = np.random.default_rng(0).random((64, 10)), np.tile(np.arange(10), (64, 1))
    fitted = PointerNetworkOrderer(hidden_size=8, epochs=1, random_state=0).fit(X, y)
    est = clone(fitted).set_params(**params)
    est.__dict__.update({k: v for k, v in vars(fitted).items() if k.endswith("_")})
    plan = DecodingPlan.resolve(est, check_numeric_sequences(np.zeros((1, n_positions))))
    assert (plan.lanes, plan.samples_per_call) == (lanes, samples)


def test_pickle_and_joblib_round_trips_predict_identically(sorter, sorting_split, tmp_path):
    _, _, X_test, _ = sorting_split
    expected = sorter.predict_proba(X_test[:200])
    restored = pickle.loads(pickle.dumps(sorter))
    np.testing.assert_array_equal(restored.predict_proba(X_test[:200]), expected)
    joblib.dump(sorter, tmp_path / "sorter.joblib")
    restored = joblib.load(tmp_path / "sorter.joblib")
    np.testing.assert_array_equal(restored.predict_proba(X_test[:200]), expected)
    np.testing.assert_array_equal(restored.predict(X_test[:200]), sorter.predict(X_test[:200]))
    assert restored.history_ == sorter.history_


def test_joblib_round_trip_across_processes(sorter, sorting_split, tmp_path):
    _, _, X_test, _ = sorting_split
    joblib.dump(sorter, tmp_path / "sorter.joblib")
    np.save(tmp_path / "X.npy", X_test[:100])
    script = (
        "import joblib, numpy as np;"
        f"est = joblib.load({str(tmp_path / 'sorter.joblib')!r});"
        f"np.save({str(tmp_path / 'p.npy')!r}, est.predict(np.load({str(tmp_path / 'X.npy')!r})))"
    )
    subprocess.run([sys.executable, "-c", script], check=True, capture_output=True)
    np.testing.assert_array_equal(np.load(tmp_path / "p.npy"), sorter.predict(X_test[:100]))


def test_unfitted_estimator_pickles_and_raises_not_fitted(tiny_data):
    X, _ = tiny_data
    estimator = pickle.loads(pickle.dumps(PointerNetworkOrderer(hidden_size=4)))
    assert estimator.hidden_size == 4
    for method in (estimator.predict, estimator.predict_proba):
        with pytest.raises(NotFittedError):
            method(X)


def test_same_random_state_gives_identical_predictions(tiny_data):
    X, y = tiny_data[0][:64], tiny_data[1][:64]  # one step
    first = PointerNetworkOrderer(**SMALL).fit(X, y)
    expected, network, history = first.predict_proba(X), first.network_, first.history_
    first.fit(X, y)  # without warm_start, a refit starts from scratch
    assert first.network_ is not network
    np.testing.assert_array_equal(first.predict_proba(X), expected)
    assert first.history_ == history
    other = PointerNetworkOrderer(**{**SMALL, "random_state": 1}).fit(X, y)
    assert not np.array_equal(other.predict_proba(X), expected)


class _BatchRecorder(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.batches = []

    def on_train_batch_end(self, batch, logs=None):
        self.batches.append(batch)


def test_several_steps_per_call_unless_a_callback_watches_batches(tiny_data):
    X, y = tiny_data[0][:128], tiny_data[1][:128]  # 2 batches of 64 per epoch
    several = {"tensorflow": 32, "jax": 1}[keras.backend.backend()]
    plain = PointerNetworkOrderer(**{**SMALL, "epochs": 2}).fit(X, y)
    assert plain.network_.steps_per_execution == several
    recorder = _BatchRecorder()
    watched = PointerNetworkOrderer(**{**SMALL, "epochs": 2, "callbacks": [recorder]}).fit(X, y)
    assert watched.network_.steps_per_execution == 1
    assert recorder.batches == [0, 1] * 2
    np.testing.assert_allclose(watched.predict_proba(X), plain.predict_proba(X), atol=1e-6)
    recorder.batches.clear()
    warm = plain.set_params(warm_start=True, callbacks=[recorder]).fit(X, y)
    assert warm.network_.steps_per_execution == 1
    assert recorder.batches == [0, 1] * 2


def test_history_validation_verbosity_and_callbacks(tiny_data, capsys):
    X, y = tiny_data[0][:192], tiny_data[1][:192]
    estimator = PointerNetworkOrderer(**{**SMALL, "epochs": 2, "validation_fraction": 0.2})
    estimator.fit(X, y)
    assert set(estimator.history_) == {"loss", "val_loss", "learning_rate"}
    assert len(estimator.history_["loss"]) == 2 == estimator.n_iter_
    assert capsys.readouterr().out == ""
    epochs = []
    callback = keras.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: epochs.append(epoch)
    )
    PointerNetworkOrderer(**{**SMALL, "epochs": 2, "verbose": 1}, callbacks=[callback]).fit(X, y)
    out = capsys.readouterr().out
    assert "Epoch 2/2" in out and "3/3" in out and "loss" in out  # 192 samples, batches of 64
    assert epochs == [0, 1]


def test_early_stopping_restores_the_best_weights(tiny_data):
    X, y = tiny_data
    # A huge learning rate makes the loss diverge after the first epochs.
    estimator = PointerNetworkOrderer(
        **{**SMALL, "epochs": 30, "learning_rate": 0.5, "clipnorm": None},
        early_stopping=True,
        n_iter_no_change=2,
        validation_fraction=0.3,
    ).fit(X, y)
    losses = estimator.history_["val_loss"]
    assert estimator.n_iter_ < 30
    best = int(np.argmin(losses))
    assert estimator.n_iter_ == best + 3
    assert np.isfinite(estimator.predict_proba(X)).all()


def test_warm_start_continues_training(tiny_data):
    X, y = tiny_data[0][:128], tiny_data[1][:128]
    estimator = PointerNetworkOrderer(**{**SMALL, "epochs": 2}, warm_start=True).fit(X, y)
    network = estimator.network_
    first_losses = list(estimator.history_["loss"])
    estimator.fit(X, y)
    assert estimator.network_ is network
    assert estimator.n_iter_ == 4
    assert estimator.history_["loss"][:2] == first_losses
    assert estimator.history_["loss"][3] < first_losses[0]


def test_each_feature_reaches_the_network_divided_by_its_largest_magnitude():
    rng = np.random.default_rng(3)
    X = [rng.uniform(-1, 1, (n, 3)) for n in rng.integers(3, 8, 96)]
    for sample in X:
        sample[:, 2] = 0.0  # a feature that is always 0 keeps its values
    y = [np.argsort(sample[:, 0]) for sample in X]
    fitted = PointerNetworkOrderer(**SMALL).fit(X, y)
    largest = np.abs(np.concatenate(X).astype(np.float32)).max(axis=0)  # as the network reads X
    np.testing.assert_array_equal(fitted.feature_scale_, [largest[0], largest[1], 1.0])
    # Other units (powers of two, so that dividing is exact) give the same model.
    units = np.array([8.0, 0.25, 1.0])
    rescaled = PointerNetworkOrderer(**SMALL).fit([sample * units for sample in X], y)
    np.testing.assert_array_equal(rescaled.feature_scale_, fitted.feature_scale_ * units)
    np.testing.assert_array_equal(
        rescaled.predict([sample * units for sample in X]), fitted.predict(X)
    )
    # A warm start keeps the first fit's scale, whatever the new data holds.
    fitted.set_params(warm_start=True).fit([sample * 4 for sample in X], y)
    np.testing.assert_array_equal(fitted.feature_scale_, [largest[0], largest[1], 1.0])


def test_learning_rate_decays_per_epoch_across_warm_starts(tiny_data):
    X, y = tiny_data[0][:64], tiny_data[1][:64]  # one step per epoch
    params = {"epochs": 2, "learning_rate": 0.04, "learning_rate_decay": 0.5}
    estimator = PointerNetworkOrderer(**{**SMALL, **params}, warm_start=True).fit(X, y)
    np.testing.assert_allclose(estimator.history_["learning_rate"], [0.04, 0.02], rtol=1e-6)
    estimator.fit(X, y)  # epochs 2 and 3 of the same network
    rates = estimator.history_["learning_rate"]
    np.testing.assert_allclose(rates[2:], [0.01, 0.005], rtol=1e-6)
    estimator.set_params(learning_rate=0.1, learning_rate_decay=1.0, epochs=1).fit(X, y)
    np.testing.assert_allclose(estimator.history_["learning_rate"][4:], [0.1], rtol=1e-6)
    estimator.set_params(warm_start=False, epochs=2, learning_rate_decay=0.5).fit(X, y)
    np.testing.assert_allclose(estimator.history_["learning_rate"], [0.1, 0.05], rtol=1e-6)


@pytest.mark.parametrize(
    ("X", "y", "message"),
    [
        ([[1.0, np.nan, 2.0], [1.0, 2.0, 3.0]], [[0, 1, 2], [0, 1, 2]], r"X\[0\] contains NaN"),
        ([[1.0, 2.0, 3.0], [1.0, 2.0]], [[0, 1, 2], [0, 1, 1]], r"y\[1\] repeats index 1"),
        ([[1.0, 2.0, 3.0], [1.0, 2.0]], [[0, 1, 2], [0, 5]], r"y\[1\] holds index 5"),
        ([[1.0, 2.0, 3.0], [1.0, 2.0]], [[0, 1, 2]], r"different numbers of samples: 2 and 1"),
        ([[1.0, 2.0, 3.0], []], [[0, 1, 2], [0]], r"X\[1\] is an empty sequence"),
    ],
)
def test_bad_training_input_is_reported_by_sample(X, y, message):
    with pytest.raises(ValueError, match=message):
        PointerNetworkOrderer(**SMALL).fit(X, y)


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("hidden_size", -1),
        ("cell", "transformer"),
        ("attention", "cosine"),
        ("n_glimpses", -1),
        ("n_glimpses", 1.5),
        ("logit_clip", 0.0),
        ("logit_clip", -10.0),
        ("logit_clip", "10"),
        ("decoder_layers", 0),
        ("decoder_layers", 1.0),
        ("dropout", 1.5),
        ("learning_rate_decay", 0.0),
        ("learning_rate_decay", 1.5),
    ],
)
def test_bad_hyperparameters_raise_naming_them(tiny_data, param, value):
    X, y = tiny_data
    with pytest.raises(InvalidParameterError, match=param):
        PointerNetworkOrderer(**{**SMALL, param: value}).fit(X, y)


def test_a_decoder_deeper_than_the_encoder_is_refused(tiny_data):
    X, y = tiny_data
    estimator = PointerNetworkOrderer(**SMALL, num_layers=2, decoder_layers=3)
    with pytest.raises(InvalidParameterError, match=r"'decoder_layers'.*at most num_layers=2"):
        estimator.fit(X, y)
    assert not hasattr(estimator, "network_")


@once
def test_attention_encoder_learns_to_order_points_and_ignores_their_order():
    rng = np.random.default_rng(100)
    X = rng.random((1000, 5, 2))
    y = np.argsort(X[:, :, 0], axis=1)  # points from left to right
    X_test = rng.random((300, 5, 2))
    y_test = np.argsort(X_test[:, :, 0], axis=1)
    est = PointerNetworkOrderer(
        encoder="attention", hidden_size=32, num_layers=2, epochs=4, batch_size=32, random_state=0
    ).fit(X, y)
    predicted = est.predict(X_test)
    # Measured on seeds 0-2: position accuracy 0.981-0.999, exact orderings 0.953-0.997.
    assert position_accuracy(y_test, predicted) >= 0.95
    assert sequence_accuracy(y_test, predicted) >= 0.9
    permutation = rng.permutation(5)
    np.testing.assert_array_equal(permutation[est.predict(X_test[:, permutation])], predicted)
    assert est.network_params_["encoder"] == "attention"
    assert est.network_.encoder.output_size == 32  # bidirectional plays no part
