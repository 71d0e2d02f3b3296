"""skptr: pointer networks and neural stack transducers as scikit-learn estimators.

Public names: :class:`PointerNetworkOrderer`, :class:`NeuralStackTransducer`,
:func:`load` (for files written by ``est.save``) and ``__version__``. Task
generators live in :mod:`skptr.datasets`, metrics in :mod:`skptr.metrics`. The
estimators are imported on first use, so that the data generators and metrics can be
used without loading TensorFlow.
"""

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("skptr")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

_LAZY = {
    "PointerNetworkOrderer": ".pointer",
    "NeuralStackTransducer": ".memory",
    "load": "._persistence",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name):
    if name in _LAZY:
        import_module("._startup", __name__)  # the backend, started quietly
        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module 'skptr' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
