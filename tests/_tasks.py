"""Small tasks drawn with plain NumPy, shared by the tests of unusual uses."""

import numpy as np


def sorting(n_samples, n_steps=5, seed=0):
    """Uniform numbers and the orderings that sort them ascending."""
    X = np.random.default_rng(seed).random((n_samples, n_steps))
    return X, np.argsort(X, axis=1)


def reversal(n_samples, seed=0, max_length=6):
    """Strings over "ab" of 1 to ``max_length`` characters and their reversals."""
    rng = np.random.default_rng(seed)
    X = [
        "".join(rng.choice(list("ab"), rng.integers(1, max_length + 1))) for _ in range(n_samples)
    ]
    return X, [s[::-1] for s in X]
