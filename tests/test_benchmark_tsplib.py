"""The large-tour benchmark's TSPLIB data and metric, and its training pools."""

import numpy as np
from _marks import once

from benchmarks.tour_scale import draw_pool, tsplib_instances, tsplib_length, unit_square

pytestmark = once


def test_tsplib_metric_rounds_each_distance_half_up():
    # Sides of 2.5 (TSPLIB's nint gives 3, rounding half to even 2) and 0.4 (0), and
    # diagonals of about 2.53 (3).
    rectangle = np.array([[0.0, 0.0], [2.5, 0.0], [2.5, 0.4], [0.0, 0.4]])
    assert tsplib_length(rectangle, [0, 1, 2, 3]) == 3 + 0 + 3 + 0
    assert tsplib_length(rectangle, [0, 2, 1, 3]) == 3 + 0 + 3 + 0


def test_tsplib_instances_hold_their_cities_and_optima():
    instances = tsplib_instances()
    assert len(instances) == 29
    coordinates, optimum = instances["eil51"]
    assert coordinates.shape == (51, 2) and optimum == 426
    # The optimum is a lower bound: the cities in file order make a longer tour.
    assert all(tsplib_length(c, np.arange(len(c))) >= opt for c, opt in instances.values())
    assert all(51 <= len(c) <= 200 for c, _ in instances.values())


def test_unit_square_keeps_the_shape_and_fills_the_longer_side():
    points = np.array([[10.0, 5.0], [30.0, 5.0], [20.0, 15.0]])
    scaled = unit_square(points)
    np.testing.assert_allclose(scaled, [[0, 0], [1, 0], [0.5, 0.5]])


def test_a_pool_of_one_size_is_an_array_and_of_a_range_a_list():
    assert draw_pool(5, [7, 7], seed=0).shape == (5, 7, 2)
    mixed = draw_pool(200, [3, 6], seed=0)
    assert {len(x) for x in mixed} == {3, 4, 5, 6}
