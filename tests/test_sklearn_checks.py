"""scikit-learn's own estimator checks, with every expected failure justified.

scikit-learn's generic checks feed flat data: X of shape (n_samples, n_features) and y
of class labels. For skptr a 2-D X is a batch of sequences and y holds one *sequence*
per sample (an ordering of input positions, or a token sequence). Because the pointer
estimator declares multi-output targets, the checks pass y as a column, i.e. one-step
orderings, and most checks run for real. The few that cannot pass are listed below with
their reason; each has a sequence-aware twin in ``tests/test_sklearn_contract.py``.
The list is strict: a listed check that starts passing fails the suite.
"""

from functools import partial
from unittest import SkipTest

import pytest
from sklearn.utils.estimator_checks import (
    _get_check_estimator_ids,
    estimator_checks_generator,
)

from skptr import NeuralStackTransducer, PointerNetworkOrderer
from skptr.preprocessing import SequenceScaler

LABELS_ARE_NOT_POSITIONS = (
    "feeds y = class labels 0..2 as one-step orderings of 2-step sequences, so index 2 is "
    "out of range and correctly rejected (twin in test_sklearn_contract.py)"
)

N_FEATURES_PER_STEP = (
    "n_features_in_ is the number of features per sequence step, not X.shape[1] "
    "(the sequence length, which may differ at predict time) "
    "(twin: test_n_features_in_is_features_per_step)"
)
EMPTY_SEQUENCES = (
    "a 2-D X of shape (n, 0) is n empty sequences and is reported as 'X[0] is an empty "
    "sequence', not as '0 feature(s)' (twin: test_empty_input_messages)"
)

POINTER_EXPECTED_FAILED_CHECKS = {
    "check_estimators_overwrite_params": LABELS_ARE_NOT_POSITIONS,
    "check_estimators_fit_returns_self": LABELS_ARE_NOT_POSITIONS,
    "check_readonly_memmap_input": LABELS_ARE_NOT_POSITIONS,
    "check_fit2d_1feature": (
        "X with one column is a batch of 1-step sequences, so label y values >= 1 are "
        "out-of-range positions and correctly rejected (twin: test_one_step_sequences)"
    ),
    "check_n_features_in": N_FEATURES_PER_STEP,
    "check_n_features_in_after_fitting": N_FEATURES_PER_STEP,
    "check_estimators_empty_data_messages": EMPTY_SEQUENCES,
    "check_methods_sample_order_invariance": (
        "predict_proba is float32: a different batch composition changes probabilities "
        "by about 1 ulp (2e-7 relative), above the check's float64 tolerance; predict is "
        "identical (twin: test_sample_order_and_subset_invariance)"
    ),
}


SCALER_EXPECTED_FAILED_CHECKS = {
    "check_transformer_data_not_an_array": (
        "X given as a list of lists is a list of sequences, and comes back as a list of "
        "arrays because lengths may differ (twin: test_layouts_are_preserved)"
    ),
    "check_n_features_in": N_FEATURES_PER_STEP,
    "check_n_features_in_after_fitting": N_FEATURES_PER_STEP,
    "check_estimators_empty_data_messages": EMPTY_SEQUENCES,
    "check_transformer_general": (
        "transforming sequences of another length than seen in fit is allowed by design; "
        "a different number of features per step is rejected "
        "(twin: test_scaler_accepts_other_lengths_rejects_other_features)"
    ),
}

FLOAT_TOKENS = (
    "feeds continuous floats as X, but the transducer's X are sequences of discrete "
    "tokens and a float token is rejected with a ValueError naming the sample "
    "(twin in test_sklearn_contract.py, on strings)"
)
TRANSDUCER_EXPECTED_FAILED_CHECKS = {
    name: FLOAT_TOKENS
    for name in [
        "check_dict_unchanged",
        "check_dont_overwrite_parameters",
        "check_dtype_object",
        "check_estimators_dtypes",
        "check_estimators_fit_returns_self",
        "check_estimators_nan_inf",
        "check_estimators_overwrite_params",
        "check_estimators_pickle",
        "check_f_contiguous_array_estimator",
        "check_fit2d_1feature",
        "check_fit2d_1sample",
        "check_fit2d_predict1d",
        "check_fit_check_is_fitted",
        "check_fit_idempotent",
        "check_fit_score_takes_y",
        "check_methods_sample_order_invariance",
        "check_methods_subset_invariance",
        "check_n_features_in",
        "check_n_features_in_after_fitting",
        "check_pipeline_consistency",
        "check_positive_only_tag_during_fit",
        "check_readonly_memmap_input",
    ]
}
TRANSDUCER_EXPECTED_FAILED_CHECKS["check_estimators_empty_data_messages"] = (
    "a 2-D X of shape (n, 0) is n empty token sequences, which are valid sources (the "
    "reversal of '' is ''), so fit does not raise (twin: test_transducer_empty_sequences)"
)

EXPECTED_FAILED_CHECKS = {
    "PointerNetworkOrderer": POINTER_EXPECTED_FAILED_CHECKS,
    "NeuralStackTransducer": TRANSDUCER_EXPECTED_FAILED_CHECKS,
    "SequenceScaler": SCALER_EXPECTED_FAILED_CHECKS,
}

# Probabilities computed in float32 differ by ~1 ulp between batch compositions, so this
# check fails on some runs and passes on others.
FLAKY_IN_FLOAT32 = {
    "PointerNetworkOrderer": {
        "check_methods_sample_order_invariance",
        "check_methods_subset_invariance",
    }
}


def _small(estimator):
    return estimator.set_params(hidden_size=4, epochs=1, batch_size=32, random_state=0)


def _check_name(check):
    while hasattr(check, "__wrapped__"):
        check = check.__wrapped__
    return check.func.__name__ if isinstance(check, partial) else check.__name__


def _all_checks(estimators):
    """The API checks and the legacy checks, each check once."""
    params, seen = [], set()
    for estimator in estimators:
        for legacy in (False, True):
            for _, check in estimator_checks_generator(estimator, legacy=legacy):
                check_id = _get_check_estimator_ids(check)
                key = (type(estimator).__name__, check_id)
                if key not in seen:
                    seen.add(key)
                    params.append(pytest.param(estimator, check, id=f"{key[0]}-{check_id}"))
    return params


ESTIMATORS = [
    _small(PointerNetworkOrderer()),
    NeuralStackTransducer(
        hidden_size=4,
        embedding_dim=4,
        memory_width=4,
        epochs=1,
        curriculum=False,
        n_init=2,
        random_state=0,
    ),
    SequenceScaler(),
]


@pytest.mark.parametrize(("estimator", "check"), _all_checks(ESTIMATORS))
def test_sklearn_check(estimator, check):
    name = _check_name(check)
    expected_failures = EXPECTED_FAILED_CHECKS[type(estimator).__name__]
    flaky = FLAKY_IN_FLOAT32.get(type(estimator).__name__, set())
    if name in expected_failures and name not in flaky:
        with pytest.raises(Exception):  # noqa: B017 - any failure of the check
            check(estimator)
        return
    try:
        check(estimator)
    except AssertionError:
        if name not in flaky:
            raise
        pytest.xfail(expected_failures.get(name, "float32 batch noise"))
    except SkipTest as skip:
        pytest.skip(str(skip))


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_every_expected_failure_is_a_real_check(estimator):
    names = {_check_name(p.values[1]) for p in _all_checks([estimator])}
    assert set(EXPECTED_FAILED_CHECKS[type(estimator).__name__]) <= names
