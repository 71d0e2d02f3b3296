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
#: The same for a training case that runs several times faster on JAX: ``make
#: test-jax`` runs it and ``make test`` skips it.
once_on_jax = pytest.mark.skipif(
    keras.backend.backend() != "jax", reason="backend-independent; runs once, on JAX"
)
#: The decorator of fixtures that fit models or make files: made once per test process.
#: A module fixture would be made again whenever pytest-xdist's work stealing interleaves
#: its module's tests with other modules'.
process_fixture = pytest.fixture(scope="session")
