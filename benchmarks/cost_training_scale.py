"""Training from a cost at growing sizes: throughput, compiling and memory per backend.

The ``cost_training_scale`` section fits a :class:`~skptr.PointerNetworkOrderer` with
the user guide's settings for tours from the cost ``"tour"`` on N uniform random points
in the unit square (drawn with NumPy), for each size and Keras backend, each
measurement in a process of its own (so that its peak resident memory is that of one
fit, and no backend's state carries over). The fit stops after a wall-clock budget
through a Keras callback with a per-batch hook, as a user's budget or the cost-learning
benchmark stops it. The backends alternate within each repeat, and their order flips
from one repeat to the next.

``python -m benchmarks.cost_training_scale SPEC`` is that process: it fits, and prints
as its last line a JSON object with the seconds of the first step (tracing and
compiling included), the training instances per second after it, the peak resident
memory before and after the fit, and the batches run.
"""

from __future__ import annotations

import json
import os
import sys
import time

__all__ = ["cost_training_scale"]


def _budget_callback(seconds):
    import keras

    class Budget(keras.callbacks.Callback):
        """Times the first step apart, then stops once ``seconds`` have passed."""

        def __init__(self):
            super().__init__()
            self.began = self.first_step_end = self.last_end = None
            self.batches = 0

        def on_train_begin(self, logs=None):
            self.began = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            self.batches += 1
            self.last_end = time.perf_counter()
            if self.first_step_end is None:
                self.first_step_end = self.last_end
            elif self.last_end - self.first_step_end >= seconds:
                self.model.stop_training = True

    return Budget()


def measure(spec):
    """Fit from the cost as ``spec`` says, in this process; return the measurements.

    Parameters
    ----------
    spec : dict
        ``n_points``, ``n_pool`` (training instances drawn), ``seconds`` (the budget
        after the first step), ``params`` (the estimator's settings) and ``seed``.

    Returns
    -------
    dict
        ``first_step_s``, ``instances_per_s`` (after the first step), ``batches``,
        ``fit_s`` (the whole ``fit`` call), ``start_mb`` and ``peak_mb`` (peak resident
        memory before and after the fit, in MB).
    """
    import numpy as np

    from skptr import PointerNetworkOrderer

    from ._common import peak_mb

    points = np.random.default_rng([spec["seed"], spec["n_points"]]).random(
        (spec["n_pool"], spec["n_points"], 2)
    )
    budget = _budget_callback(spec["seconds"])
    est = PointerNetworkOrderer(
        **spec["params"],
        cost="tour",
        epochs=1_000_000,
        callbacks=[budget],
        random_state=spec["seed"],
    )
    start_mb = peak_mb()
    start = time.perf_counter()
    est.fit(points)
    fit_s = time.perf_counter() - start
    if not np.isfinite(est.history_["loss"][-1]):
        raise RuntimeError("the training cost is not finite")
    timed = budget.batches - 1
    return {
        "first_step_s": budget.first_step_end - budget.began,
        "instances_per_s": timed * est.batch_size / (budget.last_end - budget.first_step_end),
        "batches": budget.batches,
        "fit_s": fit_s,
        "start_mb": start_mb,
        "peak_mb": peak_mb(),
    }


def cost_training_scale(config, log):
    """Instances per second, first-step seconds and peak memory of training from the
    cost ``"tour"`` at each size, on each backend.

    Parameters
    ----------
    config : dict
        ``sizes`` (numbers of points), ``backends``, ``repeats`` (size, as a string, to
        its number of fresh processes per backend), ``seconds`` (each fit's budget
        after its first step), ``n_pool`` (training instances drawn), ``params`` (the
        estimator's settings), ``seed`` and ``timeout_s`` (per process).
    log : callable
        Progress printer.

    Returns
    -------
    list of dict
        One row per measurement: size, backend, repeat and the measurements of
        :func:`measure`, or ``status`` saying why it has none.
    """
    from ._common import run_in_own_process, source_version

    rows = []
    for n_points in config["sizes"]:
        for repeat in range(config["repeats"].get(str(n_points), 1)):
            backends = config["backends"][:: -1 if repeat % 2 else 1]
            for backend in backends:
                spec = {
                    "n_points": n_points,
                    "n_pool": config["n_pool"],
                    "seconds": config["seconds"],
                    "params": config["params"],
                    "seed": config["seed"],
                }
                measured = run_in_own_process(
                    "benchmarks.cost_training_scale",
                    spec,
                    config["timeout_s"],
                    f"training on {n_points} points ({backend})",
                    env={**os.environ, "KERAS_BACKEND": backend},
                )
                row = {
                    "skptr_commit": source_version(),
                    "n_points": n_points,
                    "backend": backend,
                    "repeat": repeat,
                    **measured,
                }
                rows.append(row)
                if row["status"] == "ok":
                    log(
                        f"{n_points} points, {backend}, repeat {repeat}: first step "
                        f"{row['first_step_s']:.1f} s, {row['instances_per_s']:,.1f} "
                        f"instances/s over {row['batches']} batches, peak "
                        f"{row['peak_mb']:,.0f} MB (before the fit {row['start_mb']:,.0f} MB)"
                    )
                else:
                    log(f"{n_points} points, {backend}, repeat {repeat}: {row['status']}")
    return rows


if __name__ == "__main__":
    print(json.dumps(measure(json.loads(sys.argv[1]))))
