"""The numpydoc entries of the training parameters that every estimator shares.

:class:`~skptr._base.SequenceEstimatorBase` sets the shared training parameters; the
entries below, identical for every estimator, are written here once. A subclass's
docstring names them in its Parameters section with a line of its own::

    {shared: clipnorm, validation_fraction}

and the base class puts the entries there when the subclass is defined
(:func:`fill_shared`), so that ``help()`` and Sphinx show the full section. Entries
whose defaults or wording differ per estimator (``epochs``, ``batch_size``,
``learning_rate``, ``random_state``, ``callbacks``, ``dtype_policy``) stay in each
class's docstring.
"""

from __future__ import annotations

import re

__all__ = ["SHARED_PARAMETERS", "fill_shared"]

#: Each shared parameter's numpydoc entry, unindented (descriptions by 4 spaces).
SHARED_PARAMETERS = {
    "clipnorm": """\
clipnorm : float or None, default=1.0
    Maximum gradient norm.""",
    "validation_fraction": """\
validation_fraction : float, default=0.0
    Share of the training data held out to report ``val_loss`` each epoch.""",
    "early_stopping": """\
early_stopping : bool, default=False
    Stop when the monitored loss stops improving and restore the best weights.""",
    "n_iter_no_change": """\
n_iter_no_change : int, default=5
    Patience of early stopping, in epochs.""",
    "verbose": """\
verbose : int, default=0
    0 is silent, 1 shows a progress bar, 2 prints one line per epoch.""",
    "warm_start": """\
warm_start : bool, default=False
    Continue training the existing network on the next ``fit``.""",
    "devices": """\
devices : None, "all", keras.distribution.DataParallel or tf.distribute.Strategy, \
            default=None
    Where training and inference run: one device (None), data-parallel over every
    device (``"all"``), or the given distribution; ``batch_size`` stays the global
    batch size (see :doc:`/user_guide/scaling_out`).""",
}

_MARKER = re.compile(r"^(?P<indent>[ \t]*)\{shared: (?P<names>[^}\n]*)\}[ \t]*$", re.MULTILINE)


def _entries(match):
    indent = match["indent"]
    names = [name.strip() for name in match["names"].split(",")]
    unknown = [name for name in names if name not in SHARED_PARAMETERS]
    if unknown:
        raise ValueError(f"No shared parameter entries for {unknown}.")
    lines = "\n".join(SHARED_PARAMETERS[name] for name in names).splitlines()
    return "\n".join(indent + line if line else line for line in lines)


def fill_shared(doc):
    """``doc`` with each ``{shared: name, ...}`` line replaced by those parameters'
    entries, at that line's indentation (None stays None)."""
    if doc is None:
        return None
    return _MARKER.sub(_entries, doc)
