"""Pointer networks: estimators that output an ordering of their input."""

from .. import _startup  # noqa: F401 - starts the backend quietly, before Keras
from ._estimator import PointerNetworkOrderer

__all__ = ["PointerNetworkOrderer"]
