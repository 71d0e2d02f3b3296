"""The pickle-free file format: est.save(path) and skptr.load(path)."""

import json
import pickle
import zipfile

import keras
import numpy as np
import pytest
from _files import tampered
from _marks import process_fixture

import skptr
from skptr import PointerNetworkOrderer
from skptr.datasets import make_convex_hull


@process_fixture
def hull_model():
    X, y = make_convex_hull(n_samples=200, n_points=6, random_state=0)
    estimator = PointerNetworkOrderer(hidden_size=8, epochs=2, random_state=0, decode="beam")
    return estimator.fit(X, y), X


def test_round_trip_predicts_identically(hull_model, tmp_path):
    estimator, X = hull_model
    path = tmp_path / "hull.skptr"
    estimator.save(path)
    loaded = skptr.load(path)
    assert type(loaded) is PointerNetworkOrderer
    assert loaded.get_params() == estimator.get_params()
    assert loaded.ordered_subsets_ and loaded.n_features_in_ == 2
    assert loaded.history_ == estimator.history_
    np.testing.assert_array_equal(loaded.predict(X), estimator.predict(X))
    np.testing.assert_array_equal(loaded.predict_proba(X), estimator.predict_proba(X))


def _largest_odds_between_allowed_positions(estimator, X):
    probabilities = estimator.predict_proba(X)
    allowed = probabilities > 0
    smallest = np.where(allowed, probabilities, np.inf).min(axis=-1)
    steps = allowed.any(axis=-1)
    return (probabilities.max(axis=-1)[steps] / smallest[steps]).max()


def test_clipped_logits_survive_files_and_pickles(tmp_path):
    rng = np.random.default_rng(5)
    X = rng.random((64, 5, 2))
    y = np.argsort(X[:, :, 0], axis=1)
    fitted = {}
    for clip in (None, 2.0):
        estimator = PointerNetworkOrderer(
            hidden_size=8, attention="general", logit_clip=clip, epochs=1, random_state=0
        ).fit(X, y)
        kernel = estimator.network_.attention.key_projection.kernel
        kernel.assign(kernel * 1000.0)  # scores far beyond the clip
        fitted[clip] = estimator
    assert _largest_odds_between_allowed_positions(fitted[None], X) > np.exp(4.0)
    # Logits in [-2, 2]: no allowed position is more than e**4 times likelier than
    # another at any step.
    clipped = fitted[2.0]
    assert _largest_odds_between_allowed_positions(clipped, X) <= np.exp(4.0) * 1.001
    clipped.save(tmp_path / "clipped.skptr")
    for loaded in (skptr.load(tmp_path / "clipped.skptr"), pickle.loads(pickle.dumps(clipped))):
        assert loaded.network_.logit_clip == 2.0
        np.testing.assert_array_equal(loaded.predict_proba(X), clipped.predict_proba(X))


def test_file_records_versions_and_plain_data(hull_model, tmp_path):
    estimator, _ = hull_model
    path = tmp_path / "hull.skptr"
    estimator.save(path)
    with zipfile.ZipFile(path) as archive:
        assert set(archive.namelist()) == {"skptr.json", "network.keras"}
        metadata = json.loads(archive.read("skptr.json"))
    assert metadata["skptr_version"] == skptr.__version__
    assert metadata["keras_version"] == keras.__version__
    assert metadata["estimator"] == "PointerNetworkOrderer"
    assert metadata["params"]["hidden_size"] == 8


def test_loaded_estimator_can_continue_training(hull_model, tmp_path):
    estimator, X = hull_model
    path = tmp_path / "hull.skptr"
    estimator.save(path)
    loaded = skptr.load(path).set_params(warm_start=True, epochs=1)
    network = loaded.network_
    _, y = make_convex_hull(n_samples=200, n_points=6, random_state=0)
    loaded.fit(X, y)
    assert loaded.network_ is network
    assert loaded.n_iter_ == 3


def test_unfitted_round_trip(tmp_path):
    path = tmp_path / "unfitted.skptr"
    PointerNetworkOrderer(hidden_size=7, cell="gru").save(path)
    loaded = skptr.load(path)
    assert loaded.hidden_size == 7 and loaded.cell == "gru"
    assert not hasattr(loaded, "network_")


@process_fixture
def hull_file(hull_model, tmp_path_factory):
    path = tmp_path_factory.mktemp("hull") / "hull.skptr"
    hull_model[0].save(path)
    return path


def test_truncated_and_corrupted_files_give_clear_errors(hull_model, hull_file, tmp_path):
    data = hull_file.read_bytes()
    truncated = tmp_path / "truncated.skptr"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="corrupted or truncated"):
        skptr.load(truncated)
    corrupted = tmp_path / "corrupted.skptr"
    middle = len(data) // 2
    corrupted.write_bytes(
        data[:middle] + bytes(b ^ 0xFF for b in data[middle : middle + 64]) + data[middle + 64 :]
    )
    with pytest.raises(ValueError, match=r"skptr file|network cannot be loaded"):
        skptr.load(corrupted)
    not_skptr = tmp_path / "model.pkl"
    not_skptr.write_bytes(pickle.dumps(hull_model[0]))
    with pytest.raises(ValueError, match="not a readable skptr file"):
        skptr.load(not_skptr)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"skptr_version": "0.0.1"}, r"written by skptr 0\.0\.1, which is incompatible"),
        ({"format_version": 99}, "file format version 99"),
        ({"keras_version": "2.15.0"}, r"Keras 2\.15\.0"),
        ({"estimator": "os.system"}, r"unknown estimator class 'os\.system'"),
    ],
    ids=["old skptr", "future format", "other Keras", "not a skptr class"],
)
def test_other_versions_and_classes_are_refused(hull_file, tmp_path, change, message):
    bad = tampered(hull_file, tmp_path / "bad.skptr", lambda m: m.update(change))
    with pytest.raises(ValueError, match=message):
        skptr.load(bad)


def test_values_that_are_not_plain_data_cannot_be_saved(tmp_path):
    with pytest.raises(TypeError, match="callbacks cannot be stored"):
        PointerNetworkOrderer(callbacks=[keras.callbacks.History()]).save(tmp_path / "a")
    with pytest.raises(TypeError, match="random_state is a RandomState"):
        PointerNetworkOrderer(random_state=np.random.RandomState(0)).save(tmp_path / "b")
