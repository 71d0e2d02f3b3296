"""A pickle-free file format for skptr estimators.

Loading a pickle runs arbitrary code, so skptr also offers ``est.save(path)`` and
:func:`skptr.load`. The file is a zip archive holding

``skptr.json``
    the format version, the skptr and Keras versions, the estimator class, its
    hyperparameters and its fitted attributes, all as plain JSON data;
``network.keras``
    the trained Keras network in the ``.keras`` format, read back with
    ``keras.saving.load_model(..., safe_mode=True)``.

Only skptr's own estimator classes can be created by :func:`load`, and JSON values only
become ``None``, booleans, numbers, strings, lists, tuples, dicts and NumPy arrays.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import zipfile
from importlib import import_module

import keras
import numpy as np

__all__ = ["load", "save"]

FORMAT_NAME = "skptr-estimator"
FORMAT_VERSION = 1
METADATA_FILE = "skptr.json"
NETWORK_FILE = "network.keras"
ESTIMATOR_CLASSES = {
    "PointerNetworkOrderer": "skptr.pointer",
    "NeuralStackTransducer": "skptr.memory",
}


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


def _major_minor(version):
    return tuple(version.split("+")[0].split(".")[:2])


def _check_compatible(metadata, path):
    if metadata.get("format") != FORMAT_NAME:
        raise ValueError(f"{path} is not a skptr estimator file.")
    if metadata.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"{path} uses skptr file format version {metadata.get('format_version')}, "
            f"this skptr (version {_skptr_version()}) reads version {FORMAT_VERSION}."
        )
    saved, current = str(metadata.get("skptr_version")), _skptr_version()
    if _major_minor(saved) != _major_minor(current):
        raise ValueError(
            f"{path} was written by skptr {saved}, which is incompatible with the installed "
            f"skptr {current}; load it with skptr {'.'.join(_major_minor(saved))}.x."
        )
    saved_keras = str(metadata.get("keras_version"))
    if saved_keras.split(".")[0] != keras.__version__.split(".")[0]:
        raise ValueError(
            f"{path} was written with Keras {saved_keras}, incompatible with the installed "
            f"Keras {keras.__version__}."
        )


def load(path):
    """Read an estimator written by ``est.save(path)``.

    The network is restored with Keras ``safe_mode``, and only skptr's estimator
    classes can be instantiated, so loading an untrusted file does not run its code.

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
    ValueError
        If the file is not a skptr file, is corrupted or truncated, or was written by
        an incompatible skptr or Keras version.
    """
    try:
        with zipfile.ZipFile(path) as archive:
            if archive.testzip() is not None:
                raise zipfile.BadZipFile("a member fails its checksum")
            metadata = json.loads(archive.read(METADATA_FILE).decode("utf-8"))
            network_bytes = archive.read(NETWORK_FILE) if metadata.get("has_network") else None
    except (
        zipfile.BadZipFile,
        KeyError,
        json.JSONDecodeError,
        UnicodeDecodeError,
        EOFError,
        OSError,
    ) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise ValueError(
            f"{path} is not a readable skptr file (corrupted or truncated: {exc})."
        ) from None
    if not isinstance(metadata, dict):
        raise ValueError(f"{path} is not a skptr estimator file.")
    _check_compatible(metadata, path)
    name = metadata.get("estimator")
    if name not in ESTIMATOR_CLASSES:
        raise ValueError(f"{path} names an unknown estimator class {name!r}.")
    cls = getattr(import_module(ESTIMATOR_CLASSES[name]), name)
    try:
        estimator = cls(**{key: _decode(value) for key, value in metadata["params"].items()})
        state = {key: _decode(value) for key, value in metadata["state"].items()}
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path} holds invalid estimator data: {exc}") from None
    if network_bytes is not None:
        with tempfile.TemporaryDirectory() as directory:
            network_path = os.path.join(directory, NETWORK_FILE)
            with open(network_path, "wb") as handle:
                handle.write(network_bytes)
            try:
                network = keras.saving.load_model(network_path, safe_mode=True, compile=False)
            except Exception as exc:  # Keras raises many kinds on a damaged archive
                raise ValueError(f"{path}: the stored network cannot be loaded: {exc}") from None
        state["network_"] = network
    estimator.__dict__.update(state)
    return estimator
