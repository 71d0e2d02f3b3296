"""Data-parallel fits and inference over two virtual CPU devices (see tests/conftest.py)."""

import functools
import json
import pickle
import subprocess
import sys

import keras
import numpy as np
import pytest
from _two_processes import (
    POINTER_SETTINGS,
    TRANSDUCER_SETTINGS,
    assert_same_weights,
    one_device_environment,
)
from _two_processes import ragged_points as _ragged_points
from _two_processes import strings as _strings
from sklearn.base import clone

from skptr import NeuralStackTransducer, PointerNetworkOrderer, load

BACKEND = keras.backend.backend()


@functools.cache
def _strategy():
    """The backend's own data-parallel object over both virtual devices, one per
    process.

    TensorFlow keys the collective operations of its strategies per process: two
    ``MirroredStrategy`` objects over the same devices would reuse each other's keys,
    so this one takes keys of its own (``_collective_key_base``, which TensorFlow
    provides for tests), apart from those of ``devices="all"``.
    """
    if BACKEND == "jax":
        return keras.distribution.DataParallel(devices=keras.distribution.list_devices())
    import tensorflow as tf

    class SeparateKeys(tf.distribute.MirroredStrategy):
        _collective_key_base = 100_000

    return SeparateKeys(["/cpu:0", "/cpu:1"])


def test_all_devices_is_the_backends_data_parallel_machinery():
    placement = PointerNetworkOrderer(devices="all")._placement()
    assert placement.n_replicas == 2
    if BACKEND == "jax":
        assert isinstance(placement.strategy, keras.distribution.DataParallel)
    else:
        assert type(placement.strategy).__name__ == "MirroredStrategy"
    assert PointerNetworkOrderer()._placement().n_replicas == 1


def test_pointer_network_on_two_devices_matches_one_device():
    X, y = _ragged_points(192, seed=0)
    settings = POINTER_SETTINGS
    one = PointerNetworkOrderer(**settings).fit(X, y)
    two = PointerNetworkOrderer(devices="all", **settings).fit(X, y)
    for key in ("loss", "val_loss"):
        np.testing.assert_allclose(two.history_[key], one.history_[key], rtol=1e-4)
    assert_same_weights(two.network_.get_weights(), one.network_.get_weights(), atol=1e-4)
    X_test, y_test = _ragged_points(37, seed=1)
    np.testing.assert_array_equal(two.predict(X_test), one.predict(X_test))
    np.testing.assert_allclose(two.predict_proba(X_test), one.predict_proba(X_test), atol=1e-5)
    assert two.score(X_test, y_test) == one.score(X_test, y_test)
    # Beam search over two devices: test_several_processes.py.
    for est in (one, two):
        est.set_params(warm_start=True, epochs=1).fit(X, y)
    assert_same_weights(two.network_.get_weights(), one.network_.get_weights(), atol=1e-4)


def test_transducer_on_two_devices_matches_one_device():
    # Sequences of mixed lengths (the replicas hold different numbers of tokens), gate
    # noise from the first epoch, clipped gradients and two initialisations.
    X, y = _strings(128, seed=0)
    settings = {**TRANSDUCER_SETTINGS, "epochs": 4}
    one = NeuralStackTransducer(**settings).fit(X, y)
    two = NeuralStackTransducer(devices="all", **settings).fit(X, y)
    np.testing.assert_allclose(two.history_["loss"], one.history_["loss"], rtol=1e-4)
    assert_same_weights(two.network_.get_weights(), one.network_.get_weights(), atol=1e-4)
    X_test, _ = _strings(21, seed=1)
    assert two.predict(X_test).tolist() == one.predict(X_test).tolist()
    for a, b in zip(two.memory_trace(X_test[:5]), one.memory_trace(X_test[:5]), strict=True):
        np.testing.assert_allclose(a["strengths"], b["strengths"], atol=1e-5)


def test_a_strategy_given_by_the_user_is_used_and_shared_by_clones():
    strategy = _strategy()
    X, y = _ragged_points(64, seed=2)
    est = PointerNetworkOrderer(hidden_size=8, epochs=1, batch_size=16, random_state=0)
    given = clone(est.set_params(devices=strategy))
    assert given.devices is strategy
    assert given._placement().strategy is strategy
    given.fit(X, y)
    every = clone(est).set_params(devices="all").fit(X, y)
    np.testing.assert_array_equal(given.predict(X), every.predict(X))
    restored = pickle.loads(pickle.dumps(given))
    assert restored.devices is None  # a strategy belongs to its process
    np.testing.assert_array_equal(restored.predict(X), given.predict(X))


def test_batches_that_do_not_split_evenly_fail_before_training():
    X, y = _ragged_points(64, seed=3)
    est = PointerNetworkOrderer(hidden_size=8, epochs=1, batch_size=16, devices="all")
    est.fit(X, y)
    weights = est.network_.get_weights()
    with pytest.raises(ValueError, match=r"hold 15 samples .* multiple of 2"):
        est.set_params(batch_size=15, warm_start=True).fit(X, y)
    assert_same_weights(est.network_.get_weights(), weights, atol=0)
    assert est.n_iter_ == 1


def test_unusable_devices_fail_with_a_clear_error():
    est = PointerNetworkOrderer(epochs=1)
    X, y = _ragged_points(8, seed=4)
    with pytest.raises(ValueError, match=r"'devices' parameter .* Got 'gpu'"):
        est.set_params(devices="gpu").fit(X, y)
    with pytest.raises(TypeError, match=r"got a builtins\.object"):
        est.set_params(devices=object()).fit(X, y)
    if BACKEND == "jax":
        import tensorflow as tf

        wrong = tf.distribute.OneDeviceStrategy("/cpu:0")
        message = "tf.distribute strategy drives the TensorFlow backend only"
    else:
        wrong = keras.distribution.DataParallel(devices=["cpu:0", "cpu:1"])
        message = "needs the JAX backend"
    with pytest.raises(TypeError, match=message):
        est.set_params(devices=wrong).fit(X, y)
    assert not hasattr(est, "network_")


@pytest.mark.skipif(BACKEND == "jax", reason="JAX fits over several processes")
def test_tensorflow_multi_worker_strategy_is_refused_with_the_reason():
    import tensorflow as tf

    X, y = _ragged_points(8, seed=4)
    est = PointerNetworkOrderer(epochs=1)
    # Created without its constructor, which would set up collectives over the workers
    # of TF_CONFIG.
    spanning = object.__new__(tf.distribute.MultiWorkerMirroredStrategy)
    with pytest.raises(ValueError, match="MultiWorkerMirroredStrategy cannot train skptr's"):
        est.set_params(devices=spanning).fit(X, y)
    assert not hasattr(est, "network_")


def test_each_process_feeds_its_own_equal_part_of_every_batch():
    from skptr._devices import Placement

    batch = ({"points": np.arange(16).reshape(8, 2), "lengths": np.arange(8)}, np.arange(8))
    first, second = (Placement(2, None, part=(index, 2)) for index in (0, 1))
    assert first.spans_processes and second.spans_processes
    inputs, targets = second.process_rows(batch)
    np.testing.assert_array_equal(inputs["points"], np.arange(8, 16).reshape(4, 2))
    np.testing.assert_array_equal(inputs["lengths"], [4, 5, 6, 7])
    np.testing.assert_array_equal(targets, [4, 5, 6, 7])
    np.testing.assert_array_equal(first.process_rows(batch)[1], [0, 1, 2, 3])
    assert first.inference is second.inference  # inference on each process's own device
    assert not first.inference.spans_processes
    one = Placement(2, None)
    assert one.process_rows(batch) is batch and one.inference is one


class _FakeDevice:
    def __init__(self, process_index):
        self.process_index = process_index


class _FakeDistribution:
    """A distribution whose mesh holds devices of the given processes."""

    def __init__(self, owners, batch_dim_name="batch"):
        devices = np.vectorize(_FakeDevice, otypes=[object])(np.asarray(owners))
        backend_mesh = type("Mesh", (), {"devices": devices})()
        self.device_mesh = type("DeviceMesh", (), {"backend_mesh": backend_mesh})()
        self.batch_dim_name = batch_dim_name


@pytest.mark.parametrize(
    ("owners", "batch_axis", "part"),
    [
        ([0, 0, 1, 1], 0, (1, 2)),  # a DataParallel over two processes of two devices
        ([[0, 0], [1, 1]], 0, (1, 2)),  # each process holds a slice of the batch axis
        ([[0, 1], [0, 1]], 1, (1, 2)),  # the batch axis second
        ([[0, 1], [2, 3]], 0, None),  # the model axis spans processes
        ([0, 0, 0, 1], 0, None),  # uneven
        ([0, 0, 2, 2], 0, None),  # process 1 of the runtime brings no device
    ],
)
def test_each_process_must_hold_equal_whole_slices_of_the_batch_axis(
    monkeypatch, owners, batch_axis, part
):
    import jax

    from skptr._devices import _process_part

    n_processes = max(np.ravel(owners)) + 1
    monkeypatch.setattr(jax, "process_index", lambda: 1)
    monkeypatch.setattr(jax, "process_count", lambda: max(n_processes, 2))
    distribution = _FakeDistribution(owners)
    if part is not None:
        assert _process_part(distribution, batch_axis, "Owner") == part
    else:
        with pytest.raises(ValueError, match=r"Owner: .*(batch axis|processes)"):
            _process_part(distribution, batch_axis, "Owner")


def test_fits_on_two_devices_are_quiet(capfd):
    X, y = _strings(32, seed=5)
    settings = dict(hidden_size=8, embedding_dim=4, memory_width=4, n_init=1, devices="all")
    # TensorFlow's oneDNN kernels print a notice on stderr, once per process, the first
    # time they meet a boolean op on a CPU where they do not support booleans; a first
    # fit leaves it behind, whichever test ran before.
    NeuralStackTransducer(epochs=1, **settings).fit(X[:16], y[:16]).predict(X[:4])
    capfd.readouterr()
    NeuralStackTransducer(epochs=1, **settings).fit(X, y).predict(X)
    captured = capfd.readouterr()
    assert captured.out == ""
    assert captured.err == ""


_PREDICT_IN_ONE_DEVICE_PROCESS = """
import json, sys
import numpy as np
import skptr
directory = sys.argv[1]
data = json.load(open(f"{directory}/inputs.json"))
orderer = skptr.load(f"{directory}/orderer.skptr")
transducer = skptr.load(f"{directory}/transducer.skptr")
X = [np.asarray(x) for x in data["points"]]
json.dump(
    {
        "devices": [orderer.devices, transducer.devices],
        "orderer": orderer.predict(X).tolist(),
        "transducer": transducer.predict(data["strings"]).tolist(),
    },
    open(f"{directory}/outputs.json", "w"),
)
"""


@pytest.mark.skipif(BACKEND != "tensorflow", reason="backend-independent; runs once")
def test_models_fitted_on_two_devices_load_in_a_one_device_process(tmp_path):
    X, y = _ragged_points(64, seed=6)
    orderer = PointerNetworkOrderer(
        hidden_size=8, epochs=2, batch_size=16, random_state=0, devices=_strategy()
    ).fit(X, y)
    strings, reversed_strings = _strings(64, seed=6)
    transducer = NeuralStackTransducer(
        hidden_size=8,
        embedding_dim=4,
        memory_width=4,
        epochs=2,
        batch_size=16,
        n_init=1,
        random_state=0,
        devices="all",
    ).fit(strings, reversed_strings)
    orderer.save(tmp_path / "orderer.skptr")
    transducer.save(tmp_path / "transducer.skptr")
    assert load(tmp_path / "orderer.skptr").devices is None
    (tmp_path / "inputs.json").write_text(
        json.dumps({"points": [x.tolist() for x in X], "strings": strings})
    )
    result = subprocess.run(
        [sys.executable, "-c", _PREDICT_IN_ONE_DEVICE_PROCESS, str(tmp_path)],
        env=one_device_environment(TF_CPP_MIN_LOG_LEVEL="3"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    outputs = json.loads((tmp_path / "outputs.json").read_text())
    assert outputs["devices"] == [None, "all"]
    assert outputs["orderer"] == orderer.predict(X).tolist()
    assert outputs["transducer"] == transducer.predict(strings).tolist()
