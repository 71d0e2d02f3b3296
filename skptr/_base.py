"""The shared base class of skptr's Keras-backed sequence estimators.

A subclass describes its data and its network through four hooks; the base class owns
everything else: parameter validation, seeding, the train/validation split, early
stopping, warm starts, user callbacks, ``history_`` and pickling.

Hooks a subclass implements
---------------------------
``_prepare_training_data(X, y, reset)``
    Validate ``X`` and ``y``; when ``reset`` is true, set the data-dependent fitted
    attributes the network needs (``n_features_in_``, vocabularies, ...); when false
    (a warm start), check the data against them. Return ``(inputs, targets)``:
    ``inputs`` a dict (or array) of NumPy arrays whose first axis is the sample axis,
    ``targets`` an array with the same first axis.
``_build_network()``
    Return a *built* ``keras.Model`` (weights created) made only from hyperparameters
    and fitted attributes, so that unpickling can rebuild it and restore its weights.
``_loss()``
    Return the loss passed to ``compile``.
``_train(inputs, targets, validation_data, callbacks)`` (optional)
    Run the optimisation and return the list of Keras ``History`` objects; the default
    is one ``network_.fit`` call. Override it for schedules such as a curriculum.
``_use_xla(n_steps, length)`` (optional)
    Whether to compile the training step with XLA, given the number of gradient steps
    and the longest input; the default is never.

Attributes whose names start with ``_cache_`` are transient (compiled inference
functions and the like): they are dropped when pickling and rebuilt on demand.
"""

from __future__ import annotations

import contextlib
import random
from numbers import Integral, Real
from typing import ClassVar

import keras
import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from . import _backend  # noqa: F401 - configures GPU memory before first use
from ._persistence import save as _save_estimator

__all__ = ["SequenceEstimatorBase"]

_MAX_SEED = 2**31 - 1
# Tracing a training graph costs a few seconds; a fit of at most this many gradient
# steps over sequences of at most this many steps runs eagerly, which is faster overall
# (small searches, smoke tests, tiny data). Eager steps loop over time in Python, so
# long sequences are always traced.
EAGER_STEP_LIMIT = 10
EAGER_LENGTH_LIMIT = 64


def _draw_seed(random_state):
    return int(check_random_state(random_state).randint(_MAX_SEED))


@contextlib.contextmanager
def seeded(seed):
    """Seed Keras, the backend, Python and NumPy inside a ``with`` block.

    Keras draws initializer seeds from Python's ``random`` module and the backend
    draws shuffles from its own global seed, so all of them are seeded while the
    network is built and trained. Python's and NumPy's global states are restored on
    exit, so fitting an estimator does not disturb the caller's random numbers.

    Parameters
    ----------
    seed : int
        The seed for weight initialisation, dropout and shuffling.
    """
    python_state = random.getstate()
    numpy_state = np.random.get_state()  # noqa: NPY002
    try:
        keras.utils.set_random_seed(seed)
        yield
    finally:
        random.setstate(python_state)
        np.random.set_state(numpy_state)  # noqa: NPY002


def _take(data, indices):
    if isinstance(data, dict):
        return {key: value[indices] for key, value in data.items()}
    return data[indices]


def _length(data):
    """Longest time axis (axis 1) among the model inputs."""
    arrays = data.values() if isinstance(data, dict) else [data]
    return max((a.shape[1] for a in arrays if np.ndim(a) >= 2), default=0)


def _n_samples(data):
    if isinstance(data, dict):
        return len(next(iter(data.values())))
    return len(data)


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
        With an int, repeated fits on CPU give identical models.
    verbose : int
        0 prints nothing, 1 shows a Keras progress bar, 2 one line per epoch.
    warm_start : bool
        When true, a second ``fit`` continues training the existing network (and
        appends to ``history_``) instead of building a new one.
    callbacks : list of keras.callbacks.Callback or None
        Extra Keras callbacks passed to ``fit``.
    """

    _parameter_constraints: ClassVar[dict] = {
        "epochs": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "clipnorm": [Interval(Real, 0, None, closed="neither"), None],
        "validation_fraction": [Interval(Real, 0, 1, closed="left")],
        "early_stopping": ["boolean"],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "warm_start": ["boolean"],
        "callbacks": [list, tuple, None],
    }

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

    def _build_network(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _loss(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _train(self, inputs, targets, validation_data, callbacks):
        history = self.network_.fit(
            inputs,
            targets,
            batch_size=self.batch_size,
            epochs=self.epochs,
            validation_data=validation_data,
            callbacks=callbacks,
            shuffle=True,
            verbose=min(int(self.verbose), 2),
        )
        return [history]

    # -------------------------------------------------------------- training
    def fit(self, X, y):
        """Train the network on sequences ``X`` with targets ``y``.

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
        """
        self._validate_params()
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None."
            )
        reset = not (self.warm_start and self._is_fitted())
        seed = _draw_seed(self.random_state)
        with seeded(seed):
            inputs, targets = self._prepare_training_data(X, y, reset=reset)
            if reset:
                self.network_ = self._build_network()
                self.history_ = {}
            inputs, targets, validation_data = self._split_validation(inputs, targets, seed)
            if getattr(self.network_, "optimizer", None) is None or reset:
                n_steps = self.epochs * -(-_n_samples(inputs) // self.batch_size)
                self._compile(n_steps, _length(inputs))
            self._clear_cache()
            callbacks = self._fit_callbacks(validation_data is not None)
            histories = self._train(inputs, targets, validation_data, callbacks)
        for history in histories:
            for key, values in history.history.items():
                self.history_.setdefault(key, []).extend(float(v) for v in values)
        self.n_iter_ = len(self.history_.get("loss", []))
        return self

    def _use_xla(self, n_steps, length):
        """Whether to compile training with XLA; subclasses opt in where it pays."""
        return False

    def _compile(self, n_steps, length):
        eager = n_steps <= EAGER_STEP_LIMIT and length <= EAGER_LENGTH_LIMIT
        optimizer = keras.optimizers.Adam(learning_rate=self.learning_rate, clipnorm=self.clipnorm)
        self.network_.compile(
            optimizer=optimizer,
            loss=self._loss(),
            jit_compile=not eager and self._use_xla(n_steps, length),
            run_eagerly=eager,
        )

    def _split_validation(self, inputs, targets, seed):
        if self.validation_fraction == 0:
            return inputs, targets, None
        n_samples = _n_samples(inputs)
        n_validation = round(self.validation_fraction * n_samples)
        if n_validation < 1 or n_validation >= n_samples:
            raise ValueError(
                f"validation_fraction={self.validation_fraction} leaves "
                f"{n_validation} of {n_samples} samples for validation; it needs at least "
                "one sample on each side."
            )
        order = np.random.RandomState(seed).permutation(n_samples)
        held_out, kept = order[:n_validation], order[n_validation:]
        validation = (_take(inputs, held_out), _take(targets, held_out))
        return _take(inputs, kept), _take(targets, kept), validation

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
        return callbacks

    # ------------------------------------------------------------- utilities
    def _is_fitted(self):
        return getattr(self, "network_", None) is not None

    def _check_fitted(self):
        check_is_fitted(self, "network_")

    def _clear_cache(self):
        for name in [n for n in vars(self) if n.startswith("_cache_")]:
            delattr(self, name)

    def _predict_batch_size(self):
        return max(int(self.batch_size), 256)

    # ------------------------------------------------------------ persistence
    def save(self, path):
        """Write the estimator to ``path`` in skptr's pickle-free format.

        Hyperparameters and fitted attributes are stored as plain JSON data and the
        network in the Keras ``.keras`` format; read it back with :func:`skptr.load`,
        which loads the network with Keras ``safe_mode``. Unlike a pickle, loading such
        a file does not run code stored in it.

        Parameters
        ----------
        path : str or path-like
            Destination file, conventionally ending in ``.skptr``.
        """
        _save_estimator(self, path)

    def __getstate__(self):
        state = super().__getstate__()
        state = {k: v for k, v in state.items() if not k.startswith("_cache_")}
        network = state.pop("network_", None)
        if network is not None:
            state["_network_weights"] = [np.asarray(w) for w in network.get_weights()]
        return state

    def __setstate__(self, state):
        state = dict(state)
        weights = state.pop("_network_weights", None)
        super().__setstate__(state)
        if weights is not None:
            with seeded(0):
                self.network_ = self._build_network()
            self.network_.set_weights(weights)
