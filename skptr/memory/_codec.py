"""The transducer's codec: token sequences in, stream ids out, and back.

The codec validates token sequences once per public call, maps them to the stream ids
the network reads (see :mod:`skptr.memory._network`), and maps output ids back to
sequences of the kind the training targets had.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .. import _schema
from .._batches import TrainingData, power_of_two_at_least
from .._limits import MAX_COUNT
from .._sequences import check_token_sequences
from ._network import FIRST_INPUT_ID, PAD, SEPARATOR, UNKNOWN
from ._tokens import decode_tokens, encode_tokens, learn_vocabulary, sequence_kind

__all__ = ["TransducerCodec"]


@dataclass(frozen=True)
class TransducerCodec:
    """Encoding of token sequences for a :class:`TransducerNetwork`.

    Parameters
    ----------
    input_vocabulary, output_vocabulary : ndarray of dtype object
        Source and target tokens; a token's id is its position.
    target_kind : {"str", "tuple", "list", "array"}
        How predictions are written (see :func:`sequence_kind`).
    target_dtype : str or None
        The dtype of array targets.
    max_target_ratio : float
        Largest target-to-source length ratio seen in training.
    """

    input_vocabulary: np.ndarray
    output_vocabulary: np.ndarray
    target_kind: str
    target_dtype: str | None
    max_target_ratio: float

    #: The estimator attributes that store a fitted codec (see
    #: :meth:`fitted_attributes`), with their types.
    FITTED_ATTRIBUTES: ClassVar[dict] = {
        "input_vocabulary_": _schema.VOCABULARY,
        "output_vocabulary_": _schema.VOCABULARY,
        "_target_kind": _schema.one_of("str", "tuple", "list", "array"),
        "_target_dtype": _schema.DTYPE_OR_NONE,
        "_max_target_ratio": _schema.number_between(0, MAX_COUNT),
    }

    @classmethod
    def of(cls, estimator):
        """The codec of a fitted estimator (its fitted attributes)."""
        return cls(
            estimator.input_vocabulary_,
            estimator.output_vocabulary_,
            estimator._target_kind,
            estimator._target_dtype,
            estimator._max_target_ratio,
        )

    def fitted_attributes(self):
        """The estimator attributes that store this codec."""
        return {
            "input_vocabulary_": self.input_vocabulary,
            "output_vocabulary_": self.output_vocabulary,
            "_target_kind": self.target_kind,
            "_target_dtype": self.target_dtype,
            "_max_target_ratio": self.max_target_ratio,
        }

    @property
    def output_offset(self):
        """Stream id of output token 0."""
        return FIRST_INPUT_ID + len(self.input_vocabulary)

    # -------------------------------------------------------------- training
    @staticmethod
    def _pairs(X, y):
        sources, _ = check_token_sequences(X, "X")
        targets, target_samples = check_token_sequences(y, "y")
        if len(sources) != len(targets):
            raise ValueError(
                f"X and y have different numbers of samples: {len(sources)} and {len(targets)}."
            )
        return sources, targets, target_samples

    @classmethod
    def learn(cls, X, y):
        """Validate training data; return the codec fitted to it and its encoding."""
        sources, targets, target_samples = cls._pairs(X, y)
        if not any(targets):
            raise ValueError(
                "every target in y is empty: there is no output token to learn (a "
                "transducer needs at least one non-empty target)."
            )
        codec = cls(
            learn_vocabulary(sources),
            learn_vocabulary(targets),
            *sequence_kind(target_samples),
            max(len(t) / max(len(s), 1) for s, t in zip(sources, targets, strict=True)),
        )
        return codec, codec._encode_training(sources, targets)

    def encode_training(self, X, y):
        """Validate and encode more training data with this codec's vocabularies."""
        return self._encode_training(*self._pairs(X, y)[:2])

    def _encode_training(self, sources, targets):
        where = "the first fit (warm_start=True keeps its vocabulary)"
        source_ids = encode_tokens(sources, self.input_vocabulary, name="X", where=where)
        target_ids = encode_tokens(targets, self.output_vocabulary, name="y", where=where)
        n_steps = max(len(s) + 1 + len(t) for s, t in zip(source_ids, target_ids, strict=True))
        streams = np.full((len(source_ids), n_steps), PAD, dtype=np.int32)
        labels = np.full((len(source_ids), n_steps), -1, dtype=np.int32)
        for i, (source, target) in enumerate(zip(source_ids, target_ids, strict=True)):
            n, m = len(source), len(target)
            streams[i, :n] = source + FIRST_INPUT_ID
            streams[i, n] = SEPARATOR
            streams[i, n + 1 : n + 1 + m] = target + self.output_offset
            labels[i, n : n + m] = target + 1
            labels[i, n + m] = 0  # the end token
        lengths = np.fromiter((len(s) for s in source_ids), dtype=np.int32, count=len(sources))
        return TrainingData(streams, labels, lengths)

    @staticmethod
    def training_extents(data):
        """Each encoded training sample's stream steps that are not padding: its
        source, the separator and its target."""
        return data.lengths + (data.targets >= 0).sum(axis=1)

    @staticmethod
    def training_pairs(data):
        """The source stream ids and the target token ids of encoded training data.

        Parameters
        ----------
        data : TrainingData
            As returned by :meth:`learn` or :meth:`encode_training`.

        Returns
        -------
        sources : list of ndarray of int32
            Stream ids of each source, as :meth:`sources` returns them.
        targets : list of ndarray of int32
            Output token ids of each target.
        """
        streams, labels, lengths = data[:3]
        sources, targets = [], []
        for stream, label, n in zip(streams, labels, lengths, strict=True):
            n_target = int(np.flatnonzero(label[n:] == 0)[0])
            sources.append(stream[:n].astype(np.int32))
            targets.append(label[n : n + n_target] - 1)
        return sources, targets

    # ------------------------------------------------------------- inference
    def sources(self, X, handle_unknown="error"):
        """Validate sources; return their tokens and their stream ids.

        Parameters
        ----------
        X : sequence of token sequences
        handle_unknown : {"error", "ignore"}
            Whether a token not seen in training raises or becomes the unknown id.

        Returns
        -------
        tokens : list of list
        ids : list of ndarray of int32
        """
        tokens, _ = check_token_sequences(X, "X")
        unknown = -1 if handle_unknown == "ignore" else None
        ids = encode_tokens(tokens, self.input_vocabulary, name="X", unknown=unknown)
        return tokens, [np.where(s < 0, UNKNOWN, s + FIRST_INPUT_ID).astype(np.int32) for s in ids]

    def output_limit(self, source_steps, max_output_length=None):
        """Most output tokens to produce for sources of ``source_steps`` tokens."""
        if max_output_length is not None:
            return int(max_output_length)
        return math.ceil(2 * self.max_target_ratio * source_steps) + 10

    @staticmethod
    def left_padded(streams, n_rows=None):
        """Left-pad id sequences into one matrix of ``n_rows`` rows (extra rows are
        all padding), as wide as the longest sequence rounded up to a power of two, so
        that compiled inference functions see few shapes."""
        n_steps = power_of_two_at_least(max((len(s) for s in streams), default=1))
        n_rows = len(streams) if n_rows is None else n_rows
        padded = np.full((n_rows, n_steps), PAD, dtype=np.int32)
        for row, stream in enumerate(streams):
            if len(stream):
                padded[row, n_steps - len(stream) :] = stream
        return padded

    def trace_stream(self, source_ids, output_ids):
        """The stream the controller reads while producing ``output_ids``."""
        return np.concatenate([source_ids, [SEPARATOR], output_ids + self.output_offset]).astype(
            np.int32
        )

    @staticmethod
    def output_ids(classes, limit):
        """Output token ids from a row of decoded classes (0 ends the output)."""
        ended = np.flatnonzero(classes == 0)
        stop = int(ended[0]) if ended.size else limit
        return classes[: min(stop, limit)] - 1

    def decode(self, outputs):
        """Predictions, of the kind of the training targets, from output token ids."""
        predictions = np.empty(len(outputs), dtype=object)
        for i, ids in enumerate(outputs):
            predictions[i] = decode_tokens(
                ids, self.output_vocabulary, self.target_kind, self.target_dtype
            )
        return predictions

    def tokens(self, ids):
        """The output tokens of output ids."""
        return [self.output_vocabulary[j] for j in ids]
