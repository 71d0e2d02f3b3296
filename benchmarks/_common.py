"""Shared helpers of the benchmarks: the device record, timers and result files."""

from __future__ import annotations

import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

__all__ = [
    "RESULTS_DIR",
    "BenchmarkError",
    "Stopwatch",
    "check",
    "device_info",
    "load_average",
    "median_rate",
    "peak_mb",
    "read_json",
    "run_in_own_process",
    "source_version",
    "write_json",
]

RESULTS_DIR = Path(__file__).parent / "results"


class BenchmarkError(RuntimeError):
    """A benchmark produced an impossible result (a broken estimator, not a slow one)."""


def check(condition, message):
    """Raise :class:`BenchmarkError` with ``message`` unless ``condition`` holds.

    Parameters
    ----------
    condition : bool
        What must be true.
    message : str
        What went wrong, for the log.
    """
    if not condition:
        raise BenchmarkError(message)


def _cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_average():
    """The 1-minute load average of the machine, or None where it is unknown."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:  # pragma: no cover - Windows
        return None


def source_version(revision="HEAD"):
    """The git object of ``revision`` in the checkout, with ``+dirty`` when ``skptr/``
    has local changes.

    Parameters
    ----------
    revision : str, default="HEAD"
        ``"HEAD"``: the commit; ``"HEAD:skptr"``: the tree of the package alone, which
        a change to the benchmarks or the docs keeps.

    Returns
    -------
    str or None
        Short hash, or None outside a git checkout.
    """
    root = Path(__file__).parent.parent
    try:
        found = subprocess.run(
            ["git", "rev-parse", "--short", revision],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "skptr"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return found + ("+dirty" if dirty else "")


def device_info():
    """Describe the machine and the software the benchmarks run on.

    Returns
    -------
    dict
        CPU model, logical core count, GPUs seen by TensorFlow, the load average, and
        the versions of Python, TensorFlow, Keras, scikit-learn, NumPy and skptr.
    """
    import keras
    import sklearn

    import skptr

    try:
        import tensorflow as tf
    except ImportError:  # a JAX-only machine, such as a GPU host without TensorFlow
        tf = None
    gpus, versions = [], {}
    if keras.backend.backend() == "jax":
        import jax

        gpus = [device.device_kind for device in jax.devices() if device.platform == "gpu"]
        versions["jax"] = jax.__version__
    else:
        for gpu in tf.config.list_physical_devices("GPU"):
            details = tf.config.experimental.get_device_details(gpu)
            gpus.append(details.get("device_name", gpu.name))
    return {
        "cpu": _cpu_model(),
        "cpu_cores": os.cpu_count(),
        "gpus": gpus,
        "accelerator": gpus[0] if gpus else "none (CPU only)",
        "load_average_1min": load_average(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "tensorflow": None if tf is None else tf.__version__,
        "keras": keras.__version__,
        "keras_backend": keras.backend.backend(),
        "scikit-learn": sklearn.__version__,
        "numpy": np.__version__,
        "skptr": skptr.__version__,
        "skptr_commit": source_version(),
        **versions,
    }


class Stopwatch:
    """Context manager measuring wall time in seconds (``elapsed``)."""

    def __enter__(self):
        self.start = time.perf_counter()
        self.elapsed = None
        return self

    def __exit__(self, *exc):
        self.elapsed = time.perf_counter() - self.start
        return False


def median_rate(n_items, seconds):
    """Median items per second over repeated timings.

    Parameters
    ----------
    n_items : int
        Items processed in each timed repeat.
    seconds : list of float
        Durations of the repeats.

    Returns
    -------
    float
        ``n_items`` divided by the median duration.
    """
    check(len(seconds) > 0 and min(seconds) > 0, f"invalid timings {seconds}")
    return n_items / statistics.median(seconds)


def write_json(path, data):
    """Write ``data`` as indented JSON, creating the folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, default=_plain) + "\n")


def read_json(path):
    """Read a JSON result file, or None when it does not exist."""
    path = Path(path)
    return json.loads(path.read_text()) if path.exists() else None


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


def ru_maxrss_mb():
    """``ru_maxrss`` of this process, in MB (10**6 bytes; Linux counts kB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6


def peak_mb():
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
    return ru_maxrss_mb()


def run_in_own_process(module, spec, timeout_s, what, env=None):
    """Run ``python -m module SPEC`` (``spec`` as JSON) and return its measurements.

    Parameters
    ----------
    module : str
        A benchmark module that prints its measurements as a JSON object on its last
        line.
    spec : dict
        What to measure.
    timeout_s : float
        Seconds before the process is stopped.
    what : str
        What the process does, for the error message.
    env : dict, optional
        Its environment (default: this process's).

    Returns
    -------
    dict
        ``status`` ("ok", or how the process ended: timed out, killed by a signal such
        as the out-of-memory killer's, or refused by skptr's own memory bound before
        any work) and, when "ok", the measurements.
    """
    command = [sys.executable, "-m", module, json.dumps(spec)]
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=timeout_s,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return {"status": f"timed out after {timeout_s} s"}
    if done.returncode < 0:
        return {"status": f"killed by signal {-done.returncode}"}
    refusal = [line for line in done.stderr.splitlines() if line.startswith("MemoryError: ")]
    if done.returncode != 0 and refusal:
        return {"status": "refused: " + refusal[-1].removeprefix("MemoryError: ")}
    check(done.returncode == 0, f"{what} failed:\n{done.stderr[-3000:]}")
    return {"status": "ok", **json.loads(done.stdout.strip().splitlines()[-1])}
