"""Bounds on every size, checked before any work starts.

Two kinds of bound keep a hyperparameter, an input or a file from costing unbounded
memory or time:

* **Parameter bounds** (:data:`MAX_WIDTH`, :data:`MAX_DEPTH`, ...) are upper limits in
  the estimators' ``_parameter_constraints``: values that no machine could build a
  network for fail in parameter validation, before anything is built.
* **Memory estimates**: each estimator counts the numbers its network's weights, a
  training batch and a decoding batch hold, and :func:`check_memory` refuses with a
  ``MemoryError`` naming the parameters when an estimate exceeds this machine's
  physical memory, instead of letting the allocation hang the machine or get the
  process killed. The estimates are deliberately coarse (within a small factor of
  the real peak), so they only refuse what cannot fit.
"""

from __future__ import annotations

import functools
import os

__all__ = [
    "BYTES_PER_NUMBER",
    "MAX_COUNT",
    "MAX_DEPTH",
    "MAX_INITIALISATIONS",
    "MAX_WIDTH",
    "check_memory",
    "physical_memory",
]

#: Widths of vectors and layers (``hidden_size``, ``embedding_dim``, ``memory_width``)
#: and beam widths: a recurrent layer this wide alone holds 4·10¹² weights.
MAX_WIDTH = 2**20
#: Stacked layers and glimpses: each is a layer built in Python, one after another.
MAX_DEPTH = 1024
#: Initialisations tried by one fit (``n_init``).
MAX_INITIALISATIONS = 2**16
#: Counts of epochs, steps and tokens: the backends count them in 32-bit integers.
MAX_COUNT = 2**31 - 1
#: Bytes of a float32 weight or activation.
BYTES_PER_NUMBER = 4
# Assumed when the operating system does not tell the machine's memory.
_FALLBACK_MEMORY = 2**40


@functools.cache
def physical_memory():
    """Bytes of physical memory of this machine (1 TiB if the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return _FALLBACK_MEMORY


def _gib(n_bytes):
    return f"{n_bytes / 2**30:,.1f} GiB"


def check_memory(owner, what, n_numbers, settings, advice):
    """Raise a ``MemoryError`` if ``n_numbers`` float32 numbers exceed physical memory.

    Parameters
    ----------
    owner : str
        Who needs the memory (the estimator's class name), named in the message.
    what : str
        What needs it ("the network's weights", "a training batch", ...).
    n_numbers : int
        Estimated numbers held at once.
    settings : dict
        The parameters and data sizes the estimate comes from, named in the message.
    advice : str
        What to change.

    Raises
    ------
    MemoryError
        If the estimate exceeds :func:`physical_memory`.
    """
    needed = int(n_numbers) * BYTES_PER_NUMBER
    available = physical_memory()
    if needed > available:
        described = ", ".join(f"{name}={value}" for name, value in settings.items())
        raise MemoryError(
            f"{owner}: {what} would need about {_gib(needed)} ({described}), more than the "
            f"{_gib(available)} of memory of this machine. {advice}"
        )
