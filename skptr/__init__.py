"""skptr: pointer networks and neural stack transducers as scikit-learn estimators.

Public names: :class:`PointerNetworkOrderer`, :class:`NeuralStackTransducer` and
``__version__``. Task generators live in :mod:`skptr.datasets`, metrics in
:mod:`skptr.metrics`.
"""

from importlib.metadata import PackageNotFoundError, version

from .pointer import PointerNetworkOrderer

try:
    __version__ = version("skptr")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

__all__ = ["PointerNetworkOrderer", "__version__"]
