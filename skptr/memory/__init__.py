"""Neural stack, queue and deque transducers (Grefenstette et al. 2015)."""

from ._estimator import NeuralStackTransducer

__all__ = ["NeuralStackTransducer"]
