"""The pointer network learning orderings from a cost alone, against exact and classic
references.

``cost_learning`` trains :class:`~skptr.PointerNetworkOrderer` without a single label,
``fit(X)`` with a ``cost``, for a budget of training seconds per task and seed, then
judges its decodings on test instances drawn here with plain NumPy:

- ``tsp20``, ``tsp50``: 20 or 50 cities uniform in the unit square, the built-in
  ``"tour"`` cost; the reference is LKH-3's tour (the ``elkai`` package; the task is
  skipped without it).
- ``smtwt20``: 20 jobs on one machine, each a processing time and a weight uniform in
  [0, 1] and a due date uniform in [0, 10] (RL4CO's distribution), the total weighted
  tardiness written in NumPy as a user would (:func:`total_weighted_tardiness`); the
  reference is the exact optimum by dynamic programming over the subsets of jobs
  (:func:`optimal_tardiness`), next to the dispatching rules EDD, WSPT and ATC.

Each row also records the training instances per second; ``host_cost`` rows compare
the in-graph ``"tour"`` cost with the same cost given as a NumPy function.

``rl4co_side_by_side`` trains RL4CO's POMO and attention model on the same tasks for the
same seconds, in an environment of their own (``rl4co_side_by_side.py`` runs there,
started as a subprocess of that environment's Python), and judges them on the same test
instances against the same references.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import keras
import numpy as np

from skptr import PointerNetworkOrderer
from skptr.costs import tour_length

from ._common import Stopwatch, check
from .budget import _lkh_tour, lkh_available

__all__ = [
    "apparent_tardiness_cost",
    "cost_learning",
    "optimal_tardiness",
    "rl4co_row",
    "rl4co_side_by_side",
    "total_weighted_tardiness",
]


def total_weighted_tardiness(X, orderings):
    """Total weighted tardiness of each schedule: ``X`` (n, jobs, 3) holds processing
    time, weight and due date; ``orderings`` (n, jobs) the order of the jobs."""
    jobs = np.take_along_axis(np.asarray(X), np.asarray(orderings)[..., None], axis=1)
    finish = np.cumsum(jobs[..., 0], axis=1)
    return np.sum(jobs[..., 1] * np.maximum(finish - jobs[..., 2], 0), axis=1)


def draw_jobs(n_samples, n_jobs, rng):
    """Instances of single-machine scheduling, as RL4CO draws them."""
    times, weights = rng.random((n_samples, n_jobs)), rng.random((n_samples, n_jobs))
    due = rng.random((n_samples, n_jobs)) * n_jobs / 2
    return np.stack([times, weights, due], axis=-1)


def optimal_tardiness(X, chunk=16):
    """The least total weighted tardiness of each instance, exactly.

    Dynamic programming over the subsets of jobs: the cheapest way to run a subset
    first ends when its processing times add up, with one of its jobs last. Subsets
    are taken by size, every subset of one size and every instance of a chunk at once.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_jobs, 3)
        Processing time, weight and due date of each job.
    chunk : int, default=16
        Instances solved together (memory grows as ``2**n_jobs * chunk``).

    Returns
    -------
    ndarray of shape (n_samples,)
    """
    X = np.asarray(X, dtype=np.float64)
    n_jobs = X.shape[1]
    masks = np.arange(2**n_jobs)
    members = ((masks[:, None] >> np.arange(n_jobs)) & 1).astype(bool)
    member_times = members.astype(np.float64)  # cast once, not per chunk
    sizes = members.sum(axis=1)
    by_size = [masks[sizes == size] for size in range(n_jobs + 1)]
    with_job = [[subsets[members[subsets, job]] for job in range(n_jobs)] for subsets in by_size]
    result = np.empty(len(X))
    for start in range(0, len(X), chunk):
        part = X[start : start + chunk]
        finish = member_times @ part[..., 0].T  # (2**n_jobs, chunk)
        best = np.full((2**n_jobs, len(part)), np.inf)
        best[0] = 0.0
        for size in range(1, n_jobs + 1):
            for job in range(n_jobs):
                subsets = with_job[size][job]
                late = np.maximum(finish[subsets] - part[:, job, 2], 0.0) * part[:, job, 1]
                best[subsets] = np.minimum(best[subsets], best[subsets ^ (1 << job)] + late)
        result[start : start + chunk] = best[-1]
    return result


def apparent_tardiness_cost(X, k):
    """Schedules by the ATC rule with look-ahead ``k``: at time ``t`` the waiting job of
    highest ``w / p * exp(-max(d - p - t, 0) / (k * mean p))`` runs next."""
    times, weights, due = X[..., 0], X[..., 1], X[..., 2]
    rows = np.arange(len(X))
    waiting = np.ones(times.shape, dtype=bool)
    clock, order = np.zeros(len(X)), []
    for _ in range(X.shape[1]):
        mean_time = np.where(waiting, times, 0).sum(axis=1) / waiting.sum(axis=1)
        slack = np.maximum(due - times - clock[:, None], 0)
        priority = weights / times * np.exp(-slack / (k * mean_time[:, None]))
        job = np.argmax(np.where(waiting, priority, -np.inf), axis=1)
        order.append(job)
        waiting[rows, job] = False
        clock += times[rows, job]
    return np.stack(order, axis=1)


def _tsp_task(config, log, n_cities):
    rng = np.random.default_rng(1000)
    X_test = rng.random((config["n_test"], n_cities, 2))
    with Stopwatch() as watch:
        reference = tour_length(X_test, np.stack([_lkh_tour(points) for points in X_test]))
    log(f"tsp{n_cities}: LKH-3 tours of {len(X_test)} test instances in {watch.elapsed:.0f} s")
    return {
        "draw": lambda n, rng: rng.random((n, n_cities, 2)),
        "cost": "tour",
        "score": tour_length,
        "X_test": X_test,
        "reference": reference,
        "reference_name": "LKH-3",
        "rules": {},
        "points": True,
    }


def _smtwt_task(config, log):
    rng = np.random.default_rng(1000)
    X_test = draw_jobs(config["n_test"], 20, rng)
    with Stopwatch() as watch:
        reference = optimal_tardiness(X_test)
    log(f"smtwt20: optimal schedules of {len(X_test)} test instances in {watch.elapsed:.0f} s")
    atc = np.stack(
        [
            total_weighted_tardiness(X_test, apparent_tardiness_cost(X_test, k))
            for k in np.arange(0.5, 4.01, 0.5)
        ]
    ).min(axis=0)
    rules = {
        "EDD": total_weighted_tardiness(X_test, np.argsort(X_test[..., 2], axis=1)),
        "WSPT": total_weighted_tardiness(
            X_test, np.argsort(X_test[..., 0] / X_test[..., 1], axis=1)
        ),
        "ATC, best k per instance": atc,
    }
    return {
        "draw": lambda n, rng: draw_jobs(n, 20, rng),
        "cost": total_weighted_tardiness,
        "score": total_weighted_tardiness,
        "X_test": X_test,
        "reference": reference,
        "reference_name": "optimum",
        "points": False,
        "rules": {name: float(cost.mean() / reference.mean()) for name, cost in rules.items()},
    }


_TASKS = {
    "tsp20": lambda config, log: _tsp_task(config, log, 20),
    "tsp50": lambda config, log: _tsp_task(config, log, 50),
    "smtwt20": _smtwt_task,
}


def _build_task(name, config, log):
    """The task's test instances and references, or None when its reference is missing."""
    if name.startswith("tsp") and not lkh_available():
        log(f"{name} skipped: its reference tours need the elkai package (LKH-3)")
        return None
    return _TASKS[name](config, log)


class _TimeBudget(keras.callbacks.Callback):
    """Stops training once ``seconds`` have passed since the first batch."""

    def __init__(self, seconds):
        super().__init__()
        self.seconds = seconds
        self.start = None
        self.batches = 0

    def on_train_batch_begin(self, batch, logs=None):
        if self.start is None:  # the first step's compilation counts
            self.start = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        self.batches += 1
        if time.perf_counter() - self.start >= self.seconds:
            self.model.stop_training = True


def _decodings(est, task, config):
    """Mean cost ratio to the reference and milliseconds per instance of each decoding."""
    X_test, reference = task["X_test"], task["reference"]
    decodings = {
        "greedy": dict(decode="greedy"),
        "greedy from every start": dict(decode="multistart", n_candidates=None),
    }
    for width in config["beam_widths"]:
        decodings[f"cheapest of beam {width}"] = dict(decode="beam", beam_width=width)
    if task["points"]:
        for width in config["image_beam_widths"]:
            name, params = "greedy", dict(decode="greedy")
            if width > 1:
                name, params = f"beam {width}", dict(decode="beam", beam_width=width)
            decodings[f"cheapest of {name}, 8 mirror images"] = dict(**params, augment=True)
    scores = {}
    for name, params in decodings.items():
        params = {"augment": False, "cost": task["cost"], **params}
        est.set_params(**params)
        est.predict(X_test)  # compiles the decoder for the timed batches
        with Stopwatch() as watch:
            prediction = est.predict(X_test)
        costs = task["score"](X_test, prediction)
        scores[name] = {
            "ratio": float(costs.mean() / reference.mean()),
            "ms_per_instance": 1000 * watch.elapsed / len(X_test),
        }
    return scores


def _train(params, task, seconds, n_pool, seed):
    """Fit from the cost for ``seconds``; the estimator and its instances per second."""
    pool = task["draw"](n_pool, np.random.default_rng(seed + 1))
    budget = _TimeBudget(seconds)
    est = PointerNetworkOrderer(
        **params, cost=task["cost"], epochs=10_000, callbacks=[budget], random_state=seed
    )
    with Stopwatch() as watch:
        est.fit(pool)
    instances = budget.batches * est.batch_size
    check(np.isfinite(est.history_["loss"][-1]), "the training cost is not finite")
    return est, {
        "seconds": watch.elapsed,
        "instances": instances,
        "instances_per_s": instances / watch.elapsed,
        "epochs": est.n_iter_,
    }


def cost_learning(config, log):
    """Cost ratios to exact or LKH-3 references after a budget of training seconds.

    Parameters
    ----------
    config : dict
        ``tasks`` (``tsp20``, ``tsp50``, ``smtwt20``), ``seconds``, ``params`` (hyperparameters,
        the user guide's recommendation) and ``n_pool`` (training instances drawn per
        run: one epoch), each a dict by task; ``seeds``, ``n_test``, ``beam_widths``,
        ``image_beam_widths`` (beam widths decoded with the 8 mirror images of points
        in the plane; 1 is greedy) and ``host_cost_seconds`` (0 skips the comparison of
        in-graph and NumPy tour costs).
    log : callable
        Progress printer.

    Returns
    -------
    list of dict
        One row per task and seed, the reference rules' rows, and the host-cost rows.
    """
    rows = []
    for name in config["tasks"]:
        task = _build_task(name, config, log)
        if task is None:
            continue
        for rule, ratio in task["rules"].items():
            rows.append({"task": name, "method": rule, "ratio": ratio})
        for seed in config["seeds"]:
            est, training = _train(
                config["params"][name], task, config["seconds"][name], config["n_pool"][name], seed
            )
            row = {
                "task": name,
                "method": "skptr",
                "seed": seed,
                "backend": keras.backend.backend(),
                "reference": task["reference_name"],
                "params": config["params"][name],
                "n_pool": config["n_pool"][name],
                "n_test": len(task["X_test"]),
                "training": training,
                "decodings": _decodings(est, task, config),
            }
            log(f"{name} seed {seed}: {training} {row['decodings']}")
            rows.append(row)
    if config["host_cost_seconds"] and "tsp20" in config["tasks"]:
        rows += _host_cost(config, log)
    return rows


def _host_cost(config, log):
    """Training throughput with the in-graph ``"tour"`` cost and with the same cost
    as a NumPy function, one after the other on the same settings."""
    rows = []
    for cost in ("tour", tour_length):
        task = {"draw": lambda n, rng: rng.random((n, 20, 2)), "cost": cost}
        _, training = _train(
            config["params"]["tsp20"], task, config["host_cost_seconds"], 20_000, 0
        )
        name = cost if isinstance(cost, str) else "skptr.costs.tour_length (host)"
        rows.append({"task": "tsp20", "method": "host_cost", "cost": name, **training})
        log(f"tsp20 cost {name}: {training['instances_per_s']:.1f} instances/s")
    return rows


#: The script that trains and judges an RL4CO model inside RL4CO's own environment.
SIDE_BY_SIDE_SCRIPT = Path(__file__).with_name("rl4co_side_by_side.py")
#: The script's name of each task's problem.
RL4CO_PROBLEMS = {"tsp20": "tsp", "tsp50": "tsp", "smtwt20": "smtwt"}


def rl4co_side_by_side(config, log):
    """RL4CO's models trained for the same seconds, on the same test instances.

    Parameters
    ----------
    config : dict
        ``python`` (the Python of an environment with RL4CO and PyTorch; None or empty
        skips the section), ``runs`` (the models, ``"pomo"`` or ``"am"``, of each task),
        ``seeds``, ``seconds`` (by task), ``n_test`` and ``batch_size``.
    log : callable
        Progress printer.

    Returns
    -------
    list of dict
        One row per task, model and seed: the training seconds and instances, and each
        decoding's mean cost over the reference's, or the error that stopped training.
    """
    if not config["python"]:
        log(
            "rl4co_side_by_side skipped: set SKPTR_RL4CO_PYTHON to the Python of an "
            "environment with RL4CO installed"
        )
        return []
    rows = []
    for name, models in config["runs"].items():
        task = _build_task(name, config, log)
        if task is None:
            continue
        with tempfile.TemporaryDirectory() as folder:
            instances = Path(folder) / "instances.npy"
            np.save(instances, task["X_test"])
            for model in models:
                for seed in config["seeds"]:
                    out = Path(folder) / f"{model}-{seed}.json"
                    _run_rl4co(config, name, model, seed, instances, out)
                    row = rl4co_row(name, task, json.loads(out.read_text()))
                    log(f"{name} RL4CO {model} seed {seed}: {row}")
                    rows.append(row)
    return rows


def _run_rl4co(config, name, model, seed, instances, out):
    command = [
        config["python"],
        str(SIDE_BY_SIDE_SCRIPT),
        *("--problem", RL4CO_PROBLEMS[name], "--model", model),
        *("--seconds", str(config["seconds"][name]), "--seed", str(seed)),
        *("--instances", str(instances), "--out", str(out)),
        *("--batch-size", str(config["batch_size"])),
    ]
    done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-4000:])
    check(done.returncode == 0, f"{' '.join(command)} exited with status {done.returncode}")


def rl4co_row(name, task, result):
    """The benchmark row of one result of ``rl4co_side_by_side.py``: ratios of the
    mean cost of each decoding to the task's reference, or the training error."""
    row = {
        "task": name,
        "method": "rl4co",
        "model": result["model"],
        "seed": result["seed"],
        "versions": {"rl4co": result["rl4co_version"], "torch": result["torch_version"]},
        "batch_size": result["batch_size"],
        "reference": task["reference_name"],
        "n_test": len(task["X_test"]),
        "training": {key: result[key] for key in ("seconds", "instances", "instances_per_s")},
    }
    if "error" in result:
        return {**row, "error": result["error"]}
    check(result["reward_check"], f"RL4CO's reward disagrees with the NumPy cost on {name}")
    reference = np.mean(task["reference"])
    row["decodings"] = {}
    for decoding, scores in result["decodings"].items():
        costs = scores["costs"]
        check(len(costs) == len(task["X_test"]), f"RL4CO {decoding}: a cost per instance")
        row["decodings"][decoding] = {
            "ratio": float(np.mean(costs) / reference),
            "ms_per_instance": scores["ms_per_instance"],
        }
    return row
