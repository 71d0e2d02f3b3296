"""Backend-specific settings, isolated here so model code stays on ``keras.ops``.

skptr runs on the TensorFlow (default) and JAX backends of Keras, chosen the usual Keras
way (``KERAS_BACKEND`` or ``~/.keras/keras.json``); importing its estimators on another
backend raises an ``ImportError`` that names the supported ones.

Both backends by default reserve most of the memory of every visible GPU in the first
process that touches it, so parallel searches (``n_jobs=2``, Dask workers) sharing a
card would fail. Unless ``SKPTR_GPU_MEMORY_GROWTH=0`` is set in the environment, skptr
turns on TensorFlow's memory growth for each GPU before TensorFlow first uses it, and
sets ``XLA_PYTHON_CLIENT_PREALLOCATE=false`` for JAX when the variable is not set yet
(it takes effect if JAX has not yet started its GPU client).
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import signal
import threading

import keras
import numpy as np

__all__ = [
    "SUPPORTED_BACKENDS",
    "NetworkWrapper",
    "RaisePendingInterrupt",
    "check_backend",
    "enable_gpu_memory_growth",
    "host_function",
    "interrupts_between_steps",
    "new_network_built",
    "out_of_memory_as_error",
    "quiet_retracing",
    "replica_rows",
    "replica_sum",
    "scan",
    "write_slot",
]

#: The Keras backends skptr runs on, the default first.
SUPPORTED_BACKENDS = ("tensorflow", "jax")

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


def host_function(function, arguments):
    """Call a NumPy function from inside a compiled graph, once per call of the graph.

    ``function(*arrays)`` receives the ``arguments`` as NumPy arrays and returns a
    float array with one number per row of the first argument; the result is a float32
    tensor of that shape, with no gradient. On JAX this is ``jax.pure_callback``;
    TensorFlow-specific: ``tf.numpy_function``, which runs in a graph but not under XLA
    (an estimator whose fit calls it trains its steps as a graph there).
    """

    def on_host(*arrays):
        return np.asarray(function(*map(np.asarray, arrays)), dtype=np.float32)

    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        result = tf.numpy_function(on_host, list(arguments), tf.float32, stateful=False)
        return tf.ensure_shape(result, arguments[0].shape[:1])
    import jax

    shape = jax.ShapeDtypeStruct(arguments[0].shape[:1], np.float32)
    return jax.pure_callback(on_host, shape, *arguments)


def write_slot(array, slot, update):
    """``array`` with ``update`` written at index ``slot`` of its second axis.

    Writes only what changes, where ``keras.ops.where`` over a mask would rewrite the
    whole array: in a loop that writes one slot per step of a memory that grows with
    the steps, this is the difference between linear and quadratic work per sequence.
    On JAX (and other backends) this is ``keras.ops.slice_update``. TensorFlow-specific:
    its ``slice_update`` is an XLA operation without a gradient outside XLA, so
    ``tensor_scatter_nd_update`` writes the slot of every row.

    Parameters
    ----------
    array : tensor of shape (batch, slots, ...)
    slot : int or scalar int tensor
    update : tensor of shape (batch, ...)

    Returns
    -------
    tensor of the shape of ``array``
    """
    slot = keras.ops.cast(slot, "int32")
    update = keras.ops.cast(update, array.dtype)
    if keras.backend.backend() != "tensorflow":
        start = (0, slot) + (0,) * (len(array.shape) - 2)
        return keras.ops.slice_update(array, start, keras.ops.expand_dims(update, 1))
    import tensorflow as tf

    rows = tf.range(tf.shape(array)[0], dtype=tf.int32)
    indices = tf.stack([rows, tf.fill(tf.shape(rows), slot)], axis=1)
    return tf.tensor_scatter_nd_update(array, indices, update)


def _replicas_of_the_step():
    """The replica context of a step that a ``tf.distribute`` strategy runs on several
    replicas; None elsewhere (one replica, cross-replica code, JAX)."""
    if keras.backend.backend() != "tensorflow":
        return None
    import tensorflow as tf

    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync < 2:
        return None
    return context


def replica_sum(value):
    """``value`` summed over the replicas of a distributed training step.

    TensorFlow-specific: inside a step that a ``tf.distribute`` strategy runs on
    several replicas, each replica sees its part of the batch, and this all-reduces
    ``value`` over them. Elsewhere, and on JAX, where a distributed step is one
    program over the whole batch, it returns ``value``.
    """
    context = _replicas_of_the_step()
    return value if context is None else context.all_reduce("sum", value)


def replica_rows(draw, shape):
    """``draw(shape)``, a random draw whose first axis is the batch, for the rows of
    the batch that this replica holds.

    TensorFlow-specific: under a ``tf.distribute`` strategy every replica runs the
    step on its part of the batch with the same seed state, so each would draw the
    same numbers for different samples. Each replica instead draws for the whole batch
    and keeps its own rows: the batch gets the numbers one device draws. Elsewhere,
    and on JAX, this is ``draw(shape)``.
    """
    context = _replicas_of_the_step()
    if context is None:
        return draw(shape)
    rows = shape[0]
    start = context.replica_id_in_sync_group * rows
    whole = draw((rows * context.num_replicas_in_sync, *shape[1:]))
    return whole[start : start + rows]


class NetworkWrapper(keras.Model):
    """A model that runs a method of a built network (its inference), sharing its
    weights, so that ``predict_on_batch`` compiles that method.

    It is built when the network is: on JAX, Keras' ``predict_on_batch`` builds an
    unbuilt model by running it once outside the compiled function, which for a
    decoding loop costs about as much as compiling it (a first ``predict`` of 300
    samples took 3.0 s instead of 1.7 s for the transducer and 3.8-4.2 s instead of
    1.4-1.5 s for the pointer network; see the changelog).

    Parameters
    ----------
    network : keras.Model
        The network whose weights the wrapper uses.
    **kwargs
        Passed to :class:`keras.Model`.
    """

    def __init__(self, network, **kwargs):
        super().__init__(**kwargs)
        self.network = network
        self.built = bool(network.built)


_ATTACHING = threading.RLock()


def attached(owner, name, make):
    """The object ``owner`` keeps under ``name``, made by ``make()`` on first use.

    It is set past Keras' attribute tracking (it is not a layer or variable of a
    model), so it lives and dies with its owner and never reaches a saved file; made
    under a lock, so threads asking at once share one.
    """
    with _ATTACHING:
        value = vars(owner).get(name)
        if value is None:
            value = make()
            object.__setattr__(owner, name, value)
        return value


def _jax_inference_function(model):
    """The model's compiled JAX inference function (see :func:`predict_on_batch`)."""

    def make():
        import jax

        def infer(trainable, non_trainable, inputs):
            return model.stateless_call(trainable, non_trainable, inputs)[0]

        return jax.jit(infer)

    return attached(model, "_skptr_jax_inference", make)


def predict_on_batch(model, inputs):
    """``model``'s outputs for one batch, as NumPy arrays; any number of threads may
    call it at once.

    On JAX, Keras' ``predict_on_batch`` donates the variables' buffers to its compiled
    function and puts the returned ones back, so another thread reading the variables
    meanwhile finds deleted buffers; here the model runs as a stateless function of the
    variables' current values, compiled once per model, which reads them and donates
    nothing. TensorFlow's compiled functions read the variables in place.
    """
    if keras.backend.backend() != "jax":
        return model.predict_on_batch(inputs)
    trainable = [variable.value for variable in model.trainable_variables]
    non_trainable = [variable.value for variable in model.non_trainable_variables]
    outputs = _jax_inference_function(model)(trainable, non_trainable, inputs)
    return keras.tree.map_structure(np.asarray, outputs)


class DenseGradientAdam(keras.optimizers.Adam):
    """Adam that sums TensorFlow's sparse gradients into dense ones before its update.

    TensorFlow differentiates an embedding lookup into one gradient row per token
    occurrence (``tf.IndexedSlices``). Keras' Adam squares those rows one by one for
    its second moment, so a token seen ``k`` times in a batch gets the sum of ``k``
    squares instead of the square of its summed gradient, and its step differs from
    the one JAX, whose gradients are dense, computes from the same weights. Summing the
    rows first gives every backend the same, textbook, update. Gradients are clipped
    as one device would clip them, also under a ``tf.distribute`` strategy.
    """

    def apply(self, grads, trainable_variables=None):
        if keras.backend.backend() == "tensorflow":
            import tensorflow as tf

            grads = [
                tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads
            ]
        return super().apply(grads, trainable_variables)

    def _clip_gradients(self, grads):
        """Clip the gradients of the whole batch, also under a ``tf.distribute``
        strategy.

        TensorFlow-specific: Keras clips each replica's part of the gradients before
        it adds them up across replicas, which clips a different gradient than one
        device does. Under a strategy of several replicas, the gradients are summed
        first, clipped, and each replica keeps an equal share of the result for Keras'
        sum.
        """
        context = _replicas_of_the_step()
        if context is None or not (self.clipnorm or self.global_clipnorm or self.clipvalue):
            return super()._clip_gradients(grads)
        present = [i for i, g in enumerate(grads) if g is not None]
        summed = context.all_reduce("sum", [grads[i] for i in present])
        share = 1.0 / context.num_replicas_in_sync
        clipped = list(grads)
        for i, g in zip(present, super()._clip_gradients(summed), strict=True):
            clipped[i] = g * share
        return clipped


@contextlib.contextmanager
def quiet_retracing():
    """Hide TensorFlow's "triggered tf.function retracing" warnings inside the block.

    skptr pads inference inputs to a few shapes, so each compiled function traces a
    bounded number of times; TensorFlow's detector still counts the first traces of the
    many functions that repeated fits, a search or a benchmark create as "excessive".
    The warnings of the "tensorflow" logger are hidden while skptr trains or runs
    inference.
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


#: On JAX, JAX's compilation caches are cleared once the process holds more memory
#: mappings than this, or than half of the kernel's limit (``vm.max_map_count``) where
#: that is lower. A dead model's executables take about 40 KB of memory per mapping, so
#: this bounds them to about 1.3 GB.
MAPS_BEFORE_CACHE_CLEAR = 32_768

#: Where the kernel does not report mappings (no ``/proc``), the caches are cleared
#: every this many new networks instead.
NETWORKS_PER_CACHE_CLEAR = 16

_networks_since_clear = 0
_clear_lock = threading.Lock()


def _memory_maps():
    """``(mappings held by this process, the kernel's limit)``, or ``None`` where the
    kernel does not report them."""
    try:
        with open("/proc/sys/vm/max_map_count") as limit_file:
            limit = int(limit_file.read())
        with open("/proc/self/maps", "rb") as maps:
            held = sum(1 for _ in maps)
    except (OSError, ValueError):
        return None
    return held, limit


def new_network_built():
    """Account for a newly built network; on JAX, free dead models' executables when
    they crowd the process.

    JAX keeps the compiled executables of every ``jit`` function it has run until its
    caches are cleared, also after the Keras model that owned them is gone: each fitted
    and used estimator leaves about 1,000 memory mappings behind on Linux, and XLA's
    CPU compiler crashes once a process reaches the kernel's limit
    (``vm.max_map_count``, 65,530 by default), i.e. after some 65 estimators in one
    grid search. Once the process holds more than half of that limit, or more than
    :data:`MAPS_BEFORE_CACHE_CLEAR` mappings, ``jax.clear_caches()`` frees them;
    models still in use compile their functions again on their next call, so the
    caches are not cleared while there is room. Where the kernel does not report its
    mappings, they are cleared every :data:`NETWORKS_PER_CACHE_CLEAR` new networks.
    Does nothing on TensorFlow.
    """
    global _networks_since_clear
    if keras.backend.backend() != "jax":
        return
    maps = _memory_maps()
    with _clear_lock:
        _networks_since_clear += 1
        if maps is None:
            crowded = _networks_since_clear >= NETWORKS_PER_CACHE_CLEAR
        else:
            held, limit = maps
            crowded = held > min(MAPS_BEFORE_CACHE_CLEAR, limit // 2)
        if not crowded:
            return
        _networks_since_clear = 0
    import jax

    jax.clear_caches()


_interrupt_pending = threading.Event()


@contextlib.contextmanager
def interrupts_between_steps():
    """Hold a Ctrl+C that arrives inside the block until a training step ends.

    An interrupt that lands while XLA compiles a step leaves JAX's compilation state
    broken (the process can crash when it exits), and one that lands while TensorFlow
    traces a step can be lost in the tracing; so in the main thread the first SIGINT
    only marks an interrupt as pending: :class:`RaisePendingInterrupt` raises it
    between steps, and leaving the block raises it if no step ended since. A second
    Ctrl+C interrupts at once. Does nothing in other threads, or when the program
    installed a SIGINT handler of its own.
    """
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return

    def hold(signum, frame):
        if _interrupt_pending.is_set():
            signal.signal(signal.SIGINT, signal.default_int_handler)
            raise KeyboardInterrupt
        _interrupt_pending.set()

    _interrupt_pending.clear()
    signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        pending = _interrupt_pending.is_set()
        _interrupt_pending.clear()
    if pending:
        raise KeyboardInterrupt


class RaisePendingInterrupt(keras.callbacks.Callback):
    """Raise, between training steps, an interrupt that
    :func:`interrupts_between_steps` holds."""

    def _check(self, *args, **kwargs):
        # Only the main thread's fit holds interrupts; a fit in another thread leaves
        # them to it.
        if _interrupt_pending.is_set() and threading.current_thread() is threading.main_thread():
            _interrupt_pending.clear()
            raise KeyboardInterrupt

    on_train_batch_end = on_test_batch_end = on_predict_batch_end = on_epoch_end = _check


def training_stopped(network):
    """Forget the step state that an interrupted fit of ``network`` left in Keras' JAX
    trainer.

    Its buffers may have been consumed by the compiled step; once the caller has given
    the variables their values back, nothing may copy that state over them. Does
    nothing on TensorFlow, whose steps update the variables in place.
    """
    if keras.backend.backend() == "jax":
        network._jax_state = None
        network._jax_state_synced = True


def check_backend():
    """Raise an ``ImportError`` unless Keras runs on a supported backend.

    Raises
    ------
    ImportError
        On a backend other than those in :data:`SUPPORTED_BACKENDS`.
    """
    backend = keras.backend.backend()
    if backend not in SUPPORTED_BACKENDS:
        raise ImportError(
            f"skptr's estimators run on the Keras backends {', '.join(SUPPORTED_BACKENDS)}; "
            f"Keras is configured for {backend!r}. Set KERAS_BACKEND=tensorflow or "
            "KERAS_BACKEND=jax (or the backend in ~/.keras/keras.json) before importing "
            "Keras."
        )


def enable_gpu_memory_growth():
    """Let the backend allocate GPU memory as needed instead of all at once.

    On TensorFlow, turns on memory growth for each GPU (possible only before TensorFlow
    has initialised its GPUs); on JAX, sets ``XLA_PYTHON_CLIENT_PREALLOCATE=false``
    unless the variable is already set (effective only before JAX starts its GPU
    client). Does nothing when ``SKPTR_GPU_MEMORY_GROWTH=0``.

    Returns
    -------
    list of str
        Names of the TensorFlow GPUs whose memory growth was enabled (always empty on
        JAX).
    """
    if os.environ.get("SKPTR_GPU_MEMORY_GROWTH", "1") == "0":
        return []
    if keras.backend.backend() == "jax":
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
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


def _start_tensorflow_with_the_backend():
    """On JAX, import TensorFlow now if it is installed (it is a dependency of skptr).

    Keras' serialisation imports TensorFlow whenever it is installed, to recognise its
    types, also on the JAX backend: the first network built would start it in the
    middle of a fit, printing TensorFlow's start-up notices there. Starting it with the
    backend keeps ``verbose=0`` fits silent and lets ``python -m skptr`` hide the
    notices with the backend's own.
    """
    if keras.backend.backend() != "tensorflow" and importlib.util.find_spec("tensorflow"):
        import tensorflow  # noqa: F401


check_backend()
enable_gpu_memory_growth()
_start_tensorflow_with_the_backend()
