"""Sizes of the transducer's work: the estimates of memory that bound a fit, a decoding
call and a trace before they start (see :mod:`skptr._limits`)."""

from __future__ import annotations

__all__ = ["activation_count", "step_count", "weight_count"]

_MEMORY_ENDS = {None: 0, "stack": 1, "queue": 1, "deque": 2}


def weight_count(est):
    """Estimated number of the weights of the network ``est`` (an estimator with its
    vocabularies and the hyperparameters the network is built with) describes."""
    hidden, ends, width = est.hidden_size, _MEMORY_ENDS[est.memory], est.memory_width
    n_tokens = len(est.input_vocabulary_) + len(est.output_vocabulary_) + 4
    controller = 4 * hidden * (est.embedding_dim + ends * width + hidden + 2)
    heads = hidden * ends * (width + 2)
    readout = (hidden + 1) * (len(est.output_vocabulary_) + 1)
    return n_tokens * est.embedding_dim + controller + heads + readout


def step_count(est, n_slots):
    """Numbers one sequence holds per step: the controller's activations, the vectors
    pushed and, where every step's strengths are kept (training, traces), the strength
    of each of the ``n_slots`` slots (1: only the current ones)."""
    ends = _MEMORY_ENDS[est.memory]
    controller = 8 * est.hidden_size + est.embedding_dim
    return controller + 3 * ends * est.memory_width + 2 * n_slots * ends


def activation_count(est, n_rows, n_steps):
    """Estimated numbers a training step holds for ``n_rows`` sequences of ``n_steps``
    steps, weights excluded."""
    return 2 * n_rows * n_steps * step_count(est, n_steps)
