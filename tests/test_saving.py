"""What a user saves after ordinary use loads back, and a stopped warm start keeps the
model: files after large predictions, interrupted warm fits (a real SIGINT in a child
process), paths as users give them, warm starts whose settings changed, and tables of
strings."""

import os
import stat
import subprocess
import sys
import textwrap
import zipfile

import h5py
import keras
import numpy as np
import pandas as pd
import pytest
from _marks import once, process_fixture
from _properties import same_model
from _tasks import reversal, sorting

import skptr
from skptr import NeuralStackTransducer, PointerNetworkOrderer, _persistence

N_ROWS = 1500  # more rows than the smallest call that compiles a decoder with XLA


@process_fixture
def orderer():
    X, y = sorting(200, n_steps=6)
    return PointerNetworkOrderer(hidden_size=8, epochs=1, random_state=0).fit(X, y)


@process_fixture
def transducer():
    X, y = reversal(64)
    return NeuralStackTransducer(hidden_size=8, epochs=1, n_init=1, random_state=0).fit(X, y)


def _use_pointer(estimator, X, y):
    """Every kind of inference a user runs, on many rows; returns what it gave."""
    outputs = {
        "greedy": estimator.predict(X),
        "proba": estimator.predict_proba(X),
        "score": estimator.score(X, y),
    }
    outputs["beam"] = estimator.set_params(decode="beam", beam_width=2).predict(X)
    estimator.set_params(decode="greedy")
    return outputs


def test_save_after_large_predictions_loads_identically_twice(orderer, tmp_path):
    X, y = sorting(N_ROWS, n_steps=6, seed=1)
    used = _use_pointer(orderer, X, y)
    path = tmp_path / "model.skptr"
    orderer.save(path)
    loaded = skptr.load(path)
    same_model(loaded, orderer)
    again = _use_pointer(loaded, X, y)
    loaded.save(path)  # a loaded and used model saves and loads again
    twice = _use_pointer(skptr.load(path), X, y)
    for outputs in (again, twice):
        np.testing.assert_array_equal(outputs["greedy"], used["greedy"])
        np.testing.assert_array_equal(outputs["beam"], used["beam"])
        np.testing.assert_allclose(outputs["proba"], used["proba"], rtol=1e-6, atol=1e-7)
        assert outputs["score"] == used["score"]


def test_saved_file_holds_the_network_weights_only(orderer, tmp_path):
    X, y = sorting(N_ROWS, n_steps=6, seed=2)
    _use_pointer(orderer, X, y)
    orderer.save(tmp_path / "model.skptr")
    with zipfile.ZipFile(tmp_path / "model.skptr") as archive:
        archive.extract("network.keras", tmp_path)
    with zipfile.ZipFile(tmp_path / "network.keras") as archive:
        archive.extract("model.weights.h5", tmp_path)
    names = []
    with h5py.File(tmp_path / "model.weights.h5", "r") as handle:
        handle.visititems(lambda name, item: names.append(name))
    assert not [n for n in names if "optimizer" in n or "inference" in n]
    expected = sum(w.size for w in orderer.network_.get_weights())
    with h5py.File(tmp_path / "model.weights.h5", "r") as handle:
        stored = []
        handle.visititems(
            lambda name, item: stored.append(item.size) if isinstance(item, h5py.Dataset) else None
        )
    assert sum(stored) == expected


def test_files_that_hold_inference_models_still_load(orderer, tmp_path, monkeypatch):
    """Files written before the fix held the compiled inference models' variables."""
    if keras.backend.backend() != "tensorflow":
        pytest.skip("only TensorFlow compiles large decoders with XLA (and an optimiser)")
    X, y = sorting(N_ROWS, n_steps=6, seed=3)
    used = _use_pointer(orderer, X, y)
    monkeypatch.setattr(_persistence, "_model_only", lambda estimator: estimator.network_)
    orderer.save(tmp_path / "old.skptr")
    monkeypatch.undo()
    with zipfile.ZipFile(tmp_path / "old.skptr") as archive:
        network = archive.read("network.keras")
    (tmp_path / "network.keras").write_bytes(network)
    with zipfile.ZipFile(tmp_path / "network.keras") as archive:
        archive.extract("model.weights.h5", tmp_path)
    names = []
    with h5py.File(tmp_path / "model.weights.h5", "r") as handle:
        handle.visit(names.append)
    assert any(name.startswith("_skptr_inference_models/") for name in names)
    np.testing.assert_array_equal(skptr.load(tmp_path / "old.skptr").predict(X), used["greedy"])


def test_transducer_save_after_large_predictions(transducer, tmp_path):
    X, _ = reversal(N_ROWS, seed=4)
    predicted = transducer.predict(X)
    traces = transducer.memory_trace(X[:3])
    transducer.save(tmp_path / "model.skptr")
    loaded = skptr.load(tmp_path / "model.skptr")
    same_model(loaded, transducer)
    np.testing.assert_array_equal(loaded.predict(X), predicted)
    for trace, expected in zip(loaded.memory_trace(X[:3]), traces, strict=True):
        assert trace["output"] == expected["output"]
        for key in ("push", "pop", "strengths", "read"):
            np.testing.assert_allclose(trace[key], expected[key], rtol=1e-6, atol=1e-7)
    loaded.save(tmp_path / "model.skptr")
    np.testing.assert_array_equal(skptr.load(tmp_path / "model.skptr").predict(X), predicted)


# --------------------------------------------------------------------------- paths
def test_bytes_and_path_objects_save_and_load(orderer, tmp_path):
    X, _ = sorting(5, n_steps=6, seed=5)
    expected = orderer.predict(X)
    for path in (os.fsencode(tmp_path / "b.skptr"), tmp_path / "p.skptr", str(tmp_path / "s")):
        orderer.save(path)
        np.testing.assert_array_equal(skptr.load(path).predict(X), expected)
    with pytest.raises(TypeError, match="path must be a str or a path-like object, got a int"):
        orderer.save(3)


def test_save_through_a_symbolic_link_writes_its_target(orderer, tmp_path):
    X, _ = sorting(5, n_steps=6, seed=6)
    target = tmp_path / "models" / "current.skptr"
    target.parent.mkdir()
    target.write_bytes(b"an older model")
    target.chmod(0o640)
    link = tmp_path / "model.skptr"
    link.symlink_to(target)
    orderer.save(link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    np.testing.assert_array_equal(skptr.load(target).predict(X), orderer.predict(X))
    assert sorted(p.name for p in target.parent.iterdir()) == ["current.skptr"]


def test_save_refuses_a_read_only_file_and_leaves_it(orderer, tmp_path):
    path = tmp_path / "model.skptr"
    path.write_bytes(b"kept")
    path.chmod(0o444)
    with pytest.raises(PermissionError, match=r"model\.skptr is read-only"):
        orderer.save(path)
    assert path.read_bytes() == b"kept" and stat.S_IMODE(path.stat().st_mode) == 0o444
    assert [p.name for p in tmp_path.iterdir()] == ["model.skptr"]


# ------------------------------------------------------------------- warm starts
@pytest.mark.parametrize(
    ("make", "data", "changes"),
    [
        (PointerNetworkOrderer, lambda: sorting(100, 5), {"hidden_size": 16, "cell": "gru"}),
        (NeuralStackTransducer, lambda: reversal(40), {"memory": "queue"}),
    ],
)
@once
def test_warm_start_after_changed_network_settings_refuses(make, data, changes):
    X, y = data()
    estimator = make(hidden_size=8, epochs=1, random_state=0, warm_start=True)
    if make is NeuralStackTransducer:
        estimator.set_params(n_init=1)
    estimator.fit(X, y)
    before = estimator.predict(X)
    weights = estimator.network_.get_weights()
    estimator.set_params(**changes)
    with pytest.raises(ValueError, match="warm_start=True continues the fitted network") as info:
        estimator.fit(X, y)
    for name, value in changes.items():
        assert f"{name}={value!r}" in str(info.value)
    assert estimator.n_iter_ == 1
    np.testing.assert_array_equal(estimator.predict(X), before)
    for kept, weight in zip(weights, estimator.network_.get_weights(), strict=True):
        np.testing.assert_array_equal(kept, weight)
    estimator.set_params(warm_start=False).fit(X, y)  # a new network with the new settings
    assert estimator.network_params_[next(iter(changes))] == next(iter(changes.values()))


# ------------------------------------------------------------------------ tables
def test_transducer_reads_a_one_column_table_as_one_string_per_row():
    X, y = reversal(48, seed=7)
    table_X, table_y = pd.DataFrame({"text": X}), pd.DataFrame({"text": y})
    params = {"hidden_size": 8, "epochs": 1, "n_init": 1, "random_state": 0}
    from_table = NeuralStackTransducer(**params).fit(table_X, table_y)
    from_list = NeuralStackTransducer(**params).fit(X, y)
    assert from_table.input_vocabulary_.tolist() == ["a", "b"]
    assert from_list.input_vocabulary_.tolist() == ["a", "b"]
    predicted = from_table.predict(table_X)
    assert all(isinstance(p, str) for p in predicted)
    np.testing.assert_array_equal(predicted, from_list.predict(X))
    np.testing.assert_array_equal(from_table.predict(np.array(X)[:, None]), predicted)
    assert from_table.score(table_X, table_y) == from_list.score(X, y)


# -------------------------------------------------------------------- interrupts
_INTERRUPTED_WARM_FITS = textwrap.dedent(
    """
    import os, signal, sys, threading
    import keras
    import numpy as np
    from skptr import PointerNetworkOrderer

    def sorting(n, steps, seed):
        X = np.random.default_rng(seed).random((n, steps))
        return X, np.argsort(X, axis=1)

    # Ctrl+C as a terminal delivers it, even where the test runner's process ignores
    # SIGINT (a child inherits the ignoring).
    signal.signal(signal.SIGINT, signal.default_int_handler)

    class InterruptLater(keras.callbacks.Callback):
        # A real SIGINT: from a thread, a delay after the fit starts (while the step
        # compiles) or after its second step (inside a later step), or at a given batch
        # (between steps).
        def __init__(self, delay=None, after_batch=None, at_batch=None):
            super().__init__()
            self.delay, self.after_batch, self.at_batch = delay, after_batch, at_batch

        def _later(self):
            threading.Timer(self.delay, os.kill, (os.getpid(), signal.SIGINT)).start()

        def on_train_begin(self, logs=None):
            if self.after_batch is None and self.at_batch is None:
                self._later()

        def on_train_batch_end(self, batch, logs=None):
            if batch == self.after_batch:
                self._later()

        def on_train_batch_begin(self, batch, logs=None):
            if batch == self.at_batch:
                os.kill(os.getpid(), signal.SIGINT)

    X, y = sorting(300, 6, 0)
    estimator = PointerNetworkOrderer(
        hidden_size=16, epochs=1, random_state=0, warm_start=True
    ).fit(X, y)
    X_test, _ = sorting(40, 6, 9)
    before, proba = estimator.predict(X_test), estimator.predict_proba(X_test)
    moments = [
        (7, dict(delay=0.3)),  # a new length: the warm fit compiles its step again
        (6, dict(delay=0.01, after_batch=1)),
        (6, dict(at_batch=3)),
    ]
    for attempt, (length, moment) in enumerate(moments):
        X_more, y_more = sorting(3000, length, attempt + 1)
        estimator.set_params(epochs=40, callbacks=[InterruptLater(**moment)])
        try:
            estimator.fit(X_more, y_more)
        except KeyboardInterrupt:
            pass
        else:
            sys.exit(f"the fit ended before the interrupt at {moment}")
        assert estimator.n_iter_ == 1, moment
        np.testing.assert_array_equal(estimator.predict(X_test), before)
        np.testing.assert_allclose(estimator.predict_proba(X_test), proba, rtol=1e-6)
    estimator.set_params(epochs=1, callbacks=None).fit(X, y)
    assert estimator.n_iter_ == 2
    print("kept")
    """
)


def test_interrupted_warm_starts_keep_the_model():
    env = {**os.environ, "KERAS_BACKEND": keras.backend.backend(), "TF_CPP_MIN_LOG_LEVEL": "3"}
    result = subprocess.run(
        [sys.executable, "-c", _INTERRUPTED_WARM_FITS],
        env=env,
        capture_output=True,
        text=True,
        timeout=500,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "kept"
