"""skptr.load validates everything it reads and refuses bad files with a ValueError."""

import io
import json
import zipfile

import keras
import numpy as np
import pytest
from _files import METADATA, NETWORK, members, set_network_params, set_state, tampered
from _marks import process_fixture

import skptr
from skptr import NeuralStackTransducer, PointerNetworkOrderer
from skptr.datasets import make_sorting


@process_fixture
def orderer_file(tmp_path_factory):
    X, y = make_sorting(200, n_steps=5, random_state=0)
    estimator = PointerNetworkOrderer(hidden_size=8, epochs=1, batch_size=64, random_state=0)
    path = tmp_path_factory.mktemp("orderer") / "orderer.skptr"
    estimator.fit(X, y).save(path)
    return estimator, path, X


SMALL_TRANSDUCER = {
    "hidden_size": 8,
    "embedding_dim": 4,
    "memory_width": 4,
    "epochs": 1,
    "batch_size": 64,
    "n_init": 1,
    "random_state": 0,
}


@process_fixture
def transducer_file(tmp_path_factory):
    X = ["ab", "ba", "aab", "abb"]
    estimator = NeuralStackTransducer(**SMALL_TRANSDUCER)
    path = tmp_path_factory.mktemp("transducer") / "transducer.skptr"
    estimator.fit(X, [x[::-1] for x in X]).save(path)
    return estimator, path, X


# 1. The network: only the estimator's own network class, and only matching weights.
def test_plain_keras_model_as_network_is_refused(orderer_file, tmp_path):
    _, path, _ = orderer_file
    dense = keras.Sequential([keras.Input((1,)), keras.layers.Dense(2)])
    dense.save(tmp_path / "dense.keras")
    bad = tampered(
        path, tmp_path / "bad.skptr", replace={NETWORK: (tmp_path / "dense.keras").read_bytes()}
    )
    with pytest.raises(
        ValueError, match=r"stored network is a 'Sequential', not the 'skptr>PointerNetwork'"
    ):
        skptr.load(bad)


def test_other_estimators_network_is_refused(orderer_file, transducer_file, tmp_path):
    network = members(transducer_file[1])[NETWORK]
    bad = tampered(orderer_file[1], tmp_path / "bad.skptr", replace={NETWORK: network})
    with pytest.raises(
        ValueError,
        match=r"stored network is a 'skptr>TransducerNetwork', not the 'skptr>PointerNetwork' "
        r"network of a PointerNetworkOrderer",
    ):
        skptr.load(bad)


def _network_config(network_bytes, change):
    """A ``.keras`` archive whose stored configuration is edited in place by ``change``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(network_bytes)) as source:
        with zipfile.ZipFile(buffer, "w") as target:
            for name in source.namelist():
                data = source.read(name)
                if name == "config.json":
                    config = json.loads(data)
                    change(config["config"])
                    data = json.dumps(config).encode()
                target.writestr(name, data)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("values", "detail"),
    [
        ({"hidden_size": 16}, "hidden_size"),
        ({"num_layers": 2}, "num_layers"),
        ({"attention": "dot"}, "attention"),
    ],
    ids=["wider", "more layers", "other attention"],
)
def test_stored_network_must_be_the_one_its_fitted_parameters_describe(
    orderer_file, tmp_path, values, detail
):
    bad = tampered(orderer_file[1], tmp_path / "bad.skptr", set_network_params(**values))
    with pytest.raises(
        ValueError, match=rf"not the one the file's fitted hyperparameters .* differ in {detail}"
    ):
        skptr.load(bad)


@pytest.mark.parametrize(
    ("values", "config", "detail"),
    [
        ({"hidden_size": 16}, {"hidden_size": 16}, "has shape"),
        ({"num_layers": 2}, {"num_layers": 2}, "missing"),
        ({"attention": "dot"}, {"attention": "dot"}, "unexpected 'attention/"),
    ],
    ids=["wider", "more layers", "fewer weights"],
)
def test_weights_must_fit_the_network_the_parameters_describe(
    orderer_file, tmp_path, values, config, detail
):
    network = _network_config(members(orderer_file[1])[NETWORK], lambda c: c.update(config))
    bad = tampered(
        orderer_file[1],
        tmp_path / "bad.skptr",
        set_network_params(**values),
        replace={NETWORK: network},
    )
    with pytest.raises(ValueError, match=rf"stored network weights do not match .*{detail}"):
        skptr.load(bad)


def test_parameters_changed_after_fit_do_not_change_the_stored_network(orderer_file, tmp_path):
    estimator, path, X = orderer_file
    edited = tampered(
        path, tmp_path / "edited.skptr", lambda m: m["params"].update(hidden_size=16)
    )
    loaded = skptr.load(edited)
    assert loaded.hidden_size == 16 and loaded.network_params_["hidden_size"] == 8
    np.testing.assert_array_equal(loaded.predict(X), estimator.predict(X))


def test_a_memory_is_not_loaded_as_another(transducer_file, tmp_path):
    _, path, X = transducer_file
    NeuralStackTransducer(memory="queue", **SMALL_TRANSDUCER).fit(X, X).save(
        tmp_path / "queue.skptr"
    )
    edited = tampered(path, tmp_path / "edited.skptr", set_network_params(memory="queue"))
    with pytest.raises(ValueError, match="differ in memory"):
        skptr.load(edited)
    swapped = tampered(
        path,
        tmp_path / "swapped.skptr",
        replace={NETWORK: members(tmp_path / "queue.skptr")[NETWORK]},
    )
    with pytest.raises(ValueError, match="differ in memory"):
        skptr.load(swapped)


def test_network_file_must_be_present_when_recorded(orderer_file, tmp_path):
    bad = tampered(orderer_file[1], tmp_path / "bad.skptr", replace={NETWORK: None})
    with pytest.raises(ValueError, match=r"records a fitted network but holds no network\.keras"):
        skptr.load(bad)


# 2. Fitted attributes: a schema per estimator.
@pytest.mark.parametrize(
    ("estimator_file", "change", "message"),
    [
        (
            "orderer_file",
            set_state(predict="x"),
            r"holds fitted attributes \['predict'\], which PointerNetworkOrderer does not have",
        ),
        (
            "orderer_file",
            set_state(n_features_in_=3),
            "feature_scale_ holds 1 scales where n_features_in_ is 3",
        ),
        (
            "orderer_file",
            set_state(n_features_in_=True),
            r"n_features_in_ must be an int in \[1, ",
        ),
        ("orderer_file", set_state(ordered_subsets_=1), "ordered_subsets_ must be a bool"),
        (
            "orderer_file",
            set_state(feature_scale_={"__ndarray__": [0.0], "dtype": "<f8", "shape": [1]}),
            "feature_scale_ must be None or a 1-D float array of positive finite numbers",
        ),
        (
            "orderer_file",
            set_state(feature_scale_={"__ndarray__": [1.0, 2.0], "dtype": "<f8", "shape": [2]}),
            "feature_scale_ holds 2 scales where n_features_in_ is 1",
        ),
        (
            "orderer_file",
            set_state(history_={"__dict__": [["loss", ["x"]]]}),
            "history_ must be a dict of str to lists of numbers",
        ),
        (
            "orderer_file",
            lambda m: m["state"].pop("n_iter_"),
            r"lacks the fitted attributes \['n_iter_'\] of a fitted PointerNetworkOrderer",
        ),
        (
            "transducer_file",
            set_state(input_vocabulary_={"__object_array__": ["a", ["b"]], "shape": [2]}),
            "input_vocabulary_ must be a 1-D object array of distinct hashable tokens",
        ),
        (
            "transducer_file",
            set_state(input_vocabulary_={"__object_array__": ["a", "b", "c"], "shape": [3]}),
            r"fitted hyperparameters .* differ in n_input_tokens",
        ),
        ("transducer_file", set_state(_target_kind="set"), "_target_kind must be one of"),
        ("transducer_file", set_state(_target_dtype="no dtype"), "_target_dtype must be None or"),
        (
            "transducer_file",
            set_state(_max_target_ratio={"__float__": "inf"}),
            r"_max_target_ratio must be a number in \[0, ",
        ),
        (
            "transducer_file",
            set_state(state_bptt_steps_=-1),
            r"state_bptt_steps_ must be None or an int in \[0, 2147483647\], got -1",
        ),
        (
            "transducer_file",
            set_state(state_bptt_steps_=2**70),
            r"state_bptt_steps_ must be None or an int in \[0, 2147483647\], got 1180",
        ),
        ("transducer_file", set_state(_max_target_ratio=1e308), "_max_target_ratio must be a"),
        ("transducer_file", set_state(_max_target_ratio=10**400), "_max_target_ratio must be a"),
        (
            "transducer_file",
            set_state(input_vocabulary_={"__object_array__": ["a", "a"], "shape": [2]}),
            "input_vocabulary_ must be a 1-D object array of distinct hashable tokens",
        ),
        (
            "transducer_file",
            set_state(gate_noise_start_=1.5),
            r"gate_noise_start_ must be a float in \[0, 1\], got 1.5",
        ),
    ],
    ids=[
        "shadows a method",
        "wrong n_features_in_",
        "bool n_features_in_",
        "int ordered_subsets_",
        "zero feature_scale_",
        "feature_scale_ of another width",
        "str loss",
        "missing attribute",
        "unhashable token",
        "wrong vocabulary size",
        "unknown target kind",
        "bad dtype",
        "infinite ratio",
        "negative truncation",
        "huge truncation",
        "huge ratio",
        "ratio beyond a float",
        "repeated token",
        "bad noise start",
    ],
)
def test_fitted_attributes_follow_the_schema(request, tmp_path, estimator_file, change, message):
    path = request.getfixturevalue(estimator_file)[1]
    with pytest.raises(ValueError, match=message):
        skptr.load(tampered(path, tmp_path / "bad.skptr", change))


def test_unfitted_file_holds_no_fitted_attributes(tmp_path):
    path = tmp_path / "unfitted.skptr"
    PointerNetworkOrderer().save(path)
    bad = tampered(path, tmp_path / "bad.skptr", set_state(n_iter_=1))
    with pytest.raises(ValueError, match=r"holds fitted attributes \['n_iter_'\] but no network"):
        skptr.load(bad)


# 3. Hyperparameters: the estimator's own names, validated by the estimator.
@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"hidden_size": "64"}, r"invalid hyperparameters: The 'hidden_size' parameter"),
        ({"learning_rate": {"__float__": "nan"}}, r"invalid hyperparameters: .*'learning_rate'"),
        ({"cell": "transformer"}, r"invalid hyperparameters: The 'cell' parameter"),
        ({"memory": "stack"}, r"holds parameters \['memory'\], which PointerNetworkOrderer does"),
        ({"callbacks": []}, "sets callbacks, which a skptr file cannot hold"),
    ],
    ids=["str hidden_size", "nan learning_rate", "unknown cell", "foreign name", "callbacks"],
)
def test_hyperparameters_are_validated(tmp_path, params, message):
    path = tmp_path / "unfitted.skptr"
    PointerNetworkOrderer().save(path)
    bad = tampered(path, tmp_path / "bad.skptr", lambda m: m["params"].update(params))
    with pytest.raises(ValueError, match=message):
        skptr.load(bad)


# 4. and 5. The metadata itself: a JSON object with exactly the expected entries.
@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        (b"[1, 2]", "skptr.json holds a JSON list, not an object"),
        (b"[" * 200_000 + b"]" * 200_000, "skptr.json is nested too deeply"),
        (b"\xff", "skptr.json is not valid JSON"),
    ],
    ids=["list", "deeply nested", "not utf-8"],
)
def test_metadata_must_be_a_json_object(tmp_path, metadata, message):
    path = tmp_path / "unfitted.skptr"
    PointerNetworkOrderer().save(path)
    bad = tampered(path, tmp_path / "bad.skptr", replace={METADATA: metadata})
    with pytest.raises(ValueError, match=message):
        skptr.load(bad)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda m: m.pop("skptr_version"), r"lacks the required entries \['skptr_version'\]"),
        (lambda m: m.update(extra=1), r"has unexpected entries \['extra'\]"),
        (lambda m: m.update(has_network="yes"), "'has_network' of skptr.json must be a bool"),
        (lambda m: m.update(params=[]), "'params' of skptr.json must be a dict, got a list"),
        (lambda m: m.update(skptr_version=1), "'skptr_version' of skptr.json must be a str"),
    ],
    ids=["missing version", "extra entry", "str has_network", "list params", "int version"],
)
def test_metadata_has_exactly_the_expected_entries(tmp_path, change, message):
    path = tmp_path / "unfitted.skptr"
    PointerNetworkOrderer().save(path)
    with pytest.raises(ValueError, match=message):
        skptr.load(tampered(path, tmp_path / "bad.skptr", change))


def _written_before_the_attention_encoder(metadata):
    """A file as written before ``encoder`` and ``n_heads`` existed."""
    for name in ("encoder", "n_heads"):
        del metadata["params"][name]
    entries = metadata["state"]["network_params_"]["__dict__"]
    entries[:] = [entry for entry in entries if entry[0] not in ("encoder", "n_heads")]


def _without_the_attention_encoder(config):
    for key in ("encoder", "n_heads"):
        del config[key]


def test_files_written_before_the_attention_encoder_still_load(orderer_file, tmp_path):
    estimator, path, X = orderer_file
    network = members(path)[NETWORK]
    old = tampered(
        path,
        tmp_path / "old.skptr",
        _written_before_the_attention_encoder,
        {NETWORK: _network_config(network, _without_the_attention_encoder)},
    )
    loaded = skptr.load(old)
    assert loaded.network_params_["encoder"] == "recurrent"
    assert loaded.get_params()["encoder"] == "recurrent"
    np.testing.assert_array_equal(loaded.predict(X), estimator.predict(X))


def test_pickles_made_before_the_attention_encoder_still_load(orderer_file):
    estimator, _, X = orderer_file
    state = estimator.__getstate__()
    for name in ("encoder", "n_heads"):
        del state[name]
        del state["network_params_"][name]
    old = object.__new__(PointerNetworkOrderer)
    old.__setstate__(state)
    assert old.get_params()["encoder"] == "recurrent"
    np.testing.assert_array_equal(old.predict(X), estimator.predict(X))


@process_fixture
def scaled_orderer():
    """An orderer whose features' largest magnitudes are powers of two, and its file."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-4, 4, (64, 5, 2)) * [1.0, 0.125]
    X[0, 0] = [4.0, -0.5]
    estimator = PointerNetworkOrderer(hidden_size=8, epochs=1, random_state=0)
    estimator.fit(X, np.argsort(X[..., 0], axis=1))
    np.testing.assert_array_equal(estimator.feature_scale_, [4.0, 0.5])
    return estimator, X


def test_files_and_pickles_written_before_feature_scales_load_unscaled(scaled_orderer, tmp_path):
    estimator, X = scaled_orderer
    path = tmp_path / "scaled.skptr"
    estimator.save(path)

    def unscaled(config):
        del config["input_scale"]

    old_file = tampered(
        path,
        tmp_path / "old.skptr",
        lambda metadata: metadata["state"].pop("feature_scale_"),
        {NETWORK: _network_config(members(path)[NETWORK], unscaled)},
    )
    state = estimator.__getstate__()
    del state["feature_scale_"]
    old_pickle = object.__new__(PointerNetworkOrderer)
    old_pickle.__setstate__(state)
    for old in (skptr.load(old_file), old_pickle):
        # The same weights, and no scaling: as the network was before scales existed.
        assert old.feature_scale_ is None
        np.testing.assert_array_equal(old.predict(X / [4.0, 0.5]), estimator.predict(X))
