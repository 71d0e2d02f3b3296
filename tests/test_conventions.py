"""scikit-learn conventions of both estimators: keyword-only parameters, the shared
training parameters, their documentation, and the target tag."""

import inspect
import re

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils import get_tags

from skptr import NeuralStackTransducer, PointerNetworkOrderer
from skptr._base import SequenceEstimatorBase
from skptr._docstrings import SHARED_PARAMETERS, fill_shared

SHARED_TRAINING = {
    "clipnorm": 1.0,
    "validation_fraction": 0.0,
    "early_stopping": False,
    "n_iter_no_change": 5,
    "random_state": None,
    "verbose": 0,
    "warm_start": False,
    "callbacks": None,
    "devices": None,
    "dtype_policy": None,
}

EXPECTED_PARAMS = {
    PointerNetworkOrderer: {
        "hidden_size": 128,
        "cell": "lstm",
        "bidirectional": True,
        "num_layers": 1,
        "decoder_layers": None,
        "encoder": "recurrent",
        "n_heads": 8,
        "attention": "additive",
        "n_glimpses": 0,
        "logit_clip": None,
        "dropout": 0.0,
        "decode": "greedy",
        "n_candidates": None,
        "beam_width": 5,
        "augment": False,
        "cycle": None,
        "cost": None,
        "rollouts": "sample",
        "n_rollouts": 8,
        "epochs": 20,
        "batch_size": 128,
        "learning_rate": 3e-3,
        "learning_rate_decay": 1.0,
        **SHARED_TRAINING,
    },
    NeuralStackTransducer: {
        "memory": "stack",
        "cell": "lstm",
        "hidden_size": 32,
        "embedding_dim": 16,
        "memory_width": 32,
        "pop_bias": -1.0,
        "push_bias": "auto",
        "state_bptt_steps": "auto",
        "gate_noise": 1.0,
        "gate_noise_start": "auto",
        "reset_cell_state": "auto",
        "snap_gates": "auto",
        "n_init": 8,
        "curriculum": True,
        "handle_unknown": "error",
        "max_output_length": None,
        "epochs": 20,
        "batch_size": 32,
        "learning_rate": 0.01,
        **SHARED_TRAINING,
    },
}

ESTIMATORS = list(EXPECTED_PARAMS)
BASE_PARAMS = list(inspect.signature(SequenceEstimatorBase.__init__).parameters)[1:]


@pytest.mark.parametrize("Estimator", ESTIMATORS)
def test_parameters_are_keyword_only(Estimator):
    parameters = list(inspect.signature(Estimator.__init__).parameters.values())[1:]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters)
    with pytest.raises(TypeError, match="positional"):
        Estimator(16)
    Estimator(hidden_size=16)


@pytest.mark.parametrize("Estimator", ESTIMATORS)
def test_get_params_names_and_defaults(Estimator):
    params = Estimator().get_params()
    assert params == EXPECTED_PARAMS[Estimator]
    for name, value in params.items():  # 1.0 is not True, 0 is not False
        assert type(value) is type(EXPECTED_PARAMS[Estimator][name]), name


def test_base_sets_the_shared_training_parameters():
    shared = {"epochs", "batch_size", "learning_rate", *SHARED_TRAINING}
    assert set(BASE_PARAMS) == shared
    parameters = inspect.signature(SequenceEstimatorBase.__init__).parameters
    assert all(parameters[name].kind is inspect.Parameter.KEYWORD_ONLY for name in shared)
    for Estimator in ESTIMATORS:
        # Each estimator passes its own values on to the base class.
        values = {name: object() for name in shared}
        estimator = Estimator(**values)
        assert all(getattr(estimator, name) is values[name] for name in shared)


@pytest.mark.parametrize("Estimator", ESTIMATORS)
def test_clone_round_trip(Estimator):
    callback = []
    changed = {
        "epochs": 3,
        "batch_size": 16,
        "learning_rate": 0.05,
        "clipnorm": None,
        "validation_fraction": 0.25,
        "early_stopping": True,
        "n_iter_no_change": 2,
        "random_state": 7,
        "verbose": 2,
        "warm_start": True,
        "callbacks": callback,
        "dtype_policy": "float32",
        "hidden_size": 24,
    }
    estimator = Estimator(**changed)
    copy = clone(estimator)
    assert copy is not estimator
    assert type(copy) is Estimator
    assert copy.get_params() == {**EXPECTED_PARAMS[Estimator], **changed}
    assert copy.get_params() == estimator.get_params()
    assert clone(Estimator()).get_params() == EXPECTED_PARAMS[Estimator]
    # set_params reaches the shared parameters as well as the estimator's own.
    copy.set_params(epochs=5, verbose=1)
    assert (copy.epochs, copy.verbose, estimator.epochs) == (5, 1, 3)


@pytest.mark.parametrize("Estimator", ESTIMATORS)
def test_docstring_documents_every_parameter(Estimator):
    doc = inspect.getdoc(Estimator)
    section = doc.split("Parameters\n----------\n", 1)[1].split("\n\n", 1)[0]
    documented = re.findall(r"^(\w+) :", section, flags=re.MULTILINE)
    assert documented == list(inspect.signature(Estimator).parameters)
    assert "{shared:" not in doc
    for entry in SHARED_PARAMETERS.values():
        assert inspect.cleandoc(entry).splitlines()[0] in doc


def test_fill_shared():
    doc = "Parameters\n    ----------\n    {shared: verbose, warm_start}\n    x : int\n"
    filled = fill_shared(doc)
    assert "    verbose : int, default=0\n        0 is silent" in filled
    assert "    warm_start : bool, default=False\n" in filled
    assert filled.endswith("    x : int\n")
    assert fill_shared(None) is None
    with pytest.raises(ValueError, match="nonsense"):
        fill_shared("    {shared: verbose, nonsense}")


def test_target_required_unless_the_pointer_learns_from_a_cost():
    assert get_tags(PointerNetworkOrderer()).target_tags.required
    assert get_tags(NeuralStackTransducer()).target_tags.required
    for cost in ("tour", "path", lambda X, orderings: np.zeros(len(orderings))):
        estimator = PointerNetworkOrderer(cost=cost)
        assert not get_tags(estimator).target_tags.required
        assert not estimator.__sklearn_tags__().target_tags.required
        # The tag follows set_params, as get_tags reads it from the instance.
        assert get_tags(estimator.set_params(cost=None)).target_tags.required


def test_fit_without_targets_with_a_cost():
    rng = np.random.default_rng(0)
    X = rng.random((16, 5, 2))
    estimator = PointerNetworkOrderer(
        cost="tour", hidden_size=8, epochs=1, batch_size=8, n_rollouts=2, random_state=0
    )
    assert not get_tags(estimator).target_tags.required
    assert estimator.fit(X) is estimator
    assert estimator.predict(X[:2]).shape == (2, 5)
    with pytest.raises(ValueError, match="requires y"):
        PointerNetworkOrderer(hidden_size=8, epochs=1).fit(X)
