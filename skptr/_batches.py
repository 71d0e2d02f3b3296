"""Training data handed to Keras: shuffled full batches drawn from a fit's own generator."""

from __future__ import annotations

import math
from typing import NamedTuple

import keras
import numpy as np

__all__ = [
    "EXTENT_STEP",
    "GROUP_WINDOW",
    "LengthGroupedBatches",
    "ShuffledBatches",
    "TrainingData",
    "held_out_split",
    "inference_rows",
    "power_of_two_at_least",
    "power_of_two_at_most",
    "take",
]


class TrainingData(NamedTuple):
    """Encoded training data.

    Attributes
    ----------
    inputs : ndarray or dict of ndarray
        The network's inputs; the first axis is the sample axis.
    targets : ndarray
        The network's targets, one row per sample.
    lengths : ndarray of shape (n_samples,)
        The length of each input sequence.
    samples : object, optional
        The training samples as the user gave them, all of them, for a cost computed
        on the host (an ``"index"`` input then gives each sample's position in them).
    """

    inputs: object
    targets: np.ndarray
    lengths: np.ndarray
    samples: object = None

    def take(self, indices):
        """The samples at ``indices``."""
        return TrainingData(
            take(self.inputs, indices),
            self.targets[indices],
            self.lengths[indices],
            self.samples,
        )

    @property
    def n_steps(self):
        """The longest time axis (axis 1) among the inputs."""
        arrays = self.inputs.values() if isinstance(self.inputs, dict) else [self.inputs]
        return max((a.shape[1] for a in arrays if np.ndim(a) >= 2), default=0)


def take(data, indices):
    """Rows ``indices`` of an array or of every array of a dict."""
    if isinstance(data, dict):
        return {key: value[indices] for key, value in data.items()}
    return data[indices]


def held_out_split(data, n_held_out, seed):
    """Split ``data`` at random into the rest and ``n_held_out`` held-out samples."""
    order = np.random.default_rng(seed).permutation(len(data.lengths))
    return data.take(order[n_held_out:]), data.take(order[:n_held_out])


def power_of_two_at_most(n):
    """The largest power of two that is at most ``n`` (and at least 1)."""
    return 1 << max(int(n).bit_length() - 1, 0)


def power_of_two_at_least(n):
    """The smallest power of two that is at least ``n`` (and at least 1)."""
    return 1 << max(int(n) - 1, 0).bit_length()


def inference_rows(n_samples, batch_size):
    """Rows to pad an inference input of ``n_samples`` to, so that compiled functions
    see few batch shapes: the next power of two up to ``batch_size``, then a multiple
    of ``batch_size``."""
    if n_samples >= batch_size:
        return -(-n_samples // batch_size) * batch_size
    return min(power_of_two_at_least(n_samples), batch_size)


class ShuffledBatches:
    """Full, shuffled training batches, reshuffled at the start of every epoch.

    Every epoch has ``ceil(n_samples / batch_size)`` batches of exactly
    ``batch_size`` samples (cycling through a fresh permutation of the admitted
    samples), so the compiled training step sees a single shape. The permutations
    come from a generator owned by the fit, not from a backend's global seed, and are
    drawn by a callback at the start of each epoch; the batches are produced only when
    the training step asks for them (no prefetching), so a schedule that changes the
    admitted samples between epochs (a curriculum) gives the same batches on every run.

    Parameters
    ----------
    data : TrainingData
        The training samples.
    batch_size : int
        Samples per batch; at most the number of samples.
    seed : int
        Seed of the shuffling.

    Attributes
    ----------
    varying_steps : bool
        Whether batches may differ in their number of steps (axis 1), so that the
        backend's input pipeline must not fix it (False here).
    """

    varying_steps = False

    def __init__(self, data, batch_size, seed):
        self.data = data
        self.batch_size = max(1, min(int(batch_size), len(data.lengths)))
        self.n_batches = math.ceil(len(data.lengths) / self.batch_size)
        self.random = np.random.default_rng(seed)
        self.order = None

    def __len__(self):
        return self.n_batches

    def admitted(self):
        """Indices of the samples that batches may contain (all of them here)."""
        return np.arange(len(self.data.lengths))

    def shuffle(self):
        """Draw the order of the samples for the next epoch."""
        admitted = self.admitted()
        needed = self.n_batches * self.batch_size
        rounds = [self.random.permutation(admitted) for _ in range(-(-needed // len(admitted)))]
        self.order = np.concatenate(rounds)[:needed]

    def epoch_order(self):
        """The samples of every batch of the current epoch, shape (n_batches, batch_size).

        Before the first epoch's order is drawn (Keras on JAX reads one batch to build
        the training step), the batches take the admitted samples in their stored
        order, without drawing from the shuffling generator.
        """
        order = self.order
        if order is None:
            order = np.resize(self.admitted(), self.n_batches * self.batch_size)
        return order.reshape(self.n_batches, self.batch_size).astype(np.int64, copy=False)

    def batch(self, index):
        """Inputs and targets of batch ``index`` of the current epoch."""
        members = self.epoch_order()[index]
        return take(self.data.inputs, members), self.data.targets[members]

    def callbacks(self):
        """The Keras callbacks that drive the batches (reshuffling at each epoch)."""
        return [_Reshuffle(self)]

    def dataset(self, process_rows=None):
        """The batches in the form the Keras backend reads without prefetching.

        Parameters
        ----------
        process_rows : callable, optional
            On JAX, gives the rows of a batch that this process feeds when several
            processes feed each batch (:meth:`~skptr._devices.Placement.process_rows`).
        """
        if keras.backend.backend() != "tensorflow":
            return _EpochSource(self, process_rows)
        if self.varying_steps:
            return _tensorflow_generated_dataset(self)
        return _tensorflow_dataset(self)


#: :class:`LengthGroupedBatches` groups samples of similar lengths within windows of
#: this many batches of an epoch's random order. Measured on sequences of 2-24 floats
#: (3,000, 8 epochs, sorted, ``random_state`` 0-2), position accuracy after windows of
#: 4, 8 and 16 batches and of the whole epoch was 0.944, 0.942, 0.932 and 0.914 on
#: average, against 0.943 without grouping: batches of one length alone learn less
#: per epoch.
GROUP_WINDOW = 8

#: Batches of :class:`LengthGroupedBatches` are cut to a multiple of this many steps, so
#: that the compiled training step sees a few shapes (one per multiple) and is traced or
#: compiled once for each; with ``powers_of_two``, to a power of two of at least this.
EXTENT_STEP = 8


def _rounded_extents(extents, full, powers_of_two=False):
    """``extents`` rounded up to a multiple of :data:`EXTENT_STEP` (or to a power of
    two of at least :data:`EXTENT_STEP`), at most ``full``."""
    extents = np.maximum(np.asarray(extents, dtype=np.int64), 1)
    if powers_of_two:
        exponents = np.ceil(np.log2(np.maximum(extents, EXTENT_STEP)))
        rounded = np.left_shift(1, exponents.astype(np.int64))
    else:
        rounded = -(-extents // EXTENT_STEP) * EXTENT_STEP
    return np.minimum(rounded, full)


class LengthGroupedBatches(ShuffledBatches):
    """Full shuffled batches of samples of similar lengths, each cut to its longest one.

    Padding costs as much as data in a training step. Each epoch draws its samples as
    :class:`ShuffledBatches` does, then, within each window of :data:`GROUP_WINDOW`
    batches of that order, orders them by their extents rounded up to a multiple of
    :data:`EXTENT_STEP` or to a power of two (a stable sort, so samples of the same
    rounded extents stay in random order), cuts the result into batches and shuffles
    the batches. Each batch is then cut along its padded axes to its longest sample,
    rounded up the same way.
    The loss of a sample does not depend on the padding around it, so a batch's loss
    and gradient are those of the same samples padded to the longest of all; only
    which samples share a batch changes.

    Parameters
    ----------
    data : TrainingData
        The training samples.
    batch_size : int
        Samples per batch; at most the number of samples.
    seed : int
        Seed of the shuffling.
    extents : ndarray of shape (n_samples, n_axes)
        Each sample's extent along each padded axis (its steps that are not padding).
    trim : callable
        ``trim(inputs, targets, sizes)`` returns a batch's inputs and targets cut to
        ``sizes`` (one per axis of ``extents``, each at least the batch's extents).
    powers_of_two : bool, default=False
        Round the cuts up to powers of two rather than to multiples of
        :data:`EXTENT_STEP`: fewer shapes (about log2 of the longest extent per axis)
        for a backend that compiles the step once per shape, against more padding.
    """

    varying_steps = True

    def __init__(self, data, batch_size, seed, extents, trim, powers_of_two=False):
        super().__init__(data, batch_size, seed)
        self.extents = np.asarray(extents, dtype=np.int64).reshape(len(data.lengths), -1)
        self.full = self.extents.max(axis=0)
        self.trim = trim
        self.powers_of_two = bool(powers_of_two)
        rounded = _rounded_extents(self.extents, self.full, self.powers_of_two)
        # One integer per sample that sorts as its rounded extents do, axis by axis.
        self.group = np.ravel_multi_index(tuple(rounded.T), tuple(self.full + 1))

    def shuffle(self):
        super().shuffle()
        window = GROUP_WINDOW * self.batch_size
        grouped = [
            part[np.argsort(self.group[part], kind="stable")]
            for part in np.split(self.order, range(window, len(self.order), window))
        ]
        batches = np.concatenate(grouped).reshape(self.n_batches, self.batch_size)
        self.order = batches[self.random.permutation(self.n_batches)].ravel()

    def widest(self):
        """The most steps a batch keeps along each padded axis: those of the longest
        sample."""
        return self.full

    def batch(self, index):
        """Inputs and targets of batch ``index`` of the current epoch, cut to its
        longest sample along each padded axis (rounded up, at most :meth:`widest`)."""
        members = self.epoch_order()[index]
        sizes = _rounded_extents(
            self.extents[members].max(axis=0), self.widest(), self.powers_of_two
        )
        inputs, targets = take(self.data.inputs, members), self.data.targets[members]
        return self.trim(inputs, targets, tuple(int(size) for size in sizes))


class _Reshuffle(keras.callbacks.Callback):
    def __init__(self, batches):
        super().__init__()
        self.batches = batches

    def on_epoch_begin(self, epoch, logs=None):
        self.batches.shuffle()


class _EpochSource(keras.utils.PyDataset):
    """The batches as a ``PyDataset``, for backends other than TensorFlow."""

    def __init__(self, batches, process_rows=None):
        super().__init__()
        self.batches = batches
        self.process_rows = process_rows

    def __len__(self):
        return self.batches.n_batches

    def __getitem__(self, index):
        batch = self.batches.batch(index)
        return batch if self.process_rows is None else self.process_rows(batch)


def _tensorflow_dataset(batches):
    """A ``tf.data.Dataset`` of the batches of each epoch, in the order drawn for it.

    The order of an epoch is read once, when the epoch's iterator asks for its first
    batch (after the epoch's callbacks drew it); each batch is then gathered from the
    data inside TensorFlow's input pipeline, without a call back into Python per batch.

    TensorFlow-specific: Keras' own adapter for Python data prefetches batches in a
    background thread, which would read the next epoch's order before it is drawn.
    """
    import tensorflow as tf

    arrays = tf.nest.map_structure(
        tf.convert_to_tensor, (batches.data.inputs, batches.data.targets)
    )
    shape = (batches.n_batches, batches.batch_size)

    def epoch_order():
        yield batches.epoch_order()

    order = tf.data.Dataset.from_generator(
        epoch_order, output_signature=tf.TensorSpec(shape, tf.int64)
    )
    dataset = order.unbatch().map(
        lambda members: tf.nest.map_structure(lambda array: tf.gather(array, members), arrays)
    )
    return dataset.apply(tf.data.experimental.assert_cardinality(batches.n_batches))


def _tensorflow_generated_dataset(batches):
    """A ``tf.data.Dataset`` of batches of varying padded lengths, each made in Python
    when the training step asks for it (so after the epoch's callbacks drew its order).

    TensorFlow-specific: see :func:`_tensorflow_dataset`.
    """
    import tensorflow as tf

    def epoch_batches():
        for index in range(batches.n_batches):
            yield batches.batch(index)

    def signature(array):  # the time axis (axis 1) varies between batches
        shape = (batches.batch_size, None, *array.shape[2:])[: np.ndim(array)]
        return tf.TensorSpec(shape, tf.as_dtype(array.dtype))

    dataset = tf.data.Dataset.from_generator(
        epoch_batches,
        output_signature=tf.nest.map_structure(
            signature, (batches.data.inputs, batches.data.targets)
        ),
    )
    return dataset.apply(tf.data.experimental.assert_cardinality(batches.n_batches))
