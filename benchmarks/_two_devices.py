"""One device against two virtual CPU devices, in one process.

``python -m benchmarks._two_devices CONFIG`` is run by the ``two_devices`` section in
a process of its own, since a backend fixes its devices when it starts: JAX gets
``--xla_force_host_platform_device_count=2``, TensorFlow splits the CPU into two
logical devices, before either starts. Each model is
fitted and used with ``devices=None`` and with ``devices="all"`` (same data, same
``random_state``); the share of test inputs for which both predict the same output
measures how far float rounding moved the two models apart. The last line printed is
a JSON list of rows.

``python -m benchmarks._two_devices CONFIG ID PORT`` is one of two processes of a JAX
multi-process runtime (one CPU device each, on this machine): both fit the same models
with a ``DataParallel`` over the two processes' devices, and process 0 prints the rows,
their agreement taken against the one-device predictions that the first form wrote to
``CONFIG["predictions"]``.
"""

from __future__ import annotations

import functools
import json
import os
import sys


def _two_virtual_devices():
    if os.environ.get("KERAS_BACKEND", "tensorflow") == "jax":
        flag = "--xla_force_host_platform_device_count=2"
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {flag}"
        return
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)


def _measure(make, X, y, X_test, epochs, repeats):
    """Training and greedy-decoding throughput of one estimator, and its predictions."""
    from ._common import Stopwatch, median_rate

    est = make(epochs=1).fit(X, y)  # traces and compiles the training step
    est.predict(X_test)  # and the decoder
    train, decode = [], []
    for _ in range(repeats):
        est.set_params(warm_start=True, epochs=epochs)
        with Stopwatch() as watch:
            est.fit(X, y)
        train.append(watch.elapsed)
        with Stopwatch() as watch:
            predicted = est.predict(X_test)
        decode.append(watch.elapsed)
    return {
        "train_seq_per_s": median_rate(len(X) * epochs, train),
        "greedy_seq_per_s": median_rate(len(X_test), decode),
        "train_seconds": train,
        "decode_seconds": decode,
    }, predicted


def _tasks(config):
    """Each model's constructor (taking ``devices``), training data and test inputs."""
    import numpy as np

    from skptr import NeuralStackTransducer, PointerNetworkOrderer

    rng = np.random.default_rng(0)
    n, length = config["n_train"], config["length"]
    points = rng.random((n + config["n_test"], length, 2))
    order = np.argsort(points[:, :, 0], axis=1)
    strings = [
        "".join(rng.choice(list("abcdefgh"), rng.integers(length // 2, length + 1)))
        for _ in range(n + config["n_test"])
    ]
    tasks = {
        "pointer network": (
            lambda devices, **kw: PointerNetworkOrderer(
                hidden_size=config["hidden_size"],
                batch_size=config["batch_size"],
                random_state=0,
                devices=devices,
                **kw,
            ),
            points[:n],
            order[:n],
            points[n:],
        ),
        "transducer": (
            lambda devices, **kw: NeuralStackTransducer(
                hidden_size=config["hidden_size"],
                batch_size=config["batch_size"],
                n_init=1,
                random_state=0,
                devices=devices,
                **kw,
            ),
            strings[:n],
            [s[::-1] for s in strings[:n]],
            strings[n:],
        ),
    }
    return tasks


def _keys(predictions):
    """Each prediction (an ordering or a string) as a string, for comparisons."""
    return [" ".join(map(str, p)) for p in predictions]


def _agreement(a, b):
    """Share of the predictions ``a`` and ``b`` (see :func:`_keys`) that are the same."""
    return sum(x == y for x, y in zip(a, b, strict=True)) / len(a)


def main(config):
    _two_virtual_devices()
    import keras

    rows, one_device = [], {}
    for model, (make, X, y, X_test) in _tasks(config).items():
        predictions = {}
        for devices in (None, "all"):
            n_replicas = make(devices)._placement().n_replicas
            figures, predictions[devices] = _measure(
                functools.partial(make, devices),
                X,
                y,
                X_test,
                config["epochs"],
                config["repeats"],
            )
            rows.append(
                {
                    "backend": keras.backend.backend(),
                    "model": model,
                    "devices": "one" if devices is None else "all",
                    "replicas": n_replicas,
                    **figures,
                }
            )
            print(f"{model}, devices={devices!r}: {figures}", file=sys.stderr, flush=True)
        one_device[model] = _keys(predictions[None])
        agreement = _agreement(one_device[model], _keys(predictions["all"]))
        rows[-1]["agreement"] = rows[-2]["agreement"] = agreement
    if config.get("predictions"):
        with open(config["predictions"], "w") as file:
            json.dump(one_device, file)
    print(json.dumps(rows))


def main_process(config, process_id, port):
    """One of two processes that fit together (see the module's docstring)."""
    import jax

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    import keras

    keras.distribution.initialize(f"localhost:{port}", num_processes=2, process_id=process_id)
    devices = keras.distribution.DataParallel(devices=keras.distribution.list_devices())
    with open(config["predictions"]) as file:
        one_device = json.load(file)
    rows = []
    for model, (make, X, y, X_test) in _tasks(config).items():
        figures, predicted = _measure(
            functools.partial(make, devices), X, y, X_test, config["epochs"], config["repeats"]
        )
        rows.append(
            {
                "backend": keras.backend.backend(),
                "model": model,
                "devices": "two processes",
                "replicas": len(jax.devices()),
                "processes": jax.process_count(),
                **figures,
                "agreement": _agreement(one_device[model], _keys(predicted)),
            }
        )
        print(f"{model}, two processes: {figures}", file=sys.stderr, flush=True)
    if process_id == 0:
        print(json.dumps(rows))


if __name__ == "__main__":
    if len(sys.argv) > 2:
        main_process(json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
    else:
        main(json.loads(sys.argv[1]))
