"""Decoding one large instance: the time and memory of each decoding method.

The ``decoding_scale`` section fits a :class:`~skptr.PointerNetworkOrderer` with the
user guide's settings for tours from the cost ``"tour"`` (a short fit: decoding time
does not depend on how well the network is trained), saves it with ``est.save``, and
then decodes one instance of N uniform random points in the unit square for each size
and method, each measurement in a process of its own, so that its peak resident memory
is that of one decoding.

``python -m benchmarks.decoding_scale SPEC`` is that process: it loads the saved model
(``skptr.load``), reads its resident memory, sets the decoding parameters, calls
``predict`` once (tracing and compiling included, timed apart), times a second
``predict`` of the same instance, and prints as its last line a JSON object with both
times, the peak resident memory after loading and at the end (see
:func:`~benchmarks._common.peak_mb`), and the tour length.
"""

from __future__ import annotations

import json
import sys
import time

__all__ = ["decoding_scale", "method_params"]


def instance(n_points, seed):
    """The instance of ``n_points`` uniform random points in the unit square, ``(1, n, 2)``.

    Parameters
    ----------
    n_points : int
        Number of points.
    seed : int
        Seed of the section; each size draws its own points from it.

    Returns
    -------
    ndarray of shape (1, n_points, 2)
    """
    import numpy as np

    return np.random.default_rng([seed, n_points]).random((1, n_points, 2))


def measure(spec):
    """Decode one instance as ``spec`` says, in this process; return the measurements.

    Parameters
    ----------
    spec : dict
        ``model`` (the saved estimator's path), ``n_points``, ``seed`` and ``params``
        (the decoding parameters given to ``set_params``).

    Returns
    -------
    dict
        ``first_call_s``, ``decode_s``, ``model_mb`` (peak resident memory after
        loading), ``peak_mb`` (at the end), ``ru_maxrss_mb`` (``ru_maxrss`` at the
        end, which counts the parent's memory too: see :func:`~benchmarks._common.peak_mb`) and
        ``tour_length`` of the second call's ordering.
    """
    import numpy as np

    import skptr
    from skptr.costs import tour_length

    from ._common import peak_mb, ru_maxrss_mb

    est = skptr.load(spec["model"])
    model_mb = peak_mb()
    X = instance(spec["n_points"], spec["seed"])
    est.set_params(**spec["params"])
    start = time.perf_counter()
    est.predict(X)
    first_call_s = time.perf_counter() - start
    start = time.perf_counter()
    ordering = est.predict(X)
    decode_s = time.perf_counter() - start
    peak = peak_mb()
    tour = ordering[0]
    if not np.array_equal(np.sort(tour), np.arange(spec["n_points"])):
        raise RuntimeError(f"not a permutation of {spec['n_points']} points: {tour[:20]}...")
    return {
        "first_call_s": first_call_s,
        "decode_s": decode_s,
        "model_mb": model_mb,
        "peak_mb": peak,
        "ru_maxrss_mb": ru_maxrss_mb(),
        "tour_length": float(tour_length(X, ordering)[0]),
    }


def method_params(config, method, n_points):
    """The decoding parameters of ``method`` at ``n_points``: the method's own, changed
    by ``config["overrides"]`` for that size, with ``cost="tour"``."""
    params = dict(config["methods"][method])
    params.update(config.get("overrides", {}).get(str(n_points), {}).get(method, {}))
    return {**params, "cost": "tour"}


def _settings(params):
    """The decoding parameters a row shows (``cost`` is the same in every row)."""
    shown = {k: v for k, v in params.items() if k not in ("decode", "cost")}
    return ", ".join(f"{k}={v!r}" for k, v in shown.items())


def _fit_and_save(config, path):
    import numpy as np

    from skptr import PointerNetworkOrderer

    points = np.random.default_rng(config["seed"]).random(
        (config["n_train"], config["train_length"], 2)
    )
    est = PointerNetworkOrderer(
        **config["params"], cost="tour", epochs=config["epochs"], random_state=config["seed"]
    )
    start = time.perf_counter()
    est.fit(points)
    seconds = time.perf_counter() - start
    est.save(path)
    return seconds


def decoding_scale(config, log):
    """Time and peak memory of decoding one instance of N points with each method.

    Parameters
    ----------
    config : dict
        ``sizes`` (numbers of points), ``methods`` (name to decoding parameters),
        ``overrides`` (size, as a string, to method to changed parameters), ``params``
        (the estimator's settings), ``n_train``, ``train_length`` and ``epochs`` of
        its fit from the cost ``"tour"``, ``seed``, ``timeout_s`` (per measurement)
        and ``targets`` (quoted next to the rows of their size).
    log : callable
        Progress printer.

    Returns
    -------
    list of dict
        One row per size and method: the decoding parameters, the seconds of the
        first ``predict`` (compiling included) and of the second, the peak resident
        memory after loading the model and at the end, in MB, the tour length and
        its ratio to greedy decoding's, or ``status`` saying why it has none.
    """
    import tempfile
    from pathlib import Path

    from ._common import run_in_own_process, source_version

    rows = []
    with tempfile.TemporaryDirectory() as folder:
        model = str(Path(folder) / "tour_model.skptr")
        fit_s = _fit_and_save(config, model)
        log(f"fitted on {config['n_train']} TSP-{config['train_length']} in {fit_s:.1f} s")
        for n_points in config["sizes"]:
            greedy_length = None
            for method in config["methods"]:
                params = method_params(config, method, n_points)
                spec = {"model": model, "n_points": n_points, "seed": config["seed"]}
                measured = run_in_own_process(
                    "benchmarks.decoding_scale",
                    {**spec, "params": params},
                    config["timeout_s"],
                    f"decoding {n_points} points with {params}",
                )
                row = {
                    "skptr_commit": source_version(),
                    "n_points": n_points,
                    "method": method,
                    "params": params,
                    "settings": _settings(params),
                    "overridden": method in config.get("overrides", {}).get(str(n_points), {}),
                    "fit_s": fit_s,
                    **measured,
                }
                if method == "greedy" and "tour_length" in row:
                    greedy_length = row["tour_length"]
                if "tour_length" in row and greedy_length is not None:
                    row["vs_greedy"] = row["tour_length"] / greedy_length
                rows.append(row)
                if row["status"] == "ok":
                    log(
                        f"{n_points} points, {method} ({row['settings']}): first call "
                        f"{row['first_call_s']:.2f} s, then {row['decode_s']:.3f} s, peak "
                        f"{row['peak_mb']:,.0f} MB (model {row['model_mb']:,.0f} MB), "
                        f"tour / greedy {row.get('vs_greedy', float('nan')):.4f}"
                    )
                else:
                    log(f"{n_points} points, {method} ({row['settings']}): {row['status']}")
    return rows


if __name__ == "__main__":
    print(json.dumps(measure(json.loads(sys.argv[1]))))
