"""Quality benchmarks: the tasks of the papers, with their metrics and label formats.

Every row records its training budget (training sequences, epochs, model size and the
wall time of training and evaluation), because a CPU budget is far smaller than the
papers' (the pointer network paper trains on a million examples per task).
"""

from __future__ import annotations

import time

import keras
import numpy as np
from scipy.spatial import ConvexHull, QhullError

from skptr import PointerNetworkOrderer
from skptr.datasets import make_convex_hull, make_sorting, make_transduction, make_tsp
from skptr.metrics import (
    coarse_accuracy,
    fine_accuracy,
    position_accuracy,
    sequence_accuracy,
    tour_length,
)
from skptr.pointer._decoding import PointerDecoder

from ._common import Stopwatch, check
from ._reference import ReferenceGreedyDecoder, build_reference
from .speed import _transducer_class

__all__ = [
    "convex_hull",
    "hull_area_coverage",
    "sort8_curves",
    "sort_floats",
    "transduction",
    "tsp",
]


def _pointer(config, **params):
    params = {
        "hidden_size": config["hidden_size"],
        "epochs": config["epochs"],
        "batch_size": 128,
        "random_state": 0,
        **params,
    }
    return PointerNetworkOrderer(**params)


def _budget(n_train, epochs, hidden_size, seconds, **extra):
    return {
        "n_train": int(n_train),
        "epochs": int(epochs),
        "hidden_size": int(hidden_size),
        "wall_s": round(float(seconds), 1),
        **extra,
    }


def sort8_curves(config, log):
    """Per-epoch held-out accuracy on the seed task for three decoders.

    Eight digits in 0..9 sorted in descending order, ``make_sorting(10_000, 8,
    random_state=0)``: the first ``n_train`` sequences train, the last 1000 test. After
    every epoch each model decodes the test set greedily; position accuracy counts an
    output position as right when it holds the right *value* (ties are
    interchangeable), as in the seed.

    Parameters
    ----------
    config : dict
        ``n_train``, ``epochs``, ``hidden_size``.
    log : callable
        Progress printer.

    Returns
    -------
    dict
        ``curves``: model name to per-epoch lists; ``budget``.
    """
    X, y = make_sorting(10_000, 8, random_state=0)
    X_train, y_train = X[: config["n_train"]], y[: config["n_train"]]
    X_test, y_test = X[-1000:], y[-1000:]
    hidden = config["hidden_size"]
    curves = {}

    # Each model trains for all epochs in one fit; a callback times every epoch and
    # then decodes the test set with the network being trained (evaluation time is not
    # counted as training time; the estimator itself is only fitted once fit returns).
    test_inputs = {"values": X_test[:, :, None], "lengths": np.full(len(X_test), 8, np.int32)}
    decoders = {}

    # Greedy decoding: one lane per sequence, its first position chosen by the network.
    greedy_inputs = {**test_inputs, "starts": np.full((len(X_test), 1), -1, np.int32)}

    def pointer_predict(network):
        decoder = decoders.setdefault(id(network), PointerDecoder(network, "lanes", 1))
        outputs = decoder.predict(greedy_inputs, batch_size=256, verbose=0)
        return np.asarray(outputs["orderings"])[:, 0]

    curve = _new_curve()
    est = _pointer(config)
    est.set_params(callbacks=[_EpochEvaluation(curve, pointer_predict, y_test, X_test)])
    est.fit(X_train, y_train)
    curves["pointer"] = curve

    (inputs, targets, *_), _ = est._prepare_training_data(X_train, y_train, reset=False)
    for name, attention in (("lstm_seq2seq", False), ("attention_seq2seq", True)):
        model = build_reference(hidden, 8, 1, attention=attention)
        decoder = ReferenceGreedyDecoder(model, 8)
        curve = _new_curve()

        def predict(network, decoder=decoder):
            return np.asarray(decoder.predict(test_inputs, batch_size=256, verbose=0))

        model.fit(
            inputs,
            targets,
            batch_size=128,
            epochs=config["epochs"],
            shuffle=True,
            verbose=0,
            callbacks=[_EpochEvaluation(curve, predict, y_test, X_test)],
        )
        curves[name] = curve
    for name, curve in curves.items():
        log(
            f"sort-8 {name}: position accuracy {curve['position_accuracy'][-1]:.3f}, "
            f"sequence accuracy {curve['sequence_accuracy'][-1]:.3f} after "
            f"{config['epochs']} epochs ({sum(curve['train_s']):.0f} s)"
        )
    check(
        curves["pointer"]["position_accuracy"][-1] > 0.3,
        "sort-8: the pointer network learned nothing",
    )
    wall = sum(sum(c["train_s"]) for c in curves.values())
    return {
        "curves": curves,
        "budget": _budget(config["n_train"], config["epochs"], hidden, wall, n_test=1000),
    }


class _EpochEvaluation(keras.callbacks.Callback):
    """Times each training epoch, then scores ``predict(network)`` on held-out data."""

    def __init__(self, curve, predict, y_true, X):
        super().__init__()
        self.curve, self.predict, self.y_true, self.X = curve, predict, y_true, X

    def on_epoch_begin(self, epoch, logs=None):
        self.start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        predictions = self.predict(self.model)
        _record(self.curve, time.perf_counter() - self.start, self.y_true, predictions, self.X)


def _new_curve():
    return {"position_accuracy": [], "sequence_accuracy": [], "train_s": []}


def _record(curve, seconds, y_true, y_pred, X):
    curve["train_s"].append(seconds)
    curve["position_accuracy"].append(float(position_accuracy(y_true, y_pred, X=X)))
    curve["sequence_accuracy"].append(float(sequence_accuracy(y_true, y_pred, X=X)))


def sort_floats(config, log):
    """Whole-sequence accuracy on sorting N floats from U[0, 1] (Vinyals et al. 2016).

    Parameters
    ----------
    config : dict
        ``sizes``, ``n_train``, ``epochs``, ``hidden_size``.
    log : callable
        Progress printer.

    Returns
    -------
    list of dict
        One row per N.
    """
    rows = []
    for size in config["sizes"]:
        X, y = make_sorting(
            config["n_train"] + 1000, size, kind="float", descending=False, random_state=size
        )
        est = _pointer(config)
        with Stopwatch() as watch:
            est.fit(X[:-1000], y[:-1000])
            prediction = est.predict(X[-1000:])
        row = {
            "n": size,
            "sequence_accuracy": float(sequence_accuracy(y[-1000:], prediction)),
            "position_accuracy": float(position_accuracy(y[-1000:], prediction)),
            "budget": _budget(
                config["n_train"], config["epochs"], config["hidden_size"], watch.elapsed
            ),
        }
        log(f"sort {size} floats: sequence accuracy {row['sequence_accuracy']:.3f}")
        rows.append(row)
    return rows


def hull_area_coverage(X, predictions):
    """Area of each predicted polygon's convex hull over the area of the true hull.

    Parameters
    ----------
    X : sequence of (n_i, 2) arrays
        Point sets.
    predictions : array-like
        Predicted vertex indices per set, padded with -1.

    Returns
    -------
    ndarray of shape (n_samples,)
        Coverage in [0, 1]; 0 when fewer than three (or collinear) points are predicted.
    """
    coverage = np.zeros(len(X))
    for i, (points, row) in enumerate(zip(X, predictions, strict=True)):
        chosen = np.asarray(row)[np.asarray(row) >= 0]
        if len(chosen) < 3:
            continue
        try:
            coverage[i] = ConvexHull(points[chosen]).volume / ConvexHull(points).volume
        except QhullError:
            coverage[i] = 0.0
    return coverage


def convex_hull(config, log):
    """Exact polygon accuracy and area coverage of planar convex hulls.

    One model is trained on point sets of ``n_points`` (a range, as the paper's 5..50)
    and tested on sets of each size in ``test_sizes``. A prediction is exact when it
    lists the hull vertices counter-clockwise from the lowest index, the label format
    of Vinyals et al. (2015).

    Parameters
    ----------
    config : dict
        ``train_points`` (min, max), ``test_sizes``, ``n_train``, ``epochs``,
        ``hidden_size``.
    log : callable
        Progress printer.

    Returns
    -------
    list of dict
        One row per test size.
    """
    X, y = make_convex_hull(
        config["n_train"], n_points=tuple(config["train_points"]), random_state=2
    )
    est = _pointer(config)
    with Stopwatch() as watch:
        est.fit(X, y)
    rows = []
    for size in config["test_sizes"]:
        X_test, y_test = make_convex_hull(1000, n_points=size, random_state=100 + size)
        with Stopwatch() as predict_watch:
            prediction = est.predict(X_test)
        exact = np.mean(
            [
                np.array_equal(row[row >= 0], label)
                for row, label in zip(prediction, y_test, strict=True)
            ]
        )
        coverage = hull_area_coverage(X_test, prediction)
        row = {
            "n": size,
            "exact_accuracy": float(exact),
            "area_coverage": float(coverage.mean()),
            "budget": _budget(
                config["n_train"],
                config["epochs"],
                config["hidden_size"],
                watch.elapsed + predict_watch.elapsed,
                train_points=list(config["train_points"]),
            ),
        }
        log(
            f"convex hull n={size}: exact {row['exact_accuracy']:.3f}, "
            f"area coverage {row['area_coverage']:.4f}"
        )
        rows.append(row)
    return rows


def tsp(config, log):
    """Mean tour length of greedy and beam-search tours against the optimum.

    Parameters
    ----------
    config : dict
        ``sizes``, ``n_train``, ``epochs``, ``hidden_size``, ``beam_width``.
    log : callable
        Progress printer.

    Returns
    -------
    list of dict
        One row per number of cities.
    """
    rows = []
    for size in config["sizes"]:
        X, y = make_tsp(config["n_train"] + 1000, n_cities=size, random_state=size)
        X_test, y_test = X[-1000:], y[-1000:]
        est = _pointer(config)
        with Stopwatch() as watch:
            est.fit(X[:-1000], y[:-1000])
            greedy = est.predict(X_test)
            est.set_params(decode="beam", beam_width=config["beam_width"])
            beam = est.predict(X_test)
        for tours in (greedy, beam):
            check(
                all(sorted(t.tolist()) == list(range(size)) for t in tours),
                f"TSP {size}: a predicted tour is not a permutation",
            )
        optimal = float(tour_length(X_test, y_test).mean())
        row = {
            "n": size,
            "optimal": optimal,
            "greedy": float(tour_length(X_test, greedy).mean()),
            "beam": float(tour_length(X_test, beam).mean()),
            "beam_width": config["beam_width"],
            "budget": _budget(
                config["n_train"], config["epochs"], config["hidden_size"], watch.elapsed
            ),
        }
        row["greedy_gap_percent"] = 100 * (row["greedy"] / optimal - 1)
        row["beam_gap_percent"] = 100 * (row["beam"] / optimal - 1)
        log(
            f"TSP {size}: optimal {optimal:.3f}, greedy {row['greedy']:.3f} "
            f"({row['greedy_gap_percent']:+.1f} %), beam {row['beam']:.3f} "
            f"({row['beam_gap_percent']:+.1f} %)"
        )
        rows.append(row)
    return rows


STRING_TASKS = {
    "reversal": lambda s: s[::-1],
    "copy": lambda s: s,
    "duplicate": lambda s: s + s,
}


def _numpy_strings(task, n_samples, low, high, rng):
    """Plain NumPy draws of strings over {a, b}, independent of ``skptr.datasets``."""
    lengths = rng.integers(low, high + 1, size=n_samples)
    X = ["".join(rng.choice(["a", "b"], size=n)) for n in lengths]
    return X, [STRING_TASKS[task](x) for x in X]


def token_accuracy(y_true, y_pred):
    """Mean share of target positions predicted right (Delétang et al. 2023).

    Position ``i`` of a target counts as right when the prediction has the same token
    at position ``i``; a prediction that stops early gets the missing positions wrong,
    and tokens past the target's end are ignored.
    """
    return float(
        np.mean(
            [
                sum(a == b for a, b in zip(t, p, strict=False)) / len(t)
                for t, p in zip(y_true, y_pred, strict=True)
            ]
        )
    )


def _training_seed(seed):
    """The data seed of a transduction protocol's training set for ``random_state``."""
    return 10_000 + seed


def _test_seed(seed, index):
    """The data seed of a transduction protocol's ``index``-th test range."""
    return 20_000 + 100 * seed + index


def transduction(config, log):
    """Accuracy on longer-than-trained sequences, per task, memory, seed and test length.

    One protocol per call: the estimator, with its defaults, trains on ``n_train``
    sources of ``train_lengths`` and is tested on ``n_test`` sources of each range in
    ``test_lengths`` (all longer). With ``data="numpy"`` the strings over {a, b} are
    drawn with plain NumPy (tasks ``reversal``, ``copy``, ``duplicate``); with
    ``data="make_transduction"`` they come from :func:`skptr.datasets.make_transduction`
    with the vocabulary size of ``vocab_sizes``.

    Parameters
    ----------
    config : dict
        ``protocol``, ``data``, ``tasks`` (task to list of memories), ``seeds``,
        ``train_lengths``, ``test_lengths``, ``n_train``, ``n_test`` and, with
        ``make_transduction`` data, ``vocab_sizes``; ``params`` (optional) overrides
        estimator defaults.
    log : callable
        Progress printer.

    Returns
    -------
    list of dict
        One row per task, memory and seed, with coarse, fine and per-token accuracy
        per test range.
    """
    transducer = _transducer_class()
    rows = []
    low, high = config["train_lengths"]
    params = config.get("params", {})

    def draw(task, n_samples, lengths, seed):
        if config["data"] == "numpy":
            return _numpy_strings(task, n_samples, *lengths, np.random.default_rng(seed))
        vocab = config["vocab_sizes"][task]
        return make_transduction(task, n_samples, *lengths, vocab_size=vocab, random_state=seed)

    for task, memories in config["tasks"].items():
        for memory in memories:
            for seed in config["seeds"]:
                X, y = draw(task, config["n_train"], (low, high), _training_seed(seed))
                est = transducer(memory=memory, random_state=seed, **params)
                with Stopwatch() as fit_watch:
                    est.fit(X, y)
                tests = {}
                with Stopwatch() as test_watch:
                    for i, lengths in enumerate(config["test_lengths"]):
                        X_test, y_test = draw(task, config["n_test"], lengths, _test_seed(seed, i))
                        predicted = est.predict(X_test)
                        tests[f"{lengths[0]}-{lengths[1]}"] = {
                            "coarse": float(coarse_accuracy(y_test, predicted)),
                            "fine": float(fine_accuracy(y_test, predicted)),
                            "token": token_accuracy(y_test, predicted),
                        }
                row = {
                    "protocol": config["protocol"],
                    "task": task,
                    "memory": "none" if memory is None else memory,
                    "seed": seed,
                    "tests": tests,
                    "init_scores": [float(x) for x in getattr(est, "init_scores_", [])],
                    "snap_gates": bool(getattr(est, "snap_gates_", False)),
                    "state_bptt_steps": getattr(est, "state_bptt_steps_", None),
                    "gate_noise_start": getattr(est, "gate_noise_start_", None),
                    "final_loss": float(est.history_["loss"][-1]),
                    "fit_s": round(fit_watch.elapsed, 1),
                    "test_s": round(test_watch.elapsed, 1),
                    "train_lengths": [low, high],
                    "n_train": config["n_train"],
                    "data": config["data"],
                    **({"params": params} if params else {}),
                }
                summary = ", ".join(
                    f"{k}: {v['coarse']:.2f}/{v['fine']:.2f}" for k, v in tests.items()
                )
                log(
                    f"{config['protocol']} {task} {row['memory']} seed {seed}: {summary} "
                    f"(fit {fit_watch.elapsed:.0f} s, {len(row['init_scores']) or 1} init.)"
                )
                rows.append(row)
    return rows


def _main_verb_index(source, target):
    """Where SVO to SOV's main verb stands in ``source``: the first word that the
    target, which moves it to the end, does not repeat in place."""
    return next(i for i, word in enumerate(source) if word.upper() != target[i])


def _subject_depth(source, main_verb):
    """The deepest nesting of relative clauses in a sentence's subject."""
    depth = deepest = 0
    for word in source[:main_verb]:
        depth += word.startswith("r")
        deepest = max(deepest, depth)
        depth -= word.startswith("v")
    return deepest


#: What an SVO-to-SOV output got wrong (:func:`_svo_outcome`), the exact ones first.
SVO_OUTCOMES = (
    "exact",
    "last word a verb of the subject's relative clauses",
    "last word a verb of the object's relative clauses",
    "last word another verb",
    "last word not a verb",
    "last word missing",
    "wrong earlier",
)


def _svo_outcome(source, target, output):
    """What an SVO-to-SOV output got wrong, and the nesting depth of its subject.

    Returns one of :data:`SVO_OUTCOMES`: ``"exact"``, ``"wrong earlier"`` (before the
    last word) or what the last word is instead of the main verb.
    """
    main_verb = _main_verb_index(source, target)
    depth = _subject_depth(source, main_verb)
    if output[: len(target) - 1] != target[:-1]:
        return "wrong earlier", depth
    if output == target:
        return "exact", depth
    if len(output) < len(target):
        return "last word missing", depth
    last = output[len(target) - 1]
    if not last.startswith("V"):
        return "last word not a verb", depth
    if last.lower() in source[:main_verb]:
        return "last word a verb of the subject's relative clauses", depth
    if last.lower() in source[main_verb + 1 :]:
        return "last word a verb of the object's relative clauses", depth
    return "last word another verb", depth


def svo_errors(config, log):
    """Where a transducer fitted on SVO to SOV goes wrong: the words copied in place or
    the main verb, which the target moves to the end.

    For each seed, the estimator (defaults, or ``params``) trains as the Grefenstette
    protocol does and predicts new sentences of each test range, drawn with the seeds
    of ``transduction_grefenstette`` (so the first range's sentences are that
    benchmark's). Each output is counted as right up to its last word or wrong
    earlier; of the first, as exact, or by what its last word is instead of the main
    verb (a verb of the subject's relative clauses, of the object's, another verb, not
    a verb, or missing), and by the nesting depth of the subject's relative clauses.

    Parameters
    ----------
    config : dict
        ``seeds``, ``memory``, ``vocab_size``, ``train_lengths``, ``test_lengths``,
        ``n_train``, ``n_test`` and ``params`` (estimator settings).
    log : callable
        Progress printer.

    Returns
    -------
    list of dict
        One row per seed and test range.
    """
    transducer = _transducer_class()
    rows = []
    for seed in config["seeds"]:
        X, y = make_transduction(
            "svo_sov",
            config["n_train"],
            *config["train_lengths"],
            vocab_size=config["vocab_size"],
            random_state=_training_seed(seed),
        )
        est = transducer(memory=config["memory"], random_state=seed, **config["params"])
        with Stopwatch() as fit_watch:
            est.fit(X, y)
        for i, lengths in enumerate(config["test_lengths"]):
            X_test, y_test = make_transduction(
                "svo_sov",
                config["n_test"],
                *lengths,
                vocab_size=config["vocab_size"],
                random_state=_test_seed(seed, i),
            )
            counts = dict.fromkeys(("right up to the last word", *SVO_OUTCOMES), 0)
            by_depth = {}
            for source, target, output in zip(X_test, y_test, est.predict(X_test), strict=True):
                outcome, depth = _svo_outcome(list(source), list(target), list(output))
                counts[outcome] += 1
                if outcome == "wrong earlier":
                    continue
                counts["right up to the last word"] += 1
                wrong, total = by_depth.get(depth, (0, 0))
                by_depth[depth] = (wrong + (outcome != "exact"), total + 1)
            key = f"{lengths[0]}-{lengths[1]}"
            rows.append(
                {
                    "seed": seed,
                    "test_lengths": key,
                    "n_test": config["n_test"],
                    **counts,
                    "main verb wrong by subject depth": {
                        str(depth): list(value) for depth, value in sorted(by_depth.items())
                    },
                    "final_loss": float(est.history_["loss"][-1]),
                    "epochs": len(est.history_["loss"]),
                    "fit_s": round(fit_watch.elapsed, 1),
                    "params": config["params"],
                }
            )
            log(
                f"svo_errors seed {seed}, {key}: {counts['exact']} exact, "
                f"{counts['right up to the last word']} right up to the last word, "
                f"{counts['wrong earlier']} wrong earlier"
            )
    return rows
