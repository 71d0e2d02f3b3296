"""Initialisations trained side by side: a population's members train as they would alone."""

import contextlib

import keras
import numpy as np
import pytest

from skptr import NeuralStackTransducer
from skptr._random import SeedStream
from skptr.memory import _restarts as restarts
from skptr.memory._codec import TransducerCodec
from skptr.memory._curriculum import STALL_EPOCHS, StalledStartWatch
from skptr.memory._population import PopulationAdam, PopulationNetwork
from skptr.memory._restarts import (
    RestartPlan,
    Run,
    resolve_settings,
    train_population,
    train_run,
)


class _Seeds:
    """Hands out given seeds in order, as ``SeedStream.next`` would."""

    def __init__(self, seeds):
        self._seeds = list(seeds)

    def next(self):
        return self._seeds.pop(0)


def _reversal(n_samples, seed):
    rng = np.random.default_rng(seed)
    alphabet = np.array(list("abcd"))
    sources = ["".join(rng.choice(alphabet, rng.integers(2, 9))) for _ in range(n_samples)]
    return sources, [s[::-1] for s in sources]


def _prepared(**params):
    params = {"epochs": 2, **params}
    estimator = NeuralStackTransducer(
        hidden_size=8,
        embedding_dim=4,
        memory_width=4,
        batch_size=16,
        curriculum=False,
        gate_noise=1.0,
        random_state=0,
        **params,
    )
    sources, targets = _reversal(64, seed=3)
    data = estimator._prepare_training_data(sources, targets, reset=True)
    return estimator, data


def _full_float32_matmuls():
    """On JAX, float32 matrix products in full precision (a GPU's default rounds their
    inputs to TensorFloat-32, whose rounding differs between one member's product
    and the population's batched one)."""
    if keras.backend.backend() != "jax":
        return contextlib.nullcontext()
    import jax

    return jax.default_matmul_precision("highest")


@pytest.mark.parametrize(("memory", "cell"), [("stack", "lstm"), ("deque", "gru")])
def test_member_equals_the_same_initialisation_trained_alone(memory, cell):
    # Three members that differ in seed, truncation (and so cell-state reset) and noise
    # start: each ends where its network trained alone on the same batches ends.
    with _full_float32_matmuls():
        _check_members_against_runs_alone(memory, cell)


def _check_members_against_runs_alone(memory, cell, epochs=2, stalled=()):
    estimator, data = _prepared(memory=memory, cell=cell, epochs=epochs)
    runs = [Run(11, 0, 0.0), Run(22, None, 0.5), Run(33, 2, 1.0)]
    population = train_population(estimator, data, runs)
    first = SeedStream(runs[0].seed)
    first.next()
    split_seed, batches_seed = first.next(), first.next()
    for k, (run, (member, watch)) in enumerate(zip(runs, population.members, strict=True)):
        if k in stalled:
            assert watch.stalled and member.n_iter_ == STALL_EPOCHS
            continue
        population.load(k)
        seeds = _Seeds([SeedStream(run.seed).next(), split_seed, batches_seed])
        alone = train_run(estimator, data, run, seeds)
        assert member.network_.controller.state_bptt_steps == run.state_bptt_steps
        np.testing.assert_allclose(
            member.history_["loss"], alone.history_["loss"], rtol=1e-4, atol=1e-6
        )
        assert len(member.network_.weights) == len(alone.network_.weights)
        for mine, theirs in zip(member.network_.weights, alone.network_.weights, strict=True):
            np.testing.assert_allclose(
                keras.ops.convert_to_numpy(mine),
                keras.ops.convert_to_numpy(theirs),
                rtol=1e-3,
                atol=1e-5,
                err_msg=f"{theirs.path} of the run with seed {run.seed}",
            )
        assert not watch.stalled
        assert member.n_iter_ == epochs
    return population


class _SecondMemberStalls(StalledStartWatch):
    """A stall check that finds the second member of a population stalled, and no other."""

    def on_epoch_end(self, epoch, logs=None):
        if epoch == STALL_EPOCHS - 1:
            self.best_loss = float(logs[self.key])
            self.stalled = self.key == "member_1_loss"


def test_members_go_on_without_one_that_stalled(monkeypatch):
    # After the stall check the second member is dropped; the two others go on as a
    # population of two, with their weights, noise-seed states and Adam moments, and
    # still end where each one trained alone ends.
    monkeypatch.setattr(restarts, "StalledStartWatch", _SecondMemberStalls)
    with _full_float32_matmuls():
        population = _check_members_against_runs_alone(
            "stack", "lstm", epochs=STALL_EPOCHS + 2, stalled=(1,)
        )
    sizes = [population.sources[k][0].population for k in range(3)]
    assert sizes == [2, 3, 2]
    assert [population.sources[k][1] for k in range(3)] == [0, 1, 1]


def test_held_out_scores_of_a_population_are_those_of_each_member_alone(monkeypatch):
    # The members that did not stall are scored by their population, all at once; each
    # gets the scores its own network gets (with rounded and soft strengths), and the
    # member dropped as stalled gets none.
    monkeypatch.setattr(restarts, "StalledStartWatch", _SecondMemberStalls)
    estimator, data = _prepared(memory="stack", cell="lstm", epochs=STALL_EPOCHS + 2)
    runs = [Run(11, 0, 0.0), Run(22, None, 0.5), Run(33, 2, 1.0)]
    settings = resolve_settings(estimator.get_params())
    judge = restarts.HeldOutJudge(TransducerCodec.of(estimator), data, settings)
    with _full_float32_matmuls():
        population = train_population(estimator, data, runs)
        together = population.held_out_scores(judge)
        assert sorted(together) == [0, 2]
        for k in (0, 2):
            population.load(k)
            candidate = population.members[k][0]
            (rounded,) = judge._scores(candidate, True)
            (soft,) = judge._scores(candidate, False)
            assert together[k][0] == rounded
            assert together[k][1] == soft or (rounded == 1.0 and np.isnan(together[k][1]))
            outcome = judge.assess(restarts.Outcome(runs[k], candidate, False, np.inf))
            assert outcome.rounded == rounded
    assert 0 < sum(score for scores in together.values() for score in scores)


def test_population_clips_each_member_gradient_on_its_own():
    # Member 0's gradient has norm 5 (3-4-0): clipped to norm 1; member 1's has norm
    # 0.5: left as it is. One clipping over the whole variable would scale both.
    optimizer = PopulationAdam(learning_rate=0.1, clipnorm=1.0)
    grads = [keras.ops.convert_to_tensor(np.array([[3.0, 4.0, 0.0], [0.3, 0.4, 0.0]]))]
    (clipped,) = optimizer._clip_gradients(grads)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(clipped), [[0.6, 0.8, 0.0], [0.3, 0.4, 0.0]], rtol=1e-6
    )


def test_plan_groups_runs_that_share_a_noise_start():
    params = NeuralStackTransducer(memory="stack", n_init=3).get_params()
    settings = resolve_settings(params)
    assert settings.noise_starts == (0.6,) * 3 + (0.0,) * 3
    first_group = RestartPlan(settings, SeedStream(5)).next_runs(True)
    # Truncations alternate from the start, as after a stalled run.
    assert [run.state_bptt_steps for run in first_group] == [0, None, 0]
    assert {run.gate_noise_start for run in first_group} == {0.6}


def test_plan_seeds_match_runs_one_after_another():
    settings = resolve_settings(NeuralStackTransducer(memory="stack", n_init=3).get_params())
    together = RestartPlan(settings, SeedStream(5)).next_runs(True)
    stream = SeedStream(5)
    assert [run.seed for run in together] == [stream.next() for _ in range(3)]


def test_plan_moves_to_the_next_noise_start_once_a_group_is_recorded():
    from skptr.memory._restarts import Outcome

    settings = resolve_settings(NeuralStackTransducer(memory="stack", n_init=2).get_params())
    plan = RestartPlan(settings, SeedStream(0))
    for run in plan.next_runs(True):
        plan.record(Outcome(run, None, stalled=False, early_loss=1.0, rounded=0.5, score=0.5))
    second = plan.next_runs(True)
    assert [run.gate_noise_start for run in second] == [0.0, 0.0]
    assert len(second) == 2
    for run in second:
        plan.record(Outcome(run, None, stalled=False, early_loss=1.0, rounded=0.7, score=0.7))
    assert plan.done
    assert plan.next_runs(True) == []
    assert plan.kept.score == 0.7


def test_runs_are_trained_one_after_another_unless_asked():
    params = NeuralStackTransducer().get_params()
    assert resolve_settings(params).population is False
    assert resolve_settings({**params, "population": True}).population is True


def test_population_with_early_stopping_is_refused_and_leaves_the_estimator_as_it_was():
    sources, targets = _reversal(40, seed=1)
    estimator = NeuralStackTransducer(population=True, early_stopping=True, n_init=2)
    before = dict(estimator.__dict__)
    with pytest.raises(ValueError, match=r"population=True.*early_stopping"):
        estimator.fit(sources, targets)
    assert estimator.__dict__ == before


def test_fit_with_a_population_predicts_and_round_trips(tmp_path):
    sources, targets = _reversal(80, seed=2)
    estimator = NeuralStackTransducer(
        hidden_size=8,
        embedding_dim=4,
        memory_width=4,
        epochs=2,
        n_init=2,
        gate_noise_start=0.5,
        population=True,
        random_state=0,
    ).fit(sources, targets)
    assert estimator.init_scores_.shape == (2,)
    assert estimator.network_.controller.state_bptt_steps in (0, None)
    predictions = estimator.predict(sources[:10])
    path = tmp_path / "population.skptr"
    estimator.save(path)
    from skptr import load

    restored = load(path)
    assert [list(p) for p in restored.predict(sources[:10])] == [list(p) for p in predictions]
    # A warm start goes on training the kept network.
    estimator.set_params(warm_start=True, epochs=1).fit(sources, targets)
    assert len(estimator.history_["loss"]) == 3


@pytest.mark.parametrize(("memory", "cell"), [("stack", "lstm"), ("deque", "gru")])
@pytest.mark.parametrize(("snap", "discrete"), [(False, False), (True, False), (True, True)])
def test_population_decodes_as_each_member_alone(memory, cell, snap, discrete):
    # Members of both cell-state resets (truncation 0 and None), each with its own
    # embeddings, controller and read-out, decode one batch of sources as their own
    # networks do, with soft and rounded strengths, over the continuous memory and the
    # discrete one.
    estimator, _ = _prepared(memory=memory, cell=cell)
    networks = []
    for seed, steps in [(11, 0), (22, None), (33, 2)]:
        candidate = restarts._candidate(estimator, Run(seed, steps, 0.0))
        candidate._record_network_params()
        networks.append(candidate._new_network(SeedStream(seed).next()))
    for k, network in enumerate(networks):  # outputs that follow the inputs
        weights = network.get_weights()
        shift = np.random.default_rng(k)
        network.set_weights([w + shift.normal(0, 0.5, w.shape) for w in weights])
        network.readout.kernel.assign(5.0 * np.asarray(network.readout.kernel))
        bias = np.zeros(network.readout.bias.shape)
        bias[0] = -1e4 if k < 2 else 0.0  # the first two never end: every step runs
        network.readout.bias.assign(bias)
    population = PopulationNetwork(networks)
    rng = np.random.default_rng(5)
    source = rng.integers(3, 7, size=(5, 12)).astype("int32")
    source[:2, :4] = 0  # left padding
    with _full_float32_matmuls():
        together = np.asarray(population.decode(source, 15, snap=snap, discrete=discrete))
        alone = [np.asarray(n.decode(source, 15, snap=snap, discrete=discrete)) for n in networks]
    assert together.shape == (3, 5, 15)
    # Outputs that differ between members and between rows, so that a mix-up shows.
    assert len({a.tobytes() for a in alone}) > 1
    assert any(len({row.tobytes() for row in a}) > 1 for a in alone)
    np.testing.assert_array_equal(together, np.stack(alone))
