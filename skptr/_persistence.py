"""A pickle-free file format for skptr estimators.

Loading a pickle runs arbitrary code, so skptr also offers ``est.save(path)`` and
:func:`skptr.load`. The file is a zip archive holding

``skptr.json``
    the format version, the skptr and Keras versions, the estimator class, its
    hyperparameters and its fitted attributes, all as plain JSON data;
``network.keras``
    the trained Keras network in the ``.keras`` format.

Each estimator owns what is stored: its ``_fitted_attributes`` declares every attribute
``fit`` sets with its type (its codec declares its own), and ``_network_class`` the
class of its network. :func:`save` writes exactly those attributes, to a temporary file
beside the target that then replaces it in one step, so a failed save leaves an earlier
file as it was.

:func:`load` trusts nothing in the file and runs no code from it: there is no pickle,
JSON values only become ``None``, booleans, numbers, strings, lists, tuples, dicts and
NumPy arrays, only skptr's own estimator classes can be created, and the stored
network's architecture is never deserialised. Each part is checked before it is used,
and every problem is a ``ValueError`` that names the file:

* no member is read before its declared size is checked: ``skptr.json`` against
  :data:`MAX_METADATA_BYTES`, the network against what the declared architecture's
  weights take (see :mod:`skptr._limits`);
* ``skptr.json`` is a JSON object with exactly the expected entries, each of the
  expected type (:data:`METADATA_TYPES`), written by a compatible skptr and Keras;
* the hyperparameters are the estimator's own, pass the estimator's own parameter
  validation (with its bounds on every size), and ``callbacks`` is ``None``; so do
  the hyperparameters the network was fitted with (``network_params_``);
* the fitted attributes are exactly those the estimator declares, each of its
  declared type: all of them when the file holds a network, none otherwise;
* the network's configuration names the estimator's own network class and describes
  the network that the fitted hyperparameters build (the same memory, sizes and
  options). The network is then built from the validated hyperparameters and fitted
  attributes, the stored weights must have exactly its layout (the same weight paths
  and shapes), and only their values are loaded.
"""

from __future__ import annotations

import contextlib
import errno
import inspect
import io
import json
import os
import reprlib
import stat
import tempfile
import zipfile
import zlib
from importlib import import_module

import h5py
import keras
import numpy as np

from ._limits import BYTES_PER_NUMBER

__all__ = ["load", "save"]

FORMAT_NAME = "skptr-estimator"
#: Version 2 records the hyperparameters the network was fitted with
#: (``network_params_``); version 1 files, which lack them, are read with the stored
#: hyperparameters in their place.
FORMAT_VERSION = 2
READABLE_FORMAT_VERSIONS = (1, 2)
METADATA_FILE = "skptr.json"
NETWORK_FILE = "network.keras"
KERAS_CONFIG_FILE = "config.json"
KERAS_WEIGHTS_FILE = "model.weights.h5"
ESTIMATOR_CLASSES = {
    "PointerNetworkOrderer": "skptr.pointer",
    "NeuralStackTransducer": "skptr.memory",
}
#: The largest ``skptr.json`` read (a vocabulary of a million tokens takes about 20 MB).
MAX_METADATA_BYTES = 64 * 2**20
#: The largest Keras configuration and metadata members of ``network.keras`` read.
MAX_KERAS_CONFIG_BYTES = 2**20
#: The stored weights hold the network's weights; files of earlier versions also hold
#: Adam's two moments. The file adds its own structure, at most this much.
STORED_WEIGHT_COPIES = 3
WEIGHTS_FILE_OVERHEAD = 4 * 2**20
# Entries of a network's Keras configuration that do not describe its architecture
# (networks saved by earlier versions also hold "unroll_steps").
_NOT_ARCHITECTURE = frozenset({"name", "seed", "trainable", "dtype", "unroll_steps"})
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
    """The fitted attributes the estimator declares, those it has."""
    return {
        name: getattr(estimator, name)
        for name in type(estimator)._fitted_attributes
        if hasattr(estimator, name)
    }


def _checked_path(path):
    """``path`` as a str; bytes are decoded as the file system does."""
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"path must be a str or a path-like object, got a {type(path).__name__}.")
    return os.fsdecode(os.fspath(path))


def _write_atomically(path, data):
    """Write ``data`` to a temporary file beside ``path``, then move it onto ``path``.

    The replacement is one step (``os.replace``), so ``path`` holds either its previous
    contents or ``data``, never a part of it; the temporary file is removed on failure.
    A symbolic link is followed: its target is replaced and the link kept. A file
    replaced keeps its permissions; a read-only one is refused.
    """
    target = os.path.realpath(path)
    mode = 0o666 & ~_umask()
    if os.path.lexists(target):
        status = os.stat(target)
        if not stat.S_ISREG(status.st_mode):
            raise ValueError(f"{path} exists and is not a regular file; choose another path.")
        if not status.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
            raise PermissionError(
                f"{path} is read-only; make it writable (chmod u+w) or save to another path."
            )
        mode = stat.S_IMODE(status.st_mode)
    directory, name = os.path.split(target)
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    except OSError as error:  # it names the temporary file: name the user's path instead
        raise type(error)(
            error.errno,
            f"Cannot write {path}: no file can be created in its directory "
            f"({error.strerror or error})",
            directory,
        ) from error
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _check_directory(path):
    """Raise ``FileNotFoundError`` naming the directory of ``path`` if it is missing (or
    ``NotADirectoryError`` if it is a file), before any work is done for a save."""
    given = os.path.dirname(path) or os.curdir
    target = os.path.dirname(os.path.realpath(path))  # the link's target's, for a link
    for folder in (given, target):
        if os.path.isdir(folder):
            continue
        if os.path.exists(folder):
            error, code, what = NotADirectoryError, errno.ENOTDIR, "is a file, not a directory;"
        else:
            error, code, what = FileNotFoundError, errno.ENOENT, "does not exist; create it or"
        raise error(
            code,
            f"Cannot save to {path}: the directory {folder} {what} choose another path",
            folder,
        )


def _umask():
    umask = os.umask(0)
    os.umask(umask)
    return umask


def _model_only(estimator):
    """A new network holding the fitted network's weights and nothing else.

    The fitted network carries what using it attached to it (compiled inference models,
    each with an optimiser of its own, and the training optimiser), which Keras would
    write into the file as well; the file holds the model only.
    """
    network = estimator._new_network(restored=True)
    network.set_weights(estimator.network_.get_weights())
    return network


def save(estimator, path):
    """Write an estimator to ``path`` without pickle.

    The file is written in full to a temporary file in the same directory, which then
    replaces ``path`` in one step: if writing fails (a full disk, an interrupt), a file
    already at ``path`` is left byte for byte as it was.

    Parameters
    ----------
    estimator : PointerNetworkOrderer or NeuralStackTransducer
        A fitted or unfitted estimator.
    path : str, bytes or path-like
        Destination file (conventionally ending in ``.skptr``). A symbolic link is
        followed: the file it points to is replaced, keeping its permissions.

    Raises
    ------
    TypeError
        If a hyperparameter or fitted attribute is not plain data (Keras callbacks,
        a cost function, a ``RandomState`` instance): such estimators can only be
        pickled; or if
        ``path`` is not a str, bytes or path-like object.
    FileNotFoundError
        If the directory of ``path`` does not exist (``NotADirectoryError`` if it is a
        file), naming it.
    PermissionError
        If ``path`` is a read-only file.
    ValueError
        If ``path`` exists and is not a regular file.
    """
    name = type(estimator).__name__
    if ESTIMATOR_CLASSES.get(name) is None:
        raise TypeError(f"{name} is not a skptr estimator.")
    path = _checked_path(path)
    _check_directory(path)
    params = estimator.get_params(deep=False)
    if params.get("callbacks"):
        raise TypeError(
            "callbacks cannot be stored in the skptr file format; set callbacks=None "
            "before saving (they only matter during fit)."
        )
    if callable(params.get("cost")):
        raise TypeError(
            "A cost function cannot be stored in the skptr file format, which holds no "
            "code: save with cost set to a built-in cost's name (set_params(cost=...)) "
            "and pass the function again after loading, or pickle the estimator (joblib "
            "keeps a function by reference)."
        )
    if not (params.get("devices") is None or isinstance(params["devices"], str)):
        params["devices"] = None  # a backend's strategy belongs to its process
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
            _model_only(estimator).save(network_path)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            archive.writestr(METADATA_FILE, json.dumps(metadata, indent=1))
            if metadata["has_network"]:
                archive.write(network_path, NETWORK_FILE)
    _write_atomically(path, buffer.getvalue())


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
    version = metadata.get("format_version")
    if type(version) is not int or version not in READABLE_FORMAT_VERSIONS:
        raise ValueError(
            f"{path} uses skptr file format version {version!r}, this skptr (version "
            f"{_skptr_version()}) reads versions "
            f"{', '.join(map(str, READABLE_FORMAT_VERSIONS))}."
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
def _decoded(entries, what, path):
    """Decode a dict of JSON entries, turning any malformed entry into a ValueError."""
    try:
        return {key: _decode(value) for key, value in entries.items()}
    except (KeyError, TypeError, ValueError, OverflowError, RecursionError) as exc:
        raise ValueError(f"{path} holds invalid {what}: {exc}") from None


def _checked_estimator(cls, params, path, what="hyperparameters"):
    """Create the estimator from decoded hyperparameters, validated by the estimator."""
    unknown = sorted(params.keys() - cls().get_params(deep=False).keys())
    if unknown:
        raise ValueError(f"{path} holds parameters {unknown}, which {cls.__name__} does not have.")
    if params.get("callbacks") is not None:
        raise ValueError(
            f"{path} sets callbacks, which a skptr file cannot hold; it must be null."
        )
    estimator = cls(**params)
    try:
        estimator._validate_params()
    except ValueError as exc:  # sklearn's InvalidParameterError
        raise ValueError(f"{path} holds invalid {what}: {exc}") from None
    return estimator


def _checked_state(cls, entries, has_network, path):
    """Decode the file's fitted attributes and check them against the estimator's
    declaration (``_fitted_attributes``)."""
    name, schema = cls.__name__, cls._fitted_attributes
    unknown = sorted(entries.keys() - schema.keys())
    if unknown:
        raise ValueError(f"{path} holds fitted attributes {unknown}, which {name} does not have.")
    if has_network:
        entries = {**cls._fitted_attributes_before, **entries}
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
        try:
            valid = rule.test(value)
        except (TypeError, ValueError, OverflowError):
            valid = False
        if not valid:
            raise ValueError(
                f"{path}: the fitted attribute {key} must be {rule.description}, "
                f"got {reprlib.repr(value)}."
            )
    return state


def _checked_network_params(estimator, network_params, path):
    """Check the hyperparameters the file's network was fitted with: exactly the
    estimator's network hyperparameters, each valid for the estimator."""
    cls = type(estimator)
    expected = set(cls._network_params)
    if set(network_params) != expected:
        raise ValueError(
            f"{path}: the fitted attribute network_params_ must name exactly "
            f"{sorted(expected)}, got {sorted(map(str, network_params))}."
        )
    fitted = {**estimator.get_params(deep=False), **network_params}
    _checked_estimator(cls, fitted, path, "hyperparameters in network_params_")


# ------------------------------------------------------------------------ network
def _read_member(archive, name, limit, path, what):
    """The bytes of a zip member, refused before reading if it declares more than
    ``limit`` bytes."""
    size = archive.getinfo(name).file_size
    if size > limit:
        raise ValueError(
            f"{path}: {what} declares {size:,} bytes, more than the {limit:,} that "
            "this file can hold; the file is damaged or not a skptr file."
        )
    return archive.read(name)


# Weight paths that are not the network's: the optimiser's, and those of the compiled
# inference models that files of earlier versions held after large predictions (Keras
# reads only the paths of the network it loads into, so they are ignored).
_NOT_NETWORK_WEIGHTS = ("optimizer/", "_skptr_inference_models/")


def _weight_layout(weights_file):
    """Shape of each network weight in a Keras weights file, by path."""
    layout = {}

    def record(name, item):
        if isinstance(name, bytes):  # h5py's spelling of a name that is not UTF-8
            name = name.decode("utf-8", errors="replace")
        if isinstance(item, h5py.Dataset) and not name.startswith(_NOT_NETWORK_WEIGHTS):
            layout[name] = item.shape

    with h5py.File(weights_file, "r") as handle:
        handle.visititems(record)
    return layout


def _read_network_file(network_path, directory, weights_limit, path):
    """The configuration and the weight layout stored in a ``.keras`` file.

    Each member's declared size is checked before it is read. The weights file is
    extracted into ``directory`` first: h5py reads hostile data more robustly from a
    file on disk than from a Python file object.
    """
    try:
        with zipfile.ZipFile(network_path) as archive:
            config_bytes = _read_member(
                archive,
                KERAS_CONFIG_FILE,
                MAX_KERAS_CONFIG_BYTES,
                path,
                "the network's configuration",
            )
            config = json.loads(config_bytes.decode("utf-8"))
            _read_member(archive, KERAS_WEIGHTS_FILE, weights_limit, path, "the network's weights")
            weights_path = archive.extract(KERAS_WEIGHTS_FILE, directory)
        layout = _weight_layout(weights_path)
    except RecursionError:
        raise ValueError(
            f"{path}: the stored network's configuration is nested too deeply."
        ) from None
    except _ARCHIVE_ERRORS as exc:
        raise ValueError(f"{path}: the stored network cannot be read: {exc}") from None
    return config, layout


def _architecture(config):
    """The entries of a network's Keras configuration that describe its architecture,
    as JSON data."""
    return {
        key: value
        for key, value in json.loads(json.dumps(config)).items()
        if key not in _NOT_ARCHITECTURE
    }


def _argument_defaults(network_class):
    """The default values of a network class's constructor arguments."""
    parameters = inspect.signature(network_class.__init__).parameters.values()
    return {p.name: p.default for p in parameters if p.default is not inspect.Parameter.empty}


def _check_network_config(config, network, estimator, path):
    """Check that a ``.keras`` configuration is that of ``network``: the estimator's
    own network class, built as the fitted hyperparameters say."""
    name = type(estimator).__name__
    expected_class = keras.saving.get_registered_name(type(estimator)._network_class)
    found = None
    if isinstance(config, dict):
        # Built-in Keras classes have no registered name, only a class name.
        found = config.get("registered_name") or config.get("class_name")
    if found != expected_class:
        raise ValueError(
            f"{path}: the stored network is a {found!r}, not the {expected_class!r} "
            f"network of a {name}."
        )
    stored = config.get("config")
    expected = _architecture(network.get_config())
    if isinstance(stored, dict):
        # Arguments the network class gained after the file was written take their
        # defaults, as Keras' from_config gives them.
        stored = _architecture({**_argument_defaults(type(network)), **stored})
    if stored != expected:
        differences = (
            sorted(
                key
                for key in expected.keys() | stored.keys()
                if stored.get(key) != expected.get(key)
            )
            if isinstance(stored, dict)
            else ["its whole configuration"]
        )
        raise ValueError(
            f"{path}: the stored network is not the one the file's fitted hyperparameters "
            f"(network_params_) describe; they differ in {', '.join(map(str, differences[:5]))}."
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


def _restore_network(estimator, archive, path):
    """Build the estimator's network and load the stored weights into it.

    The stored architecture is not used: the network comes from the estimator's
    validated fitted hyperparameters and attributes, the stored configuration must
    describe that network, and the stored weights must have exactly its layout. Before
    anything is built or read, the network's weights are checked to fit in memory, and
    the member's declared size against the size of those weights (twice the
    estimator's estimate, which bounds them from above).
    """
    name = type(estimator).__name__
    try:
        estimator._check_network_memory()
    except MemoryError as exc:
        raise ValueError(f"{path} declares a network that cannot be built here: {exc}") from None
    weights_limit = (
        2 * STORED_WEIGHT_COPIES * BYTES_PER_NUMBER * estimator._as_fitted()._weight_count()
        + WEIGHTS_FILE_OVERHEAD
    )
    network_bytes = _read_member(
        archive, NETWORK_FILE, weights_limit + MAX_KERAS_CONFIG_BYTES, path, NETWORK_FILE
    )
    network = estimator._new_network(restored=True)
    with tempfile.TemporaryDirectory() as directory:
        network_path = os.path.join(directory, NETWORK_FILE)
        with open(network_path, "wb") as handle:
            handle.write(network_bytes)
        config, stored_layout = _read_network_file(network_path, directory, weights_limit, path)
        _check_network_config(config, network, estimator, path)
        expected_path = os.path.join(directory, "expected.weights.h5")
        network.save_weights(expected_path)
        expected_layout = _weight_layout(expected_path)
        if stored_layout != expected_layout:
            raise ValueError(
                f"{path}: the stored network weights do not match the {name} network "
                f"described by the file's fitted hyperparameters and attributes "
                f"({_describe_layout_mismatch(stored_layout, expected_layout)})."
            )
        try:
            network.load_weights(network_path)
        except Exception as exc:  # Keras raises many kinds on damaged weights
            raise ValueError(
                f"{path}: the stored network weights cannot be loaded: {exc}"
            ) from None
    if not all(np.all(np.isfinite(weight)) for weight in network.get_weights()):
        raise ValueError(f"{path}: the stored network weights hold NaN or infinite values.")
    return network


# --------------------------------------------------------------------------- load
def _object_without_repeated_keys(pairs):
    """A JSON object as a dict, refusing a key given twice (JSON parsers disagree on
    which value such an object holds)."""
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        repeated = sorted({key for key in keys if keys.count(key) > 1})
        raise ValueError(f"the JSON object gives the keys {repeated[:5]} more than once")
    return dict(pairs)


def _parse_metadata(data, path):
    try:
        return json.loads(data.decode("utf-8"), object_pairs_hook=_object_without_repeated_keys)
    except RecursionError:
        raise ValueError(
            f"{path}: {METADATA_FILE} is nested too deeply for skptr metadata."
        ) from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise ValueError(
            f"{path} is not a readable skptr file (corrupted or truncated: {METADATA_FILE} "
            f"is not valid JSON: {exc})."
        ) from None


def _checked_metadata(archive, path):
    """The metadata of an open skptr archive, checked for format, entries and versions."""
    unexpected = sorted(set(archive.namelist()) - {METADATA_FILE, NETWORK_FILE})
    if unexpected:
        raise ValueError(f"{path} holds members {unexpected[:5]}, which a skptr file has not.")
    metadata = _parse_metadata(
        _read_member(archive, METADATA_FILE, MAX_METADATA_BYTES, path, METADATA_FILE), path
    )
    _check_format(metadata, path)
    _check_entries(metadata, path)
    _check_versions(metadata, path)
    return metadata


def _load_from(archive, path):
    metadata = _checked_metadata(archive, path)
    name = metadata["estimator"]
    if name not in ESTIMATOR_CLASSES:
        raise ValueError(f"{path} names an unknown estimator class {name!r}.")
    cls = getattr(import_module(ESTIMATOR_CLASSES[name]), name)
    # Hyperparameters written by earlier versions, in the estimator's current terms.
    current = getattr(cls, "_params_saved_before", dict)
    estimator = _checked_estimator(
        cls, current(_decoded(metadata["params"], "hyperparameters", path)), path
    )
    has_network = metadata["has_network"]
    entries = dict(metadata["state"])
    if metadata["format_version"] == 1 and has_network:
        # Version 1 files rebuilt the network from the stored hyperparameters.
        fitted = [[key, metadata["params"].get(key)] for key in cls._network_params]
        entries.setdefault("network_params_", {"__dict__": fitted})
    state = _checked_state(cls, entries, has_network, path)
    if has_network:
        state["network_params_"] = {
            **cls._network_params_before,
            **current(state["network_params_"]),
        }
        _checked_network_params(estimator, state["network_params_"], path)
    estimator.__dict__.update(state)
    if has_network:
        if NETWORK_FILE not in archive.namelist():
            raise ValueError(f"{path} records a fitted network but holds no {NETWORK_FILE}.")
        estimator.network_ = _restore_network(estimator, archive, path)
    return estimator


def load(path):
    """Read an estimator written by ``est.save(path)``.

    Nothing in the file is trusted or run: no member is read before its size is
    checked, the metadata, hyperparameters and fitted attributes are validated, only
    skptr's estimator classes can be created, and the network is built from the
    validated hyperparameters it was fitted with before the stored weights, and only
    the weights, are loaded into it.

    Parameters
    ----------
    path : str, bytes or path-like
        A file written by :meth:`save`.

    Returns
    -------
    estimator
        The estimator, with its hyperparameters, fitted attributes and network.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    TypeError
        If ``path`` is not a str or path-like object.
    ValueError
        If ``path`` is not a regular file, or the file is not a skptr file, is
        corrupted or truncated, was written by an incompatible skptr or Keras version,
        or holds metadata, hyperparameters, fitted attributes or network weights that
        are not those of a skptr estimator (or non-finite weights),
        or members larger than those can be.
    """
    path = _checked_path(path)
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise ValueError(f"{path} is not a regular file, so it cannot be a skptr file.")
    try:
        with zipfile.ZipFile(path) as archive:
            return _load_from(archive, path)
    except FileNotFoundError:
        raise
    except _ARCHIVE_ERRORS as exc:
        if isinstance(exc, ValueError) and str(exc).startswith(str(path)):
            raise  # already one of ours, naming the file
        raise ValueError(
            f"{path} is not a readable skptr file (corrupted or truncated: {exc})."
        ) from None
