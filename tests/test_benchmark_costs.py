"""The cost-learning benchmark's references: the exact schedule cost and the ATC rule."""

import itertools

import numpy as np
import pytest
from _marks import once

from benchmarks.cost_learning import (
    apparent_tardiness_cost,
    optimal_tardiness,
    total_weighted_tardiness,
)

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
