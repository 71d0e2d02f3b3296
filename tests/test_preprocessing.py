import re

import numpy as np
import pytest

from skptr.preprocessing import SequenceScaler, TextTokenizer


def test_statistics_ignore_padding_and_weigh_steps():
    X = [np.array([1.0, 3.0]), np.array([5.0])]
    scaler = SequenceScaler().fit(X)
    assert scaler.mean_ == pytest.approx([3.0])
    assert scaler.scale_ == pytest.approx([np.sqrt(8 / 3)])
    assert scaler.n_steps_seen_ == 3
    out = scaler.transform(X)
    assert isinstance(out, list) and [len(s) for s in out] == [2, 1]
    np.testing.assert_allclose(out[1], [(5.0 - 3.0) / np.sqrt(8 / 3)])


def test_layouts_are_preserved():
    rng = np.random.RandomState(0)
    X2 = rng.normal(3, 2, size=(5, 4))
    out2 = SequenceScaler().fit_transform(X2)
    assert out2.shape == (5, 4)
    np.testing.assert_allclose([out2.mean(), out2.std()], [0.0, 1.0], atol=1e-12)
    X3 = rng.normal(size=(5, 4, 2)) * [1.0, 10.0] + [0.0, 5.0]
    out3 = SequenceScaler().fit_transform(X3)
    assert out3.shape == (5, 4, 2)
    np.testing.assert_allclose(out3.reshape(-1, 2).std(axis=0), [1.0, 1.0])
    ragged = [rng.normal(size=(n, 2)) for n in (3, 1, 4)]
    out = SequenceScaler().fit_transform(ragged)
    assert [a.shape for a in out] == [(3, 2), (1, 2), (4, 2)]


def test_inverse_transform_round_trip_and_constant_features():
    X = [np.array([[1.0, 7.0], [2.0, 7.0]]), np.array([[4.0, 7.0]])]
    scaler = SequenceScaler().fit(X)
    assert scaler.scale_[1] == 1.0  # zero variance is left unscaled
    back = scaler.inverse_transform(scaler.transform(X))
    for original, restored in zip(X, back, strict=True):
        np.testing.assert_allclose(restored, original)


def test_feature_names_and_errors():
    scaler = SequenceScaler().fit(np.zeros((2, 3, 2)))
    assert scaler.get_feature_names_out().tolist() == ["x0", "x1"]
    assert scaler.get_feature_names_out(["x", "y"]).tolist() == ["x", "y"]
    with pytest.raises(ValueError, match="expected 2"):
        scaler.get_feature_names_out(["x"])
    with pytest.raises(ValueError, match="fitted with 2 features per step"):
        scaler.transform(np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"X\[1\] contains NaN"):
        SequenceScaler().fit([[1.0], [np.nan]])


def test_text_tokenizer():
    texts = ["The cat  sat", "a-dog"]
    assert TextTokenizer().fit_transform(texts).tolist() == [("The", "cat", "sat"), ("a-dog",)]
    assert TextTokenizer(split="char").fit_transform(["ab"]).tolist() == [("a", "b")]
    assert TextTokenizer(split=re.compile("-"), lowercase=True).fit_transform(
        ["A-Dog"]
    ).tolist() == [("a", "dog")]
    with pytest.raises(ValueError, match=r"X\[1\] is a int, not a str"):
        TextTokenizer().fit(["ok", 3])
    with pytest.raises(TypeError, match="single str"):
        TextTokenizer().fit("text")
