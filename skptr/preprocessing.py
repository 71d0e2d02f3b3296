"""Sequence-aware transformers for scikit-learn Pipelines.

``SequenceScaler`` standardises numeric sequences per feature, over real steps only, so
padding and sequence lengths do not bias the statistics. ``TextTokenizer`` turns text
into token sequences for :class:`~skptr.NeuralStackTransducer`.
"""

from __future__ import annotations

import re
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from ._sequences import check_numeric_sequences

__all__ = ["SequenceScaler", "TextTokenizer"]


def _restore_layout(X, values, lengths):
    """Return scaled values in the layout of ``X``: 2-D, 3-D or a list of arrays."""
    if hasattr(X, "__array__") and not isinstance(X, list | tuple | np.ndarray):
        X = np.asarray(X)
    if isinstance(X, np.ndarray) and X.dtype != object:
        return values[:, :, 0] if X.ndim == 2 else values
    return [
        values[i, :length, 0] if np.ndim(sample) == 1 else values[i, :length]
        for i, (sample, length) in enumerate(zip(X, lengths, strict=True))
    ]


class SequenceScaler(TransformerMixin, BaseEstimator, auto_wrap_output_keys=None):
    """Standardise each feature of numeric sequences over their real steps.

    Means and standard deviations are computed per feature over every step of every
    sequence, ignoring padding, so sequences of different lengths weigh by their steps.
    The output keeps the input's layout: a 2-D array stays 2-D, a 3-D array 3-D, and a
    list of sequences stays a list of arrays of the same lengths.

    Parameters
    ----------
    with_mean : bool, default=True
        Centre each feature.
    with_std : bool, default=True
        Scale each feature to unit variance (features with zero variance are left
        unscaled).

    Attributes
    ----------
    mean_ : ndarray of shape (n_features_in_,)
        Per-feature mean over all real steps.
    scale_ : ndarray of shape (n_features_in_,)
        Per-feature scale (standard deviation, 1 where it is 0).
    n_features_in_ : int
        Number of features per step.
    n_steps_seen_ : int
        Number of real steps the statistics were computed on.

    Examples
    --------
    >>> from skptr.preprocessing import SequenceScaler
    >>> SequenceScaler().fit_transform([[1.0, 3.0], [5.0]])
    [array([-1.22474487,  0.        ]), array([1.22474487])]
    """

    _parameter_constraints: ClassVar[dict] = {"with_mean": ["boolean"], "with_std": ["boolean"]}

    def __init__(self, with_mean=True, with_std=True):
        self.with_mean = with_mean
        self.with_std = with_std

    def fit(self, X, y=None):
        """Compute per-feature means and scales.

        Parameters
        ----------
        X : array-like or list of array-like
            Sequences: ``(n, T)``, ``(n, T, F)`` or a list of ``(T_i,)`` / ``(T_i, F)``.
        y : None
            Ignored.

        Returns
        -------
        self : SequenceScaler
        """
        self._validate_params()
        padded = check_numeric_sequences(X, dtype=np.float64)
        steps = padded.values[padded.mask]
        self.n_features_in_ = padded.n_features
        self.n_steps_seen_ = len(steps)
        self.mean_ = steps.mean(axis=0) if self.with_mean else np.zeros(padded.n_features)
        scale = steps.std(axis=0) if self.with_std else np.ones(padded.n_features)
        self.scale_ = np.where(scale > np.finfo(np.float64).eps, scale, 1.0)
        return self

    def _apply(self, X, function):
        check_is_fitted(self)
        padded = check_numeric_sequences(X, n_features=self.n_features_in_, dtype=np.float64)
        values = np.where(padded.mask[..., None], function(padded.values), 0.0)
        return _restore_layout(X, values, padded.lengths)

    def transform(self, X):
        """Standardise sequences.

        Parameters
        ----------
        X : array-like or list of array-like
            Sequences with ``n_features_in_`` features per step.

        Returns
        -------
        array or list of arrays
            The scaled sequences, in the layout of ``X``.
        """
        return self._apply(X, lambda values: (values - self.mean_) / self.scale_)

    def inverse_transform(self, X):
        """Undo :meth:`transform`.

        Parameters
        ----------
        X : array-like or list of array-like
            Scaled sequences.

        Returns
        -------
        array or list of arrays
            The sequences in their original units, in the layout of ``X``.
        """
        return self._apply(X, lambda values: values * self.scale_ + self.mean_)

    def get_feature_names_out(self, input_features=None):
        """Names of the per-step features (unchanged by scaling).

        Parameters
        ----------
        input_features : array-like of str, optional
            Names of the input features; defaults to ``x0 .. x{F-1}``.

        Returns
        -------
        ndarray of str
        """
        check_is_fitted(self)
        if input_features is None:
            return np.array([f"x{i}" for i in range(self.n_features_in_)], dtype=object)
        input_features = np.asarray(input_features, dtype=object)
        if len(input_features) != self.n_features_in_:
            raise ValueError(
                f"input_features has {len(input_features)} names, expected "
                f"{self.n_features_in_} (one per feature of a step)."
            )
        return input_features

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.three_d_array = True
        tags.input_tags.allow_nan = False
        tags.requires_fit = True
        return tags


class TextTokenizer(TransformerMixin, BaseEstimator, auto_wrap_output_keys=None):
    """Split texts into token sequences for the neural stack transducer.

    Stateless: ``fit`` only validates parameters. The output is a 1-D object array of
    tuples of tokens, which :class:`~skptr.NeuralStackTransducer` accepts as ``X``.

    Parameters
    ----------
    split : {"whitespace", "char"} or re.Pattern, default="whitespace"
        ``"whitespace"`` splits on runs of whitespace, ``"char"`` makes every character
        a token; a compiled regular expression (``re.compile("-")``) splits on its
        matches. Any other string is refused, so that a misspelt option is not taken
        for a pattern.
    lowercase : bool, default=False
        Lowercase the texts before splitting.

    Examples
    --------
    >>> from skptr.preprocessing import TextTokenizer
    >>> TextTokenizer().fit_transform(["the cat sat", "a dog"]).tolist()
    [('the', 'cat', 'sat'), ('a', 'dog')]
    """

    _parameter_constraints: ClassVar[dict] = {
        "split": [StrOptions({"whitespace", "char"}), re.Pattern],
        "lowercase": ["boolean"],
    }

    def __init__(self, split="whitespace", lowercase=False):
        self.split = split
        self.lowercase = lowercase

    def fit(self, X, y=None):
        """Validate the parameters; nothing is learned.

        Parameters
        ----------
        X : iterable of str
            Texts.
        y : None
            Ignored.

        Returns
        -------
        self : TextTokenizer
        """
        self._validate_params()
        self._tokenize_all(X)
        self.n_features_in_ = 1
        return self

    def _tokenize_all(self, X):
        if isinstance(X, str):
            raise TypeError("X must be a collection of texts, got a single str.")
        if not hasattr(X, "__len__"):
            raise TypeError(
                "X must be a collection of texts (a list, tuple, array or Series), got a "
                f"{type(X).__name__}."
            )
        result = np.empty(len(X), dtype=object)
        for index, text in enumerate(X):
            if not isinstance(text, str):
                raise ValueError(f"X[{index}] is a {type(text).__name__}, not a str.")
            if self.lowercase:
                text = text.lower()
            if self.split == "char":
                tokens = tuple(text)
            elif self.split == "whitespace":
                tokens = tuple(text.split())
            else:
                tokens = tuple(token for token in self.split.split(text) if token)
            result[index] = tokens
        return result

    def transform(self, X):
        """Split each text into tokens.

        Parameters
        ----------
        X : iterable of str
            Texts.

        Returns
        -------
        ndarray of shape (n_samples,), dtype object
            One tuple of tokens per text.
        """
        check_is_fitted(self)
        return self._tokenize_all(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.requires_fit = False
        return tags
