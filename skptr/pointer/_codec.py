"""The pointer network's codec: user data in, network arrays out, and back.

The codec validates sequences and orderings once per public call, turns them into the
arrays the network reads, and turns the decoder's outputs back into orderings and
pointer distributions indexed like the user's input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from sklearn.preprocessing import MaxAbsScaler

from .. import _schema
from .._batches import TrainingData
from .._limits import MAX_COUNT
from .._sequences import check_numeric_sequences, check_orderings
from ._cycles import canonical_indices, canonical_training

__all__ = ["PointerCodec", "feature_scale", "given_form"]


def given_form(X, sequences):
    """Samples ``X`` (validated as ``sequences``) as a cost receives them: a list as
    given, else an array when all have one length, else a list."""
    if isinstance(X, list):
        return X
    if np.all(sequences.lengths == sequences.max_length):
        return np.asarray(X)
    return list(X)


def feature_scale(values, lengths):
    """The largest magnitude of each feature over the valid steps of padded ``values``
    (n, T, F) of ``lengths`` (n,), 1 where a feature is always 0, as scikit-learn's
    :class:`~sklearn.preprocessing.MaxAbsScaler` finds it: the network divides its
    inputs by it, so that no feature outweighs the others by its units alone."""
    valid = np.arange(values.shape[1])[None, :] < lengths[:, None]
    return MaxAbsScaler().fit(values[valid]).scale_.astype(np.float64)


@dataclass(frozen=True)
class PointerCodec:
    """Encoding of numeric sequences and orderings for a :class:`PointerNetwork`.

    Parameters
    ----------
    n_features : int or None
        Features per step (None before the first fit: any width is accepted).
    ordered_subsets : bool
        Whether targets may stop before every position is used; their encoding then
        ends with the end-of-output pointer.
    cycle : {None, "directed", "undirected"}
        Whether targets are cycles (see :mod:`skptr.pointer._cycles`): they are then
        encoded in their canonical rotation, and decoded orderings are returned from
        their smallest index.
    """

    n_features: int | None = None
    ordered_subsets: bool = False
    cycle: str | None = None

    #: The estimator attributes that store a fitted codec, with their types (``cycle``
    #: is one of the hyperparameters recorded in ``network_params_``).
    FITTED_ATTRIBUTES: ClassVar[dict] = {
        "n_features_in_": _schema.int_between(1, MAX_COUNT),
        "ordered_subsets_": _schema.BOOL,
        "feature_scale_": _schema.POSITIVE_FLOATS_OR_NONE,
    }

    @classmethod
    def of(cls, estimator):
        """The codec of a fitted estimator (its fitted attributes and the ``cycle`` it
        was fitted with)."""
        return cls(
            estimator.n_features_in_,
            estimator.ordered_subsets_,
            estimator.network_params_["cycle"],
        )

    def sequences(self, X):
        """Validate and pad input sequences (see :func:`check_numeric_sequences`)."""
        return check_numeric_sequences(X, n_features=self.n_features)

    @classmethod
    def learn(cls, X, y, cycle=None):
        """Validate training data and return the codec fitted to it with its encoding.

        Parameters
        ----------
        X : array-like
            Training sequences.
        y : array-like or None
            Target orderings; None for a fit from a cost (see :meth:`encode_samples`).
        cycle : {None, "directed", "undirected"}, default=None
            Whether the targets are cycles.

        Returns
        -------
        codec : PointerCodec
            With ``n_features`` and ``ordered_subsets`` learned from the data.
        data : TrainingData
        """
        sequences = check_numeric_sequences(X)
        if y is None:
            codec = cls(sequences.n_features, False, cycle)
            return codec, codec.encode_samples(X, sequences)
        orderings, lengths = check_orderings(y, sequences.lengths)
        codec = cls(sequences.n_features, bool(np.any(lengths < sequences.lengths)), cycle)
        return codec, codec._encode_training(sequences, orderings, lengths)

    def encode_training(self, X, y):
        """Validate and encode more training data for this fitted codec (warm start).

        Raises
        ------
        ValueError
            If the data has another width, or holds ordered subsets while the codec was
            fitted on full permutations.
        """
        sequences = self.sequences(X)
        if y is None:
            return self.encode_samples(X, sequences)
        orderings, lengths = check_orderings(y, sequences.lengths)
        if not self.ordered_subsets and np.any(lengths < sequences.lengths):
            raise ValueError(
                "y holds orderings shorter than their inputs, but the estimator was first "
                "fitted on full permutations; refit without warm_start."
            )
        return self._encode_training(sequences, orderings, lengths)

    def _encode_training(self, sequences, orderings, ordering_lengths):
        if self.cycle is not None:
            orderings = canonical_training(
                orderings, ordering_lengths, sequences.values, sequences.lengths, self.cycle
            )
        targets = orderings
        if self.ordered_subsets:
            targets = np.full((len(orderings), orderings.shape[1] + 1), -1, dtype=np.int32)
            targets[:, :-1] = orderings
            targets[np.arange(len(orderings)), ordering_lengths] = sequences.max_length
        inputs = {
            "values": sequences.values,
            "lengths": sequences.lengths.astype(np.int32),
            "targets": targets,
        }
        return TrainingData(inputs, targets, sequences.lengths)

    @staticmethod
    def encode_samples(X, sequences):
        """Training data without targets, for a fit from a cost: the inputs hold each
        sample's position in ``X`` (``"index"``), and ``samples`` holds ``X`` in the
        form it was given (an array, else a list)."""
        samples = given_form(X, sequences)
        inputs = {
            "values": sequences.values,
            "lengths": sequences.lengths.astype(np.int32),
            "index": np.arange(sequences.n_samples, dtype=np.int32),
        }
        targets = np.zeros(sequences.n_samples, dtype=np.float32)
        return TrainingData(inputs, targets, sequences.lengths, samples)

    @staticmethod
    def training_extents(data):
        """Each training sample's input length and number of target steps (none in a
        fit from a cost), the extents along the padded axes of the inputs and of the
        targets (see :class:`~skptr._batches.LengthGroupedBatches`)."""
        if data.samples is not None:
            return data.lengths[:, None]
        return np.stack([data.lengths, (data.targets >= 0).sum(axis=1)], axis=1)

    @staticmethod
    def trim_batch(inputs, targets, sizes):
        """A training batch cut to ``sizes`` = (input steps, target steps), which hold
        every sample of the batch; the end-of-output pointer, the padded input length,
        becomes the new one."""
        if "targets" not in inputs:  # a fit from a cost
            return {**inputs, "values": inputs["values"][:, : sizes[0]]}, targets
        n_steps, n_outputs = sizes
        targets = targets[:, :n_outputs].copy()
        targets[targets == inputs["values"].shape[1]] = n_steps
        inputs = {
            "values": inputs["values"][:, :n_steps],
            "lengths": inputs["lengths"],
            "targets": targets,
        }
        return inputs, targets

    @staticmethod
    def decoder_inputs(sequences, n_rows):
        """The decoder's inputs for validated ``sequences``, padded to ``n_rows`` rows.

        Extra rows are one-step dummies, so that batches keep a few fixed shapes.
        """
        values = np.zeros((n_rows, *sequences.values.shape[1:]), dtype=sequences.values.dtype)
        values[: sequences.n_samples] = sequences.values
        lengths = np.ones(n_rows, dtype=np.int32)
        lengths[: sequences.n_samples] = sequences.lengths
        return {"values": values, "lengths": lengths}

    def canonical(self, orderings, lengths):
        """Cycles in the index convention predictions are returned in (unchanged when
        the targets are not cycles); see :func:`~skptr.pointer._cycles.canonical_indices`.
        """
        if self.cycle is None:
            return orderings
        return canonical_indices(orderings, lengths, self.cycle)[0]

    def decode(self, orderings, distributions, n_samples):
        """Orderings and pointer distributions from the decoder's outputs.

        Cycles are turned to the index convention of :meth:`canonical`, and the
        distributions of their steps move with them.

        Parameters
        ----------
        orderings : ndarray of shape (n_rows, T)
            Decoded orderings, -1 after each end; rows past ``n_samples`` are padding.
        distributions : ndarray of shape (n_rows, T, T + 1) or None
            The pointer distributions along them, if computed.
        n_samples : int

        Returns
        -------
        orderings : ndarray of shape (n_samples, n_outputs)
            -1 after each sample's end; ``n_outputs`` is the longest ordering.
        distributions : ndarray of shape (n_samples, n_outputs, max_length + 1) or None
        """
        orderings = np.asarray(orderings[:n_samples], dtype=np.int64)
        n_outputs = max(int((orderings >= 0).sum(axis=1).max()), 1)
        orderings = orderings[:, :n_outputs]
        if distributions is not None:
            distributions = np.asarray(distributions[:n_samples, :n_outputs])
        if self.cycle is not None:
            lengths = (orderings >= 0).sum(axis=1)
            orderings, source = canonical_indices(orderings, lengths, self.cycle)
            if distributions is not None:
                distributions = np.take_along_axis(distributions, source[..., None], axis=1)
        return orderings, distributions
