"""Where an estimator runs: one device, or data-parallel over several.

skptr does not distribute anything itself: the ``devices`` hyperparameter selects the
backend's own machinery and this module only resolves it.

- ``None``: one device, as Keras places it (the first GPU if there is one).
- ``"all"``: every local device of the backend's default platform (the GPUs if there
  are any, else the CPU devices): a ``keras.distribution.DataParallel`` on JAX, a
  ``tf.distribute.MirroredStrategy`` on TensorFlow, made once per process. With a
  single such device it is the same as ``None``.
- a ``keras.distribution.DataParallel`` or ``ModelParallel`` (JAX) or a
  ``tf.distribute.Strategy`` (TensorFlow, one of :data:`TENSORFLOW_STRATEGIES`) over
  the devices of this host, used as is.

A fit does not span several hosts (processes): on JAX, each process would have to feed
its own part of every batch, which skptr's batches do not do; on TensorFlow, Keras'
training loop cannot run skptr's networks, whose batches are dicts of arrays, under a
``MultiWorkerMirroredStrategy`` (its first step reduces the batch with
``strategy.reduce``, which that strategy refuses for nested values). Both are refused
with a ``ValueError``; a search spreads over hosts instead (Dask).

Networks are built, trained and run inside the placement's scope; each training batch
and each inference batch is split over the replicas, so ``batch_size`` stays the
global batch size.
"""

from __future__ import annotations

import contextlib
import functools

import keras

__all__ = ["ALL_DEVICES", "TENSORFLOW_STRATEGIES", "Placement", "on_accelerator", "placement_of"]

#: The ``devices`` value that selects every local device.
ALL_DEVICES = "all"

#: The ``tf.distribute`` strategies skptr accepts on TensorFlow (those of one host that
#: Keras' own training loop drives with skptr's networks).
TENSORFLOW_STRATEGIES = ("MirroredStrategy", "OneDeviceStrategy")


class Placement:
    """One device, or a data-parallel strategy or distribution of the backend.

    Parameters
    ----------
    n_replicas : int
        Number of parts each batch is split into.
    strategy : tf.distribute.Strategy or keras.distribution.DataParallel or None
        The backend object; None for one device.
    """

    def __init__(self, n_replicas=1, strategy=None):
        self.n_replicas = int(n_replicas)
        self.strategy = strategy

    @property
    def distributed(self):
        """Whether batches are split over several replicas."""
        return self.strategy is not None and self.n_replicas > 1

    def scope(self):
        """The context in which networks are built, trained and run."""
        if self.strategy is None:
            return contextlib.nullcontext()
        return self.strategy.scope()

    def rows(self, n_rows):
        """``n_rows`` rounded up to a multiple of the number of replicas."""
        return -(-int(n_rows) // self.n_replicas) * self.n_replicas

    def predict(self, model, inputs, n_rows):
        """``model``'s outputs for one batch of ``n_rows`` rows (a multiple of
        ``n_replicas``), split over the replicas when there are several.

        Keras' ``predict_on_batch`` would give every replica the whole batch (and, on
        TensorFlow, concatenate their copies), so a distributed batch goes through
        ``predict``, whose input pipeline splits it.
        """
        if not self.distributed:
            return model.predict_on_batch(inputs)
        with self.scope():
            return model.predict(inputs, batch_size=int(n_rows), verbose=0)


_ONE_DEVICE = Placement()


def placement_of(devices, owner):
    """The :class:`Placement` of a ``devices`` hyperparameter.

    Parameters
    ----------
    devices : None, "all", keras.distribution.DataParallel or tf.distribute.Strategy
        The hyperparameter.
    owner : str
        The estimator's class name, for messages.

    Raises
    ------
    TypeError
        For an object of the other backend or of an unsupported kind.
    """
    if devices is None:
        return _ONE_DEVICE
    if isinstance(devices, str) and devices == ALL_DEVICES:
        return _all_local_devices(keras.backend.backend())
    if keras.backend.backend() == "jax":
        return _jax_placement(devices, owner)
    return _tensorflow_placement(devices, owner)


#: The public ``keras.distribution`` classes skptr accepts on JAX.
KERAS_DISTRIBUTIONS = ("DataParallel", "ModelParallel")


def _is_keras_distribution(value):
    return isinstance(
        value, tuple(getattr(keras.distribution, name) for name in KERAS_DISTRIBUTIONS)
    )


def _kind(value):
    return f"{type(value).__module__}.{type(value).__name__}"


def _is_tensorflow_strategy(value):
    return any(
        f"{cls.__module__}.{cls.__name__}".startswith("tensorflow.")
        and cls.__name__.endswith("Strategy")
        for cls in type(value).__mro__
    )


def _jax_placement(devices, owner):
    if not _is_keras_distribution(devices):
        hint = (
            "a tf.distribute strategy drives the TensorFlow backend only"
            if _is_tensorflow_strategy(devices)
            else f"got a {_kind(devices)}"
        )
        raise TypeError(
            f"{owner}: devices must be None, 'all' or a keras.distribution.DataParallel "
            f"or ModelParallel on the JAX backend ({hint}), e.g. "
            "keras.distribution.DataParallel(devices=keras.distribution.list_devices())."
        )
    import jax

    if jax.process_count() > 1:
        raise ValueError(
            f"{owner}: the JAX runtime spans {jax.process_count()} processes; skptr fits "
            "on the devices of one process (host) only. Spread a search over hosts "
            "instead (see the user guide's page 'Scaling out')."
        )
    mesh = devices.device_mesh
    batch_axis = mesh.axis_names.index(devices.batch_dim_name)
    return Placement(mesh.shape[batch_axis], devices)


def _tensorflow_placement(devices, owner):
    if _is_keras_distribution(devices):
        raise TypeError(
            f"{owner}: a keras.distribution.{type(devices).__name__} needs the JAX "
            "backend; on TensorFlow, devices must be None, 'all' or a "
            f"tf.distribute strategy ({', '.join(TENSORFLOW_STRATEGIES)})."
        )
    import tensorflow as tf

    if isinstance(devices, tf.distribute.MultiWorkerMirroredStrategy):
        raise ValueError(
            f"{owner}: a MultiWorkerMirroredStrategy cannot train skptr's networks: Keras' "
            "training loop reduces their first batch (a dict of arrays) with "
            "strategy.reduce, which this strategy refuses for nested values. Use a "
            "MirroredStrategy over the devices of one host, and spread a search over "
            "hosts (see the user guide's page 'Scaling out')."
        )
    accepted = tuple(getattr(tf.distribute, name) for name in TENSORFLOW_STRATEGIES)
    if not isinstance(devices, accepted):
        raise TypeError(
            f"{owner}: devices must be None, 'all' or a tf.distribute strategy of the "
            f"kinds {', '.join(TENSORFLOW_STRATEGIES)} on the TensorFlow backend; got a "
            f"{_kind(devices)}."
        )
    return Placement(devices.num_replicas_in_sync, devices)


@functools.cache
def _all_local_devices(backend):
    """Every local device of the backend's default platform, made once per process
    (a TensorFlow network must be trained and run under the strategy it was built
    in)."""
    if backend == "jax":
        devices = keras.distribution.list_devices()
        if len(devices) < 2:
            return _ONE_DEVICE
        return Placement(len(devices), keras.distribution.DataParallel(devices=devices))
    import tensorflow as tf

    devices = tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("CPU")
    if len(devices) < 2:
        return _ONE_DEVICE
    strategy = tf.distribute.MirroredStrategy([device.name for device in devices])
    return Placement(len(devices), strategy)


def on_accelerator():
    """Whether the backend's default device is an accelerator (a GPU or TPU).

    Returns
    -------
    bool
    """
    return _default_platform(keras.backend.backend()) != "cpu"


@functools.cache
def _default_platform(backend):
    # Keras lists the accelerators first and the CPU only when there is none, as
    # "platform:index" on every backend.
    return keras.distribution.list_devices()[0].split(":")[0].lower()
