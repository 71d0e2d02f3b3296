import numpy as np
import pytest
import scipy.sparse

from skptr._sequences import check_token_sequences
from skptr.memory._tokens import decode_tokens, encode_tokens, learn_vocabulary, sequence_kind


def test_token_sequences_of_every_kind_become_token_lists():
    samples = ["ab", ("a", 1), [2, "b"], np.array([3, 4]), ""]
    tokens, given = check_token_sequences(samples)
    assert tokens == [["a", "b"], ["a", 1], [2, "b"], [3, 4], []]
    assert given is not samples and given == samples
    assert all(type(t) is int for t in tokens[3])


def test_a_two_dimensional_array_is_one_sequence_per_row():
    tokens, _ = check_token_sequences(np.array([[1, 2], [3, 4]]))
    assert tokens == [[1, 2], [3, 4]]


class _Column:
    """A container converted with ``to_numpy``, like a pandas Series."""

    def to_numpy(self):
        return np.array(["ab", "c"], dtype=object)


def test_a_dataframe_like_column_is_read_through_to_numpy():
    tokens, _ = check_token_sequences(_Column())
    assert tokens == [["a", "b"], ["c"]]


@pytest.mark.parametrize(
    ("X", "error", "message"),
    [
        ("abc", TypeError, "single str"),
        (scipy.sparse.csr_matrix(np.eye(2)), TypeError, "sparse input is not supported"),
        (5, TypeError, "got int"),
        (np.zeros((2, 2, 2)), ValueError, r"got an array of shape \(2, 2, 2\)"),
        ([], ValueError, "X holds no samples"),
        (["ab", None], ValueError, r"X\[1\] is None"),
        (["ab", b"cd"], ValueError, r"X\[1\] is a bytes object"),
        ([np.zeros((2, 2))], ValueError, r"X\[0\] must be a 1-D sequence"),
        ([{"a": 1}], ValueError, r"X\[0\] is of type dict, not a token sequence"),
        ([["a", ["b"]]], ValueError, r"X\[0\] has an unhashable token at position 1"),
        ([[1, 2j]], ValueError, r"X\[0\] has the complex token 2j"),
        ([["a"], [float("nan")]], ValueError, r"X\[1\] has a NaN token at position 0"),
        ([[0.5]], ValueError, r"X\[0\] has the number token 0\.5"),
    ],
)
def test_bad_token_sequences_are_rejected_naming_the_sample(X, error, message):
    with pytest.raises(error, match=message):
        check_token_sequences(X)


def test_vocabulary_ids_round_trip():
    tokens, samples = check_token_sequences(["ba", "ab"])
    vocabulary = learn_vocabulary(tokens)
    assert vocabulary.tolist() == ["a", "b"]
    ids = encode_tokens(tokens, vocabulary, name="X")
    kind, dtype = sequence_kind(samples)
    assert [decode_tokens(i, vocabulary, kind, dtype) for i in ids] == ["ba", "ab"]


def test_unknown_tokens_raise_or_map_to_the_unknown_id():
    vocabulary = learn_vocabulary([["a"]])
    with pytest.raises(ValueError, match=r"y\[0\] holds the token 'z' \(position 1\)"):
        encode_tokens([["a", "z"]], vocabulary, name="y", where="fit")
    (ids,) = encode_tokens([["a", "z"]], vocabulary, name="y", unknown=7)
    np.testing.assert_array_equal(ids, [0, 7])


def test_true_and_one_are_distinct_tokens_even_inside_tuples():
    tokens, samples = check_token_sequences([[True, 1, (True,), (1,), 0, False]])
    vocabulary = learn_vocabulary(tokens)
    assert len(vocabulary) == 6
    (ids,) = encode_tokens(tokens, vocabulary, name="y")
    assert len(set(ids.tolist())) == 6
    decoded = decode_tokens(ids, vocabulary, *sequence_kind(samples))
    assert [repr(token) for token in decoded] == ["True", "1", "(True,)", "(1,)", "0", "False"]


def test_a_token_of_another_type_is_unknown():
    vocabulary = learn_vocabulary([[1, 2]])
    with pytest.raises(ValueError, match=r"X\[0\] holds the token True"):
        encode_tokens([[True]], vocabulary, name="X")


def test_a_one_dimensional_array_of_strings_holds_one_string_per_sample():
    tokens, _ = check_token_sequences(np.array(["ab", "c"]))
    assert tokens == [["a", "b"], ["c"]]
