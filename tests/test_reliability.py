"""Replays of unusual and hostile uses: failed fits, shared state, garbage values, noise.

Each case names what used to go wrong; the file-format cases live in
``test_load_validation.py``.
"""

import gc
import random
import weakref
from concurrent.futures import ThreadPoolExecutor

import keras
import numpy as np
import pytest
from _tasks import reversal as _reversal
from _tasks import sorting as _sorting
from sklearn.utils._param_validation import InvalidParameterError

from skptr import NeuralStackTransducer, PointerNetworkOrderer
from skptr._training import NonFiniteTrainingError

POINTER = {"hidden_size": 8, "batch_size": 16, "random_state": 0}
TRANSDUCER = {
    "hidden_size": 8,
    "embedding_dim": 4,
    "memory_width": 4,
    "n_init": 1,
    "random_state": 0,
}


class _RaiseAtBatch(keras.callbacks.Callback):
    def __init__(self, error, batch=1):
        super().__init__()
        self.error, self.batch = error, batch

    def on_train_batch_end(self, batch, logs=None):
        if batch == self.batch:
            raise self.error


# (estimator class, params, data, epochs) whose fits run eagerly, as a graph, with XLA.
_FIT_MODES = {
    "pointer-eager": (PointerNetworkOrderer, POINTER, _sorting(32), 1),
    "pointer-graph": (PointerNetworkOrderer, POINTER, _sorting(96), 4),
    "transducer-eager": (NeuralStackTransducer, {**TRANSDUCER, "batch_size": 8}, _reversal(24), 1),
    "transducer-graph": (NeuralStackTransducer, {**TRANSDUCER, "batch_size": 8}, _reversal(48), 2),
    "transducer-jit": (NeuralStackTransducer, {**TRANSDUCER, "batch_size": 1}, _reversal(400), 1),
}


def _state(estimator):
    state = {k: v for k, v in vars(estimator).items() if k != "network_"}
    network = getattr(estimator, "network_", None)
    return state, network, None if network is None else network.get_weights()


def _assert_same_state(estimator, before):
    state, network, weights = before
    after_state, after_network, after_weights = _state(estimator)
    assert after_network is network
    assert after_state.keys() == state.keys()
    for key, value in state.items():
        np.testing.assert_equal(after_state[key], value)
    if weights is not None:
        for old, new in zip(weights, after_weights, strict=True):
            np.testing.assert_array_equal(old, new)


# ----------------------------------------------------------------- 1. transactional fit
# The eager fits show both kinds of error; one interrupted compiled fit each is enough.
@pytest.mark.parametrize(
    ("mode", "error"),
    [(mode, RuntimeError("boom")) for mode in _FIT_MODES if mode.endswith("eager")]
    + [(mode, KeyboardInterrupt()) for mode in _FIT_MODES],
)
def test_failed_first_fit_leaves_estimator_unfitted(mode, error):
    cls, params, (X, y), epochs = _FIT_MODES[mode]
    estimator = cls(**params, epochs=epochs, callbacks=[_RaiseAtBatch(error)])
    with pytest.raises(type(error)):
        estimator.fit(X, y)
    assert set(vars(estimator)) == set(estimator.get_params())


@pytest.mark.parametrize("mode", ["pointer-graph", "transducer-graph"])
@pytest.mark.parametrize("warm_start", [False, True])
def test_failed_refit_keeps_the_previous_model(mode, warm_start):
    cls, params, (X, y), epochs = _FIT_MODES[mode]
    # A first fit of one or two steps runs eagerly; the refit that fails runs as `mode`.
    estimator = cls(**params, epochs=1, warm_start=warm_start).fit(X[:16], y[:16])
    predictions = estimator.predict(X)
    before = _state(estimator)
    estimator.set_params(epochs=epochs, callbacks=[_RaiseAtBatch(KeyboardInterrupt())])
    with pytest.raises(KeyboardInterrupt):
        estimator.fit(X, y)
    estimator.set_params(epochs=1, callbacks=None)
    _assert_same_state(estimator, before)
    np.testing.assert_array_equal(estimator.predict(X), predictions)


def test_failed_warm_start_restores_the_optimizer_state():
    X, y = _sorting(48)
    estimator = PointerNetworkOrderer(**POINTER, epochs=1, warm_start=True).fit(X, y)
    reference = PointerNetworkOrderer(**POINTER, epochs=1, warm_start=True).fit(X, y)
    estimator.set_params(callbacks=[_RaiseAtBatch(RuntimeError("boom"))])
    with pytest.raises(RuntimeError):
        estimator.fit(X, y)
    estimator.set_params(callbacks=None)
    estimator.fit(X, y)
    reference.fit(X, y)
    for ours, theirs in zip(
        estimator.network_.get_weights(), reference.network_.get_weights(), strict=True
    ):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("warm_start", [False, True])
def test_invalid_data_on_refit_keeps_the_previous_model(warm_start):
    X, y = _sorting(32)
    estimator = PointerNetworkOrderer(**POINTER, epochs=1, warm_start=warm_start).fit(X, y)
    before = _state(estimator)
    bad = X.copy()
    bad[5, 2] = np.nan
    with pytest.raises(ValueError, match=r"X\[5\]"):
        estimator.fit(bad, y)
    _assert_same_state(estimator, before)


class _PoisonWeights(keras.callbacks.Callback):
    def on_train_batch_begin(self, batch, logs=None):
        if batch > 0:
            return
        weights = self.model.get_weights()
        weights[2][...] = np.nan
        self.model.set_weights(weights)


@pytest.mark.parametrize("warm_start", [False, True])
def test_nan_loss_stops_the_fit_and_keeps_the_previous_model(warm_start):
    X, y = _sorting(32)
    estimator = PointerNetworkOrderer(**POINTER, epochs=1, warm_start=warm_start).fit(X, y)
    before = _state(estimator)
    estimator.set_params(callbacks=[_PoisonWeights()])
    with pytest.raises(NonFiniteTrainingError, match="loss became nan in epoch 1"):
        estimator.fit(X, y)
    estimator.set_params(callbacks=None)
    _assert_same_state(estimator, before)


# ------------------------------------------------------------------ 2. no shared state
def _fit_predict(cls, params, X, y):
    return cls(**params).fit(X, y).predict(X)


@pytest.mark.parametrize(
    ("cls", "params", "data"),
    [
        # Eager here and traced for the transducer: both ways of running a step.
        (PointerNetworkOrderer, {**POINTER, "epochs": 1, "dropout": 0.2}, _sorting(48)),
        (NeuralStackTransducer, {**TRANSDUCER, "epochs": 2, "batch_size": 8}, _reversal(48)),
    ],
    ids=["pointer", "transducer"],
)
def test_concurrent_fits_in_threads_match_a_single_fit(cls, params, data):
    X, y = data
    reference = cls(**params).fit(X, y)
    with ThreadPoolExecutor(2) as pool:
        first, second = (pool.submit(cls(**params).fit, X, y) for _ in range(2))
        fitted = [first.result(), second.result()]
    for estimator in fitted:
        for ours, theirs in zip(
            estimator.network_.get_weights(), reference.network_.get_weights(), strict=True
        ):
            np.testing.assert_array_equal(ours, theirs)
        np.testing.assert_array_equal(estimator.predict(X), reference.predict(X))


def test_fit_leaves_the_callers_random_states_alone():
    import tensorflow as tf

    def draws():
        return random.random(), np.random.random(), float(tf.random.uniform(()))

    def seed_all():
        random.seed(7)
        np.random.seed(7)
        tf.random.set_seed(123)

    seed_all()
    expected = draws()
    X, y = _sorting(32)
    seed_all()
    PointerNetworkOrderer(**POINTER, epochs=1).fit(X, y)
    NeuralStackTransducer(**TRANSDUCER, epochs=1).fit(*_reversal(16))
    assert draws() == expected


def test_random_state_none_draws_from_numpy_global_generator():
    X, y = _sorting(32)
    np.random.seed(3)
    first = PointerNetworkOrderer(hidden_size=8, epochs=1).fit(X, y).predict_proba(X)
    np.random.seed(3)
    second = PointerNetworkOrderer(hidden_size=8, epochs=1).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(first, second)


# --------------------------------------------------------- 3. values that made garbage
def test_values_overflowing_float32_are_rejected():
    X, y = _sorting(8)
    X[2, 1] = 1e39
    with pytest.raises(ValueError, match=r"X\[2\]"):
        PointerNetworkOrderer(**POINTER, epochs=1).fit(X, y)
    fitted = PointerNetworkOrderer(**POINTER, epochs=1).fit(*_sorting(16))
    with pytest.raises(ValueError, match=r"X\[2\]"):
        fitted.predict(X)


def test_integers_that_float32_cannot_tell_apart_are_rejected():
    X = np.array([[1, 2, 3], [2**62, 2**62 + 1, 5]], dtype=np.int64)
    with pytest.raises(ValueError, match=r"X\[1\]"):
        PointerNetworkOrderer(**POINTER, epochs=1).fit(X, np.argsort(X, axis=1))


@pytest.mark.parametrize(
    ("cls", "name", "value"),
    [
        (NeuralStackTransducer, "pop_bias", float("nan")),
        (NeuralStackTransducer, "push_bias", float("inf")),
        (NeuralStackTransducer, "learning_rate", float("inf")),
        (PointerNetworkOrderer, "clipnorm", float("inf")),
        (PointerNetworkOrderer, "learning_rate", float("nan")),
    ],
)
def test_non_finite_float_hyperparameters_are_rejected(cls, name, value):
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter of {cls.__name__}"):
        cls(**{name: value}).fit(*(_sorting(8) if cls is PointerNetworkOrderer else _reversal(8)))


def test_all_empty_targets_are_a_clear_error():
    X = ["ab", "ba", "aab", "b"] * 8
    with pytest.raises(ValueError, match="every target in y is empty"):
        NeuralStackTransducer(**TRANSDUCER, epochs=1).fit(X, [""] * len(X))


def test_batch_size_larger_than_the_data_uses_all_samples_once():
    X, y = _reversal(24)
    estimator = NeuralStackTransducer(**TRANSDUCER, epochs=1, batch_size=10**9).fit(X, y)
    assert estimator.n_iter_ == 1


def test_network_too_large_for_memory_raises_memory_error():
    X, y = _sorting(8)
    with pytest.raises(MemoryError, match="hidden_size=100000"):
        PointerNetworkOrderer(hidden_size=100_000, epochs=1).fit(X, y)


def test_true_and_one_are_different_tokens():
    X = [[True, 1], [1, True], [True, True], [1, 1]] * 4
    estimator = NeuralStackTransducer(**TRANSDUCER, epochs=1).fit(X, [s[::-1] for s in X])
    assert len(estimator.input_vocabulary_) == 2
    assert {type(t) for t in estimator.output_vocabulary_} == {bool, int}


def test_memory_trace_refuses_traces_longer_than_max_steps():
    estimator = NeuralStackTransducer(**TRANSDUCER, epochs=1).fit(*_reversal(16))
    with pytest.raises(ValueError, match=r"X\[1\].*2001 steps.*max_steps=1024"):
        estimator.memory_trace(["ab", "a" * 2000])
    trace = estimator.memory_trace(["ab"], max_steps=8)[0]
    assert trace["strengths"].shape[0] <= 8


# ------------------------------------------------------------ 4. memory that is freed
def test_networks_and_their_decoders_die_with_their_estimators():
    # The compiled decoders hold their network: kept in a mapping keyed by networks,
    # they kept every network fitted and used in the process alive (a grid search's
    # too), and a restart search's networks with them.
    X = np.random.default_rng(0).random((40, 5))
    sources = ["abc", "ab", "cab", "bca"] * 10
    fits = [
        (PointerNetworkOrderer, {"hidden_size": 8}, X, np.argsort(X)),
        (
            NeuralStackTransducer,
            {**TRANSDUCER, "n_init": 2},
            sources,
            [s[::-1] for s in sources],
        ),
    ]
    for cls, params, inputs, targets in fits:
        est = cls(**{"epochs": 1, "random_state": 0, **params}).fit(inputs, targets)
        est.predict(inputs)
        network = weakref.ref(est.network_)
        del est
        gc.collect()
        assert network() is None


# ------------------------------------------------------------------- 6. quiet output
def test_fit_and_predict_with_verbose_zero_print_nothing(capfd):
    X, y = _sorting(64)
    sources, targets = _reversal(48)
    capfd.readouterr()
    pointer = PointerNetworkOrderer(**POINTER, epochs=2).fit(X, y)
    transducer = NeuralStackTransducer(**TRANSDUCER, epochs=2).fit(sources, targets)
    for n_steps in range(2, 9):
        pointer.predict(np.random.default_rng(n_steps).random((n_steps * 3, n_steps)))
        transducer.predict(_reversal(n_steps * 5, seed=n_steps, max_length=n_steps * 4)[0])
    transducer.memory_trace(sources[:3])
    out, err = capfd.readouterr()
    assert out == "" and err == ""
