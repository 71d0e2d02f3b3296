"""Training a network: one function, :func:`train`, and the compile policy it follows.

:func:`train` trains a given network on prepared data under an estimator's training
hyperparameters and returns the history of that training, and nothing else: it builds
no network and sets no attribute of the estimator. The compile policy says, per Keras
backend, how a fit's training step runs (eagerly, as a graph or compiled with XLA)
and when inference compiles with XLA; the user guide's page on backends gives the
measurements behind each number.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from numbers import Integral

import keras
import numpy as np

from . import _backend
from ._batches import held_out_split

__all__ = [
    "COMPILE_POLICY",
    "WEIGHT_COPIES",
    "CompilePolicy",
    "NetworkState",
    "NonFiniteTrainingError",
    "check_fit",
    "compile_network",
    "compile_policy",
    "train",
]

# A network's weights in training: the weights, their gradients, Adam's two moments and
# the snapshot a warm start keeps to restore on failure.
WEIGHT_COPIES = 5

# Hyperparameters that hold objects of each process (not compared between processes).
_PER_PROCESS = ("devices", "callbacks")


@dataclass(frozen=True)
class CompilePolicy:
    """How one Keras backend runs training steps and inference.

    Parameters
    ----------
    eager_steps, eager_length : int
        Fits of at most this many steps over sequences of at most this many steps run
        eagerly.
    jit_steps, jit_length : int, int or None
        Fits of at least ``jit_steps`` steps over sequences of at most ``jit_length``
        steps (None: any) compile their step with XLA,
    jit_opt_in : bool
        for estimators that set ``_jit_training`` only (else for all); other fits trace
        a graph.
    jit_inference_rows, jit_inference_work : int or None
        Inference calls of at least this many rows, or whose rows times squared length
        reach this work, compile with XLA (estimators that set ``_jit_inference``).
    steps_per_execution : int
        Training steps per call into the compiled function.
    cut_batches_steps : dict of str to int
        Fits of at least this many steps train in batches cut to their samples' lengths,
        one threshold per kind of batches (the pointer network's encoder).
    cut_powers_of_two : bool
        Cut to powers of two (fewer shapes to compile) rather than multiples of 8,
    cut_on_accelerators : bool
        also when the default device is a GPU or TPU.
    """

    eager_steps: int
    eager_length: int
    jit_steps: int
    jit_length: int | None
    jit_opt_in: bool
    jit_inference_rows: int | None = None
    jit_inference_work: int | None = None
    steps_per_execution: int = 1
    cut_batches_steps: Mapping[str, int] = field(
        default_factory=lambda: {"recurrent": 0, "attention": 0}
    )
    cut_powers_of_two: bool = False
    cut_on_accelerators: bool = True

    def training_mode(self, jit_training, n_steps, length):
        """``"eager"``, ``"graph"`` or ``"jit"`` for a fit of ``n_steps`` steps over
        sequences of at most ``length`` steps."""
        if n_steps <= self.eager_steps and length <= self.eager_length:
            return "eager"
        jit_allowed = jit_training or not self.jit_opt_in
        fits_jit = self.jit_length is None or length <= self.jit_length
        return "jit" if jit_allowed and n_steps >= self.jit_steps and fits_jit else "graph"

    def inference_jit(self, jit_inference, n_rows, length=1):
        """Whether an inference call of ``n_rows`` rows (padding included) of at most
        ``length`` steps compiles with XLA."""
        rows, work = self.jit_inference_rows, self.jit_inference_work
        large = (rows is not None and n_rows >= rows) or (
            work is not None and n_rows * length**2 >= work
        )
        return jit_inference and large

    def cuts_batches(self, kind, n_steps, accelerator):
        """Whether a fit of ``n_steps`` steps cuts its batches of ``kind``."""
        if accelerator and not self.cut_on_accelerators:
            return False
        return n_steps >= self.cut_batches_steps[kind]


#: The compile policy of each supported backend.
COMPILE_POLICY = {
    # Small fits skip tracing; XLA pays over 400 steps but compiles long sequences
    # slowly; several steps per call save Keras' per-step Python work.
    "tensorflow": CompilePolicy(
        eager_steps=10,
        eager_length=64,
        jit_steps=400,
        jit_length=128,
        jit_opt_in=True,
        jit_inference_rows=1024,
        jit_inference_work=2**23,
        steps_per_execution=32,
    ),
    # JAX runs op by op unless compiled, so every fit is compiled; it compiles a step
    # per shape, so cut batches (powers of two) pay only in long fits and not on a GPU.
    "jax": CompilePolicy(
        eager_steps=0,
        eager_length=0,
        jit_steps=0,
        jit_length=None,
        jit_opt_in=False,
        cut_batches_steps={"recurrent": 4096, "attention": 256},
        cut_powers_of_two=True,
        cut_on_accelerators=False,
    ),
}


def compile_policy():
    """The compile policy of the running Keras backend."""
    return COMPILE_POLICY[keras.backend.backend()]


def _training_variables(network):
    """Every variable a training step reads and writes: the weights, the other state of
    the layers (such as seed generators), the optimiser's and the metrics'."""
    optimizer = getattr(network, "optimizer", None)
    return [
        *network.trainable_variables,
        *network.non_trainable_variables,
        *(optimizer.variables if optimizer is not None and optimizer.built else ()),
        *network.metrics_variables,
    ]


class NetworkState:
    """The state of a network, to restore later (after a failed fit, or to keep a run).

    Every variable of training is copied to host memory, not just the weights: on JAX,
    Keras hands the variables' buffers to the compiled step (which consumes them) and
    detaches them from the variables for the rest of the epoch, so a fit stopped midway,
    by an exception or an interrupt, leaves variables without values.
    """

    def __init__(self, network):
        self.network = network
        self.optimizer = getattr(network, "optimizer", None)
        self.variables = _training_variables(network)
        self.values = [np.array(keras.ops.convert_to_numpy(v)) for v in self.variables]
        self.optimizer_built = self.optimizer is not None and self.optimizer.built

    def restore(self):
        """Put the network back as it was when the state was taken; return it."""
        for variable, value in zip(self.variables, self.values, strict=True):
            variable.assign(value)
        self.network.optimizer = self.optimizer if self.optimizer_built else None
        _backend.training_stopped(self.network)
        return self.network


class NonFiniteTrainingError(FloatingPointError, ValueError):
    """Training produced a NaN or infinite loss or weights."""


class _StopOnNonFinite(keras.callbacks.Callback):
    """Raise as soon as an epoch's loss, or the final weights, are not finite."""

    def __init__(self, estimator_name):
        super().__init__()
        self.estimator_name = estimator_name

    def on_epoch_end(self, epoch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            raise NonFiniteTrainingError(
                f"{self.estimator_name}: the training loss became {float(loss)} in epoch "
                f"{epoch + 1}; the fit was stopped and the estimator keeps its previous "
                "state. Lower learning_rate, set clipnorm, or rescale the input."
            )

    def on_train_end(self, logs=None):
        if not all(np.all(np.isfinite(w)) for w in self.model.get_weights()):
            raise NonFiniteTrainingError(
                f"{self.estimator_name}: training produced NaN or infinite weights; the "
                "estimator keeps its previous state. Lower learning_rate, set clipnorm, or "
                "rescale the input."
            )


def _has_batch_hooks(callback):
    """Whether a Keras callback overrides a hook called on every training batch."""
    hooks = ("on_train_batch_begin", "on_train_batch_end", "on_batch_begin", "on_batch_end")
    return any(
        getattr(type(callback), hook, None) is not getattr(keras.callbacks.Callback, hook)
        for hook in hooks
    )


def compile_network(estimator, network, n_steps, length):
    """Compile ``network`` for a fit of ``n_steps`` steps over sequences of at most
    ``length`` steps, in the compile policy's mode, with the estimator's loss and Adam.
    """
    mode = compile_policy().training_mode(estimator._jit_training, n_steps, length)
    if estimator._placement().distributed and keras.backend.backend() == "tensorflow":
        # TensorFlow-specific: a strategy runs its replicas in a graph, and an XLA
        # step cannot reach the replicas' variables on other devices.
        mode = "graph"
    clipnorm = estimator.clipnorm
    network.compile(
        optimizer=_backend.DenseGradientAdam(
            learning_rate=float(estimator.learning_rate),
            clipnorm=None if clipnorm is None else float(clipnorm),
        ),
        loss=estimator._loss(),
        jit_compile=mode == "jit",
        run_eagerly=mode == "eager",
    )
    if mode != "eager" and not estimator._placement().distributed:
        # Keras' TensorFlow trainer would build the optimiser inside the first traced
        # step, and TensorFlow traces a function that creates variables a second time.
        network.optimizer.build(network.trainable_variables)


def _set_steps_per_execution(estimator, network):
    """Run several steps per call, as the policy says, unless a user's callback has
    per-batch hooks (it then sees every batch) or the fit is distributed."""
    steps = compile_policy().steps_per_execution
    if estimator._placement().distributed or any(
        _has_batch_hooks(callback) for callback in estimator.callbacks or []
    ):
        steps = 1
    if network.steps_per_execution != steps:
        network.steps_per_execution = steps
        network.train_function = None  # rebuilt by the next fit


def _split_validation(estimator, data, seed):
    """The training samples and the validation samples (None without a split)."""
    if estimator.validation_fraction == 0:
        return data, None
    n_samples = len(data.lengths)
    n_validation = round(estimator.validation_fraction * n_samples)
    n_validation -= n_validation % estimator._placement().n_replicas  # whole batches
    if n_validation < 1 or n_validation >= n_samples:
        raise ValueError(
            f"validation_fraction={estimator.validation_fraction} leaves "
            f"{n_validation} of {n_samples} samples for validation; it needs at least "
            "one sample on each side (and a multiple of the replicas of devices)."
        )
    return held_out_split(data, n_validation, seed)


def _callbacks(estimator, network, epochs_done, has_validation, extra):
    """The user's callbacks, early stopping, the estimator's own and the checks."""
    callbacks = [
        *estimator._schedule_callbacks(network, epochs_done),
        *(estimator.callbacks or []),
    ]
    if estimator.early_stopping:
        callbacks.append(
            keras.callbacks.EarlyStopping(
                monitor="val_loss" if has_validation else "loss",
                patience=estimator.n_iter_no_change,
                restore_best_weights=True,
            )
        )
    return [
        *callbacks,
        _StopOnNonFinite(type(estimator).__name__),
        _backend.RaisePendingInterrupt(),
        *extra,
    ]


def _check_same_fit_in_every_process(estimator, data, seeds, warm):
    placement = estimator._placement()
    settings = {k: v for k, v in estimator.get_params().items() if k not in _PER_PROCESS}
    placement.check_same_fit_in_every_process(
        type(estimator).__name__,
        isinstance(estimator.random_state, Integral),
        repr((sorted((k, repr(v)) for k, v in settings.items()), warm)),
        [*keras.tree.flatten(data.inputs), data.targets, data.lengths, np.array(seeds)],
    )


def check_fit(estimator, data, seeds, warm=False):
    """Checks before a network is built and trained: a fit over several processes runs
    the same fit in each (else a ``ValueError`` in every process), and a training step
    fits in memory (else a ``MemoryError``).

    Parameters
    ----------
    estimator : SequenceEstimatorBase
        The estimator, with the fitted attributes its network is built from.
    data : TrainingData
        The encoded training samples.
    seeds : sequence of int
        The seeds of the network, the validation split and the batches.
    warm : bool, default=False
        Whether the fit continues a fitted network.
    """
    if estimator._placement().spans_processes:
        _check_same_fit_in_every_process(estimator, data, seeds, warm)
    batch_size = min(int(estimator.batch_size), len(data.lengths))
    estimator._check_memory(
        "a training step",
        WEIGHT_COPIES * estimator._weight_count()
        + estimator._activation_count(batch_size, data.n_steps),
        batch_size=batch_size,
        longest_sequence=data.n_steps,
    )


def train(estimator, network, data, seeds, *, epochs_done=0, callbacks=()):
    """Train ``network`` on ``data`` under ``estimator``'s training hyperparameters.

    Parameters
    ----------
    estimator : SequenceEstimatorBase
        Gives the hyperparameters (epochs, batches, learning rate, validation, early
        stopping, callbacks, verbosity, devices) and the hooks for batches, loss and
        schedules, with the fitted attributes the network was built from; unchanged.
    network : keras.Model
        A built network; compiled here unless it already has an optimiser (a warm
        start continues with it).
    data : TrainingData
        The encoded training samples, validation samples included.
    seeds : tuple of int
        Seeds of the validation split and of the batches (:func:`check_fit` comes
        first).
    epochs_done : int, default=0
        Epochs the network was trained before (schedules continue from there).
    callbacks : sequence of keras.callbacks.Callback, default=()
        Callbacks of the caller's own for this training, run after the others.

    Returns
    -------
    dict of str to list of float
        The per-epoch logs of this training.
    """
    split_seed, batches_seed = seeds
    data, validation = _split_validation(estimator, data, split_seed)
    batches = estimator._training_batches(data, estimator.batch_size, batches_seed)
    estimator._check_split(batches.batch_size)
    if getattr(network, "optimizer", None) is None:
        compile_network(estimator, network, int(estimator.epochs) * len(batches), data.n_steps)
    _set_steps_per_execution(estimator, network)
    with _backend.quiet_retracing():
        history = _fit(estimator, network, batches, validation, epochs_done, callbacks)
    return {key: [float(v) for v in values] for key, values in history.history.items()}


def _fit(estimator, network, batches, validation, epochs_done, callbacks):
    placement = estimator._placement()
    return network.fit(
        batches.dataset(placement.process_rows),
        epochs=int(estimator.epochs),
        validation_data=None if validation is None else placement.process_rows(validation[:2]),
        validation_batch_size=_validation_batch_size(estimator, batches.batch_size),
        callbacks=[
            *batches.callbacks(),
            *_callbacks(estimator, network, epochs_done, validation is not None, callbacks),
        ],
        shuffle=False,
        verbose=min(int(estimator.verbose), 2),
    )


def _validation_batch_size(estimator, batch_size):
    """Validation samples per batch of each process (None: Keras' default)."""
    placement = estimator._placement()
    if placement.spans_processes:
        return batch_size // placement.part[1]
    return int(estimator.batch_size) if placement.distributed else None
