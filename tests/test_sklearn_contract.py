"""Sequence-aware twins of the scikit-learn checks that cannot run on flat data.

Each test here covers the property of a check listed in ``test_sklearn_checks.py`` as an
expected failure, using real sequence data and orderings.
"""

import copy

import joblib
import numpy as np
import pytest
from _marks import once, process_fixture
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from skptr import NeuralStackTransducer, PointerNetworkOrderer
from skptr.datasets import make_convex_hull, make_sorting, make_transduction
from skptr.preprocessing import SequenceScaler

PARAMS = {"hidden_size": 8, "epochs": 1, "batch_size": 64, "random_state": 0}  # one batch


@process_fixture
def data():
    X, y = make_sorting(n_samples=64, n_steps=6, random_state=0)
    return X, y


@process_fixture
def fitted(data):
    return PointerNetworkOrderer(**PARAMS).fit(*data)


@once
def test_fit_returns_self_and_keeps_params(data):
    estimator = PointerNetworkOrderer(**PARAMS)
    before = copy.deepcopy(estimator.get_params())
    public_before = {k for k in vars(estimator) if not k.startswith("_")}
    assert estimator.fit(*data) is estimator
    assert joblib.hash(estimator.get_params()) == joblib.hash(before)
    added = {k for k in vars(estimator) if not k.startswith("_")} - public_before
    assert added and all(name.endswith("_") for name in added)


def test_read_only_memmapped_input(data, tmp_path):
    X, y = data
    joblib.dump((X, y), tmp_path / "data.joblib")
    X_map, y_map = joblib.load(tmp_path / "data.joblib", mmap_mode="r")
    assert not X_map.flags.writeable
    estimator = PointerNetworkOrderer(**PARAMS).fit(X_map, y_map)
    np.testing.assert_array_equal(estimator.predict(X_map), estimator.predict(X))


def test_one_step_sequences(data):
    X = np.array([[0.5], [0.1], [0.9]])
    estimator = PointerNetworkOrderer(**PARAMS).fit(X, np.zeros((3, 1), dtype=int))
    np.testing.assert_array_equal(estimator.predict(X), [[0], [0], [0]])
    with pytest.raises(ValueError, match=r"y\[1\] holds index 1, outside the 1 positions"):
        PointerNetworkOrderer(**PARAMS).fit(X, [[0], [1], [0]])


@once
def test_n_features_in_is_features_per_step(data, fitted):
    X, _ = data
    assert fitted.n_features_in_ == 1  # 2-D X: one number per step, whatever its length
    assert X.shape[1] == 6
    points, hull = make_convex_hull(n_samples=20, n_points=(4, 7), random_state=0)
    estimator = PointerNetworkOrderer(**PARAMS).fit(points, hull)
    assert estimator.n_features_in_ == 2  # ragged list of (n_i, 2) arrays
    with pytest.raises(ValueError, match="fitted with 1 features per step"):
        fitted.predict(np.zeros((2, 6, 2)))


def test_empty_input_messages(fitted):
    with pytest.raises(ValueError, match=r"X\[0\] is an empty sequence"):
        fitted.predict(np.zeros((12, 0)))
    with pytest.raises(ValueError, match="X holds no samples"):
        fitted.predict(np.zeros((0, 3)))
    with pytest.raises(ValueError, match=r"X\[0\] has zero features per step"):
        fitted.predict(np.zeros((2, 3, 0)))


def test_sample_order_and_subset_invariance(data, fitted):
    X, _ = data
    order = np.random.RandomState(0).permutation(len(X))
    full_predictions = fitted.predict(X)
    full_probabilities = fitted.predict_proba(X)
    np.testing.assert_array_equal(fitted.predict(X[order]), full_predictions[order])
    np.testing.assert_allclose(
        fitted.predict_proba(X[order]), full_probabilities[order], rtol=1e-5, atol=1e-6
    )
    for batch in np.array_split(np.arange(len(X)), 5):
        np.testing.assert_array_equal(fitted.predict(X[batch]), full_predictions[batch])


def test_clone_of_fitted_estimator_is_unfitted(data, fitted):
    X, _ = data
    check_is_fitted(fitted)
    unfitted = clone(fitted)
    assert unfitted.get_params() == fitted.get_params()
    with pytest.raises(NotFittedError):
        unfitted.predict(X)


def test_html_repr_links_to_the_docs(fitted):
    html = fitted._repr_html_()
    assert "skptr.readthedocs.io" in html and "skptr.PointerNetworkOrderer.html" in html


def test_scaler_accepts_other_lengths_rejects_other_features():
    scaler = SequenceScaler().fit(np.arange(12.0).reshape(3, 4))
    assert scaler.transform(np.ones((2, 7))).shape == (2, 7)
    with pytest.raises(ValueError, match="fitted with 1 features per step"):
        scaler.transform(np.ones((2, 7, 3)))


TRANSDUCER = {
    "hidden_size": 8,
    "embedding_dim": 4,
    "memory_width": 4,
    "epochs": 1,
    "curriculum": False,
    "n_init": 1,
    "random_state": 0,
}


@process_fixture
def strings():
    X, y = make_transduction(
        "reversal", n_samples=64, min_length=1, max_length=6, vocab_size=3, random_state=0
    )
    return X, y


@process_fixture
def transducer(strings):
    return NeuralStackTransducer(**TRANSDUCER).fit(*strings)


def test_transducer_fit_returns_self_keeps_params_and_predict_keeps_dict(strings):
    estimator = NeuralStackTransducer(**TRANSDUCER)
    before = copy.deepcopy(estimator.get_params())
    assert estimator.fit(*strings) is estimator
    assert joblib.hash(estimator.get_params()) == joblib.hash(before)
    assert all(
        k.endswith("_") for k in vars(estimator) if not k.startswith("_") and k not in before
    )
    network = estimator.network_
    state = joblib.hash({k: v for k, v in vars(estimator).items() if k != "network_"})
    estimator.predict(strings[0])
    assert joblib.hash({k: v for k, v in vars(estimator).items() if k != "network_"}) == state
    assert estimator.network_ is network


def test_transducer_read_only_memmapped_int_tokens(tmp_path):
    rng = np.random.RandomState(0)
    X = rng.randint(0, 4, size=(40, 5))
    y = X[:, ::-1].copy()
    joblib.dump((X, y), tmp_path / "tokens.joblib")
    X_map, y_map = joblib.load(tmp_path / "tokens.joblib", mmap_mode="r")
    estimator = NeuralStackTransducer(**TRANSDUCER).fit(X_map, y_map)
    predicted = estimator.predict(X_map)
    assert predicted.shape == (40,) and predicted.dtype == object
    assert all(isinstance(p, np.ndarray) for p in predicted)


def test_transducer_empty_sequences(transducer):
    predicted = transducer.predict(["", "ab"])
    assert predicted.shape == (2,) and all(isinstance(p, str) for p in predicted)
    with pytest.raises(ValueError, match="X holds no samples"):
        transducer.predict([])


def test_transducer_rejects_float_tokens_naming_the_sample(transducer):
    with pytest.raises(ValueError, match=r"X\[1\] has a NaN token at position 0"):
        transducer.predict([[1], [float("nan")]])
    with pytest.raises(ValueError, match=r"X\[0\] has the number token 0\.5"):
        transducer.predict(np.array([[0.5, 1.5]]))
    with pytest.raises(TypeError, match="sparse input is not supported"):
        import scipy.sparse

        transducer.predict(scipy.sparse.csr_matrix(np.eye(2)))


def test_transducer_sample_order_subset_invariance_and_idempotence(strings, transducer):
    X, y = strings
    full = transducer.predict(X)
    order = np.random.RandomState(1).permutation(len(X))
    assert transducer.predict(X[order]).tolist() == full[order].tolist()
    for batch in np.array_split(np.arange(len(X)), 4):
        assert transducer.predict(X[batch]).tolist() == full[batch].tolist()
    refit = clone(transducer).fit(X, y).fit(X, y)
    assert refit.predict(X).tolist() == full.tolist()
    with pytest.raises(NotFittedError):
        clone(transducer).predict(X)
