"""Replays of hostile uses: saved models that could not be loaded, sizes nobody bounded,
values accepted that should not be, and work validated more than once.

Cases that measure a whole process (its memory and time) run in a subprocess with a
bound; the file-format checks of single members live in ``test_load_validation.py``.
"""

import errno
import json
import math
import os
import re
import struct
import subprocess
import sys
import textwrap
import zipfile
import zlib

import joblib
import numpy as np
import pytest
from _files import METADATA, NETWORK, members, set_network_params, tampered
from _marks import once, process_fixture
from _tasks import reversal as _reversal
from _tasks import sorting as _sorting
from sklearn.utils._param_validation import InvalidParameterError

import skptr
import skptr._limits
from skptr import NeuralStackTransducer, PointerNetworkOrderer
from skptr.memory import _estimator as transducer_module
from skptr.pointer import _codec as pointer_codec_module
from skptr.pointer._sizes import count_orderings
from skptr.preprocessing import TextTokenizer

# One batch for the fixture's 64 samples: the tests here are about what a fit keeps.
POINTER = {"hidden_size": 8, "epochs": 1, "batch_size": 64, "random_state": 0}
TRANSDUCER = {
    "hidden_size": 8,
    "embedding_dim": 4,
    "memory_width": 4,
    "epochs": 1,
    "n_init": 1,
    "random_state": 0,
}


@process_fixture
def orderer():
    X, y = _sorting(64)
    return PointerNetworkOrderer(**POINTER).fit(X, y), X


@process_fixture
def transducer():
    X, y = _reversal(40)
    return NeuralStackTransducer(**TRANSDUCER).fit(X, y), X


# 1. A fitted model remembers how it was built: each change below would build another
# network (other shapes, weights or memory), so any one of them read back in place of the
# fitted hyperparameters fails the predictions.
def test_orderer_changed_after_fit_survives_pickles_and_files(orderer, tmp_path):
    estimator, X = orderer
    expected = estimator.predict(X)
    changes = {"hidden_size": 16, "cell": "gru", "attention": "dot", "num_layers": 2}
    changed = skptr.load(_saved(estimator, tmp_path / "copy.skptr")).set_params(**changes)
    for loaded in (_joblib_copy(changed, tmp_path), skptr.load(_saved(changed, tmp_path / "m"))):
        assert changes.items() <= loaded.get_params().items()
        assert loaded.network_params_ == estimator.network_params_
        np.testing.assert_array_equal(loaded.predict(X), expected)


def test_transducer_changed_after_fit_survives_pickles_and_files(transducer, tmp_path):
    estimator, X = transducer
    expected = estimator.predict(X)
    changes = {"hidden_size": 16, "memory": "queue", "cell": "gru"}
    changed = _joblib_copy(estimator, tmp_path).set_params(**changes)
    for loaded in (_joblib_copy(changed, tmp_path), skptr.load(_saved(changed, tmp_path / "m"))):
        assert changes.items() <= loaded.get_params().items()
        assert loaded.network_params_ == estimator.network_params_
        np.testing.assert_array_equal(loaded.predict(X), expected)
        assert len(loaded.memory_trace(X[:1])) == 1


@once
def test_a_refit_uses_the_new_parameters(orderer):
    estimator, X = orderer
    refitted = _copy(estimator).set_params(hidden_size=4).fit(X, np.argsort(X, axis=1))
    assert refitted.network_params_["hidden_size"] == 4
    assert estimator.network_params_["hidden_size"] == 8


def test_warm_start_keeps_the_fitted_network(orderer):
    estimator, X = orderer
    # Training settings may change between warm fits; network settings may not
    # (test_saving.py::test_warm_start_after_changed_network_settings_refuses).
    warm = _copy(estimator).set_params(warm_start=True, learning_rate=0.01, batch_size=16)
    warm.fit(X, np.argsort(X, axis=1))
    assert warm.network_params_ == estimator.network_params_
    assert warm.n_iter_ == estimator.n_iter_ + 1


def _copy(estimator):
    return joblib.load(_joblib_dump(estimator))


def _joblib_dump(estimator, directory=None):
    import tempfile

    directory = directory or tempfile.mkdtemp()
    path = os.path.join(directory, "model.joblib")
    joblib.dump(estimator, path)
    return path


def _joblib_copy(estimator, directory):
    return joblib.load(_joblib_dump(estimator, directory))


def _saved(estimator, path):
    estimator.save(path)
    return path


# 2. Atomic saves.
class _FailingWriter:
    """A file object that writes half of what it is given, then fails as a full disk."""

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stream.close()

    def write(self, data):
        self.stream.write(data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_failed_save_leaves_the_previous_file_byte_for_byte(orderer, tmp_path, monkeypatch):
    estimator, _ = orderer
    path = _saved(estimator, tmp_path / "model.skptr")
    before = path.read_bytes()
    real_fdopen = os.fdopen
    monkeypatch.setattr(
        skptr._persistence.os, "fdopen", lambda *a, **k: _FailingWriter(real_fdopen(*a, **k))
    )
    with pytest.raises(OSError, match="No space left"):
        estimator.save(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.skptr"]  # no temporary left


def test_a_save_replaces_the_file_with_usual_permissions(orderer, tmp_path):
    estimator, X = orderer
    path = tmp_path / "model.skptr"
    path.write_bytes(b"an older file")
    estimator.save(path)
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
    np.testing.assert_array_equal(skptr.load(path).predict(X), estimator.predict(X))


# 3. Limits on every size, before work starts.
@pytest.mark.parametrize(
    ("cls", "params"),
    [
        (PointerNetworkOrderer, {"num_layers": 2**70}),
        (PointerNetworkOrderer, {"n_glimpses": 2**70}),
        (PointerNetworkOrderer, {"hidden_size": 10**400}),
        (PointerNetworkOrderer, {"beam_width": 2**70}),
        (PointerNetworkOrderer, {"epochs": 2**70}),
        (NeuralStackTransducer, {"n_init": 2**70}),
        (NeuralStackTransducer, {"memory_width": 10**7}),
        (NeuralStackTransducer, {"max_output_length": 2**70}),
    ],
    ids=lambda value: next(iter(value)) if isinstance(value, dict) else value.__name__,
)
def test_sizes_no_machine_can_build_are_refused_by_the_parameters(cls, params):
    X, y = _sorting(8) if cls is PointerNetworkOrderer else _reversal(8)
    name = next(iter(params))
    with pytest.raises(InvalidParameterError, match=rf"'{name}' parameter .* in the range"):
        cls(**params).fit(X, y)


@pytest.fixture
def one_gib_machine(monkeypatch):
    monkeypatch.setattr(skptr._limits, "physical_memory", lambda: 2**30)


@pytest.mark.parametrize(
    ("cls", "params", "what"),
    [
        (PointerNetworkOrderer, {"hidden_size": 2**14}, "the network's weights|a training step"),
        (PointerNetworkOrderer, {"hidden_size": 64}, "a training step"),
        (NeuralStackTransducer, {"memory_width": 10**6}, "a training step"),
    ],
)
def test_fits_that_cannot_fit_in_memory_fail_at_once(one_gib_machine, cls, params, what):
    if cls is PointerNetworkOrderer:
        X, y = _sorting(16, n_steps=2000 if params["hidden_size"] == 64 else 5)
    else:
        X, y = _reversal(8)
    estimator = cls(**{**(POINTER if cls is PointerNetworkOrderer else TRANSDUCER), **params})
    with pytest.raises(
        MemoryError, match=rf"({what}) would need about .* GiB .*{next(iter(params))}"
    ):
        estimator.fit(X, y)
    assert not hasattr(estimator, "network_")


def test_beam_width_is_capped_at_the_number_of_orderings(orderer):
    estimator, _ = orderer
    X = np.random.default_rng(1).random((4, 3))
    beam = _copy(estimator).set_params(decode="beam", beam_width=6)  # 3! orderings
    exact = beam.predict(X), beam.predict_proba(X)
    wide = beam.set_params(beam_width=10**6)
    assert count_orderings(3, wide.ordered_subsets_, wide.beam_width) == 6
    np.testing.assert_array_equal(wide.predict(X), exact[0])
    np.testing.assert_allclose(wide.predict_proba(X), exact[1], atol=1e-6)


def test_counting_orderings():
    assert count_orderings(3, False, 10**6) == 6
    assert count_orderings(3, True, 10**6) == 1 + 3 + 6 + 6
    assert count_orderings(1, False, 5) == 1
    assert count_orderings(200, False, 10**4) == 10**4
    assert count_orderings(200, True, 7) == 7


def test_decoding_that_cannot_fit_in_memory_fails_at_once(orderer, one_gib_machine):
    estimator, _ = orderer
    wide = _copy(estimator).set_params(decode="beam", beam_width=10**4)
    X = np.random.default_rng(2).random((1, 2000))
    with pytest.raises(MemoryError, match=r"decoding would need about .*candidates=10000"):
        wide.predict(X)


def test_transducer_decoding_that_cannot_fit_in_memory_fails_at_once(transducer, one_gib_machine):
    estimator, _ = transducer
    long = _copy(estimator).set_params(max_output_length=2**24)
    with pytest.raises(MemoryError, match=r"decoding would need about .*max_output_length"):
        long.predict(["ab"])


def test_memory_estimates_bound_the_real_weights(orderer, transducer):
    for estimator, _ in (orderer, transducer):
        real = estimator.network_.count_params()
        estimate = estimator._as_fitted()._weight_count()
        assert real <= estimate <= 1.5 * real


# 3b. Files: each member's size is checked before it is read. The loads that measure
# the process's time and memory run together in one subprocess.
_LOAD_IN_A_SUBPROCESS = textwrap.dedent(
    """
    import json, resource, sys, time
    import skptr, skptr.memory, skptr.pointer
    results = {}
    for path in sys.argv[1:]:
        # The peak resident size only grows: a load that reads a member whole raises it
        # by about the member's size, whatever the loads before it used.
        peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        try:
            skptr.load(path)
            outcome = "loaded"
        except ValueError as error:
            outcome = str(error)
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before
        results[path] = {"outcome": outcome, "seconds": time.perf_counter() - start,
                         "grown_mib": grown / 1024}
    print(json.dumps(results))
    """
)

GIB_OF_ZEROS_CRC32 = 0x5B64C2B0  # zlib.crc32(bytes(2**30))


def _deflated_gib_of_zeros():
    """A raw deflate stream of 2**30 zero bytes, about a thousandth of that. A full flush
    restarts the compressor, so each MiB deflates to the same self-contained blocks: one
    MiB is compressed and its blocks repeated."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    mib = compressor.compress(bytes(2**20)) + compressor.flush(zlib.Z_FULL_FLUSH)
    return mib * 2**10 + compressor.flush()


def _zip(entries):
    """A zip archive of ``(name, method, crc, size, data)`` entries: each ``data`` is
    written as given and declared as ``size`` bytes compressed with ``method``."""
    body, directory = b"", b""
    for name, method, crc, size, data in entries:
        encoded = name.encode()
        # version needed, flags, method, time, date (1980-01-01), crc, sizes, name, extra
        fields = struct.pack(
            "<HHHHHIIIHH", 20, 0, method, 0, 0x21, crc, len(data), size, len(encoded), 0
        )
        directory += (
            b"PK\x01\x02"
            + struct.pack("<H", 20)
            + fields
            + struct.pack("<HHHII", 0, 0, 0, 0, len(body))
            + encoded
        )
        body += b"PK\x03\x04" + fields + encoded + data
    count = len(entries)
    end = struct.pack("<HHHHIIH", 0, 0, count, count, len(directory), len(body), 0)
    return body + directory + b"PK\x05\x06" + end


def _with_zeroed_gib_member(source, target, name):
    """Copy a skptr file, with member ``name`` replaced by 2**30 deflated zeros."""
    entries = [
        (member, zipfile.ZIP_STORED, zlib.crc32(data), len(data), data)
        for member, data in members(source).items()
        if member != name
    ]
    entries.append(
        (name, zipfile.ZIP_DEFLATED, GIB_OF_ZEROS_CRC32, 2**30, _deflated_gib_of_zeros())
    )
    target.write_bytes(_zip(entries))
    return target


@process_fixture
def hostile_files(orderer, tmp_path_factory):
    """Files that would take a gigabyte to read or to build, and how loading each of them
    went, in one subprocess: its outcome, seconds, and growth of the peak memory."""
    folder = tmp_path_factory.mktemp("hostile")
    path = _saved(orderer[0], folder / "model.skptr")
    files = {
        member: _with_zeroed_gib_member(path, folder / f"{member}.bomb.skptr", member)
        for member in (NETWORK, METADATA)
    }
    files["huge network"] = tampered(
        path, folder / "huge.skptr", set_network_params(hidden_size=2**20)
    )
    result = subprocess.run(
        [sys.executable, "-c", _LOAD_IN_A_SUBPROCESS, *map(str, files.values())],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    loads = json.loads(result.stdout.strip().splitlines()[-1])
    return {key: (file, loads[str(file)]) for key, file in files.items()}


@pytest.mark.parametrize("member", [NETWORK, METADATA])
@once
def test_a_zeroed_gigabyte_member_is_refused_before_it_is_read(hostile_files, member):
    bomb, result = hostile_files[member]
    assert bomb.stat().st_size < 8 * 2**20
    with zipfile.ZipFile(bomb) as archive:  # a well-formed archive that holds a gigabyte
        assert archive.getinfo(member).file_size == 2**30
        with archive.open(member) as stream:
            assert stream.read(2**20) == bytes(2**20)
    assert re.search(r"declares 1,073,741,824 bytes, more than the [\d,]+", result["outcome"])
    assert result["seconds"] < 5
    assert result["grown_mib"] < 200


def test_a_file_declaring_a_huge_network_is_refused_before_building_it(
    orderer, hostile_files, tmp_path
):
    path = _saved(orderer[0], tmp_path / "model.skptr")
    out_of_bounds = tampered(path, tmp_path / "a.skptr", set_network_params(hidden_size=10**7))
    with pytest.raises(ValueError, match=r"invalid hyperparameters in network_params_.*hidden"):
        skptr.load(out_of_bounds)
    _, result = hostile_files["huge network"]
    assert re.search(r"declares a network that cannot be built here: .*GiB", result["outcome"])
    assert result["seconds"] < 10 and result["grown_mib"] < 200


# 4. Every value checked where it enters.
@once
def test_distinct_seeds_give_distinct_fits():
    X, y = _sorting(32)
    weights = {
        seed: PointerNetworkOrderer(**{**POINTER, "random_state": seed}).fit(X, y).network_
        for seed in (0, 2**31 - 1, 2**32 - 1)
    }
    first = weights[0].get_weights()[0]
    assert not np.array_equal(first, weights[2**31 - 1].get_weights()[0])
    assert not np.array_equal(first, weights[2**32 - 1].get_weights()[0])
    with pytest.raises(InvalidParameterError, match="random_state"):
        PointerNetworkOrderer(random_state=2**32).fit(X, y)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("epochs", True),
        ("batch_size", True),
        ("hidden_size", True),
        ("n_iter_no_change", True),
        ("n_glimpses", False),
        ("beam_width", True),
        ("n_candidates", True),
        ("n_rollouts", True),
        ("random_state", True),
    ],
)
def test_booleans_are_not_counts(name, value):
    X, y = _sorting(8)
    with pytest.raises(InvalidParameterError, match=rf"'{name}' .* a number, not a bool"):
        PointerNetworkOrderer(**{name: value}).fit(X, y)
    with pytest.raises(InvalidParameterError, match=rf"'{name}' parameter"):
        PointerNetworkOrderer(**{name: np.bool_(value)}).fit(X, y)


def test_transducer_counts_refuse_booleans_too():
    X, y = _reversal(8)
    with pytest.raises(InvalidParameterError, match=r"'n_init' .* a number, not a bool"):
        NeuralStackTransducer(n_init=True).fit(X, y)


@pytest.mark.parametrize("callbacks", [[1, 2], ["EarlyStopping"], (None,)])
def test_callbacks_must_be_keras_callbacks(callbacks):
    X, y = _sorting(8)
    with pytest.raises(InvalidParameterError, match=r"callbacks\[0\] is a"):
        PointerNetworkOrderer(callbacks=callbacks).fit(X, y)


@pytest.mark.parametrize(
    ("max_steps", "error"),
    [
        (float("nan"), TypeError),
        (None, TypeError),
        ("big", TypeError),
        (True, TypeError),
        (2.5, TypeError),
        (0, ValueError),
        (-3, ValueError),
    ],
    ids=repr,
)
def test_trace_max_steps_is_checked(transducer, max_steps, error):
    estimator, X = transducer
    with pytest.raises(error, match="max_steps must be an int >= 1"):
        estimator.memory_trace(X[:1], max_steps=max_steps)


def test_trace_max_steps_still_guards_long_inputs(transducer):
    estimator, _ = transducer
    with pytest.raises(ValueError, match=r"X\[0\]: its input make a trace of 5 steps"):
        estimator.memory_trace(["abab"], max_steps=np.int64(4))


@pytest.mark.parametrize("split", ["chars", "([", "", 3, None])
def test_tokenizer_options_are_checked(split):
    with pytest.raises(InvalidParameterError, match="'split' parameter of TextTokenizer"):
        TextTokenizer(split=split).fit(["a b"])


def test_tokenizer_splits_on_a_compiled_pattern():
    tokens = TextTokenizer(split=re.compile(r"[-,]")).fit_transform(["a-b,c"])
    assert tokens.tolist() == [("a", "b", "c")]


# 5. Validation once per public call.
def _count_calls(monkeypatch, module, name):
    calls = []
    original = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_orderer_score_validates_each_input_once(orderer, monkeypatch):
    estimator, X = orderer
    y = np.argsort(X, axis=1)
    expected = estimator.score(X, y)
    sequences = _count_calls(monkeypatch, pointer_codec_module, "check_numeric_sequences")
    codecs = _count_calls(monkeypatch, pointer_codec_module.PointerCodec, "of")
    assert estimator.score(X, y) == expected
    assert len(sequences) == 1 and len(codecs) == 1


def test_transducer_score_validates_each_input_once(transducer, monkeypatch):
    estimator, X = transducer
    y = [s[::-1] for s in X]
    expected = estimator.score(X, y)
    from skptr.memory import _codec as transducer_codec_module

    tokens = _count_calls(monkeypatch, transducer_codec_module, "check_token_sequences")
    tokens_here = _count_calls(monkeypatch, transducer_module, "check_token_sequences")
    codecs = _count_calls(monkeypatch, transducer_codec_module.TransducerCodec, "of")
    assert estimator.score(X, y) == expected
    assert len(tokens) + len(tokens_here) == 2 and len(codecs) == 1
    assert math.isclose(expected, skptr.metrics.fine_accuracy(y, estimator.predict(X)))


# Found by fuzzing (the properties of tests/test_properties.py generalise them).
@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"learning_rate": True}, "'learning_rate' .* a number, not a bool"),
        ({"clipnorm": True}, "'clipnorm' .* a number, not a bool"),
        ({"learning_rate": 10**400}, "'learning_rate' .* finite number that a float can hold"),
        ({"dropout": __import__("fractions").Fraction(1, 2)}, "'dropout' .* int or a float"),
    ],
    ids=lambda value: next(iter(value)) if isinstance(value, dict) else "",
)
def test_real_parameters_take_plain_numbers(params, message):
    X, y = _sorting(8)
    with pytest.raises(InvalidParameterError, match=message):
        PointerNetworkOrderer(**params).fit(X, y)


@once
def test_numpy_scalars_work_as_parameters(tmp_path):
    X, y = _sorting(32)
    estimator = PointerNetworkOrderer(
        hidden_size=np.int64(8),
        epochs=np.int32(1),
        learning_rate=np.float32(0.01),
        beam_width=np.uint8(2),
        decode="beam",
        random_state=0,
    ).fit(X, y)
    assert type(estimator.network_params_["hidden_size"]) is int
    loaded = skptr.load(_saved(estimator, tmp_path / "model.skptr"))
    np.testing.assert_array_equal(loaded.predict(X), estimator.predict(X))


@pytest.mark.parametrize("X", [np.array([["1", "2"], ["3", "4"]]), np.zeros((2, 2), "M8[s]")])
def test_texts_and_dates_are_not_numbers(X):
    with pytest.raises(ValueError, match=r"X\[0\] is not numeric"):
        PointerNetworkOrderer().fit(X, [[0, 1], [1, 0]])


def test_non_finite_stored_weights_are_refused(orderer, tmp_path):
    estimator, _ = orderer
    poisoned = _copy(estimator)
    weights = poisoned.network_.get_weights()
    weights[0][...] = np.nan
    poisoned.network_.set_weights(weights)
    with pytest.raises(ValueError, match="weights hold NaN or infinite values"):
        skptr.load(_saved(poisoned, tmp_path / "nan.skptr"))


@pytest.mark.parametrize(
    ("path", "error", "message"),
    [
        (None, TypeError, "path must be a str or a path-like"),
        (3.5, TypeError, "path must be a str or a path-like"),
        ("/dev/zero", ValueError, "is not a regular file"),
    ],
)
def test_load_takes_paths_of_regular_files(path, error, message):
    with pytest.raises(error, match=message):
        skptr.load(path)


@pytest.mark.parametrize("X", [None, (text for text in ["a b"])], ids=["None", "generator"])
def test_tokenizer_needs_a_collection(X):
    with pytest.raises(TypeError, match="X must be a collection of texts"):
        TextTokenizer().fit(X)


def test_metadata_with_a_repeated_key_is_refused(orderer, tmp_path):
    path = _saved(orderer[0], tmp_path / "model.skptr")
    text = members(path)[METADATA].decode()
    repeated = text.replace('"params": {', '"params": {"hidden_size": 64, ', 1)
    bad = tampered(path, tmp_path / "bad.skptr", replace={METADATA: repeated.encode()})
    with pytest.raises(ValueError, match=r"gives the keys \['hidden_size'\] more than once"):
        skptr.load(bad)


@once
def test_small_numpy_integer_types_do_not_overflow_the_estimates():
    X, y = _sorting(32)
    params = {"hidden_size": np.uint8(8), "batch_size": np.uint8(16), "n_glimpses": np.uint8(1)}
    estimator = PointerNetworkOrderer(epochs=1, random_state=0, **params).fit(X, y)
    assert estimator.score(X, y) >= 0


@pytest.mark.parametrize(
    "params",
    [
        {"hidden_size": 32, "num_layers": 2},
        {"hidden_size": 32, "num_layers": 3, "decoder_layers": 1},
        {"hidden_size": 16, "n_heads": 3, "cell": "gru", "n_glimpses": 1},
        {"hidden_size": 128, "num_layers": 3, "attention": "dot"},
        {"hidden_size": 8, "n_heads": 16},
    ],
)
@once
def test_memory_estimates_bound_the_attention_encoders_weights(params):
    estimator = PointerNetworkOrderer(encoder="attention", **params)
    estimator.n_features_in_, estimator.ordered_subsets_ = 2, True
    estimator.feature_scale_ = None
    real = estimator._build_network(0).count_params()
    assert real <= estimator._weight_count() <= 1.5 * real
