"""Pipelines, searches and cross-validation, in-process, with worker processes, on Dask."""

import time

import joblib
import numpy as np
import pytest
from _marks import once, process_fixture
from sklearn.metrics import make_scorer
from sklearn.model_selection import (
    GridSearchCV,
    KFold,
    RandomizedSearchCV,
    cross_val_score,
    cross_validate,
)
from sklearn.pipeline import make_pipeline

from skptr import PointerNetworkOrderer
from skptr.datasets import make_sorting
from skptr.metrics import position_accuracy, sequence_accuracy
from skptr.preprocessing import SequenceScaler

TINY = {"epochs": 1, "batch_size": 64, "random_state": 0}


@process_fixture
def data():
    X, y = make_sorting(n_samples=120, n_steps=5, kind="float", random_state=0)
    return X * 100.0 + 50.0, y  # large offsets, which the scaler removes


@once
def test_pipeline_with_scaler_fits_predicts_and_scores(data):
    X, y = data
    pipeline = make_pipeline(SequenceScaler(), PointerNetworkOrderer(hidden_size=8, **TINY))
    pipeline.fit(X, y)
    predicted = pipeline.predict(X)
    assert predicted.shape == (120, 5)
    assert all(sorted(row) == list(range(5)) for row in predicted.tolist())
    assert 0.0 <= pipeline.score(X, y) <= 1.0
    assert pipeline[-1].n_features_in_ == 1


@once
def test_grid_search_on_a_pipeline_and_cross_val_score(data):
    X, y = data
    pipeline = make_pipeline(SequenceScaler(), PointerNetworkOrderer(**TINY))
    search = GridSearchCV(
        pipeline, {"pointernetworkorderer__hidden_size": [4, 8]}, cv=2, refit=False
    ).fit(X, y)
    assert list(search.cv_results_["param_pointernetworkorderer__hidden_size"]) == [4, 8]
    scores = cross_val_score(pipeline, X, y, cv=2)
    assert scores.shape == (2,) and np.all((scores >= 0) & (scores <= 1))


@once
def test_searches_with_two_worker_processes_and_a_custom_scorer(data):
    X, y = data
    scorer = make_scorer(sequence_accuracy)
    # The shape of search users write first: GridSearchCV(est, {"hidden_size": [...]}).
    grid = GridSearchCV(
        PointerNetworkOrderer(**TINY),
        {"hidden_size": [4, 8]},
        cv=KFold(2),
        scoring=scorer,
        n_jobs=2,
    ).fit(X, y)
    assert grid.best_params_["hidden_size"] in (4, 8)
    in_process = GridSearchCV(
        PointerNetworkOrderer(**TINY), {"hidden_size": [4, 8]}, cv=KFold(2), scoring=scorer
    ).fit(X, y)
    # Same seeds in separate processes give the same scores as in this process.
    np.testing.assert_allclose(
        grid.cv_results_["mean_test_score"], in_process.cv_results_["mean_test_score"]
    )


@once
def test_randomized_search_and_cross_validate_in_worker_processes(data):
    X, y = data
    scorer = make_scorer(sequence_accuracy)
    randomized = RandomizedSearchCV(
        PointerNetworkOrderer(**TINY),
        {"hidden_size": [4, 8, 16], "cell": ["lstm", "gru"]},
        n_iter=2,
        cv=2,
        n_jobs=2,
        random_state=0,
        refit=False,
    ).fit(X, y)
    assert len(randomized.cv_results_["params"]) == 2
    results = cross_validate(
        PointerNetworkOrderer(hidden_size=4, **TINY),
        X,
        y,
        cv=2,
        n_jobs=2,
        scoring={"position": make_scorer(position_accuracy), "sequence": scorer},
    )
    assert set(results) >= {"test_position", "test_sequence", "fit_time"}


@once
def test_grid_search_on_a_dask_cluster(data):
    distributed = pytest.importorskip("distributed")
    X, y = data
    start = time.perf_counter()
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster),
        joblib.parallel_backend("dask"),
    ):
        search = GridSearchCV(
            PointerNetworkOrderer(**TINY), {"hidden_size": [4, 8]}, cv=2, n_jobs=-1
        ).fit(X, y)
    elapsed = time.perf_counter() - start
    assert search.best_params_["hidden_size"] in (4, 8)
    assert search.best_estimator_.predict(X[:3]).shape == (3, 5)
    print(f"Dask grid search: {elapsed:.1f} s")


def test_gpu_memory_growth_is_safe_without_gpus(monkeypatch):
    from skptr._backend import enable_gpu_memory_growth

    assert enable_gpu_memory_growth() == []  # CPU-only: nothing to configure
    monkeypatch.setenv("SKPTR_GPU_MEMORY_GROWTH", "0")
    assert enable_gpu_memory_growth() == []


@once
def test_transducer_on_text_in_pipelines_and_parallel_searches():
    from skptr import NeuralStackTransducer
    from skptr.datasets import make_transduction
    from skptr.metrics import coarse_accuracy
    from skptr.preprocessing import TextTokenizer

    X, y = make_transduction(
        "reversal", n_samples=80, min_length=1, max_length=5, vocab_size=3, random_state=0
    )
    sentences = np.array([" ".join(x) for x in X], dtype=object)  # "a b c" -> (a, b, c)
    targets = np.array([tuple(t) for t in y], dtype=object)
    transducer = NeuralStackTransducer(
        hidden_size=8, epochs=1, curriculum=False, n_init=1, random_state=0
    )
    pipeline = make_pipeline(TextTokenizer(), transducer)
    search = GridSearchCV(
        pipeline,
        {"neuralstacktransducer__hidden_size": [4, 8]},
        cv=2,
        n_jobs=2,
        scoring=make_scorer(coarse_accuracy),
    ).fit(sentences, targets)
    assert search.best_estimator_.predict(sentences[:2]).shape == (2,)
    assert isinstance(search.best_estimator_.predict(sentences[:1])[0], tuple)
    # The default scorer: the transducer's score, its fine accuracy.
    scores = cross_val_score(transducer, X, y, cv=2, n_jobs=2)
    assert scores.shape == (2,) and np.all((scores >= 0) & (scores <= 1))
