"""The cost-learning benchmark's references (the exact schedule cost and the ATC rule)
and its reading of RL4CO's results."""

import itertools

import numpy as np
import pytest
from _marks import once

from benchmarks import rl4co_side_by_side as rl4co_script
from benchmarks._common import BenchmarkError
from benchmarks.cost_learning import (
    apparent_tardiness_cost,
    optimal_tardiness,
    rl4co_row,
    total_weighted_tardiness,
)
from skptr.costs import tour_length

pytestmark = once


def test_total_weighted_tardiness_by_hand():
    # Jobs (time, weight, due): A (2, 3, 1), B (1, 1, 4), C (3, 2, 3).
    X = np.array([[[2.0, 3.0, 1.0], [1.0, 1.0, 4.0], [3.0, 2.0, 3.0]]])
    # A, B, C finish at 2, 3, 6: A late by 1 (x3), B on time, C late by 3 (x2): 9.
    assert total_weighted_tardiness(X, [[0, 1, 2]]) == pytest.approx([9.0])
    # C, A, B finish at 3, 5, 6: C on time, A late by 4 (x3), B late by 2: 14.
    assert total_weighted_tardiness(X, [[2, 0, 1]]) == pytest.approx([14.0])


@pytest.mark.parametrize("n_jobs", [1, 4, 6])
def test_dynamic_programming_finds_the_cheapest_of_all_orders(n_jobs):
    rng = np.random.default_rng(n_jobs)
    X = np.stack(
        [rng.random((7, n_jobs)), rng.random((7, n_jobs)), rng.random((7, n_jobs)) * n_jobs / 2],
        axis=-1,
    )
    orders = np.array(list(itertools.permutations(range(n_jobs))))
    brute = np.array(
        [total_weighted_tardiness(np.repeat(x[None], len(orders), 0), orders).min() for x in X]
    )
    np.testing.assert_allclose(optimal_tardiness(X, chunk=3), brute, rtol=1e-12, atol=1e-12)


def test_apparent_tardiness_cost_schedules_every_job_once_and_follows_its_priority():
    X = np.random.default_rng(0).random((50, 8, 3)) * [1, 1, 4]
    schedules = apparent_tardiness_cost(X, k=2.0)
    assert np.array_equal(np.sort(schedules, axis=1), np.tile(np.arange(8), (50, 1)))
    # With no slack at all (every due date passed), ATC is WSPT.
    late = X * [1, 1, 0]
    np.testing.assert_array_equal(
        apparent_tardiness_cost(late, k=2.0), np.argsort(-late[..., 1] / late[..., 0], axis=1)
    )


def test_the_rl4co_script_scores_orders_as_the_benchmark_does():
    rng = np.random.default_rng(3)
    jobs = np.stack([rng.random((9, 6)), rng.random((9, 6)), rng.random((9, 6)) * 3], axis=-1)
    cities = rng.random((9, 6, 2))
    orders = np.argsort(rng.random((9, 6)), axis=1)
    np.testing.assert_allclose(
        rl4co_script.costs_of("smtwt", jobs, orders), total_weighted_tardiness(jobs, orders)
    )
    np.testing.assert_allclose(
        rl4co_script.costs_of("tsp", cities, orders), tour_length(cities, orders)
    )
    repeated = orders.copy()
    repeated[4, 1] = repeated[4, 0]
    with pytest.raises(ValueError, match="not permutations"):
        rl4co_script.costs_of("tsp", cities, repeated)


def test_an_rl4co_result_becomes_ratios_to_the_reference_or_its_error():
    task = {"X_test": np.zeros((4, 20, 3)), "reference": np.array([1.0, 2.0, 3.0, 2.0])}
    result = {
        "model": "am",
        "seed": 1,
        "rl4co_version": "0.7.0",
        "torch_version": "2.13.0",
        "batch_size": 64,
        "seconds": 600.0,
        "instances": 64_000,
        "instances_per_s": 106.7,
        "reward_check": True,
        "decodings": {"greedy": {"costs": [1.0, 3.0, 3.0, 3.0], "ms_per_instance": 0.4}},
    }
    row = rl4co_row("smtwt20", {**task, "reference_name": "optimum"}, result)
    assert row["decodings"] == {"greedy": {"ratio": 1.25, "ms_per_instance": 0.4}}
    assert row["training"] == {"seconds": 600.0, "instances": 64_000, "instances_per_s": 106.7}
    stopped = {k: v for k, v in result.items() if k not in ("decodings", "reward_check")}
    row = rl4co_row("smtwt20", {**task, "reference_name": "optimum"}, {**stopped, "error": "E"})
    assert row["error"] == "E" and "decodings" not in row
    with pytest.raises(BenchmarkError, match="reward disagrees"):
        rl4co_row(
            "smtwt20", {**task, "reference_name": "optimum"}, {**result, "reward_check": False}
        )
    short = {**result, "decodings": {"greedy": {"costs": [1.0], "ms_per_instance": 0.4}}}
    with pytest.raises(BenchmarkError, match="a cost per instance"):
        rl4co_row("smtwt20", {**task, "reference_name": "optimum"}, short)
