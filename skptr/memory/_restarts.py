"""The transducer's search over initialisations (``n_init``) and its "auto" settings.

Like scikit-learn's ``KMeans``, :class:`~skptr.memory.NeuralStackTransducer` trains
several initialisations and keeps the best. The pieces:

- :func:`resolve_settings` turns every ``"auto"`` hyperparameter of a fit into a value,
  in this one place, at the start of ``fit``; :func:`network_settings` gives the
  values a network is built with (:meth:`NeuralStackTransducer._build_network`).
- :class:`RestartPlan` says which initialisation to train next (its seed, truncation
  of backpropagation and noise start), takes what each one learned, and decides when
  the search is over and which run is kept.
- :func:`train_run` trains one run, with nothing of the search in it;
  :func:`train_population` trains several side by side, as one population
  (:mod:`~skptr.memory._population`).
- :class:`HeldOutJudge` scores a trained run on the held-out samples (a population's
  members all at once).
- :func:`search_initialisations` ties them together.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import keras
import numpy as np

from .._base import (
    _WEIGHT_COPIES,
    _NetworkSnapshot,
    _reinitialised,
    _StopOnNonFinite,
)
from .._batches import held_out_split
from .._precision import dtype_policy_scope
from .._random import SeedStream
from ..metrics import _checked_fine_accuracy
from ._codec import TransducerCodec
from ._curriculum import STALL_EPOCHS, GateNoiseFrom, StalledStartWatch
from ._population import PopulationAdam, PopulationCrossentropy, PopulationNetwork

__all__ = [
    "AUTO_DEQUE_BOTTOM_PUSH_BIAS",
    "AUTO_GATE_NOISE",
    "AUTO_PUSH_BIAS",
    "EARLY_NOISE_START",
    "LATE_NOISE_START",
    "SELECTION_FRACTION",
    "HeldOutJudge",
    "RestartPlan",
    "Run",
    "Settings",
    "TrainedPopulation",
    "network_settings",
    "resolve_settings",
    "search_initialisations",
    "train_population",
    "train_run",
]

#: ``gate_noise="auto"``: the standard deviation of the training noise on the push and
#: pop logits.
AUTO_GATE_NOISE = 1.0
#: ``gate_noise_start="auto"``: the noise start of the first ``n_init`` initialisations
#: (late, once the task is learned), and of the up to ``n_init`` more tried when none of
#: those is exact (from the first epoch).
LATE_NOISE_START = 0.6
EARLY_NOISE_START = 0.0
#: ``push_bias="auto"``: the initial push bias of every end, except the deque's bottom
#: end, which starts low (a push strength of 0.18).
AUTO_PUSH_BIAS = 0.0
AUTO_DEQUE_BOTTOM_PUSH_BIAS = -1.5
#: With ``n_init > 1``, the share of the training samples held out to compare the
#: initialisations (rounded down: fits of fewer than 10 samples train one).
SELECTION_FRACTION = 0.1


@dataclass(frozen=True)
class Settings:
    """The ``"auto"`` hyperparameters of one fit, resolved.

    Attributes
    ----------
    push_bias : float or tuple of float
        The initial push bias, for every end or one per end.
    gate_noise : float
        Standard deviation of the training noise on the push and pop logits.
    first_bptt_steps : int or None
        Truncation of backpropagation through the state of the first initialisation.
    alternate_bptt_steps : bool
        Whether, once an initialisation has stalled, the following ones alternate
        between full backpropagation and truncation (``state_bptt_steps="auto"`` with
        a memory).
    noise_starts : tuple of float
        The ``gate_noise_start`` of each initialisation that may be tried, in order.
    snap : bool
        Whether held-out scores and ``predict`` round the strengths.
    may_soften : bool
        Whether a run that is not exact with rounded strengths may keep soft ones
        (``snap_gates="auto"``).
    population : bool
        Whether the initialisations that share a noise start are trained side by side,
        as one population.
    """

    push_bias: float | tuple[float, ...]
    gate_noise: float
    first_bptt_steps: int | None
    alternate_bptt_steps: bool
    noise_starts: tuple[float, ...]
    snap: bool
    may_soften: bool
    population: bool = False

    def bptt_steps_after(self, steps, any_stalled):
        """The truncation of the initialisation that follows one trained with ``steps``."""
        if not (any_stalled and self.alternate_bptt_steps):
            return steps
        return None if steps == 0 else 0


def _gate_noise(params):
    return AUTO_GATE_NOISE if params["gate_noise"] == "auto" else float(params["gate_noise"])


def _push_bias(params):
    if params["push_bias"] != "auto":
        return float(params["push_bias"])
    if params["memory"] == "deque":
        return (AUTO_PUSH_BIAS, AUTO_DEQUE_BOTTOM_PUSH_BIAS)
    return AUTO_PUSH_BIAS


def resolve_settings(params):
    """Resolve every ``"auto"`` hyperparameter of a fit.

    Parameters
    ----------
    params : dict
        The estimator's ``get_params()``.

    Returns
    -------
    Settings
    """
    memory = params["memory"]
    steps = params["state_bptt_steps"]
    gate_noise = _gate_noise(params)
    if params["gate_noise_start"] != "auto":
        noise_starts = (float(params["gate_noise_start"]),) * params["n_init"]
    else:
        noise_starts = (LATE_NOISE_START,) * params["n_init"]
        if memory is not None and gate_noise > 0:  # otherwise the start changes nothing
            noise_starts += (EARLY_NOISE_START,) * params["n_init"]
    return Settings(
        push_bias=_push_bias(params),
        gate_noise=gate_noise,
        first_bptt_steps=(None if memory is None else 0) if steps == "auto" else steps,
        alternate_bptt_steps=steps == "auto" and memory is not None,
        noise_starts=noise_starts,
        snap=params["snap_gates"] in (True, "auto"),
        may_soften=params["snap_gates"] == "auto",
        population=_population(params),
    )


def _population(params):
    alone_only = {
        "early_stopping": bool(params["early_stopping"]),
        "validation_fraction > 0": params["validation_fraction"] > 0,
        "devices": params["devices"] is not None,
    }
    if params["population"] and any(alone_only.values()):
        names = ", ".join(name for name, used in alone_only.items() if used)
        raise ValueError(
            f"population=True trains the initialisations side by side, which does not "
            f"combine with {names}; set population=False."
        )
    return bool(params["population"])


def network_settings(params, bptt_steps):
    """The resolved values a network is built with.

    Parameters
    ----------
    params : dict
        The hyperparameters the network is built from (``network_params_``).
    bptt_steps : int or None
        The truncation of backpropagation through the state it is trained with.

    Returns
    -------
    dict
        ``push_bias``, ``gate_noise`` and ``reset_cell_state`` (``"auto"``: true for an
        LSTM whose state gets no gradient from earlier steps, ``bptt_steps == 0``).
    """
    reset = params["reset_cell_state"]
    if reset == "auto":
        reset = params["cell"] == "lstm" and bptt_steps == 0
    return {
        "push_bias": _push_bias(params),
        "gate_noise": _gate_noise(params),
        "reset_cell_state": bool(reset),
    }


@dataclass(frozen=True)
class Run:
    """One initialisation to train: its seed, truncation and noise start."""

    seed: int
    state_bptt_steps: int | None
    gate_noise_start: float


@dataclass
class Outcome:
    """What a trained run came to.

    Attributes
    ----------
    run : Run
        The run.
    candidate : NeuralStackTransducer
        The estimator holding the run's network.
    stalled : bool
        Whether it was abandoned in its first epochs (see ``StalledStartWatch``).
    early_loss : float
        Its lowest loss of those epochs.
    rounded : float
        Held-out score with rounded strengths (NaN when stalled or not scored).
    score, snap : float, bool
        Its best held-out score and the rounding that reaches it.
    """

    run: Run
    candidate: Any
    stalled: bool
    early_loss: float
    rounded: float = np.nan
    score: float = -1.0
    snap: bool = True


class RestartPlan:
    """Which initialisation to train next, and which to keep.

    Initialisations are tried in the order of ``settings.noise_starts``, each with the
    next seed of the fit. The search stops at the first run that predicts every
    held-out sample exactly; otherwise the best held-out score is kept. Runs that
    stall are not scored; if every run stalls, :meth:`next_run` then returns the least
    stalled one (lowest early loss) once more, to be trained in full and kept.

    Parameters
    ----------
    settings : Settings
        The fit's resolved settings.
    seeds : SeedStream
        The fit's seeds; each run takes the next one.

    Attributes
    ----------
    outcomes : list of Outcome
        The runs tried, in order (the least stalled one retrained excluded).
    leader : Outcome or None
        The best scored run so far (ties keep the first), kept unless a later one is
        exact or every run stalls.
    kept : Outcome or None
        The run kept, once the search is over.
    retraining : bool
        Whether the last run given by :meth:`next_run` is the least stalled one,
        trained again in full.
    """

    def __init__(self, settings, seeds):
        self.settings = settings
        self.seeds = seeds
        self.outcomes = []
        self.leader = None
        self.kept = None
        self._steps = settings.first_bptt_steps
        self.retraining = False

    @property
    def done(self):
        """Whether a run has been kept."""
        return self.kept is not None

    def next_run(self):
        """The next run to train, or None once the search is over.

        Returns
        -------
        Run or None
        """
        if self.done:
            return None
        if len(self.outcomes) < len(self.settings.noise_starts):
            noise_start = self.settings.noise_starts[len(self.outcomes)]
            return Run(self.seeds.next(), self._steps, noise_start)
        stalled = [o for o in self.outcomes if o.stalled]
        self.retraining = True
        return min(stalled, key=lambda o: (o.early_loss, o.run.seed)).run

    def next_runs(self, together):
        """The next runs to train: one, or with ``together`` every following run that
        shares its noise start, to be trained side by side (empty once the search is
        over).

        The runs of a group alternate their truncation as runs that follow a stalled
        one would, where the settings alternate it: which run stalls is not known
        before they are trained.

        Parameters
        ----------
        together : bool

        Returns
        -------
        list of Run
        """
        first = self.next_run()
        if first is None:
            return []
        if not together or self.retraining:
            return [first]
        runs = [first]
        starts = self.settings.noise_starts
        steps = first.state_bptt_steps
        for start in starts[len(self.outcomes) + 1 :]:
            if start != first.gate_noise_start:
                break
            steps = self.settings.bptt_steps_after(steps, any_stalled=True)
            runs.append(Run(self.seeds.next(), steps, start))
        return runs

    def record(self, outcome):
        """Take what a run from :meth:`next_run` came to.

        Parameters
        ----------
        outcome : Outcome
        """
        if self.retraining:  # the least stalled run, trained in full
            self.kept = outcome
            return
        self.outcomes.append(outcome)
        any_stalled = any(o.stalled for o in self.outcomes)
        self._steps = self.settings.bptt_steps_after(self._steps, any_stalled)
        if not outcome.stalled and (self.leader is None or outcome.score > self.leader.score):
            self.leader = outcome
        if outcome.rounded == 1.0:
            self.kept = outcome
        elif len(self.outcomes) == len(self.settings.noise_starts):
            self.kept = self.leader

    @property
    def scores(self):
        """Held-out score of each run tried, rounded strengths (NaN: stalled)."""
        return np.array([o.rounded for o in self.outcomes])


def train_run(estimator, data, run, seeds, callbacks=(), reuse=None):
    """Train a new network of ``estimator`` as ``run`` says.

    Parameters
    ----------
    estimator : NeuralStackTransducer
        The estimator being fitted (left unchanged).
    data : TrainingData
        The training samples.
    run : Run
        The truncation and noise start of the run.
    seeds : SeedStream
        Seeds of the network, the validation split and the batches.
    callbacks : sequence of keras.callbacks.Callback, default=()
        Extra callbacks of this run.
    reuse : keras.Model, optional
        A network of an earlier run with the same truncation, whose compiled training
        step the run reuses (see ``_train``).

    Returns
    -------
    NeuralStackTransducer
        A copy of the estimator holding the trained network.
    """
    candidate = _candidate(estimator, run)
    candidate._train(data, False, seeds, callbacks=callbacks, reuse=reuse)
    return candidate


def _candidate(estimator, run):
    """A copy of ``estimator`` set to train ``run``."""
    candidate = estimator._shallow_copy()
    candidate.state_bptt_steps_ = run.state_bptt_steps
    candidate.gate_noise_start_ = run.gate_noise_start
    return candidate


def train_population(estimator, data, runs, compiled=None, holders=None):
    """Train new networks of ``estimator`` for ``runs`` side by side, as one population.

    Each member is built from its run's seed as :func:`train_run` builds it; the
    members read the batches of the first run's seeds, so the first member's training
    is that of :func:`train_run`, and every other member's that of its network trained
    alone on the same batches. The curriculum admits longer sources for every member
    when the best member's loss would let it (see ``CurriculumBatches.advance``).

    Members that stall (see ``StalledStartWatch``) are dropped once the stall check
    has run: the others go on as a smaller population, with their weights, noise-seed
    states and Adam moments, so that their training is the one they would have had in
    the full population, at the cost of their own work only.

    Parameters
    ----------
    estimator : NeuralStackTransducer
        The estimator being fitted (left unchanged).
    data : TrainingData
        The training samples.
    runs : sequence of Run
        The runs, two or more.
    compiled : dict, optional
        Populations trained before, by the truncations of their members; a population
        of the same truncations reuses one's compiled training step (as
        :func:`train_run` reuses a network's), and the populations made here are added.
    holders : dict, optional
        The network object into which the members of each configuration (truncation
        and cell-state reset) are loaded when the search reads them, kept across
        populations; filled in where a configuration has none.

    Returns
    -------
    TrainedPopulation
        The trained members.
    """
    compiled = {} if compiled is None else compiled
    candidates, networks = [], []
    for run in runs:
        candidate = _candidate(estimator, run)
        candidate._record_network_params()
        candidates.append(candidate)
        networks.append(candidate._new_network(SeedStream(run.seed).next()))
    seeds = SeedStream(runs[0].seed)
    seeds.next(), seeds.next()  # the first run's network and validation split
    batches = estimator._training_batches(data, estimator.batch_size, seeds.next())
    estimator._check_split(batches.batch_size)
    view = candidates[0]._as_fitted()
    size = len(runs)
    view._check_memory(
        f"a training step of {size} initialisations side by side",
        size
        * (
            _WEIGHT_COPIES * view._weight_count()
            + view._activation_count(batches.batch_size, data.n_steps)
        ),
        batch_size=batches.batch_size,
        longest_sequence=data.n_steps,
    )
    placement = estimator._placement()
    training = _PopulationTraining(
        estimator,
        runs,
        networks,
        compiled,
        int(estimator.epochs) * len(batches),
        data.n_steps,
        placement,
        view.dtype_policy,
    )
    watches = [StalledStartWatch(f"member_{k}_loss", stops=False) for k in range(size)]
    losses, shared, sources = training.train(
        training.population(range(size)),
        batches,
        batches.dataset(placement.process_rows),
        watches,
    )
    holders = {} if holders is None else holders
    for k, (candidate, network) in enumerate(zip(candidates, networks, strict=True)):
        controller = network.controller
        candidate.network_ = holders.setdefault(
            (controller.state_bptt_steps, controller.reset_cell_state), network
        )
        candidate.history_ = {
            "loss": losses[k],
            **{key: v[: len(losses[k])] for key, v in shared.items()},
        }
        candidate.n_iter_ = len(losses[k])
    return TrainedPopulation(sources, candidates, watches)


class _PopulationTraining:
    """Makes the populations of one :func:`train_population`: the first one and the
    smaller ones its members go on in once some stall.

    Parameters
    ----------
    estimator : NeuralStackTransducer
    runs : sequence of Run
    networks : list of TransducerNetwork
        Each run's network, as built.
    compiled : dict
        Populations trained before, by their members' truncations (see
        :func:`train_population`).
    n_steps : int
        Gradient steps of the whole training, for the compile policy.
    length : int
        Longest training stream, in steps, for the compile policy.
    placement : Placement
        The fit's placement, in whose scope populations are built.
    dtype_policy : str or None
        The dtype policy they are built under.
    """

    def __init__(
        self, estimator, runs, networks, compiled, n_steps, length, placement, dtype_policy
    ):
        self.estimator = estimator
        self.runs = runs
        self.networks = networks
        self.compiled = compiled
        self.n_steps = n_steps
        self.length = length
        self.placement = placement
        self.dtype_policy = dtype_policy

    def population(self, members):
        """A compiled population of the ``members`` (indices into the runs), from
        their networks' weights, its optimiser state fresh."""
        members = list(members)
        estimator = self.estimator
        with self.placement.scope(), dtype_policy_scope(self.dtype_policy):
            population = PopulationNetwork([self.networks[k] for k in members])
        key = tuple(self.runs[k].state_bptt_steps for k in members)
        if key in self.compiled:
            population = _reinitialised(self.compiled[key], population, estimator.learning_rate)
        else:
            estimator._compile(
                self.n_steps,
                self.length,
                network=population,
                optimizer_class=PopulationAdam,
                loss=PopulationCrossentropy(),
            )
            self.compiled[key] = population
        estimator._set_steps_per_execution(population)
        return population

    def train(self, population, batches, dataset, watches):
        """Train ``population``, of every run's member, to the last epoch, going on
        without the members that stall.

        Returns
        -------
        losses : dict of int to list of float
            Each member's epoch losses.
        shared : dict of str to list of float
            The other logs of every epoch (such as the curriculum's admitted length).
        sources : dict of int to (PopulationNetwork, int)
            For each member, the population that trained it last and its place there.
        """
        estimator, runs = self.estimator, self.runs
        epochs = int(estimator.epochs)
        live, first_epoch = list(range(len(runs))), 0
        losses, shared, sources = {k: [] for k in live}, {}, {}
        while True:
            live_watches = [watches[k] for k in live]
            for index, watch in enumerate(live_watches):
                watch.key = f"member_{index}_loss"
            noise = []
            if getattr(population.controller, "gate_noise_scale", None) is not None:
                starts = [math.ceil(runs[k].gate_noise_start * epochs) for k in live]
                noise = [GateNoiseFrom(starts)]
            history = population.fit(
                dataset,
                initial_epoch=first_epoch,
                epochs=epochs,
                callbacks=[
                    _BestMemberLoss(live_watches),
                    *batches.callbacks(),
                    *noise,
                    *(estimator.callbacks or []),
                    _StopOnNonFinite(type(estimator).__name__),
                    *live_watches,
                    _StopOnceAnyStalled(live_watches),
                ],
                shuffle=False,
                verbose=min(int(estimator.verbose), 2),
            )
            for index, k in enumerate(live):
                losses[k] += [float(v) for v in history.history[f"member_{index}_loss"]]
                sources[k] = (population, index)
            for key, values in history.history.items():
                if key != "loss" and not key.startswith("member_"):
                    shared.setdefault(key, []).extend(float(v) for v in values)
            first_epoch += len(history.history["loss"])
            survivors = [k for k in live if not watches[k].stalled]
            if first_epoch >= epochs or survivors in ([], live):
                return losses, shared, sources
            population = self.narrowed(population, live, survivors)
            live = survivors

    def narrowed(self, population, members, kept):
        """A population of the members ``kept`` of ``population`` (whose members are
        ``members``), each with its weights, noise-seed state and Adam moments."""
        for index, k in enumerate(members):
            if k in kept:
                population.load_member(index, self.networks[k])
        smaller = self.population(kept)
        rows = np.array([members.index(k) for k in kept])
        optimizer = smaller.optimizer
        if not optimizer.built:
            optimizer.build(smaller.trainable_variables)
        for mine, theirs in zip(optimizer.variables, population.optimizer.variables, strict=True):
            value = keras.ops.convert_to_numpy(theirs)
            mine.assign(value if tuple(mine.shape) == value.shape else value[rows])
        return smaller


class TrainedPopulation:
    """The members of a trained population, as the search reads them.

    Members of one configuration (truncation and cell-state reset) share one network
    object, as runs trained one after another do: :meth:`load` puts a member's weights
    into it. Their held-out scores come from the population itself, which decodes the
    held-out samples by all its members in one call (:meth:`held_out_scores`), so that
    a population compiles one decoder per rounding, whatever its configurations.

    Parameters
    ----------
    sources : dict of int to (PopulationNetwork, int)
        For each member, the population that trained it last and its place there.
    candidates : list of NeuralStackTransducer
        One copy of the estimator per member, holding its configuration's network.
    watches : list of StalledStartWatch
        Whether each member stalled.
    """

    def __init__(self, sources, candidates, watches):
        self.sources = sources
        self.members = list(zip(candidates, watches, strict=True))

    def load(self, k):
        """Put member ``k``'s weights into the network its candidate holds."""
        population, index = self.sources[k]
        population.load_member(index, self.members[k][0].network_)

    def held_out_scores(self, judge):
        """The held-out scores of the members that did not stall, each population
        decoding all of its members at once (see :meth:`HeldOutJudge.member_scores`).

        Returns
        -------
        dict of int to tuple of float
        """
        groups = {}
        for k, (_, watch) in enumerate(self.members):
            if not watch.stalled:
                population, index = self.sources[k]
                groups.setdefault(id(population), (population, {}))[1][index] = k
        scores = {}
        for population, members in groups.values():
            holder = self.members[next(iter(members.values()))][0]._shallow_copy()
            holder.network_ = population
            measured = judge.member_scores(holder, list(members))
            scores.update({members[index]: measured[index] for index in members})
        return scores


class _BestMemberLoss(keras.callbacks.Callback):
    """Logs a population's ``loss`` as the lowest loss of its members that have not
    stalled (NaN if any member's is not finite), for the curriculum to advance on."""

    def __init__(self, watches):
        super().__init__()
        self.watches = watches

    def on_epoch_end(self, epoch, logs=None):
        if logs is None:
            return
        losses = np.array([float(logs[watch.key]) for watch in self.watches])
        live = [
            loss for loss, watch in zip(losses, self.watches, strict=True) if not watch.stalled
        ]
        logs["loss"] = float(min(live or losses)) if np.all(np.isfinite(losses)) else np.nan


class _StopOnceAnyStalled(keras.callbacks.Callback):
    """Stops a population's training after the stall check if any member stalled, so
    that the others go on without it (or nobody does)."""

    def __init__(self, watches):
        super().__init__()
        self.watches = watches

    def on_epoch_end(self, epoch, logs=None):
        if epoch == STALL_EPOCHS - 1 and any(watch.stalled for watch in self.watches):
            self.model.stop_training = True


class HeldOutJudge:
    """Scores trained runs on held-out samples: fine accuracy of greedy predictions.

    Parameters
    ----------
    codec : TransducerCodec
        The fit's codec.
    held_out : TrainingData
        The held-out samples.
    settings : Settings
        Whether to round the strengths, and whether soft ones may be kept.
    """

    def __init__(self, codec, held_out, settings):
        self.codec = codec
        self.sources, targets = codec.training_pairs(held_out)
        self.targets = [t.tolist() for t in targets]
        self.settings = settings

    def _scores(self, holder, snap):
        """Fine accuracy on the held-out samples of each member of ``holder``'s network
        (one, or each member of a population)."""
        holder.snap_gates_ = snap
        return [
            _checked_fine_accuracy(self.targets, [p.tolist() for p in predictions])
            for predictions in holder._decode_by_member(self.codec, self.sources)
        ]

    def assess(self, outcome, scores=None):
        """Fill in ``outcome``'s held-out scores.

        Parameters
        ----------
        outcome : Outcome
            A run that did not stall.
        scores : tuple of float, optional
            Its scores with rounded and with soft strengths, where they were measured
            already (:meth:`member_scores`); by default they are measured here.

        Returns
        -------
        Outcome
            The same, with ``rounded``, ``score`` and ``snap`` set.
        """
        snap = self.settings.snap
        rounded, soft = self.member_scores(outcome.candidate, [0])[0] if scores is None else scores
        # Processes that fit together take process 0's scores, so that they all take
        # the same decisions.
        rounded, soft = outcome.candidate._placement().agreed([rounded, soft])
        outcome.rounded = float(rounded)
        outcome.score, outcome.snap = outcome.rounded, snap
        if soft > outcome.score:
            outcome.score, outcome.snap = float(soft), False
        return outcome

    def member_scores(self, holder, members):
        """The scores :meth:`assess` takes, of the ``members`` (indices) of the network
        ``holder`` holds (member 0 of a single network, or members of a population, all
        decoded at once, once per rounding).

        Returns
        -------
        dict of int to tuple of float
            Each member's scores with rounded strengths and, where they may be kept and
            rounding is not exact, with soft ones (else NaN).
        """
        rounded = self._scores(holder, self.settings.snap)
        soft = [np.nan] * len(rounded)
        if self.settings.may_soften and any(rounded[k] < 1.0 for k in members):
            soft = self._scores(holder, False)
        return {k: (rounded[k], soft[k] if rounded[k] < 1.0 else np.nan) for k in members}


def search_initialisations(estimator, data, seeds):
    """Train the initialisations of a new fit and return the one kept.

    With ``n_init=1``, or fewer than 10 samples, one run is trained on all the data
    with the fit's own seeds; otherwise :class:`RestartPlan` runs the search on all
    but the held-out samples.

    Parameters
    ----------
    estimator : NeuralStackTransducer
        The estimator being fitted, its codec learned (left unchanged).
    data : TrainingData
        The encoded training samples.
    seeds : SeedStream
        The fit's seeds.

    Returns
    -------
    NeuralStackTransducer
        A copy of the estimator holding the kept network and its fitted attributes
        (``snap_gates_``, ``state_bptt_steps_``, ``gate_noise_start_``,
        ``init_scores_``).
    """
    settings = resolve_settings(estimator.get_params())
    n_held_out = int(SELECTION_FRACTION * len(data.lengths))
    if estimator.n_init == 1 or n_held_out == 0:
        first = Run(0, settings.first_bptt_steps, settings.noise_starts[0])
        kept = train_run(estimator, data, first, seeds)
        kept.snap_gates_ = settings.snap
        kept.init_scores_ = np.empty(0)
        return kept
    training, held_out = held_out_split(data, n_held_out, seeds.next())
    judge = HeldOutJudge(TransducerCodec.of(estimator), held_out, settings)
    plan = RestartPlan(settings, seeds)
    networks = {}  # one network per truncation, its compiled steps reused by later runs
    populations = {}  # the same for populations, by the truncations of their members
    holders = {}  # the network object that holds each configuration's members
    leader = None  # a snapshot of the leading run's network, which later runs may train
    while runs := plan.next_runs(settings.population):
        load, measured = None, {}
        if len(runs) > 1:
            population = train_population(estimator, training, runs, populations, holders)
            trained, load = population.members, population.load
            measured = population.held_out_scores(judge)
        else:
            (run,) = runs
            watch = None if plan.retraining else StalledStartWatch()
            candidate = train_run(
                estimator,
                training,
                run,
                SeedStream(run.seed),
                () if watch is None else (watch,),
                reuse=networks.get(run.state_bptt_steps),
            )
            networks[run.state_bptt_steps] = candidate.network_
            trained = [(candidate, watch)]
        for k, (run, (candidate, watch)) in enumerate(zip(runs, trained, strict=True)):
            if load is not None:
                load(k)
            stalled = watch is not None and watch.stalled
            early_loss = np.inf if watch is None else watch.best_loss
            outcome = Outcome(run, candidate, stalled, early_loss)
            plan.record(outcome if stalled else judge.assess(outcome, measured.get(k)))
            if plan.leader is outcome:
                leader = _NetworkSnapshot(candidate.network_)
            if plan.done:
                break
    if leader is not None and plan.kept is plan.leader:
        leader.restore()
    kept = plan.kept.candidate
    kept.snap_gates_ = plan.kept.snap
    kept.init_scores_ = plan.scores
    return kept
