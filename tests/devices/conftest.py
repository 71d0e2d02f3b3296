"""Two virtual CPU devices for the multi-device tests.

The backends fix their devices when they start, so these tests run in a pytest process
of their own (``make test`` and ``make test-jax`` start one): on JAX,
``--xla_force_host_platform_device_count=2`` is added to ``XLA_FLAGS`` before JAX
starts; on TensorFlow, the CPU is split into two logical devices before TensorFlow
initialises its runtime. Where that is too late (the backend was started by tests
collected before these), the tests are skipped.
"""

import os

import pytest
from _two_processes import DEVICE_COUNT_FLAG


def _two_virtual_devices():
    backend = os.environ.get("KERAS_BACKEND", "tensorflow")
    if backend == "jax":
        if DEVICE_COUNT_FLAG not in os.environ.get("XLA_FLAGS", ""):
            os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {DEVICE_COUNT_FLAG}"
        import jax

        return len(jax.local_devices()) >= 2
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    try:
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * 2
        )
    except RuntimeError:  # TensorFlow's runtime had started
        pass
    return len(tf.config.list_logical_devices("CPU")) >= 2


TWO_DEVICES = _two_virtual_devices()


@pytest.fixture(autouse=True)
def _require_two_devices():
    if not TWO_DEVICES:
        pytest.skip("the backend started before two virtual devices could be set up")
