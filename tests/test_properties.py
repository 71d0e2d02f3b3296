"""Properties of every hyperparameter, input and token a user can give the estimators.

Each property draws values the way a careless or hostile user might (wrong types,
NumPy scalars, NaN and infinities, huge and boundary integers, near-miss option
strings, malformed and oddly shaped data) and checks that skptr either accepts them and
gives a valid result, or refuses them with a clear error (``_properties.unclear``).
Calls that could hang or exhaust memory are in ``test_isolated.py``.
"""

import math
import numbers
import re
from fractions import Fraction

import keras
import numpy as np
import pytest
from _properties import (
    TINY_POINTER,
    TINY_TRANSDUCER,
    assert_clear,
    check_orderings,
    check_transductions,
    either,
    examples,
    fit_tiny,
    fitted,
    refused,
    sorting,
    strings,
)
from hypothesis import given
from hypothesis import strategies as st
from sklearn.utils._param_validation import Interval, Options, StrOptions

from skptr import NeuralStackTransducer, PointerNetworkOrderer
from skptr._sequences import check_token_sequences
from skptr.memory._tokens import decode_tokens, encode_tokens, learn_vocabulary
from skptr.preprocessing import TextTokenizer

ESTIMATORS = {"pointer": PointerNetworkOrderer, "transducer": NeuralStackTransducer}
TINY = {"pointer": TINY_POINTER, "transducer": TINY_TRANSDUCER}
#: Parameters with properties of their own below.
_OWN_PROPERTIES = {"callbacks", "devices"}


# ----------------------------------------------------------------- hyperparameters
def _accepts(constraint, value):
    """Whether ``value`` is a sensible value of ``constraint``.

    Written independently of scikit-learn's checks, with stricter rules: a bool is
    never a number, NaN and infinities are never hyperparameters.
    """
    if constraint is None:
        return value is None
    if isinstance(value, bool | np.bool_):
        return constraint in ("boolean", "verbose")
    if constraint == "boolean":
        return False
    if constraint == "verbose":
        return isinstance(value, numbers.Integral) and value >= 0
    if constraint == "random_state":
        if isinstance(value, np.random.RandomState) or value is None:
            return True
        return isinstance(value, numbers.Integral) and 0 <= value < 2**32
    if isinstance(constraint, StrOptions):
        return isinstance(value, str) and value in constraint.options
    if isinstance(constraint, Options):
        return isinstance(value, constraint.type) and value in constraint.options
    if constraint is numbers.Real:
        return isinstance(value, numbers.Real) and _finite(value)
    if constraint is callable:
        return callable(value)
    if isinstance(constraint, Interval):
        if not isinstance(value, constraint.type):
            return False
        if constraint.type is numbers.Real and not _finite(value):
            return False
        left, right = constraint.left, constraint.right
        closed = constraint.closed
        if left is not None and (
            value < left or (value == left and closed not in ("left", "both"))
        ):
            return False
        return right is None or not (
            value > right or (value == right and closed not in ("right", "both"))
        )
    raise AssertionError(f"no rule for the constraint {constraint!r}")


def _finite(value):
    """A plain number (no Fraction or Decimal) that a float holds, and not NaN."""
    if not isinstance(value, int | float | np.integer | np.floating):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _near_misses(constraints):
    """Values at and around the edges of a parameter's constraints."""
    values = [None]
    for constraint in constraints:
        if isinstance(constraint, StrOptions):
            for option in sorted(constraint.options):
                values += [option, option.upper(), f" {option}", option.encode()]
                values += [np.str_(option), [option]]
        elif isinstance(constraint, Options):
            for option in sorted(constraint.options):
                values += [option, option - 1, option + 1, float(option), np.int64(option)]
        elif isinstance(constraint, Interval):
            for edge in (constraint.left, constraint.right):
                if edge is not None:
                    values += [edge, edge - 1, edge + 1, float(edge), np.int64(edge)]
                    values += [np.uint8(edge) if 0 <= edge < 256 else np.int32(1)]
                    values += [edge / 2, Fraction(edge + 1, 2), np.float32(edge)]
    return values


_HOSTILE = st.one_of(
    st.booleans(),
    st.sampled_from([np.bool_(True), np.bool_(False), None, "", "auto", "nonsense", "2"]),
    st.integers(-3, 40),
    st.integers(-(2**80), 2**80),
    st.sampled_from([2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**63, 2**70, 10**400]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, 0.5, 1.0, 2.0, 2.5, 1e308, 5e-324, float("nan"), float("inf")]),
    st.integers(0, 255).map(np.uint8),
    st.integers(-5, 100).map(np.int64),
    st.floats(-2, 2, width=32).map(np.float32),
    st.sampled_from([np.float64("nan"), np.float64(2.0), np.int32(3)]),
    st.fractions(-2, 2, max_denominator=4),
    st.complex_numbers(max_magnitude=4, allow_nan=False),
    st.text(max_size=6),
    st.lists(st.integers(0, 3), max_size=2),
    st.dictionaries(st.text(max_size=1), st.integers(), max_size=1),
    st.builds(object),
    st.builds(np.random.RandomState, st.integers(0, 9)),
    st.builds(np.random.default_rng, st.integers(0, 9)),
)


def _parameters(estimator):
    constraints = ESTIMATORS[estimator]._parameter_constraints
    return sorted(k for k in constraints if k not in _OWN_PROPERTIES)


@pytest.mark.parametrize("estimator", list(ESTIMATORS))
@examples(250)
@given(data=st.data())
def test_each_hyperparameter_takes_its_values_and_refuses_the_rest(estimator, data):
    cls = ESTIMATORS[estimator]
    name = data.draw(st.sampled_from(_parameters(estimator)), label="parameter")
    constraints = cls._parameter_constraints[name]
    value = data.draw(st.one_of(_HOSTILE, st.sampled_from(_near_misses(constraints))))
    model = cls(**{**TINY[estimator], name: value})
    if name == "random_state" and isinstance(value, bool | np.bool_):
        return  # scikit-learn takes a bool seed as an int, as its own estimators do
    if any(_accepts(c, value) for c in constraints):
        model._validate_params()  # never refused by the checks of the parameters
    else:
        X, y = sorting() if estimator == "pointer" else strings()
        refused(lambda: model.fit(X, y), mention=name)


#: Unusual but valid values, which must train and predict.
_ODD_VALID = {
    "pointer": {
        "hidden_size": [np.int64(3), np.uint8(4), np.int32(2), 1],
        "num_layers": [np.int64(2)],
        "n_glimpses": [np.uint8(1), 0],
        "dropout": [np.float32(0.25), 0.0],
        "learning_rate": [np.float32(0.01), 5e-324],
        "learning_rate_decay": [np.float64(0.5), 1],
        "clipnorm": [None, np.float32(0.5), 1e308],
        "cell": [np.str_("gru"), "rnn"],
        "attention": [np.str_("dot"), "general"],
        "bidirectional": [np.bool_(False)],
        "batch_size": [1, np.int64(10**6)],
        "verbose": [np.int64(0), False],
        "random_state": [2**32 - 1, np.int64(7), np.random.RandomState(0), None],
        "decode": ["beam", np.str_("greedy"), "sample", np.str_("multistart")],
        "augment": [np.bool_(True), False],
        "n_candidates": [np.int64(3), None],
        "cycle": ["directed", np.str_("undirected")],
    },
    "transducer": {
        "hidden_size": [np.int64(3), np.uint8(2)],
        "embedding_dim": [1, np.int32(2)],
        "memory_width": [1, np.uint8(3)],
        "memory": ["queue", "deque", None, np.str_("stack")],
        "cell": ["gru", np.str_("rnn")],
        "pop_bias": [np.float32(0.5), 0],
        "push_bias": ["auto", -1.0, np.int64(2)],
        "gate_noise": [0.0, np.float32(0.5)],
        "gate_noise_start": [1, 0.0, np.float64(0.5)],
        "state_bptt_steps": [0, None, np.int64(1)],
        "reset_cell_state": [np.bool_(True), False],
        "snap_gates": [True, np.bool_(False)],
        "curriculum": [False],
        "max_output_length": [1, np.int64(2)],
        "n_init": [np.int64(2)],
        "random_state": [2**32 - 1, np.random.RandomState(0), None],
        "verbose": [np.int64(0)],
    },
}


@pytest.mark.parametrize("estimator", list(ESTIMATORS))
@examples(2)
@given(data=st.data())
def test_unusual_valid_values_train_and_predict(estimator, data):
    params = _ODD_VALID[estimator]
    name = data.draw(st.sampled_from(sorted(params)), label="parameter")
    value = data.draw(st.sampled_from(params[name]), label="value")
    kind = "pointer" if estimator == "pointer" else "stack"
    model = either(lambda: fit_tiny(kind, **{name: value}))
    if model is None:
        return
    if estimator == "pointer":
        X = sorting()[0][:8]
        check_orderings(model.predict(X), [len(x) for x in X])
    else:
        check_transductions(model.predict(strings()[0][:8]), 8)


def _stop_after_first_epoch():
    class Stop(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            self.model.stop_training = True

    return Stop()


_NOT_CALLBACKS = st.one_of(
    st.integers(),
    st.text(max_size=4),
    st.none(),
    st.builds(object),
    st.just("EarlyStopping"),
    st.builds(lambda: [_stop_after_first_epoch()]),
)


@pytest.mark.parametrize("estimator", list(ESTIMATORS))
@examples(40)
@given(
    container=st.sampled_from([list, tuple]),
    items=st.lists(_NOT_CALLBACKS, min_size=1, max_size=3),
    callback_first=st.booleans(),
)
def test_callbacks_hold_only_keras_callbacks(estimator, container, items, callback_first):
    items = [_stop_after_first_epoch(), *items] if callback_first else items
    model = ESTIMATORS[estimator](**{**TINY[estimator], "callbacks": container(items)})
    X, y = sorting() if estimator == "pointer" else strings()
    refused(lambda: model.fit(X, y), mention="callbacks")


@pytest.mark.parametrize("value", ["x", {}, 1, _stop_after_first_epoch])
def test_callbacks_are_a_list_not_a_single_value(value):
    value = value() if callable(value) else value
    model = PointerNetworkOrderer(**{**TINY_POINTER, "callbacks": value})
    refused(lambda: model.fit(*sorting()), mention="callbacks")


# ----------------------------------------------------------------- pointer inputs
def _with(array, index, value, dtype=None):
    array = np.array(array, dtype=dtype or np.asarray(array).dtype)
    array[index] = value
    return array


#: Training data that must be refused: name -> (X, y) built from the sorting fixture.
_BAD_POINTER_DATA = {
    "X=[] y=[]": lambda X, y: ([], []),
    "X empty (0, 5)": lambda X, y: (np.empty((0, 5)), np.empty((0, 5), dtype=int)),
    "X empty (4, 0)": lambda X, y: (np.empty((4, 0)), np.empty((4, 0), dtype=int)),
    "X no features": lambda X, y: (X[..., None][..., :0], y),
    "ragged features": lambda X, y: ([[[1, 2], [3, 4]], [[1], [2]]], [[0, 1], [1, 0]]),
    "X object with None": lambda X, y: (_with(X, (0, 0), None, object), y),
    "X strings": lambda X, y: ([["a", "b", "c"]] * 4, [[0, 1, 2]] * 4),
    "X str array": lambda X, y: (X.astype(str), y),
    "X python strings": lambda X, y: (["abc", "bca"] * 4, [[0, 1, 2]] * 8),
    "X 4-D": lambda X, y: (X[:, :, None, None], y),
    "X 1-D": lambda X, y: (np.arange(5.0), [4, 3, 2, 1, 0]),
    "X scalar": lambda X, y: (5.0, [[0]]),
    "X None": lambda X, y: (None, [[0]]),
    "X complex": lambda X, y: (X + 1j, y),
    "X datetime64": lambda X, y: (X.astype("datetime64[D]"), y),
    "X dict": lambda X, y: ({0: [1, 2]}, [[1, 0]]),
    "X set": lambda X, y: ({1, 2, 3}, [[0]]),
    "y longer than X": lambda X, y: (X, np.hstack([y, y[:, :1]])),
    "y 0.5": lambda X, y: (X, _with(y, (0, 0), 0.5, float)),
    "y strings": lambda X, y: (X, y.astype(str)),
    "y None": lambda X, y: (X, None),
    "y 3-D": lambda X, y: (X, y[..., None]),
    "y 1-D": lambda X, y: (X, y[:, 0]),
    "y bool": lambda X, y: (X, y > 2),
    "y 2**70": lambda X, y: (X, _with(y, (0, 0), 2**70, object)),
    "y uint64 max": lambda X, y: (X, _with(y, (0, 0), 2**64 - 1, np.uint64)),
    "y sets": lambda X, y: (X, [set(row.tolist()) for row in y]),
    "X 32 y 31": lambda X, y: (X, y[:31]),
    "X 32 y 33": lambda X, y: (X, np.vstack([y, y[:1]])),
    "y permutations of 6": lambda X, y: (X, [list(range(6))] * len(X)),
}


@pytest.mark.parametrize("case", list(_BAD_POINTER_DATA))
def test_malformed_training_data_is_refused(case):
    X, y = _BAD_POINTER_DATA[case](*[a.copy() for a in sorting()])
    refused(lambda: PointerNetworkOrderer(**TINY_POINTER).fit(X, y))


_BAD_STEPS = st.sampled_from(
    [np.nan, np.inf, -np.inf, None, "a", 1j, [1.0, 2.0], np.datetime64("2020-01-01")]
)
_DAMAGES = ("duplicate", "out of range", "-2", "-1 before a position", "nan", "0.5 added")


@examples(60)
@given(
    X=st.lists(st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=6), min_size=2, max_size=6),
    where=st.tuples(st.integers(0, 5), st.integers(0, 5)),
    bad_step=_BAD_STEPS,
    damage=st.sampled_from(_DAMAGES),
    in_X=st.booleans(),
)
def test_one_bad_step_or_target_anywhere_is_refused(X, where, bad_step, damage, in_X):
    y = [np.argsort(x, kind="stable").tolist() for x in X]
    i = where[0] % len(X)
    j = where[1] % len(X[i])
    if in_X:
        X[i][j] = bad_step
    else:
        target = y[i]
        if damage == "-1 before a position":
            j = min(j, len(target) - 2)
        target[j] = {
            "duplicate": target[(j + 1) % len(target)],
            "out of range": len(target),
            "-2": -2,
            "-1 before a position": -1,
            "nan": np.nan,
            "0.5 added": target[j] + 0.5,
        }[damage]
    refused(lambda: PointerNetworkOrderer(**TINY_POINTER).fit(X, y))


#: Training data that may be accepted: it must then give valid orderings.
_ODD_POINTER_DATA = {
    "ragged": lambda X, y: (
        [[1, 2, 3], [4, 5], [6, 7, 8, 9]] * 4,
        [[2, 1, 0], [1, 0], [3, 2, 1, 0]] * 4,
    ),
    "ragged with an empty sequence": lambda X, y: ([[1, 2], [], [3]] * 4, [[1, 0], [], [0]] * 4),
    "X 1e308": lambda X, y: (X * 1e307, y),
    "X object numbers": lambda X, y: (X.astype(object), y),
    "X bool": lambda X, y: (X > 4, y),
    "X uint64 max": lambda X, y: (_with(X, (0, 0), 2**64 - 1, np.uint64), y),
    "X float16": lambda X, y: (X.astype(np.float16), y),
    "X generator": lambda X, y: ((x for x in X), y),
    "X nested object arrays": lambda X, y: (np.array(list(X), dtype=object), y),
    "y integral floats": lambda X, y: (X, y.astype(float)),
    "y all -1": lambda X, y: (X, np.full_like(y, -1)),
    "y ragged lists": lambda X, y: (X, [row.tolist() for row in y]),
    "y ordered subsets": lambda X, y: (X, [row[:3].tolist() for row in y]),
}


@examples(2)
@given(case=st.sampled_from(sorted(_ODD_POINTER_DATA)))
def test_unusual_training_data_trains_or_is_refused(case):
    X, y = _ODD_POINTER_DATA[case](*[a.copy() for a in sorting()])
    model = either(lambda: PointerNetworkOrderer(**TINY_POINTER).fit(X, y))
    if model is not None:
        probe = sorting()[0][:4]
        check_orderings(model.predict(probe), [len(x) for x in probe])


_BAD_PREDICT = {
    "X nan": [[1.0, np.nan, 2.0]],
    "X inf": [[1.0, np.inf, 2.0]],
    "2 features": np.ones((2, 5, 2)),
    "strings": [["a", "b"]],
    "4-D": np.ones((2, 5, 1, 1)),
    "None inside": [[1.0, None]],
    "X None": None,
}


@pytest.mark.parametrize("case", list(_BAD_PREDICT))
@pytest.mark.parametrize("method", ["predict", "predict_proba"])
def test_malformed_inputs_to_a_fitted_orderer_are_refused(case, method):
    refused(lambda: getattr(fitted("pointer"), method)(_BAD_PREDICT[case]))


@examples(4)
@given(
    lengths=st.lists(st.integers(0, 9), min_size=0, max_size=4),
    scale=st.sampled_from([1.0, 1e-300, 1e300]),
    beam_width=st.one_of(st.none(), st.integers(1, 8), st.sampled_from([120, 121, 10**6])),
)
def test_orderer_predicts_orderings_of_inputs_of_any_length(lengths, scale, beam_width):
    model = fitted("pointer")
    rng = np.random.default_rng(len(lengths))
    X = [rng.integers(0, 10, size=n) * scale for n in lengths]
    decode = "greedy" if beam_width is None else "beam"
    model.set_params(decode=decode, beam_width=beam_width or 5)
    try:
        either(lambda: model.predict(X), lambda out: check_orderings(out, lengths))
    finally:
        model.set_params(decode="greedy", beam_width=5)


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.score(sorting()[0][:2], [[0, 0, 1, 2, 3]] * 2),
        lambda m: m.score(sorting()[0][:2], sorting()[1][:1]),
        lambda m: m.score(sorting()[0][:2], None),
        lambda m: PointerNetworkOrderer().predict([[1.0, 2.0]]),
    ],
    ids=["score y duplicates", "score 1 target for 2", "score y None", "unfitted predict"],
)
def test_scores_of_malformed_targets_and_unfitted_predictions_are_refused(call):
    refused(lambda: call(fitted("pointer")))


# --------------------------------------------------------------------- tokens
_TOKEN = st.one_of(
    st.text(max_size=3),
    st.integers(-(2**70), 2**70),
    st.booleans(),
    st.binary(max_size=2),
    st.none(),
    st.tuples(st.integers(0, 2)),
    st.integers(0, 3).map(np.int64),
)
_UNHASHABLE = st.one_of(
    st.lists(st.integers(), max_size=1), st.dictionaries(st.text(max_size=1), st.integers())
)


@examples(150)
@given(
    samples=st.lists(
        st.one_of(st.text(max_size=5), st.lists(_TOKEN, max_size=5)), min_size=1, max_size=6
    )
)
def test_token_sequences_round_trip_through_their_vocabulary(samples):
    tokens, _ = check_token_sequences(samples)
    assert tokens == [list(sample) for sample in samples]
    vocabulary = learn_vocabulary(tokens)
    ids = encode_tokens(tokens, vocabulary, name="X")
    for sample, row in zip(tokens, ids, strict=True):
        back = decode_tokens(np.asarray(row), vocabulary, "list")
        assert len(back) == len(sample)
        assert all(type(a) is type(b) and a == b for a, b in zip(back, sample, strict=True))


@examples(60)
@given(
    samples=st.lists(st.lists(_TOKEN, max_size=4), min_size=1, max_size=4),
    bad=st.one_of(_UNHASHABLE, st.floats(), st.lists(_UNHASHABLE, max_size=1)),
    where=st.integers(0, 20),
)
def test_unhashable_or_float_tokens_are_refused_naming_the_sample(samples, bad, where):
    sample = samples[where % len(samples)]
    sample.insert(where % (len(sample) + 1), bad)
    refused(lambda: check_token_sequences(samples), mention=f"X[{where % len(samples)}]")


_BAD_TRANSDUCER_DATA = {
    "X=[] y=[]": lambda X, y: ([], []),
    "None sample": lambda X, y: ([None, *X[1:]], y),
    "None target": lambda X, y: (X, [None, *y[1:]]),
    "unhashable tokens": lambda X, y: ([[[t] for t in x] for x in X], y),
    "dict tokens": lambda X, y: ([[{"t": t} for t in x] for x in X], y),
    "X a str": lambda X, y: ("".join(X), y),
    "X 3-D array": lambda X, y: (np.zeros((16, 3, 2), dtype=int), np.zeros((16, 3), dtype=int)),
    "y None": lambda X, y: (X, None),
    "X 32 y 31": lambda X, y: (X, y[:31]),
    "X None": lambda X, y: (None, ["a"]),
    "y ints": lambda X, y: (X, list(range(len(y)))),
    "X nested sequences": lambda X, y: ([[list(x)] for x in X], y),
}


@pytest.mark.parametrize("case", list(_BAD_TRANSDUCER_DATA))
def test_malformed_transductions_are_refused(case):
    X, y = _BAD_TRANSDUCER_DATA[case](*strings())
    refused(lambda: NeuralStackTransducer(**TINY_TRANSDUCER).fit(X, y))


@pytest.mark.xfail(strict=True, reason="a dict given as X is read as the list of its keys")
def test_a_dict_is_not_a_collection_of_transductions():
    refused(lambda: NeuralStackTransducer(**TINY_TRANSDUCER).fit({"a": "b", "b": "a"}, ["b", "a"]))


def _tokens(X):
    return [list(x) for x in X]


#: Transductions of unusual tokens and containers: trained, then predicted.
_ODD_TRANSDUCER_DATA = {
    "empty strings": lambda X, y: (["", *X[1:]], ["", *y[1:]]),
    "all empty": lambda X, y: (["", ""] * 8, ["", ""] * 8),
    "None tokens": lambda X, y: ([[*x, None] for x in _tokens(X)], _tokens(y)),
    "mixed kinds in X": lambda X, y: ([X[0], *_tokens(X[1:])], y),
    "mixed kinds in y": lambda X, y: (X, [tuple(y[0]), *y[1:]]),
    "mixed token types": lambda X, y: ([[*x, 1] for x in _tokens(X)], _tokens(y)),
    "True and 1": lambda X, y: ([[True, 1, 0, False]] * 8, [[1, True]] * 8),
    "2-D int array": lambda X, y: (
        np.array([[0, 1, 1], [1, 0, 0]] * 8),
        np.array([[1, 1, 0], [0, 0, 1]] * 8),
    ),
    "float arrays": lambda X, y: ([np.array([0.5, 1.5])] * 16, [np.array([1.5, 0.5])] * 16),
    "bytes": lambda X, y: ([x.encode() for x in X], [x.encode() for x in y]),
    "numpy str array": lambda X, y: (np.array(X), np.array(y)),
    "2**70 tokens": lambda X, y: ([[2**70, 1]] * 16, [[1, 2**70]] * 16),
    "X generator": lambda X, y: ((x for x in X), y),
}


@examples(2)
@given(case=st.sampled_from(sorted(_ODD_TRANSDUCER_DATA)))
def test_unusual_transductions_train_and_predict(case):
    X, y = _ODD_TRANSDUCER_DATA[case](*strings())
    model = either(lambda: NeuralStackTransducer(**TINY_TRANSDUCER).fit(X, y))
    if model is not None:
        probe = list(_ODD_TRANSDUCER_DATA[case](*strings())[0])[:4]
        assert len(model.predict(probe)) == len(probe)


_BAD_TRANSDUCER_INPUTS = {
    "unknown tokens": ["abc"],
    "[None]": [None],
    "int tokens": [[0, 1]],
    "unhashable": [[["a"]]],
    "X a str": "ab",
    "3-D array": np.zeros((2, 2, 2)),
}


@pytest.mark.parametrize("case", list(_BAD_TRANSDUCER_INPUTS))
def test_malformed_inputs_to_a_fitted_transducer_are_refused(case):
    refused(lambda: fitted("stack").predict(_BAD_TRANSDUCER_INPUTS[case]))


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.score(["ab"], None),
        lambda m: m.score(["ab"], ["ba", "ab"]),
        lambda m: NeuralStackTransducer().predict(["ab"]),
    ],
    ids=["score y None", "score 2 targets for 1", "unfitted predict"],
)
def test_transducer_scores_of_malformed_targets_are_refused(call):
    refused(lambda: call(fitted("stack")))


def test_a_transducer_transduces_empty_inputs_and_no_inputs():
    check_transductions(fitted("stack").predict(["", "a"]), 2)
    either(lambda: fitted("stack").predict([]), lambda out: check_transductions(out, 0))


@examples(4)
@given(X=st.lists(st.text(alphabet="abz", max_size=6), min_size=1, max_size=3))
def test_unknown_tokens_are_ignored_when_asked(X):
    model = fitted("stack")
    model.set_params(handle_unknown="ignore")
    try:
        check_transductions(model.predict(X), len(X))
    finally:
        model.set_params(handle_unknown="error")


# ----------------------------------------------------------------- memory traces
@examples(40)
@given(max_steps=st.one_of(_HOSTILE, st.integers(0, 2**80)))
def test_trace_lengths_are_positive_counts(max_steps):
    model = fitted("stack")
    X = ["ab", "b"]
    count = isinstance(max_steps, numbers.Integral) and not isinstance(max_steps, bool | np.bool_)
    if not (count and max_steps >= 1):
        refused(lambda: model.memory_trace(X, max_steps=max_steps))
        return

    def check(traces):
        assert len(traces) == len(X) and all(isinstance(t, dict) for t in traces)

    either(lambda: model.memory_trace(X, max_steps=max_steps), check)


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.memory_trace(["ab" * 2500]),
        lambda m: m.memory_trace(["abc"]),
        lambda m: NeuralStackTransducer().memory_trace(["ab"]),
        lambda m: fitted("memoryless").memory_trace(["ab"]),
    ],
    ids=["longer than max_steps", "unknown tokens", "unfitted", "no memory"],
)
def test_traces_that_cannot_be_made_are_refused(call):
    refused(lambda: call(fitted("stack")))


@pytest.mark.parametrize("kind", ["queue", "deque"])
def test_every_memory_traces_its_operations(kind):
    traces = fitted(kind).memory_trace(["ab", "", "b"])
    assert [t["source"] for t in traces] == [["a", "b"], [], ["b"]]
    assert all(t["push"].shape[0] == t["pop"].shape[0] for t in traces)


# --------------------------------------------------------------------- tokenizer
@examples(150)
@given(
    split=st.one_of(
        st.text(max_size=4),
        st.sampled_from(["chars", "([", "\\", "char", "whitespace", "(a)", "a|", "(?=a)"]),
        st.none(),
        st.integers(),
        st.binary(max_size=2),
        st.builds(re.compile, st.sampled_from([r"\s+", "(a)", "a|", "(?=a)", "", "-"])),
    ),
    lowercase=st.one_of(st.booleans(), st.sampled_from(["yes", 1, None])),
    texts=st.lists(st.text(max_size=8), max_size=4),
)
def test_the_tokenizer_splits_texts_or_refuses_its_options(split, lowercase, texts):
    tokenizer = TextTokenizer(split=split, lowercase=lowercase)
    valid_split = split in ("char", "whitespace") or isinstance(split, re.Pattern)
    if not (valid_split and isinstance(lowercase, bool)):
        refused(lambda: tokenizer.fit_transform(texts))
        return

    def check(out):
        assert len(out) == len(texts)
        assert all(isinstance(t, tuple) and all(isinstance(s, str) for s in t) for t in out)
        if split == "char":
            expected = [text.lower() if lowercase else text for text in texts]
            assert ["".join(t) for t in out] == expected

    either(lambda: tokenizer.fit_transform(texts), check)


@pytest.mark.parametrize(
    "X",
    ["the cat", [None], [b"a b"], [1], None, (text for text in ["a b"])],
    ids=["a str", "[None]", "[bytes]", "[1]", "None", "generator"],
)
def test_the_tokenizer_needs_a_collection_of_texts(X):
    refused(lambda: TextTokenizer().fit_transform(X))


def test_the_tokenizer_reads_arrays_of_texts():
    out = TextTokenizer().fit_transform(np.array(["a b", "c"]))
    assert out.tolist() == [("a", "b"), ("c",)]
    assert len(TextTokenizer().fit_transform([])) == 0


def test_a_clear_error_is_judged_by_where_it_is_raised():
    """The judge of clear errors itself: a backend's error is not a clear one."""
    try:
        np.zeros(3).reshape(2, 2)
    except ValueError as exc:
        with pytest.raises(AssertionError, match="raised in"):
            assert_clear(exc)
