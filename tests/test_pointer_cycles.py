"""Cyclic targets: the rotation the network learns and the one predictions come in."""

import joblib
import numpy as np
import pytest
from _marks import process_fixture
from scipy.spatial import ConvexHull
from sklearn.utils._param_validation import InvalidParameterError

import skptr
from skptr import PointerNetworkOrderer
from skptr.metrics import sequence_accuracy
from skptr.pointer._cycles import canonical_indices, canonical_training

# A unit square around an inner point; its two leftmost corners tie on x.
SQUARE = np.array([[0.5, 0.5], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [0.0, 0.0]])


def padded(rows, width=None):
    width = width or max(len(row) for row in rows)
    out = np.full((len(rows), width), -1, dtype=np.int32)
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return out, np.array([len(row) for row in rows])


def hull_labels(points):
    """SciPy's hull, counter-clockwise from the smallest index."""
    vertices = ConvexHull(points).vertices
    return np.roll(vertices, -int(np.argmin(vertices)))


def test_training_rotation_starts_at_the_lexicographically_first_member():
    hull, lengths = padded([[1, 2, 3, 4]])
    values, sequence_lengths = SQUARE[None], np.array([5])
    directed = canonical_training(hull, lengths, values, sequence_lengths, "directed")
    # (0, 0) comes before (0, 1): equal x, smaller y.
    assert directed.tolist() == [[4, 1, 2, 3]]
    undirected = canonical_training(hull, lengths, values, sequence_lengths, "undirected")
    # Of the neighbours of (0, 0), (0, 1) (index 3) comes before (1, 0) (index 1).
    assert undirected.tolist() == [[4, 3, 2, 1]]


def test_training_rotation_of_one_feature_subsets_and_padding():
    values = np.array([[[0.3], [0.1], [0.7], [0.2]], [[0.9], [0.4], [0.8], [0.0]]])
    sequence_lengths = np.array([4, 3])  # the second sequence's 0.0 is padding
    cycles, lengths = padded([[0, 2, 3, 1], [0, 2]], width=5)
    directed = canonical_training(cycles, lengths, values, sequence_lengths, "directed")
    assert directed.tolist() == [[1, 0, 2, 3, -1], [2, 0, -1, -1, -1]]
    undirected = canonical_training(cycles, lengths, values, sequence_lengths, "undirected")
    # From 0.1, the neighbours are 0.3 (next) and 0.2 (previous): go backwards.
    assert undirected.tolist() == [[1, 3, 2, 0, -1], [2, 0, -1, -1, -1]]


def test_training_rotation_breaks_equal_values_by_position():
    values = np.array([[[0.5], [0.2], [0.2], [0.9]]])
    cycles, lengths = padded([[3, 2, 0, 1]])
    rotated = canonical_training(cycles, lengths, values, np.array([4]), "directed")
    assert rotated.tolist() == [[1, 3, 2, 0]]


def test_index_rotation_and_the_moved_steps():
    cycles, lengths = padded([[4, 3, 2, 1], [2, 0, 1], [1, 0], [5]], width=5)
    directed, source = canonical_indices(cycles, lengths, "directed")
    assert directed.tolist() == [
        [1, 4, 3, 2, -1],
        [0, 1, 2, -1, -1],
        [0, 1, -1, -1, -1],
        [5, -1, -1, -1, -1],
    ]
    np.testing.assert_array_equal(np.take_along_axis(cycles, source, axis=1), directed)
    assert source[:, 4].tolist() == [4, 4, 4, 4]  # steps past the end stay in place
    undirected, source = canonical_indices(cycles, lengths, "undirected")
    assert undirected.tolist() == [
        [1, 2, 3, 4, -1],
        [0, 1, 2, -1, -1],
        [0, 1, -1, -1, -1],
        [5, -1, -1, -1, -1],
    ]
    np.testing.assert_array_equal(np.take_along_axis(cycles, source, axis=1), undirected)


@process_fixture
def hull_data():
    rng = np.random.default_rng(7)
    X = rng.random((1200, 6, 2))
    return X, [hull_labels(points) for points in X]


@process_fixture
def cyclic_hull_model(hull_data):
    # The tests that use it check where cycles start and how they are kept, which an
    # untrained model shows as well as a trained one (learning: the last test).
    X, y = hull_data
    params = {"hidden_size": 16, "epochs": 1, "cycle": "directed", "random_state": 0}
    return PointerNetworkOrderer(**params).fit(X[:300], y[:300])


def test_trains_on_the_leftmost_rotation(cyclic_hull_model, hull_data):
    X, y = hull_data
    data, _ = cyclic_hull_model._prepare_training_data(X[:50], y[:50], reset=False)
    targets = data.targets
    for points, hull, target in zip(X[:50], y[:50], targets, strict=True):
        assert target[0] == hull[np.argmin(points[hull, 0])]
        assert target[len(hull)] == 6  # the end of the output stays last
        start = int(np.flatnonzero(hull == target[0])[0])
        assert target[: len(hull)].tolist() == np.roll(hull, -start).tolist()


def test_predicts_cycles_from_the_smallest_index(cyclic_hull_model, hull_data):
    X, _ = hull_data
    predicted = cyclic_hull_model.predict(X[1000:])
    distributions = cyclic_hull_model.predict_proba(X[1000:])
    for row, steps in zip(predicted, distributions, strict=True):
        real = row[row >= 0]
        assert real[0] == real.min()
        # Greedy decoding picked each index as the most likely at its (moved) step.
        chosen = steps[np.arange(len(real)), real]
        np.testing.assert_allclose(chosen, steps[: len(real)].max(axis=1))
        if len(real) < len(steps):  # then it ended
            assert steps[len(real), -1] == steps[len(real)].max()


def test_score_compares_cycles_in_any_rotation(cyclic_hull_model, hull_data):
    X, y = hull_data
    rng = np.random.default_rng(0)
    rotated = [np.roll(hull, int(rng.integers(len(hull)))) for hull in y[1000:]]
    assert cyclic_hull_model.score(X[1000:], rotated) == cyclic_hull_model.score(
        X[1000:], y[1000:]
    )


def test_saved_and_pickled_models_keep_the_cycle(cyclic_hull_model, hull_data, tmp_path):
    X, _ = hull_data
    expected = cyclic_hull_model.predict(X[1000:])
    cyclic_hull_model.save(tmp_path / "hull.skptr")
    loaded = skptr.load(tmp_path / "hull.skptr")
    assert loaded.cycle == "directed"
    np.testing.assert_array_equal(loaded.predict(X[1000:]), expected)
    joblib.dump(cyclic_hull_model, tmp_path / "hull.joblib")
    unpickled = joblib.load(tmp_path / "hull.joblib")
    np.testing.assert_array_equal(unpickled.predict(X[1000:]), expected)


def test_an_undirected_cycle_is_returned_towards_its_smaller_neighbour(hull_data):
    X, y = hull_data
    params = {"hidden_size": 16, "epochs": 1, "cycle": "undirected", "random_state": 0}
    predicted = PointerNetworkOrderer(**params).fit(X[:300], y[:300]).predict(X[1000:])
    for row in predicted:
        real = row[row >= 0]
        assert real[0] == real.min()
        if len(real) > 2:
            assert real[1] < real[-1]


def test_bad_cycle_is_rejected_naming_it(hull_data):
    X, y = hull_data
    with pytest.raises(InvalidParameterError, match="cycle"):
        PointerNetworkOrderer(cycle="both", epochs=1).fit(X[:50], y[:50])


def test_learns_convex_hulls_better_as_cycles():
    """Leftmost-first targets are learned faster than smallest-index-first ones: on
    NumPy-drawn points labelled by SciPy, with the same budget and seed."""
    rng = np.random.default_rng(3)
    X = rng.random((4500, 6, 2))
    y = [hull_labels(points) for points in X]
    params = {"hidden_size": 64, "epochs": 8, "bidirectional": False, "random_state": 0}
    exact = {}
    for cycle in (None, "directed"):
        estimator = PointerNetworkOrderer(**params, cycle=cycle).fit(X[:4000], y[:4000])
        exact[cycle] = sequence_accuracy(y[4000:], estimator.predict(X[4000:]))
    assert exact["directed"] >= 0.55
    assert exact["directed"] >= exact[None] + 0.1
