"""Mixed precision: throughput and accuracy of both estimators under each dtype policy.

Each model is trained from the same data and ``random_state`` under ``float32``,
``mixed_bfloat16`` and ``mixed_float16`` (float32 weights, 16-bit computation). The
first fit trains for ``epochs`` epochs (compiling included) and is then scored on test
inputs drawn with NumPy; training and greedy-decoding throughput are the medians of
``repeats`` further one-epoch fits (``warm_start``) and ``predict`` calls, interleaved
across the policies so that a load spike hits all of them alike.
"""

from __future__ import annotations

import keras
import numpy as np

from skptr import NeuralStackTransducer, PointerNetworkOrderer
from skptr.metrics import coarse_accuracy, sequence_accuracy

from ._common import Stopwatch, device_info, median_rate

__all__ = ["precision"]

POLICIES = ("float32", "mixed_bfloat16", "mixed_float16")

#: The transducer's alphabet: reversal of strings over eight letters.
ALPHABET = list("abcdefgh")


def _tasks(config):
    """The inputs, targets, test data and exact-match metric of both models, drawn
    with NumPy."""
    rng = np.random.default_rng(config.get("data_seed", 0))
    n, n_test, length = config["n_train"], config["n_test"], config["length"]
    points = rng.random((n + n_test, length, 2))
    order = np.argsort(points[:, :, 0], axis=1)
    strings = [
        "".join(rng.choice(ALPHABET, rng.integers(1, length + 1))) for _ in range(n + n_test)
    ]
    reversed_strings = [s[::-1] for s in strings]
    return {
        "pointer network": (points[:n], order[:n], points[n:], order[n:], sequence_accuracy),
        "transducer": (
            strings[:n],
            reversed_strings[:n],
            strings[n:],
            reversed_strings[n:],
            coarse_accuracy,
        ),
    }


def _make(model, config, policy, batch_size):
    common = {
        "hidden_size": config["hidden_size"],
        "batch_size": batch_size,
        "epochs": config["epochs"],
        "random_state": 0,
        "dtype_policy": policy,
    }
    if model == "pointer network":
        return PointerNetworkOrderer(**common)
    return NeuralStackTransducer(n_init=1, **common)


def precision(config, log):
    """Training and greedy-decoding throughput, and accuracy, under each dtype policy.

    Parameters
    ----------
    config : dict
        ``n_train``, ``n_test``, ``length`` (points to sort by their first coordinate;
        the longest string to reverse), ``hidden_size``, ``batch_sizes``, ``epochs``
        (of the scored fit), ``repeats`` (timed one-epoch fits and predicts) and
        optionally ``policies``.
    log : callable
        Progress printer.

    Returns
    -------
    list of dict
        One row per model, batch size and policy, with throughputs relative to
        float32 at the same batch size.
    """
    accelerator = device_info()["accelerator"]
    policies = config.get("policies", POLICIES)
    rows = []
    for model, (X, y, X_test, y_test, exact_share) in _tasks(config).items():
        for batch_size in config["batch_sizes"]:
            estimators, figures = {}, {}
            for policy in policies:
                est = _make(model, config, policy, batch_size)
                with Stopwatch() as first:
                    est.fit(X, y)
                prediction = est.predict(X_test)
                estimators[policy] = est.set_params(warm_start=True, epochs=1)
                figures[policy] = {
                    "first_fit_s": first.elapsed,
                    "exact": exact_share(y_test, prediction),
                    "train_seconds": [],
                    "decode_seconds": [],
                }
            for _ in range(config["repeats"]):
                for policy, est in estimators.items():
                    with Stopwatch() as watch:
                        est.fit(X, y)
                    figures[policy]["train_seconds"].append(watch.elapsed)
                    with Stopwatch() as watch:
                        est.predict(X_test)
                    figures[policy]["decode_seconds"].append(watch.elapsed)
            for policy in policies:
                row = {
                    "backend": keras.backend.backend(),
                    "accelerator": accelerator,
                    "model": model,
                    "policy": policy,
                    "batch_size": batch_size,
                    "hidden_size": config["hidden_size"],
                    "length": config["length"],
                    "n_train": len(X),
                    "n_test": len(X_test),
                    "epochs": config["epochs"],
                    **figures[policy],
                    "train_seq_per_s": median_rate(len(X), figures[policy]["train_seconds"]),
                    "greedy_seq_per_s": median_rate(
                        len(X_test), figures[policy]["decode_seconds"]
                    ),
                }
                rows.append(row)
            base = rows[-len(policies)]
            for row in rows[-len(policies) :]:
                row["train_vs_float32"] = row["train_seq_per_s"] / base["train_seq_per_s"]
                row["greedy_vs_float32"] = row["greedy_seq_per_s"] / base["greedy_seq_per_s"]
                log(
                    f"{model}, batch {batch_size}, {row['policy']}: train "
                    f"{row['train_seq_per_s']:,.0f} seq/s (x{row['train_vs_float32']:.2f}), "
                    f"greedy {row['greedy_seq_per_s']:,.0f} seq/s "
                    f"(x{row['greedy_vs_float32']:.2f}), exact {row['exact']:.3f}, "
                    f"first fit {row['first_fit_s']:.1f} s"
                )
    return rows
