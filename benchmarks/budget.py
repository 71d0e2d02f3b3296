"""The pointer network against a PyTorch pointer network, and what it reaches in 300 s.

``pointer_vs_torch`` times skptr and :class:`~benchmarks._torch_reference.
TorchPointerReference` side by side at one size (convex hulls of 10 points, one-layer
unidirectional LSTMs of 128 units, batch 128), interleaving their repeats so that a load
spike hits both sides of a ratio; the reference runs in a process of its own (in one
process, the two libraries' thread pools slowed both sides by a third or more).
``pointer_budget`` trains the default estimator, and presets of it, for a fixed number of
seconds of training time per task and records accuracy against those seconds; test sets
are drawn with plain NumPy and labelled here (SciPy's hull, exact Held-Karp tours, LKH-3
tours from the ``elkai`` package for 20 cities, ``argsort``), not by
:mod:`skptr.datasets`.
"""

from __future__ import annotations

import importlib.util

import keras
import numpy as np
from scipy.spatial import ConvexHull

from skptr import PointerNetworkOrderer
from skptr.datasets import make_convex_hull, make_sorting, make_tsp, solve_tsp_exact
from skptr.metrics import sequence_accuracy, tour_length

from ._common import Stopwatch, check, median_rate
from ._torch_reference import TorchProcess, torch_available
from .quality import hull_area_coverage

__all__ = ["pointer_budget", "pointer_vs_torch"]


def _skptr_and_torch(config, X, y):
    est = PointerNetworkOrderer(
        hidden_size=config["hidden_size"],
        bidirectional=False,
        batch_size=config["batch_size"],
        epochs=1,
        warm_start=True,
        random_state=0,
    )
    est.fit(X, y)  # builds and traces the training step
    (inputs, targets, *_), _ = est._prepare_training_data(X, y, reset=False)
    reference = None
    if torch_available():
        reference = TorchProcess(
            n_features=est.n_features_in_,
            hidden_size=config["hidden_size"],
            learning_rate=est.learning_rate,
            allow_end=est.ordered_subsets_,
            decoder_loop=config.get("torch_decoder_loop", False),
        )
        reference.call("fit_epoch", inputs, targets, config["batch_size"])
    return est, reference, inputs, targets


def pointer_vs_torch(config, log):
    """Training and decoding throughput of skptr and of a PyTorch pointer network.

    Parameters
    ----------
    config : dict
        ``n_train`` (sequences per timed epoch), ``n_infer``, ``hidden_size``,
        ``batch_size``, ``torch_batch_size`` (decoding batch of the reference),
        ``repeats``.
    log : callable
        Progress printer.

    Returns
    -------
    list of dict
        One row: sequences per second of each side and their ratios.
    """
    X, y = make_convex_hull(config["n_train"], n_points=10, random_state=0)
    X_infer = X[: config["n_infer"]]
    est, reference, inputs, targets = _skptr_and_torch(config, X, y)
    infer_inputs = {key: inputs[key][: len(X_infer)] for key in ("values", "lengths")}
    decoders = {"greedy": ("greedy", 1), "beam3": ("beam", 3)}
    for method, width in decoders.values():
        est.set_params(decode=method, beam_width=width)
        est.predict(X_infer)
    seconds = {name: [] for name in ("train", *decoders)}
    torch_seconds = {name: [] for name in seconds}
    for _ in range(config["repeats"]):
        with Stopwatch() as watch:
            est.fit(X, y)
        seconds["train"].append(watch.elapsed)
        if reference is not None:
            _, elapsed = reference.call("fit_epoch", inputs, targets, config["batch_size"])
            torch_seconds["train"].append(elapsed)
        for name, (method, width) in decoders.items():
            est.set_params(decode=method, beam_width=width)
            with Stopwatch() as watch:
                prediction = est.predict(X_infer)
            seconds[name].append(watch.elapsed)
            if reference is not None:
                reference_prediction, elapsed = reference.call(
                    "decode", infer_inputs, config["torch_batch_size"], width
                )
                torch_seconds[name].append(elapsed)
                check(
                    reference_prediction.shape == (len(X_infer), 10),
                    f"reference decoded {reference_prediction.shape}",
                )
        check(len(prediction) == len(X_infer), f"predict returned {len(prediction)} rows")
    if reference is not None:
        reference.close()
    counts = {"train": len(X), "greedy": len(X_infer), "beam3": len(X_infer)}
    row = {
        "backend": keras.backend.backend(),
        "task": "hull10",
        "hidden_size": config["hidden_size"],
        "batch_size": config["batch_size"],
        "n_train": len(X),
        "n_infer": len(X_infer),
        "torch": None if reference is None else reference.versions["torch"],
        "torch_threads": None if reference is None else reference.versions["threads"],
        "torch_decoder_loop": config.get("torch_decoder_loop", False),
        "seconds": seconds,
        "torch_seconds": torch_seconds,
    }
    for name, count in counts.items():
        row[f"{name}_seq_per_s"] = median_rate(count, seconds[name])
        if reference is not None:
            row[f"torch_{name}_seq_per_s"] = median_rate(count, torch_seconds[name])
            row[f"{name}_ratio"] = row[f"{name}_seq_per_s"] / row[f"torch_{name}_seq_per_s"]
    log(
        "hull10 h={hidden_size}: ".format(**config)
        + ", ".join(
            f"{name} {row[f'{name}_seq_per_s']:.0f} seq/s"
            + (
                f" (torch {row[f'torch_{name}_seq_per_s']:.0f}, x{row[f'{name}_ratio']:.2f})"
                if reference is not None
                else ""
            )
            for name in counts
        )
    )
    return [row]


# ----------------------------------------------------------------- 300-s budget
def _hull_labels(points):
    """Hull vertices counter-clockwise from the lowest index (Vinyals et al.'s format)."""
    vertices = ConvexHull(points).vertices  # counter-clockwise in 2-D
    start = int(np.argmin(vertices))
    return np.roll(vertices, -start)


def lkh_available():
    """Whether the ``elkai`` package (LKH-3), which labels TSP-20 instances, is installed."""
    return importlib.util.find_spec("elkai") is not None


def _lkh_tour(points):
    """A near-optimal tour by LKH-3 (``elkai``), from city 0 in ``make_tsp``'s direction.

    LKH rounds distances to integers, so the coordinates are scaled by 10**6 first;
    at that scale it returned the Held-Karp optimum on 100 of 100 instances of 10 cities.
    """
    import elkai

    scaled = {i: (float(x) * 1e6, float(y) * 1e6) for i, (x, y) in enumerate(points)}
    tour = np.array(elkai.Coordinates2D(scaled).solve_tsp()[:-1], dtype=np.int64)
    tour = np.roll(tour, -int(np.argmin(tour)))
    return tour if tour[1] < tour[-1] else np.concatenate([tour[:1], tour[:0:-1]])


def _numpy_task(task, n_samples, seed):
    """Test instances drawn with NumPy and labelled here, with the score to report."""
    rng = np.random.default_rng(seed)
    if task.startswith("hull"):
        X = rng.random((n_samples, int(task[4:]), 2))
        y = [_hull_labels(points) for points in X]
    elif task == "tsp10":
        X = rng.random((n_samples, 10, 2))
        y = [solve_tsp_exact(points) for points in X]
    elif task == "tsp20":
        X = rng.random((n_samples, 20, 2))
        y = [_lkh_tour(points) for points in X]
    else:
        X = rng.random((n_samples, 10))
        y = np.argsort(X, axis=1, kind="stable")
    return X, y


def _training_pool(task, n_samples):
    if task == "hull10":
        return make_convex_hull(n_samples, n_points=10, random_state=1)
    if task == "hull50":  # Vinyals et al.: trained on 5 to 50 points, tested on 50
        sizes = np.random.default_rng(1).integers(5, 51, size=n_samples)
        X, y = [], []
        for n_points in np.unique(sizes):
            points, hulls = make_convex_hull(
                int((sizes == n_points).sum()), n_points=int(n_points), random_state=n_points
            )
            X += list(points)
            y += list(hulls)
        order = np.random.default_rng(2).permutation(n_samples)
        return [X[i] for i in order], [y[i] for i in order]
    if task == "tsp10":
        return make_tsp(n_samples, n_cities=10, random_state=1)
    if task == "tsp20":
        X = np.random.default_rng(1).random((n_samples, 20, 2))
        return X, np.array([_lkh_tour(points) for points in X])
    return make_sorting(n_samples, 10, kind="float", descending=False, random_state=1)


def _scores(task, X, y, prediction):
    if task.startswith("tsp"):
        best = tour_length(X, y).mean()
        return {"tour_ratio": float(tour_length(X, prediction).mean() / best)}
    scores = {"exact": float(sequence_accuracy(y, prediction))}
    if task.startswith("hull"):
        scores["area_coverage"] = float(hull_area_coverage(X, prediction).mean())
    return scores


def _per_task(value, task):
    return value[task] if isinstance(value, dict) else value


def pointer_budget(config, log):
    """Accuracy of the pointer network after a budget of training seconds.

    The estimator (defaults, then each preset, ``random_state=0``) trains one epoch per
    ``fit`` call with
    ``warm_start=True`` until ``seconds`` of training time have passed; after every
    epoch, greedy decoding of ``n_curve`` test instances is scored outside the clock.
    At the end, greedy and beam-search decoding are scored on all ``n_test``.

    Parameters
    ----------
    config : dict
        ``tasks`` (``hull10``, ``tsp10``, ``sort10``; ``hull50``, trained on 5 to 50
        points; ``tsp20``, labelled by LKH-3 and skipped without ``elkai``),
        ``seconds`` and ``n_train`` (the pool's size), each a number or a dict by task,
        ``n_test``, ``n_curve``, ``beam_width``, ``params`` (hyperparameters other than
        the defaults), and optionally ``presets`` (name to hyperparameters, each value
        a value or a dict by task) run after the defaults on the ``preset_tasks`` (a
        list, or a dict by preset name).
    log : callable
        Progress printer.

    Returns
    -------
    list of dict
        One row per task and settings, with its curve.
    """
    rows = []
    for task in config["tasks"]:
        if task == "tsp20" and not lkh_available():
            log("tsp20 skipped: its labels need the elkai package (LKH-3)")
            continue
        with Stopwatch() as label_watch:
            data = (
                *_training_pool(task, _per_task(config["n_train"], task)),
                *_numpy_task(task, config["n_test"], seed=1000),
            )
        settings = {"defaults": config["params"]}
        for name, params in config.get("presets", {}).items():
            if task in _per_task(config.get("preset_tasks", ()), name):
                settings[name] = params
        for name, params in settings.items():
            row = _budget_run(config, task, data, name, params, log)
            rows.append({**row, "labelling_s": label_watch.elapsed})
    return rows


def _budget_run(config, task, data, name, params, log, random_state=0):
    """One row of :func:`pointer_budget`: train with ``params`` on ``data = (X, y,
    X_test, y_test)`` for the task's budget and score it."""
    X, y, X_test, y_test = data
    curve_X, curve_y = X_test[: config["n_curve"]], y_test[: config["n_curve"]]
    task_params = {key: _per_task(value, task) for key, value in params.items()}
    est = PointerNetworkOrderer(
        **task_params, epochs=1, warm_start=True, random_state=random_state
    )
    seconds = _per_task(config["seconds"], task)
    trained, curve = 0.0, []
    while trained < seconds:
        with Stopwatch() as watch:
            est.fit(X, y)
        trained += watch.elapsed
        point = {"seconds": trained, "epoch": est.n_iter_}
        point.update(_scores(task, curve_X, curve_y, est.predict(curve_X)))
        curve.append(point)
    row = {
        "task": task,
        "settings": name,
        "backend": keras.backend.backend(),
        "seconds": trained,
        "epochs": est.n_iter_,
        "n_train": len(X),
        "n_test": len(X_test),
        "budget_s": seconds,
        "params": task_params,
        "curve": curve,
    }
    for method, width in (("greedy", 1), ("beam", config["beam_width"])):
        est.set_params(decode=method, beam_width=width)
        est.predict(X_test)  # compiles the decoder for this shape
        with Stopwatch() as watch:
            prediction = est.predict(X_test)
        decoding = "greedy" if method == "greedy" else f"beam{width}"
        row[decoding] = _scores(task, X_test, y_test, prediction)
        row[f"{decoding}_ms_per_instance"] = 1000 * watch.elapsed / len(X_test)
    log(
        f"{task} ({name}) after {trained:.0f} s ({est.n_iter_} epochs): greedy "
        f"{row['greedy']}, beam {row['beam' + str(config['beam_width'])]}"
    )
    return row
