"""Neural stack, queue and deque transducers (Grefenstette et al. 2015)."""

from .. import _startup  # noqa: F401 - starts the backend quietly, before Keras
from ._estimator import NeuralStackTransducer

__all__ = ["NeuralStackTransducer"]
