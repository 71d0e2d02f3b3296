"""Marks shared by the test modules."""

import keras
import pytest

#: For tests whose subject does not depend on the Keras backend (scikit-learn's
#: plumbing, parameter checks, file validation, size estimates, learning that another
#: case already shows on every backend): ``make test`` runs them, on TensorFlow, and
#: ``make test-jax`` skips them.
once = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="backend-independent; runs once"
)
