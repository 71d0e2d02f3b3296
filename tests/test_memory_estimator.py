"""Tests of NeuralStackTransducer: the scikit-learn contract, inputs, persistence, learning."""

import pickle
from dataclasses import dataclass

import joblib
import keras
import numpy as np
import pytest
from _files import set_network_params, tampered
from _marks import once, once_on_jax, process_fixture
from sklearn.base import clone

import skptr
from skptr.datasets import make_transduction
from skptr.memory import NeuralStackTransducer
from skptr.memory._memories import push_biases
from skptr.memory._search import network_settings, resolve_settings
from skptr.metrics import coarse_accuracy, fine_accuracy

SMALL = {"hidden_size": 16, "memory_width": 8, "embedding_dim": 8, "epochs": 2, "n_init": 1}
# One batch per epoch of this module's data (at most 120 samples), for fits whose subject
# is not what the network learns: short fits skip tracing on TensorFlow.
ONE_BATCH = {**SMALL, "batch_size": 128}


@process_fixture
def reversal_data():
    return make_transduction(
        "reversal", n_samples=120, min_length=1, max_length=5, vocab_size=3, random_state=0
    )


@process_fixture
def fitted(reversal_data):
    X, y = reversal_data
    return NeuralStackTransducer(random_state=0, **SMALL).fit(X, y)


def test_fit_predict_contract(fitted, reversal_data):
    X, _ = reversal_data
    assert list(fitted.input_vocabulary_) == ["a", "b", "c"]
    assert list(fitted.output_vocabulary_) == ["a", "b", "c"]
    predictions = fitted.predict(X[:7])
    assert predictions.shape == (7,) and predictions.dtype == object
    assert all(isinstance(p, str) for p in predictions)
    assert set("".join(predictions)) <= {"a", "b", "c"}
    assert len(fitted.history_["loss"]) == 2 == fitted.n_iter_
    assert 0.0 <= fitted.score(X[:20], X[:20]) <= 1.0


def test_unfitted_and_params():
    est = NeuralStackTransducer(memory="queue", hidden_size=8)
    assert clone(est).get_params() == est.get_params()
    with pytest.raises(Exception, match="not fitted"):
        est.predict(["ab"])
    with pytest.raises(ValueError, match="memory"):
        NeuralStackTransducer(memory="heap").fit(["ab"], ["ba"])


def _settings(**params):
    return resolve_settings(NeuralStackTransducer(**params).get_params(), n_samples=100)


def _built_with(bptt_steps, **params):
    return network_settings(NeuralStackTransducer(**params).get_params(), bptt_steps)


def test_auto_defaults_depend_on_the_memory():
    assert _settings(memory="stack").first_bptt_steps == 0
    assert _settings(memory=None).first_bptt_steps is None
    assert NeuralStackTransducer().gate_noise == 1.0
    for memory in ("stack", "queue", "deque"):
        assert _built_with(0, memory=memory)["gate_noise"] == 1.0
    assert _settings(memory="deque").push_bias == (0.0, -1.5)
    assert _settings(memory="queue").push_bias == 0.0
    assert _built_with(0, memory="stack")["reset_cell_state"]
    for bptt_steps in (None, 3):
        assert not _built_with(bptt_steps, memory="stack")["reset_cell_state"]
    assert not _built_with(0, cell="gru")["reset_cell_state"]
    assert _built_with(None, reset_cell_state=True)["reset_cell_state"]
    # Once one has stalled, "auto" alternates between truncated and full backpropagation.
    stack = _settings(memory="stack")
    assert stack.bptt_steps_after(0, any_stalled=True) is None
    assert stack.bptt_steps_after(None, any_stalled=True) == 0
    assert stack.bptt_steps_after(0, any_stalled=False) == 0
    assert _settings(memory=None).bptt_steps_after(None, any_stalled=True) is None
    assert _settings(state_bptt_steps=0).bptt_steps_after(0, any_stalled=True) == 0
    assert _built_with(0, memory="stack", gate_noise=0.5)["gate_noise"] == 0.5
    assert _settings(snap_gates="auto").may_soften and _settings(snap_gates="auto").snap
    assert not _settings(snap_gates=True).may_soften
    assert not _settings(snap_gates=False).snap
    for bad in (-1.0, "auto"):  # "auto" was 1.0, the default now
        with pytest.raises(ValueError, match="gate_noise"):
            NeuralStackTransducer(gate_noise=bad).fit(["ab"], ["ba"])
    # Samples held out to compare initialisations: a tenth, none with one initialisation.
    assert _settings(n_init=2).n_held_out == 10 and _settings(n_init=1).n_held_out == 0
    assert resolve_settings(NeuralStackTransducer().get_params(), n_samples=9).n_held_out == 0


@pytest.mark.parametrize(
    ("y", "kind"),
    [
        ([("x", "y"), ("y",), ("x", "x", "y")], tuple),
        ([["x", "y"], ["y"], ["x", "x", "y"]], list),
        ([np.array([1, 2]), np.array([2]), np.array([1, 1, 2])], np.ndarray),
    ],
)
def test_predictions_have_the_kind_of_the_targets(y, kind):
    X = [(0, 1), (1,), [0, 0, 1]]
    est = NeuralStackTransducer(random_state=0, **SMALL).fit(X, y)
    predictions = est.predict([(1, 0), np.array([0])])
    assert all(isinstance(p, kind) for p in predictions)
    if kind is np.ndarray:
        assert all(p.dtype == np.array([1]).dtype for p in predictions)


def test_bad_inputs_name_the_sample(fitted):
    with pytest.raises(ValueError, match=r"X\[1\].*'z'"):
        fitted.predict(["ab", "az"])
    with pytest.raises(ValueError, match=r"X\[0\].*unhashable"):
        fitted.predict([["a", ["b"]]])
    with pytest.raises(ValueError, match=r"X\[2\] is None"):
        fitted.predict(["a", "b", None])
    with pytest.raises(ValueError, match=r"X\[0\].*1-D"):
        fitted.predict([np.zeros((2, 2))])
    with pytest.raises(TypeError, match="single str"):
        fitted.predict("abc")
    with pytest.raises(ValueError, match="different numbers of samples"):
        NeuralStackTransducer(**SMALL).fit(["ab", "ba"], ["ba"])
    with pytest.raises(ValueError, match=r"y\[1\].*NaN"):
        NeuralStackTransducer(**SMALL).fit([[1], [2]], [[1], [float("nan")]])


def _with_params(fitted, **params):
    """``fitted``'s network and vocabularies under other inference-time parameters."""
    est = clone(fitted).set_params(**params)
    est.__dict__.update({k: v for k, v in fitted.__dict__.items() if k.endswith("_")})
    est._target_kind, est._target_dtype = fitted._target_kind, fitted._target_dtype
    est._max_target_ratio = fitted._max_target_ratio
    return est


def test_handle_unknown_ignore(fitted):
    # handle_unknown applies when inputs are encoded for inference: no fit of its own.
    with pytest.raises(ValueError, match="'z'"):
        fitted.predict(["azq"])
    assert _with_params(fitted, handle_unknown="ignore").predict(["azq"]).shape == (1,)


def test_max_output_length(fitted):
    est = _with_params(fitted, max_output_length=2)
    assert all(len(p) <= 2 for p in est.predict(["abcabc", "a"]))


def test_predicts_much_longer_inputs(fitted):
    long_input = "abc" * 40
    (prediction,) = fitted.predict([long_input])
    assert isinstance(prediction, str)


def test_same_random_state_same_model(fitted, reversal_data):
    X, y = reversal_data
    first = fitted
    second = NeuralStackTransducer(random_state=0, **SMALL).fit(X, y)
    assert first.history_["loss"] == second.history_["loss"]
    for a, b in zip(first.network_.get_weights(), second.network_.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(first.predict(X[:30]), second.predict(X[:30]))


def test_pickle_joblib_and_save_round_trips(fitted, reversal_data, tmp_path):
    import skptr

    X, _ = reversal_data
    expected = fitted.predict(X[:40])
    restored = [pickle.loads(pickle.dumps(fitted))]
    joblib.dump(fitted, tmp_path / "est.joblib")
    restored.append(joblib.load(tmp_path / "est.joblib"))
    fitted.save(tmp_path / "est.skptr")
    restored.append(skptr.load(tmp_path / "est.skptr"))
    for other in restored:
        np.testing.assert_array_equal(other.predict(X[:40]), expected)


@pytest.mark.parametrize("population", [False, True])
def test_files_and_pickles_from_before_load(fitted, reversal_data, tmp_path, population):
    # population only changed how the initialisations were trained: the network a
    # fit kept with it is an ordinary one, so the key is dropped when read; and
    # gate_noise="auto" always stood for 1.0.
    X, _ = reversal_data
    expected = fitted.predict(X[:20])
    before = {"population": population, "gate_noise": "auto"}
    fitted.save(tmp_path / "now.skptr")

    def as_before(metadata):
        metadata["params"].update(before)
        set_network_params(gate_noise="auto")(metadata)

    old = tampered(tmp_path / "now.skptr", tmp_path / "before.skptr", change=as_before)
    state = fitted.__getstate__()
    state = {**state, **before, "network_params_": {**state["network_params_"], **before}}
    state["network_params_"].pop("population")
    unpickled = object.__new__(NeuralStackTransducer)
    unpickled.__setstate__(state)
    for loaded in (skptr.load(old), unpickled):
        assert "population" not in loaded.get_params() and "population" not in vars(loaded)
        assert loaded.gate_noise == loaded.network_params_["gate_noise"] == 1.0
        np.testing.assert_array_equal(loaded.predict(X[:20]), expected)


def test_queue_with_gate_noise_round_trips(tmp_path):
    import skptr

    X, y = make_transduction(
        "copy", n_samples=60, min_length=1, max_length=4, vocab_size=2, random_state=0
    )
    est = NeuralStackTransducer(memory="queue", random_state=0, **ONE_BATCH).fit(X, y)
    assert est.network_.controller.gate_noise == 1.0
    expected = est.predict(X[:20])
    np.testing.assert_array_equal(est.predict(X[:20]), expected)  # no noise in predict
    est.save(tmp_path / "queue.skptr")
    for other in (pickle.loads(pickle.dumps(est)), skptr.load(tmp_path / "queue.skptr")):
        np.testing.assert_array_equal(other.predict(X[:20]), expected)


def test_memory_trace(fitted):
    traces = fitted.memory_trace(["abc", "a"])
    for trace, source in zip(traces, ["abc", "a"], strict=True):
        n_steps = len(source) + len(trace["output"]) + 1
        assert trace["source"] == list(source)
        assert trace["push"].shape == trace["pop"].shape == (n_steps, 1)
        assert trace["strengths"].shape == (n_steps, n_steps)
        assert trace["read"].shape == (n_steps, fitted.memory_width)
        assert np.all((trace["push"] >= 0) & (trace["push"] <= 1))
        # Slot t is written at step t: nothing above the diagonal.
        assert np.all(np.triu(trace["strengths"], k=1) == 0)
    assert "".join(traces[0]["output"]) == fitted.predict(["abc"])[0]


def test_memory_trace_deque_and_baseline(reversal_data):
    X, y = reversal_data
    deque = NeuralStackTransducer(memory="deque", random_state=0, **ONE_BATCH).fit(X, y)
    (trace,) = deque.memory_trace(["ab"])
    n_steps = 2 + len(trace["output"]) + 1
    assert trace["push"].shape == (n_steps, 2)
    assert trace["strengths"].shape == (n_steps, 2 * n_steps)
    baseline = NeuralStackTransducer(memory=None, random_state=0, **ONE_BATCH).fit(X, y)
    assert baseline.predict(["ab"]).shape == (1,)
    with pytest.raises(ValueError, match="no memory"):
        baseline.memory_trace(["ab"])


def test_warm_start_keeps_training(reversal_data):
    X, y = reversal_data
    est = NeuralStackTransducer(warm_start=True, random_state=0, **ONE_BATCH).fit(X, y)
    est.fit(X, y)
    assert est.n_iter_ == 4
    with pytest.raises(ValueError, match=r"y\[0\].*'q'"):
        est.fit(["ab"], ["q"])


@dataclass
class _Trained:
    """A run trained by the search: the state its network reached, and its truncation."""

    state: object
    state_bptt_steps: int | None

    @property
    def weights(self):
        return self.state.values[: len(self.state.network.weights)]

    def kept_by(self, estimator):
        """Whether ``estimator`` holds this run's network in this run's state."""
        network = estimator.network_
        return network is self.state.network and all(
            np.array_equal(keras.ops.convert_to_numpy(variable), value)
            for variable, value in zip(self.state.variables, self.state.values, strict=True)
        )


def _scripted_selection(monkeypatch, scores, **params):
    """Fit with the held-out fine accuracy replaced by ``scores`` (one per decoding compared);
    return the estimator and the runs trained, in order."""
    from skptr.memory import _search

    scripted = iter(scores)
    monkeypatch.setattr(_search, "_checked_fine_accuracy", lambda y_true, y_pred: next(scripted))
    trained = []
    train = _search.Trainer.train

    def recording_train(trainer, *args, **kwargs):
        history, state = train(trainer, *args, **kwargs)
        trained.append(_Trained(state, trainer.network.state_bptt_steps))
        return history, state

    monkeypatch.setattr(_search.Trainer, "train", recording_train)
    X, y = make_transduction(
        "reversal", n_samples=40, min_length=1, max_length=4, vocab_size=2, random_state=0
    )
    # One noise start unless a test asks for "auto", whose extra initialisations would
    # need more scripted scores.
    params = {**ONE_BATCH, "epochs": 1, "gate_noise_start": 0.6, **params}
    est = NeuralStackTransducer(random_state=0, **params).fit(X, y)
    return est, trained


def test_n_init_keeps_the_best_initialisation_and_its_decoding(monkeypatch):
    # Per initialisation: held-out score with rounded strengths, then with soft ones.
    est, trained = _scripted_selection(monkeypatch, [0.2, 0.3, 0.7, 0.6, 0.5, 0.5], n_init=3)
    np.testing.assert_allclose(est.init_scores_, [0.2, 0.7, 0.5])
    assert trained[1].kept_by(est) and est.snap_gates_ is True
    assert len(trained) == 3


def test_n_init_stops_at_the_first_exact_initialisation(monkeypatch):
    est, trained = _scripted_selection(monkeypatch, [0.4, 0.9, 1.0], n_init=5)
    np.testing.assert_allclose(est.init_scores_, [0.4, 1.0])
    assert trained[1].kept_by(est) and est.snap_gates_ is True


def test_soft_strengths_when_no_initialisation_is_exact_rounded(monkeypatch, tmp_path):
    est, trained = _scripted_selection(monkeypatch, [0.4, 0.9, 0.5, 0.6], n_init=2)
    np.testing.assert_allclose(est.init_scores_, [0.4, 0.5])
    assert trained[0].kept_by(est) and est.snap_gates_ is False
    est.save(tmp_path / "selected.skptr")
    for loaded in (skptr.load(tmp_path / "selected.skptr"), pickle.loads(pickle.dumps(est))):
        np.testing.assert_array_equal(loaded.init_scores_, est.init_scores_)
        assert loaded.snap_gates_ is False
        np.testing.assert_array_equal(loaded.predict(["abba", "b"]), est.predict(["abba", "b"]))


def test_n_init_with_fixed_snapping_scores_one_decoding(monkeypatch):
    scores = [0.6, 0.1, 0.6, 0.2, 0.3]
    est, trained = _scripted_selection(monkeypatch, scores, n_init=5, snap_gates=False)
    np.testing.assert_allclose(est.init_scores_, scores)
    assert trained[0].kept_by(est) and est.snap_gates_ is False  # ties keep the first


def _scripted_stalls(monkeypatch, stalls):
    """Make the i-th initialisation's stall watch report ``stalls[i]`` = (stalled,
    lowest early loss) without stopping its training."""
    from skptr.memory import _search

    scripted = iter(stalls)

    class ScriptedWatch(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.stalled, self.best_loss = next(scripted)

    monkeypatch.setattr(_search, "StalledStartWatch", ScriptedWatch)


def test_stalled_start_watch_stops_runs_that_have_not_learned_in_their_first_epochs():
    from skptr.memory._curriculum import (
        LOSS_TO_ADVANCE,
        STALL_EPOCHS,
        STALLED_SHARE,
        StalledStartWatch,
    )

    class Model:
        stop_training = False

    def run(losses):
        watch = StalledStartWatch()
        watch.set_model(Model())
        for epoch, loss in enumerate(losses):
            watch.on_epoch_end(epoch, {"loss": loss})
            if watch.model.stop_training:
                break
        return watch, epoch

    assert STALL_EPOCHS == 6
    watch, stopped_after = run([2.1, 1.9, 1.5, 1.7, 1.6, 1.4, 1.3, 1.2])
    assert watch.stalled and stopped_after == STALL_EPOCHS - 1 and watch.best_loss == 1.4
    watch, stopped_after = run([2.1, 0.8, 0.04, 0.3, 0.2, 0.2, 0.2, 0.2])
    assert not watch.stalled and stopped_after == 7 and watch.best_loss == 0.04
    # A run that learns in its fifth epoch, after a plateau: below half of 2.1.
    watch, stopped_after = run([2.1, 2.0, 1.95, 1.4, 0.02, 0.01, 0.01])
    assert not watch.stalled and stopped_after == 6
    watch, _ = run([2.0, 1.9, 1.5, 1.2, 1.1, 1.0])  # exactly half
    assert watch.stalled
    watch, _ = run([0.08, 0.07, 0.06, 0.06, 0.06, LOSS_TO_ADVANCE])
    assert watch.stalled and STALLED_SHARE * 0.08 < LOSS_TO_ADVANCE


def test_stalled_initialisations_are_abandoned_unscored(monkeypatch):
    _scripted_stalls(monkeypatch, [(True, 1.7), (False, 0.01), (True, 1.6), (False, 0.02)])
    # Only initialisations 1 and 3 are decoded: rounded strengths, then soft ones.
    est, trained = _scripted_selection(monkeypatch, [0.6, 0.5, 0.8, 0.1], n_init=4)
    np.testing.assert_allclose(est.init_scores_, [np.nan, 0.6, np.nan, 0.8])
    assert trained[3].kept_by(est) and est.snap_gates_ is True
    # After the first stall, the initialisations alternate between full and truncated
    # backpropagation through the controller's state, stalled or not; the cell state
    # is reset only with truncation.
    assert [run.state_bptt_steps for run in trained] == [0, None, 0, None]
    resets = [run.state.network.reset_cell_state for run in trained]
    assert resets == [True, False, True, False]
    assert est.state_bptt_steps_ is None


def test_truncation_is_kept_until_the_first_stall(monkeypatch):
    _scripted_stalls(monkeypatch, [(False, 0.3), (True, 1.7), (False, 0.01), (False, 0.02)])
    scores = [0.5, 0.4, 0.6, 0.5, 0.7, 0.6]  # rounded, then soft, for 0, 2 and 3
    est, trained = _scripted_selection(monkeypatch, scores, n_init=4)
    np.testing.assert_allclose(est.init_scores_, [0.5, np.nan, 0.6, 0.7])
    assert [run.state_bptt_steps for run in trained] == [0, 0, None, 0]
    assert trained[3].kept_by(est) and est.state_bptt_steps_ == 0


def test_a_fixed_truncation_is_kept_after_stalls(monkeypatch):
    _scripted_stalls(monkeypatch, [(True, 1.7), (False, 0.01)])
    est, trained = _scripted_selection(monkeypatch, [1.0], n_init=2, state_bptt_steps=2)
    assert [run.state_bptt_steps for run in trained] == [2, 2]
    assert est.state_bptt_steps_ == 2


def test_when_every_initialisation_stalls_the_least_stalled_is_trained_again(
    monkeypatch, tmp_path
):
    _scripted_stalls(monkeypatch, [(True, 1.7), (True, 1.2), (True, 1.5)])
    est, trained = _scripted_selection(monkeypatch, [0.3, 0.4], n_init=3)
    assert len(trained) == 4 and trained[3].kept_by(est)
    assert [run.state_bptt_steps for run in trained] == [0, None, 0, None]
    assert est.state_bptt_steps_ is None
    np.testing.assert_allclose(est.init_scores_, [np.nan] * 3)
    assert est.snap_gates_ is False  # soft strengths scored 0.4 against 0.3 rounded
    # The same seed as initialisation 1, the least stalled: the same weights.
    for retrained, stalled in zip(trained[3].weights, trained[1].weights, strict=True):
        np.testing.assert_array_equal(retrained, stalled)
    assert not np.array_equal(trained[3].weights[0], trained[0].weights[0])
    est.save(tmp_path / "stalled.skptr")
    loaded = skptr.load(tmp_path / "stalled.skptr")
    np.testing.assert_array_equal(loaded.init_scores_, [np.nan] * 3)
    assert loaded.state_bptt_steps_ is None and loaded.network_.state_bptt_steps is None


def test_auto_noise_start_tries_early_noise_when_no_late_initialisation_is_exact(
    monkeypatch, tmp_path
):
    _scripted_stalls(monkeypatch, [(False, 0.3)] * 6)
    recorder = _NoiseScales()
    scores = [0.5, 0.5, 0.4, 0.4, 0.3, 0.3, 0.7, 0.7, 0.6, 0.6, 0.2, 0.2]  # rounded, soft
    params = {"n_init": 3, "epochs": 3, "gate_noise_start": "auto", "callbacks": [recorder]}
    est, trained = _scripted_selection(monkeypatch, scores, **params)
    # Late noise switches on at epoch ceil(0.6 * 3) = 2, early noise at epoch 0.
    late, early = [0.0, 0.0, 1.0], [1.0] * 3
    assert recorder.scales == 3 * late + 3 * early
    np.testing.assert_allclose(est.init_scores_, [0.5, 0.4, 0.3, 0.7, 0.6, 0.2])
    assert trained[3].kept_by(est) and est.gate_noise_start_ == 0.0
    est.set_params(callbacks=None).save(tmp_path / "early.skptr")
    assert skptr.load(tmp_path / "early.skptr").gate_noise_start_ == 0.0


def test_auto_noise_start_stops_at_an_exact_late_initialisation(monkeypatch):
    _scripted_stalls(monkeypatch, [(False, 0.3)] * 2)
    est, trained = _scripted_selection(
        monkeypatch, [0.5, 0.5, 1.0], n_init=3, gate_noise_start="auto"
    )
    np.testing.assert_allclose(est.init_scores_, [0.5, 1.0])
    assert trained[1].kept_by(est) and est.gate_noise_start_ == 0.6


def test_noise_starts_of_each_setting():
    assert _settings(n_init=2).noise_starts == (0.6, 0.6, 0.0, 0.0)
    # Without a memory there are no gates, and without noise no start: no second round.
    assert _settings(memory=None, n_init=2).noise_starts == (0.6, 0.6)
    assert _settings(gate_noise=0.0, n_init=2).noise_starts == (0.6, 0.6)
    assert _settings(n_init=3, gate_noise_start=0.3).noise_starts == (0.3,) * 3


def test_the_least_stalled_initialisation_is_retrained_with_its_noise_start(monkeypatch):
    _scripted_stalls(monkeypatch, [(True, 1.7), (True, 1.6), (True, 1.5), (True, 1.2)])
    recorder = _NoiseScales()
    params = {"n_init": 2, "epochs": 3, "gate_noise_start": "auto", "callbacks": [recorder]}
    est, trained = _scripted_selection(monkeypatch, [0.3, 0.3], **params)
    assert len(trained) == 5 and est.gate_noise_start_ == 0.0
    assert recorder.scales[-3:] == [1.0] * 3
    assert est.state_bptt_steps_ is None  # initialisation 3's truncation: 0, None, 0, None


@once_on_jax
def test_a_real_stalled_run_stops_after_its_first_epochs():
    from skptr.memory._curriculum import STALL_EPOCHS

    X, y = make_transduction(
        "reversal", n_samples=60, min_length=1, max_length=6, vocab_size=3, random_state=0
    )
    runs = []

    class EpochsPerRun(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            runs.append(0)

        def on_epoch_end(self, epoch, logs=None):
            runs[-1] += 1

    # A learning rate far too small to learn anything: every initialisation stalls.
    params = {**SMALL, "epochs": STALL_EPOCHS + 2, "n_init": 2, "learning_rate": 1e-7}
    params["batch_size"] = 64  # one step per epoch: short fits run eagerly
    est = NeuralStackTransducer(random_state=0, callbacks=[EpochsPerRun()], **params).fit(X, y)
    np.testing.assert_array_equal(est.init_scores_, [np.nan] * 4)
    # All four (two with late gate noise, two with early) stopped after their first
    # epochs; the least stalled was then trained fully.
    assert runs == [STALL_EPOCHS] * 4 + [STALL_EPOCHS + 2]
    assert est.n_iter_ == STALL_EPOCHS + 2


def test_single_initialisation_holds_nothing_out(fitted, reversal_data):
    X, y = reversal_data
    assert fitted.n_init == 1
    assert fitted.init_scores_.shape == (0,) and fitted.snap_gates_ is True
    assert fitted.state_bptt_steps_ == 0
    tiny = NeuralStackTransducer(random_state=0, **{**SMALL, "n_init": 3})
    assert tiny.fit(X[:9], y[:9]).init_scores_.shape == (0,)
    soft = NeuralStackTransducer(random_state=0, snap_gates=False, **ONE_BATCH)
    assert soft.fit(X, y).snap_gates_ is False


class _NoiseScales(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.scales = []

    def on_epoch_end(self, epoch, logs=None):
        self.scales.append(
            float(keras.ops.convert_to_numpy(self.model.controller.gate_noise_scale))
        )


def test_gate_noise_starts_after_its_share_of_the_epochs(reversal_data):
    X, y = reversal_data
    recorder = _NoiseScales()
    params = {**ONE_BATCH, "epochs": 5, "gate_noise_start": 0.5, "callbacks": [recorder]}
    est = NeuralStackTransducer(random_state=0, warm_start=True, **params).fit(X, y)
    assert recorder.scales == [0.0, 0.0, 0.0, 1.0, 1.0]  # from epoch ceil(2.5) = 3
    est.fit(X, y)  # a warm start counts the epochs already trained
    assert recorder.scales[5:] == [1.0] * 5
    # With the noise never switched on, training is that of a noise-free network.
    silent = NeuralStackTransducer(random_state=0, gate_noise_start=1.0, **ONE_BATCH).fit(X, y)
    noise_free = NeuralStackTransducer(random_state=0, gate_noise=0.0, **ONE_BATCH).fit(X, y)
    noisy = NeuralStackTransducer(random_state=0, gate_noise_start=0.0, **ONE_BATCH).fit(X, y)

    def trained(est):  # the weights, without the noise scale
        return [w for w in est.network_.get_weights() if w.shape != ()]

    for a, b in zip(trained(silent), trained(noise_free), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)
    assert any(
        np.abs(a - b).max() > 1e-4 for a, b in zip(trained(silent), trained(noisy), strict=True)
    )


def _strings(rng, task, n_samples, low, high):
    """Plain NumPy draws of {a, b} strings and their transductions."""
    lengths = rng.integers(low, high + 1, size=n_samples)
    X = ["".join(rng.choice(["a", "b"], size=n)) for n in lengths]
    transform = {"reversal": lambda s: s[::-1], "copy": lambda s: s}[task]
    return X, [transform(x) for x in X]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("task", "memory", "seed"),
    [
        pytest.param("reversal", "stack", 7, marks=once_on_jax),
        pytest.param("copy", "queue", 2, marks=once),
        pytest.param("copy", "deque", 1, marks=once_on_jax),
    ],
)
def test_learns_the_algorithm_and_generalises_far(task, memory, seed):
    """Defaults; trained on lengths 1-10, tested up to 6 times as long (one seed per
    memory here; the benchmarks report gives every seed of each task)."""
    rng = np.random.default_rng(2024 + seed)
    X, y = _strings(rng, task, 2000, 1, 10)
    est = NeuralStackTransducer(memory=memory, random_state=seed).fit(X, y)
    X_near, y_near = _strings(rng, task, 100, 11, 20)
    X_far, y_far = _strings(rng, task, 100, 41, 64)
    assert coarse_accuracy(y_near, est.predict(X_near)) >= 0.95
    assert fine_accuracy(y_far, est.predict(X_far)) >= 0.95


@pytest.mark.parametrize(
    ("memory", "push_bias", "expected"),
    [
        ("stack", "auto", [0.0]),
        ("queue", "auto", [0.0]),
        ("deque", "auto", [0.0, -1.5]),
        ("deque", 0.5, [0.5, 0.5]),
        ("stack", -2.0, [-2.0]),
    ],
)
@once
def test_push_bias_initialises_each_end(reversal_data, memory, push_bias, expected):
    X, y = reversal_data
    est = NeuralStackTransducer(
        memory=memory, push_bias=push_bias, epochs=1, batch_size=128, n_init=1, random_state=0
    ).fit(X, y)
    controller = est._build_network(0).controller  # the untrained initialisation
    n_ends = len(expected)
    head_bias = keras.ops.convert_to_numpy(controller.head_bias)
    np.testing.assert_array_equal(head_bias[:n_ends], expected)
    np.testing.assert_array_equal(head_bias[n_ends : 2 * n_ends], [-1.0] * n_ends)
    assert controller.get_config()["push_bias"] == expected


def test_push_bias_per_end_must_match_the_memory():
    assert push_biases(0.5, 2) == (0.5, 0.5)
    assert push_biases([0.0, -1.5], 2) == (0.0, -1.5)
    assert push_biases(1.0, 0) == ()
    with pytest.raises(ValueError, match=r"one value per memory end \(1\), got 2"):
        push_biases([0.0, -1.5], 1)


def test_runs_of_the_search_equal_the_same_runs_trained_alone(monkeypatch):
    from skptr._random import SeedStream
    from skptr.memory import _search

    scores = iter([0.3, 0.9, 0.5])  # the second run is kept
    monkeypatch.setattr(_search, "_checked_fine_accuracy", lambda y_true, y_pred: next(scores))
    train_run = _search.train_run
    runs = []

    def recording_train_run(estimator, trainer, data, run, seeds, settings, *args):
        outcome = train_run(estimator, trainer, data, run, seeds, settings, *args)
        runs.append((estimator, data, run, settings, _Trained(outcome.state, None)))
        return outcome

    monkeypatch.setattr(_search, "train_run", recording_train_run)
    X, y = make_transduction(
        "reversal", n_samples=40, min_length=1, max_length=4, vocab_size=2, random_state=0
    )
    params = {**SMALL, "n_init": 3, "gate_noise_start": 0.0, "snap_gates": True}
    est = NeuralStackTransducer(random_state=0, **params).fit(X, y)
    # The runs share one compiled network, each from its own initialisation: each
    # reaches the state (weights, optimiser, seeds) it reaches on a network of its own.
    assert len(runs) == 3 and len({id(trained.state.network) for *_, trained in runs}) == 1
    for estimator, data, run, settings, trained in runs:
        alone = train_run(estimator, _search.Trainer(), data, run, SeedStream(run.seed), settings)
        assert len(trained.state.values) == len(alone.state.values) > len(trained.weights)
        for recorded, fresh in zip(trained.state.values, alone.state.values, strict=True):
            np.testing.assert_array_equal(recorded, fresh)
    assert runs[1][-1].kept_by(est) and not runs[2][-1].kept_by(est)
    np.testing.assert_allclose(est.init_scores_, [0.3, 0.9, 0.5])
