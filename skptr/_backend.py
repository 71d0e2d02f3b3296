"""Backend-specific settings, isolated here so model code stays on ``keras.ops``.

TensorFlow by default reserves almost all memory of every visible GPU in the first
process that touches it, so parallel searches (``n_jobs=2``, Dask workers) sharing a
card would fail. skptr turns on memory growth for each GPU before TensorFlow first uses
it, unless ``SKPTR_GPU_MEMORY_GROWTH=0`` is set in the environment.
"""

from __future__ import annotations

import contextlib
import logging
import os

import keras

__all__ = [
    "enable_gpu_memory_growth",
    "out_of_memory_as_error",
    "quiet_retracing",
    "scan",
]

_OUT_OF_MEMORY_MARKERS = ("ResourceExhaustedError", "RESOURCE_EXHAUSTED", "OutOfMemory")


def _is_out_of_memory(error):
    return any(
        marker in type(error).__name__ or marker in str(error)[:500]
        for marker in _OUT_OF_MEMORY_MARKERS
    )


def scan(body, carry, per_step):
    """``keras.ops.scan`` whose per-step outputs may differ from the carry in structure.

    Runs ``carry, output = body(carry, current)`` over the leading axis of
    ``per_step`` and returns the final carry and the outputs stacked along a new
    leading axis. On JAX (and other backends) this is ``keras.ops.scan``, which JAX
    differentiates under ``jit``. TensorFlow-specific: Keras' TensorFlow ``scan``
    requires the outputs to mirror the carry, and XLA can only differentiate a
    ``while_loop`` that has ``maximum_iterations``; there the first step runs before
    the loop to learn the outputs' structure, and the loop writes them into
    ``TensorArray`` objects.

    Parameters
    ----------
    body : callable
        ``body(carry, current) -> (carry, output)``.
    carry : nested structure of tensors
        The initial loop state.
    per_step : nested structure of tensors
        The inputs of the steps, stacked along their first axis (at least one step).

    Returns
    -------
    carry : nested structure of tensors
        The final loop state.
    outputs : nested structure of tensors
        The outputs of every step, stacked along the first axis.
    """
    if keras.backend.backend() != "tensorflow":
        return keras.ops.scan(body, carry, per_step)
    import tensorflow as tf

    n_steps = tf.shape(tf.nest.flatten(per_step)[0])[0]
    carry, first = body(carry, tf.nest.map_structure(lambda x: x[0], per_step))
    buffers = tf.nest.map_structure(
        lambda y: tf.TensorArray(y.dtype, size=n_steps, element_shape=y.shape).write(0, y),
        first,
    )

    def keep_going(t, carry, buffers):
        return t < n_steps

    def step(t, carry, buffers):
        carry, output = body(carry, tf.nest.map_structure(lambda x: x[t], per_step))
        buffers = tf.nest.map_structure(lambda b, y: b.write(t, y), buffers, output)
        return t + 1, carry, buffers

    _, carry, buffers = tf.while_loop(
        keep_going, step, (tf.constant(1), carry, buffers), maximum_iterations=n_steps - 1
    )
    return carry, tf.nest.map_structure(lambda b: b.stack(), buffers)


@contextlib.contextmanager
def quiet_retracing():
    """Hide TensorFlow's "triggered tf.function retracing" warnings inside the block.

    skptr pads inference inputs to a few shapes, so each compiled inference function
    traces a bounded number of times; TensorFlow's detector still counts the first
    traces of the many functions a search or a benchmark creates as "excessive". The
    warnings of the "tensorflow" logger are hidden while skptr runs inference.
    """
    if keras.backend.backend() != "tensorflow":
        yield
        return
    logger = logging.getLogger("tensorflow")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


@contextlib.contextmanager
def out_of_memory_as_error(estimator):
    """Turn a backend's out-of-memory error into a ``MemoryError`` that says what to do.

    TensorFlow raises ``ResourceExhaustedError`` and JAX an ``XlaRuntimeError``
    mentioning ``RESOURCE_EXHAUSTED`` when an allocation fails; both become a
    ``MemoryError`` naming the estimator's size hyperparameters.

    Parameters
    ----------
    estimator : SequenceEstimatorBase
        The estimator being fitted or used, named in the message.
    """
    try:
        yield
    except Exception as error:
        if isinstance(error, MemoryError) or not _is_out_of_memory(error):
            raise
        params = estimator.get_params(deep=False)
        sizes = ", ".join(
            f"{name}={params[name]}"
            for name in ("hidden_size", "embedding_dim", "memory_width", "batch_size")
            if name in params
        )
        raise MemoryError(
            f"{type(estimator).__name__} ran out of memory ({sizes}): the network or a "
            "batch of sequences does not fit. Reduce hidden_size or batch_size, or use "
            f"shorter sequences. The backend reported: {str(error).splitlines()[0][:300]}"
        ) from None


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
