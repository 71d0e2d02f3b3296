"""Tours of 100 to 1,000 cities learned from the cost, and one model for a range of sizes.

``tour_scale`` trains a :class:`~skptr.PointerNetworkOrderer` with the user guide's
settings for tours from the cost ``"tour"``, for each seed and each training pool:
``n_pool`` instances drawn with NumPy, uniform points in the unit square, each of a
size uniform in the pool's range (20 to 100 points, or 100 alone). Each training runs
in a process of its own, one ``fit(epochs=1, warm_start=True)`` per epoch (the user
guide's way to spend a time budget), until ``seconds`` of training have passed, the
last epoch stopped by a per-batch callback. After each epoch, outside the budget, the
greedy tours of the learning-curve instances (their own seed) are measured.

Each model is then judged in the same process:

- For each target (a size, and a limit on the decoding time per instance), every
  decoding of ``decodings`` runs on validation instances of that size (their own seed);
  the target's *chosen* decoding is the one with the shortest validation tours among
  those within the limit. Only the test instances are reported.
- Test instances of each size in ``test_sizes`` (their own seed), against LKH-3's tours
  (the ``elkai`` package), with every decoding whose validation time was within the
  largest limit.
- The TSPLIB instances of ``data/tsplib_euc2d.json`` (2-D Euclidean, 51 to 200 cities,
  with known optima), the coordinates scaled into the unit square (one factor for both
  axes), the tours measured in TSPLIB's integer metric against the optimum.

``python -m benchmarks.tour_scale SPEC`` is one training and its judging; it prints a
JSON object as its last line.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

__all__ = ["tour_scale"]

TSPLIB_FILE = Path(__file__).parent / "data" / "tsplib_euc2d.json"


def draw_pool(n_pool, sizes, seed):
    """``n_pool`` instances of uniform points, each of a size uniform in ``sizes``
    (inclusive): an array when they all have one size, else a list."""
    import numpy as np

    rng = np.random.default_rng([seed, 83])
    low, high = sizes
    if low == high:
        return rng.random((n_pool, low, 2))
    return [rng.random((int(size), 2)) for size in rng.integers(low, high + 1, size=n_pool)]


def test_instances(n_points, n_instances, seed):
    """Instances of ``n_points`` uniform points from their own seed."""
    import numpy as np

    return np.random.default_rng([seed, n_points]).random((n_instances, n_points, 2))


def tsplib_instances():
    """The TSPLIB instances: name to (coordinates, optimum)."""
    import numpy as np

    data = json.loads(TSPLIB_FILE.read_text())["instances"]
    return {
        name: (np.asarray(item["coordinates"], dtype=np.float64), item["optimum"])
        for name, item in data.items()
    }


def tsplib_length(coordinates, tour):
    """A tour's length in TSPLIB's EUC_2D metric (distances rounded to integers)."""
    import numpy as np

    visited = coordinates[tour]
    steps = np.linalg.norm(visited - np.roll(visited, -1, axis=0), axis=1)
    return int(np.sum(np.floor(steps + 0.5)))


def unit_square(coordinates):
    """Coordinates moved and scaled into the unit square, one factor for both axes."""
    low = coordinates.min(axis=0)
    return (coordinates - low) / (coordinates - low).max()


def lkh_lengths(X):
    """LKH-3's tour length of each instance."""
    import numpy as np

    from skptr.costs import tour_length

    from .budget import _lkh_tour

    return tour_length(X, np.stack([_lkh_tour(points) for points in X]))


def _training_budget(seconds):
    """A per-batch Keras callback that stops a fit once the seconds spent in training
    steps reach ``seconds`` (time outside fits is not counted); its ``used``,
    ``batches`` and ``spent`` say how far it got."""
    import keras

    class TrainingBudget(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.used, self.batches, self.batch_began = 0.0, 0, None

        @property
        def spent(self):
            return self.used >= seconds

        def on_train_batch_begin(self, batch, logs=None):
            self.batch_began = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            self.used += time.perf_counter() - self.batch_began
            self.batches += 1
            if self.spent:
                self.model.stop_training = True

    return TrainingBudget()


def _decode(est, X, params, limit_s):
    """Orderings of ``X`` under decoding ``params`` and the seconds per instance of a
    second call (the first compiles the decoder for the call's shape), unless the first
    already took more than ``limit_s`` per instance."""
    est.set_params(**params)
    for _ in range(2):
        start = time.perf_counter()
        orderings = est.predict(X)
        seconds = (time.perf_counter() - start) / len(X)
        if seconds > limit_s:
            break
    return orderings, seconds


def _judge(est, spec, log):
    """Validation choices, test rows and TSPLIB rows of a trained model."""
    import numpy as np

    from skptr.costs import tour_length

    decodings, targets = spec["decodings"], spec["targets"]
    slowest = max(limit for _, limit in targets.values())
    # The first decoding too slow for a target's size: the later ones, listed dearer,
    # are not run on that size's test instances either.
    chosen, validation, too_slow = {}, {}, {}
    for target, (n_points, limit_s) in targets.items():
        X = test_instances(n_points, spec["n_validation"][str(n_points)], spec["validation_seed"])
        lengths, seconds = {}, {}
        for name, params in decodings.items():
            orderings, seconds[name] = _decode(est, X, params, limit_s)
            lengths[name] = float(tour_length(X, orderings).mean())
            if seconds[name] > limit_s:
                too_slow[n_points] = name
                break
        within = [name for name in lengths if seconds[name] <= limit_s]
        chosen[target] = min(within, key=lengths.get)
        validation[target] = {"mean_length": lengths, "s_per_instance": seconds}
        log(f"  {target}: chose {chosen[target]} on validation ({validation[target]})")

    rows = []
    for n_points in spec["test_sizes"]:
        X = test_instances(n_points, spec["n_test"][str(n_points)], spec["test_seed"])
        reference = np.asarray(spec["references"][str(n_points)])
        for name, params in decodings.items():
            if too_slow.get(n_points) == name:
                break
            orderings, seconds = _decode(est, X, params, slowest)
            ratio = tour_length(X, orderings) / reference
            rows.append(
                {
                    "n_points": n_points,
                    "decoding": name,
                    "ratio": float(ratio.mean()),
                    "worst_ratio": float(ratio.max()),
                    "ms_per_instance": 1000 * seconds,
                }
            )
            log(f"  test {n_points}: {name} {ratio.mean():.4f} at {1000 * seconds:.1f} ms")
            if seconds > slowest:
                break

    tsplib = []
    for name, (coordinates, optimum) in tsplib_instances().items():
        scaled = unit_square(coordinates)[None]
        row = {"instance": name, "n_points": len(coordinates), "optimum": optimum}
        for decoding in ("greedy", chosen["tsplib"]):
            orderings, seconds = _decode(est, scaled, decodings[decoding], targets["tsplib"][1])
            length = tsplib_length(coordinates, orderings[0])
            row[decoding] = {"gap": length / optimum - 1, "s": seconds}
        tsplib.append(row)
    return {"chosen": chosen, "validation": validation, "test": rows, "tsplib": tsplib}


def train_and_judge(spec, log=print):
    """One training of ``spec`` in this process, then the judging of its model.

    Returns
    -------
    dict
        ``curve`` (after each epoch: training seconds, instances, the learning-curve
        instances' mean greedy length), ``instances``, ``training_s``,
        ``instances_per_s``, ``peak_training_mb``, and the judging.
    """
    import numpy as np

    from skptr import PointerNetworkOrderer
    from skptr.costs import tour_length

    from ._common import peak_mb

    X = draw_pool(spec["n_pool"], spec["sizes"], spec["seed"])
    curve_X = test_instances(spec["curve_points"], spec["n_curve"], spec["validation_seed"])
    budget = _training_budget(spec["seconds"])
    est = PointerNetworkOrderer(
        **spec["params"],
        cost="tour",
        epochs=1,
        warm_start=True,
        callbacks=[budget],
        random_state=spec["seed"],
    )
    curve = []
    while not budget.spent:
        est.fit(X)
        est.set_params(decode="greedy", augment=False)
        length = float(tour_length(curve_X, est.predict(curve_X)).mean())
        curve.append({"training_s": budget.used, "batches": budget.batches, "length": length})
        log(f"  epoch {len(curve)}: {budget.used:.0f} s, greedy length {length:.4f}")
    if not np.isfinite(est.history_["loss"][-1]):
        raise RuntimeError("the training cost is not finite")
    instances = budget.batches * est.batch_size
    result = {
        "curve": curve,
        "epochs": len(curve),
        "instances": instances,
        "training_s": budget.used,
        "instances_per_s": instances / budget.used,
        "peak_training_mb": peak_mb(),
    }
    return {**result, **_judge(est, spec, log)}


#: The settings a row depends on (the seeds and the trainings are the rows' own keys).
_ROW_SETTINGS = (
    "seconds",
    "n_pool",
    "params",
    "curve_points",
    "n_curve",
    "decodings",
    "targets",
    "n_validation",
    "n_test",
    "test_sizes",
    "validation_seed",
    "test_seed",
)


def _stored(path, key):
    """The object stored at ``path`` under ``key``, or None."""
    if path is None or not path.exists():
        return None
    stored = json.loads(path.read_text())
    return stored["value"] if stored.get("key") == key else None


def _store(path, key, value):
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"key": key, "value": value}, indent=1))


def tour_scale(config, log):
    """Train and judge every (seed, training) of ``config``.

    An hour of training per row makes the whole run longer than a working day, so the
    run can be resumed: each finished row is stored in ``rows_dir`` with the settings
    it ran with and the tree of ``skptr/`` it measured, and a later run with the same
    settings and package code takes it instead of training again (a row of other
    settings or code is trained again). LKH-3's reference tours are stored the same way.

    Parameters
    ----------
    config : dict
        ``seeds``; ``trainings`` (name to the size range of its pool and its
        ``learning_rate_decay``); ``seconds`` of training; ``n_pool``; ``params`` (the
        estimator's settings); ``curve_points`` and ``n_curve`` (learning-curve
        instances); ``decodings`` (name to decoding parameters, cheapest first);
        ``targets`` (name to its size and limit in seconds per instance, ``"tsplib"``
        among them); ``n_validation`` and ``n_test`` (per size); ``test_sizes``;
        ``validation_seed``, ``test_seed``; ``timeout_s`` per training; ``rows_dir``
        (relative to the benchmarks' folder; None: nothing is stored or taken).
    log : callable
        Progress printer.

    Returns
    -------
    dict
        ``references`` (LKH-3's mean tour length per test size and its seconds per
        instance), ``curve_reference`` (LKH-3's mean length on the learning-curve
        instances) and ``rows``, one per (seed, training), each with the package tree
        and commit it ran at.
    """
    from ._common import Stopwatch, run_in_own_process, source_version
    from .budget import lkh_available

    if not lkh_available():
        log("tour_scale skipped: its reference tours need the elkai package (LKH-3)")
        return {"skipped": "elkai (LKH-3) is not installed"}
    rows_dir = config["rows_dir"] and Path(__file__).parent / config["rows_dir"]
    settings = {key: config[key] for key in _ROW_SETTINGS}
    reference_key = {key: config[key] for key in ("test_sizes", "n_test", "test_seed")}
    reference_key.update(curve=[config["curve_points"], config["n_curve"]])
    reference_key.update(validation_seed=config["validation_seed"])
    references_path = rows_dir and rows_dir / "references.json"
    stored = _stored(references_path, reference_key)
    if stored is None:
        references, reference_s = {}, {}
        for n_points in config["test_sizes"]:
            X = test_instances(n_points, config["n_test"][str(n_points)], config["test_seed"])
            with Stopwatch() as watch:
                references[str(n_points)] = [float(v) for v in lkh_lengths(X)]
            reference_s[str(n_points)] = watch.elapsed / len(X)
            log(f"LKH-3 on {len(X)} test instances of {n_points} points: {watch.elapsed:.0f} s")
        curve_X = test_instances(
            config["curve_points"], config["n_curve"], config["validation_seed"]
        )
        stored = {
            "references": references,
            "reference_s": reference_s,
            "curve_reference": float(lkh_lengths(curve_X).mean()),
        }
        _store(references_path, reference_key, stored)
    references = stored["references"]
    tree = source_version("HEAD:skptr")
    rows = []
    for seed in config["seeds"]:
        for name, training in config["trainings"].items():
            path = rows_dir and rows_dir / f"{name.replace(' ', '_')}-seed{seed}.json"
            key = {**settings, "training": training, "seed": seed, "skptr_tree": tree}
            row = _stored(path, key)
            if row is not None and row["status"] == "ok":
                log(f"{name}, seed {seed}: stored row of {row['finished']} taken")
                rows.append(row)
                continue
            spec = {**settings, "seed": seed, "sizes": training["sizes"]}
            spec.update(
                params={**config["params"], "learning_rate_decay": training["decay"]},
                references=references,
            )
            log(f"{name}, seed {seed}: training for {config['seconds']} s")
            measured = run_in_own_process(
                "benchmarks.tour_scale", spec, config["timeout_s"], f"{name}, seed {seed}"
            )
            row = {
                "skptr_commit": source_version(),
                "skptr_tree": tree,
                "finished": time.strftime("%Y-%m-%d %H:%M"),
                "training": name,
                "seed": seed,
                **measured,
            }
            _store(path, key, row)
            rows.append(row)
            log(f"{name}, seed {seed}: {measured['status']}")
    return {
        "curve_reference": stored["curve_reference"],
        "references": {
            size: {
                "mean_length": sum(v) / len(v),
                "s_per_instance": stored["reference_s"][size],
            }
            for size, v in references.items()
        },
        "rows": rows,
    }


if __name__ == "__main__":
    print(json.dumps(train_and_judge(json.loads(sys.argv[1]), log=lambda m: None)))
