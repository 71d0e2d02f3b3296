"""Properties of saving and loading: round trips after anything a user may do, saves
that fail half way, paths as users give them, and damaged, forged or hostile files.

A file is either refused with a clear error naming it, or loads a model that predicts
valid outputs and, when the file still holds the original's weights, network and fitted
attributes, the original's exact outputs. Zip bombs and files that could exhaust
memory are loaded in a child process by ``test_isolated.py``.
"""

import contextlib
import errno
import io
import json
import os
import pickle
import resource
import signal
import warnings

import joblib
import keras
import numpy as np
import pytest
from _marks import once_on_jax, process_fixture
from _properties import (
    FIXTURE_KINDS,
    assert_clear,
    assert_same_fingerprint,
    check_orderings,
    either,
    examples,
    fingerprint,
    fit_tiny,
    fitted,
    probe,
    refused,
    same_model,
    saved,
    set_field,
    sorting,
    strings,
    with_member,
    with_metadata,
    zip_build,
    zip_field_offsets,
    zip_members,
)
from hypothesis import given
from hypothesis import strategies as st

import skptr
from skptr import NeuralStackTransducer, PointerNetworkOrderer


@process_fixture
def folder(tmp_path_factory):
    """A folder whose files the properties name uniquely."""
    return tmp_path_factory.mktemp("files")


_COUNTER = iter(range(10**9))


def _new_path(folder, suffix=".skptr"):
    return folder / f"f{next(_COUNTER)}{suffix}"


# ------------------------------------------------------------------ round trips
_CHANGES = {
    "pointer": [
        {"hidden_size": 16},
        {"cell": "gru"},
        {"attention": "dot"},
        {"num_layers": 2},
        {"num_layers": 2, "decoder_layers": 1},
        {"bidirectional": False},
        {"n_glimpses": 1},
        {"logit_clip": 10.0},
        {"cycle": "directed"},
        {"encoder": "attention"},
    ],
    "transducer": [
        {"hidden_size": 16},
        {"cell": "gru"},
        {"memory": "queue"},
        {"memory": None},
        {"embedding_dim": 8},
        {"memory_width": 8},
    ],
}


def _round_trip(model, via, folder):
    if via == "pickle":
        return pickle.loads(pickle.dumps(model))
    path = _new_path(folder, ".joblib" if via == "joblib" else ".skptr")
    if via == "joblib":
        joblib.dump(model, path)
        return joblib.load(path)
    model.save(path)
    return skptr.load(path)


_FINGERPRINTS = {}


def _fingerprint_of_fitted(kind):
    if kind not in _FINGERPRINTS:
        _FINGERPRINTS[kind] = fingerprint(fitted(kind), probe(kind))
    return _FINGERPRINTS[kind]


@examples(4)
@given(data=st.data())
def test_a_model_changed_after_fit_predicts_and_round_trips_as_fitted(folder, data):
    kind = data.draw(st.sampled_from(sorted(FIXTURE_KINDS)), label="kind")
    via = data.draw(st.sampled_from(["save", "joblib", "pickle"]), label="via")
    family = FIXTURE_KINDS[kind][0]
    change = data.draw(st.sampled_from([{}, *_CHANGES[family]]), label="set_params")
    model = fitted(kind)
    before = _fingerprint_of_fitted(kind)
    params = model.get_params()
    model.set_params(**change)
    try:
        assert_same_fingerprint(before, fingerprint(model, probe(kind)))
        loaded = _round_trip(model, via, folder)
        assert loaded.get_params() == model.get_params()
        assert_same_fingerprint(before, fingerprint(loaded, probe(kind)))
    finally:
        model.set_params(**params)


def test_an_unfitted_model_round_trips_and_stays_unfitted(folder):
    path = _new_path(folder)
    PointerNetworkOrderer(hidden_size=3).save(path)
    loaded = skptr.load(path)
    assert loaded.get_params()["hidden_size"] == 3
    refused(lambda: loaded.predict([[1.0, 2.0]]))


# ------------------------------------------------------ saves that fail half way
class _FailingWriter:
    """A file that writes ``budget`` bytes, then raises ``error``."""

    def __init__(self, handle, budget, error):
        self._handle, self._budget, self._error = handle, budget, error

    def write(self, data):
        data = bytes(data)
        if len(data) > self._budget:
            self._handle.write(data[: self._budget])
            self._handle.flush()
            raise self._error
        self._budget -= len(data)
        return self._handle.write(data)

    def __getattr__(self, name):
        return getattr(self._handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self._handle.close()

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
def _writes_fail_in(monkeypatch, directory, budget, error):
    """Make files opened for writing inside ``directory`` fail after ``budget`` bytes."""
    real_open = io.open
    directory = os.path.abspath(directory) + os.sep

    def failing_open(file, mode="r", *args, **kwargs):
        handle = real_open(file, mode, *args, **kwargs)
        if any(flag in mode for flag in "wax+") and _opened_path(file).startswith(directory):
            return _FailingWriter(handle, budget, error)
        return handle

    with monkeypatch.context() as patch:
        patch.setattr("builtins.open", failing_open)
        patch.setattr("io.open", failing_open)
        yield


@contextlib.contextmanager
def _file_size_limit(limit):
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)


@contextlib.contextmanager
def _failure(name, monkeypatch, directory, budget):
    if name == "disk full":
        error = OSError(errno.ENOSPC, "No space left on device")
        with _writes_fail_in(monkeypatch, directory, budget, error):
            yield
    elif name == "Ctrl-C":
        with _writes_fail_in(monkeypatch, directory, budget, KeyboardInterrupt()):
            yield
    elif name == "network save raises":

        def broken(*args, **kwargs):
            raise OSError(errno.EIO, "simulated failure saving the network")

        with monkeypatch.context() as patch:
            patch.setattr(keras.Model, "save", broken)
            patch.setattr(keras.Model, "save_weights", broken)
            yield
    elif name == "zip member write raises":
        import zipfile

        real = zipfile.ZipFile.writestr

        def writestr(self, name, *args, **kwargs):
            if str(getattr(name, "filename", name)).endswith("network.keras"):
                raise OSError(errno.EIO, "simulated failure writing network.keras")
            return real(self, name, *args, **kwargs)

        with monkeypatch.context() as patch:
            patch.setattr(zipfile.ZipFile, "writestr", writestr)
            yield
    elif name == "file size limit":
        with _file_size_limit(budget):
            yield
    else:  # a read-only directory
        os.chmod(directory, 0o555)
        try:
            yield
        finally:
            os.chmod(directory, 0o755)


@examples(8)
@given(
    kind=st.sampled_from(["pointer", "stack"]),
    failure=st.sampled_from(
        [
            "disk full",
            "Ctrl-C",
            "network save raises",
            "zip member write raises",
            "file size limit",
            "read-only directory",
        ]
    ),
    budget=st.integers(1, 20000),
)
def test_a_failed_save_leaves_the_previous_file_as_it_was(folder, kind, failure, budget):
    directory = _new_path(folder, "")
    directory.mkdir()
    path = directory / "model.skptr"
    old = saved("stack" if kind == "pointer" else "pointer")
    path.write_bytes(old)
    model = fitted(kind)
    error = None
    with pytest.MonkeyPatch.context() as monkeypatch:
        try:
            with _failure(failure, monkeypatch, directory, budget):
                model.save(path)
        except (Exception, KeyboardInterrupt) as exc:
            error = exc
    assert sorted(os.listdir(directory)) == ["model.skptr"], "a temporary file was left"
    if error is not None:
        assert path.read_bytes() == old, f"{error!r} changed the previous file"
    else:  # the simulated failure did not apply (root ignores a directory's mode)
        same_model(skptr.load(path), model)


@pytest.mark.parametrize("target", ["a directory", "a missing directory", None, 3.5])
def test_saving_where_no_file_can_be_written_is_refused(folder, target):
    if target == "a directory":
        target = _new_path(folder, "")
        target.mkdir()
    elif target == "a missing directory":
        target = folder / "missing" / "m.skptr"
    allowed = (IsADirectoryError, PermissionError)
    refused(lambda: fitted("pointer").save(target), allowed=allowed)


@pytest.mark.parametrize(
    "change",
    [
        lambda: {"callbacks": [keras.callbacks.History()]},
        lambda: {"random_state": np.random.RandomState(0)},
    ],
    ids=["callbacks", "a RandomState"],
)
def test_values_a_file_cannot_hold_are_refused_before_writing(folder, change):
    model = fitted("pointer")
    params = model.get_params()
    path = _new_path(folder)
    try:
        model.set_params(**change())
        refused(lambda: model.save(path))
    finally:
        model.set_params(**params)
    assert not path.exists()


def test_saving_through_a_symbolic_link_writes_its_target_or_refuses(folder):
    target = _new_path(folder)
    target.write_bytes(saved("stack"))
    link = _new_path(folder)
    link.symlink_to(target)
    model = fitted("pointer")
    try:
        model.save(link)
    except Exception as exc:
        assert_clear(exc, allowed=(OSError,))
        assert link.is_symlink() and target.read_bytes() == saved("stack")
        return
    assert link.is_symlink(), "the link was replaced by a regular file"
    same_model(skptr.load(target), model)


@pytest.mark.parametrize(
    ("kind", "change"),
    [("pointer", {"hidden_size": 16}), ("stack", {"memory": "queue"})],
)
@once_on_jax  # on TensorFlow, test_saving's warm starts after changed settings
def test_a_warm_start_after_a_size_change_rebuilds_or_refuses(kind, change):
    model = fit_tiny(kind)
    name = next(iter(change))
    model.set_params(warm_start=True, **change)
    data = sorting() if FIXTURE_KINDS[kind][0] == "pointer" else strings()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = either(lambda: model.fit(*data), mention=name)
    if result is not None:
        assert model.network_params_[name] == change[name], "kept training the old network"
        assert any(name in str(w.message) for w in caught), "rebuilt without a warning"


TINY_TRANSDUCER_FAST = {
    "hidden_size": 4,
    "embedding_dim": 2,
    "memory_width": 2,
    "n_init": 1,
    "epochs": 1,
    "batch_size": 32,
    "random_state": 0,
}


class _Table:
    """A one-column table of strings, converted as pandas converts a DataFrame."""

    def __init__(self, values):
        self._values = np.asarray(values, dtype=object).reshape(-1, 1)

    def __array__(self, dtype=None, copy=None):
        return self._values if dtype is None else self._values.astype(dtype)

    def __len__(self):
        return len(self._values)

    @property
    def shape(self):
        return self._values.shape


def _tables():
    yield "array", lambda values: np.asarray(values, dtype=object).reshape(-1, 1)
    yield "table", _Table
    try:
        import pandas
    except ImportError:
        return
    yield "DataFrame", lambda values: pandas.DataFrame({"text": values})


@pytest.mark.parametrize(
    ("name", "table"),
    [pytest.param(name, table, id=name) for name, table in _tables()],
)
def test_a_one_column_table_of_strings_is_refused_or_read_as_strings(name, table):
    X, y = strings()
    model = either(lambda: NeuralStackTransducer(**TINY_TRANSDUCER_FAST).fit(table(X), table(y)))
    if model is not None:
        outputs = model.predict(table(X[:4]))
        assert all(isinstance(o, str) for o in outputs), "each row read as one token"


# ------------------------------------------------------------------ damaged files
def _judge_load(path, kind):
    """A file is refused clearly naming it, or loads a model that predicts; when it
    holds the original's weights, network and fitted attributes it is the original."""
    model = either(lambda: skptr.load(path), mention=str(path))
    if model is None:
        return
    original = fitted(kind)
    try:
        same_model(model, original)
        return
    except AssertionError:
        pass
    X = probe(kind)
    outputs = either(lambda: model.predict(X))
    if outputs is not None and FIXTURE_KINDS[kind][0] == "pointer":
        check_orderings(outputs, [len(x) for x in X])
    elif outputs is not None:
        assert len(outputs) == len(X)


@examples(30)
@given(kind=st.sampled_from(["pointer", "stack"]), cut=st.floats(0, 1, exclude_max=True))
def test_a_truncated_file_is_refused_naming_it(folder, kind, cut):
    data = saved(kind)
    path = _new_path(folder)
    path.write_bytes(data[: int(len(data) * cut)])
    refused(lambda: skptr.load(path), mention=str(path))


@examples(30)
@given(
    kind=st.sampled_from(["pointer", "stack"]),
    where=st.floats(0, 1, exclude_max=True),
    mask=st.integers(1, 255),
)
def test_a_flipped_byte_is_refused_or_changes_nothing(folder, kind, where, mask):
    data = bytearray(saved(kind))
    data[int(len(data) * where)] ^= mask
    path = _new_path(folder)
    path.write_bytes(bytes(data))
    _judge_load(path, kind)


_FIELDS = [
    "eocd.entries",
    "eocd.cd_size",
    "eocd.cd_offset",
    "cd[skptr.json].offset",
    "cd[network.keras].offset",
    "cd[skptr.json].name_length",
    "local[network.keras].name_length",
    "cd[network.keras].crc",
    "cd[skptr.json].usize",
    "cd[skptr.json].csize",
    "local[skptr.json].usize",
    "cd[network.keras].usize",
    "cd[skptr.json].method",
    "local[skptr.json].flags",
]


@examples(30)
@given(
    kind=st.sampled_from(["pointer", "stack"]),
    field=st.sampled_from(_FIELDS),
    value=st.one_of(
        st.sampled_from([0, 1, 14, 99, 2**16 - 1, 2**30, 2**32 - 1]), st.integers(0, 2**32 - 1)
    ),
)
def test_forged_zip_records_are_refused_or_change_nothing(folder, kind, field, value):
    data = saved(kind)
    offset, width = zip_field_offsets(data)[field]
    path = _new_path(folder)
    path.write_bytes(set_field(data, offset, width, value % 2 ** (8 * width)))
    _judge_load(path, kind)


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=4),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=6,
)
#: Encoded values of the file format's own kinds, with hostile contents.
_ENCODED = st.sampled_from(
    [
        {"__float__": "nan"},
        {"__float__": "1e999"},
        {"__float__": "x"},
        {"__tuple__": [8]},
        {"__ndarray__": 8, "dtype": "<i8", "shape": []},
        {"__ndarray__": [1], "dtype": "<i8", "shape": [10**12]},
        {"__ndarray__": [], "dtype": "<i8", "shape": [2**40, 2**40]},
        {"__ndarray__": ["a"], "dtype": "<U1000000000", "shape": [1]},
        {"__dict__": [[["k"], 1]]},
        {"__object_array__": [1], "shape": [10**9]},
        {"__object_array__": ["a", "a"], "shape": [2]},
        {"__object_array__": [["a"], "b"], "shape": [2]},
        {"__ndarray__": [0.5], "dtype": "<f8", "shape": [10**9]},
        [[[[[[[[1]]]]]]]],
        10**7,
        2**70,
        10**400,
        -1,
        16,
        "gru",
        "queue",
        "|O",
    ]
)


def _metadata_edit(section, key, value):
    def edit(metadata):
        if section is None:
            where = metadata
        elif section == "network_params_":
            entry = metadata["state"].get("network_params_")
            pairs = entry.get("__dict__") if isinstance(entry, dict) else None
            if not isinstance(pairs, list):
                metadata["state"]["network_params_"] = {"__dict__": [[key, value]]}
                return
            for pair in pairs:
                if pair[0] == key:
                    pair[1] = value
                    return
            pairs.append([key, value])
            return
        else:
            where = metadata[section]
        if value is _REMOVE:
            where.pop(key, None)
        else:
            where[key] = value

    return edit


_REMOVE = object()


@examples(40)
@given(data=st.data())
def test_edited_metadata_is_refused_or_loads_a_working_model(folder, data):
    kind = data.draw(st.sampled_from(["pointer", "stack"]), label="kind")
    metadata = json.loads(zip_members(saved(kind))["skptr.json"])
    section = data.draw(st.sampled_from([None, "params", "state", "network_params_"]))
    if section == "network_params_":
        keys = [pair[0] for pair in metadata["state"]["network_params_"]["__dict__"]]
    else:
        keys = list(metadata if section is None else metadata[section])
    key = data.draw(st.sampled_from([*keys, "extra"]), label="key")
    value = data.draw(st.one_of(_JSON, _ENCODED, st.just(_REMOVE)), label="value")
    if value is _REMOVE and section == "network_params_":
        value = None
    path = _new_path(folder)
    path.write_bytes(with_metadata(saved(kind), _metadata_edit(section, key, value)))
    _judge_load(path, kind)


_HOSTILE_TEXTS = {
    "nested 200000 deep": "[" * 200000 + "]" * 200000,
    "not utf-8": b"\xff\xfe" * 100,
    "a 5000-digit number": '{"hidden_size": ' + "9" * 5000 + "}",
    "NaN literal": '{"format": NaN}',
    "empty": "",
}


@pytest.mark.parametrize("name", list(_HOSTILE_TEXTS))
def test_hostile_metadata_text_is_refused_naming_the_file(folder, name):
    text = _HOSTILE_TEXTS[name]
    text = text if isinstance(text, bytes) else text.encode()
    path = _new_path(folder)
    path.write_bytes(with_member(saved("pointer"), "skptr.json", text))
    refused(lambda: skptr.load(path), mention=str(path))


@pytest.mark.parametrize(
    "edit",
    [
        lambda text: text.replace(
            '"hidden_size": 8', '"hidden_size": ' + "[" * 5000 + "8" + "]" * 5000
        ),
        lambda text: text.replace(
            '"random_state": 0', '"random_state": ' + '{"__tuple__": [' * 5000 + "0" + "]}" * 5000
        ),
        lambda text: text.replace('"learning_rate": 0.003', '"learning_rate": NaN'),
        lambda text: text.replace('"clipnorm": 1.0', '"clipnorm": Infinity'),
        lambda text: text.replace('"hidden_size": 8', '"hidden_size": 8, "hidden_size": 16'),
    ],
    ids=["nested list", "nested tuples", "NaN", "Infinity", "repeated key"],
)
def test_metadata_that_json_can_parse_but_no_save_writes_is_refused(folder, edit):
    members = zip_members(saved("pointer"))
    text = json.dumps(json.loads(members["skptr.json"]))
    changed = edit(text)
    assert changed != text
    path = _new_path(folder)
    path.write_bytes(with_member(saved("pointer"), "skptr.json", changed.encode()))
    refused(lambda: skptr.load(path), mention=str(path))


def _network(kind, transform):
    """The saved ``kind`` model with its ``network.keras`` members changed."""
    data = saved(kind)
    members = zip_members(zip_members(data)["network.keras"])
    return with_member(data, "network.keras", zip_build(transform(members)))


def _h5(edit):
    def transform(members):
        import h5py

        buffer = io.BytesIO(members["model.weights.h5"])
        with h5py.File(buffer, "r+") as handle:
            names = []
            handle.visititems(lambda n, item: names.append(n) if hasattr(item, "shape") else None)
            edit(handle, next(n for n in names if not n.startswith("optimizer")))
        members["model.weights.h5"] = buffer.getvalue()
        return members

    return transform


def _set_weights(value):
    def edit(handle, name):
        handle[name][...] = value

    return edit


def _replace_dataset(make):
    def edit(handle, name):
        old = handle[name][...]
        del handle[name]
        make(handle, name, old)

    return edit


def _config(edit):
    def transform(members):
        members["config.json"] = json.dumps(edit(json.loads(members["config.json"]))).encode()
        return members

    return transform


_NETWORK_DAMAGES = {
    "NaN weights": _h5(_set_weights(np.nan)),
    "1e38 weights": _h5(_set_weights(1e38)),
    "an extra weight": _h5(lambda h, n: h.create_dataset("layers/extra/vars/0", data=np.zeros(3))),
    "a weight declaring 2**40 floats": _h5(
        _replace_dataset(
            lambda h, n, old: h.create_dataset(n, shape=(2**40,), dtype="f4", chunks=(1024,))
        )
    ),
    "float64 weights": _h5(
        _replace_dataset(lambda h, n, old: h.create_dataset(n, data=old.astype("f8")))
    ),
    "string weights": _h5(
        _replace_dataset(
            lambda h, n, old: h.create_dataset(n, data=np.full(old.shape, b"x", "S1"))
        )
    ),
    "garbage weights file": lambda m: {**m, "model.weights.h5": b"\x89HDF" * 1000},
    "truncated weights file": lambda m: {**m, "model.weights.h5": m["model.weights.h5"][:2000]},
    "no weights file": lambda m: {k: v for k, v in m.items() if k != "model.weights.h5"},
    "no config": lambda m: {k: v for k, v in m.items() if k != "config.json"},
    "config a list": _config(lambda v: [v]),
    "config nested 100000 deep": lambda m: {**m, "config.json": b"[" * 100000 + b"]" * 100000},
    "config names another network": _config(
        lambda v: {**v, "registered_name": "skptr>TransducerNetwork"}
    ),
    "config names a Sequential": _config(
        lambda v: {
            **{k: x for k, x in v.items() if k != "registered_name"},
            "class_name": "Sequential",
        }
    ),
}


@pytest.mark.parametrize("kind", ["pointer", "stack"])
@pytest.mark.parametrize("damage", list(_NETWORK_DAMAGES))
def test_a_damaged_network_member_is_refused_or_changes_nothing(folder, kind, damage):
    path = _new_path(folder)
    path.write_bytes(_network(kind, _NETWORK_DAMAGES[damage]))
    _judge_load(path, kind)


@examples(3)
@given(
    kinds=st.sampled_from(
        [
            ("stack", "queue"),
            ("queue", "stack"),
            ("stack", "deque"),
            ("stack", "pointer"),
            ("pointer", "stack"),
            ("pointer", "pointer-cycle"),
        ]
    )
)
def test_the_network_of_another_model_is_refused_or_works(folder, kinds):
    kind, other = kinds
    network = zip_members(saved(other))["network.keras"]
    path = _new_path(folder)
    path.write_bytes(with_member(saved(kind), "network.keras", network))
    _judge_load(path, kind)


@pytest.mark.parametrize(
    ("name", "make", "expect"),
    [
        ("empty file", lambda d: b"", "error"),
        ("a text file", lambda d: b"hello\n" * 100, "error"),
        ("an empty zip", lambda d: zip_build({}), "error"),
        (
            "not a zip inside",
            lambda d: with_member(d, "network.keras", b"not a zip" * 100),
            "error",
        ),
        ("no network", lambda d: with_member(d, "network.keras", None), "error"),
        (
            "two skptr.json",
            lambda d: zip_build([("skptr.json", b"{}"), *zip_members(d).items()]),
            "either",
        ),
        (
            "10000 extra members",
            lambda d: zip_build(
                [*zip_members(d).items(), *((f"m{i}", b"") for i in range(10000))]
            ),
            "either",
        ),
        ("stored", lambda d: zip_build(zip_members(d), compression=0), "either"),
        (
            "../escape",
            lambda d: zip_build([*zip_members(d).items(), ("../escape", b"x")]),
            "either",
        ),
    ],
)
def test_files_that_are_not_saved_models_are_refused(folder, name, make, expect):
    path = _new_path(folder)
    path.write_bytes(make(saved("pointer")))
    if expect == "error":
        refused(lambda: skptr.load(path), mention=str(path))
    else:
        _judge_load(path, "pointer")
    assert not (folder.parent / "escape").exists()


@pytest.mark.parametrize("target", ["missing", "a directory", None, 3.5, "/dev/zero"])
def test_load_refuses_what_is_not_a_path_to_a_regular_file(folder, target):
    if target == "missing":
        target = _new_path(folder)
    elif target == "a directory":
        target = folder
    refused(lambda: skptr.load(target), allowed=(IsADirectoryError, PermissionError))


def test_load_reads_a_file_object_or_refuses_it():
    either(
        lambda: skptr.load(io.BytesIO(saved("pointer"))),
        lambda model: same_model(model, fitted("pointer")),
    )
