"""Skips the multi-device tests where the backend has fewer than two devices (the root
conftest.py splits the CPU in two before the backend starts)."""

import keras
import pytest


def _device_count():
    if keras.backend.backend() == "jax":
        import jax

        return len(jax.local_devices())
    import tensorflow as tf

    return len(tf.config.list_logical_devices("CPU"))


TWO_DEVICES = _device_count() >= 2


@pytest.fixture(autouse=True)
def _require_two_devices():
    if not TWO_DEVICES:
        pytest.skip("the backend has fewer than two devices")
