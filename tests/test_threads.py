"""One fitted estimator shared by several threads, and quiet start-up, on each backend."""

import os
import subprocess
import sys
import threading

import keras
import numpy as np
import pytest
from _marks import process_fixture

from skptr import NeuralStackTransducer, PointerNetworkOrderer

N_THREADS = 4


def _in_threads(work, n_threads=N_THREADS):
    """Run ``work()`` in ``n_threads`` threads started together; return their results
    (re-raising the first exception)."""
    barrier = threading.Barrier(n_threads)
    results, errors = [None] * n_threads, []

    def run(i):
        barrier.wait()
        try:
            results[i] = work()
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n_threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results


@process_fixture
def sorter():
    rng = np.random.default_rng(53)
    X = rng.random((500, 6, 1))
    est = PointerNetworkOrderer(hidden_size=8, epochs=1, random_state=0)
    return est.fit(X, np.argsort(X[..., 0], axis=1))


def test_threads_share_a_fitted_pointer_network(sorter):
    rng = np.random.default_rng(1)
    X = rng.random((1500, 6, 1))
    y = np.argsort(X[..., 0], axis=1)
    expected = sorter.predict(X), sorter.predict_proba(X), sorter.score(X, y)

    def work():
        return [(sorter.predict(X), sorter.predict_proba(X), sorter.score(X, y)) for _ in range(2)]

    for calls in _in_threads(work):
        for predicted, proba, score in calls:
            np.testing.assert_array_equal(predicted, expected[0])
            np.testing.assert_array_equal(proba, expected[1])
            assert score == expected[2]


def test_threads_share_a_fitted_transducer():
    rng = np.random.default_rng(2)
    X = ["".join(rng.choice(["a", "b"], size=n)) for n in rng.integers(1, 7, size=300)]
    est = NeuralStackTransducer(hidden_size=8, epochs=1, n_init=1, random_state=0)
    est.fit(X, [x[::-1] for x in X])
    X_test = ["".join(rng.choice(["a", "b"], size=n)) for n in rng.integers(1, 12, size=500)]
    y_test = [x[::-1] for x in X_test]
    expected = est.predict(X_test), est.score(X_test, y_test), est.memory_trace(X_test[:20])

    def work():
        return est.predict(X_test), est.score(X_test, y_test), est.memory_trace(X_test[:20])

    for predicted, score, traces in _in_threads(work):
        np.testing.assert_array_equal(predicted, expected[0])
        assert score == expected[1]
        for trace, want in zip(traces, expected[2], strict=True):
            for key in ("push", "pop", "strengths", "read"):
                np.testing.assert_array_equal(trace[key], want[key])


class _PausingAtFirstEpoch(keras.callbacks.Callback):
    """Signals that training has started, then keeps the fit inside training awhile."""

    def __init__(self):
        super().__init__()
        self.started = threading.Event()

    def on_epoch_begin(self, epoch, logs=None):
        if not self.started.is_set():
            self.started.set()
            threading.Event().wait(0.5)


def test_a_prediction_during_a_warm_fit_sees_one_model(sorter):
    rng = np.random.default_rng(3)
    X = rng.random((400, 6, 1))
    y = np.argsort(X[..., 0], axis=1)
    est = PointerNetworkOrderer(**{**sorter.get_params(), "warm_start": True, "epochs": 2})
    est.fit(X, y)
    X_test = rng.random((300, 6, 1))
    pause = _PausingAtFirstEpoch()
    est.set_params(callbacks=[pause])
    fit = threading.Thread(target=est.fit, args=(X, y))
    fit.start()
    assert pause.started.wait(60)
    during = est.predict_proba(X_test)  # waits for the warm fit: never a half-trained model
    fit.join()
    est.set_params(callbacks=None)
    assert est.n_iter_ == 4
    np.testing.assert_array_equal(during, est.predict_proba(X_test))


def test_a_prediction_during_set_params_and_a_cold_refit_uses_one_model(sorter):
    rng = np.random.default_rng(4)
    X = rng.random((500, 6, 1))
    est = PointerNetworkOrderer(**sorter.get_params()).fit(X[:300], np.argsort(X[:300, :, 0], 1))
    before = est.predict_proba(X)

    def refit():
        est.set_params(batch_size=16, random_state=1)
        est.fit(X[:160], np.argsort(X[:160, :, 0], axis=1))

    refitting = threading.Thread(target=refit)
    refitting.start()
    during = [est.predict_proba(X) for _ in range(3)]
    refitting.join()
    after = est.predict_proba(X)
    for proba in during:
        assert np.array_equal(proba, before) or np.array_equal(proba, after)


_QUIET_SCRIPT = """
import sys
import numpy as np
if sys.argv[1] != "none":
    __import__(sys.argv[1])
sys.stderr.flush()
print("--user imports done", file=sys.stderr, flush=True)
from skptr import NeuralStackTransducer, PointerNetworkOrderer, load
rng = np.random.default_rng(0)
X = rng.random((200, 6, 1))
est = PointerNetworkOrderer(hidden_size=8, epochs=1).fit(X, np.argsort(X[..., 0], axis=1))
est.predict(X[:5])
est.save(sys.argv[2])
load(sys.argv[2]).predict(X[:3])
strings = ["ab", "ba", "abb"] * 10
NeuralStackTransducer(hidden_size=8, epochs=1, n_init=2).fit(strings, strings).predict(["ab"])
"""


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="sets its own backends; run once"
)
@pytest.mark.parametrize(
    ("backend", "first_import"),
    [("tensorflow", "none"), ("jax", "tensorflow")],
)
def test_fit_predict_save_and_load_print_nothing(backend, first_import, tmp_path):
    env = {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}
    result = subprocess.run(
        [sys.executable, "-c", _QUIET_SCRIPT, first_import, str(tmp_path / "model.skptr")],
        env={**env, "KERAS_BACKEND": backend},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout == ""
    # What the user's own import of a backend printed is theirs; skptr adds nothing.
    assert result.stderr.split("--user imports done\n")[-1] == ""
