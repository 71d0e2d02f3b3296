"""A fit over two processes of a multi-process JAX runtime (one CPU device each),
against the same fit over two devices of one process (see tests/conftest.py)."""

import json
import socket
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest
from _two_processes import (
    POINTER_SETTINGS,
    TRANSDUCER_SETTINGS,
    assert_same_weights,
    one_device_environment,
    ragged_points,
    strings,
)

from skptr import NeuralStackTransducer, PointerNetworkOrderer, load

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "jax",
    reason="TensorFlow's multi-worker strategy cannot train skptr's networks",
)

WORKER = Path(__file__).with_name("_two_processes.py")


def _free_port():
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return probe.getsockname()[1]


def _fit_in_two_processes(directory):
    """What two processes fitting together wrote: their results and weights."""
    env = one_device_environment(KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="3")
    port = str(_free_port())
    logs = [open(directory / f"process-{index}.log", "w") for index in (0, 1)]
    workers = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(index), port, str(directory)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=logs[index],
        )
        for index in (0, 1)
    ]
    try:
        codes = [worker.wait(timeout=600) for worker in workers]
    finally:
        for worker, log in zip(workers, logs, strict=True):
            worker.kill()
            log.close()
    logs = [(directory / f"process-{index}.log").read_text()[-3000:] for index in (0, 1)]
    assert codes == [0, 0], "\n".join(logs)
    results = [json.loads((directory / f"process-{i}.json").read_text()) for i in (0, 1)]
    weights = [dict(np.load(directory / f"process-{i}.npz")) for i in (0, 1)]
    return directory, results, weights


def _weights(weights, prefix):
    names = [name for name in weights if name.startswith(prefix)]
    return [weights[name] for name in sorted(names, key=lambda name: int(name.split("_")[1]))]


def _check_both_processes_learn_and_predict_the_same(two_processes):
    _, (first, second), (weights_0, weights_1) = two_processes
    assert first["devices"] == second["devices"] == [2, 1]  # two global, one local
    assert first["rows_fed"] == second["rows_fed"] == [8]  # half of each batch of 16
    for key in first:
        assert first[key] == second[key], key
    assert sorted(weights_0) == sorted(weights_1)
    for name in weights_0:
        np.testing.assert_array_equal(weights_0[name], weights_1[name])


def _check_pointer_network_over_two_processes_matches_two_devices_of_one(two_processes):
    directory, (first, second), (weights, _) = two_processes
    X, y = ragged_points(192, seed=0)
    X_test, _ = ragged_points(37, seed=1)
    one = PointerNetworkOrderer(devices="all", **POINTER_SETTINGS).fit(X, y)
    for key in ("loss", "val_loss"):
        np.testing.assert_allclose(first["pointer_history"][key], one.history_[key], rtol=1e-4)
    assert_same_weights(_weights(weights, "pointer_"), one.network_.get_weights(), atol=1e-4)
    assert first["pointer_greedy"] == one.predict(X_test).tolist()
    one.set_params(decode="beam", beam_width=3)
    assert first["pointer_beam"] == one.predict(X_test).tolist()
    one.set_params(warm_start=True, epochs=1).fit(X, y)
    assert_same_weights(_weights(weights, "warm_"), one.network_.get_weights(), atol=1e-4)
    assert second["alone"] == second["alone_one_device"] == one.predict(X_test[:5]).tolist()
    saved = load(directory / "pointer.skptr")  # after the warm start, by process 0
    assert saved.devices is None
    assert saved.predict(X_test[:5]).tolist() == second["alone"]


def _check_transducer_over_two_processes_matches_two_devices_of_one(two_processes):
    directory, (first, _), (weights, _) = two_processes
    S, S_reversed = strings(128, seed=0)
    S_test, _ = strings(21, seed=1)
    one = NeuralStackTransducer(devices="all", **TRANSDUCER_SETTINGS).fit(S, S_reversed)
    history = first["transducer_history"]
    np.testing.assert_allclose(history["loss"], one.history_["loss"], rtol=1e-4)
    assert_same_weights(_weights(weights, "transducer_"), one.network_.get_weights(), atol=1e-4)
    assert first["transducer_predict"] == one.predict(S_test).tolist()
    traces = one.memory_trace(S_test[:3])
    for strengths, trace in zip(first["transducer_strengths"], traces, strict=True):
        np.testing.assert_allclose(strengths, trace["strengths"], atol=1e-5)
    assert (
        load(directory / "transducer.skptr").predict(S_test).tolist()
        == (first["transducer_predict"])
    )


def _check_processes_that_disagree_fail_in_every_process_with_the_reason(two_processes):
    _, results, _ = two_processes
    for result in results:
        for key in ("unseeded", "one_unseeded"):
            assert "needs the same integer random_state in every process" in result[key]
        assert "process 0 has none" in result["unseeded"]
        assert "process 0 has none" in result["one_unseeded"]
        for key in ("other_data", "other_settings"):
            assert "process 1 fits otherwise than process 0" in result[key]
        assert "a model axis that spans processes is not supported" in result["model_across"]


def test_a_fit_over_two_processes(tmp_path):
    # One test, so that the two processes run once (pytest-xdist would run a shared
    # fixture once per worker).
    two_processes = _fit_in_two_processes(tmp_path)
    _check_both_processes_learn_and_predict_the_same(two_processes)
    _check_pointer_network_over_two_processes_matches_two_devices_of_one(two_processes)
    _check_transducer_over_two_processes_matches_two_devices_of_one(two_processes)
    _check_processes_that_disagree_fail_in_every_process_with_the_reason(two_processes)
