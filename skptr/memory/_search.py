"""The transducer's search over initialisations (``n_init``), shaped like ``KMeans``.

- :func:`resolve_settings` turns every ``"auto"`` hyperparameter of a fit into a value,
  once, from the hyperparameters and the number of samples; :func:`network_settings`
  gives the values a network is built with.
- :func:`train_run` trains one run from its own initialisation and returns its
  :class:`Outcome`: the state its network reached, its history and, with held-out
  samples, its scores on them. The runs of one architecture share a compiled
  :class:`Trainer`.
- :func:`search` is the keep-best loop: it stops at the first run that predicts every
  held-out sample exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import keras
import numpy as np

from .._batches import held_out_split
from .._random import SeedStream
from .._training import NetworkState, check_fit, train
from ..metrics import _checked_fine_accuracy
from ._codec import TransducerCodec
from ._curriculum import StalledStartWatch
from ._inference import decode

__all__ = [
    "Outcome",
    "Run",
    "Settings",
    "Trainer",
    "network_settings",
    "resolve_settings",
    "search",
    "train_run",
]

#: ``gate_noise_start="auto"``: the noise start of the first ``n_init`` runs (late,
#: once the task is learned), then of the up to ``n_init`` more tried when none of
#: those is exact (from the first epoch).
LATE_NOISE_START = 0.6
EARLY_NOISE_START = 0.0
#: ``push_bias="auto"``: the initial push bias of every end, except the deque's bottom
#: end, which starts low.
AUTO_PUSH_BIAS = 0.0
AUTO_DEQUE_BOTTOM_PUSH_BIAS = -1.5
#: With ``n_init > 1``, the share of the training samples held out to compare the runs
#: (rounded down: fits of fewer than 10 samples train one run on every sample).
SELECTION_FRACTION = 0.1


#: The hyperparameters a network takes as they are.
_ARCHITECTURE = ("memory", "cell", "hidden_size", "embedding_dim", "memory_width", "pop_bias")


@dataclass(frozen=True)
class Settings:
    """The ``"auto"`` hyperparameters of one fit, resolved.

    Attributes
    ----------
    push_bias : float or tuple of float
        The initial push bias, for every end or one per end.
    first_bptt_steps : int or None
        Truncation of backpropagation through the state of the first run.
    alternate_bptt_steps : bool
        Whether, once a run has stalled, the following ones alternate between full
        backpropagation and truncation (``state_bptt_steps="auto"`` with a memory).
    noise_starts : tuple of float
        The ``gate_noise_start`` of each run that may be tried, in order.
    snap : bool
        Whether held-out scores and ``predict`` round the strengths.
    may_soften : bool
        Whether a run that is not exact with rounded strengths may keep soft ones
        (``snap_gates="auto"``).
    n_held_out : int
        Samples held out to compare the runs; 0: one run on every sample.
    """

    push_bias: float | tuple[float, ...]
    first_bptt_steps: int | None
    alternate_bptt_steps: bool
    noise_starts: tuple[float, ...]
    snap: bool
    may_soften: bool
    n_held_out: int

    def bptt_steps_after(self, steps, any_stalled):
        """The truncation of the run that follows one trained with ``steps``."""
        if not (any_stalled and self.alternate_bptt_steps):
            return steps
        return None if steps == 0 else 0


def _push_bias(params):
    if params["push_bias"] != "auto":
        return float(params["push_bias"])
    if params["memory"] == "deque":
        return (AUTO_PUSH_BIAS, AUTO_DEQUE_BOTTOM_PUSH_BIAS)
    return AUTO_PUSH_BIAS


def resolve_settings(params, n_samples):
    """Resolve every ``"auto"`` hyperparameter of a fit.

    Parameters
    ----------
    params : dict
        The estimator's ``get_params()``.
    n_samples : int
        Number of training samples.

    Returns
    -------
    Settings
    """
    memory, steps, n_init = params["memory"], params["state_bptt_steps"], params["n_init"]
    if params["gate_noise_start"] != "auto":
        noise_starts = (float(params["gate_noise_start"]),) * n_init
    else:
        noise_starts = (LATE_NOISE_START,) * n_init
        if memory is not None and params["gate_noise"] > 0:  # else the start changes nothing
            noise_starts += (EARLY_NOISE_START,) * n_init
    return Settings(
        push_bias=_push_bias(params),
        first_bptt_steps=(None if memory is None else 0) if steps == "auto" else steps,
        alternate_bptt_steps=steps == "auto" and memory is not None,
        noise_starts=noise_starts,
        snap=params["snap_gates"] in (True, "auto"),
        may_soften=params["snap_gates"] == "auto",
        n_held_out=0 if n_init == 1 else int(SELECTION_FRACTION * n_samples),
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
        The arguments of :class:`~skptr.memory._network.TransducerNetwork` that come
        from the hyperparameters, resolved: ``push_bias``, ``gate_noise`` and
        ``reset_cell_state`` (``"auto"``: true for an LSTM whose state gets no gradient
        from earlier steps, ``bptt_steps == 0``) among them.
    """
    reset = params["reset_cell_state"]
    if reset == "auto":
        reset = params["cell"] == "lstm" and bptt_steps == 0
    return {
        **{name: params[name] for name in _ARCHITECTURE},
        "state_bptt_steps": bptt_steps,
        "push_bias": _push_bias(params),
        "gate_noise": float(params["gate_noise"]),
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
    state : NetworkState
        The state of its trained network (weights and optimiser, for a warm start);
        ``state.restore()`` puts the network of its architecture in that state.
    network_params : dict
        The hyperparameters its network was built from.
    history : dict of list of float
        Its per-epoch logs.
    stalled : bool
        Whether it was abandoned in its first epochs (see ``StalledStartWatch``).
    early_loss : float
        Its lowest loss of those epochs (inf when not watched).
    rounded : float
        Held-out score with rounded strengths (NaN: stalled or not scored).
    score, snap : float, bool
        Its best held-out score and the rounding that reaches it.
    """

    run: Run
    state: NetworkState
    network_params: dict
    history: dict
    stalled: bool = False
    early_loss: float = np.inf
    rounded: float = np.nan
    score: float = -1.0
    snap: bool = True


class Trainer:
    """The network that trains the runs of one architecture, one after another.

    Compiling a training step and the held-out decoders takes longer than training a
    small run, so the runs of one architecture share one compiled network. Each run
    starts from the initial weights (and seed state) of a new network built with its
    own seed, and from the optimiser's initial state, so it trains exactly as it would
    on a network of its own; its outcome keeps a copy of the state it reaches.
    """

    def __init__(self):
        self.network = None
        self._start = None  # the optimiser's and metrics' state before any training

    def _record_start(self, logs=None):
        optimizer = self.network.optimizer
        if not optimizer.built:  # TensorFlow builds it in the first step, in the graph
            optimizer.build(self.network.trainable_variables)
        self._start = NetworkState(self.network)

    def train(self, candidate, data, seeds, callbacks=()):
        """Train a new initialisation of ``candidate`` (the estimator with its run's
        settings) on ``data``; return its history and the state it reached."""
        network_seed, *training_seeds = seeds.next(), seeds.next(), seeds.next()
        check_fit(candidate, data, (network_seed, *training_seeds))
        initial = candidate._new_network(network_seed)
        if self.network is None:
            self.network = initial
            callbacks = (
                *callbacks,
                keras.callbacks.LambdaCallback(on_train_begin=self._record_start),
            )
        else:
            self._start.restore()
            weights = [*initial.trainable_variables, *initial.non_trainable_variables]
            own = [*self.network.trainable_variables, *self.network.non_trainable_variables]
            for variable, value in zip(own, weights, strict=True):
                variable.assign(value)
        history = train(candidate, self.network, data, training_seeds, callbacks=callbacks)
        return history, NetworkState(self.network)


def _held_out_score(view, codec, sources, targets, snap):
    """Fine accuracy of greedy predictions on the held-out samples."""
    view.snap_gates_ = snap
    predictions = decode(view, codec, sources)
    return _checked_fine_accuracy(targets, [p.tolist() for p in predictions])


def train_run(estimator, trainer, data, run, seeds, settings, held_out=None, watch=False):
    """Train ``run`` from its own initialisation; nothing of the search is kept.

    Parameters
    ----------
    estimator : NeuralStackTransducer
        The estimator being fitted, its codec learned (left unchanged).
    trainer : Trainer
        The trainer of the run's architecture (its ``state_bptt_steps``).
    data, held_out : TrainingData
        The training samples, and those the run is scored on (None: not scored).
    run : Run
    seeds : SeedStream
        Seeds of the network, the validation split and the batches.
    settings : Settings
    watch : bool, default=False
        Whether a run that stalls in its first epochs is stopped (and not scored).

    Returns
    -------
    Outcome
    """
    candidate = estimator._shallow_copy()
    candidate.state_bptt_steps_ = run.state_bptt_steps
    candidate.gate_noise_start_ = run.gate_noise_start
    watcher = StalledStartWatch() if watch else None
    history, state = trainer.train(candidate, data, seeds, () if watcher is None else (watcher,))
    params = candidate.network_params_
    outcome = Outcome(run, state, params, history, snap=settings.snap)
    if watcher is not None:
        outcome.stalled, outcome.early_loss = watcher.stalled, watcher.best_loss
    if held_out is None or outcome.stalled:
        return outcome
    codec = TransducerCodec.of(estimator)
    sources, targets = codec.training_pairs(held_out)
    targets = [t.tolist() for t in targets]
    candidate.network_ = trainer.network  # the view to decode, in the run's state
    rounded = _held_out_score(candidate, codec, sources, targets, settings.snap)
    soft = np.nan
    if settings.may_soften and rounded < 1.0:
        soft = _held_out_score(candidate, codec, sources, targets, False)
    # Processes that fit together take process 0's scores, so that they all take the
    # same decisions.
    rounded, soft = candidate._placement().agreed([rounded, soft])
    outcome.rounded = outcome.score = float(rounded)
    if soft > outcome.score:
        outcome.score, outcome.snap = float(soft), False
    return outcome


def search(estimator, data, seeds):
    """Train the initialisations of a new fit and return the fitted attributes of the
    one kept.

    With one run (``n_init=1``, or fewer than 10 samples) it trains on every sample
    with the fit's own seeds. Otherwise the runs train on all but the held-out
    samples, each with the next seed of the fit, in the order of the noise starts;
    the first run exact on the held-out samples is kept, else the best scored one
    (ties keep the first). Runs that stall are not scored; if every run stalls, the
    least stalled one (lowest early loss) is trained again in full and kept.

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
    dict
        ``network_params_``, ``network_`` (in the kept run's state), ``history_``,
        ``n_iter_``, the resolved ``state_bptt_steps_``, ``gate_noise_start_`` and
        ``snap_gates_``, and ``init_scores_``: the held-out score of each run tried,
        rounded strengths (NaN: stalled), empty with one run.
    """
    settings = resolve_settings(estimator.get_params(), len(data.lengths))
    if settings.n_held_out == 0:
        run = Run(0, settings.first_bptt_steps, settings.noise_starts[0])
        kept = train_run(estimator, Trainer(), data, run, seeds, settings)
        return _fitted_attributes(kept, np.empty(0))
    training, held_out = held_out_split(data, settings.n_held_out, seeds.next())
    best, scores, stalled, trainers = None, [], [], {}
    steps = settings.first_bptt_steps
    for noise_start in settings.noise_starts:
        run = Run(seeds.next(), steps, noise_start)
        trainer = trainers.setdefault(steps, Trainer())
        outcome = train_run(
            estimator, trainer, training, run, SeedStream(run.seed), settings, held_out, True
        )
        scores.append(outcome.rounded)
        if outcome.stalled:
            stalled.append((outcome.early_loss, run.seed, run))
        elif best is None or outcome.score > best.score:
            best = outcome
        if outcome.rounded == 1.0:
            best = outcome
            break
        steps = settings.bptt_steps_after(steps, any_stalled=bool(stalled))
    if best is None:  # every run stalled: the least stalled one, trained in full
        *_, run = min(stalled, key=lambda entry: entry[:2])
        trainer = trainers[run.state_bptt_steps]
        best = train_run(
            estimator, trainer, training, run, SeedStream(run.seed), settings, held_out
        )
    best.state.restore()
    return _fitted_attributes(best, np.array(scores))


def _fitted_attributes(kept, init_scores):
    return {
        "network_params_": kept.network_params,
        "network_": kept.state.network,
        "history_": kept.history,
        "n_iter_": len(kept.history.get("loss", [])),
        "state_bptt_steps_": kept.run.state_bptt_steps,
        "gate_noise_start_": kept.run.gate_noise_start,
        "snap_gates_": kept.snap,
        "init_scores_": init_scores,
    }
