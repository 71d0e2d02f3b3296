"""The transducer's length curriculum: short sources first, longer ones once learned."""

from __future__ import annotations

import math

import keras
import numpy as np

from .._batches import LengthGroupedBatches, ShuffledBatches
from ._codec import TransducerCodec

__all__ = [
    "CurriculumBatches",
    "GateNoiseFrom",
    "StalledStartWatch",
    "gate_noise_schedule",
    "training_batches",
]

# The mean per-token training loss under which longer sequences are admitted, the
# number of epochs after which they are admitted anyway, and the number of stages.
LOSS_TO_ADVANCE = 0.05
PATIENCE = 4
N_STAGES = 4
# A run whose loss after its first ``STALL_EPOCHS`` epochs is still above this share of
# its first epoch's loss (and above ``LOSS_TO_ADVANCE``) has stalled.
STALL_EPOCHS = 6
STALLED_SHARE = 0.5
# Batches are cut to their own streams only when the longest stream has at least this
# many steps: each new shape costs a trace or compile of the training step, which on
# short streams costs more than the padding it saves.
MIN_CUT_STEPS = 64


def training_batches(estimator, data, batch_size, seed):
    """The batches of a transducer's fit: :class:`CurriculumBatches` of its samples."""
    extents = TransducerCodec.training_extents(data)
    return CurriculumBatches(
        data, batch_size, seed, curriculum=estimator.curriculum, extents=extents
    )


def gate_noise_schedule(estimator, network, epochs_done):
    """The callbacks that switch a fit's gate noise on (none without gate noise)."""
    if getattr(network.controller, "gate_noise_scale", None) is None:
        return []
    first_noisy = math.ceil(estimator.gate_noise_start_ * estimator.epochs) - epochs_done
    return [GateNoiseFrom(max(first_noisy, 0))]


class CurriculumBatches(LengthGroupedBatches):
    """Shuffled full batches restricted to the sources a length curriculum admits.

    Training starts on the shortest sources (about a quarter of the length range) and
    admits longer ones, in ``N_STAGES`` stages, whenever the epoch's training loss
    drops below ``LOSS_TO_ADVANCE`` or a stage has lasted ``PATIENCE`` epochs.

    Padding costs as much as data in a step, and more in the memory, whose slots grow
    with the steps. When the longest stream has at least ``MIN_CUT_STEPS`` steps and
    some are shorter, the admitted samples of each epoch are grouped by length and each
    batch is cut along the time axis (axis 1) to its longest stream, rounded up to a
    power of two but to no more than the longest stream of the stage, as
    :class:`~skptr._batches.LengthGroupedBatches` does: a batch of short sources trains
    several times faster than the same batch padded to the longest. The loss of a
    sample does not depend on the padding after it, so the batches' losses and
    gradients are those of the full-length ones. The backend traces or compiles the
    training step once per shape: the powers of two up to the longest stream, and the
    longest stream of each stage.

    Parameters
    ----------
    data : TrainingData
        The training samples; ``data.lengths`` are the source lengths.
    batch_size : int
        Samples per batch.
    seed : int
        Seed of the shuffling.
    curriculum : bool
        Whether to use the curriculum; without it every sample is admitted at once.
    extents : ndarray of shape (n_samples,), optional
        Each sample's steps that are not padding; without them batches are not cut.
    """

    def __init__(self, data, batch_size, seed, curriculum=True, extents=None):
        if extents is None:
            extents = np.full(len(data.lengths), data.n_steps)
        super().__init__(data, batch_size, seed, extents, _cut_streams, powers_of_two=True)
        self.varying_steps = bool(
            data.n_steps >= MIN_CUT_STEPS and self.extents.min() < data.n_steps
        )
        distinct = np.unique(data.lengths)
        if curriculum and len(distinct) > 1:
            low, high = int(distinct[0]), int(distinct[-1])
            limits = np.linspace(low + (high - low) / 4, high, N_STAGES)
            self.limits = sorted({int(np.ceil(x)) for x in limits})
        else:
            self.limits = [int(distinct[-1])]
        self.stage = 0
        self.epochs_in_stage = 0
        extents = self.extents[:, 0]
        self.stage_steps = [int(extents[data.lengths <= limit].max()) for limit in self.limits]

    @property
    def max_length(self):
        """Longest source length currently admitted."""
        return self.limits[self.stage]

    def admitted(self):
        return np.flatnonzero(self.data.lengths <= self.max_length)

    def widest(self):
        """The longest stream of the current stage."""
        return np.array([self.stage_steps[self.stage]])

    def shuffle(self):
        if self.varying_steps:
            super().shuffle()
        else:
            ShuffledBatches.shuffle(self)

    def batch(self, index):
        """Inputs and targets of batch ``index`` of the current epoch, cut to its
        longest stream (rounded up to a power of two) when streams are long."""
        if self.varying_steps:
            return super().batch(index)
        return ShuffledBatches.batch(self, index)

    def advance(self, loss):
        """End an epoch: admit longer sources if the loss is low enough or the stage
        has lasted long enough."""
        self.epochs_in_stage += 1
        if self.stage + 1 < len(self.limits) and (
            loss < LOSS_TO_ADVANCE or self.epochs_in_stage >= PATIENCE
        ):
            self.stage += 1
            self.epochs_in_stage = 0

    def callbacks(self):
        return [*super().callbacks(), _Advance(self)]


def _cut_streams(inputs, targets, sizes):
    """A batch's streams and labels cut to ``sizes[0]`` steps."""
    (n_steps,) = sizes
    return inputs[:, :n_steps], targets[:, :n_steps]


class _Advance(keras.callbacks.Callback):
    """Moves the curriculum on after each epoch and logs the admitted length."""

    def __init__(self, batches):
        super().__init__()
        self.batches = batches

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["max_length"] = float(self.batches.max_length)
            self.batches.advance(float(logs.get("loss", np.inf)))


class StalledStartWatch(keras.callbacks.Callback):
    """Stops a training run that has stalled in its first ``STALL_EPOCHS`` epochs: its
    loss is still above ``LOSS_TO_ADVANCE`` and above ``STALLED_SHARE`` of its first
    epoch's loss.

    Whether a controller learns the task is decided early: one that learns drops its
    loss by two orders of magnitude within an epoch or two, in its first few epochs,
    while one that does not creeps along a plateau and rarely leaves it later, as the
    curriculum admits ever longer sources. The rest of its training is better spent on
    another initialisation.

    Attributes
    ----------
    stalled : bool
        Whether the run stalled (and was stopped).
    best_loss : float
        Lowest epoch loss of the run's first ``STALL_EPOCHS`` epochs.
    """

    def __init__(self):
        super().__init__()
        self.stalled = False
        self.first_loss = None
        self.best_loss = np.inf

    def on_epoch_end(self, epoch, logs=None):
        if epoch >= STALL_EPOCHS:
            return
        loss = float((logs or {}).get("loss", np.inf))
        self.first_loss = loss if self.first_loss is None else self.first_loss
        self.best_loss = min(self.best_loss, loss)
        if epoch == STALL_EPOCHS - 1 and self.best_loss >= max(
            LOSS_TO_ADVANCE, STALLED_SHARE * self.first_loss
        ):
            self.stalled = True
            self.model.stop_training = True


class GateNoiseFrom(keras.callbacks.Callback):
    """Switches the controller's gate noise off before epoch ``first_epoch``, on from it.

    Parameters
    ----------
    first_epoch : int
        The first noisy epoch.
    """

    def __init__(self, first_epoch):
        super().__init__()
        self.first_epoch = int(first_epoch)

    def on_epoch_begin(self, epoch, logs=None):
        scale = 1.0 if epoch >= self.first_epoch else 0.0
        self.model.controller.gate_noise_scale.assign(scale)
