import numpy as np
import pytest
import scipy.sparse

from skptr._sequences import (
    check_numeric_sequence,
    check_numeric_sequences,
    check_ordering,
    check_orderings,
    check_token_sequences,
)


def test_two_dimensional_input_has_one_feature_per_step():
    padded = check_numeric_sequences(np.arange(6).reshape(2, 3))
    assert padded.values.shape == (2, 3, 1)
    assert padded.values.dtype == np.float32
    np.testing.assert_array_equal(padded.lengths, [3, 3])
    np.testing.assert_array_equal(padded.values[1, :, 0], [3, 4, 5])


def test_three_dimensional_input_keeps_features():
    padded = check_numeric_sequences(np.ones((4, 5, 2)))
    assert (padded.n_samples, padded.max_length, padded.n_features) == (4, 5, 2)


def test_ragged_lists_are_right_padded_with_a_mask():
    padded = check_numeric_sequences([[1.0, 2.0], [3.0], [4.0, 5.0, 6.0]])
    assert padded.values.shape == (3, 3, 1)
    np.testing.assert_array_equal(padded.lengths, [2, 1, 3])
    np.testing.assert_array_equal(
        padded.mask, [[True, True, False], [True, False, False], [True, True, True]]
    )
    np.testing.assert_array_equal(padded.values[1, :, 0], [3.0, 0.0, 0.0])
    np.testing.assert_array_equal(padded.sequence(0)[:, 0], [1.0, 2.0])


def test_ragged_vectors_of_two_features():
    padded = check_numeric_sequences([np.zeros((2, 2)), np.ones((4, 2))])
    assert padded.values.shape == (2, 4, 2)


@pytest.mark.parametrize(
    ("X", "message"),
    [
        ([[1.0, np.nan], [2.0, 3.0]], r"X\[0\] contains NaN or infinity \(first at step 1\)"),
        ([[1.0, 2.0], [2.0, np.inf]], r"X\[1\] contains NaN or infinity"),
        ([[1.0, 2.0], ["a", "b"]], r"X\[1\] is not numeric"),
        ([[1.0, 2.0], []], r"X\[1\] is an empty sequence"),
        ([np.zeros((2, 2)), np.zeros((2, 3))], r"X\[1\] has 3 features per step but X\[0\] has 2"),
        ([np.zeros((2, 2, 2))], r"X\[0\] has 3 dimensions"),
        (np.zeros((2, 2, 2, 2)), r"got an array of shape \(2, 2, 2, 2\)"),
        ([], r"X holds no samples"),
        ([[1 + 2j, 3.0]], r"X\[0\] holds complex numbers: Complex data not supported"),
    ],
)
def test_bad_sequences_are_rejected_naming_the_sample(X, message):
    with pytest.raises(ValueError, match=message):
        check_numeric_sequences(X)


def test_feature_count_must_match_fit():
    with pytest.raises(ValueError, match="fitted with 2 features per step"):
        check_numeric_sequences(np.zeros((2, 3)), n_features=2)


def test_strings_and_scalars_are_type_errors():
    with pytest.raises(TypeError, match="single str"):
        check_numeric_sequences("1234")
    with pytest.raises(TypeError, match="got int"):
        check_numeric_sequences(5)


def test_orderings_padded_and_ragged():
    lengths = np.array([3, 2])
    targets, target_lengths = check_orderings([[2, 0, 1], [1]], lengths)
    np.testing.assert_array_equal(targets, [[2, 0, 1], [1, -1, -1]])
    np.testing.assert_array_equal(target_lengths, [3, 1])
    same, _ = check_orderings(np.array([[2, 0, 1], [1, -1, -1]]), lengths)
    np.testing.assert_array_equal(same, targets)


@pytest.mark.parametrize(
    ("y", "message"),
    [
        ([[0, 1, 2]], r"X and y have different numbers of samples: 2 and 1"),
        ([[0, 1, 1], [0, 1]], r"y\[0\] repeats index 1"),
        ([[0, 1, 2], [0, 2]], r"y\[1\] holds index 2, outside the 2 positions of X\[1\]"),
        ([[0, 1, -3], [0, 1]], r"y\[0\] holds index -3"),
        ([[0, -1, 2], [0, 1]], r"y\[0\] has -1 padding before its last index"),
        ([[0, 1, 2], []], r"y\[1\] is empty"),
        ([[0, 1.5, 2], [0, 1]], r"y\[0\] holds non-integer values"),
        ([["a", "b"], [0, 1]], r"y\[0\] holds non-integer values"),
        ([[[0, 1]], [0, 1]], r"y\[0\] must be a 1-D sequence"),
    ],
)
def test_bad_orderings_are_rejected_naming_the_sample(y, message):
    with pytest.raises(ValueError, match=message):
        check_orderings(y, np.array([3, 2]))


def test_integral_floats_are_accepted_as_indices():
    targets, _ = check_orderings([[1.0, 0.0]], np.array([2]))
    np.testing.assert_array_equal(targets, [[1, 0]])


def test_values_overflowing_float32_are_rejected_naming_the_step():
    message = r"X\[1\] holds 1e\+39 at step 2, which overflows float32 \(.* ~3\.4e\+38\)"
    with pytest.raises(ValueError, match=message):
        check_numeric_sequences([[1.0, 2.0, 3.0], [1.0, 2.0, 1e39]])
    padded = check_numeric_sequences([[1.0, 1e39]], dtype=np.float64)
    assert padded.values[0, 1, 0] == 1e39


def test_integers_that_collapse_in_float32_are_rejected():
    large = 2**62
    with pytest.raises(ValueError, match=r"X\[1\] holds the distinct integers .* same float32"):
        check_numeric_sequences(np.array([[0, 1, 2], [large, large + 1, 5]]))


def test_large_integers_that_stay_distinct_in_float32_are_accepted():
    padded = check_numeric_sequences(np.array([[2**40, 2**41, -(2**50)]]))
    np.testing.assert_array_equal(padded.values[0, :, 0], [2**40, 2**41, -(2**50)])
    padded = check_numeric_sequences(
        np.array([[2**24, 2**24 + 1]], dtype=np.int64), dtype=np.float64
    )
    assert padded.values[0, 1, 0] == 2**24 + 1


def test_orderings_without_input_lengths_may_be_empty():
    orderings, counts = check_orderings([[5, 0], []], name="y_pred", allow_empty=True)
    np.testing.assert_array_equal(orderings, [[5, 0], [-1, -1]])
    np.testing.assert_array_equal(counts, [2, 0])
    orderings, counts = check_orderings([[]], allow_empty=True)
    assert orderings.shape == (1, 1) and counts.tolist() == [0]


@pytest.mark.parametrize(
    ("indices", "message"),
    [
        ([0, 0], r"tour repeats index 0"),
        ([0, -2], r"tour holds index -2, a negative index"),
        ([0, 3], r"tour holds index 3, outside the 3 positions of points \(valid: 0\.\.2\)"),
        ([[0]], r"tour must be a 1-D sequence"),
        ([0, [1, 2]], r"tour could not be read as an array"),
    ],
)
def test_one_ordering_is_checked_like_each_row_of_many(indices, message):
    with pytest.raises(ValueError, match=message):
        check_ordering(indices, name="tour", n_positions=3, sequence_name="points")


def test_one_numeric_sequence_is_checked_like_each_sample_of_many():
    np.testing.assert_array_equal(check_numeric_sequence([1, 2], name="points"), [[1.0], [2.0]])
    with pytest.raises(ValueError, match=r"points is an empty sequence"):
        check_numeric_sequence([], name="points")


@pytest.mark.parametrize(
    ("check", "what"),
    [
        (check_numeric_sequences, "numeric sequences"),
        (check_orderings, "orderings"),
        (check_token_sequences, "token sequences"),
    ],
)
def test_containers_follow_one_set_of_rules(check, what):
    with pytest.raises(TypeError, match=rf"Z must be a collection of {what} .* single string"):
        check("abc", name="Z")
    with pytest.raises(TypeError, match="Z is a sparse matrix"):
        check(scipy.sparse.csr_matrix(np.eye(2)), name="Z")
    with pytest.raises(ValueError, match=r"Z must be 2-D .* got an array of shape \(3,\)"):
        check(np.arange(3), name="Z")
    with pytest.raises(ValueError, match="Z holds no samples"):
        check([], name="Z")


@pytest.mark.parametrize(
    "X",
    [
        np.arange(12.0).reshape(3, 4),
        np.arange(24).reshape(2, 4, 3),
        np.array([[True, False], [False, False]]),
        np.array([[2**24, -(2**24)], [0, 1]], dtype=np.int64),
    ],
    ids=["2-D floats", "3-D integers", "booleans", "integers at float32's exact limit"],
)
def test_regular_arrays_are_read_as_their_samples_are(X):
    whole = check_numeric_sequences(X)
    one_by_one = check_numeric_sequences(list(X))
    np.testing.assert_array_equal(whole.values, one_by_one.values)
    np.testing.assert_array_equal(whole.lengths, one_by_one.lengths)
    assert whole.values.dtype == np.float32
    assert not np.shares_memory(whole.values, X)


@pytest.mark.parametrize(
    ("X", "message"),
    [
        (np.array([[1.0, 2.0], [2.0, np.nan]]), r"X\[1\] contains NaN or infinity"),
        (np.array([[1.0, 2.0], [1e300, 0.0]]), r"X\[1\] holds 1e\+300 at step 0"),
        (np.array([[0, 1], [2**24 + 1, 2**24]]), r"X\[1\] holds the distinct integers"),
        (np.zeros((2, 0)), r"X\[0\] is an empty sequence"),
        (np.zeros((2, 2, 0)), r"X\[0\] has zero features per step"),
    ],
)
def test_bad_regular_arrays_are_rejected_naming_the_sample(X, message):
    with pytest.raises(ValueError, match=message):
        check_numeric_sequences(X)


def test_regular_arrays_must_have_the_fitted_feature_count():
    with pytest.raises(ValueError, match="X has 3 features per step, but the estimator"):
        check_numeric_sequences(np.zeros((2, 4, 3)), n_features=2)


@pytest.mark.parametrize(
    ("y", "lengths", "options"),
    [
        (np.array([[2, 0, 1], [1, -1, -1]]), np.array([3, 2]), {}),
        (np.array([[3, 1, 0, 2], [0, 1, 2, 3]], dtype=np.uint16), np.array([4, 4]), {}),
        (np.array([[0, -1], [-1, -1]]), None, {"allow_empty": True}),
        (np.array([[1, 1], [0, 0]]), np.array([2, 2]), {"allow_repeats": True}),
        (np.array([[5, 7], [9, 3]]), None, {}),
        ([np.array([2, 0, 1]), np.array([1])], np.array([3, 2]), {}),
        ([np.array([0, -1]), np.array([], dtype=int)], None, {"allow_empty": True}),
    ],
)
def test_regular_ordering_arrays_are_read_as_their_rows_are(y, lengths, options):
    whole = check_orderings(y, lengths, **options)
    row_by_row = check_orderings([row.tolist() for row in y], lengths, **options)
    for got, expected in zip(whole, row_by_row, strict=True):
        np.testing.assert_array_equal(got, expected)
        assert got.dtype == expected.dtype


@pytest.mark.parametrize(
    ("y", "message"),
    [
        (np.array([[0, 1, 2]]), r"X and y have different numbers of samples: 2 and 1"),
        (np.array([[0, 1, 1], [0, 1, -1]]), r"y\[0\] repeats index 1"),
        (np.array([[0, 1, 2], [0, 2, -1]]), r"y\[1\] holds index 2, outside the 2 positions"),
        (np.array([[0, 1, -3], [0, 1, -1]]), r"y\[0\] holds index -3"),
        (np.array([[0, 1, 2], [0, -1, 1]]), r"y\[1\] has -1 padding before its last index"),
        (np.array([[0, 1, 2], [-1, -1, -1]]), r"y\[1\] is empty"),
        ([np.array([0, 1, 2]), np.array([0, 2])], r"y\[1\] holds index 2, outside"),
        ([np.array([0, 2, 2]), np.array([0, 1])], r"y\[0\] repeats index 2"),
    ],
)
def test_bad_ordering_arrays_are_rejected_naming_the_row(y, message):
    with pytest.raises(ValueError, match=message):
        check_orderings(y, np.array([3, 2]))
