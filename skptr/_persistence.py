"""A pickle-free file format for skptr estimators.

Loading a pickle runs arbitrary code, so skptr also offers ``est.save(path)`` and
:func:`skptr.load`. The file is a zip archive holding

``skptr.json``
    the format version, the skptr and Keras versions, the estimator class, its
    hyperparameters and its fitted attributes, all as plain JSON data;
``network.keras``
    the trained Keras network in the ``.keras`` format.

:func:`load` trusts nothing in the file and runs no code from it: there is no pickle,
JSON values only become ``None``, booleans, numbers, strings, lists, tuples, dicts and
NumPy arrays, only skptr's own estimator classes can be created, and the stored
network's architecture is never deserialised. Each part is checked before it is used,
and every problem is a ``ValueError`` that names the file:

* ``skptr.json`` is a JSON object with exactly the expected entries, each of the
  expected type (:data:`METADATA_TYPES`), written by a compatible skptr and Keras;
* the hyperparameters are the estimator's own, pass the estimator's own parameter
  validation, and ``callbacks`` is ``None``;
* the fitted attributes are exactly those the estimator sets in ``fit``
  (:data:`STATE_SCHEMAS`), each of the expected type: all of them when the file holds
  a network, none otherwise;
* the network's configuration names the estimator's own network class
  (:data:`NETWORK_CLASSES`). The network is then built from the validated
  hyperparameters and fitted attributes, the stored weights must have exactly its
  layout (the same weight paths and shapes), and only their values are loaded.
"""

from __future__ import annotations

import io
import json
import math
import os
import reprlib
import tempfile
import zipfile
import zlib
from collections.abc import Callable
from importlib import import_module
from typing import NamedTuple

import h5py
import keras
import numpy as np

__all__ = ["load", "save"]

FORMAT_NAME = "skptr-estimator"
FORMAT_VERSION = 1
METADATA_FILE = "skptr.json"
NETWORK_FILE = "network.keras"
KERAS_CONFIG_FILE = "config.json"
KERAS_WEIGHTS_FILE = "model.weights.h5"
ESTIMATOR_CLASSES = {
    "PointerNetworkOrderer": "skptr.pointer",
    "NeuralStackTransducer": "skptr.memory",
}
#: The registered Keras name of each estimator's network class.
NETWORK_CLASSES = {
    "PointerNetworkOrderer": "skptr>PointerNetwork",
    "NeuralStackTransducer": "skptr>TransducerNetwork",
}
#: The entries of ``skptr.json`` and their JSON types.
METADATA_TYPES = {
    "format": str,
    "format_version": int,
    "skptr_version": str,
    "keras_version": str,
    "estimator": str,
    "params": dict,
    "state": dict,
    "has_network": bool,
}
# What reading a damaged or hostile zip archive can raise (OSError covers h5py's errors).
_ARCHIVE_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    KeyError,
    EOFError,
    OSError,
    NotImplementedError,
    RuntimeError,
    ValueError,
    zlib.error,
)


def _skptr_version():
    from . import __version__

    return __version__


def _encode(value, where):
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        value = float(value)
        return value if np.isfinite(value) else {"__float__": repr(value)}
    if isinstance(value, list):
        return [_encode(item, f"{where}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(item, f"{where}[{i}]") for i, item in enumerate(value)]}
    if isinstance(value, dict):
        return {
            "__dict__": [
                [_encode(key, f"{where} key"), _encode(item, f"{where}[{key!r}]")]
                for key, item in value.items()
            ]
        }
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return {
                "__object_array__": [
                    _encode(item, f"{where}[{i}]") for i, item in enumerate(value.ravel().tolist())
                ],
                "shape": list(value.shape),
            }
        if value.dtype.kind not in "biufU":
            raise TypeError(f"{where}: arrays of dtype {value.dtype} cannot be saved.")
        return {
            "__ndarray__": value.tolist(),
            "dtype": value.dtype.str,
            "shape": list(value.shape),
        }
    raise TypeError(
        f"{where} is a {type(value).__name__}, which the skptr file format cannot store; "
        "use pickle/joblib for such estimators, or set it to a plain value."
    )


def _decode(value):
    if isinstance(value, list):
        return [_decode(item) for item in value]
    if not isinstance(value, dict):
        return value
    if "__tuple__" in value:
        return tuple(_decode(item) for item in value["__tuple__"])
    if "__dict__" in value:
        return {_decode(key): _decode(item) for key, item in value["__dict__"]}
    if "__float__" in value:
        return float(value["__float__"])
    if "__ndarray__" in value:
        dtype = np.dtype(value["dtype"])
        if dtype.kind not in "biufU":
            raise ValueError(f"unsupported array dtype {dtype} in the file")
        return np.asarray(value["__ndarray__"], dtype=dtype).reshape(value["shape"])
    if "__object_array__" in value:
        items = [_decode(item) for item in value["__object_array__"]]
        array = np.empty(len(items), dtype=object)
        array[:] = items
        return array.reshape(value["shape"])
    raise ValueError(f"unknown entry {sorted(value)} in the file")


def _persistent_state(estimator):
    params = estimator.get_params(deep=False)
    return {
        name: value
        for name, value in vars(estimator).items()
        if name not in params and name != "network_" and not name.startswith("_cache_")
    }


def save(estimator, path):
    """Write an estimator to ``path`` without pickle.

    Parameters
    ----------
    estimator : PointerNetworkOrderer or NeuralStackTransducer
        A fitted or unfitted estimator.
    path : str or path-like
        Destination file (conventionally ending in ``.skptr``).

    Raises
    ------
    TypeError
        If a hyperparameter or fitted attribute is not plain data (Keras callbacks,
        a ``RandomState`` instance): such estimators can only be pickled.
    """
    name = type(estimator).__name__
    if ESTIMATOR_CLASSES.get(name) is None:
        raise TypeError(f"{name} is not a skptr estimator.")
    params = estimator.get_params(deep=False)
    if params.get("callbacks"):
        raise TypeError(
            "callbacks cannot be stored in the skptr file format; set callbacks=None "
            "before saving (they only matter during fit)."
        )
    metadata = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "skptr_version": _skptr_version(),
        "keras_version": keras.__version__,
        "estimator": name,
        "params": {key: _encode(value, key) for key, value in params.items()},
        "state": {key: _encode(value, key) for key, value in _persistent_state(estimator).items()},
        "has_network": getattr(estimator, "network_", None) is not None,
    }
    with tempfile.TemporaryDirectory() as directory:
        network_path = os.path.join(directory, NETWORK_FILE)
        if metadata["has_network"]:
            estimator.network_.save(network_path)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            archive.writestr(METADATA_FILE, json.dumps(metadata, indent=1))
            if metadata["has_network"]:
                archive.write(network_path, NETWORK_FILE)
    with open(path, "wb") as handle:
        handle.write(buffer.getvalue())


# ------------------------------------------------------------------ metadata checks
def _major_minor(version):
    return tuple(version.split("+")[0].split(".")[:2])


def _check_format(metadata, path):
    """Check that the metadata is a skptr file's, in the format this skptr reads."""
    if not isinstance(metadata, dict):
        raise ValueError(
            f"{path} is not a skptr estimator file: {METADATA_FILE} holds a JSON "
            f"{type(metadata).__name__}, not an object."
        )
    if metadata.get("format") != FORMAT_NAME:
        raise ValueError(f"{path} is not a skptr estimator file.")
    if metadata.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"{path} uses skptr file format version {metadata.get('format_version')!r}, "
            f"this skptr (version {_skptr_version()}) reads version {FORMAT_VERSION}."
        )


def _check_entries(metadata, path):
    """Check that the metadata has exactly the entries of :data:`METADATA_TYPES`."""
    missing = sorted(METADATA_TYPES.keys() - metadata.keys())
    if missing:
        raise ValueError(f"{path}: {METADATA_FILE} lacks the required entries {missing}.")
    unexpected = sorted(metadata.keys() - METADATA_TYPES.keys())
    if unexpected:
        raise ValueError(f"{path}: {METADATA_FILE} has unexpected entries {unexpected}.")
    for key, expected in METADATA_TYPES.items():
        # Parsed JSON holds exact built-in types; this also keeps booleans out of ints.
        if type(metadata[key]) is not expected:
            raise ValueError(
                f"{path}: the entry {key!r} of {METADATA_FILE} must be a "
                f"{expected.__name__}, got a {type(metadata[key]).__name__}."
            )


def _check_versions(metadata, path):
    """Check that the file was written by a compatible skptr and Keras."""
    saved, current = metadata["skptr_version"], _skptr_version()
    if _major_minor(saved) != _major_minor(current):
        raise ValueError(
            f"{path} was written by skptr {saved}, which is incompatible with the installed "
            f"skptr {current}; load it with skptr {'.'.join(_major_minor(saved))}.x."
        )
    saved_keras = metadata["keras_version"]
    if saved_keras.split(".")[0] != keras.__version__.split(".")[0]:
        raise ValueError(
            f"{path} was written with Keras {saved_keras}, incompatible with the installed "
            f"Keras {keras.__version__}."
        )


# ----------------------------------------------------- hyperparameters and state
class _Rule(NamedTuple):
    """The expected type of a fitted attribute: a description and a test."""

    description: str
    test: Callable[[object], bool]


def _int_at_least(minimum):
    return _Rule(f"an int >= {minimum}", lambda value: type(value) is int and value >= minimum)


def _one_of(*options):
    return _Rule(
        f"one of {', '.join(map(repr, options))}",
        lambda value: isinstance(value, str) and value in options,
    )


def _is_number(value):
    return type(value) in (int, float)


def _is_history(value):
    return isinstance(value, dict) and all(
        isinstance(key, str) and isinstance(values, list) and all(map(_is_number, values))
        for key, values in value.items()
    )


def _is_hashable(value):
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _is_vocabulary(value):
    return (
        isinstance(value, np.ndarray)
        and value.dtype == object
        and value.ndim == 1
        and all(map(_is_hashable, value))
    )


def _is_dtype_or_none(value):
    if value is None:
        return True
    if not isinstance(value, str):
        return False
    try:
        return np.dtype(value).str == value
    except (TypeError, ValueError, OverflowError):
        return False


def _is_finite_non_negative(value):
    return _is_number(value) and math.isfinite(value) and value >= 0


def _is_scores(value):
    return (
        isinstance(value, np.ndarray)
        and value.dtype.kind == "f"
        and value.ndim == 1
        and bool(np.all(np.isnan(value) | ((value >= 0) & (value <= 1))))
    )


_HISTORY = _Rule("a dict of str to lists of numbers", _is_history)
_VOCABULARY = _Rule("a 1-D object array of hashable tokens", _is_vocabulary)

#: The fitted attributes each estimator stores (those its ``_prepare_training_data``
#: and ``fit`` set), with their expected types.
STATE_SCHEMAS = {
    "PointerNetworkOrderer": {
        "n_features_in_": _int_at_least(1),
        "ordered_subsets_": _Rule("a bool", lambda value: type(value) is bool),
        "history_": _HISTORY,
        "n_iter_": _int_at_least(0),
    },
    "NeuralStackTransducer": {
        "input_vocabulary_": _VOCABULARY,
        "output_vocabulary_": _VOCABULARY,
        "_target_kind": _one_of("str", "tuple", "list", "array"),
        "_target_dtype": _Rule("None or a NumPy dtype string such as '<i8'", _is_dtype_or_none),
        "_max_target_ratio": _Rule("a finite number >= 0", _is_finite_non_negative),
        "history_": _HISTORY,
        "n_iter_": _int_at_least(0),
        "init_scores_": _Rule("a 1-D float array of scores in [0, 1] or NaN", _is_scores),
        "snap_gates_": _Rule("a bool", lambda value: type(value) is bool),
        "state_bptt_steps_": _Rule(
            "None or an int >= 0",
            lambda value: value is None or (type(value) is int and value >= 0),
        ),
        "gate_noise_start_": _Rule(
            "a float in [0, 1]", lambda value: type(value) is float and 0.0 <= value <= 1.0
        ),
    },
}


def _decoded(entries, what, path):
    """Decode a dict of JSON entries, turning any malformed entry into a ValueError."""
    try:
        return {key: _decode(value) for key, value in entries.items()}
    except (KeyError, TypeError, ValueError, OverflowError, RecursionError) as exc:
        raise ValueError(f"{path} holds invalid {what}: {exc}") from None


def _checked_estimator(cls, entries, path):
    """Create the estimator from the file's hyperparameters, validated by the estimator."""
    unknown = sorted(entries.keys() - cls().get_params(deep=False).keys())
    if unknown:
        raise ValueError(f"{path} holds parameters {unknown}, which {cls.__name__} does not have.")
    params = _decoded(entries, "hyperparameters", path)
    if params.get("callbacks") is not None:
        raise ValueError(
            f"{path} sets callbacks, which a skptr file cannot hold; it must be null."
        )
    estimator = cls(**params)
    try:
        estimator._validate_params()
    except ValueError as exc:  # sklearn's InvalidParameterError
        raise ValueError(f"{path} holds invalid hyperparameters: {exc}") from None
    return estimator


def _checked_state(name, entries, has_network, path):
    """Decode the file's fitted attributes and check them against the estimator's schema."""
    schema = STATE_SCHEMAS[name]
    unknown = sorted(entries.keys() - schema.keys())
    if unknown:
        raise ValueError(f"{path} holds fitted attributes {unknown}, which {name} does not have.")
    if has_network:
        missing = sorted(schema.keys() - entries.keys())
        if missing:
            raise ValueError(f"{path} lacks the fitted attributes {missing} of a fitted {name}.")
    elif entries:
        raise ValueError(
            f"{path} holds fitted attributes {sorted(entries)} but no network; an unfitted "
            f"{name} has none."
        )
    state = _decoded(entries, "fitted attributes", path)
    for key, value in state.items():
        rule = schema[key]
        if not rule.test(value):
            raise ValueError(
                f"{path}: the fitted attribute {key} must be {rule.description}, "
                f"got {reprlib.repr(value)}."
            )
    return state


# ------------------------------------------------------------------------ network
def _weight_layout(weights_file):
    """Shape of each network weight in a Keras weights file, by path (optimizer left out)."""
    layout = {}

    def record(name, item):
        if isinstance(name, bytes):  # h5py's spelling of a name that is not UTF-8
            name = name.decode("utf-8", errors="replace")
        if isinstance(item, h5py.Dataset) and not name.startswith("optimizer/"):
            layout[name] = item.shape

    with h5py.File(weights_file, "r") as handle:
        handle.visititems(record)
    return layout


def _read_network_file(network_path, directory, path):
    """The configuration and the weight layout stored in a ``.keras`` file.

    The weights file is extracted into ``directory`` first: h5py reads hostile data
    more robustly from a file on disk than from a Python file object.
    """
    try:
        with zipfile.ZipFile(network_path) as archive:
            config = json.loads(archive.read(KERAS_CONFIG_FILE).decode("utf-8"))
            weights_path = archive.extract(KERAS_WEIGHTS_FILE, directory)
        layout = _weight_layout(weights_path)
    except _ARCHIVE_ERRORS as exc:
        raise ValueError(f"{path}: the stored network cannot be read: {exc}") from None
    return config, layout


def _check_network_class(config, name, path):
    """Check that a ``.keras`` configuration names the estimator's own network class."""
    found = None
    if isinstance(config, dict):
        # Built-in Keras classes have no registered name, only a class name.
        found = config.get("registered_name") or config.get("class_name")
    if found != NETWORK_CLASSES[name]:
        raise ValueError(
            f"{path}: the stored network is a {found!r}, not the {NETWORK_CLASSES[name]!r} "
            f"network of a {name}."
        )


def _describe_layout_mismatch(stored, expected):
    parts = [f"missing {key!r}" for key in sorted(expected.keys() - stored.keys())]
    parts += [f"unexpected {key!r}" for key in sorted(stored.keys() - expected.keys())]
    parts += [
        f"{key!r} has shape {stored[key]}, expected {expected[key]}"
        for key in sorted(stored.keys() & expected.keys())
        if stored[key] != expected[key]
    ]
    more = f", and {len(parts) - 3} more" if len(parts) > 3 else ""
    return "; ".join(parts[:3]) + more


def _restore_network(estimator, network_bytes, path):
    """Build the estimator's network and load the stored weights into it.

    The stored architecture is not used: the network comes from the estimator's
    validated hyperparameters and fitted attributes, and the stored weights must have
    exactly its layout.
    """
    name = type(estimator).__name__
    with tempfile.TemporaryDirectory() as directory:
        network_path = os.path.join(directory, NETWORK_FILE)
        with open(network_path, "wb") as handle:
            handle.write(network_bytes)
        config, stored_layout = _read_network_file(network_path, directory, path)
        _check_network_class(config, name, path)
        network = estimator._new_network()
        expected_path = os.path.join(directory, "expected.weights.h5")
        network.save_weights(expected_path)
        expected_layout = _weight_layout(expected_path)
        if stored_layout != expected_layout:
            raise ValueError(
                f"{path}: the stored network weights do not match the {name} network "
                f"described by the file's parameters and fitted attributes "
                f"({_describe_layout_mismatch(stored_layout, expected_layout)})."
            )
        try:
            network.load_weights(network_path)
        except Exception as exc:  # Keras raises many kinds on damaged weights
            raise ValueError(
                f"{path}: the stored network weights cannot be loaded: {exc}"
            ) from None
    return network


# --------------------------------------------------------------------------- load
def _read_archive(path):
    """The raw metadata and network file (``None`` if absent) of a skptr file."""
    try:
        with zipfile.ZipFile(path) as archive:
            if archive.testzip() is not None:
                raise zipfile.BadZipFile("a member fails its checksum")
            metadata = archive.read(METADATA_FILE)
            has_network_file = NETWORK_FILE in archive.namelist()
            network = archive.read(NETWORK_FILE) if has_network_file else None
    except FileNotFoundError:
        raise
    except _ARCHIVE_ERRORS as exc:
        raise ValueError(
            f"{path} is not a readable skptr file (corrupted or truncated: {exc})."
        ) from None
    return metadata, network


def _parse_metadata(data, path):
    try:
        return json.loads(data.decode("utf-8"))
    except RecursionError:
        raise ValueError(
            f"{path}: {METADATA_FILE} is nested too deeply for skptr metadata."
        ) from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise ValueError(
            f"{path} is not a readable skptr file (corrupted or truncated: {METADATA_FILE} "
            f"is not valid JSON: {exc})."
        ) from None


def load(path):
    """Read an estimator written by ``est.save(path)``.

    Nothing in the file is trusted or run: the metadata, hyperparameters and fitted
    attributes are validated, only skptr's estimator classes can be created, and the
    network is built from the validated hyperparameters before the stored weights,
    and only the weights, are loaded into it.

    Parameters
    ----------
    path : str or path-like
        A file written by :meth:`save`.

    Returns
    -------
    estimator
        The estimator, with its hyperparameters, fitted attributes and network.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the file is not a skptr file, is corrupted or truncated, was written by an
        incompatible skptr or Keras version, or holds metadata, hyperparameters,
        fitted attributes or network weights that are not those of a skptr estimator.
    """
    metadata_bytes, network_bytes = _read_archive(path)
    metadata = _parse_metadata(metadata_bytes, path)
    _check_format(metadata, path)
    _check_entries(metadata, path)
    _check_versions(metadata, path)
    name = metadata["estimator"]
    if name not in ESTIMATOR_CLASSES:
        raise ValueError(f"{path} names an unknown estimator class {name!r}.")
    cls = getattr(import_module(ESTIMATOR_CLASSES[name]), name)
    estimator = _checked_estimator(cls, metadata["params"], path)
    has_network = metadata["has_network"]
    state = _checked_state(name, metadata["state"], has_network, path)
    estimator.__dict__.update(state)
    if has_network:
        if network_bytes is None:
            raise ValueError(f"{path} records a fitted network but holds no {NETWORK_FILE}.")
        estimator.network_ = _restore_network(estimator, network_bytes, path)
    return estimator
