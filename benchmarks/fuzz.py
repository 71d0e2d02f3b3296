"""Hostile-user fuzz harness of skptr: ``python -m benchmarks.fuzz [--backend jax] [--quick]``.

Each case calls skptr the way a careless or hostile user might: parameters of the wrong
type or of absurd size, malformed data, damaged or forged model files, saves that fail
half way. Its outcome is one of

``ok``
    a clean result, or a ``ValueError``, ``TypeError``, ``MemoryError``,
    ``FileNotFoundError`` or ``NotFittedError`` raised by skptr (or by scikit-learn's
    parameter validation) whose message names the problem;
``raw``
    any other exception, or one of those types whose message is a backend's or a
    library's internal one: raised outside skptr, mentioning TensorFlow, JAX, XLA or
    h5py, or reading like a NumPy or Python internal error;
``hang``
    the case ran past its wall-clock limit and was killed;
``oom``
    the case used more memory than its limit (it was killed, hit the child's address
    space limit, or raised a ``MemoryError`` that skptr did not raise itself);
``loss``
    a saved model could not be loaded back, loaded with different predictions, or a
    failed save changed the file it was replacing;
``silent``
    a value that should be refused was accepted, or the result was garbage (each case
    says what it expects).

Cases run in child processes, one child at a time, in order: a child runs case after
case (each one builds its own estimators, files and patches, and undoes its patches)
until a case hangs, exhausts its memory or crashes it; that case is recorded and the
next ones go on in a new child. Each child runs under an address-space limit
(``RLIMIT_AS``, 6 GiB above what the backend itself maps), and the parent kills it when
a case exceeds its wall-clock limit or its resident memory grows by more than the
case's allowance. Fixtures (fitted tiny models, damaged files) are built before a
case's limits start.

Usage
-----
``python -m benchmarks.fuzz``
    Every case (TensorFlow backend), results in ``benchmarks/results/fuzz.json``.
``--backend jax``
    The JAX backend; results in ``benchmarks/results/fuzz.jax.json``.
``--quick``
    About 40 cases across every family in under two minutes; results in
    ``benchmarks/results/quick/`` unless ``--out`` is given.
``--only FAMILY``, ``-k TEXT``
    Only the cases of a family, or whose ``family/name`` contains ``TEXT``.
``--list``
    Print the cases and exit.

The exit status is 1 when any case is not ``ok``.
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import dataclasses
import errno
import gc
import io
import json
import math
import os
import re
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import zipfile
from collections import Counter
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np

__all__ = ["OUTCOMES", "Case", "build_cases", "classify_exception", "main"]

OUTCOMES = ("ok", "raw", "hang", "oom", "loss", "silent")
ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = Path(__file__).resolve().parent / "results"

#: Address space a child may map on top of what it maps once the backend is loaded.
ADDRESS_SPACE_HEADROOM_MB = 6144
#: Seconds a child may take to import the backend and skptr.
STARTUP_TIMEOUT = 180.0
#: Seconds a case's untimed preparation (fixtures, damaged files) may take.
SETUP_TIMEOUT = 300.0
#: Wall-clock and memory limits of cases with huge sizes, which must be refused at once.
BIG_TIMEOUT = 15.0
BIG_MEMORY_MB = 1024
#: Wall-clock limits are multiplied by this factor per backend (JAX compiles every fit).
TIMEOUT_SCALE = {"tensorflow": 1.0, "jax": 2.0}
#: A child exits after a case that left its address space this much larger.
RECYCLE_GROWTH_MB = 2048

POINTER_BASE = {"hidden_size": 8, "epochs": 1, "batch_size": 16, "random_state": 0}
TRANSDUCER_BASE = {
    "hidden_size": 8,
    "embedding_dim": 4,
    "memory_width": 4,
    "n_init": 1,
    "snap_gates": False,
    "epochs": 1,
    "batch_size": 16,
    "random_state": 0,
}


# ------------------------------------------------------------------------- cases
@dataclasses.dataclass(frozen=True)
class Case:
    """One hostile call and what it should lead to.

    Parameters
    ----------
    family : str
        The family of the case (``hyperparameters``, ``input_data``, ...).
    name : str
        Unique within the family.
    body : callable
        ``body(ctx, prepared)``, run under the limits. It returns (a short note) when
        the call went through, raises :class:`Silent` or :class:`Loss` when it saw
        garbage or lost a model, and lets the estimator's own exceptions through.
    expect : {"error", "either"}
        ``"error"``: the call must be refused, and going through is ``silent``;
        ``"either"``: a clean result and a clear error are both fine.
    setup : callable or None
        ``setup(ctx)``, run before the limits start; its return value is passed to
        ``body``. A dict with a ``"mention"`` entry requires that text (a file's path)
        in the message of any error.
    timeout : float
        Wall-clock limit of the body, in seconds.
    memory_mb : int
        How much the child's resident memory may grow during the body, in MiB.
    allowed : tuple of exception types
        Further exception types that count as clear errors when they carry a file name
        (``OSError`` subclasses for saves).
    quick : bool
        Whether ``--quick`` runs the case.
    """

    family: str
    name: str
    body: Callable
    expect: str = "either"
    setup: Callable | None = None
    timeout: float = 60.0
    memory_mb: int = 4096
    allowed: tuple = ()
    quick: bool = False

    @property
    def id(self):
        """``family/name``."""
        return f"{self.family}/{self.name}"


class Silent(Exception):
    """A case saw an accepted bad value or a garbage result."""


class Loss(Exception):
    """A case saw a model lost or changed by saving and loading."""


def _short(value, width=40):
    """A short ``repr`` of a case value."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**12:
        exponent = int(math.log10(abs(value)))
        return f"~1e{exponent}" if value > 0 else f"~-1e{exponent}"
    text = re.sub(r"<(?:[\w.<>]+\.)?(\w+) object at 0x[0-9a-f]+>", r"\1()", repr(value))
    return text if len(text) <= width else text[: width - 3] + "..."


# ------------------------------------------------------------------ classification
_BACKEND_WORDS = ("tensorflow", "jax", "xla", "h5py")
_INTERNAL_MESSAGES = re.compile(
    "|".join(
        [
            r"not supported between instances of",
            r"unhashable type",
            r"object is not (iterable|subscriptable|callable)",
            r"has no len\(\)",
            r"cannot be interpreted as an integer",
            r"too (large|big) to convert",
            r"int too (large|big)",
            r"invalid literal for",
            r"could not convert",
            r"could not be broadcast",
            r"setting an array element with a sequence",
            r"inhomogeneous",
            r"index out of range",
            r"out of bounds for (axis|size)",
            r"index \S+ is out of bounds",
            r"cannot reshape array",
            r"division by zero",
            r"'NoneType'",
            r"unsupported operand type",
            r"must be real number, not",
            r"argument must be a",
            r"positional argument",
            r"unexpected keyword argument",
            r"maximum (allowed|supported) dimension",
            r"negative dimensions are not allowed",
            r"array is too big",
            r"cannot convert float (nan|infinity) to integer",
            r"exceeds the limit \(\d+ digits\)",
            r"object has no attribute",
            r"cannot cast array",
            r"ufunc",
            r"zero-size array",
            r"received: \w+=",
            r"bad escape|unterminated character set|missing \), unterminated subpattern",
        ]
    ),
    re.IGNORECASE,
)
#: Modules whose clear errors count as skptr's own (scikit-learn's parameter checks).
_VALIDATION_FILES = (
    os.path.join("sklearn", "utils", "_param_validation.py"),
    os.path.join("sklearn", "utils", "validation.py"),
)


def _innermost_file(exc):
    tb = exc.__traceback__
    if tb is None:
        return ""
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code.co_filename


def _where(filename):
    """A short name of the module ``filename`` belongs to."""
    if filename.startswith(str(ROOT) + os.sep):
        return os.path.relpath(filename, ROOT)
    parts = Path(filename).parts
    for anchor in ("site-packages", "lib"):
        if anchor in parts:
            index = len(parts) - 1 - parts[::-1].index(anchor)
            return "/".join(parts[index + 1 :])
    return filename


def classify_exception(exc, skptr_dir, allowed=(), mention=None):
    """The outcome of a case that raised ``exc``.

    Parameters
    ----------
    exc : BaseException
        The exception, with its traceback.
    skptr_dir : str
        The directory of the skptr package under test.
    allowed : tuple of exception types, default=()
        Further types that count as clear errors when they carry a file name.
    mention : str or None, default=None
        Text (a file's path) a clear error message must contain.

    Returns
    -------
    outcome : str
        ``"ok"``, ``"raw"`` or ``"oom"``.
    note : str
        Why, when the outcome is not ``"ok"``.
    """
    from sklearn.exceptions import NotFittedError

    message = str(exc)
    filename = _innermost_file(exc)
    in_skptr = filename.startswith(skptr_dir)
    in_validation = any(filename.endswith(suffix) for suffix in _VALIDATION_FILES)
    where = _where(filename)
    if isinstance(exc, MemoryError):
        if in_skptr and len(message) >= 20 and not message.startswith("Unable to allocate"):
            return "ok", ""
        return "oom", f"MemoryError raised in {where}"
    with_filename = isinstance(exc, OSError) and getattr(exc, "filename", None) is not None
    if with_filename and isinstance(exc, (FileNotFoundError, *allowed)):
        return "ok", ""
    clear_types = (ValueError, TypeError, FileNotFoundError, NotFittedError)
    if not isinstance(exc, clear_types):
        return "raw", f"{type(exc).__name__} raised in {where}"
    if not (in_skptr or in_validation):
        return "raw", f"raised in {where}"
    lower = message.lower()
    for word in _BACKEND_WORDS:
        if word in lower:
            return "raw", f"the message mentions {word}"
    wrapped = in_skptr and exc.__context__ is not None
    if not wrapped and _INTERNAL_MESSAGES.search(message):
        return "raw", "an internal message"
    if not message.strip():
        return "raw", "an empty message"
    if mention is not None and mention not in message:
        return "raw", "the message does not name the file"
    return "ok", ""


# ------------------------------------------------------------- child-side context
class Context:
    """Fixtures of one child process, built on first use and kept.

    Parameters
    ----------
    workdir : str
        A directory of the child's own, removed by the parent.
    """

    def __init__(self, workdir):
        self.workdir = Path(workdir)
        self._cache = {}
        self._counter = 0

    def cached(self, key, make):
        """``make()``, computed once per child for ``key``."""
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def path(self, suffix=".skptr", directory=None):
        """A fresh file name in the work directory (or in ``directory``)."""
        self._counter += 1
        return str(Path(directory or self.workdir) / f"f{self._counter}{suffix}")

    def directory(self):
        """A fresh empty directory in the work directory."""
        path = self.path(suffix="")
        os.mkdir(path)
        return path

    def sorting(self):
        """32 sequences of 5 digits and their descending orderings."""
        from skptr.datasets import make_sorting

        return self.cached("sorting", lambda: make_sorting(32, 5, random_state=0))

    def strings(self):
        """32 reversal pairs over ``{a, b}``, 1 to 4 tokens long."""
        from skptr.datasets import make_transduction

        return self.cached(
            "strings",
            lambda: make_transduction(
                "reversal", 32, min_length=1, max_length=4, vocab_size=2, random_state=0
            ),
        )

    def pointer(self, **params):
        """A fitted tiny pointer network (shared: do not change it)."""
        key = ("pointer", tuple(sorted(params.items())))
        return self.cached(key, lambda: fit_pointer(self, **params))

    def transducer(self, **params):
        """A fitted tiny transducer (shared: do not change it)."""
        key = ("transducer", tuple(sorted(params.items())))
        return self.cached(key, lambda: fit_transducer(self, **params))

    def saved(self, kind):
        """A saved fitted model: ``{"bytes", "probe", "fingerprint", "members"}``."""
        return self.cached(("saved", kind), lambda: self._save_fixture(kind))

    def _save_fixture(self, kind):
        estimator, probe = fixture_model(self, kind)
        path = self.path()
        estimator.save(path)
        data = Path(path).read_bytes()
        return {
            "bytes": data,
            "probe": probe,
            "fingerprint": fingerprint(estimator, probe),
            "members": zip_members(data),
        }


def fit_pointer(ctx, data=None, **params):
    """A tiny ``PointerNetworkOrderer`` fitted on the sorting fixture."""
    from skptr import PointerNetworkOrderer

    X, y = data if data is not None else ctx.sorting()
    return PointerNetworkOrderer(**{**POINTER_BASE, **params}).fit(X, y)


def fit_transducer(ctx, data=None, **params):
    """A tiny ``NeuralStackTransducer`` fitted on the reversal fixture."""
    from skptr import NeuralStackTransducer

    X, y = data if data is not None else ctx.strings()
    return NeuralStackTransducer(**{**TRANSDUCER_BASE, **params}).fit(X, y)


_FIXTURE_KINDS = {
    "pointer": ("pointer", {}),
    "pointer-cycle": ("pointer", {"cycle": "undirected"}),
    "stack": ("transducer", {"memory": "stack"}),
    "queue": ("transducer", {"memory": "queue"}),
    "deque": ("transducer", {"memory": "deque"}),
    "memoryless": ("transducer", {"memory": None}),
}


def fixture_model(ctx, kind, fresh=False, **extra):
    """A fitted fixture model of ``kind`` and its probe inputs.

    Parameters
    ----------
    ctx : Context
        The child's fixtures.
    kind : str
        A key of the fixture kinds (``"pointer"``, ``"stack"``, ...).
    fresh : bool, default=False
        Fit a new model (which the case may change) instead of the shared one.
    **extra
        More parameters (only with ``fresh``).
    """
    family, params = _FIXTURE_KINDS[kind]
    params = {**params, **extra}
    if family == "pointer":
        model = fit_pointer(ctx, **params) if fresh else ctx.pointer(**params)
        return model, ctx.sorting()[0][:8]
    model = fit_transducer(ctx, **params) if fresh else ctx.transducer(**params)
    return model, list(ctx.strings()[0][:8])


def same_predictions(a, b):
    """Whether two prediction arrays are equal (item by item, kinds included, for objects)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype != object and b.dtype != object:
        return bool(np.array_equal(a, b))
    for x, y in zip(a.ravel(), b.ravel(), strict=True):
        if type(x) is not type(y):
            return False
        if isinstance(x, np.ndarray):
            if x.shape != y.shape or not np.array_equal(x, y):
                return False
        elif x != y:
            return False
    return True


def fingerprint(model, probe, like=None):
    """What ``model`` computes on ``probe``, to tell two models apart.

    Predictions alone are too coarse for tiny models (a transducer trained for one
    epoch predicts empty strings whatever its weights), so the pointer network's
    distributions (``predict_proba``) and the transducer's memory operations
    (``memory_trace``, with the soft strengths of the fixtures' ``snap_gates=False``)
    are compared too.

    Parameters
    ----------
    model : PointerNetworkOrderer or NeuralStackTransducer
        A fitted model.
    probe : list
        Inputs.
    like : dict or None, default=None
        A fingerprint to compare with: the transducer's memory is traced when it has
        traces (otherwise when ``model.memory`` is set). A transducer whose
        ``memory`` parameter was set to None after ``fit`` may refuse to trace; its
        fingerprint then holds its predictions only.

    Returns
    -------
    dict
        ``"predict"`` and ``"proba"``, or ``"predict"`` and ``"push"``, ``"pop"`` and
        ``"read"`` (lists of arrays, one per sample).
    """
    result = {"predict": model.predict(probe)}
    if hasattr(model, "predict_proba"):
        result["proba"] = np.asarray(model.predict_proba(probe))
        return result
    if like is not None:
        trace = "read" in like
    else:
        trace = getattr(model, "memory", None) is not None
    if trace:
        try:
            traces = model.memory_trace(probe)
        except ValueError:
            return result
        for key in ("push", "pop", "read"):
            result[key] = [np.asarray(trace[key]) for trace in traces]
    return result


def fingerprint_difference(a, b):
    """What differs between two fingerprints in the outputs both hold ("" if nothing)."""
    common = a.keys() & b.keys()
    a = {key: a[key] for key in common}
    b = {key: b[key] for key in common}
    differences = []
    if not same_predictions(a["predict"], b["predict"]):
        differences.append("predictions differ")
    largest = None
    for key in sorted(a.keys() - {"predict"}):
        left = a[key] if isinstance(a[key], list) else [a[key]]
        right = b[key] if isinstance(b[key], list) else [b[key]]
        for x, y in zip(left, right, strict=True):
            if x.shape != y.shape:
                differences.append(f"{key} has shape {y.shape}, expected {x.shape}")
                break
            if not np.allclose(x, y, rtol=1e-5, atol=1e-6, equal_nan=True):
                gap = float(np.max(np.abs(x - y), initial=0.0))
                if np.isnan(x - y).any():
                    gap = math.nan
                if largest is None or not gap <= largest[1]:
                    largest = (key, gap)
    if largest is not None:
        differences.append(f"{largest[0]} differs by up to {largest[1]:.3g}")
    return "; ".join(differences)


def check_orderings(predictions, lengths):
    """Raise :class:`Silent` unless ``predictions`` are valid orderings of the inputs."""
    predictions = np.asarray(predictions)
    if predictions.ndim != 2 or predictions.shape[0] != len(lengths):
        raise Silent(f"predictions of shape {predictions.shape} for {len(lengths)} inputs")
    if predictions.dtype.kind not in "iu":
        raise Silent(f"predictions of dtype {predictions.dtype}")
    for i, (row, n) in enumerate(zip(predictions, lengths, strict=True)):
        real = row[row >= 0]
        if len(real) and (real.max() >= n or len(set(real.tolist())) != len(real)):
            raise Silent(f"prediction {i} {row.tolist()} is not an ordering of {n} positions")
        if np.any(row[len(real) :] != -1):
            raise Silent(f"prediction {i} {row.tolist()} has padding before its end")
    return f"valid orderings, shape {predictions.shape}"


def check_transductions(predictions, n, kind=str, vocabulary=("a", "b")):
    """Raise :class:`Silent` unless ``predictions`` are ``n`` outputs of tokens seen in fit."""
    if len(predictions) != n:
        raise Silent(f"{len(predictions)} predictions for {n} inputs")
    for i, output in enumerate(predictions):
        if not isinstance(output, kind):
            raise Silent(f"prediction {i} is a {type(output).__name__}, not a {kind.__name__}")
        unknown = [token for token in output if token not in vocabulary]
        if unknown:
            raise Silent(f"prediction {i} holds tokens never seen in fit: {unknown[:3]}")
    return f"{n} outputs of the training kind"


def _stop_list():
    return [stop_after_first_epoch()]


def stop_after_first_epoch():
    """A Keras callback that ends training after the first epoch."""
    import keras

    class StopAfterFirstEpoch(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            self.model.stop_training = True

    return StopAfterFirstEpoch()


# ------------------------------------------------------------------- zip helpers
def zip_members(data):
    """The members of a zip archive, by name, in order."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def zip_build(members, compression=zipfile.ZIP_DEFLATED):
    """A zip archive of ``members`` (a dict or a list of (name, bytes) pairs)."""
    items = members.items() if isinstance(members, dict) else members
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compression) as archive:
        for name, payload in items:
            archive.writestr(name, payload)
    return buffer.getvalue()


def with_member(data, name, payload):
    """``data`` with the member ``name`` replaced (or added)."""
    members = zip_members(data)
    members[name] = payload
    return zip_build(members)


def without_member(data, name):
    """``data`` without the member ``name``."""
    members = zip_members(data)
    members.pop(name, None)
    return zip_build(members)


def with_metadata(data, edit):
    """``data`` with ``skptr.json`` parsed, changed by ``edit(metadata)`` and rewritten."""
    metadata = json.loads(zip_members(data)["skptr.json"])
    edit(metadata)
    return with_member(data, "skptr.json", json.dumps(metadata).encode())


def write_bomb(path, data, member, size, filler=b"\0", suffix=b""):
    """Write ``data`` to ``path`` with ``member`` replaced by ``size`` bytes of ``filler``.

    The member is streamed through the compressor a MiB at a time, so that a GiB member
    costs a MiB of memory and about a MiB of file.
    """
    chunk = filler * (2**20 // len(filler))
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, payload in zip_members(data).items():
            if name != member:
                archive.writestr(name, payload)
                continue
            with archive.open(name, "w", force_zip64=True) as handle:
                for _ in range(size // len(chunk)):
                    handle.write(chunk)
                handle.write(suffix)


def bomb_bytes(member, size, others=()):
    """An in-memory zip (a nested ``.keras`` file) with a ``size``-byte zeroed member."""
    buffer = io.BytesIO()
    chunk = b"\0" * 2**20
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, payload in others:
            archive.writestr(name, payload)
        with archive.open(member, "w", force_zip64=True) as handle:
            for _ in range(size // len(chunk)):
                handle.write(chunk)
    return buffer.getvalue()


def zip_field_offsets(data):
    """Byte offsets of the size, offset and method fields of a zip archive's records.

    Returns a dict from a field's name (``"eocd.cd_offset"``, ``"cd[skptr.json].usize"``,
    ``"local[network.keras].method"``, ...) to ``(offset, width)``.
    """
    fields = {}
    eocd = data.rfind(b"PK\x05\x06")
    fields["eocd.entries"] = (eocd + 10, 2)
    fields["eocd.cd_size"] = (eocd + 12, 4)
    fields["eocd.cd_offset"] = (eocd + 16, 4)
    position = data.find(b"PK\x01\x02")
    while position >= 0:
        name_length = int.from_bytes(data[position + 28 : position + 30], "little")
        name = data[position + 46 : position + 46 + name_length].decode("utf-8", "replace")
        for field, offset, width in (
            ("method", 10, 2),
            ("crc", 16, 4),
            ("csize", 20, 4),
            ("usize", 24, 4),
            ("name_length", 28, 2),
            ("offset", 42, 4),
        ):
            fields[f"cd[{name}].{field}"] = (position + offset, width)
        local = int.from_bytes(data[position + 42 : position + 46], "little")
        for field, offset, width in (
            ("flags", 6, 2),
            ("method", 8, 2),
            ("csize", 18, 4),
            ("usize", 22, 4),
            ("name_length", 26, 2),
        ):
            fields[f"local[{name}].{field}"] = (local + offset, width)
        position = data.find(b"PK\x01\x02", position + 4)
    return fields


def flipped(data, offset, mask=0xFF):
    """``data`` with the byte at ``offset`` XOR ``mask``."""
    out = bytearray(data)
    out[offset] ^= mask
    return bytes(out)


def set_field(data, offset, width, value):
    """``data`` with a little-endian unsigned field overwritten."""
    out = bytearray(data)
    out[offset : offset + width] = int(value).to_bytes(width, "little")
    return bytes(out)


# ------------------------------------------------------------- failure injection
class _FailingWriter:
    """A file whose first write stores half of its data, then raises."""

    def __init__(self, handle, raise_error):
        self._handle = handle
        self._raise_error = raise_error

    def write(self, data):
        self._handle.write(bytes(data)[: max(1, len(data) // 2)])
        self._handle.flush()
        self._raise_error()

    def __getattr__(self, name):
        return getattr(self._handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self._handle.close()
        return False

    def __iter__(self):
        return iter(self._handle)


def _opened_path(file):
    if isinstance(file, int):
        try:
            return os.readlink(f"/proc/self/fd/{file}")
        except OSError:
            return ""
    try:
        return os.path.abspath(os.fsdecode(os.fspath(file)))
    except TypeError:
        return ""


@contextlib.contextmanager
def writes_fail_in(directory, raise_error):
    """Make every file opened for writing inside ``directory`` fail half way.

    ``open``, ``io.open`` (and so ``os.fdopen``, ``pathlib`` and ``tempfile``) return
    a file that writes half of its first chunk and then calls ``raise_error``.
    """
    real_open = io.open
    directory = os.path.abspath(directory) + os.sep

    def failing_open(file, mode="r", *args, **kwargs):
        handle = real_open(file, mode, *args, **kwargs)
        if any(flag in mode for flag in "wax+") and _opened_path(file).startswith(directory):
            return _FailingWriter(handle, raise_error)
        return handle

    builtins.open = io.open = failing_open
    try:
        yield
    finally:
        builtins.open = io.open = real_open


@contextlib.contextmanager
def patched(owner, name, replacement):
    """Set ``owner.name`` to ``replacement`` for the duration of the block."""
    original = getattr(owner, name)
    setattr(owner, name, replacement)
    try:
        yield
    finally:
        setattr(owner, name, original)


@contextlib.contextmanager
def file_size_limit(limit):
    """Limit the size of files this process writes (``RLIMIT_FSIZE``) to ``limit`` bytes."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)


@contextlib.contextmanager
def _network_member_write_fails():
    """Make writing a ``network.keras`` member into any zip archive raise ``OSError``."""
    real_write, real_writestr, real_open = (
        zipfile.ZipFile.write,
        zipfile.ZipFile.writestr,
        zipfile.ZipFile.open,
    )

    def check(name):
        if str(getattr(name, "filename", name)).endswith("network.keras"):
            raise OSError(errno.EIO, "simulated failure writing the network.keras member")

    def write(self, filename, arcname=None, *args, **kwargs):
        check(arcname or filename)
        return real_write(self, filename, arcname, *args, **kwargs)

    def writestr(self, zinfo_or_arcname, data, *args, **kwargs):
        check(zinfo_or_arcname)
        return real_writestr(self, zinfo_or_arcname, data, *args, **kwargs)

    def open_member(self, name, mode="r", *args, **kwargs):
        if mode == "w":
            check(name)
        return real_open(self, name, mode, *args, **kwargs)

    with (
        patched(zipfile.ZipFile, "write", write),
        patched(zipfile.ZipFile, "writestr", writestr),
        patched(zipfile.ZipFile, "open", open_member),
    ):
        yield


def _disk_full():
    raise OSError(errno.ENOSPC, "No space left on device (simulated)")


def _interrupted():
    raise KeyboardInterrupt("simulated Ctrl-C during save")


# =========================================================================== families
_NAN = float("nan")
_INF = float("inf")
_HUGE_INTS = (("2**31", 2**31), ("2**63", 2**63), ("2**70", 2**70), ("10**400", 10**400))


def _fit_body(estimator, params, predict=None, data=None):
    """Fit a tiny estimator with ``params`` and check its predictions.

    Parameters
    ----------
    estimator : {"pointer", "transducer"}
    params : dict
        Parameters on top of the tiny base ones; a callable value is called first
        (for values such as Keras callbacks that need the backend).
    predict : callable or None
        ``predict(model, ctx)``, returning a note; by default the training inputs'
        first 8 are predicted and checked.
    data : callable or None
        ``data(ctx)``, returning ``(X, y)`` instead of the fixture.
    """

    def body(ctx, prepared):
        resolved = {k: (v() if callable(v) and k == "callbacks" else v) for k, v in params.items()}
        training = data(ctx) if data is not None else None
        if estimator == "pointer":
            model = fit_pointer(ctx, training, **resolved)
            X = (training or ctx.sorting())[0][:8]
        else:
            model = fit_transducer(ctx, training, **resolved)
            X = list((training or ctx.strings())[0][:8])
        accepted = ", ".join(
            f"{k}={_short(v)}" for k, v in resolved.items() if params[k] is not _stop_list
        )
        if predict is not None:
            return f"accepted {accepted}: " + predict(model, ctx)
        outputs = model.predict(X)
        if estimator == "pointer":
            note = check_orderings(outputs, [len(x) for x in X])
        else:
            note = check_transductions(outputs, len(X))
        return f"accepted {accepted}: {note}"

    return body


def _int_values(minimum, huge_expect, none_ok=False):
    """(label, value, expectation) for an integer parameter with ``minimum``."""
    values = [
        ("True", True, "error"),
        ("False", False, "error"),
        ("0", 0, "error" if minimum > 0 else "either"),
        ("-1", -1, "error"),
        ("np.int64(2)", np.int64(2), "either"),
        ("np.uint8(2)", np.uint8(2), "either"),
        ("np.float64(2.0)", np.float64(2.0), "error"),
        ("2.0", 2.0, "error"),
        ("2.5", 2.5, "error"),
        ("nan", _NAN, "error"),
        ("inf", _INF, "error"),
        ("'2'", "2", "error"),
        ("[2]", [2], "error"),
        ("{'v': 2}", {"v": 2}, "error"),
        ("object()", object(), "error"),
        ("None", None, "either" if none_ok else "error"),
        ("2+0j", 2 + 0j, "error"),
    ]
    values += [(label, value, huge_expect) for label, value in _HUGE_INTS]
    return values


def _float_values(low, high, low_closed, high_closed, none_ok=False, auto_ok=False):
    """(label, value, expectation) for a float parameter on an interval."""

    def inside(x):
        above = x >= low if low_closed else x > low
        below = x <= high if high_closed else x < high
        return above and below

    numbers = [
        ("-1.0", -1.0),
        ("0.0", 0.0),
        ("0.5", 0.5),
        ("1.0", 1.0),
        ("1e308", 1e308),
        ("5e-324", 5e-324),
        ("np.float32(0.5)", np.float32(0.5)),
        ("Fraction(1,2)", Fraction(1, 2)),
        ("10**400", 10**400),
    ]
    values = [(label, x, "either" if inside(x) else "error") for label, x in numbers]
    values += [
        ("nan", _NAN, "error"),
        ("inf", _INF, "error"),
        ("-inf", -_INF, "error"),
        ("np.float64(nan)", np.float64(_NAN), "error"),
        ("True", True, "error"),
        ("'0.5'", "0.5", "error"),
        ("[0.5]", [0.5], "error"),
        ("0.5+0j", 0.5 + 0j, "error"),
        ("None", None, "either" if none_ok else "error"),
        ("'auto'", "auto", "either" if auto_ok else "error"),
    ]
    return values


def _choice_values(valid, none_ok=False, bool_ok=False):
    """(label, value, expectation) for a parameter with string options ``valid``."""
    first = sorted(valid)[0]
    values = [(repr(v), v, "either") for v in sorted(valid)]
    values += [
        (repr(first.upper()), first.upper(), "error"),
        (repr(" " + first), " " + first, "error"),
        ("''", "", "error"),
        ("'nonsense'", "nonsense", "error"),
        ("None", None, "either" if none_ok else "error"),
        ("1", 1, "error"),
        (f"[{first!r}]", [first], "error"),
        (f"b{first!r}", first.encode(), "error"),
        (f"np.str_({first!r})", np.str_(first), "either"),
    ]
    if bool_ok:
        values += [("True", True, "either"), ("False", False, "either")]
    else:
        values += [("True", True, "error")]
    return values


def _bool_values():
    return [
        ("np.bool_(False)", np.bool_(False), "either"),
        ("1", 1, "error"),
        ("0", 0, "error"),
        ("'True'", "True", "error"),
        ("'False'", "False", "error"),
        ("None", None, "error"),
        ("[True]", [True], "error"),
        ("2.0", 2.0, "error"),
    ]


def _beam_predict(lengths):
    """A ``predict`` check over random inputs of the given lengths."""

    def predict(model, ctx):
        rng = np.random.default_rng(0)
        X = [rng.integers(0, 10, size=n).astype(float) for n in lengths]
        return check_orderings(model.predict(X), lengths)

    return predict


def _transducer_predict_long(model, ctx):
    outputs = model.predict(["ab" * 20])
    return check_transductions(outputs, 1)


_QUICK_HYPERPARAMETERS = {
    "pointer/epochs=True",
    "pointer/hidden_size=np.int64(2)",
    "pointer/hidden_size=10**400",
    "pointer/callbacks=[1, 2]",
    "pointer/beam_width=10**6@T=5",
    "pointer/random_state 0 vs 2**31-1",
    "transducer/n_init=2**70",
    "transducer/memory_width=10**7",
    "transducer/learning_rate=10**400",
    "transducer/max_output_length=2**70",
    "transducer/callbacks='x'",
}


def hyperparameter_cases():
    """Every parameter of both estimators, with hostile values."""
    cases = []

    def add(estimator, label, params, expect, **kwargs):
        name = f"{estimator}/{label}"
        big = any(
            isinstance(v, int) and not isinstance(v, bool) and v >= 10**6 for v in params.values()
        )
        cases.append(
            Case(
                "hyperparameters",
                name,
                _fit_body(estimator, params, **kwargs),
                expect=expect,
                timeout=BIG_TIMEOUT if big else 60.0,
                memory_mb=BIG_MEMORY_MB if big else 4096,
                quick=name in _QUICK_HYPERPARAMETERS,
            )
        )

    int_params = {
        "pointer": [
            ("hidden_size", 1, "error", {}, None),
            ("num_layers", 1, "error", {}, None),
            ("n_glimpses", 0, "error", {}, None),
            ("beam_width", 1, "either", {"decode": "beam"}, None),
            ("epochs", 1, "either", {"callbacks": _stop_list}, None),
            ("batch_size", 1, "either", {}, None),
            ("n_iter_no_change", 1, "either", {"early_stopping": True}, None),
        ],
        "transducer": [
            ("hidden_size", 1, "error", {}, None),
            ("embedding_dim", 1, "error", {}, None),
            ("memory_width", 1, "error", {}, None),
            ("n_init", 1, "error", {}, None),
            ("max_output_length", 1, "either", {}, "none"),
            ("state_bptt_steps", 0, "either", {}, "none"),
            ("epochs", 1, "either", {"callbacks": _stop_list}, None),
            ("batch_size", 1, "either", {}, None),
            ("n_iter_no_change", 1, "either", {"early_stopping": True}, None),
        ],
    }
    for estimator, specs in int_params.items():
        for name, minimum, huge_expect, extra, none_ok in specs:
            for label, value, expect in _int_values(minimum, huge_expect, none_ok == "none"):
                add(estimator, f"{name}={label}", {**extra, name: value}, expect)
    for estimator, names in (
        ("pointer", ["hidden_size"]),
        ("transducer", ["hidden_size", "embedding_dim", "memory_width"]),
    ):
        for name in names:
            add(estimator, f"{name}=10**7", {name: 10**7}, "error")

    float_params = {
        "pointer": [
            ("dropout", (0, 1, True, False), {}),
            ("learning_rate", (0, _INF, False, False), {}),
            ("learning_rate_decay", (0, 1, False, True), {}),
            ("clipnorm", (0, _INF, False, False), {"none_ok": True}),
            ("validation_fraction", (0, 1, True, False), {}),
        ],
        "transducer": [
            ("learning_rate", (0, _INF, False, False), {}),
            ("clipnorm", (0, _INF, False, False), {"none_ok": True}),
            ("validation_fraction", (0, 1, True, False), {}),
            ("pop_bias", (-_INF, _INF, False, False), {}),
            ("push_bias", (-_INF, _INF, False, False), {"auto_ok": True}),
            ("gate_noise", (0, _INF, True, False), {"auto_ok": True}),
            ("gate_noise_start", (0, 1, True, True), {"auto_ok": True}),
        ],
    }
    for estimator, specs in float_params.items():
        for name, interval, options in specs:
            for label, value, expect in _float_values(*interval, **options):
                add(estimator, f"{name}={label}", {name: value}, expect)
        add(estimator, "validation_fraction=0.999", {"validation_fraction": 0.999}, "error")

    choice_params = {
        "pointer": [
            ("cell", {"lstm", "gru", "rnn"}, {}),
            ("attention", {"additive", "dot", "general"}, {}),
            ("decode", {"greedy", "beam"}, {}),
            ("cycle", {"directed", "undirected"}, {"none_ok": True}),
        ],
        "transducer": [
            ("memory", {"stack", "queue", "deque"}, {"none_ok": True}),
            ("cell", {"lstm", "gru", "rnn"}, {}),
            ("handle_unknown", {"error", "ignore"}, {}),
            ("reset_cell_state", {"auto"}, {"bool_ok": True}),
            ("snap_gates", {"auto"}, {"bool_ok": True}),
        ],
    }
    for estimator, specs in choice_params.items():
        for name, valid, options in specs:
            for label, value, expect in _choice_values(valid, **options):
                add(estimator, f"{name}={label}", {name: value}, expect)

    bool_params = {
        "pointer": ["bidirectional", "early_stopping", "warm_start"],
        "transducer": ["curriculum", "early_stopping", "warm_start"],
    }
    for estimator, names in bool_params.items():
        for name in names:
            for label, value, expect in _bool_values():
                add(estimator, f"{name}={label}", {name: value}, expect)
        for label, value, expect in [
            ("-1", -1, "error"),
            ("3", 3, "either"),
            ("'1'", "1", "error"),
            ("1.5", 1.5, "error"),
            ("None", None, "error"),
            ("10**400", 10**400, "either"),
            ("np.int64(0)", np.int64(0), "either"),
        ]:
            add(estimator, f"verbose={label}", {"verbose": value}, expect)

    for estimator in ("pointer", "transducer"):
        for label, value, expect in [
            ("0", 0, "either"),
            ("2**31-2", 2**31 - 2, "either"),
            ("2**31-1", 2**31 - 1, "either"),
            ("2**32-1", 2**32 - 1, "either"),
            ("2**32", 2**32, "error"),
            ("-1", -1, "error"),
            ("2**70", 2**70, "error"),
            ("'0'", "0", "error"),
            ("1.5", 1.5, "error"),
            ("True", True, "error"),
            ("np.int64(7)", np.int64(7), "either"),
            ("RandomState(0)", np.random.RandomState(0), "either"),
            ("default_rng(0)", np.random.default_rng(0), "error"),
        ]:
            add(estimator, f"random_state={label}", {"random_state": value}, expect)
        for a, b, label in [
            (0, 2**31 - 1, "0 vs 2**31-1"),
            (1, 2**31, "1 vs 2**31"),
            (1, 2**32 - 1, "1 vs 2**32-1"),
        ]:
            name = f"{estimator}/random_state {label}"
            cases.append(
                Case(
                    "hyperparameters",
                    name,
                    _seed_pair_body(estimator, a, b),
                    quick=name in _QUICK_HYPERPARAMETERS,
                )
            )
        for label, value, expect in [
            ("[1, 2]", [1, 2], "error"),
            ("'x'", "x", "error"),
            ("[None]", [None], "error"),
            ("[object()]", [object()], "error"),
            ("{}", {}, "error"),
            ("(1,)", (1,), "error"),
            ("[[stop]]", lambda: [[stop_after_first_epoch()]], "error"),
            ("[stop]", lambda: [stop_after_first_epoch()], "either"),
            ("stop", stop_after_first_epoch, "error"),
            ("[]", [], "either"),
        ]:
            factory = value if callable(value) else (lambda v=value: v)
            add(estimator, f"callbacks={label}", {"callbacks": factory}, expect)

    for width_label, width in [
        ("1", 1),
        ("2", 2),
        ("6", 6),
        ("120", 120),
        ("121", 121),
        ("10**4", 10**4),
        ("10**6", 10**6),
        ("2**31", 2**31),
    ]:
        for lengths_label, lengths in [("T=5", [5, 5, 5]), ("T=1", [1, 1]), ("T=0..3", [0, 1, 3])]:
            add(
                "pointer",
                f"beam_width={width_label}@{lengths_label}",
                {"decode": "beam", "beam_width": width},
                "either",
                predict=_beam_predict(lengths),
            )
    add(
        "transducer",
        "max_output_length=2**31@predict",
        {"max_output_length": 2**31},
        "either",
        predict=_transducer_predict_long,
    )
    return cases


def _seed_pair_body(estimator, a, b):
    """Fit with ``random_state=a`` and ``b``: different seeds must give different weights."""

    def body(ctx, prepared):
        fit = fit_pointer if estimator == "pointer" else fit_transducer
        first = fit(ctx, random_state=a).network_.get_weights()
        second = fit(ctx, random_state=b).network_.get_weights()
        if all(np.array_equal(x, y) for x, y in zip(first, second, strict=True)):
            raise Silent(f"random_state={a} and random_state={b} give identical weights")
        return "different weights"

    return body


# ------------------------------------------------------------------------ input data
def _pointer_fit_case(name, make, expect, quick=False, check=True):
    """A pointer fit on ``make(ctx) -> (X, y)``, its predictions checked."""

    def body(ctx, prepared):
        X, y = make(ctx)
        model = fit_pointer(ctx, (X, y))
        if not check:
            return "fitted"
        probe = list(X)[:8] if hasattr(X, "__len__") else list(ctx.sorting()[0][:8])
        return check_orderings(model.predict(probe), [len(x) for x in probe])

    return Case("input_data", f"pointer.fit/{name}", body, expect, quick=quick)


def _pointer_call_case(name, call, expect, quick=False, timeout=60.0, memory_mb=4096):
    """``call(model, ctx)`` on the shared fitted pointer network."""

    def body(ctx, prepared):
        return call(prepared, ctx)

    return Case(
        "input_data",
        f"pointer.predict/{name}",
        body,
        expect,
        setup=lambda ctx: ctx.pointer(),
        timeout=timeout,
        memory_mb=memory_mb,
        quick=quick,
    )


def _transducer_fit_case(name, make, expect, quick=False, predict=None):
    """A transducer fit on ``make(ctx) -> (X, y)``, then ``predict(model, X)``."""

    def body(ctx, prepared):
        X, y = make(ctx)
        model = fit_transducer(ctx, (X, y))
        if predict is not None:
            probe = predict
        elif isinstance(X, list | np.ndarray):
            probe = X[:8]
        else:
            probe = list(ctx.strings()[0][:8])
        outputs = model.predict(probe)
        return f"fitted; predicted {len(outputs)} outputs"

    return Case("input_data", f"transducer.fit/{name}", body, expect, quick=quick)


def _transducer_call_case(name, call, expect, quick=False, timeout=60.0, params=None):
    """``call(model, ctx)`` on a shared fitted stack transducer."""

    def body(ctx, prepared):
        return call(prepared, ctx)

    return Case(
        "input_data",
        f"transducer.predict/{name}",
        body,
        expect,
        setup=lambda ctx: ctx.transducer(**(params or {})),
        timeout=timeout,
        quick=quick,
    )


def _sorting_with(transform_X=None, transform_y=None):
    def make(ctx):
        X, y = ctx.sorting()
        X = X.copy() if transform_X is None else transform_X(X.copy())
        y = y.copy() if transform_y is None else transform_y(y.copy())
        return X, y

    return make


def _set(array, index, value):
    array[index] = value
    return array


def _permutations(lengths, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.permutation(n).tolist() for n in lengths]


def _pointer_input_cases():
    cases = []
    f = _pointer_fit_case
    fixed = lambda X, y: lambda ctx: (X, y)  # noqa: E731
    cases += [
        f("X=[] y=[]", fixed([], []), "error", quick=True),
        f("X=empty(0,5)", fixed(np.empty((0, 5)), np.empty((0, 5), dtype=int)), "error"),
        f("X=empty(4,0)", fixed(np.empty((4, 0)), np.empty((4, 0), dtype=int)), "error"),
        f("X=empty(32,5,0)", _sorting_with(lambda X: X[..., None][..., :0]), "error"),
        f(
            "ragged",
            fixed([[1, 2, 3], [4, 5], [6, 7, 8, 9]] * 4, [[2, 1, 0], [1, 0], [3, 2, 1, 0]] * 4),
            "either",
            quick=True,
        ),
        f(
            "ragged with an empty sequence",
            fixed([[1, 2], [], [3]] * 4, [[1, 0], [], [0]] * 4),
            "either",
        ),
        f("ragged features", fixed([[[1, 2], [3, 4]], [[1], [2]]], [[0, 1], [1, 0]]), "error"),
        f("X nan", _sorting_with(lambda X: _set(X, (0, 0), np.nan)), "error", quick=True),
        f("X inf", _sorting_with(lambda X: _set(X, (3, 2), np.inf)), "error"),
        f("X -inf", _sorting_with(lambda X: _set(X, (3, 2), -np.inf)), "error"),
        f("X 1e308", _sorting_with(lambda X: X * 1e307), "either"),
        f("X one 1e308", _sorting_with(lambda X: _set(X, (1, 1), 1e308)), "either"),
        f("X 1e38", _sorting_with(lambda X: X * 1e37), "either"),
        f("X object numbers", _sorting_with(lambda X: X.astype(object)), "either"),
        f(
            "X object with None",
            _sorting_with(lambda X: _set(X.astype(object), (0, 0), None)),
            "error",
        ),
        f("X strings", fixed([["a", "b", "c"]] * 4, [[0, 1, 2]] * 4), "error", quick=True),
        f("X str array", _sorting_with(lambda X: X.astype(str)), "error"),
        f("X python strings", fixed(["abc", "bca"] * 4, [[0, 1, 2]] * 8), "error"),
        f("X 4-D", _sorting_with(lambda X: X[:, :, None, None]), "error", quick=True),
        f("X 1-D", fixed(np.arange(5.0), [4, 3, 2, 1, 0]), "error"),
        f("X scalar", fixed(5.0, [[0]]), "error"),
        f("X None", fixed(None, [[0]]), "error"),
        f("X complex", _sorting_with(lambda X: X + 1j), "error"),
        f("X bool", _sorting_with(lambda X: X > 4), "either"),
        f(
            "X uint64 max",
            _sorting_with(lambda X: _set(X.astype(np.uint64), (0, 0), 2**64 - 1)),
            "either",
        ),
        f("X float16", _sorting_with(lambda X: X.astype(np.float16)), "either"),
        f("X datetime64", _sorting_with(lambda X: X.astype("datetime64[D]")), "error"),
        f("X dict", fixed({0: [1, 2]}, [[1, 0]]), "error"),
        f("X set", fixed({1, 2, 3}, [[0]]), "error"),
        f("X generator", lambda ctx: ((x for x in ctx.sorting()[0]), ctx.sorting()[1]), "either"),
        f(
            "X 10**4 features",
            _sorting_with(lambda X: np.repeat(X[..., None], 10**4, -1)),
            "either",
        ),
        f(
            "X nested object arrays",
            _sorting_with(lambda X: np.array(list(X), dtype=object)),
            "either",
        ),
        f(
            "y duplicates",
            _sorting_with(None, lambda y: _set(y, (0, 1), y[0, 0])),
            "error",
            quick=True,
        ),
        f("y out of range", _sorting_with(None, lambda y: _set(y, (0, 0), 5)), "error"),
        f("y -2", _sorting_with(None, lambda y: _set(y, (0, 0), -2)), "error"),
        f("y longer than X", _sorting_with(None, lambda y: np.hstack([y, y[:, :1]])), "error"),
        f("y integral floats", _sorting_with(None, lambda y: y.astype(float)), "either"),
        f("y 0.5", _sorting_with(None, lambda y: _set(y.astype(float), (0, 0), 0.5)), "error"),
        f("y nan", _sorting_with(None, lambda y: _set(y.astype(float), (0, 0), np.nan)), "error"),
        f("y -1 first", _sorting_with(None, lambda y: _set(y, (0, 0), -1)), "error", quick=True),
        f("y -1 in the middle", _sorting_with(None, lambda y: _set(y, (0, 2), -1)), "error"),
        f("y all -1", _sorting_with(None, lambda y: np.full_like(y, -1)), "either"),
        f("y strings", _sorting_with(None, lambda y: y.astype(str)), "error"),
        f("y None", _sorting_with(None, lambda y: None), "error"),
        f("y 3-D", _sorting_with(None, lambda y: y[..., None]), "error"),
        f("y 1-D", _sorting_with(None, lambda y: y[:, 0]), "error"),
        f("y bool", _sorting_with(None, lambda y: y > 2), "error"),
        f(
            "y 2**70",
            _sorting_with(None, lambda y: _set(y.astype(object), (0, 0), 2**70)),
            "error",
        ),
        f(
            "y uint64 max",
            _sorting_with(None, lambda y: _set(y.astype(np.uint64), (0, 0), 2**64 - 1)),
            "error",
        ),
        f("y sets", _sorting_with(None, lambda y: [set(row.tolist()) for row in y]), "error"),
        f("y ragged lists", _sorting_with(None, lambda y: [row.tolist() for row in y]), "either"),
        f(
            "y ordered subsets",
            _sorting_with(None, lambda y: [row[:3].tolist() for row in y]),
            "either",
        ),
        f("X 32 y 31", _sorting_with(None, lambda y: y[:31]), "error", quick=True),
        f("X 32 y 33", _sorting_with(None, lambda y: np.vstack([y, y[:1]])), "error"),
        f("y permutations of 6", _sorting_with(None, lambda y: _permutations([6] * 32)), "error"),
    ]
    p = _pointer_call_case
    rng = np.random.default_rng(1)
    cases += [
        p("X=[]", lambda m, c: f"{m.predict([]).shape}", "either", quick=True),
        p("X nan", lambda m, c: m.predict([[1.0, np.nan, 2.0]]), "error"),
        p("X inf", lambda m, c: m.predict([[1.0, np.inf, 2.0]]), "error"),
        p("X 1e308", lambda m, c: check_orderings(m.predict([[1.0, 1e308, 2.0]]), [3]), "either"),
        p("2 features", lambda m, c: m.predict(np.ones((2, 5, 2))), "error"),
        p("length 0", lambda m, c: check_orderings(m.predict([[]]), [0]), "either"),
        p("length 1", lambda m, c: check_orderings(m.predict([[3.0]]), [1]), "either"),
        p(
            "length 200",
            lambda m, c: check_orderings(m.predict([rng.random(200)]), [200]),
            "either",
        ),
        p(
            "length 5000",
            lambda m, c: check_orderings(m.predict([np.arange(5000.0)]), [5000]),
            "either",
        ),
        p("strings", lambda m, c: m.predict([["a", "b"]]), "error"),
        p("4-D", lambda m, c: m.predict(np.ones((2, 5, 1, 1))), "error"),
        p("None inside", lambda m, c: m.predict([[1.0, None]]), "error"),
        p("X None", lambda m, c: m.predict(None), "error"),
        p("predict_proba nan", lambda m, c: m.predict_proba([[np.nan, 1.0]]), "error"),
        p(
            "score y duplicates",
            lambda m, c: m.score(c.sorting()[0][:2], [[0, 0, 1, 2, 3]] * 2),
            "error",
        ),
        p(
            "score y 1 row for 2",
            lambda m, c: m.score(c.sorting()[0][:2], c.sorting()[1][:1]),
            "error",
        ),
        p("score y None", lambda m, c: m.score(c.sorting()[0][:2], None), "error"),
        p("unfitted predict", lambda m, c: _unfitted("pointer").predict([[1.0, 2.0]]), "error"),
    ]
    return cases


def _unfitted(estimator):
    from skptr import NeuralStackTransducer, PointerNetworkOrderer

    if estimator == "pointer":
        return PointerNetworkOrderer(**POINTER_BASE)
    return NeuralStackTransducer(**TRANSDUCER_BASE)


def _strings_with(transform_X=None, transform_y=None):
    def make(ctx):
        X, y = ctx.strings()
        X, y = list(X), list(y)
        return (X if transform_X is None else transform_X(X)), (
            y if transform_y is None else transform_y(y)
        )

    return make


def _transducer_input_cases():
    cases = []
    f = _transducer_fit_case
    fixed = lambda X, y: lambda ctx: (X, y)  # noqa: E731
    tokens = lambda X: [list(x) for x in X]  # noqa: E731
    cases += [
        f("X=[] y=[]", fixed([], []), "error", quick=True),
        f(
            "empty strings",
            _strings_with(lambda X: ["", *X[1:]], lambda y: ["", *y[1:]]),
            "either",
            quick=True,
        ),
        f("all empty", fixed(["", ""] * 8, ["", ""] * 8), "either"),
        f(
            "None tokens",
            _strings_with(lambda X: [[*x, None] for x in tokens(X)], lambda y: tokens(y)),
            "either",
        ),
        f("None sample", _strings_with(lambda X: [None, *X[1:]]), "error"),
        f("None target", _strings_with(None, lambda y: [None, *y[1:]]), "error"),
        f(
            "unhashable tokens",
            _strings_with(lambda X: [[[t] for t in x] for x in X]),
            "error",
            quick=True,
        ),
        f("dict tokens", _strings_with(lambda X: [[{"t": t} for t in x] for x in X]), "error"),
        f("mixed kinds in X", _strings_with(lambda X: [X[0], *tokens(X[1:])]), "either"),
        f("mixed kinds in y", _strings_with(None, lambda y: [tuple(y[0]), *y[1:]]), "either"),
        f(
            "mixed token types",
            _strings_with(lambda X: [[*x, 1] for x in tokens(X)], lambda y: tokens(y)),
            "either",
        ),
        f(
            "nan tokens",
            _strings_with(lambda X: [[*x, float("nan")] for x in tokens(X)], lambda y: tokens(y)),
            "either",
        ),
        f("True and 1 tokens", fixed([[True, 1, 0, False]] * 8, [[1, True]] * 8), "either"),
        f("X a str", _strings_with(lambda X: "".join(X)), "error"),
        f(
            "X 2-D int array",
            fixed(np.array([[0, 1, 1], [1, 0, 0]] * 8), np.array([[1, 1, 0], [0, 0, 1]] * 8)),
            "either",
        ),
        f(
            "X 3-D array",
            fixed(np.zeros((16, 3, 2), dtype=int), np.zeros((16, 3), dtype=int)),
            "error",
        ),
        f(
            "X float arrays",
            fixed([np.array([0.5, 1.5])] * 16, [np.array([1.5, 0.5])] * 16),
            "either",
        ),
        f("y None", _strings_with(None, lambda y: None), "error"),
        f("X 32 y 31", _strings_with(None, lambda y: y[:31]), "error", quick=True),
        f(
            "bytes tokens",
            _strings_with(lambda X: [x.encode() for x in X], lambda y: [x.encode() for x in y]),
            "either",
        ),
        f(
            "numpy str array",
            _strings_with(lambda X: np.array(X), lambda y: np.array(y)),
            "either",
        ),
        f("2**70 tokens", fixed([[2**70, 1]] * 16, [[1, 2**70]] * 16), "either"),
        f("X generator", _strings_with(lambda X: (x for x in X)), "either"),
        f("X dict", fixed({"a": "b"}, ["b"]), "error"),
        f("X None", fixed(None, ["a"]), "error"),
        f("y ints", _strings_with(None, lambda y: list(range(len(y)))), "error"),
        f("X nested sequences", _strings_with(lambda X: [[list(x)] for x in X]), "error"),
    ]
    p = _transducer_call_case
    cases += [
        p(
            "5000-token string",
            lambda m, c: check_transductions(m.predict(["ab" * 2500]), 1),
            "either",
            quick=True,
            timeout=120.0,
        ),
        p(
            "5000-token list",
            lambda m, c: check_transductions(m.predict([list("ab" * 2500)]), 1),
            "either",
            timeout=120.0,
        ),
        p("unknown tokens", lambda m, c: m.predict(["abc"]), "error", quick=True),
        p(
            "unknown tokens ignored",
            lambda m, c: check_transductions(m.predict(["abc", "zz"]), 2),
            "either",
            params={"handle_unknown": "ignore"},
        ),
        p("X=[]", lambda m, c: f"{len(m.predict([]))} outputs", "either"),
        p("['']", lambda m, c: check_transductions(m.predict([""]), 1), "either"),
        p("[None]", lambda m, c: m.predict([None]), "error"),
        p("int tokens", lambda m, c: m.predict([[0, 1]]), "error"),
        p("unhashable", lambda m, c: m.predict([[["a"]]]), "error"),
        p("X a str", lambda m, c: m.predict("ab"), "error"),
        p("3-D array", lambda m, c: m.predict(np.zeros((2, 2, 2))), "error"),
        p("score y None", lambda m, c: m.score(["ab"], None), "error"),
        p("score 2 for 1", lambda m, c: m.score(["ab"], ["ba", "ab"]), "error"),
        p("unfitted predict", lambda m, c: _unfitted("transducer").predict(["ab"]), "error"),
    ]
    return cases


def input_data_cases():
    """Malformed training and prediction data for both estimators."""
    return _pointer_input_cases() + _transducer_input_cases()


# ---------------------------------------------------------------------- memory_trace
def memory_trace_cases():
    """``memory_trace(X, max_steps=...)`` with hostile arguments."""
    cases = []

    def add(name, call, expect, quick=False, params=None):
        def body(ctx, prepared):
            return call(prepared)

        cases.append(
            Case(
                "memory_trace",
                name,
                body,
                expect,
                quick=quick,
                setup=lambda ctx: ctx.transducer(**(params or {})),
            )
        )

    def trace(max_steps, X=("ab", "b")):
        def call(model):
            result = model.memory_trace(list(X), max_steps=max_steps)
            if len(result) != len(X) or not all(isinstance(r, dict) for r in result):
                raise Silent(f"memory_trace returned {type(result).__name__} of {len(result)}")
            return f"{len(result)} traces"

        return call

    for label, value, expect in [
        ("nan", _NAN, "error"),
        ("None", None, "error"),
        ("'big'", "big", "error"),
        ("-1", -1, "error"),
        ("0", 0, "error"),
        ("2", 2, "error"),
        ("2**70", 2**70, "either"),
        ("10**400", 10**400, "either"),
        ("True", True, "error"),
        ("1.5", 1.5, "error"),
        ("inf", _INF, "error"),
        ("'1024'", "1024", "error"),
        ("np.int64(64)", np.int64(64), "either"),
        ("np.float64(64.0)", np.float64(64.0), "error"),
        ("1024", 1024, "either"),
    ]:
        add(f"max_steps={label}", trace(value), expect, quick=label in {"nan", "2**70"})
    add("5000 tokens, default max_steps", lambda m: m.memory_trace(["ab" * 2500]), "error")
    add("unknown tokens", lambda m: m.memory_trace(["abc"]), "error")
    add("X=[]", lambda m: f"{len(m.memory_trace([]))} traces", "either")
    add("queue", trace(64), "either", params={"memory": "queue"})
    add("deque", trace(64), "either", params={"memory": "deque"})
    add("memory=None", trace(64), "error", params={"memory": None})
    add(
        "unfitted",
        lambda m: _unfitted("transducer").memory_trace(["ab"]),
        "error",
    )
    return cases


# ------------------------------------------------------------------------- tokenizer
def tokenizer_cases():
    """``skptr.preprocessing.TextTokenizer`` with hostile ``split`` values and texts."""
    cases = []
    texts = ["the cat sat", "a dog"]

    def add(name, params, X, expect, quick=False):
        def body(ctx, prepared):
            from skptr.preprocessing import TextTokenizer

            out = TextTokenizer(**params).fit_transform(X)
            if len(out) != len(list(X)) or not all(isinstance(t, tuple) for t in out):
                raise Silent(f"returned {out!r}")
            return f"tokens {_short(out.tolist(), 60)}"

        cases.append(Case("tokenizer", name, body, expect, quick=quick))

    for label, split, expect in [
        ("'chars' (near-miss of 'char')", "chars", "error"),
        ("'(['", "([", "error"),
        ("''", "", "error"),
        ("None", None, "error"),
        ("3", 3, "error"),
        ("'\\\\'", "\\", "error"),
        ("b' '", b" ", "error"),
        ("['a']", ["a"], "error"),
        ("'char'", "char", "either"),
        ("'whitespace'", "whitespace", "either"),
        ("'\\\\s+'", r"\s+", "either"),
        ("'(a)'", "(a)", "either"),
        ("'a|'", "a|", "either"),
        ("'(?=a)'", "(?=a)", "either"),
    ]:
        add(f"split={label}", {"split": split}, texts, expect, quick=split in ("chars", "(["))
    add("lowercase='yes'", {"lowercase": "yes"}, texts, "error")
    for label, X, expect in [
        ("a str", "the cat", "error"),
        ("[None]", [None], "error"),
        ("[b'a b']", [b"a b"], "error"),
        ("[1]", [1], "error"),
        ("[]", [], "either"),
        ("numpy str array", np.array(texts), "either"),
        ("generator", (t for t in texts), "either"),
        ("None", None, "error"),
    ]:
        if label == "generator":
            X = _GeneratorFactory(texts)
        add(f"X={label}", {}, X, expect)
    return cases


class _GeneratorFactory:
    """An iterable whose every ``iter`` is a new generator, and which has no ``len``."""

    def __init__(self, items):
        self._items = list(items)

    def __iter__(self):
        return (item for item in self._items)


# ----------------------------------------------------------------------- persistence
_SET_PARAMS_CHANGES = {
    "pointer": [
        {"hidden_size": 16},
        {"cell": "gru"},
        {"attention": "dot"},
        {"num_layers": 2},
        {"bidirectional": False},
        {"n_glimpses": 1},
        {"cycle": "directed"},
    ],
    "stack": [
        {"hidden_size": 16},
        {"cell": "gru"},
        {"memory": "queue"},
        {"memory": None},
        {"embedding_dim": 8},
        {"memory_width": 8},
    ],
}


def _round_trip(model, via, ctx):
    """``model`` dumped and loaded back through ``via`` (joblib, pickle or save)."""
    import pickle

    import joblib

    import skptr

    path = ctx.path(".skptr" if via == "save" else ".joblib")
    if via == "joblib":
        joblib.dump(model, path)
        return joblib.load(path)
    if via == "pickle":
        return pickle.loads(pickle.dumps(model))
    model.save(path)
    return skptr.load(path)


def _round_trip_case(kind, via, change=None, quick=False):
    """Fit, change parameters, save and load: the loaded model must predict as before."""
    label = ", ".join(f"{k}={v!r}" for k, v in (change or {}).items())
    name = f"{kind} set_params({label}) {via}" if change else f"{kind} {via}"

    def setup(ctx):
        model, probe = fixture_model(ctx, kind, fresh=True)
        return {"model": model, "probe": probe, "before": fingerprint(model, probe)}

    def body(ctx, prepared):
        model, probe = prepared["model"], prepared["probe"]
        if change:
            model.set_params(**change)
        try:
            loaded = _round_trip(model, via, ctx)
            after = fingerprint(loaded, probe, like=prepared["before"])
        except Exception as exc:
            raise Loss(f"{type(exc).__name__}: {exc}") from exc
        difference = fingerprint_difference(prepared["before"], after)
        if difference:
            raise Loss(f"the loaded model computes differently from the fitted one: {difference}")
        return "computes as before"

    return Case("persistence", name, body, "either", setup=setup, quick=quick)


def _predict_after_set_params_case(kind, change):
    """After ``set_params``, the fitted network still predicts as it did (or refuses)."""
    label = ", ".join(f"{k}={v!r}" for k, v in change.items())

    def setup(ctx):
        model, probe = fixture_model(ctx, kind, fresh=True)
        return {"model": model, "probe": probe, "before": fingerprint(model, probe)}

    def body(ctx, prepared):
        model = prepared["model"]
        model.set_params(**change)
        difference = fingerprint_difference(
            prepared["before"], fingerprint(model, prepared["probe"], like=prepared["before"])
        )
        if difference:
            raise Silent(f"set_params without a refit changed the outputs: {difference}")
        return "computes as before"

    return Case("persistence", f"{kind} set_params({label}) predict", body, "either", setup=setup)


def _atomic_save_case(kind, failure, quick=False):
    """A save over an existing file fails: the previous file must be unchanged."""

    def setup(ctx):
        old, probe = fixture_model(ctx, kind)
        new, _ = fixture_model(ctx, kind, fresh=True, random_state=1)
        directory = ctx.directory()
        path = os.path.join(directory, "model.skptr")
        old.save(path)
        return {
            "new": new,
            "probe": probe,
            "path": path,
            "directory": directory,
            "old_bytes": Path(path).read_bytes(),
        }

    def body(ctx, prepared):
        import keras

        path, directory, new = prepared["path"], prepared["directory"], prepared["new"]
        old_bytes = prepared["old_bytes"]
        if failure == "zip member write raises":
            guard = _network_member_write_fails()
        elif failure == "disk full half way":
            guard = writes_fail_in(directory, _disk_full)
        elif failure == "Ctrl-C half way":
            guard = writes_fail_in(directory, _interrupted)
        elif failure == "network save raises":

            def broken(self, *args, **kwargs):
                raise OSError(errno.EIO, "simulated failure saving the network")

            guard = contextlib.ExitStack()
            guard.enter_context(patched(keras.Model, "save", broken))
            guard.enter_context(patched(keras.Model, "save_weights", broken))
        elif failure == "file size limit":
            guard = file_size_limit(len(old_bytes) // 2)
        else:  # read-only directory
            os.chmod(directory, 0o555)
            guard = contextlib.ExitStack()
            guard.callback(os.chmod, directory, 0o755)
        error = None
        try:
            with guard:
                new.save(path)
        except (Exception, KeyboardInterrupt) as exc:
            error = exc
        leftovers = sorted(set(os.listdir(directory)) - {"model.skptr"})
        extra = f"; left {leftovers[:3]} in the directory" if leftovers else ""
        now = Path(path).read_bytes() if os.path.exists(path) else None
        if error is not None:
            if now != old_bytes:
                state = "removed" if now is None else f"{len(now)} bytes, was {len(old_bytes)}"
                raise Loss(
                    f"the save failed ({type(error).__name__}: {error}) and the previous file "
                    f"changed ({state}){extra}"
                )
            return f"failed with {type(error).__name__}, previous file unchanged{extra}"
        import skptr

        loaded = skptr.load(path)
        reference = fingerprint(new, prepared["probe"])
        difference = fingerprint_difference(
            reference, fingerprint(loaded, prepared["probe"], like=reference)
        )
        if difference:
            raise Loss(f"the save went through but the file computes differently: {difference}")
        if failure == "read-only directory" and os.geteuid() == 0:
            extra += " (running as root, the directory's permissions do not apply)"
        return f"the simulated failure did not stop the save; the new file loads{extra}"

    return Case(
        "persistence", f"{kind} atomic save: {failure}", body, "either", setup=setup, quick=quick
    )


def _warm_pointer(ctx):
    """Fit the shared pointer network before a case's limits start."""
    ctx.pointer()


def _warm_saved_pointer(ctx):
    """Save the shared pointer network before a case's limits start."""
    ctx.saved("pointer")


def _save_misc_cases():
    cases = []

    def add(name, call, expect, allowed=()):
        def body(ctx, prepared):
            return call(ctx)

        cases.append(
            Case(
                "persistence",
                name,
                body,
                expect,
                setup=_warm_pointer,
                allowed=allowed,
            )
        )

    def unfitted_round_trip(ctx):
        import skptr

        path = ctx.path()
        _unfitted("pointer").save(path)
        loaded = skptr.load(path)
        try:
            loaded.predict([[1.0, 2.0]])
        except Exception as exc:
            if type(exc).__name__ != "NotFittedError":
                raise
            return "unfitted round trip; predict raises NotFittedError"
        raise Silent("an unfitted model loaded from a file predicts")

    add(
        "save to a directory",
        lambda ctx: ctx.pointer().save(ctx.directory()),
        "error",
        allowed=(IsADirectoryError, PermissionError),
    )
    add(
        "save into a missing directory",
        lambda ctx: ctx.pointer().save(os.path.join(ctx.path(""), "x", "m.skptr")),
        "error",
    )
    add("save path None", lambda ctx: ctx.pointer().save(None), "error")
    add("save path 3.5", lambda ctx: ctx.pointer().save(3.5), "error")
    add(
        "save with callbacks",
        lambda ctx: (
            fixture_model(ctx, "pointer", fresh=True)[0]
            .set_params(callbacks=[stop_after_first_epoch()])
            .save(ctx.path())
        ),
        "error",
    )
    add(
        "save with a RandomState",
        lambda ctx: (
            fixture_model(ctx, "pointer", fresh=True)[0]
            .set_params(random_state=np.random.RandomState(0))
            .save(ctx.path())
        ),
        "error",
    )
    add("unfitted save and load", unfitted_round_trip, "either")
    return cases


def persistence_cases():
    """Round trips after ``set_params``, and saves that fail half way."""
    cases = []
    for kind in ("pointer", "pointer-cycle", "stack", "queue", "deque", "memoryless"):
        for via in ("joblib", "save"):
            cases.append(_round_trip_case(kind, via, quick=(kind, via) == ("stack", "save")))
    cases.append(_round_trip_case("pointer", "pickle"))
    for kind, changes in _SET_PARAMS_CHANGES.items():
        for change in changes:
            for via in ("joblib", "save"):
                quick = via == "save" and change in ({"hidden_size": 16}, {"memory": "queue"})
                cases.append(_round_trip_case(kind, via, change, quick=quick))
            cases.append(_predict_after_set_params_case(kind, change))
    for kind in ("pointer", "stack"):
        for failure in (
            "zip member write raises",
            "disk full half way",
            "Ctrl-C half way",
            "network save raises",
            "file size limit",
            "read-only directory",
        ):
            quick = kind == "pointer" and failure == "disk full half way"
            cases.append(_atomic_save_case(kind, failure, quick=quick))
    return cases + _save_misc_cases()


# --------------------------------------------------------------------- damaged files
def _damaged_case(
    kind, name, damage, quick=False, timeout=15.0, memory_mb=768, expect="either", compare=True
):
    """Load a damaged copy of a saved ``kind`` model.

    ``damage(fixture, path, ctx)`` writes the damaged file at ``path`` (``fixture`` is
    :meth:`Context.saved`). The load must fail with a clear ``ValueError`` naming the
    file, quickly and in little memory, or load a model that predicts exactly as the
    original.
    """

    def setup(ctx):
        fixture = ctx.saved(kind)
        path = ctx.path()
        damage(fixture, path, ctx)
        return {"fixture": fixture, "path": path, "mention": path}

    def body(ctx, prepared):
        import skptr

        fixture = prepared["fixture"]
        model = skptr.load(prepared["path"])
        try:
            outputs = fingerprint(model, fixture["probe"], like=fixture["fingerprint"])
        except Exception as exc:
            skptr_dir = os.path.dirname(os.path.abspath(skptr.__file__)) + os.sep
            if classify_exception(exc, skptr_dir)[0] != "ok":
                raise
            raise Silent(
                f"the damaged file loaded, then predict raised {type(exc).__name__}: {exc}"
            ) from exc
        if not compare:
            return "loaded"
        difference = fingerprint_difference(fixture["fingerprint"], outputs)
        if difference:
            raise Silent(f"the damaged file loaded and computes differently: {difference}")
        return "loaded; computes as the original"

    return Case(
        "damaged_files",
        f"{kind}/{name}",
        body,
        expect,
        setup=setup,
        timeout=timeout,
        memory_mb=memory_mb,
        quick=quick,
    )


def _writes(transform):
    """A ``damage`` function writing ``transform(bytes, fixture, ctx)``."""

    def damage(fixture, path, ctx):
        Path(path).write_bytes(transform(fixture["bytes"], fixture, ctx))

    return damage


def _metadata_edit(edit):
    return _writes(lambda data, fixture, ctx: with_metadata(data, edit))


def _metadata_text(text):
    return _writes(lambda data, fixture, ctx: with_member(data, "skptr.json", text.encode()))


def _set_in(section, key, value):
    def edit(metadata):
        if section is None:
            metadata[key] = value
        else:
            metadata[section][key] = value

    return edit


def _deep(depth, leaf=1):
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


_WRONG_JSON = [
    ("null", None),
    ("1", 1),
    ("'x'", "x"),
    ("[]", []),
    ("{}", {}),
    ("true", True),
    ("1.5", 1.5),
]
_METADATA_KEYS = {
    "format": str,
    "format_version": int,
    "skptr_version": str,
    "keras_version": str,
    "estimator": str,
    "params": dict,
    "state": dict,
    "has_network": bool,
}
_POINTER_PARAM_DEFAULTS = {
    "hidden_size": 8,
    "cell": "lstm",
    "bidirectional": True,
    "num_layers": 1,
    "attention": "additive",
    "n_glimpses": 0,
    "dropout": 0.0,
    "decode": "greedy",
    "beam_width": 5,
    "cycle": None,
    "epochs": 1,
    "batch_size": 16,
    "learning_rate": 3e-3,
    "learning_rate_decay": 1.0,
    "clipnorm": 1.0,
    "validation_fraction": 0.0,
    "early_stopping": False,
    "n_iter_no_change": 5,
    "random_state": 0,
    "verbose": 0,
    "warm_start": False,
    "callbacks": None,
}
_TRANSDUCER_PARAM_DEFAULTS = {
    "memory": "stack",
    "cell": "lstm",
    "hidden_size": 8,
    "embedding_dim": 4,
    "memory_width": 4,
    "pop_bias": -1.0,
    "push_bias": "auto",
    "state_bptt_steps": "auto",
    "gate_noise": "auto",
    "gate_noise_start": "auto",
    "reset_cell_state": "auto",
    "snap_gates": False,
    "n_init": 1,
    "curriculum": True,
    "handle_unknown": "error",
    "max_output_length": None,
    "epochs": 1,
    "batch_size": 16,
    "learning_rate": 0.01,
    "clipnorm": 1.0,
    "validation_fraction": 0.0,
    "early_stopping": False,
    "n_iter_no_change": 5,
    "random_state": 0,
    "verbose": 0,
    "warm_start": False,
    "callbacks": None,
}
_STATE_KEYS = {
    "pointer": ["network_params_", "n_features_in_", "ordered_subsets_", "history_", "n_iter_"],
    "stack": [
        "network_params_",
        "input_vocabulary_",
        "output_vocabulary_",
        "_target_kind",
        "_target_dtype",
        "_max_target_ratio",
        "history_",
        "n_iter_",
        "init_scores_",
        "snap_gates_",
        "state_bptt_steps_",
        "gate_noise_start_",
    ],
}


#: Edits to another valid value that a ``.keras`` network does not record, so that a
#: file carrying them is a different model, not a detectably damaged one: such files
#: may load with different outputs.
_UNRECORDED = {"cycle", "snap_gates", "beam_width"}
_UNRECORDED_STATE = {
    ("state_bptt_steps_", "null"),
    ("_target_kind", "'array'"),
    ("gate_noise_start_", "1.0"),
    ("output_vocabulary_", "swapped"),
}


def _wrong_param_value(default):
    """A JSON value of the wrong type for a parameter whose default is ``default``."""
    if isinstance(default, bool):
        return "yes"
    if isinstance(default, int | float):
        return "x"
    if isinstance(default, str):
        return 123
    return {"__ndarray__": [1.0], "dtype": "<f8", "shape": [1]}


def _zip_structure_cases(kind, fields):
    cases = []

    def flip_field(field, where):
        def transform(data, fixture, ctx):
            offset, width = zip_field_offsets(data)[field]
            return flipped(data, offset + (width - 1 if where == "msb" else 0))

        return _writes(transform)

    for field in fields:
        for where in ("msb", "lsb"):
            cases.append(_damaged_case(kind, f"flip {field} {where}", flip_field(field, where)))

    def declare(field, value):
        def transform(data, fixture, ctx):
            offset, width = zip_field_offsets(data)[field]
            return set_field(data, offset, width, value)

        return _writes(transform)

    for field, value, label in [
        ("cd[skptr.json].usize", 2**30, "1 GiB"),
        ("cd[skptr.json].csize", 2**30, "1 GiB"),
        ("local[skptr.json].usize", 2**30, "1 GiB"),
        ("cd[network.keras].usize", 2**32 - 1, "4 GiB"),
        ("cd[skptr.json].method", 14, "LZMA"),
        ("cd[skptr.json].method", 99, "AES"),
        ("local[skptr.json].flags", 1, "encrypted"),
    ]:
        cases.append(
            _damaged_case(
                kind,
                f"{field} declares {label}",
                declare(field, value),
                quick=(kind, label) == ("pointer", "1 GiB") and field == "cd[skptr.json].usize",
            )
        )
    return cases


def _pointer_metadata_cases():
    kind = "pointer"
    cases = []
    edit = lambda *a: _metadata_edit(_set_in(*a))  # noqa: E731
    for key in _METADATA_KEYS:
        for label, value in _WRONG_JSON:
            if type(value) is _METADATA_KEYS[key]:
                continue
            cases.append(_damaged_case(kind, f"{key}={label}", edit(None, key, value)))
        cases.append(_damaged_case(kind, f"no {key}", _metadata_edit(lambda m, k=key: m.pop(k))))
    cases.append(_damaged_case(kind, "an extra entry", edit(None, "extra", 1)))
    for key, value, label in [
        ("skptr_version", "99.0.0", "'99.0.0'"),
        ("skptr_version", "", "''"),
        ("keras_version", "2.15.0", "'2.15.0'"),
        ("format_version", 99, "99"),
        ("format", "skptr", "'skptr'"),
        ("estimator", "Pipeline", "'Pipeline'"),
        ("estimator", "NeuralStackTransducer", "'NeuralStackTransducer'"),
        ("estimator", "__import__", "'__import__'"),
        ("has_network", False, "false"),
    ]:
        cases.append(_damaged_case(kind, f"{key}={label}", edit(None, key, value)))
    for param, default in _POINTER_PARAM_DEFAULTS.items():
        value = _wrong_param_value(default)
        cases.append(
            _damaged_case(kind, f"params.{param}={_short(value)}", edit("params", param, value))
        )
    for label, value, quick in [
        ("10**7", 10**7, True),
        ("2**70", 2**70, False),
        ("10**400", 10**400, False),
        ("16", 16, False),
        ("0", 0, False),
        ("-1", -1, False),
        ("1e308", 1e308, False),
        ("true", True, False),
        ("{'__float__': 'nan'}", {"__float__": "nan"}, False),
        ("{'__tuple__': [8]}", {"__tuple__": [8]}, False),
        ("a 0-d int array", {"__ndarray__": 8, "dtype": "<i8", "shape": []}, False),
    ]:
        cases.append(
            _damaged_case(
                kind,
                f"params.hidden_size={label}",
                edit("params", "hidden_size", value),
                quick=quick,
            )
        )
    for param, value, label in [
        ("num_layers", 2**70, "2**70"),
        ("num_layers", 10**4, "10**4"),
        ("n_glimpses", 2**70, "2**70"),
        ("n_glimpses", 10**4, "10**4"),
        ("beam_width", 10**9, "10**9"),
        ("cell", "gru", "'gru'"),
        ("attention", "dot", "'dot'"),
        ("bidirectional", False, "false"),
        ("cycle", "undirected", "'undirected'"),
        ("learning_rate", {"__float__": "inf"}, "inf"),
        ("callbacks", [], "[]"),
        (
            "random_state",
            {"__ndarray__": [1], "dtype": "<i8", "shape": [10**12]},
            "an array declaring 10**12 items",
        ),
        (
            "random_state",
            {"__ndarray__": [], "dtype": "<i8", "shape": [2**40, 2**40]},
            "an array declaring 2**80 items",
        ),
        (
            "random_state",
            {"__ndarray__": ["a"], "dtype": "<U1000000000", "shape": [1]},
            "a <U1000000000 array",
        ),
        ("random_state", {"__dict__": [[["k"], 1]]}, "a dict with a list key"),
        ("random_state", {"__float__": "1e999"}, "__float__ 1e999"),
        ("random_state", {"__float__": "x"}, "__float__ 'x'"),
        (
            "random_state",
            {"__object_array__": [1], "shape": [10**9]},
            "an object array declaring 10**9 items",
        ),
    ]:
        cases.append(
            _damaged_case(
                kind,
                f"params.{param}={label}",
                edit("params", param, value),
                compare=param not in _UNRECORDED,
            )
        )
    cases.append(_damaged_case(kind, "an unknown param", edit("params", "extra", 1)))
    cases.append(
        _damaged_case(kind, "params emptied", _metadata_edit(lambda m: m["params"].clear()))
    )
    for key in _STATE_KEYS[kind]:
        for label, value in (("'x'", "x"), ("null", None)):
            cases.append(_damaged_case(kind, f"state.{key}={label}", edit("state", key, value)))
    for key, value, label in [
        ("n_features_in_", 10**7, "10**7"),
        ("n_features_in_", 2**40, "2**40"),
        ("n_iter_", -1, "-1"),
        ("history_", {"__dict__": [["loss", [1e308] * 3]]}, "huge losses"),
        ("ordered_subsets_", 1, "1"),
    ]:
        cases.append(_damaged_case(kind, f"state.{key}={label}", edit("state", key, value)))
    cases.append(_damaged_case(kind, "an unknown fitted attribute", edit("state", "coef_", 1)))
    cases.append(
        _damaged_case(kind, "state emptied", _metadata_edit(lambda m: m["state"].clear()))
    )
    for name, value, label in [
        ("hidden_size", 10**7, "10**7"),
        ("hidden_size", 2**70, "2**70"),
        ("hidden_size", 16, "16"),
        ("hidden_size", "x", "'x'"),
        ("num_layers", 10**4, "10**4"),
        ("n_glimpses", 10**4, "10**4"),
        ("cell", "gru", "'gru'"),
        ("cycle", "undirected", "'undirected'"),
        ("extra", 1, "1 (an unknown name)"),
    ]:
        cases.append(
            _damaged_case(
                kind,
                f"state.network_params_.{name}={label}",
                _metadata_edit(_network_param_edit(name, value)),
                compare=name not in _UNRECORDED,
            )
        )
    return cases


def _network_param_edit(name, value, also_params=False):
    """An edit of one entry of the fitted attribute ``network_params_`` (added if absent).

    ``network_params_`` holds the hyperparameters the network was fitted with, as a JSON
    ``{"__dict__": [[name, value], ...]}``; with ``also_params`` the hyperparameter
    itself is changed too, so that the two agree.
    """

    def edit(metadata):
        if also_params:
            metadata["params"][name] = value
        entry = metadata["state"].get("network_params_")
        if not (isinstance(entry, dict) and isinstance(entry.get("__dict__"), list)):
            metadata["state"]["network_params_"] = {"__dict__": [[name, value]]}
            return
        for pair in entry["__dict__"]:
            if pair[0] == name:
                pair[1] = value
                return
        entry["__dict__"].append([name, value])

    return edit


def _transducer_metadata_cases():
    kind = "stack"
    cases = []
    edit = lambda *a: _metadata_edit(_set_in(*a))  # noqa: E731
    for param, default in _TRANSDUCER_PARAM_DEFAULTS.items():
        value = _wrong_param_value(default)
        cases.append(
            _damaged_case(kind, f"params.{param}={_short(value)}", edit("params", param, value))
        )
    for param, value, label, quick in [
        ("memory", "queue", "'queue'", False),
        ("memory", "deque", "'deque'", False),
        ("memory", None, "null", False),
        ("cell", "gru", "'gru'", False),
        ("hidden_size", 10**7, "10**7", False),
        ("memory_width", 10**7, "10**7", False),
        ("embedding_dim", 10**7, "10**7", False),
        ("n_init", 2**70, "2**70", False),
        ("max_output_length", 2**70, "2**70", False),
        ("state_bptt_steps", 2**70, "2**70", False),
        ("snap_gates", True, "true", False),
        ("push_bias", 1e308, "1e308", False),
    ]:
        cases.append(
            _damaged_case(
                kind,
                f"params.{param}={label}",
                edit("params", param, value),
                quick=quick,
                compare=param not in _UNRECORDED,
            )
        )
    for name, value, label, also_params in [
        ("memory", "queue", "'queue'", False),
        ("memory", "queue", "'queue'", True),
        ("memory", "deque", "'deque'", True),
        ("memory", None, "null", True),
        ("hidden_size", 10**7, "10**7", False),
        ("memory_width", 10**7, "10**7", False),
        ("embedding_dim", 10**7, "10**7", False),
        ("cell", "gru", "'gru'", False),
        ("pop_bias", "x", "'x'", False),
    ]:
        where = "params and state.network_params_" if also_params else "state.network_params_"
        cases.append(
            _damaged_case(
                kind,
                f"{where}.{name}={label}",
                _metadata_edit(_network_param_edit(name, value, also_params)),
                quick=(name, also_params) == ("memory", True) and value == "queue",
            )
        )
    for key in _STATE_KEYS[kind]:
        for label, value in (("'x'", "x"), ("null", None)):
            cases.append(
                _damaged_case(
                    kind,
                    f"state.{key}={label}",
                    edit("state", key, value),
                    compare=(key, label) not in _UNRECORDED_STATE,
                )
            )
    for key, value, label in [
        ("_max_target_ratio", 1e308, "1e308"),
        ("_max_target_ratio", 10**400, "10**400"),
        ("_target_kind", "array", "'array'"),
        ("_target_dtype", "<U1000000000", "'<U1000000000'"),
        ("_target_dtype", "|O", "'|O'"),
        ("state_bptt_steps_", 2**70, "2**70"),
        ("gate_noise_start_", 1.0, "1.0"),
        (
            "init_scores_",
            {"__ndarray__": [0.5], "dtype": "<f8", "shape": [10**9]},
            "an array declaring 10**9 scores",
        ),
        ("input_vocabulary_", {"__object_array__": ["a", "b", "c"], "shape": [3]}, "3 tokens"),
        ("input_vocabulary_", {"__object_array__": ["a"], "shape": [1]}, "1 token"),
        (
            "input_vocabulary_",
            {"__object_array__": [["a"], "b"], "shape": [2]},
            "an unhashable token",
        ),
        ("output_vocabulary_", {"__object_array__": ["b", "a"], "shape": [2]}, "swapped"),
        ("input_vocabulary_", {"__object_array__": ["a", "a"], "shape": [2]}, "duplicated"),
    ]:
        cases.append(
            _damaged_case(
                kind,
                f"state.{key}={label}",
                edit("state", key, value),
                compare=(key, label) not in _UNRECORDED_STATE,
            )
        )
    return cases


def _network_member_cases():
    cases = []

    def inner(transform):
        """Damage the ``network.keras`` member: ``transform(members) -> members``."""

        def outer(data, fixture, ctx):
            members = zip_members(zip_members(data)["network.keras"])
            return with_member(data, "network.keras", zip_build(transform(members)))

        return _writes(outer)

    def h5_with(edit_file):
        def transform(members):
            import h5py

            buffer = io.BytesIO(members["model.weights.h5"])
            with h5py.File(buffer, "r+") as handle:
                edit_file(handle)
            members["model.weights.h5"] = buffer.getvalue()
            return members

        return transform

    def first_dataset(handle):
        names = []
        handle.visititems(
            lambda name, item: names.append(name) if hasattr(item, "shape") else None
        )
        return next(n for n in names if not n.startswith("optimizer"))

    def set_first(value):
        def edit(handle):
            dataset = handle[first_dataset(handle)]
            dataset[...] = value

        return edit

    def add_dataset(handle):
        handle.create_dataset("layers/extra/vars/0", data=np.zeros(3))

    def huge_dataset(handle):
        name = first_dataset(handle)
        del handle[name]
        handle.create_dataset(name, shape=(2**40,), dtype="f4", chunks=(1024,))

    def float64_dataset(handle):
        name = first_dataset(handle)
        data = handle[name][...].astype("f8")
        del handle[name]
        handle.create_dataset(name, data=data)

    def string_dataset(handle):
        name = first_dataset(handle)
        shape = handle[name].shape
        del handle[name]
        handle.create_dataset(name, data=np.full(shape, b"x", dtype="S1"))

    def config(edit):
        def transform(members):
            value = json.loads(members["config.json"])
            value = edit(value)
            members["config.json"] = json.dumps(value).encode()
            return members

        return transform

    def renamed(value):
        value["registered_name"] = "skptr>TransducerNetwork"
        return value

    def renamed_keras(value):
        value.pop("registered_name", None)
        value["class_name"] = "Sequential"
        return value

    for kind in ("pointer", "stack"):
        for name, transform in [
            ("NaN weights", h5_with(set_first(np.nan))),
            ("1e38 weights", h5_with(set_first(1e38))),
            ("an extra weight", h5_with(add_dataset)),
            ("a weight declaring 2**40 floats", h5_with(huge_dataset)),
            ("float64 weights", h5_with(float64_dataset)),
            ("string weights", h5_with(string_dataset)),
            ("garbage weights file", lambda m: {**m, "model.weights.h5": b"\x89HDF" * 1000}),
            (
                "truncated weights file",
                lambda m: {**m, "model.weights.h5": m["model.weights.h5"][:2000]},
            ),
            ("no weights file", lambda m: {k: v for k, v in m.items() if k != "model.weights.h5"}),
            ("no config", lambda m: {k: v for k, v in m.items() if k != "config.json"}),
            ("config a list", config(lambda v: [v])),
            (
                "config nested 100000 deep",
                lambda m: {**m, "config.json": b"[" * 100000 + b"]" * 100000},
            ),
            ("config names another network", config(renamed)),
            ("config names a Keras Sequential", config(renamed_keras)),
        ]:
            cases.append(
                _damaged_case(
                    kind,
                    f"network.keras: {name}",
                    inner(transform),
                    quick=(kind, name) == ("pointer", "NaN weights"),
                    compare=name != "1e38 weights",
                )
            )
        cases.append(
            _damaged_case(
                kind,
                "network.keras not a zip",
                _writes(lambda d, f, c: with_member(d, "network.keras", b"not a zip" * 100)),
            )
        )
        cases.append(
            _damaged_case(
                kind,
                "no network.keras",
                _writes(lambda d, f, c: without_member(d, "network.keras")),
            )
        )
    return cases


def _swap_cases():
    def swapped(source):
        def transform(data, fixture, ctx):
            network = ctx.saved(source)["members"]["network.keras"]
            return with_member(data, "network.keras", network)

        return _writes(transform)

    return [
        _damaged_case("stack", "network.keras of a queue model", swapped("queue"), quick=True),
        _damaged_case("queue", "network.keras of a stack model", swapped("stack")),
        _damaged_case("stack", "network.keras of a deque model", swapped("deque")),
        _damaged_case("stack", "network.keras of a pointer model", swapped("pointer")),
        _damaged_case("pointer", "network.keras of a stack model", swapped("stack")),
        _damaged_case(
            "pointer",
            "network.keras of a cycle pointer model",
            swapped("pointer-cycle"),
            compare=False,
        ),
    ]


def _bomb_cases():
    cases = []

    def outer_bomb(member, filler, suffix=b""):
        def damage(fixture, path, ctx):
            write_bomb(path, fixture["bytes"], member, 2**30, filler, suffix)

        return damage

    def json_bomb(fixture, path, ctx):
        write_bomb(
            path, fixture["bytes"], "skptr.json", 2**30, b" ", fixture["members"]["skptr.json"]
        )

    def inner_bomb(member):
        def damage(fixture, path, ctx):
            members = zip_members(fixture["members"]["network.keras"])
            others = [(k, v) for k, v in members.items() if k != member]
            bomb = bomb_bytes(member, 2**30, others)
            Path(path).write_bytes(with_member(fixture["bytes"], "network.keras", bomb))

        return damage

    for kind in ("pointer", "stack"):
        for name, damage in [
            ("network.keras 1 GiB of zeros", outer_bomb("network.keras", b"\0")),
            ("skptr.json 1 GiB of zeros", outer_bomb("skptr.json", b"\0")),
            ("skptr.json 1 GiB of spaces then the metadata", json_bomb),
            ("network.keras: model.weights.h5 1 GiB of zeros", inner_bomb("model.weights.h5")),
            ("network.keras: config.json 1 GiB of zeros", inner_bomb("config.json")),
        ]:
            cases.append(
                _damaged_case(
                    kind,
                    name,
                    damage,
                    timeout=30.0,
                    quick=(kind, name)
                    == ("pointer", "skptr.json 1 GiB of spaces then the metadata"),
                )
            )
    return cases


def _file_cases():
    cases = []

    def add(name, damage, expect="error", quick=False):
        cases.append(_damaged_case("pointer", name, damage, expect=expect, quick=quick))

    add("empty file", _writes(lambda d, f, c: b""))
    add("a text file", _writes(lambda d, f, c: b"hello\n" * 100))
    add("an empty zip", _writes(lambda d, f, c: zip_build({})))
    add("only skptr.json", _writes(lambda d, f, c: without_member(d, "network.keras")))
    add(
        "skptr.json not utf-8",
        _writes(lambda d, f, c: with_member(d, "skptr.json", b"\xff\xfe" * 100)),
    )
    add("skptr.json nested 200000 deep", _metadata_text("[" * 200000 + "]" * 200000), quick=True)
    add(
        "params.hidden_size nested 900 deep",
        _metadata_edit(_set_in("params", "hidden_size", _deep(900))),
    )
    add(
        "params.hidden_size nested 5000 deep",
        _metadata_text_from(
            lambda text: text.replace(
                '"hidden_size": 8', '"hidden_size": ' + "[" * 5000 + "8" + "]" * 5000
            )
        ),
    )
    add(
        "params.random_state nested __tuple__ 5000 deep",
        _metadata_text_from(
            lambda text: text.replace(
                '"random_state": 0',
                '"random_state": ' + '{"__tuple__": [' * 5000 + "0" + "]}" * 5000,
            )
        ),
    )
    add(
        "a 5000-digit hidden_size",
        _metadata_text_from(
            lambda text: text.replace('"hidden_size": 8', '"hidden_size": ' + "9" * 5000)
        ),
    )
    add(
        "NaN literal learning_rate",
        _metadata_text_from(
            lambda text: text.replace('"learning_rate": 0.003', '"learning_rate": NaN')
        ),
    )
    add(
        "Infinity literal clipnorm",
        _metadata_text_from(lambda text: text.replace('"clipnorm": 1.0', '"clipnorm": Infinity')),
    )
    add(
        "duplicate keys in params",
        _metadata_text_from(
            lambda text: text.replace('"hidden_size": 8', '"hidden_size": 8, "hidden_size": 16')
        ),
        expect="either",
    )
    add(
        "two skptr.json members",
        _writes(lambda d, f, c: zip_build([("skptr.json", b"{}"), *zip_members(d).items()])),
        expect="either",
    )
    add(
        "100000 extra members",
        _writes(
            lambda d, f, c: zip_build(
                [*zip_members(d).items(), *((f"m{i}", b"") for i in range(100000))]
            )
        ),
        expect="either",
    )
    add(
        "stored without compression",
        _writes(lambda d, f, c: zip_build(zip_members(d), compression=zipfile.ZIP_STORED)),
        expect="either",
    )
    add(
        "a member named ../escape",
        _writes(lambda d, f, c: zip_build([*zip_members(d).items(), ("../escape", b"x")])),
        expect="either",
    )

    def load_call(name, call, expect="error", allowed=()):
        def body(ctx, prepared):
            import skptr

            return f"loaded a {type(call(ctx, skptr)).__name__}"

        cases.append(
            Case(
                "damaged_files",
                f"pointer/{name}",
                body,
                expect,
                setup=_warm_saved_pointer,
                timeout=15.0,
                memory_mb=768,
                allowed=allowed,
            )
        )

    load_call("a missing file", lambda ctx, skptr: skptr.load(ctx.path()))
    load_call(
        "a directory",
        lambda ctx, skptr: skptr.load(ctx.directory()),
        allowed=(IsADirectoryError, PermissionError),
    )
    load_call("path None", lambda ctx, skptr: skptr.load(None))
    load_call("path 3.5", lambda ctx, skptr: skptr.load(3.5))
    load_call("a pathlib.Path", lambda ctx, skptr: skptr.load(Path(_saved_path(ctx))), "either")
    load_call(
        "a bytes path", lambda ctx, skptr: skptr.load(os.fsencode(_saved_path(ctx))), "either"
    )
    load_call(
        "a file object",
        lambda ctx, skptr: skptr.load(io.BytesIO(ctx.saved("pointer")["bytes"])),
        "either",
    )
    load_call("/dev/zero", lambda ctx, skptr: skptr.load("/dev/zero"))
    return cases


def _saved_path(ctx):
    path = ctx.path()
    Path(path).write_bytes(ctx.saved("pointer")["bytes"])
    return path


def _metadata_text_from(edit):
    def transform(data, fixture, ctx):
        text = zip_members(data)["skptr.json"].decode()
        text = json.dumps(json.loads(text))
        changed = edit(text)
        if changed == text:
            raise RuntimeError("the metadata edit did not apply")
        return with_member(data, "skptr.json", changed.encode())

    return _writes(transform)


def damaged_file_cases():
    """Truncated, bit-flipped, forged and oversized ``.skptr`` files."""
    cases = []
    for kind, n_flips in (("pointer", 48), ("stack", 24)):
        for label, fraction in [
            ("0", 0.0),
            ("1 byte", None),
            ("4 bytes", None),
            ("30 bytes", None),
            ("1/8", 1 / 8),
            ("1/4", 1 / 4),
            ("1/2", 1 / 2),
            ("3/4", 3 / 4),
            ("7/8", 7 / 8),
            ("all but 100", -100),
            ("all but 22", -22),
            ("all but 1", -1),
        ]:

            def cut(data, fixture, ctx, label=label, fraction=fraction):
                if fraction is None:
                    return data[: int(label.split()[0])]
                if fraction < 0:
                    return data[: len(data) + int(fraction)]
                return data[: int(len(data) * fraction)]

            cases.append(
                _damaged_case(
                    kind,
                    f"truncated to {label}",
                    _writes(cut),
                    quick=(kind, label) == ("pointer", "1/2"),
                )
            )
        for i in range(n_flips):

            def flip(data, fixture, ctx, i=i, n=n_flips):
                return flipped(data, int(i * (len(data) - 1) / (n - 1)), 0x10)

            cases.append(
                _damaged_case(
                    kind,
                    f"bit flip {i + 1}/{n_flips}",
                    _writes(flip),
                    quick=(kind, i) == ("pointer", 7),
                )
            )
        fields = [
            "eocd.entries",
            "eocd.cd_size",
            "eocd.cd_offset",
            "cd[skptr.json].offset",
            "cd[network.keras].offset",
            "cd[skptr.json].name_length",
            "local[network.keras].name_length",
            "cd[network.keras].crc",
        ]
        cases += _zip_structure_cases(kind, fields)
    cases += _pointer_metadata_cases()
    cases += _transducer_metadata_cases()
    cases += _network_member_cases()
    cases += _swap_cases()
    cases += _bomb_cases()
    cases += _file_cases()
    return cases


# ------------------------------------------------------------------------ all cases
FAMILIES = {
    "hyperparameters": hyperparameter_cases,
    "input_data": input_data_cases,
    "memory_trace": memory_trace_cases,
    "tokenizer": tokenizer_cases,
    "persistence": persistence_cases,
    "damaged_files": damaged_file_cases,
}


def build_cases():
    """Every case, in a fixed order, with unique ids.

    Returns
    -------
    list of Case
    """
    cases = []
    for family, make in FAMILIES.items():
        for case in make():
            if case.family != family:
                raise RuntimeError(f"{case.id} is listed under {family}")
            cases.append(case)
    ids = Counter(case.id for case in cases)
    duplicates = [case_id for case_id, count in ids.items() if count > 1]
    if duplicates:
        raise RuntimeError(f"duplicate case ids: {duplicates[:5]}")
    return cases


# ================================================================== child process
def _status_kb(field):
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _reset_peak_rss():
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")


def _run_body(case, ctx, prepared, skptr_dir):
    mention = prepared.get("mention") if isinstance(prepared, dict) else None
    try:
        result = case.body(ctx, prepared)
    except Silent as exc:
        return "silent", str(exc), None
    except Loss as exc:
        return "loss", str(exc), None
    except (Exception, KeyboardInterrupt) as exc:
        outcome, note = classify_exception(exc, skptr_dir, case.allowed, mention)
        message = f"{type(exc).__name__}: {exc}"
        if note:
            message = f"[{note}] {message}"
        return outcome, message, type(exc).__name__
    if case.expect == "error":
        return "silent", f"accepted: {result}" if result else "accepted", None
    return "ok", str(result or ""), None


def _child(fd, ids_file, workdir):
    """Run the cases listed in ``ids_file`` and report each on file descriptor ``fd``."""
    import warnings

    warnings.simplefilter("ignore")

    def emit(**event):
        os.write(fd, (json.dumps(event) + "\n").encode())

    import keras

    import skptr
    import skptr.memory
    import skptr.pointer

    keras.config.disable_traceback_filtering()
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        tf.debugging.disable_traceback_filtering()

    skptr_dir = os.path.dirname(os.path.abspath(skptr.__file__)) + os.sep
    mapped_kb = _status_kb("VmSize")
    limit = (mapped_kb // 1024 + ADDRESS_SPACE_HEADROOM_MB) * 2**20
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    emit(event="ready", vm_mb=mapped_kb // 1024, backend=keras.backend.backend())
    cases = {case.id: case for case in build_cases()}
    ctx = Context(workdir)
    baseline_kb = _status_kb("VmSize")
    for case_id in json.loads(Path(ids_file).read_text()):
        case = cases[case_id]
        emit(event="setup", id=case_id)
        try:
            prepared = case.setup(ctx) if case.setup is not None else None
        except (Exception, KeyboardInterrupt) as exc:
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            emit(
                event="end",
                id=case_id,
                outcome="raw",
                seconds=0.0,
                peak_rss_mb=None,
                error=type(exc).__name__,
                message=f"[the case's setup failed] {detail}",
            )
            continue
        start_kb = _status_kb("VmRSS")
        _reset_peak_rss()
        emit(event="start", id=case_id, rss_mb=start_kb // 1024)
        started = time.perf_counter()
        outcome, message, error = _run_body(case, ctx, prepared, skptr_dir)
        seconds = time.perf_counter() - started
        peak_kb = max(_status_kb("VmHWM"), start_kb)
        grown_mb = (peak_kb - start_kb) // 1024
        if outcome == "ok" and grown_mb > case.memory_mb:
            outcome = "oom"
            message = f"[used {grown_mb} MiB, over the case's {case.memory_mb} MiB] {message}"
        emit(
            event="end",
            id=case_id,
            outcome=outcome,
            seconds=round(seconds, 3),
            peak_rss_mb=peak_kb // 1024,
            grown_mb=grown_mb,
            error=error,
            message=message,
        )
        del prepared
        if grown_mb > 256:
            gc.collect()
        if (_status_kb("VmSize") - baseline_kb) // 1024 > RECYCLE_GROWTH_MB:
            emit(event="recycle")
            break


# ================================================================= parent process
def _rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return 0


def _kill(process):
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _log_tail(path, size=2000):
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - size))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _crash_outcome(returncode, log):
    lowered = log.lower()
    if any(word in lowered for word in ("bad_alloc", "cannot allocate memory", "out of memory")):
        return "oom"
    if returncode == -signal.SIGKILL:
        return "oom"
    return "raw"


def _record(case, outcome, message, seconds=None, peak=None, error=None):
    return {
        "family": case.family,
        "name": case.name,
        "outcome": outcome,
        "expected": case.expect,
        "seconds": seconds,
        "peak_rss_mb": peak,
        "error": error,
        "message": (message or "")[:200],
    }


def _run_child(ids, cases, backend, records, progress):
    """Run ``ids`` in one child; return the ids it did not get to."""
    workdir = tempfile.mkdtemp(prefix="skptr-fuzz-")
    ids_file = os.path.join(workdir, "cases.json")
    Path(ids_file).write_text(json.dumps(ids))
    log_path = os.path.join(workdir, "child.log")
    env = dict(
        os.environ,
        KERAS_BACKEND=backend,
        TF_CPP_MIN_LOG_LEVEL="2",
        TMPDIR=workdir,
        PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    )
    env.setdefault("MPLBACKEND", "Agg")
    read_fd, write_fd = os.pipe()
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.fuzz", "--child", str(write_fd), ids_file, workdir],
            cwd=ROOT,
            env=env,
            pass_fds=(write_fd,),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    os.close(write_fd)
    done = set()
    phase, current, since, start_rss, peak = "startup", None, time.monotonic(), 0, 0
    killed = None
    buffer = b""
    try:
        while True:
            readable, _, _ = select.select([read_fd], [], [], 0.1)
            if readable:
                chunk = os.read(read_fd, 65536)
                if not chunk:
                    break
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    event = json.loads(line)
                    kind = event["event"]
                    if kind in ("ready", "recycle"):
                        phase, current, since = "idle", None, time.monotonic()
                    elif kind == "setup":
                        phase, current, since = "setup", cases[event["id"]], time.monotonic()
                    elif kind == "start":
                        phase, since = "body", time.monotonic()
                        start_rss, peak = event["rss_mb"], event["rss_mb"]
                    elif kind == "end":
                        case = cases[event["id"]]
                        records.append(
                            _record(
                                case,
                                event["outcome"],
                                event["message"],
                                event["seconds"],
                                event["peak_rss_mb"],
                                event["error"],
                            )
                        )
                        progress(records[-1])
                        done.add(case.id)
                        phase, current = "idle", None
            rss = _rss_mb(process.pid)
            elapsed = time.monotonic() - since
            if phase == "body":
                peak = max(peak, rss)
                limit = current.timeout * TIMEOUT_SCALE[backend]
                if elapsed > limit:
                    killed = (
                        "hang",
                        f"killed after {elapsed:.0f} s (the case's limit is {limit:.0f} s)",
                    )
                elif rss - start_rss > current.memory_mb:
                    killed = (
                        "oom",
                        f"killed at {rss} MiB resident, {rss - start_rss} MiB "
                        f"over the case's start (its limit is {current.memory_mb} MiB)",
                    )
            elif phase == "startup" and elapsed > STARTUP_TIMEOUT:
                killed = ("raw", f"the child did not start within {STARTUP_TIMEOUT:.0f} s")
            elif phase == "setup" and elapsed > SETUP_TIMEOUT:
                killed = ("raw", f"the case's setup took more than {SETUP_TIMEOUT:.0f} s")
            if killed:
                _kill(process)
                break
    finally:
        os.close(read_fd)
        if process.poll() is None:
            process.wait()
        log = _log_tail(log_path)
        shutil.rmtree(workdir, ignore_errors=True)
    remaining = [case_id for case_id in ids if case_id not in done]
    if killed is None and process.returncode != 0 and phase in ("setup", "body"):
        outcome = _crash_outcome(process.returncode, log)
        last = log.strip().splitlines()[-1:] or [""]
        killed = (outcome, f"the child died (exit status {process.returncode}): {last[0]}")
    if killed is not None:
        victims = [current] if current is not None else [cases[i] for i in remaining]
        for case in victims:
            seconds = round(time.monotonic() - since, 1) if phase == "body" else None
            records.append(
                _record(case, killed[0], killed[1], seconds, peak if phase == "body" else None)
            )
            progress(records[-1])
            done.add(case.id)
        remaining = [case_id for case_id in remaining if case_id not in done]
    elif remaining and (phase == "startup" or not done):
        reason = "failed to start" if phase == "startup" else "exited without running a case"
        for case_id in remaining:
            records.append(_record(cases[case_id], "raw", f"the child {reason}: {log}"))
            progress(records[-1])
        remaining = []
    return remaining


def _summary(records, elapsed):
    families = list(dict.fromkeys(record["family"] for record in records))
    counts = {family: Counter() for family in families}
    for record in records:
        counts[record["family"]][record["outcome"]] += 1
    width = max([len("family"), *map(len, families)])
    lines = [f"{'family':<{width}} " + " ".join(f"{o:>6}" for o in OUTCOMES) + "  total"]
    total = Counter()
    for family in families:
        total.update(counts[family])
        lines.append(
            f"{family:<{width}} "
            + " ".join(f"{counts[family][o]:>6}" for o in OUTCOMES)
            + f"  {sum(counts[family].values()):>5}"
        )
    lines.append(
        f"{'all':<{width}} "
        + " ".join(f"{total[o]:>6}" for o in OUTCOMES)
        + f"  {sum(total.values()):>5}"
    )
    bad = [record for record in records if record["outcome"] != "ok"]
    if bad:
        lines.append("")
        lines.append(f"{len(bad)} cases not ok:")
        for record in bad:
            seconds = "" if record["seconds"] is None else f" {record['seconds']:.1f}s"
            lines.append(
                f"  {record['outcome']:<6} {record['family']}/{record['name']}"
                f"{seconds}: {record['message'][:160]}"
            )
    lines.append("")
    lines.append(f"{len(records)} cases in {elapsed:.0f} s")
    return "\n".join(lines), total


def _source_revision():
    """The git revision of the skptr under test (``+modified`` when ``skptr/`` has changes)."""
    try:
        revision = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.strip()
        changes = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--", "skptr"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    if not revision:
        return None
    return revision + ("+modified" if changes else "")


def _default_out(backend, quick):
    name = "fuzz.json" if backend == "tensorflow" else f"fuzz.{backend}.json"
    return (RESULTS_DIR / "quick" / name) if quick else (RESULTS_DIR / name)


def run(cases, backend, out, verbose=True):
    """Run ``cases`` in child processes and write the results to ``out``.

    Parameters
    ----------
    cases : list of Case
        The cases, in the order they run.
    backend : {"tensorflow", "jax"}
        The Keras backend of the children.
    out : path-like
        The JSON file written.
    verbose : bool, default=True
        Print one line per finished case.

    Returns
    -------
    dict
        The results written: the run's settings, the counts and one record per case.
    """
    by_id = {case.id: case for case in cases}
    records = []
    started = time.monotonic()

    def progress(record):
        if verbose:
            print(
                f"[{len(records):4d}/{len(cases)}] {record['outcome']:<6} "
                f"{record['family']}/{record['name']}",
                flush=True,
            )

    ids = [case.id for case in cases]
    while ids:
        ids = _run_child(ids, by_id, backend, records, progress)
    order = {case.id: index for index, case in enumerate(cases)}
    records.sort(key=lambda r: order[f"{r['family']}/{r['name']}"])
    elapsed = time.monotonic() - started
    text, total = _summary(records, elapsed)
    result = {
        "backend": backend,
        "skptr_source": _source_revision(),
        "n_cases": len(records),
        "seconds": round(elapsed, 1),
        "counts": {outcome: total[outcome] for outcome in OUTCOMES},
        "counts_by_family": {
            family: dict(Counter(r["outcome"] for r in records if r["family"] == family))
            for family in dict.fromkeys(r["family"] for r in records)
        },
        "cases": records,
    }
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(text)
    print(f"results written to {out}")
    return result


def main(argv=None):
    """The command line; see the module's documentation.

    Parameters
    ----------
    argv : list of str or None, default=None
        The arguments (``sys.argv[1:]`` when None).

    Returns
    -------
    int
        The exit status: 1 when any case is not ``ok``.
    """
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--child"]:
        _child(int(argv[1]), argv[2], argv[3])
        return 0
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.fuzz", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--backend", choices=("tensorflow", "jax"), default="tensorflow")
    parser.add_argument("--quick", action="store_true", help="about 40 cases")
    parser.add_argument("--out", help="the JSON results file")
    parser.add_argument(
        "--only", choices=list(FAMILIES), action="append", help="only this family (repeatable)"
    )
    parser.add_argument(
        "-k",
        dest="match",
        action="append",
        help="only cases whose family/name contains this text (repeatable)",
    )
    parser.add_argument("--list", action="store_true", help="print the cases and exit")
    parser.add_argument("-q", "--quiet", action="store_true", help="no line per case")
    args = parser.parse_args(argv)
    cases = build_cases()
    if args.quick:
        cases = [case for case in cases if case.quick]
    if args.only:
        cases = [case for case in cases if case.family in args.only]
    if args.match:
        cases = [case for case in cases if any(text in case.id for text in args.match)]
    if args.list:
        for case in cases:
            print(f"{case.id}  [{case.expect}, {case.timeout:.0f} s, {case.memory_mb} MiB]")
        print(f"{len(cases)} cases")
        return 0
    out = args.out or _default_out(args.backend, args.quick)
    result = run(cases, args.backend, out, verbose=not args.quiet)
    return 0 if result["counts"]["ok"] == result["n_cases"] else 1


if __name__ == "__main__":
    sys.exit(main())
