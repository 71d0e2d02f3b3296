"""Shared pieces of the property-based tests (``test_properties*.py``, ``test_isolated.py``).

The properties call skptr the way a careless or hostile user might and check one rule:
every call either works (and its result is checked) or fails with a *clear* error, an
exception of an expected type raised by skptr (or by scikit-learn's parameter
validation) whose message names the problem in the user's terms, not a backend's.

Hypothesis runs each property on a fixed, small number of examples (``derandomize``) so
that ``make test`` stays fast and reproducible; ``SKPTR_FUZZ_SCALE=N`` multiplies every
``max_examples`` by ``N`` and draws new examples on each run, for a longer search. On JAX,
which compiles every new network, properties run on half as many examples.
"""

from __future__ import annotations

import functools
import io
import json
import math
import os
import re
import zipfile
from pathlib import Path

import keras
import numpy as np
from hypothesis import HealthCheck, Phase, settings

import skptr

SCALE = int(os.environ.get("SKPTR_FUZZ_SCALE", "1"))
settings.register_profile(
    "skptr-properties",
    deadline=None,
    derandomize=SCALE == 1,
    database=None,
    print_blob=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
        HealthCheck.function_scoped_fixture,
    ],
)
_PROFILE = settings.get_profile("skptr-properties")


def examples(n, shrink=False):
    """Hypothesis settings for a property run on ``n`` examples (times ``SKPTR_FUZZ_SCALE``).

    Properties whose examples fit or load a network do not shrink a failure by default:
    the failing example is printed as found.
    """
    phases = list(Phase) if shrink or SCALE > 1 else [Phase.explicit, Phase.generate]
    if keras.backend.backend() == "jax" and n > 1:  # JAX compiles every new network
        n = max(1, n // 2)
    return settings(_PROFILE, max_examples=n * SCALE, phases=phases)


TINY_POINTER = {"hidden_size": 8, "epochs": 1, "batch_size": 16, "random_state": 0}
TINY_TRANSDUCER = {
    "hidden_size": 8,
    "embedding_dim": 4,
    "memory_width": 4,
    "n_init": 1,
    "snap_gates": False,
    "epochs": 1,
    "batch_size": 16,
    "random_state": 0,
}


# ------------------------------------------------------------------ clear errors
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
_SKPTR_DIR = os.path.dirname(os.path.abspath(skptr.__file__)) + os.sep
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


def unclear(exc, allowed=(), mention=None):
    """Why ``exc`` is not a clear error ("" when it is one).

    A clear error is a ``ValueError``, ``TypeError``, ``FileNotFoundError`` or
    ``NotFittedError`` raised inside skptr or scikit-learn's validation, with a
    non-empty message that does not name a backend and does not read like a NumPy or
    Python internal error (unless skptr wrapped such an error in its own), or a
    ``MemoryError`` skptr raised itself with a message; an ``OSError`` carrying a file
    name counts too when it is a ``FileNotFoundError`` or one of ``allowed``.
    ``mention``, when given, must appear in the message (a file's path).
    """
    from sklearn.exceptions import NotFittedError

    message = str(exc)
    filename = _innermost_file(exc)
    in_skptr = filename.startswith(_SKPTR_DIR)
    in_validation = any(filename.endswith(suffix) for suffix in _VALIDATION_FILES)
    if isinstance(exc, MemoryError):
        if in_skptr and len(message) >= 20 and not message.startswith("Unable to allocate"):
            return ""
        return f"MemoryError raised in {filename}"
    with_filename = isinstance(exc, OSError) and getattr(exc, "filename", None) is not None
    if with_filename and isinstance(exc, (FileNotFoundError, *allowed)):
        return ""
    if not isinstance(exc, (ValueError, TypeError, FileNotFoundError, NotFittedError)):
        return f"{type(exc).__name__} raised in {filename}"
    if not (in_skptr or in_validation):
        return f"raised in {filename}"
    lower = message.lower()
    for word in _BACKEND_WORDS:
        if word in lower:
            return f"the message mentions {word}"
    wrapped = in_skptr and exc.__context__ is not None
    if not wrapped and _INTERNAL_MESSAGES.search(message):
        return "an internal message"
    if not message.strip():
        return "an empty message"
    if mention is not None and mention not in message:
        return f"the message does not name {mention!r}"
    return ""


def assert_clear(exc, allowed=(), mention=None):
    """Fail unless ``exc`` is a clear error (see :func:`unclear`)."""
    why = unclear(exc, allowed, mention)
    assert not why, f"{why}: {type(exc).__name__}: {exc}"


def refused(call, allowed=(), mention=None):
    """Call ``call()``: it must raise a clear error, which is returned."""
    try:
        result = call()
    except Exception as exc:
        assert_clear(exc, allowed, mention)
        return exc
    raise AssertionError(f"accepted, returning {_short(result)}")


def either(call, check=None, allowed=(), mention=None):
    """Call ``call()``: a clear error, or a result that passes ``check(result)``.

    Returns the result, or None after a clear error.
    """
    try:
        result = call()
    except Exception as exc:
        assert_clear(exc, allowed, mention)
        return None
    if check is not None:
        check(result)
    return result


def _short(value, width=80):
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


# ---------------------------------------------------------------- result checks
def check_orderings(predictions, lengths):
    """Assert ``predictions`` are orderings of inputs of ``lengths``, padded with -1."""
    predictions = np.asarray(predictions)
    assert predictions.ndim == 2 and predictions.shape[0] == len(lengths), predictions.shape
    assert predictions.dtype.kind in "iu", predictions.dtype
    for i, (row, n) in enumerate(zip(predictions, lengths, strict=True)):
        real = row[row >= 0]
        assert len(real) == 0 or (real.max() < n and len(set(real.tolist())) == len(real)), (
            f"prediction {i} {row.tolist()} is not an ordering of {n} positions"
        )
        assert np.all(row[len(real) :] == -1), f"prediction {i} {row.tolist()} is padded early"


def check_transductions(predictions, n, kind=str, vocabulary=("a", "b")):
    """Assert ``predictions`` are ``n`` outputs of ``kind`` made of tokens seen in fit."""
    assert len(predictions) == n
    for i, output in enumerate(predictions):
        assert isinstance(output, kind), f"prediction {i} is a {type(output).__name__}"
        unknown = [token for token in output if token not in vocabulary]
        assert not unknown, f"prediction {i} holds tokens never seen in fit: {unknown[:3]}"


def same_model(a, b):
    """Assert two fitted estimators compute the same function.

    The hyperparameters, the fitted attributes and the network's weights determine
    what an estimator predicts; all three must be equal.
    """
    assert type(a) is type(b)
    assert _plain(a.get_params()) == _plain(b.get_params())
    for name in a._fitted_attributes:
        if hasattr(a, name) or hasattr(b, name):
            assert _plain(getattr(a, name)) == _plain(getattr(b, name)), name
    left, right = a.network_.get_weights(), b.network_.get_weights()
    assert len(left) == len(right)
    for x, y in zip(left, right, strict=True):
        np.testing.assert_array_equal(x, y)


def _plain(value):
    """``value`` with arrays as nested lists, for ``==`` comparisons."""
    if isinstance(value, np.ndarray):
        return (str(value.dtype), _plain(value.tolist()))
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return value


def fingerprint(model, probe):
    """What ``model`` computes on ``probe``: predictions and, where there are some,
    probabilities or the transducer's soft memory operations."""
    result = {"predict": model.predict(probe)}
    if hasattr(model, "predict_proba"):
        result["proba"] = np.asarray(model.predict_proba(probe))
    elif getattr(model, "network_params_", {}).get("memory") is not None:
        traces = model.memory_trace(probe)
        for key in ("push", "pop", "read"):
            result[key] = [np.asarray(trace[key]) for trace in traces]
    return result


def assert_same_fingerprint(before, after):
    """Assert two fingerprints hold the same outputs."""
    assert before.keys() == after.keys()
    left, right = before["predict"], after["predict"]
    assert len(left) == len(right)
    for x, y in zip(left, right, strict=True):
        assert type(x) is type(y)
        np.testing.assert_array_equal(np.asarray(x, dtype=object), np.asarray(y, dtype=object))
    for key in before.keys() - {"predict"}:
        left, right = before[key], after[key]
        left, right = (left, right) if isinstance(left, list) else ([left], [right])
        for x, y in zip(left, right, strict=True):
            np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ fixtures
@functools.cache
def sorting():
    """32 sequences of 5 digits and their descending orderings."""
    from skptr.datasets import make_sorting

    return make_sorting(32, 5, random_state=0)


@functools.cache
def strings():
    """32 reversal pairs over ``{a, b}``, 1 to 4 tokens long."""
    from skptr.datasets import make_transduction

    X, y = make_transduction(
        "reversal", 32, min_length=1, max_length=4, vocab_size=2, random_state=0
    )
    return list(X), list(y)


FIXTURE_KINDS = {
    "pointer": ("pointer", {}),
    "pointer-cycle": ("pointer", {"cycle": "undirected"}),
    "stack": ("transducer", {"memory": "stack"}),
    "queue": ("transducer", {"memory": "queue"}),
    "deque": ("transducer", {"memory": "deque"}),
    "memoryless": ("transducer", {"memory": None}),
}


def fit_tiny(kind, data=None, **params):
    """A new tiny estimator of ``kind`` ("pointer", "stack", ...) fitted on the fixture."""
    from skptr import NeuralStackTransducer, PointerNetworkOrderer

    family, extra = FIXTURE_KINDS[kind]
    if family == "pointer":
        estimator = PointerNetworkOrderer(**{**TINY_POINTER, **extra, **params})
        return estimator.fit(*(data or sorting()))
    estimator = NeuralStackTransducer(**{**TINY_TRANSDUCER, **extra, **params})
    return estimator.fit(*(data or strings()))


@functools.cache
def fitted(kind):
    """A shared tiny fitted estimator of ``kind``: callers must leave it as they found it."""
    return fit_tiny(kind)


def probe(kind):
    """Inputs to compare models of ``kind`` on."""
    return sorting()[0][:8] if FIXTURE_KINDS[kind][0] == "pointer" else strings()[0][:8]


@functools.cache
def saved(kind):
    """The bytes of the shared fitted ``kind`` model's file."""
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "model.skptr")
        fitted(kind).save(path)
        return Path(path).read_bytes()


# ------------------------------------------------------------------ zip files
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
    """``data`` with the member ``name`` replaced (or added; removed when None)."""
    members = zip_members(data)
    if payload is None:
        members.pop(name, None)
    else:
        members[name] = payload
    return zip_build(members)


def with_metadata(data, edit):
    """``data`` with ``skptr.json`` parsed, changed by ``edit(metadata)`` and rewritten."""
    metadata = json.loads(zip_members(data)["skptr.json"])
    edit(metadata)
    return with_member(data, "skptr.json", json.dumps(metadata).encode())


def zip_field_offsets(data):
    """Byte offsets and widths of the size, offset and method fields of a zip's records,
    by name (``"eocd.cd_offset"``, ``"cd[skptr.json].usize"``, ``"local[...].flags"``)."""
    fields = {}
    eocd = data.rfind(b"PK\x05\x06")
    fields["eocd.entries"] = (eocd + 10, 2)
    fields["eocd.cd_size"] = (eocd + 12, 4)
    fields["eocd.cd_offset"] = (eocd + 16, 4)
    position = data.find(b"PK\x01\x02")
    while position >= 0:
        length = int.from_bytes(data[position + 28 : position + 30], "little")
        name = data[position + 46 : position + 46 + length].decode("utf-8", "replace")
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


def set_field(data, offset, width, value):
    """``data`` with a little-endian unsigned field overwritten."""
    out = bytearray(data)
    out[offset : offset + width] = int(value).to_bytes(width, "little")
    return bytes(out)
