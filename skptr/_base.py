"""The shared base class of skptr's Keras-backed sequence estimators.

A subclass describes its data and its network through a few hooks; the base class owns
parameters, validation, tags, pickling, the cache of compiled inference models and a
``fit`` that reads top to bottom: validate, prepare the data, build (or, warm, take) the
network, train it (:func:`skptr._training.train`), then assign the fitted attributes
together. A fit that fails, also by ``KeyboardInterrupt``, leaves the estimator as it
was: nothing is assigned, and a warm start's network gets its state back.

Hooks a subclass implements
---------------------------
``_prepare_training_data(X, y, reset)``
    Validate ``X`` and ``y`` through the estimator's codec and return the
    :class:`~skptr._batches.TrainingData` and a dict of the data-dependent fitted
    attributes the network needs (``n_features_in_``, vocabularies, ...); when
    ``reset`` is false (a warm start), check the data against the fitted ones and
    return an empty dict.
``_build_network(seed)``
    Return a *built* ``keras.Model`` (weights created) made only from hyperparameters
    and fitted attributes, with every initializer, dropout layer and noise source
    seeded from ``seed``, so that unpickling can rebuild it and restore its weights.
``_loss()``
    Return the loss passed to ``compile``.
``_training_batches(data, batch_size, seed)`` (optional)
    Return the training batches, a :class:`~skptr._batches.ShuffledBatches` (the
    default) or a subclass that restricts which samples each epoch admits.
``_schedule_callbacks(network, epochs_done)`` (optional)
    Callbacks of the estimator's own that run before the user's (schedules).
``_fit_network(data, encoding, warm, seeds)`` (optional)
    Train and return every fitted attribute; a search over initialisations overrides it.
"""

from __future__ import annotations

import functools
from contextlib import nullcontext
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.base import clone as sklearn_clone
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from . import _backend, _inference, _params, _schema, _training
from ._batches import LengthGroupedBatches, ShuffledBatches, inference_rows
from ._devices import on_accelerator, placement_of
from ._docstrings import fill_shared
from ._limits import MAX_COUNT, check_memory
from ._persistence import save as _save_estimator
from ._precision import DTYPE_POLICIES, dtype_policy_scope
from ._random import SeedStream, draw_seed
from ._training import WEIGHT_COPIES, NetworkState, NonFiniteTrainingError, compile_policy

__all__ = ["NonFiniteTrainingError", "SequenceEstimatorBase"]


def inference_method(method):
    """Make a public inference method safe to call from several threads at once.

    The method runs on a snapshot of the estimator (its hyperparameters and fitted
    attributes when the call starts), holding the fitted network for reading: a
    ``set_params`` or a cold ``fit`` in another thread changes the estimator, not the
    call's snapshot, and a warm ``fit`` waits for the call to end (see
    :class:`~skptr._inference.NetworkLock`).
    """

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        snapshot = self._shallow_copy()
        network = getattr(snapshot, "network_", None)
        if network is None:  # not fitted: the method raises as it does
            return method(snapshot, *args, **kwargs)
        with _inference.network_lock(network).reading():
            return method(snapshot, *args, **kwargs)

    return call


class SequenceEstimatorBase(BaseEstimator):
    """Base class for scikit-learn estimators backed by a Keras network.

    Subclasses list their own hyperparameters in ``__init__`` and extend
    ``_parameter_constraints``. The training-loop hyperparameters constrained below
    (``epochs`` to ``dtype_policy``) are shared: a subclass lists them in its own
    keyword-only ``__init__`` signature, with its own defaults (scikit-learn's
    ``get_params`` reads that signature), and passes them on to this class's
    ``__init__``, which sets them. Their numpydoc entries that every estimator shares
    are written once, in :mod:`skptr._docstrings`: a subclass's docstring names them on
    a ``{shared: name, ...}`` line, replaced by the entries when the subclass is
    defined. With an int ``random_state``, repeated fits on CPU give identical models,
    also when they run concurrently in threads, and the caller's Python, NumPy and
    backend random states are left untouched; with ``None`` or a ``RandomState``, each
    fit draws its seed from NumPy's global generator or that instance, as
    scikit-learn's do.
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

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # The shared parameters' entries, written once (see skptr._docstrings).
        if "__doc__" in vars(cls):
            cls.__doc__ = fill_shared(cls.__doc__)

    def __init__(
        self,
        *,
        epochs,
        batch_size,
        learning_rate,
        clipnorm,
        validation_fraction,
        early_stopping,
        n_iter_no_change,
        random_state,
        verbose,
        warm_start,
        callbacks,
        devices,
        dtype_policy,
    ):
        self.epochs = epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.clipnorm = clipnorm
        self.validation_fraction = validation_fraction
        self.early_stopping = early_stopping
        self.n_iter_no_change = n_iter_no_change
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.callbacks = callbacks
        self.devices = devices
        self.dtype_policy = dtype_policy

    def _doc_link_url_param_generator(self):
        return {"estimator_name": type(self).__name__}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = True
        tags.input_tags.three_d_array = True
        tags.input_tags.allow_nan = False
        # fit(X) without targets trains where the estimator learns without them (the
        # pointer network with a cost).
        tags.target_tags.required = not self._learns_without_targets()
        tags.non_deterministic = False
        return tags

    # ------------------------------------------------------------------ hooks
    def _prepare_training_data(self, X, y, reset):  # pragma: no cover - abstract
        raise NotImplementedError

    def _build_network(self, seed):  # pragma: no cover - abstract
        raise NotImplementedError

    def _loss(self):  # pragma: no cover - abstract
        raise NotImplementedError

    _jit_training: ClassVar[bool] = False
    _jit_inference: ClassVar[bool] = False
    #: Network hyperparameters added after fits were first saved, with the values that
    #: build the networks of files and pickles written before they existed.
    _network_params_before: ClassVar[dict] = {"dtype_policy": "float32"}
    #: Values of fitted attributes for a fit recorded before they existed (older files
    #: and pickles): the values that reproduce the fitted model of that time.
    _fitted_attributes_before: ClassVar[dict] = {}
    #: Hyperparameters (or ``network_params_``) of a file or pickle written by an
    #: earlier version, in today's terms (a copy).
    _params_saved_before = staticmethod(dict)

    def _weight_count(self):  # pragma: no cover - abstract
        """Estimated number of the network's weights (see :mod:`skptr._limits`)."""
        raise NotImplementedError

    def _activation_count(self, n_rows, n_steps):  # pragma: no cover - abstract
        """Estimated numbers a training step holds for ``n_rows`` sequences of
        ``n_steps`` steps, weights excluded."""
        raise NotImplementedError

    def _with_fitted(self, fitted):
        """A shallow copy holding the ``fitted`` attributes and the hyperparameters the
        network is built with (``network_params_``): what the network hooks and
        training read."""
        view = self._shallow_copy()
        view.__dict__.update(fitted)
        view.__dict__.update(view.network_params_)
        return view

    def _as_fitted(self):
        """A shallow copy with the hyperparameters the network was built with."""
        return self._with_fitted({})

    def _check_network_memory(self):
        """Raise a ``MemoryError`` unless the network recorded in ``network_params_``
        fits in memory with its gradients and optimiser state."""
        view = self._as_fitted()
        view._check_memory("the network's weights", WEIGHT_COPIES * view._weight_count())

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

    def _cut_batches_kind(self):
        """The kind of batches the compile policy may cut to their samples' lengths (a
        key of its ``cut_batches_steps``); None: the batches are never cut."""
        return None

    def _training_batches(self, data, batch_size, seed):
        """The training batches: shuffled, and cut to their samples' lengths where the
        compile policy says (:meth:`_cut_batches_kind`, :meth:`_batch_trimming`)."""
        padded = ShuffledBatches(data, batch_size, seed)
        kind, policy = self._cut_batches_kind(), compile_policy()
        n_steps = int(self.epochs) * len(padded)
        if kind is None or not policy.cuts_batches(kind, n_steps, on_accelerator()):
            return padded
        extents, trim = self._batch_trimming(data)
        return LengthGroupedBatches(
            data, batch_size, seed, extents, trim, powers_of_two=policy.cut_powers_of_two
        )

    def _batch_trimming(self, data):  # pragma: no cover - for estimators that cut
        """The extents of each sample and the function that trims a batch to them."""
        raise NotImplementedError

    def _schedule_callbacks(self, network, epochs_done):
        """Callbacks of the estimator's own, run before the user's (none by default)."""
        return []

    _without_targets_advice = ""

    def _learns_without_targets(self):
        """Whether ``fit(X)`` without targets trains (on what, the subclass says)."""
        return False

    def _training_model(self, network, data, seed):
        """The model that ``fit`` trains on ``data`` (the network itself by default)
        and the callbacks that training needs for it."""
        return network, ()

    # ------------------------------------------------------------ parameters
    def _validate_params(self):
        _params.check_numbers(self)
        super()._validate_params()
        _params.check_values(self)
        self._placement()

    # -------------------------------------------------------------- training
    def fit(self, X, y=None):
        """Train the network on sequences ``X`` with targets ``y``, or, for an
        estimator that learns from a cost, on ``X`` alone.

        The fit is transactional: if it fails (bad data, a callback raising, a
        ``KeyboardInterrupt``, a NaN loss), the estimator is left as it was.

        Parameters
        ----------
        X : array-like or list of array-like
            Training sequences; see the estimator's documentation for the formats.
        y : array-like, list or None, default=None
            Targets, one per sequence, to imitate. None is allowed only where the
            estimator learns without targets: a
            :class:`~skptr.PointerNetworkOrderer` with a ``cost`` then learns orderings
            that make the cost small (and with targets, imitates them and ignores the
            cost).

        Returns
        -------
        self : object
            The fitted estimator.

        Raises
        ------
        ValueError
            On invalid hyperparameters or data, or a NaN or infinite loss or weights.
        MemoryError
            When the network or a batch does not fit in memory.
        """
        self._validate_params()
        if y is None and not self._learns_without_targets():
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None"
                f"{self._without_targets_advice}."
            )
        warm = self.warm_start and self._is_fitted()
        if warm:
            _params.check_warm_start(self)
        seeds = SeedStream(draw_seed(self.random_state))
        # A warm fit trains the network in place, apart from other threads' inference.
        with _inference.network_lock(self.network_).writing() if warm else nullcontext():
            snapshot = NetworkState(self.network_) if warm else None
            try:
                with (
                    _backend.interrupts_between_steps(),
                    _backend.out_of_memory_as_error(self),
                    self._placement().scope(),
                ):
                    data, encoding = self._prepare_training_data(X, y, reset=not warm)
                    fitted = self._fit_network(data, encoding, warm, seeds)
            except BaseException:
                if snapshot is not None:
                    snapshot.restore()
                raise
            # At once, so that an inference call starting now sees one fit or the other.
            vars(self).update(fitted)
        return self

    def _fit_network(self, data, encoding, warm, seeds):
        """Train a new network (warm: the fitted one) on encoded ``data``.

        Returns
        -------
        dict
            Every fitted attribute of the fit: ``encoding``, ``network_params_``,
            ``network_``, ``history_`` and ``n_iter_``.
        """
        network_seed, *training_seeds = seeds.next(), seeds.next(), seeds.next()
        if warm:
            view, network, history = self._as_fitted(), self.network_, self.history_
            _training.check_fit(view, data, (network_seed, *training_seeds), warm=True)
        else:
            view = self._with_fitted(
                {**encoding, "network_params_": self._current_network_params()}
            )
            _training.check_fit(view, data, (network_seed, *training_seeds))
            network, history = view._new_network(network_seed), {}
        epochs_done = len(history.get("loss", []))
        model, callbacks = view._training_model(network, data, network_seed)
        logs = _training.train(
            view, model, data, training_seeds, epochs_done=epochs_done, callbacks=callbacks
        )
        history = {key: list(values) for key, values in history.items()}
        for key, values in logs.items():
            history.setdefault(key, []).extend(values)
        return {
            **encoding,
            "network_params_": view.network_params_,
            "network_": network,
            "history_": history,
            "n_iter_": len(history.get("loss", [])),
        }

    def _current_network_params(self):
        """The network hyperparameters a new network would be built with now."""
        return _params.network_params(self)

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

    # ------------------------------------------------------------- utilities
    def _is_fitted(self):
        return getattr(self, "network_", None) is not None

    def _check_fitted(self):
        check_is_fitted(self, "network_")

    def _inference_model(self, key, build, n_rows=0, length=1):
        """The compiled inference model ``key`` of the fitted network, built once (see
        :func:`skptr._inference.inference_model`)."""
        return _inference.inference_model(self, key, build, n_rows, length)

    def _predict_batch_size(self):
        return max(int(self.batch_size), 256)

    # ------------------------------------------------------------ persistence
    @inference_method
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

    @inference_method
    def __getstate__(self):
        state = dict(super().__getstate__())
        if not (state.get("devices") is None or isinstance(state["devices"], str)):
            state["devices"] = None  # a backend's strategy belongs to its process
        network = state.pop("network_", None)
        if network is not None:
            state["_network_weights"] = [np.asarray(w) for w in network.get_weights()]
        return state

    def __setstate__(self, state):
        state = self._params_saved_before(state)
        if isinstance(state.get("network_params_"), dict):
            state["network_params_"] = self._params_saved_before(state["network_params_"])
        weights = state.pop("_network_weights", None)
        # Pickled before some hyperparameters existed: the values that build the network
        # of that time.
        for name, value in self._network_params_before.items():
            state.setdefault(name, value)
        # ... and before other hyperparameters existed: their defaults.
        for name, value in type(self)().get_params(deep=False).items():
            state.setdefault(name, value)
        if weights is not None and "network_params_" not in state:
            # Pickled before fitted models recorded their network's hyperparameters.
            state["network_params_"] = {name: state[name] for name in self._network_params}
        if "network_params_" in state:
            state["network_params_"] = {
                **self._network_params_before,
                **state["network_params_"],
            }
            state = {**self._fitted_attributes_before, **state}
        super().__setstate__(state)
        if weights is not None:
            self.network_ = self._new_network(restored=True)
            self.network_.set_weights(weights)
