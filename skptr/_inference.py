"""The cache of compiled inference models of fitted networks.

Prediction builds a Keras model around the fitted network for each way of decoding
(greedy, beam, traces, ...), compiled with XLA for large calls where the compile policy
says so, and keeps it for later calls.
"""

from __future__ import annotations

import contextlib
import threading
import weakref

from ._backend import attached
from ._devices import held_in_this_process
from ._precision import dtype_policy_scope
from ._training import compile_policy

__all__ = ["inference_model", "inference_models", "inference_network", "network_lock"]

_INFERENCE_MODELS_ATTRIBUTE = "_skptr_inference_models"
# Guards the building of inference models.
_BUILDING = threading.Lock()

# A copy on this process's own device of each network trained over several processes,
# which inference runs on.
_LOCAL_COPIES = weakref.WeakKeyDictionary()


class NetworkLock:
    """Shared use of a network by inference calls, exclusive use by a warm fit.

    Any number of threads may read the network at once; a thread that trains it (a warm
    fit, which changes its variables step by step) waits until they are done, and
    readers wait until it is. The training thread may itself read (a callback that
    predicts). Readers do not wait for a waiting writer, so that a thread reading in a
    nested call cannot block.
    """

    def __init__(self):
        self._condition = threading.Condition()
        self._readers = 0
        self._writer = None

    @contextlib.contextmanager
    def reading(self):
        """Hold the network for an inference call."""
        with self._condition:
            own = self._writer == threading.get_ident()
            if not own:
                self._condition.wait_for(lambda: self._writer is None)
                self._readers += 1
        try:
            yield
        finally:
            if not own:
                with self._condition:
                    self._readers -= 1
                    self._condition.notify_all()

    @contextlib.contextmanager
    def writing(self):
        """Hold the network alone, for training it."""
        with self._condition:
            self._condition.wait_for(lambda: self._writer is None and self._readers == 0)
            self._writer = threading.get_ident()
        try:
            yield
        finally:
            with self._condition:
                self._writer = None
                self._condition.notify_all()


def network_lock(network):
    """The :class:`NetworkLock` of ``network``, kept by the network."""
    return attached(network, "_skptr_lock", NetworkLock)


def inference_models(network):
    """The compiled inference models of a trained network, by key.

    They are kept outside the estimators, so that prediction leaves their
    ``__dict__`` unchanged, and by the network itself rather than in a mapping keyed
    by networks: each model holds its network, so such a mapping would keep every
    network, and its models, alive after its estimator is gone. Saving writes a new
    network (:func:`skptr._persistence.save`), so they never reach a file.
    """
    return attached(network, _INFERENCE_MODELS_ATTRIBUTE, dict)


def inference_network(estimator):
    """The fitted network, or, when its weights span several processes (it was trained
    over them), its copy on this process's own device, holding its current weights."""
    network = estimator.network_
    if held_in_this_process(network):
        return network
    copy = _LOCAL_COPIES.get(network)
    if copy is None:
        copy = _LOCAL_COPIES[network] = estimator._new_network(restored=True)
    copy.set_weights(network.get_weights())
    return copy


def inference_model(estimator, key, build, n_rows=0, length=1):
    """The compiled inference model ``key`` of the estimator's fitted network.

    Parameters
    ----------
    estimator : SequenceEstimatorBase
        A fitted estimator.
    key : hashable
        Identifies the model among those of the network (e.g. the decoding mode).
    build : callable
        Called with the network to create the model when it is not cached yet.
    n_rows : int, default=0
        Rows of the inference call; large calls of estimators that set
        ``_jit_inference`` get a model compiled with XLA (see
        :class:`~skptr._training.CompilePolicy`).
    length : int, default=1
        Longest sequence of the call, in steps.
    """
    jit = compile_policy().inference_jit(estimator._jit_inference, n_rows, length)
    network = inference_network(estimator)
    with _BUILDING:  # threads predicting at once build each model once
        models = inference_models(network)
        if (key, jit) not in models:
            policy = estimator.network_params_.get("dtype_policy")
            with estimator._placement().inference.scope(), dtype_policy_scope(policy):
                model = build(network)
                if jit:
                    model.compile(jit_compile=True)
            models[key, jit] = model
        return models[key, jit]
