"""The transducer's search over initialisations (``n_init``) and its "auto" settings.

Like scikit-learn's ``KMeans``, :class:`~skptr.memory.NeuralStackTransducer` trains
several initialisations and keeps the best. The pieces:

- :func:`resolve_settings` turns every ``"auto"`` hyperparameter of a fit into a value,
  in this one place, at the start of ``fit``; :func:`network_settings` gives the
  values a network is built with (:meth:`NeuralStackTransducer._build_network`).
- :class:`RestartPlan` says which initialisation to train next (its seed, truncation
  of backpropagation and noise start), takes what each one learned, and decides when
  the search is over and which run is kept.
- :func:`train_run` trains one run, with nothing of the search in it.
- :class:`HeldOutJudge` scores a trained run on the held-out samples.
- :func:`search_initialisations` ties them together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._base import _NetworkSnapshot
from .._batches import held_out_split
from .._random import SeedStream
from ..metrics import _checked_fine_accuracy
from ._codec import TransducerCodec
from ._curriculum import StalledStartWatch

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
    "network_settings",
    "resolve_settings",
    "search_initialisations",
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
    """

    push_bias: float | tuple[float, ...]
    gate_noise: float
    first_bptt_steps: int | None
    alternate_bptt_steps: bool
    noise_starts: tuple[float, ...]
    snap: bool
    may_soften: bool

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
    )


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

    def _score(self, candidate, snap):
        """Fine accuracy of ``candidate`` on the held-out samples."""
        candidate.snap_gates_ = snap
        predictions = candidate._decode(self.codec, self.sources)
        return _checked_fine_accuracy(self.targets, [p.tolist() for p in predictions])

    def assess(self, outcome):
        """Fill in ``outcome``'s held-out scores.

        Parameters
        ----------
        outcome : Outcome
            A run that did not stall.

        Returns
        -------
        Outcome
            The same, with ``rounded``, ``score`` and ``snap`` set.
        """
        snap = self.settings.snap
        rounded, soft = self._score(outcome.candidate, snap), np.nan
        if self.settings.may_soften and rounded < 1.0:
            soft = self._score(outcome.candidate, False)
        # Processes that fit together take process 0's scores, so that they all take
        # the same decisions.
        rounded, soft = outcome.candidate._placement().agreed([rounded, soft])
        outcome.rounded = float(rounded)
        outcome.score, outcome.snap = outcome.rounded, snap
        if soft > outcome.score:
            outcome.score, outcome.snap = float(soft), False
        return outcome


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
    leader = None  # a snapshot of the leading run's network, which later runs may train
    while (run := plan.next_run()) is not None:
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
        stalled = watch is not None and watch.stalled
        early_loss = np.inf if watch is None else watch.best_loss
        outcome = Outcome(run, candidate, stalled, early_loss)
        plan.record(outcome if stalled else judge.assess(outcome))
        if plan.leader is outcome:
            leader = _NetworkSnapshot(candidate.network_)
    if leader is not None and plan.kept is plan.leader:
        leader.restore()
    kept = plan.kept.candidate
    kept.snap_gates_ = plan.kept.snap
    kept.init_scores_ = plan.scores
    return kept
