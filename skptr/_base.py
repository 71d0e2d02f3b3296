"""The shared base class of skptr's Keras-backed sequence estimators.

A subclass describes its data and its network through a few hooks; the base class owns
everything else: parameter validation, seeding, the train/validation split, early
stopping, warm starts, user callbacks, ``history_``, the compile policy, the cache of
compiled inference models and pickling.

Hooks a subclass implements
---------------------------
``_prepare_training_data(X, y, reset)``
    Validate ``X`` and ``y`` through the estimator's codec; when ``reset`` is true,
    set the data-dependent fitted attributes the network needs (``n_features_in_``,
    vocabularies, ...); when false (a warm start), check the data against them.
    Return a :class:`~skptr._batches.TrainingData`.
``_build_network(seed)``
    Return a *built* ``keras.Model`` (weights created) made only from hyperparameters
    and fitted attributes, with every initializer, dropout layer and noise source
    seeded from ``seed``, so that unpickling can rebuild it and restore its weights.
``_loss()``
    Return the loss passed to ``compile``.
``_training_batches(data, batch_size, seed)`` (optional)
    Return the training batches, a :class:`~skptr._batches.ShuffledBatches` (the
    default) or a subclass that restricts which samples each epoch admits.

Fitting is transactional: ``fit`` trains a copy of the estimator (with a new network,
or with ``warm_start`` the fitted network, whose weights and optimiser state are
restored on failure) and commits the network, ``history_``, ``n_iter_`` and the fitted
attributes together only when training succeeds. A fit that fails, also by
``KeyboardInterrupt``, leaves the estimator as it was.
"""

from __future__ import annotations

import math
import reprlib
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import ClassVar

import keras
import numpy as np
from sklearn.base import BaseEstimator
from sklearn.base import clone as sklearn_clone
from sklearn.utils._param_validation import Interval, InvalidParameterError, StrOptions
from sklearn.utils.validation import check_is_fitted

from . import _backend, _schema
from ._batches import ShuffledBatches, held_out_split, inference_rows
from ._devices import ALL_DEVICES, held_in_this_process, placement_of
from ._limits import MAX_COUNT, check_memory
from ._persistence import save as _save_estimator
from ._precision import DTYPE_POLICIES, dtype_policy_scope, global_dtype_policy
from ._random import SeedStream, draw_seed

__all__ = ["COMPILE_POLICY", "CompilePolicy", "SequenceEstimatorBase"]


@dataclass(frozen=True)
class CompilePolicy:
    """How one Keras backend runs the training step of a fit.

    Tracing or compiling a step costs seconds, so small fits may run eagerly, and XLA
    (``jit_compile``) pays off only over enough steps. Inference models follow Keras'
    own choice (a graph on a CPU with TensorFlow, ``jit`` on JAX), except that
    estimators that opt in compile large inference calls with XLA. Every threshold was
    chosen by measurement on a 2-core CPU (see the user guide's page on backends).

    Parameters
    ----------
    eager_steps, eager_length : int
        A fit of at most ``eager_steps`` gradient steps over sequences of at most
        ``eager_length`` steps runs eagerly (0 disables eager fits).
    jit_steps : int
        A fit of at least this many gradient steps compiles its training step with XLA,
    jit_length : int or None
        if its sequences have at most this many time steps (None: any length).
    jit_opt_in : bool
        Only estimators that set ``_jit_training`` compile their training step with XLA;
        the others trace a graph.
    jit_inference_rows : int or None
        An inference call of at least this many rows compiles its model with XLA, for
        estimators that set ``_jit_inference`` (None: Keras' own choice, always),
    jit_inference_work : int or None
        and so does a call of fewer rows whose rows times squared length (the pointer
        decoder's work grows with both) reach this (None: never).
    steps_per_execution : int
        Training steps run per call into the compiled function (Keras'
        ``steps_per_execution``); per-batch callbacks then see every this many steps.
    unroll_steps : int
        The pointer network's recurrent layers are unrolled over sequences of at most
        this many steps (0: never).
    cut_batches_steps : dict of str to int
        A pointer fit of at least this many gradient steps trains in batches of
        similar lengths cut to their samples
        (:class:`~skptr._batches.LengthGroupedBatches`), whose shapes vary; one
        number per ``encoder`` of the pointer network.
    cut_powers_of_two : bool
        Whether those batches are cut to powers of two (fewer shapes, for a backend
        that compiles the step once per shape) rather than to multiples of 8.
    cut_on_accelerators : bool
        Whether batches are cut when the backend's default device is a GPU or TPU
        (``cut_batches_steps`` then applies there too); otherwise they are cut on a
        CPU only.
    """

    eager_steps: int
    eager_length: int
    jit_steps: int
    jit_length: int | None
    jit_opt_in: bool
    jit_inference_rows: int | None = None
    jit_inference_work: int | None = None
    steps_per_execution: int = 1
    unroll_steps: int = 0
    cut_batches_steps: Mapping[str, int] = field(
        default_factory=lambda: {"recurrent": 0, "attention": 0}
    )
    cut_powers_of_two: bool = False
    cut_on_accelerators: bool = True

    def cuts_batches(self, encoder, n_steps, accelerator):
        """Whether a pointer fit of ``n_steps`` gradient steps cuts its batches.

        Parameters
        ----------
        encoder : {"recurrent", "attention"}
            The pointer network's encoder.
        n_steps : int
            Gradient steps of the fit.
        accelerator : bool
            Whether the backend's default device is a GPU or TPU.
        """
        if accelerator and not self.cut_on_accelerators:
            return False
        return n_steps >= self.cut_batches_steps[encoder]

    def inference_jit(self, jit_inference, n_rows, length=1):
        """Whether an inference call of ``n_rows`` rows compiles its model with XLA.

        Parameters
        ----------
        jit_inference : bool
            The estimator's ``_jit_inference``.
        n_rows : int
            Rows of the call, padding included.
        length : int, default=1
            Longest sequence of the call, in steps.
        """
        rows, work = self.jit_inference_rows, self.jit_inference_work
        return jit_inference and (
            (rows is not None and n_rows >= rows)
            or (work is not None and n_rows * length**2 >= work)
        )

    def training_mode(self, jit_training, n_steps, length):
        """``"eager"``, ``"graph"`` or ``"jit"`` for a fit.

        Parameters
        ----------
        jit_training : bool
            The estimator's ``_jit_training``.
        n_steps : int
            Gradient steps of the fit.
        length : int
            Longest training sequence, in time steps.
        """
        if n_steps <= self.eager_steps and length <= self.eager_length:
            return "eager"
        if (
            (jit_training or not self.jit_opt_in)
            and n_steps >= self.jit_steps
            and (self.jit_length is None or length <= self.jit_length)
        ):
            return "jit"
        return "graph"


#: The compile policy of each supported backend.
#:
#: - TensorFlow: fits of at most 10 steps over sequences of at most 64 steps run
#:   eagerly (small searches and smoke tests skip a trace of a few seconds); the
#:   transducer compiles fits of 400 steps or more with XLA, except over sequences
#:   longer than 128 steps, whose XLA compile time grows with the length (about 110 s
#:   at 257 steps); everything else traces a graph.
#:   The pointer decoders compile calls of 1,024 rows or more with XLA (about 1 s more
#:   to compile, then 2-3 times the throughput of the graph), and calls whose rows times
#:   squared length reach 2**23, such as one input of 2,900 steps or more (one input of
#:   3,000 steps, hidden size 32: greedy 2.9 s as a graph, 1.6 s with XLA in the first
#:   call and 2.3 s against 0.24 s in the next; beam 3, 4.1 s against 2.8 s and 5.8 s
#:   against 0.64 s; at 1,000 steps the graph's first call is faster, 0.9 s against
#:   2.1 s). The transducer's greedy decoder follows the same rule (512 inputs of
#:   8-128 tokens, stack: 2.4 s as a graph, 1.5 s with XLA in the first call, then 1.6 s
#:   against 0.11 s; one input of 5,000 tokens, rounded strengths: 12.7 s against 0.12
#:   s). Below the rule the graph's first call is the faster one, although XLA's
#:   discrete memory makes every later call 20-45 times faster (one core): 64 inputs
#:   of 32 tokens, 0.46 s against 2.0 s (deque: 0.72 s against 2.9 s), one input of
#:   1,000 tokens, 0.10 s against 1.0 s. Running 32 training steps per call saves
#:   Keras' per-step work in Python (pointer network on convex hulls: about 6,200
#:   instead of 4,500 sequences per second); unrolling the recurrent layers does not
#:   pay.
#: - JAX: without ``jit`` JAX runs op by op (a pointer fit of 48 steps took 84 s
#:   instead of 3.6 s), and its compile time does not grow with the sequence length,
#:   since the time loops are scans; every fit is compiled. The pointer network's
#:   recurrent layers are unrolled over at most 32 steps (about 6,000 instead of 4,000
#:   sequences per second on convex hulls); several steps per call do not pay.
#:   TensorFlow traces one graph for batches of every length, so every pointer fit cuts
#:   its batches to their samples; JAX compiles the step again for each new pair of cut
#:   lengths, so it cuts to powers of two (5 pairs instead of 8 on hulls of 5-50
#:   points), and only in fits of at least 256 steps with the attention encoder and
#:   4,096 with the recurrent one. On those hulls (6,400 instances, epochs of 50
#:   steps, random_state 0-2), cutting made epochs of the attention encoder 1.4 times
#:   faster for 9-18 s more compiling (paid after 150-270 steps); the recurrent
#:   encoder's epochs, only 1.1-1.3 times faster for 51-55 s more (paid after
#:   1,250-4,000 steps). On a GPU it does not cut: there a padded epoch costs no more
#:   than a cut one and only the compiling remains (hulls of 5-50 points, 100,000
#:   instances, one NVIDIA H200: first epoch 35 s padded against 81 s cut, later
#:   epochs 2.5-3.5 s either way; 43 epochs against 24 in 150 s).
COMPILE_POLICY = {
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
    "jax": CompilePolicy(
        eager_steps=0,
        eager_length=0,
        jit_steps=0,
        jit_length=None,
        jit_opt_in=False,
        unroll_steps=32,
        cut_batches_steps={"recurrent": 4096, "attention": 256},
        cut_powers_of_two=True,
        cut_on_accelerators=False,
    ),
}


# A network's weights in training: the weights, their gradients, Adam's two moments and
# the snapshot a warm start keeps to restore on failure.
_WEIGHT_COPIES = 5


def _takes_numbers(constraints):
    """Whether a parameter's constraints take numbers (but not booleans)."""
    numeric = any(isinstance(c, Interval) or c in (Integral, Real) for c in constraints)
    return numeric and "boolean" not in constraints


def _plain(value):
    """A NumPy scalar as the Python number it holds; anything else unchanged."""
    return value.item() if isinstance(value, np.generic) else value


def _has_batch_hooks(callback):
    """Whether a Keras callback overrides a hook called on every training batch."""
    hooks = ("on_train_batch_begin", "on_train_batch_end", "on_batch_begin", "on_batch_end")
    return any(
        getattr(type(callback), hook, None) is not getattr(keras.callbacks.Callback, hook)
        for hook in hooks
    )


_INFERENCE_MODELS_ATTRIBUTE = "_skptr_inference_models"


def inference_models(network):
    """The compiled inference models of a trained network, by key.

    They are kept outside the estimators, so that prediction leaves their
    ``__dict__`` unchanged, and by the network itself rather than in a mapping keyed
    by networks: each model holds its network, so such a mapping would keep every
    network, and its models, alive after its estimator is gone.
    """
    models = vars(network).get(_INFERENCE_MODELS_ATTRIBUTE)
    if models is None:
        models = {}
        # Past Keras' attribute tracking: the models are not layers of the network.
        object.__setattr__(network, _INFERENCE_MODELS_ATTRIBUTE, models)
    return models


# A copy on this process's own device of each network trained over several processes,
# which inference runs on.
_LOCAL_COPIES = weakref.WeakKeyDictionary()

# Hyperparameters that hold objects of each process (not compared between processes).
_PER_PROCESS = ("devices", "callbacks")


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


class _NetworkSnapshot:
    """The state of a network, to restore after a failed fit.

    Every variable of training is copied to host memory, not just the weights: on JAX,
    Keras hands the variables' buffers to the compiled step (which consumes them) and
    detaches them from the variables for the rest of the epoch, so a fit stopped midway,
    by an exception or an interrupt, leaves variables without values.
    """

    def __init__(self, network):
        self.network = network
        self.optimizer = getattr(network, "optimizer", None)
        self.variables = _training_variables(network)
        self.values = [np.array(keras.ops.convert_to_numpy(v.value)) for v in self.variables]
        self.optimizer_built = self.optimizer is not None and self.optimizer.built

    def restore(self):
        """Put the network back as it was when the snapshot was taken."""
        for variable, value in zip(self.variables, self.values, strict=True):
            variable.assign(value)
        self.network.optimizer = self.optimizer if self.optimizer_built else None
        _backend.training_stopped(self.network)


def _reinitialised(network, new, learning_rate):
    """``network`` holding the variables of ``new``, its optimiser state reset."""
    for variable, value in zip(network.variables, new.variables, strict=True):
        variable.assign(value)
    optimizer = getattr(network, "optimizer", None)
    if optimizer is not None:
        for variable in optimizer.variables:
            variable.assign(keras.ops.zeros(variable.shape, dtype=variable.dtype))
        if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
            optimizer.dynamic_scale.assign(optimizer.initial_scale)
        optimizer.learning_rate = float(learning_rate)
    return network


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


class SequenceEstimatorBase(BaseEstimator):
    """Base class for scikit-learn estimators backed by a Keras network.

    Subclasses list their own hyperparameters in ``__init__`` and extend
    ``_parameter_constraints``; the training-loop hyperparameters below are shared.

    Parameters
    ----------
    epochs : int
        Number of passes over the training data.
    batch_size : int
        Number of sequences per gradient step.
    learning_rate : float
        Step size of the Adam optimiser.
    clipnorm : float or None
        Gradients are rescaled so that their norm is at most this value.
    validation_fraction : float
        Share of the training data held out to compute ``val_loss`` after each epoch
        (0 disables it).
    early_stopping : bool
        Stop when the monitored loss (``val_loss`` if there is a validation split,
        otherwise ``loss``) has not improved for ``n_iter_no_change`` epochs, and
        restore the weights of the best epoch.
    n_iter_no_change : int
        Patience of early stopping, in epochs.
    random_state : int, RandomState instance or None
        Seeds weight initialisation, dropout, shuffling and the validation split.
        With an int, repeated fits on CPU give identical models, also when they run
        concurrently in threads, and the caller's Python, NumPy and backend random
        states are left untouched. With ``None`` (or a ``RandomState`` instance) each
        fit draws its seed from NumPy's global generator (or from that instance), as
        scikit-learn estimators do.
    verbose : int
        0 prints nothing, 1 shows a Keras progress bar, 2 one line per epoch.
    warm_start : bool
        When true, a second ``fit`` continues training the fitted network (and
        appends to ``history_``) instead of building a new one.
    callbacks : list of keras.callbacks.Callback or None
        Extra Keras callbacks passed to ``fit``.
    devices : None, "all", keras.distribution.DataParallel or tf.distribute.Strategy
        Where training and inference run (see :mod:`skptr._devices`): one device, every
        device of the backend (of every process of a JAX multi-process runtime), or the
        backend's distribution or strategy object, with each
        batch split over its replicas.
    dtype_policy : {"float32", "mixed_bfloat16", "mixed_float16"} or None
        The Keras dtype policy the network is built with (see :mod:`skptr._precision`);
        None: Keras' global policy when ``fit`` starts.
    """

    _parameter_constraints: ClassVar[dict] = {
        "epochs": [Interval(Integral, 1, MAX_COUNT, closed="both")],
        "batch_size": [Interval(Integral, 1, MAX_COUNT, closed="both")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "clipnorm": [Interval(Real, 0, None, closed="neither"), None],
        "validation_fraction": [Interval(Real, 0, 1, closed="left")],
        "early_stopping": ["boolean"],
        "n_iter_no_change": [Interval(Integral, 1, MAX_COUNT, closed="both")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "warm_start": ["boolean"],
        "callbacks": [list, tuple, None],
        "devices": "no_validation",
        "dtype_policy": [StrOptions(set(DTYPE_POLICIES)), None],
    }

    #: The hyperparameters the network is built from. ``fit`` records their values in
    #: ``network_params_``; pickles and files rebuild the network from those, so that
    #: ``set_params`` after ``fit`` changes only the next fit.
    _network_params: ClassVar[tuple[str, ...]] = ()

    #: Every attribute ``fit`` sets, with its type: exactly what a skptr file stores and
    #: what :func:`skptr.load` accepts (subclasses add theirs and their codec's).
    _fitted_attributes: ClassVar[dict[str, _schema.Rule]] = {
        "network_params_": _schema.PARAMETERS,
        "history_": _schema.HISTORY,
        "n_iter_": _schema.int_between(0, MAX_COUNT),
    }

    #: The Keras class of the network (``_build_network`` returns one).
    _network_class: ClassVar[type | None] = None

    _doc_link_module = "skptr"
    _doc_link_template = (
        "https://skptr.readthedocs.io/en/latest/generated/skptr.{estimator_name}.html"
    )

    def _doc_link_url_param_generator(self):
        return {"estimator_name": type(self).__name__}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = True
        tags.input_tags.three_d_array = True
        tags.input_tags.allow_nan = False
        tags.target_tags.required = True
        tags.non_deterministic = False
        return tags

    # ------------------------------------------------------------------ hooks
    def _prepare_training_data(self, X, y, reset):  # pragma: no cover - abstract
        raise NotImplementedError

    def _build_network(self, seed=0):  # pragma: no cover - abstract
        raise NotImplementedError

    def _loss(self):  # pragma: no cover - abstract
        raise NotImplementedError

    _jit_training: ClassVar[bool] = False
    _jit_inference: ClassVar[bool] = False
    #: Network hyperparameters added after fits were first saved, with the values that
    #: build the networks of files and pickles written before they existed.
    _network_params_before: ClassVar[dict] = {"dtype_policy": "float32"}

    def _weight_count(self):  # pragma: no cover - abstract
        """Estimated number of the network's weights (see :mod:`skptr._limits`)."""
        raise NotImplementedError

    def _activation_count(self, n_rows, n_steps):  # pragma: no cover - abstract
        """Estimated numbers a training step holds for ``n_rows`` sequences of
        ``n_steps`` steps, weights excluded."""
        raise NotImplementedError

    def _as_fitted(self):
        """A shallow copy with the hyperparameters the network was built with."""
        view = self._shallow_copy()
        view.__dict__.update(self.network_params_)
        return view

    def _check_network_memory(self):
        """Raise a ``MemoryError`` unless the network recorded in ``network_params_``
        fits in memory with its gradients and optimiser state."""
        view = self._as_fitted()
        view._check_memory("the network's weights", _WEIGHT_COPIES * view._weight_count())

    def _new_network(self, seed=0, restored=False):
        """A new network built as recorded in ``network_params_``, after checking that
        its weights fit in memory; ``restored``: to hold saved weights, built where
        inference runs (on this process's own device after a fit over several
        processes)."""
        self._check_network_memory()
        _backend.new_network_built()
        view = self._as_fitted()
        placement = self._placement()
        scope = placement.inference.scope() if restored else placement.scope()
        with scope, dtype_policy_scope(view.dtype_policy):
            return view._build_network(seed)

    def _placement(self):
        """Where the estimator runs (a :class:`~skptr._devices.Placement`)."""
        return placement_of(getattr(self, "devices", None), type(self).__name__)

    def _check_split(self, batch_size):
        """Raise a ``ValueError`` unless training batches of ``batch_size`` samples
        split evenly over the replicas."""
        n_replicas = self._placement().n_replicas
        if batch_size % n_replicas:
            raise ValueError(
                f"{type(self).__name__}: the training batches hold {batch_size} samples "
                f"(batch_size={self.batch_size}), which do not split evenly over the "
                f"{n_replicas} replicas of devices={self.devices!r}; use a batch_size "
                f"that is a multiple of {n_replicas} (and at most the number of training "
                "samples)."
            )

    def _inference_rows(self, n_samples, batch_size):
        """Rows to pad an inference call of ``n_samples`` to (see
        :func:`~skptr._batches.inference_rows`), a multiple of the replicas."""
        placement = self._placement().inference
        return placement.rows(inference_rows(n_samples, placement.rows(batch_size)))

    def _predict_on_batch(self, model, inputs, n_rows):
        """``model``'s outputs for one padded batch of ``n_rows`` rows, split over the
        replicas when there are several."""
        return self._placement().inference.predict(model, inputs, n_rows)

    def _check_memory(self, what, n_numbers, **sizes):
        """:func:`~skptr._limits.check_memory`, naming the network's hyperparameters and
        ``sizes``."""
        settings = {name: getattr(self, name) for name in self._network_params}
        advice = "Use smaller sizes, a smaller batch_size or shorter sequences."
        check_memory(type(self).__name__, what, n_numbers, {**settings, **sizes}, advice)

    def _training_batches(self, data, batch_size, seed):
        """The training batches (a :class:`~skptr._batches.ShuffledBatches`)."""
        return ShuffledBatches(data, batch_size, seed)

    # ------------------------------------------------------------ parameters
    def _validate_params(self):
        owner = type(self).__name__
        params = self.get_params(deep=False)
        for name, value in params.items():
            numeric = _takes_numbers(self._parameter_constraints[name]) or name == "random_state"
            if numeric and isinstance(value, bool | np.bool_):
                raise InvalidParameterError(
                    f"The {name!r} parameter of {owner} must be a number, not a bool. "
                    f"Got {value!r} instead."
                )
            if (
                numeric
                and isinstance(value, Real)
                and not isinstance(value, int | float | np.number)
            ):
                raise InvalidParameterError(
                    f"The {name!r} parameter of {owner} must be an int or a float, got a "
                    f"{type(value).__name__} ({value!r})."
                )
        super()._validate_params()
        for name, value in params.items():
            if isinstance(value, Real) and not isinstance(value, bool):
                try:
                    finite = math.isfinite(float(value))
                except OverflowError:
                    finite = False
                if not finite:
                    raise InvalidParameterError(
                        f"The {name!r} parameter of {owner} must be a finite number that a "
                        f"float can hold. Got {reprlib.repr(value)} instead."
                    )
        devices = getattr(self, "devices", None)
        if isinstance(devices, str) and devices != ALL_DEVICES:
            raise InvalidParameterError(
                f"The 'devices' parameter of {owner} must be None, {ALL_DEVICES!r}, a "
                "keras.distribution.DataParallel (JAX) or a tf.distribute strategy "
                f"(TensorFlow). Got {devices!r} instead."
            )
        self._placement()
        for index, callback in enumerate(self.callbacks or ()):
            if not isinstance(callback, keras.callbacks.Callback):
                raise InvalidParameterError(
                    f"The 'callbacks' parameter of {owner} must hold keras.callbacks.Callback "
                    f"instances; callbacks[{index}] is a {type(callback).__name__}."
                )

    # -------------------------------------------------------------- training
    def fit(self, X, y):
        """Train the network on sequences ``X`` with targets ``y``.

        The fit is transactional: if it fails (bad data, a callback raising, a
        ``KeyboardInterrupt``, a loss that becomes NaN), the estimator is left exactly
        as it was before the call.

        Parameters
        ----------
        X : array-like or list of array-like
            Training sequences; see the estimator's documentation for the formats.
        y : array-like or list
            Targets, one per sequence.

        Returns
        -------
        self : object
            The fitted estimator.

        Raises
        ------
        ValueError
            On invalid hyperparameters or data, or when the training loss or the
            weights become NaN or infinite.
        MemoryError
            When the network or a batch does not fit in memory.
        """
        self._validate_params()
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None."
            )
        trial = self._shallow_copy()
        warm = self.warm_start and self._is_fitted()
        if warm:
            self._check_warm_start_params()
        snapshot = _NetworkSnapshot(self.network_) if warm else None
        seeds = SeedStream(draw_seed(self.random_state))
        try:
            with (
                _backend.interrupts_between_steps(),
                _backend.out_of_memory_as_error(self),
                self._placement().scope(),
            ):
                trial._fit_trial(X, y, warm=warm, seeds=seeds)
        except BaseException:
            if snapshot is not None:
                snapshot.restore()
            raise
        self.__dict__.clear()
        self.__dict__.update(trial.__dict__)
        return self

    def _fit_trial(self, X, y, warm, seeds):
        """Train ``self``, a disposable copy of the estimator being fitted.

        A new fit builds a new network; a warm start trains the fitted network in
        place (keeping its compiled functions and optimiser state), and ``fit``
        restores its weights and optimiser state if training fails.
        """
        self._train(self._prepare_training_data(X, y, reset=not warm), warm, seeds)

    def _train(self, data, warm, seeds, callbacks=(), reuse=None):
        """Train ``self``'s network (a new one unless ``warm``) on encoded ``data``.

        Parameters
        ----------
        data : TrainingData
            The encoded training data, validation samples included.
        warm : bool
            Whether to continue training the fitted network.
        seeds : SeedStream
            The fit's seeds: the network, the validation split and the batches each
            take the next one.
        callbacks : sequence of keras.callbacks.Callback, default=()
            Callbacks of the estimator's own for this training only, run after the
            others.
        reuse : keras.Model, optional
            A network built and trained before with the same hyperparameters and
            data, to hold the new network instead of a new object: it takes the new
            network's variables and a reset optimiser, and keeps its compiled
            training function (the result is the same, without tracing and compiling
            the training step again).
        """
        network_seed, split_seed, batches_seed = seeds.next(), seeds.next(), seeds.next()
        placement = self._placement()
        if placement.spans_processes:
            settings = {k: v for k, v in self.get_params().items() if k not in _PER_PROCESS}
            placement.check_same_fit_in_every_process(
                type(self).__name__,
                isinstance(self.random_state, Integral),
                repr((sorted((k, repr(v)) for k, v in settings.items()), warm)),
                [
                    *keras.tree.flatten(data.inputs),
                    data.targets,
                    data.lengths,
                    np.array([network_seed, split_seed, batches_seed]),
                ],
            )
        if not warm:
            self._record_network_params()
        view = self._as_fitted()
        batch_size = min(int(self.batch_size), len(data.lengths))
        view._check_memory(
            "a training step",
            _WEIGHT_COPIES * view._weight_count()
            + view._activation_count(batch_size, data.n_steps),
            batch_size=batch_size,
            longest_sequence=data.n_steps,
        )
        if warm:
            self.history_ = {key: list(values) for key, values in self.history_.items()}
        else:
            self.network_ = self._new_network(network_seed)
            self.history_ = {}
            if reuse is not None:
                self.network_ = _reinitialised(reuse, self.network_, self.learning_rate)
        data, validation = self._split_validation(data, split_seed)
        batches = self._training_batches(data, self.batch_size, batches_seed)
        self._check_split(batches.batch_size)
        if not (warm or reuse is not None) or getattr(self.network_, "optimizer", None) is None:
            self._compile(self.epochs * len(batches), data.n_steps)
        self._set_steps_per_execution(self.network_)
        history = self.network_.fit(
            batches.dataset(placement.process_rows),
            epochs=int(self.epochs),
            validation_data=None if validation is None else placement.process_rows(validation[:2]),
            validation_batch_size=self._validation_batch_size(placement, batches.batch_size),
            callbacks=[
                *batches.callbacks(),
                *self._fit_callbacks(validation is not None),
                *callbacks,
            ],
            shuffle=False,
            verbose=min(int(self.verbose), 2),
        )
        for key, values in history.history.items():
            self.history_.setdefault(key, []).extend(float(v) for v in values)
        self.n_iter_ = len(self.history_.get("loss", []))

    def _current_network_params(self):
        """The network hyperparameters a new network would be built with now."""
        params = {name: _plain(getattr(self, name)) for name in self._network_params}
        if params.get("dtype_policy", "") is None:
            params["dtype_policy"] = global_dtype_policy(type(self).__name__)
        return params

    def _check_warm_start_params(self):
        """Raise a ``ValueError`` when a warm start cannot continue the fitted network:
        a hyperparameter it was built with has changed since."""
        changed = [
            (name, fitted, value)
            for (name, value), fitted in zip(
                self._current_network_params().items(),
                (self.network_params_[name] for name in self._network_params),
                strict=True,
            )
            if value != fitted
        ]
        if changed:
            now = ", ".join(f"{name}={value!r}" for name, _, value in changed)
            then = ", ".join(f"{name}={fitted!r}" for name, fitted, _ in changed)
            raise ValueError(
                f"{type(self).__name__}: warm_start=True continues the fitted network, "
                f"which was built with {then}; the estimator now has {now}. Set "
                "warm_start=False to fit a new network with the new settings, or set "
                f"{'them' if len(changed) > 1 else 'it'} back to continue training."
            )

    def _record_network_params(self):
        """Set ``network_params_``: the hyperparameters a new network is built from."""
        self.network_params_ = self._current_network_params()

    def _validation_batch_size(self, placement, batch_size):
        """Validation samples per batch of each process feeding the batches (None: Keras'
        default)."""
        if placement.spans_processes:
            return batch_size // placement.part[1]
        return int(self.batch_size) if placement.distributed else None

    def _compile(self, n_steps, length, network=None, optimizer_class=None, loss=None):
        """Compile ``network`` (default: ``network_``) for training, in the compile
        policy's mode, with Adam (``optimizer_class``, default ``DenseGradientAdam``)
        and ``loss`` (default: ``_loss()``)."""
        network = self.network_ if network is None else network
        optimizer_class = optimizer_class or _backend.DenseGradientAdam
        policy = COMPILE_POLICY[keras.backend.backend()]
        mode = policy.training_mode(self._jit_training, n_steps, length)
        if self._placement().distributed and keras.backend.backend() == "tensorflow":
            # TensorFlow-specific: a strategy runs its replicas in a graph, and an XLA
            # step cannot reach the replicas' variables on other devices.
            mode = "graph"
        optimizer = optimizer_class(
            learning_rate=float(self.learning_rate),
            clipnorm=None if self.clipnorm is None else float(self.clipnorm),
        )
        network.compile(
            optimizer=optimizer,
            loss=self._loss() if loss is None else loss,
            jit_compile=mode == "jit",
            run_eagerly=mode == "eager",
        )

    def _set_steps_per_execution(self, network):
        """Run several training steps of ``network`` per call, as the compile policy
        says, unless a callback of the user's has per-batch hooks: those then see every
        batch."""
        steps = COMPILE_POLICY[keras.backend.backend()].steps_per_execution
        if any(_has_batch_hooks(callback) for callback in self.callbacks or []):
            steps = 1
        if self._placement().distributed:
            steps = 1
        if network.steps_per_execution != steps:
            network.steps_per_execution = steps
            network.train_function = None  # rebuilt by the next fit

    def _split_validation(self, data, seed):
        if self.validation_fraction == 0:
            return data, None
        n_samples = len(data.lengths)
        n_validation = round(self.validation_fraction * n_samples)
        n_replicas = self._placement().n_replicas
        n_validation -= n_validation % n_replicas  # whole batches on every replica
        if n_validation < 1 or n_validation >= n_samples:
            raise ValueError(
                f"validation_fraction={self.validation_fraction} leaves "
                f"{n_validation} of {n_samples} samples for validation; it needs at least "
                "one sample on each side (and a multiple of the replicas of devices)."
            )
        return held_out_split(data, n_validation, seed)

    def __sklearn_clone__(self):
        devices = getattr(self, "devices", None)
        if devices is None or isinstance(devices, str):
            return super().__sklearn_clone__()
        # A strategy or distribution is a handle on the devices, shared by the clones
        # (as Keras shares it between models), not copied.
        template = self._shallow_copy()
        template.devices = None
        copy = sklearn_clone(template)
        copy.devices = devices
        return copy

    def _shallow_copy(self):
        """A copy of the estimator sharing its attributes (a disposable fit trial)."""
        copy = object.__new__(type(self))
        copy.__dict__.update(self.__dict__)
        return copy

    def _fit_callbacks(self, has_validation):
        callbacks = list(self.callbacks or [])
        if self.early_stopping:
            callbacks.append(
                keras.callbacks.EarlyStopping(
                    monitor="val_loss" if has_validation else "loss",
                    patience=self.n_iter_no_change,
                    restore_best_weights=True,
                )
            )
        callbacks.append(_StopOnNonFinite(type(self).__name__))
        callbacks.append(_backend.RaisePendingInterrupt())
        return callbacks

    # ------------------------------------------------------------- utilities
    def _is_fitted(self):
        return getattr(self, "network_", None) is not None

    def _check_fitted(self):
        check_is_fitted(self, "network_")

    def _inference_model(self, key, build, n_rows=0, length=1):
        """The compiled inference model ``key`` of the fitted network, built once.

        Parameters
        ----------
        key : hashable
            Identifies the model among those of the network (e.g. the decoding mode).
        build : callable
            Called with the network to create the model when it is not cached yet.
        n_rows : int, default=0
            Rows of the inference call; large calls of estimators that set
            ``_jit_inference`` get a model compiled with XLA (see
            :class:`CompilePolicy`).
        length : int, default=1
            Longest sequence of the call, in steps.
        """
        policy = COMPILE_POLICY[keras.backend.backend()]
        jit = policy.inference_jit(self._jit_inference, n_rows, length)
        network = self._inference_network()
        models = inference_models(network)
        if (key, jit) not in models:
            policy = self.network_params_.get("dtype_policy")
            with self._placement().inference.scope(), dtype_policy_scope(policy):
                model = build(network)
                if jit:
                    model.compile(jit_compile=True)
            models[key, jit] = model
        return models[key, jit]

    def _inference_network(self):
        """The fitted network, or, when its weights span several processes (it was
        trained over them), its copy on this process's own device, holding its current
        weights."""
        if held_in_this_process(self.network_):
            return self.network_
        copy = _LOCAL_COPIES.get(self.network_)
        if copy is None:
            copy = _LOCAL_COPIES[self.network_] = self._new_network(restored=True)
        copy.set_weights(self.network_.get_weights())
        return copy

    def _predict_batch_size(self):
        return max(int(self.batch_size), 256)

    # ------------------------------------------------------------ persistence
    def save(self, path):
        """Write the estimator to ``path`` in skptr's pickle-free format.

        Hyperparameters and fitted attributes are stored as plain JSON data and the
        network in the Keras ``.keras`` format; read it back with :func:`skptr.load`,
        which validates the file and loads only the weights into a network built from
        the validated hyperparameters. Unlike a pickle, loading such a file does not
        run code stored in it.

        Parameters
        ----------
        path : str, bytes or path-like
            Destination file, conventionally ending in ``.skptr``.
        """
        _save_estimator(self, path)

    def __getstate__(self):
        state = dict(super().__getstate__())
        if not (state.get("devices") is None or isinstance(state["devices"], str)):
            state["devices"] = None  # a backend's strategy belongs to its process
        network = state.pop("network_", None)
        if network is not None:
            state["_network_weights"] = [np.asarray(w) for w in network.get_weights()]
        return state

    def __setstate__(self, state):
        state = dict(state)
        weights = state.pop("_network_weights", None)
        # Pickled before some hyperparameters existed: the values that build the network
        # of that time.
        for name, value in self._network_params_before.items():
            state.setdefault(name, value)
        state.setdefault("devices", None)
        if weights is not None and "network_params_" not in state:
            # Pickled before fitted models recorded their network's hyperparameters.
            state["network_params_"] = {name: state[name] for name in self._network_params}
        if "network_params_" in state:
            state["network_params_"] = {
                **self._network_params_before,
                **state["network_params_"],
            }
        super().__setstate__(state)
        if weights is not None:
            self.network_ = self._new_network(restored=True)
            self.network_.set_weights(weights)
