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
times, the peak resident memory after loading and at the end (see :func:`_peak_mb`), and
the tour length.
"""

from __future__ import annotations

import json
import resource
import sys
import time

__all__ = ["decoding_scale", "method_params"]


def _ru_maxrss_mb():
    """``ru_maxrss`` of this process, in MB (10**6 bytes; Linux counts kB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6


def _peak_mb():
    """The peak resident memory of this process's own address space so far, in MB.

    Linux keeps ``ru_maxrss`` across ``fork`` and ``exec``: a process started by
    ``subprocess`` reports at least the resident memory its parent had when it started
    (here, the benchmark's process with TensorFlow and the fitted network), so the
    peak comes from ``VmHWM`` of ``/proc/self/status``, the high-water mark of the
    address space that ``exec`` created; ``ru_maxrss`` where that is unavailable.
    """
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024 / 1e6
    except OSError:
        pass
    return _ru_maxrss_mb()


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
        end, which counts the parent's memory too: see :func:`_peak_mb`) and
        ``tour_length`` of the second call's ordering.
    """
    import numpy as np

    import skptr
    from skptr.costs import tour_length

    est = skptr.load(spec["model"])
    model_mb = _peak_mb()
    X = instance(spec["n_points"], spec["seed"])
    est.set_params(**spec["params"])
    start = time.perf_counter()
    est.predict(X)
    first_call_s = time.perf_counter() - start
    start = time.perf_counter()
    ordering = est.predict(X)
    decode_s = time.perf_counter() - start
    peak_mb = _peak_mb()
    tour = ordering[0]
    if not np.array_equal(np.sort(tour), np.arange(spec["n_points"])):
        raise RuntimeError(f"not a permutation of {spec['n_points']} points: {tour[:20]}...")
    return {
        "first_call_s": first_call_s,
        "decode_s": decode_s,
        "model_mb": model_mb,
        "peak_mb": peak_mb,
        "ru_maxrss_mb": _ru_maxrss_mb(),
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


def _run(spec, timeout_s):
    """One measurement in a process of its own: its result, or how it ended."""
    import subprocess

    command = [sys.executable, "-m", "benchmarks.decoding_scale", json.dumps(spec)]
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired:
        return {"status": f"timed out after {timeout_s} s"}
    if done.returncode < 0:  # killed by a signal, such as the kernel's out-of-memory killer
        return {"status": f"killed by signal {-done.returncode}"}
    from ._common import check

    check(
        done.returncode == 0,
        f"decoding {spec['n_points']} points with {spec['params']} failed:\n{done.stderr[-3000:]}",
    )
    return {"status": "ok", **json.loads(done.stdout.strip().splitlines()[-1])}


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

    from ._common import source_version

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
                measured = _run({**spec, "params": params}, config["timeout_s"])
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
