import numpy as np
import pytest

from skptr.datasets import make_tsp
from skptr.metrics import (
    coarse_accuracy,
    fine_accuracy,
    position_accuracy,
    sequence_accuracy,
    tour_length,
)

# --------------------------------------------------------------------------------------
# position and sequence accuracy
# --------------------------------------------------------------------------------------


def test_position_accuracy_counts_matching_indices():
    y_true = np.array([[0, 1, 2], [2, 1, 0]])
    y_pred = np.array([[0, 1, 2], [2, 0, 1]])
    assert position_accuracy(y_true, y_pred) == pytest.approx(4 / 6)
    assert sequence_accuracy(y_true, y_pred) == 0.5
    assert position_accuracy(y_true, y_true) == 1.0
    assert sequence_accuracy(y_true, y_true) == 1.0


def test_position_accuracy_is_a_micro_average():
    # 3 of 3 right on the first sample, 0 of 1 on the second: 3 / 4, not (1 + 0) / 2.
    y_true = [[0, 1, 2], [0]]
    y_pred = [[0, 1, 2], [1]]
    assert position_accuracy(y_true, y_pred) == 0.75
    assert sequence_accuracy(y_true, y_pred) == 0.5


def test_wrong_lengths_are_penalised():
    assert position_accuracy([[0, 1, 2]], [[0, 1]]) == pytest.approx(2 / 3)
    assert position_accuracy([[0, 1, 2]], [[0, 1, 2, 3]]) == 0.75
    assert position_accuracy([[0, 1, 2]], [[]]) == 0.0
    assert sequence_accuracy([[0, 1, 2]], [[0, 1]]) == 0.0
    assert sequence_accuracy([[0, 1, 2]], [[0, 1, 2, 3]]) == 0.0


def test_padding_is_ignored():
    y_true = np.array([[0, 1, -1, -1], [1, 0, 2, -1]])
    y_pred = [[0, 1], [1, 0, 2]]
    assert position_accuracy(y_true, y_pred) == 1.0
    assert sequence_accuracy(y_true, y_pred) == 1.0
    # Padded to different widths, too long by one on the first sample.
    y_pred = np.array([[0, 1, 2, -1, -1], [1, 0, 2, -1, -1]])
    assert position_accuracy(y_true, y_pred) == pytest.approx(5 / 6)
    assert sequence_accuracy(y_true, y_pred) == 0.5


def test_empty_orderings():
    assert position_accuracy([[]], [[]]) == 1.0
    assert sequence_accuracy([[]], [[]]) == 1.0
    assert sequence_accuracy([[], [0]], [[], []]) == 0.5


def test_ties_are_not_penalised_when_x_is_given():
    X = np.array([[3.0, 1.0, 3.0, 2.0]])
    y_true = [[0, 2, 3, 1]]  # descending: 3, 3, 2, 1
    y_pred = [[2, 0, 3, 1]]  # the two 3s swapped
    assert position_accuracy(y_true, y_pred) == 0.5
    assert position_accuracy(y_true, y_pred, X=X) == 1.0
    assert sequence_accuracy(y_true, y_pred) == 0.0
    assert sequence_accuracy(y_true, y_pred, X=X) == 1.0
    # Putting the 2 first is still wrong at the two positions it disturbs.
    assert position_accuracy(y_true, [[3, 0, 2, 1]], X=X) == 0.5


def test_elements_compare_on_every_feature():
    X = np.array([[[0.0, 1.0], [0.0, 1.0], [0.0, 2.0]]])
    assert position_accuracy([[0, 1, 2]], [[1, 0, 2]], X=X) == 1.0
    assert position_accuracy([[0, 1, 2]], [[2, 1, 0]], X=X) == pytest.approx(1 / 3)


def test_ragged_x_and_orderings():
    X = [np.array([5.0, 5.0, 1.0]), np.array([1.0, 2.0])]
    y_true = [[0, 1, 2], [1, 0]]
    y_pred = np.array([[1, 0, 2], [0, 1, -1]])[:, :3]
    assert position_accuracy(y_true, y_pred, X=X) == pytest.approx(3 / 5)
    assert sequence_accuracy(y_true, y_pred, X=X) == 0.5


def test_accuracy_accepts_object_arrays_of_lists():
    y = np.empty(2, dtype=object)
    y[0], y[1] = [0, 1], [2, 1, 0]
    assert position_accuracy(y, [[0, 1], [2, 1, 0]]) == 1.0


def test_length_mismatch_names_both_lengths():
    with pytest.raises(ValueError, match=r"y_true and y_pred .* 2 and 1"):
        position_accuracy([[0], [0]], [[0]])
    with pytest.raises(ValueError, match=r"y_true and y_pred .* 1 and 2"):
        sequence_accuracy([[0]], [[0], [0]])
    with pytest.raises(ValueError, match=r"X and y_true .* 2 and 1"):
        position_accuracy([[0]], [[0]], X=np.zeros((2, 3)))


@pytest.mark.parametrize(
    ("y_pred", "match"),
    [
        ([[0, -1, 1]], "padding before"),
        ([[0, -2]], "negative"),
        ([[0.5, 1]], "non-integer"),
        ([["a", "b"]], "non-integer"),
        ([[[0, 1]]], "1-D"),
    ],
)
def test_bad_orderings_raise(y_pred, match):
    with pytest.raises(ValueError, match=match):
        position_accuracy([[0, 1]], y_pred)


def test_integral_floats_are_accepted():
    assert position_accuracy([[0, 1]], np.array([[0.0, 1.0]])) == 1.0


def test_out_of_range_index_with_x_raises():
    with pytest.raises(ValueError, match=r"y_pred\[0\] holds index 3"):
        position_accuracy([[0, 1, 2]], [[0, 1, 3]], X=[[1.0, 2.0, 3.0]])


def test_containers_that_are_not_collections_raise():
    with pytest.raises(TypeError, match="string"):
        position_accuracy("012", "012")
    with pytest.raises(ValueError, match="2-D"):
        position_accuracy(np.arange(3), np.arange(3))
    with pytest.raises(ValueError, match="no samples"):
        position_accuracy([], [])


# --------------------------------------------------------------------------------------
# tour length
# --------------------------------------------------------------------------------------


def test_tour_length_of_unit_square():
    square = np.array([[[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]])
    assert tour_length(square, [[0, 1, 2, 3]]) == pytest.approx([4.0])
    assert tour_length(square, [[0, 2, 1, 3]]) == pytest.approx([2 + 2 * np.sqrt(2)])


def test_tour_length_with_padding_and_ragged_inputs():
    X = [
        np.array([[0.0, 0.0], [3.0, 4.0]]),
        np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]]),
        np.array([[2.0, 2.0], [5.0, 5.0], [0.0, 1.0]]),
    ]
    tours = np.array([[0, 1, -1], [2, 0, 1], [1, -1, -1]])
    lengths = tour_length(X, tours)
    assert lengths.dtype == np.float64 and lengths.shape == (3,)
    np.testing.assert_allclose(lengths, [10.0, 2 + np.sqrt(2), 0.0])
    np.testing.assert_allclose(tour_length(X, [[1, 0], [0, 1, 2], []]), [10.0, 2 + np.sqrt(2), 0])


def test_tour_length_in_three_dimensions():
    cube_edge = np.array([[[0, 0, 0], [0, 0, 2], [0, 2, 2]]], dtype=float)
    assert tour_length(cube_edge, [[0, 1, 2]]) == pytest.approx([4 + 2 * np.sqrt(2)])


def test_tour_length_matches_direct_computation():
    X, y = make_tsp(50, 7, random_state=0)
    points = np.take_along_axis(X, y[:, :, None], axis=1)
    expected = np.linalg.norm(points - np.roll(points, -1, axis=1), axis=-1).sum(axis=1)
    np.testing.assert_allclose(tour_length(X, y), expected)
    # Optimal tours are no longer than the identity tour.
    identity = np.tile(np.arange(7), (50, 1))
    assert np.all(tour_length(X, y) <= tour_length(X, identity) + 1e-12)


def test_tour_length_rejects_bad_input():
    X = np.zeros((2, 3, 2))
    with pytest.raises(ValueError, match=r"X and tours .* 2 and 1"):
        tour_length(X, [[0, 1, 2]])
    with pytest.raises(ValueError, match=r"tours\[1\] holds index 3"):
        tour_length(X, [[0, 1, 2], [0, 3, 1]])


# --------------------------------------------------------------------------------------
# coarse and fine accuracy
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pred", "expected"),
    [("abc", 1.0), ("abd", 0.5), ("abcd", 0.75), ("ab", 0.5), ("", 0.0), ("xbc", 0.0)],
)
def test_fine_accuracy_examples(pred, expected):
    assert fine_accuracy(["abc"], [pred]) == pytest.approx(expected)
    assert coarse_accuracy(["abc"], [pred]) == float(pred == "abc")


def test_fine_accuracy_empty_target():
    assert fine_accuracy([""], [""]) == 1.0
    assert fine_accuracy([""], ["a"]) == 0.0
    assert fine_accuracy([()], [()]) == 1.0


def test_fine_accuracy_is_a_mean_over_samples():
    # 1, 2/4 and 1/2 ("z" right, then no end): the mean is 2/3.
    assert fine_accuracy(["abc", "abc", "z"], ["abc", "ab", "zz"]) == pytest.approx(2 / 3)
    assert coarse_accuracy(["abc", "abc", "z"], ["abc", "ab", "zz"]) == pytest.approx(1 / 3)


def test_token_sequences_of_any_kind():
    y_true = [(1, 2, 3), ("the", "dog"), np.array([4, 5])]
    y_pred = [[1, 2, 3], ("the", "cat"), np.array([4, 5])]
    assert coarse_accuracy(y_true, y_pred) == pytest.approx(2 / 3)
    assert fine_accuracy(y_true, y_pred) == pytest.approx((1 + 1 / 3 + 1) / 3)
    # A string and a tuple of its characters are the same tokens.
    assert coarse_accuracy(["ab"], [("a", "b")]) == 1.0
    object_array = np.empty(2, dtype=object)
    object_array[0], object_array[1] = (1, 2), (3,)
    assert fine_accuracy(object_array, [(1, 2), (3, 4)]) == pytest.approx((1 + 0.5) / 2)


def test_token_metrics_reject_bad_input():
    with pytest.raises(ValueError, match=r"y_true and y_pred .* 2 and 1"):
        fine_accuracy(["a", "b"], ["a"])
    with pytest.raises(ValueError, match=r"y_true and y_pred .* 1 and 3"):
        coarse_accuracy(["a"], ["a", "b", "c"])
    with pytest.raises(TypeError, match="string"):
        fine_accuracy("abc", "abc")
    with pytest.raises(ValueError, match=r"y_pred\[0\] is of type int, not a token sequence"):
        coarse_accuracy(["a"], [3])
    with pytest.raises(ValueError, match="no samples"):
        coarse_accuracy([], [])


def test_predictions_that_repeat_an_index_are_scored_not_rejected():
    # a model other than a pointer network may repeat a position: that is an error of
    # the model, which the metric counts, not invalid input
    assert position_accuracy([[0, 1, 2]], [[0, 1, 1]]) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match=r"y_true\[0\] repeats index 1"):
        position_accuracy([[0, 1, 1]], [[0, 1, 2]])


def test_metrics_apply_the_validation_rules_of_the_estimators():
    with pytest.raises(ValueError, match=r"tours\[0\] repeats index 0"):
        tour_length([[[0.0, 0.0], [1.0, 1.0]]], [[0, 1, 0]])
    with pytest.raises(ValueError, match=r"X\[0\] contains NaN"):
        tour_length([[[0.0, np.nan], [1.0, 1.0]]], [[0, 1]])
    with pytest.raises(ValueError, match=r"y_true\[1\] has a NaN token"):
        fine_accuracy(["ab", [float("nan")]], ["ab", "c"])


def test_true_and_one_are_different_tokens():
    assert coarse_accuracy([[True, 1]], [[True, 1]]) == 1.0
    assert coarse_accuracy([[True, 1]], [[1, True]]) == 0.0
    assert fine_accuracy([[(1,)]], [[(True,)]]) == 0.0


def test_a_one_dimensional_array_of_strings_is_one_string_per_sample():
    assert coarse_accuracy(np.array(["ab", "cd"]), ["ab", "ce"]) == 0.5
