"""Hostile inputs that used to slip through: each is now a clear error naming the problem
(and the sample where there is one), raised before the estimator changes.

- a cost returning finite but huge values ended training in "the training loss became
  nan"; a complex cost lost its imaginary part with only a NumPy warning;
- saving into a missing directory named skptr's internal temporary file;
- a DataFrame of several columns of texts was read as sequences of whole texts.
"""

import os

import numpy as np
import pandas as pd
import pytest
from _marks import once
from _tasks import reversal

from skptr import NeuralStackTransducer, PointerNetworkOrderer
from skptr.pointer._costs import MAX_COST_MAGNITUDE, call_cost

POINTER = {"hidden_size": 8, "encoder": "attention", "epochs": 1, "batch_size": 16}
TRANSDUCER = {
    "hidden_size": 8,
    "embedding_dim": 4,
    "memory_width": 4,
    "epochs": 1,
    "batch_size": 8,
    "n_init": 1,
    "random_state": 0,
}


def _points(n_samples=16, n_points=4, seed=0):
    return np.random.default_rng(seed).random((n_samples, n_points, 2))


def _huge(X, orderings):
    return np.where(np.arange(len(X)) == 2, 1e300, 1.0)


def _complex(X, orderings):
    return np.ones(len(X)) + 1j


def _weights(estimator):
    return [w.copy() for w in estimator.network_.get_weights()]


# ----------------------------------------------------------------------------- costs
@pytest.mark.parametrize(
    ("cost", "message"),
    [
        pytest.param(
            _huge,
            r"cost _huge returned 1e\+300 for X\[2\] .*float32.*must not exceed 1e\+30: "
            r"rescale the cost",
            id="huge",
        ),
        pytest.param(
            _complex,
            r"cost _complex must return an array of numbers.*complex numbers",
            id="complex",
        ),
    ],
)
def test_a_huge_or_complex_cost_is_refused_and_the_estimator_kept(cost, message):
    X = _points()
    est = PointerNetworkOrderer(cost=cost, random_state=0, **POINTER)
    with pytest.raises(ValueError, match=message):
        est.fit(X)
    assert not hasattr(est, "network_")
    est.set_params(cost="path").fit(X)
    predictions, history, weights = est.predict(X), est.history_, _weights(est)
    with pytest.raises(ValueError, match=message):
        est.set_params(cost=cost, warm_start=True).fit(X)
    assert est.history_ == history
    for old, new in zip(weights, est.network_.get_weights(), strict=True):
        np.testing.assert_array_equal(old, new)
    np.testing.assert_array_equal(est.set_params(cost="path").predict(X), predictions)


def _call(values, sample_ids=(4, 5, 6)):
    orderings = np.array([[0, 1], [1, 0], [0, -1]])
    return call_cost(lambda X, o: values, np.zeros((3, 2, 2)), orderings, np.array(sample_ids))


@once
def test_costs_up_to_the_bound_pass_and_beyond_it_name_the_sample():
    np.testing.assert_array_equal(
        _call([MAX_COST_MAGNITUDE, -MAX_COST_MAGNITUDE, 0]), [1e30, -1e30, 0]
    )
    with pytest.raises(ValueError, match=r"returned -2e\+30 for X\[5\] with ordering \[1, 0\]"):
        _call([1.0, -2e30, 1.0])
    with pytest.raises(ValueError, match=r"integers too large for a float: rescale the cost"):
        _call([1, 10**400, 1])


@once
@pytest.mark.parametrize(
    ("values", "message"),
    [
        (np.array([1, 2, 3], dtype=complex), r"values of dtype complex128"),
        (np.array([1.0, 2j, 3.0], dtype=object), r"returned 2j for X\[5\]"),
        ([True, False, True], r"values of dtype bool"),
        (np.array([1.0, 2.0, True], dtype=object), r"returned True for X\[6\]"),
        (["1.0", "2", "3"], r"values of dtype <U3"),
        ([1.0, None, 2.0], r"returned None for X\[5\]"),
    ],
    ids=["complex", "complex item", "booleans", "boolean item", "numeric strings", "None"],
)
def test_costs_that_are_not_real_numbers_are_refused_not_converted(values, message):
    with pytest.raises(ValueError, match=r"must return an array of numbers, one real number"):
        _call(values)
    with pytest.raises(ValueError, match=message):
        _call(values)


# ------------------------------------------------------------------------------ save
@once
def test_saving_into_a_missing_directory_names_it(tmp_path):
    missing = tmp_path / "no_such_dir"
    est = NeuralStackTransducer(**TRANSDUCER)
    with pytest.raises(
        FileNotFoundError, match=r"the directory .*no_such_dir does not exist"
    ) as caught:
        est.save(missing / "model.skptr")
    assert caught.value.filename == str(missing)
    assert ".tmp" not in str(caught.value)
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    with pytest.raises(NotADirectoryError, match=r"a_file is a file, not a directory"):
        est.save(a_file / "model.skptr")
    assert sorted(os.listdir(tmp_path)) == ["a_file"]


@once
def test_a_directory_that_refuses_new_files_is_named_not_the_temporary_file(tmp_path, monkeypatch):
    import tempfile

    def refused(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(tmp_path / ".model.skptr.x1y2.tmp"))

    monkeypatch.setattr(tempfile, "mkstemp", refused)
    with pytest.raises(
        PermissionError, match=r"Cannot write .*model\.skptr: no file can be"
    ) as caught:
        NeuralStackTransducer(**TRANSDUCER).save(tmp_path / "model.skptr")
    assert ".tmp" not in str(caught.value)
    assert caught.value.filename == str(tmp_path)


# ------------------------------------------------------------------------ transducer
@once
def test_a_dataframe_of_several_text_columns_is_refused_for_the_transducer():
    X, y = reversal(16, seed=3)
    table = pd.DataFrame({"first": X, "second": y})
    message = r"X is a DataFrame of 2 columns \('first', 'second'\).*X\['first'\]"
    est = NeuralStackTransducer(**TRANSDUCER)
    with pytest.raises(ValueError, match=message):
        est.fit(table, y)
    assert not hasattr(est, "network_")
    with pytest.raises(ValueError, match=r"y is a DataFrame of 2 columns"):
        est.fit(X, table)
    est.fit(X, y)
    predictions, weights = est.predict(X), _weights(est)
    with pytest.raises(ValueError, match=message):
        est.predict(table)
    with pytest.raises(ValueError, match=message):
        est.score(table, y)
    with pytest.raises(ValueError, match=message):
        est.set_params(warm_start=True).fit(table, y)
    for old, new in zip(weights, est.network_.get_weights(), strict=True):
        np.testing.assert_array_equal(old, new)
    # One column, as a DataFrame or a Series, is one string per sample.
    np.testing.assert_array_equal(est.predict(table[["first"]]), predictions)
    np.testing.assert_array_equal(est.predict(table["first"]), predictions)
