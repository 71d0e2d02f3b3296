"""One of two processes that fit together over a multi-process JAX runtime.

Also the data, settings and helpers that the device tests share. Run by
``test_several_processes.py`` as ``python _two_processes.py ID PORT DIRECTORY``:
both processes start a JAX runtime of two processes with one CPU device each, fit the
same estimators with a ``DataParallel`` over both devices, and write what they learned
and predicted to ``DIRECTORY/process-ID.json`` and ``.npz``.
"""

import json
import os
import sys

import numpy as np

POINTER_SETTINGS = dict(
    hidden_size=16,
    epochs=3,
    batch_size=16,
    validation_fraction=1 / 6,
    early_stopping=True,
    random_state=3,
)
TRANSDUCER_SETTINGS = dict(
    hidden_size=16,
    embedding_dim=8,
    memory_width=8,
    epochs=3,
    batch_size=16,
    n_init=2,
    gate_noise=0.5,
    gate_noise_start=0.0,
    clipnorm=0.5,
    random_state=0,
)


def ragged_points(n_samples, seed):
    rng = np.random.default_rng(seed)
    X = [rng.random((rng.integers(3, 9), 2)) for _ in range(n_samples)]
    return X, [np.argsort(x[:, 0]) for x in X]


def strings(n_samples, seed):
    rng = np.random.default_rng(seed)
    X = ["".join(rng.choice(list("abc"), size=rng.integers(1, 9))) for _ in range(n_samples)]
    return X, [x[::-1] for x in X]


def assert_same_weights(a, b, atol):
    """Assert that two lists of weight arrays agree within ``atol``."""
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(x, y, atol=atol)


def one_device_environment(**changes):
    """The environment of a child process with one device of its own (the root
    conftest.py keeps the flag that splits the CPU out of the environment): this one's
    without pytest-xdist's worker id, updated with ``changes``."""
    env = {key: value for key, value in os.environ.items() if key != "PYTEST_XDIST_WORKER"}
    return {**env, **changes}


def _error(fit):
    try:
        fit()
    except ValueError as error:
        return str(error)
    return None


def main(process_id, port, directory):
    import jax

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    import keras

    keras.distribution.initialize(f"localhost:{port}", num_processes=2, process_id=process_id)
    from skptr import NeuralStackTransducer, PointerNetworkOrderer, _batches

    rows_fed = set()
    draw_batch = _batches._EpochSource.__getitem__

    def recorded(source, index):
        batch = draw_batch(source, index)
        rows_fed.add(len(batch[1]))
        return batch

    _batches._EpochSource.__getitem__ = recorded
    devices = keras.distribution.DataParallel(devices=keras.distribution.list_devices())
    results = {"devices": [len(jax.devices()), len(jax.local_devices())]}

    X, y = ragged_points(192, seed=0)
    X_test, _ = ragged_points(37, seed=1)
    pointer = PointerNetworkOrderer(devices=devices, **POINTER_SETTINGS).fit(X, y)
    results["rows_fed"] = sorted(rows_fed)
    results["pointer_history"] = pointer.history_
    results["pointer_greedy"] = pointer.predict(X_test).tolist()
    pointer.set_params(decode="beam", beam_width=3)
    results["pointer_beam"] = pointer.predict(X_test).tolist()
    weights = {f"pointer_{i}": w for i, w in enumerate(pointer.network_.get_weights())}
    pointer.set_params(warm_start=True, epochs=1).fit(X, y)
    weights.update({f"warm_{i}": w for i, w in enumerate(pointer.network_.get_weights())})

    S, S_reversed = strings(128, seed=0)
    S_test, _ = strings(21, seed=1)
    transducer = NeuralStackTransducer(devices=devices, **TRANSDUCER_SETTINGS).fit(S, S_reversed)
    results["transducer_history"] = transducer.history_
    results["transducer_predict"] = transducer.predict(S_test).tolist()
    results["transducer_strengths"] = [
        trace["strengths"].tolist() for trace in transducer.memory_trace(S_test[:3])
    ]
    weights.update({f"transducer_{i}": w for i, w in enumerate(transducer.network_.get_weights())})
    np.savez(f"{directory}/process-{process_id}.npz", **weights)
    if process_id == 0:
        pointer.save(f"{directory}/pointer.skptr")
        transducer.save(f"{directory}/transducer.skptr")

    small = dict(hidden_size=8, batch_size=16, devices=devices)
    results["unseeded"] = _error(lambda: PointerNetworkOrderer(epochs=1, **small).fit(X, y))
    seed = None if process_id == 0 else 0
    results["one_unseeded"] = _error(
        lambda: PointerNetworkOrderer(epochs=1, random_state=seed, **small).fit(X, y)
    )
    X_mine, y_mine = ragged_points(64, seed=process_id)
    results["other_data"] = _error(
        lambda: PointerNetworkOrderer(epochs=1, random_state=0, **small).fit(X_mine, y_mine)
    )
    epochs = 1 + process_id
    results["other_settings"] = _error(
        lambda: PointerNetworkOrderer(epochs=epochs, random_state=0, **small).fit(X, y)
    )
    mesh = keras.distribution.DeviceMesh((1, 2), ["batch", "model"], jax.devices())
    across = keras.distribution.ModelParallel(
        layout_map=keras.distribution.LayoutMap(mesh), batch_dim_name="batch"
    )
    results["model_across"] = _error(
        lambda: PointerNetworkOrderer(epochs=1, random_state=0, devices=across).fit(X, y)
    )
    # Inference runs on this process's own device: one process predicts alone, also
    # once its estimator no longer names the distribution.
    if process_id == 1:
        results["alone"] = pointer.predict(X_test[:5]).tolist()
        pointer.set_params(devices=None)
        results["alone_one_device"] = pointer.predict(X_test[:5]).tolist()
    with open(f"{directory}/process-{process_id}.json", "w") as file:
        json.dump(results, file)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
