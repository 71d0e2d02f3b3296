"""Starting the Keras backend without the runtime's start-up notices.

TensorFlow's C++ runtime writes notices straight to standard error when it starts and
when it first runs (absl logging set-up, oneDNN options, missing CUDA drivers, its
input pipeline's memory settings), whatever ``TF_CPP_MIN_LOG_LEVEL`` says for some of
them; on the JAX backend Keras starts TensorFlow too. Importing this module starts the
backend, and runs TensorFlow's first operations, with standard error captured: the
captured text is shown only if starting fails. ``TF_CPP_MIN_LOG_LEVEL`` defaults to 3
(fatal errors only) unless it is set; set it before importing skptr to see more.
``TF_CPU_ALLOCATOR_USE_BFC`` defaults to ``true``: TensorFlow's pooling allocator for
tensors in host memory (``false`` gives every tensor its own ``malloc``).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile

__all__ = ["start_backend_quietly"]


def _first_tensorflow_operations(started_before):
    """Run what makes TensorFlow's runtime print its one-time notices: finding its
    devices and, on the TensorFlow backend, a dataset made by a Python generator; if
    TensorFlow was started before skptr (so with the log level it had then), also a
    graph with logical operations compiled with XLA."""
    if not importlib.util.find_spec("tensorflow"):
        return
    import keras
    import tensorflow as tf

    tf.config.list_logical_devices()
    # skptr feeds JAX without tf.data, and once a tf.data pipeline has run in a
    # process, JAX's compiled calls in that process run about half as fast.
    if keras.backend.backend() == "tensorflow":
        dataset = tf.data.Dataset.from_generator(
            lambda: iter([0]), output_signature=tf.TensorSpec((), tf.int64)
        )
        list(dataset)
    if started_before:
        logical = tf.function(lambda x: tf.logical_and(x > 0, x < 2), jit_compile=True)
        logical(tf.constant([1.0]))


def start_backend_quietly():
    """Import skptr's backend module (and so Keras) with standard error captured."""
    if "skptr._backend" in sys.modules:
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    # Pools that keep freed tensors' memory for the next training step, rather than
    # returning it to the operating system and faulting it back in at every step.
    os.environ.setdefault("TF_CPU_ALLOCATOR_USE_BFC", "true")
    started_before = "tensorflow" in sys.modules
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            from . import _backend  # noqa: F401 - starts the backend

            _first_tensorflow_operations(started_before)
        except BaseException:
            os.dup2(saved, 2)
            captured.seek(0)
            sys.stderr.write(captured.read().decode(errors="replace"))
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)


start_backend_quietly()
