"""Random seeds owned by one fit: no process-global random state is read or written.

Keras draws the seed of an unseeded initializer, dropout layer or ``SeedGenerator``
from Python's global ``random`` module, and TensorFlow shuffles with its global seed.
skptr instead derives every seed a fit needs from the estimator's ``random_state``
and hands it to each initializer, layer and shuffle explicitly, so that two fits with
the same ``random_state`` give identical models even when they run concurrently in
threads, and the caller's random states stay untouched.
"""

from __future__ import annotations

import keras
import numpy as np
from sklearn.utils import check_random_state

__all__ = ["SeedStream", "draw_seed"]

MAX_SEED = 2**31 - 1


def draw_seed(random_state):
    """The root seed of a fit.

    Parameters
    ----------
    random_state : int, RandomState instance or None
        An int (scikit-learn's range, 0 to ``2**32 - 1``) is used as is, so distinct
        ints give distinct fits; a ``RandomState`` instance draws the seed, and
        ``None`` draws it from NumPy's global generator, as scikit-learn does.

    Returns
    -------
    int
    """
    if isinstance(random_state, int | np.integer) and not isinstance(random_state, bool):
        return int(random_state)
    return int(check_random_state(random_state).randint(MAX_SEED))


class SeedStream:
    """Independent integer seeds derived, in a fixed order, from one seed.

    Parameters
    ----------
    seed : int
        The root seed; the same root gives the same sequence of seeds.
    """

    def __init__(self, seed):
        self._sequence = np.random.SeedSequence(int(seed))

    def next(self):
        """Return the next seed, an int in ``[0, 2**31 - 1)``."""
        (child,) = self._sequence.spawn(1)
        return int(child.generate_state(1, dtype=np.uint32)[0]) % MAX_SEED

    def glorot_uniform(self):
        """A seeded Glorot-uniform initializer (the Keras default for kernels)."""
        return keras.initializers.GlorotUniform(seed=self.next())

    def orthogonal(self):
        """A seeded orthogonal initializer (the Keras default for recurrent kernels)."""
        return keras.initializers.Orthogonal(seed=self.next())

    def uniform(self):
        """A seeded uniform initializer on [-0.05, 0.05] (the Keras default for embeddings)."""
        return keras.initializers.RandomUniform(-0.05, 0.05, seed=self.next())

    def normal(self):
        """A seeded normal initializer with standard deviation 0.05."""
        return keras.initializers.RandomNormal(stddev=0.05, seed=self.next())

    def seed_generator(self, name):
        """A seeded Keras ``SeedGenerator`` (for dropout and training noise)."""
        return keras.random.SeedGenerator(seed=self.next(), name=name)
