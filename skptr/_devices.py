"""Where an estimator runs: one device, or data-parallel over several.

skptr does not distribute anything itself: the ``devices`` hyperparameter selects the
backend's own machinery and this module only resolves it.

- ``None``: one device, as Keras places it (the first GPU if there is one).
- ``"all"``: every device of the backend's default platform (the GPUs if there are
  any, else the CPU devices): a ``keras.distribution.DataParallel`` on JAX, a
  ``tf.distribute.MirroredStrategy`` on TensorFlow, made once per process. With a
  single such device it is the same as ``None``. These are the devices of this
  process, or on JAX those of every process of a multi-process runtime.
- a ``keras.distribution.DataParallel`` or ``ModelParallel`` (JAX) or a
  ``tf.distribute.Strategy`` (TensorFlow, one of :data:`TENSORFLOW_STRATEGIES`) over
  the devices of this host (on JAX, of several processes), used as is (over several
  processes, a copy told that skptr feeds each process its own part of every batch).

On JAX a fit may span several processes (hosts): a distribution whose device mesh
holds the devices of several processes of a multi-process runtime
(``jax.distributed.initialize``). Every process then runs the same ``fit`` on the same
data with the same integer ``random_state``; each draws the same global batches and
feeds its own rows of each to Keras, which assembles the global batch from the
processes' parts. Inference runs in each process on its own device, on a copy of the
trained weights, so that a process may predict on its own. On TensorFlow, Keras'
training loop cannot run skptr's networks, whose batches are dicts of arrays, under a
``MultiWorkerMirroredStrategy`` (its first step reduces the batch with
``strategy.reduce``, which that strategy refuses for nested values): that strategy is
refused with a ``ValueError``.

Networks are built, trained and run inside the placement's scope; each training batch
and each inference batch is split over the replicas, so ``batch_size`` stays the
global batch size.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib

import keras
import numpy as np

from . import _backend

__all__ = [
    "ALL_DEVICES",
    "TENSORFLOW_STRATEGIES",
    "Placement",
    "held_in_this_process",
    "on_accelerator",
    "placement_of",
]

#: The ``devices`` value that selects every device (of every process of a JAX
#: multi-process runtime).
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
    part : tuple of int, default=(0, 1)
        ``(index, count)``: this process feeds part ``index`` of ``count`` equal parts
        of every batch (``count > 1`` for a JAX distribution over several processes).
    """

    def __init__(self, n_replicas=1, strategy=None, part=(0, 1)):
        self.n_replicas = int(n_replicas)
        self.strategy = strategy
        self.part = tuple(int(value) for value in part)

    @property
    def distributed(self):
        """Whether batches are split over several replicas."""
        return self.strategy is not None and self.n_replicas > 1

    @property
    def spans_processes(self):
        """Whether several processes feed each training batch."""
        return self.part[1] > 1

    @property
    def inference(self):
        """Where inference runs: here, or this process's own device when training
        spans processes."""
        return _THIS_PROCESS if self.spans_processes else self

    def scope(self):
        """The context in which networks are built, trained and run."""
        if self.strategy is None:
            return contextlib.nullcontext()
        return self.strategy.scope()

    def rows(self, n_rows):
        """``n_rows`` rounded up to a multiple of the number of replicas."""
        return -(-int(n_rows) // self.n_replicas) * self.n_replicas

    def process_rows(self, batch):
        """This process's part of ``batch`` (an array, or a dict or tuple of arrays with
        the sample axis first, split in ``part[1]`` equal parts)."""
        index, count = self.part
        if count == 1:
            return batch

        def part(array):
            size = len(array) // count
            return array[index * size : (index + 1) * size]

        return keras.tree.map_structure(part, batch)

    def predict(self, model, inputs, n_rows):
        """``model``'s outputs for one batch of ``n_rows`` rows (a multiple of
        ``n_replicas``), split over the replicas when there are several.

        Keras' ``predict_on_batch`` would give every replica the whole batch (and, on
        TensorFlow, concatenate their copies), so a distributed batch goes through
        ``predict``, whose input pipeline splits it.
        """
        if not self.distributed:
            return _backend.predict_on_batch(model, inputs)
        with self.scope():
            return model.predict(inputs, batch_size=int(n_rows), verbose=0)

    def check_same_fit_in_every_process(self, owner, seeded, settings, arrays):
        """For a fit over several processes: raise a ``ValueError`` in every process
        unless every process that feeds the batches runs the same fit (a
        ``random_state`` that is an integer, the same settings and data).

        Parameters
        ----------
        owner : str
            The estimator's class name, for messages.
        seeded : bool
            Whether this process's ``random_state`` is an integer.
        settings : str
            The fit's hyperparameters and mode, as text.
        arrays : sequence of ndarray
            The fit's data and seeds.
        """
        from jax.experimental import multihost_utils

        digest = hashlib.blake2b(settings.encode(), digest_size=8)
        for array in arrays:
            array = np.ascontiguousarray(array)
            digest.update(f"{array.dtype.str}{array.shape}".encode())
            digest.update(array.tobytes())
        words = np.concatenate([[int(seeded)], np.frombuffer(digest.digest(), np.uint32)])
        gathered = np.asarray(multihost_utils.process_allgather(words.astype(np.uint32)))
        gathered = gathered.reshape(-1, words.size)
        if not gathered[:, 0].all():
            unseeded = int(np.flatnonzero(gathered[:, 0] == 0)[0])
            raise ValueError(
                f"{owner}: a fit over several processes needs the same integer "
                "random_state in every process (the processes draw the same batches and "
                f"initial weights from it); process {unseeded} has none."
            )
        differing = [i for i, row in enumerate(gathered) if not np.array_equal(row, gathered[0])]
        if differing:
            raise ValueError(
                f"{owner}: a fit over {self.part[1]} processes needs the same "
                f"hyperparameters, data and random_state in every process, but process "
                f"{differing[0]} fits otherwise than process 0. Run the same fit in "
                "every process."
            )

    def agreed(self, values):
        """Process 0's ``values`` (an array of numbers) in every process that feeds the
        batches, so that decisions taken on them agree."""
        if not self.spans_processes:
            return values
        from jax.experimental import multihost_utils

        return np.asarray(multihost_utils.broadcast_one_to_all(np.asarray(values)))


class _ThisProcess(Placement):
    """This process's own default device, outside any distribution: where a model
    trained over several processes runs inference."""

    def scope(self):
        return _without_distribution()

    def predict(self, model, inputs, n_rows):
        with self.scope():
            return _backend.predict_on_batch(model, inputs)


@contextlib.contextmanager
def _without_distribution():
    previous = keras.distribution.distribution()
    keras.distribution.set_distribution(None)
    try:
        yield
    finally:
        keras.distribution.set_distribution(previous)


_THIS_PROCESS = _ThisProcess()


def held_in_this_process(network):
    """Whether every weight of ``network`` is held by this process (not by the devices
    of several processes, as after a fit over a JAX multi-process runtime).

    Parameters
    ----------
    network : keras.Model

    Returns
    -------
    bool
    """
    return all(
        getattr(variable.value, "is_fully_addressable", True) for variable in network.variables
    )


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

    mesh = devices.device_mesh
    batch_axis = mesh.axis_names.index(devices.batch_dim_name)
    if jax.process_count() == 1:
        return Placement(mesh.shape[batch_axis], devices)
    part = _process_part(devices, batch_axis, owner)
    return Placement(mesh.shape[batch_axis], _unsharded_input(devices), part)


def _process_part(distribution, batch_axis, owner):
    """``(index, count)``: which equal part of every batch this process feeds, in a
    multi-process runtime; every process draws the same conclusion (or error) from the
    same distribution."""
    import jax

    owners = np.vectorize(lambda device: device.process_index, otypes=[int])(
        distribution.device_mesh.backend_mesh.devices
    )
    processes = sorted(set(owners.flat))
    if len(processes) == 1:
        if processes[0] != jax.process_index():
            raise ValueError(
                f"{owner}: the distribution's devices all belong to process "
                f"{processes[0]}, not to this one (process {jax.process_index()})."
            )
        return (0, 1)
    if processes != list(range(jax.process_count())):
        raise ValueError(
            f"{owner}: the distribution's devices belong to processes {processes} of the "
            f"{jax.process_count()} of the JAX runtime; a fit over several processes "
            "needs devices of every process."
        )
    # Every process must own whole slices of the batch axis, the same number each.
    per_slice = np.moveaxis(owners, batch_axis, 0).reshape(owners.shape[batch_axis], -1)
    whole = all(len(set(row)) == 1 for row in per_slice)
    counts = {p: sum(row[0] == p for row in per_slice) for p in processes}
    if not whole or len(set(counts.values())) > 1:
        raise ValueError(
            f"{owner}: over several processes, each process must hold the same number of "
            f"whole slices of the distribution's batch axis "
            f"({distribution.batch_dim_name!r}), so that it feeds an equal part of every "
            "batch; a model axis that spans processes is not supported. Use a "
            "keras.distribution.DataParallel over keras.distribution.list_devices()."
        )
    return (processes.index(jax.process_index()), len(processes))


def _unsharded_input(distribution):
    """``distribution``, told that skptr gives each process its own part of every
    batch (Keras would otherwise expect a ``tf.data`` dataset to shard)."""
    if not distribution.auto_shard_dataset:
        return distribution
    distribution = copy.copy(distribution)
    distribution.auto_shard_dataset = False
    return distribution


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
    """Every device of the backend's default platform, made once per process (a
    TensorFlow network must be trained and run under the strategy it was built in):
    those of this process, or on JAX those of every process of a multi-process
    runtime."""
    if backend == "jax":
        devices = keras.distribution.list_devices()
        if len(devices) < 2:
            return _ONE_DEVICE
        return _jax_placement(keras.distribution.DataParallel(devices=devices), "devices='all'")
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
