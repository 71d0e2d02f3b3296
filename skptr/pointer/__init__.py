"""Pointer networks: estimators that output an ordering of their input."""

from ._estimator import PointerNetworkOrderer

__all__ = ["PointerNetworkOrderer"]
