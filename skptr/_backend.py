"""Backend-specific settings, isolated here so model code stays on ``keras.ops``.

TensorFlow by default reserves almost all memory of every visible GPU in the first
process that touches it, so parallel searches (``n_jobs=2``, Dask workers) sharing a
card would fail. skptr turns on memory growth for each GPU before TensorFlow first uses
it, unless ``SKPTR_GPU_MEMORY_GROWTH=0`` is set in the environment.
"""

from __future__ import annotations

import os

import keras

__all__ = ["enable_gpu_memory_growth"]


def enable_gpu_memory_growth():
    """Let TensorFlow allocate GPU memory as needed instead of all at once.

    Does nothing on other Keras backends, without GPUs, when
    ``SKPTR_GPU_MEMORY_GROWTH=0``, or once TensorFlow has already initialised its
    GPUs (their memory policy can no longer change then).

    Returns
    -------
    list of str
        Names of the GPUs whose memory growth was enabled.
    """
    if keras.backend.backend() != "tensorflow":
        return []
    if os.environ.get("SKPTR_GPU_MEMORY_GROWTH", "1") == "0":
        return []
    import tensorflow as tf

    enabled = []
    for gpu in tf.config.list_physical_devices("GPU"):
        try:
            tf.config.experimental.set_memory_growth(gpu, True)
        except RuntimeError:  # the GPUs were initialised before skptr was imported
            continue
        enabled.append(gpu.name)
    return enabled


enable_gpu_memory_growth()
