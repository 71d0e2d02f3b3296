"""Speed benchmarks: throughput of both estimators and the cost of the scikit-learn layer.

Every throughput is measured after a warm-up call that traces the compiled function,
as the median of several timed repeats. Repeats of the models that are compared with
each other are interleaved (A, B, A, B, ...), so that a load spike on a shared machine
hits both sides of a ratio alike.
"""

from __future__ import annotations

import threading

import keras
import numpy as np
from sklearn.base import clone

from skptr import PointerNetworkOrderer
from skptr._training import compile_network
from skptr.datasets import make_convex_hull, make_sorting, make_transduction, make_tsp
from skptr.memory._search import resolve_settings

from ._common import Stopwatch, check, median_rate
from ._reference import ReferenceGreedyDecoder, build_reference, multiply_adds_per_sequence

__all__ = [
    "pointer_speed",
    "predict_threads",
    "sklearn_overhead",
    "transducer_decoding",
    "transducer_restarts",
    "transducer_speed",
]


def _transducer_class():
    try:
        from skptr import NeuralStackTransducer
    except ImportError:  # the public name is exported once the estimator is finished
        from skptr.memory import NeuralStackTransducer
    return NeuralStackTransducer


def pointer_task(task, n_samples, random_state):
    """The inputs and targets of a pointer speed task.

    Parameters
    ----------
    task : {"sort8", "hull10", "tsp10"}
        Sorting 8 digits, convex hulls of 10 points, or TSP tours of 10 cities.
    n_samples : int
        Number of sequences.
    random_state : int
        Seed of the generator.

    Returns
    -------
    X, y
        As returned by the matching :mod:`skptr.datasets` generator.
    """
    if task == "sort8":
        return make_sorting(n_samples, 8, random_state=random_state)
    if task == "hull10":
        return make_convex_hull(n_samples, n_points=10, random_state=random_state)
    if task == "tsp10":
        return make_tsp(n_samples, n_cities=10, random_state=random_state)
    raise ValueError(f"unknown pointer task {task!r}")


def _time_training(models, inputs, targets, batch_size, repeats):
    """Interleaved one-epoch ``fit`` timings of already traced Keras models."""
    seconds = {name: [] for name in models}
    for _ in range(repeats):
        for name, model in models.items():
            with Stopwatch() as watch:
                model.fit(
                    inputs, targets, batch_size=batch_size, epochs=1, shuffle=True, verbose=0
                )
            seconds[name].append(watch.elapsed)
    return seconds


def pointer_speed(config, log):
    """Training and inference throughput of the pointer network and the reference.

    Parameters
    ----------
    config : dict
        ``tasks``, ``hidden_sizes``, ``n_train`` (sequences per timed epoch),
        ``n_infer`` (sequences per timed ``predict``), ``repeats``, ``beam_widths``.
    log : callable
        Progress printer.

    Returns
    -------
    list of dict
        One row per task and hidden size.
    """
    rows = []
    batch_size = 128
    for task in config["tasks"]:
        X, y = pointer_task(task, config["n_train"], random_state=0)
        X_infer = X[: config["n_infer"]]
        for hidden in config["hidden_sizes"]:
            est = PointerNetworkOrderer(hidden_size=hidden, batch_size=batch_size, epochs=1)
            est.set_params(random_state=0)
            # The first fit builds the network and traces its training step (warm-up).
            with Stopwatch() as cold:
                est.fit(X, y)
            (inputs, targets, *_), _ = est._prepare_training_data(X, y, reset=False)
            n_positions = inputs["values"].shape[1]
            n_classes = n_positions + int(est.ordered_subsets_)
            reference = build_reference(hidden, n_classes, est.n_features_in_)
            reference.fit(inputs, targets, batch_size=batch_size, epochs=1, verbose=0)
            train = _time_training(
                {"pointer": est.network_, "reference": reference},
                inputs,
                targets,
                batch_size,
                config["repeats"],
            )
            # Inference: greedy and beam search through the public predict; the
            # reference decodes greedily with the same batch size.
            predict_batch = max(batch_size, 256)
            decoders = {"greedy": ("greedy", 1)}
            decoders.update({f"beam{w}": ("beam", w) for w in config["beam_widths"]})
            ref_decoder = ReferenceGreedyDecoder(reference, targets.shape[1])
            ref_inputs = {k: inputs[k][: len(X_infer)] for k in ("values", "lengths")}
            for method, width in decoders.values():
                est.set_params(decode=method, beam_width=width)
                prediction = est.predict(X_infer)
                _check_orderings(task, X_infer, prediction)
            ref_decoder.predict(ref_inputs, batch_size=predict_batch, verbose=0)
            infer = {name: [] for name in [*decoders, "reference_greedy"]}
            for _ in range(config["repeats"]):
                for name, (method, width) in decoders.items():
                    est.set_params(decode=method, beam_width=width)
                    with Stopwatch() as watch:
                        est.predict(X_infer)
                    infer[name].append(watch.elapsed)
                with Stopwatch() as watch:
                    ref_decoder.predict(ref_inputs, batch_size=predict_batch, verbose=0)
                infer["reference_greedy"].append(watch.elapsed)
            n = len(targets)
            row = {
                "backend": keras.backend.backend(),
                "task": task,
                "hidden_size": hidden,
                "batch_size": batch_size,
                "predict_batch_size": predict_batch,
                "n_train": n,
                "n_infer": len(X_infer),
                "first_fit_s": cold.elapsed,
                "train_seq_per_s": median_rate(n, train["pointer"]),
                "reference_train_seq_per_s": median_rate(n, train["reference"]),
                "train_seconds": train,
                "infer_seconds": infer,
            }
            for name in infer:
                row[f"{name}_seq_per_s"] = median_rate(len(X_infer), infer[name])
            row["train_ratio"] = row["train_seq_per_s"] / row["reference_train_seq_per_s"]
            # The work of one teacher-forced sequence in both models, on the shapes both
            # trained on: a training ratio near this one means equal speed per operation.
            n_steps = targets.shape[1]
            row["multiply_adds"] = multiply_adds_per_sequence(est.network_, n_positions, n_steps)
            row["reference_multiply_adds"] = multiply_adds_per_sequence(
                reference, n_positions, n_steps
            )
            row["work_ratio"] = row["reference_multiply_adds"] / row["multiply_adds"]
            row["greedy_ratio"] = row["greedy_seq_per_s"] / row["reference_greedy_seq_per_s"]
            log(
                f"pointer {task} h={hidden}: train {row['train_seq_per_s']:.0f} seq/s "
                f"(x{row['train_ratio']:.2f} ref), greedy {row['greedy_seq_per_s']:.0f} "
                f"(x{row['greedy_ratio']:.2f} ref), "
                + ", ".join(f"{k} {row[f'{k}_seq_per_s']:.0f}" for k in decoders if k != "greedy")
            )
            rows.append(row)
    return rows


def _check_orderings(task, X, prediction):
    check(prediction.shape[0] == len(X), f"{task}: predict returned {prediction.shape}")
    for row, sample in zip(prediction, X, strict=True):
        kept = row[row >= 0]
        check(
            len(set(kept.tolist())) == len(kept) and (kept < len(sample)).all(),
            f"{task}: invalid ordering {row.tolist()}",
        )
        if task != "hull10":
            check(len(kept) == len(sample), f"{task}: incomplete ordering {row.tolist()}")


def transducer_speed(config, log):
    """Training and greedy-decoding throughput of the transducer per memory and length.

    Parameters
    ----------
    config : dict
        ``memories``, ``lengths``, ``n_train`` (a function of the length giving the
        sequences per timed epoch), ``n_infer``, ``repeats`` and ``fit_steps``: the
        training step is compiled as the backend's compile policy compiles a fit of
        that many gradient steps.
    log : callable
        Progress printer.

    Returns
    -------
    list of dict
        One row per memory and source length.
    """
    transducer = _transducer_class()
    rows = []
    batch_size = 32
    for length in config["lengths"]:
        n_train = config["n_train"](length)
        X, y = make_transduction(
            "copy", n_train, min_length=length, max_length=length, vocab_size=8, random_state=0
        )
        X_infer = X[: config["n_infer"]]
        fitted = {}
        for memory in config["memories"]:
            est = transducer(
                memory=memory,
                epochs=1,
                batch_size=batch_size,
                curriculum=False,
                max_output_length=length + 1,
                random_state=0,
            )
            # The network is built from the estimator's own hooks and compiled as the
            # estimator compiles a fit of config["fit_steps"] steps (on TensorFlow,
            # XLA only from 400 steps; on JAX always), and one epoch traces the
            # training step before the timed repeats.
            with Stopwatch() as cold:
                (streams, targets, *_), encoding = est._prepare_training_data(X, y, reset=True)
                est.__dict__.update(encoding)
                est.state_bptt_steps_ = resolve_settings(est.get_params(), len(X)).first_bptt_steps
                est.network_params_ = {name: getattr(est, name) for name in est._network_params}
                est.network_ = est._new_network()
                compile_network(est, est.network_, config["fit_steps"], streams.shape[1])
                est.network_.fit(streams, targets, batch_size=batch_size, epochs=1, verbose=0)
            est.snap_gates_ = est.snap_gates in (True, "auto")  # as a fit of one initialisation
            est.predict(X_infer)  # traces the decoder
            fitted[memory] = (est, streams, targets, cold.elapsed)
        train = {memory: [] for memory in fitted}
        infer = {memory: [] for memory in fitted}
        output_lengths = {}
        for _ in range(config["repeats"]):
            for memory, (est, streams, targets, _) in fitted.items():
                with Stopwatch() as watch:
                    est.network_.fit(
                        streams, targets, batch_size=batch_size, epochs=1, shuffle=True, verbose=0
                    )
                train[memory].append(watch.elapsed)
                with Stopwatch() as watch:
                    predictions = est.predict(X_infer)
                infer[memory].append(watch.elapsed)
                output_lengths[memory] = float(np.mean([len(p) for p in predictions]))
        for memory, (est, streams, _, first_fit) in fitted.items():
            row = {
                "backend": keras.backend.backend(),
                "memory": "none" if memory is None else memory,
                "length": length,
                "batch_size": batch_size,
                "jit_compile": bool(est.network_.jit_compile),
                "predict_batch_size": est._predict_batch_size(),
                "n_train": len(streams),
                "n_infer": len(X_infer),
                "first_fit_s": first_fit,
                "train_seq_per_s": median_rate(len(streams), train[memory]),
                "decode_seq_per_s": median_rate(len(X_infer), infer[memory]),
                "mean_output_length": output_lengths[memory],
                "train_seconds": train[memory],
                "decode_seconds": infer[memory],
            }
            rows.append(row)
        baseline = next((r for r in rows if r["length"] == length and r["memory"] == "none"), None)
        for row in rows:
            if row["length"] == length and baseline is not None:
                row["train_ratio_to_none"] = row["train_seq_per_s"] / baseline["train_seq_per_s"]
                row["decode_ratio_to_none"] = (
                    row["decode_seq_per_s"] / baseline["decode_seq_per_s"]
                )
        log(
            f"transducer L={length}: "
            + ", ".join(
                f"{r['memory']} train {r['train_seq_per_s']:.0f} / decode "
                f"{r['decode_seq_per_s']:.0f} seq/s"
                for r in rows
                if r["length"] == length
            )
        )
    return rows


def transducer_decoding(config, log):
    """Seconds to decode one long input, with rounded and with soft strengths.

    The network is trained for one epoch on short copies, then its end token is made
    unreachable (a readout bias of -10,000), so that decoding runs for the whole
    ``max_output_length`` = source length: an input of ``n`` tokens is ``2 n + 1``
    steps. With rounded strengths (``snap_gates_``, the default) the decoder runs the
    discrete memory, whose steps cost the same at any length; with soft strengths every
    step reads and writes the continuous memory's ``n`` slots. From 1,250 tokens
    (``2**23`` rows times squared steps) TensorFlow compiles the decoder with XLA, as JAX
    always does, so that the rows of both backends compare like with like.

    Parameters
    ----------
    config : dict
        ``memories``, ``lengths`` (rounded strengths), ``soft_lengths`` (soft ones)
        and ``repeats``.
    log : callable
        Progress printer.

    Returns
    -------
    list of dict
        One row per memory, strengths and length: the first call (which compiles) and
        the median of the repeats, in seconds.
    """
    transducer = _transducer_class()
    X, y = make_transduction("copy", 64, min_length=8, max_length=8, vocab_size=8, random_state=0)
    rng = np.random.default_rng(0)
    rows = []
    for memory in config["memories"]:
        est = transducer(memory=memory, n_init=1, epochs=1, random_state=0).fit(X, y)
        bias = np.array(keras.ops.convert_to_numpy(est.network_.readout.bias))
        bias[0] = -1e4
        est.network_.readout.bias.assign(bias)
        for snap, lengths in ((True, config["lengths"]), (False, config["soft_lengths"])):
            est.snap_gates_ = snap
            for length in lengths:
                source = "".join(rng.choice(list("abcdefgh"), length))
                est.set_params(max_output_length=length)
                seconds = []
                for _ in range(config["repeats"] + 1):
                    with Stopwatch() as watch:
                        (output,) = est.predict([source])
                    seconds.append(watch.elapsed)
                check(len(output) == length, f"decoded {len(output)} tokens, not {length}")
                rows.append(
                    {
                        "backend": keras.backend.backend(),
                        "memory": memory,
                        "strengths": "rounded" if snap else "soft",
                        "length": length,
                        "steps": 2 * length + 1,
                        "first_call_s": seconds[0],
                        "seconds": float(np.median(seconds[1:])),
                        "repeat_seconds": seconds[1:],
                    }
                )
                log(
                    f"decode {memory}, {rows[-1]['strengths']}, {length} tokens: first "
                    f"{seconds[0]:.2f} s, then {rows[-1]['seconds']:.3f} s"
                )
    return rows


def transducer_restarts(config, log):
    """Fit time of ``n_init`` initialisations against one, on a task none can learn.

    The targets are random token strings, unrelated to the sources, so no
    initialisation predicts the held-out samples exactly and every one of ``n_init``
    runs to the end: the ratio is the whole cost of the search. ``gate_noise_start`` is
    fixed, so that ``n_init`` runs are tried (not up to twice as many).

    Parameters
    ----------
    config : dict
        ``n_samples``, ``lengths`` (the shortest and longest source), ``epochs``,
        ``n_inits`` (the first is the reference) and ``repeats``.
    log : callable
        Progress printer.

    Returns
    -------
    list of dict
        One row per ``n_init``: median fit seconds, runs tried and
        the ratio to the first ``n_init``.
    """
    transducer = _transducer_class()
    rng = np.random.default_rng(0)
    low, high = config["lengths"]
    alphabet = np.array(list("abcdefgh"))
    sources = [
        "".join(rng.choice(alphabet, rng.integers(low, high + 1)))
        for _ in range(config["n_samples"])
    ]
    targets = ["".join(rng.choice(alphabet, rng.integers(low, high + 1))) for _ in sources]
    first = config["n_inits"][0]
    seconds = {n_init: [] for n_init in config["n_inits"]}
    tried = {}
    for _ in range(config["repeats"]):
        for n_init in config["n_inits"]:
            est = transducer(
                n_init=n_init,
                epochs=config["epochs"],
                gate_noise_start=0.6,
                random_state=0,
            )
            with Stopwatch() as watch:
                est.fit(sources, targets)
            seconds[n_init].append(watch.elapsed)
            tried[n_init] = max(1, len(est.init_scores_))
            log(f"restarts: n_init={n_init} fit in {watch.elapsed:.1f} s, {tried[n_init]} runs")
    reference = float(np.median(seconds[first]))
    return [
        {
            "backend": keras.backend.backend(),
            "n_init": n_init,
            "runs": tried[n_init],
            "n_samples": config["n_samples"],
            "lengths": list(config["lengths"]),
            "epochs": config["epochs"],
            "fit_s": float(np.median(seconds[n_init])),
            "ratio": float(np.median(seconds[n_init])) / reference,
            "fit_seconds": seconds[n_init],
        }
        for n_init in config["n_inits"]
    ]


def decoding_exponents(rows):
    """Log-log slope of decoding seconds against input length, per memory and strengths.

    Parameters
    ----------
    rows : list of dict
        Rows of :func:`transducer_decoding` of one backend.

    Returns
    -------
    dict
        ``(memory, strengths)`` to the fitted exponent (None with fewer than two
        lengths).
    """
    exponents = {}
    for key in dict.fromkeys((r["memory"], r["strengths"]) for r in rows):
        points = [
            (r["length"], r["seconds"]) for r in rows if (r["memory"], r["strengths"]) == key
        ]
        if len(points) < 2:
            exponents[key] = None
            continue
        lengths, seconds = np.log(np.array(points)).T
        exponents[key] = float(np.polyfit(lengths, seconds, 1)[0])
    return exponents


def growth_exponents(rows, key):
    """Log-log slope of seconds per sequence against source length, per memory.

    Parameters
    ----------
    rows : list of dict
        Rows of :func:`transducer_speed`.
    key : str
        ``"train_seq_per_s"`` or ``"decode_seq_per_s"``.

    Returns
    -------
    dict
        Memory name to fitted exponent (None with fewer than two lengths).
    """
    exponents = {}
    for memory in dict.fromkeys(r["memory"] for r in rows):
        points = [(r["length"], 1.0 / r[key]) for r in rows if r["memory"] == memory]
        if len(points) < 2:
            exponents[memory] = None
            continue
        lengths, seconds = np.log(np.array(points)).T
        exponents[memory] = float(np.polyfit(lengths, seconds, 1)[0])
    return exponents


def sklearn_overhead(config, log):
    """Time of ``est.fit`` against ``est.network_.fit`` on the same network and data.

    Both run warm: the estimator uses ``warm_start=True``, so its ``fit`` reuses the
    built, compiled and traced network, and the difference is what the scikit-learn
    layer adds per call (validation, encoding the data, seeding, history). The cold
    first fit, which also builds and traces the network, is reported beside it.

    Parameters
    ----------
    config : dict
        ``n_samples``, ``epochs``, ``repeats``, ``transducer_length``.
    log : callable
        Progress printer.

    Returns
    -------
    list of dict
        One row per estimator.
    """
    rows = []
    X, y = make_sorting(config["n_samples"], 8, random_state=0)
    pointer = PointerNetworkOrderer(hidden_size=64, epochs=config["epochs"], random_state=0)
    rows.append(_overhead_row("PointerNetworkOrderer (sort-8, hidden 64)", pointer, X, y, config))
    length = config["transducer_length"]
    X, y = make_transduction(
        "reversal",
        config["n_samples"] // 4,
        min_length=length,
        max_length=length,
        vocab_size=8,
        random_state=0,
    )
    transducer = _transducer_class()(
        memory="stack", epochs=config["epochs"], curriculum=False, random_state=0
    )
    rows.append(
        _overhead_row(
            f"NeuralStackTransducer (stack, reversal L={length})", transducer, X, y, config
        )
    )
    for row in rows:
        log(
            f"overhead {row['estimator']}: est.fit {row['estimator_fit_s']:.3f} s, "
            f"network_.fit {row['keras_fit_s']:.3f} s (+{row['overhead_percent']:.1f} %), "
            f"cold first fit {row['cold_fit_s']:.2f} s"
        )
    return rows


def _overhead_row(name, estimator, X, y, config):
    est = clone(estimator).set_params(warm_start=True)
    with Stopwatch() as cold:
        est.fit(X, y)
    (keras_input, targets, *_), _ = est._prepare_training_data(X, y, reset=False)
    est.fit(X, y)  # a warm call first, in case anything is traced lazily
    sk_seconds, keras_seconds, prepare_seconds = [], [], []

    def keras_fit():
        est.network_.fit(
            keras_input,
            targets,
            batch_size=est.batch_size,
            epochs=est.epochs,
            shuffle=True,
            verbose=0,
        )

    for _ in range(config["repeats"]):
        with Stopwatch() as watch:
            est.fit(X, y)
        sk_seconds.append(watch.elapsed)
        with Stopwatch() as watch:
            keras_fit()
        keras_seconds.append(watch.elapsed)
        # Attribution: the data preparation alone.
        with Stopwatch() as watch:
            est._prepare_training_data(X, y, reset=False)
        prepare_seconds.append(watch.elapsed)
    sk, kr = float(np.median(sk_seconds)), float(np.median(keras_seconds))
    return {
        "backend": keras.backend.backend(),
        "estimator": name,
        "n_samples": len(targets),
        "epochs": est.epochs,
        "cold_fit_s": cold.elapsed,
        "estimator_fit_s": sk,
        "keras_fit_s": kr,
        "prepare_data_s": float(np.median(prepare_seconds)),
        "overhead_s": sk - kr,
        "overhead_percent": 100.0 * (sk - kr) / kr,
        "estimator_seconds": sk_seconds,
        "keras_seconds": keras_seconds,
    }


def _threaded_rate(predict, n_rows, n_threads, calls):
    """Rows predicted per second by ``n_threads`` threads each calling ``predict()``
    ``calls`` times on ``n_rows`` rows, started together."""
    barrier = threading.Barrier(n_threads + 1)

    def work():
        barrier.wait()
        for _ in range(calls):
            predict()

    threads = [threading.Thread(target=work) for _ in range(n_threads)]
    for thread in threads:
        thread.start()
    with Stopwatch() as watch:
        barrier.wait()
        for thread in threads:
            thread.join()
    return n_threads * calls * n_rows / watch.elapsed


def predict_threads(config, log):
    """Prediction throughput of one fitted estimator shared by 1, 2 and 4 threads.

    Each thread predicts the same ``n_infer`` samples ``calls`` times; the rate counts
    every row predicted by every thread. Thread counts are interleaved over
    ``repeats`` rounds and the median kept.

    Parameters
    ----------
    config : dict
        ``n_train``, ``n_infer``, ``calls``, ``repeats``, ``threads``.
    log : callable
        Progress printer.

    Returns
    -------
    list of dict
        One row per estimator and number of threads.
    """
    X, y = make_sorting(config["n_train"], 8, random_state=0)
    pointer = PointerNetworkOrderer(hidden_size=64, epochs=1, random_state=0).fit(X, y)
    X_points = X[: config["n_infer"]]
    strings, reversed_strings = make_transduction(
        "reversal", config["n_train"], min_length=1, max_length=10, random_state=0
    )
    transducer = _transducer_class()(epochs=1, n_init=1, random_state=0)
    transducer.fit(strings, reversed_strings)
    X_strings = strings[: config["n_infer"]]
    estimators = {
        "PointerNetworkOrderer (sort-8, hidden 64), predict": lambda: pointer.predict(X_points),
        "NeuralStackTransducer (reversal 1-10), predict": lambda: transducer.predict(X_strings),
    }
    rows = []
    for name, predict in estimators.items():
        predict()  # compiles the decoder
        rates = {n: [] for n in config["threads"]}
        for _ in range(config["repeats"]):
            for n_threads in config["threads"]:
                rates[n_threads].append(
                    _threaded_rate(predict, config["n_infer"], n_threads, config["calls"])
                )
        one = float(np.median(rates[config["threads"][0]]))
        for n_threads, measured in rates.items():
            rate = float(np.median(measured))
            rows.append(
                {
                    "backend": keras.backend.backend(),
                    "estimator": name,
                    "threads": n_threads,
                    "rows_per_s": rate,
                    "vs_one_thread": rate / one,
                    "rates": measured,
                }
            )
            log(f"{name}, {n_threads} threads: {rate:,.0f} rows/s (x{rate / one:.2f})")
    return rows


#: Share of test inputs on which one and two devices must predict the same output:
#: models trained apart by float rounding alone may differ on near ties (sorting
#: floats a few 1e-3 apart).
MIN_AGREEMENT = 0.95


def _two_processes(command, env, log):
    """The rows of two processes of a JAX runtime fitting together on this machine."""
    import json
    import os
    import socket
    import subprocess
    import tempfile
    from pathlib import Path

    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        port = str(probe.getsockname()[1])
    env = {key: value for key, value in env.items() if key != "XLA_FLAGS"}
    with tempfile.TemporaryDirectory() as directory:
        paths = [
            [os.path.join(directory, f"{i}.{kind}") for kind in ("out", "err")] for i in (0, 1)
        ]
        files = [[open(path, "w") for path in pair] for pair in paths]
        workers = [
            subprocess.Popen([*command, str(i), port], env=env, stdout=out, stderr=err)
            for i, (out, err) in enumerate(files)
        ]
        try:
            codes = [worker.wait(timeout=3600) for worker in workers]
        finally:
            for worker in workers:
                worker.kill()
            for handle in (handle for pair in files for handle in pair):
                handle.close()
        outputs = [[Path(path).read_text() for path in pair] for pair in paths]
    stdout = outputs[0][0]
    for code, (_, stderr) in zip(codes, outputs, strict=True):
        check(code == 0, f"the two-process run failed:\n{stderr[-3000:]}")
    log("two processes: done")
    return json.loads(stdout.strip().splitlines()[-1])


def two_devices(config, log):
    """Training and greedy decoding on one device against two virtual CPU devices.

    Runs :mod:`benchmarks._two_devices` in a process of its own (the backend must be
    told about the virtual devices before it starts), on the backend of this process;
    on JAX, then in two processes of a multi-process runtime with one CPU device each.
    On one machine's CPU the two devices share the same cores, so the rows show that
    the split works and what it costs, not a speed-up.

    Parameters
    ----------
    config : dict
        ``n_train``, ``n_test``, ``length``, ``hidden_size``, ``batch_size``,
        ``epochs`` and ``repeats``.
    log : callable
        Progress printer.

    Returns
    -------
    list of dict
        One row per model and placement: sequences per second in training and greedy
        decoding, and the share of test inputs both placements predicted alike.
    """
    import json
    import os
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        config = {**config, "predictions": os.path.join(directory, "one_device.json")}
        env = {**os.environ, "KERAS_BACKEND": keras.backend.backend()}
        command = [sys.executable, "-m", "benchmarks._two_devices", json.dumps(config)]
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=3600)
        check(result.returncode == 0, f"the two-device run failed:\n{result.stderr[-3000:]}")
        rows = json.loads(result.stdout.strip().splitlines()[-1])
        if keras.backend.backend() == "jax":
            rows += _two_processes(command, env, log)
    for row in rows:
        log(
            f"{row['model']}, {row['replicas']} device(s)"
            f"{' in two processes' if row['devices'] == 'two processes' else ''}: train "
            f"{row['train_seq_per_s']:.0f} seq/s, greedy {row['greedy_seq_per_s']:.0f} seq/s"
        )
        check(
            row["agreement"] >= MIN_AGREEMENT,
            f"{row['model']}: two devices predicted otherwise on "
            f"{1 - row['agreement']:.1%} of the inputs",
        )
    return rows


#: ``TF_CPU_ALLOCATOR_USE_BFC`` of each allocator compared by ``cpu_allocator``; the
#: first is the reference of the ratios.
CPU_ALLOCATORS = {"C library (malloc)": "false", "TensorFlow BFC pools": "true"}


def _median(records, key):
    return float(np.median([r[key] for r in records]))


def cpu_allocator(config, log):
    """Training throughput with the C library's allocator against TensorFlow's BFC pools.

    Each task of :mod:`benchmarks._cpu_allocator` is fitted in a process of its own per
    allocator and repeat, the allocators alternating, on the TensorFlow backend (the
    setting means nothing to JAX, whose section is skipped). skptr asks TensorFlow for
    the BFC pools unless ``TF_CPU_ALLOCATOR_USE_BFC`` is set; these rows are why.

    Parameters
    ----------
    config : dict
        ``repeats``, and the worker's ``epochs``, ``n_instances``, ``tour_length``,
        ``tour_params``, ``sort_length`` and ``sort_params``.
    log : callable
        Progress printer.

    Returns
    -------
    list of dict
        One row per task and allocator: the median instances per second over the
        repeats and its ratio to the C library's, page faults per instance, the
        median seconds to the end of the first epoch (compilation included) and its
        ratio, peak resident memory.
    """
    import json
    import os
    import subprocess
    import sys

    from ._cpu_allocator import TASKS

    if keras.backend.backend() != "tensorflow":
        log("cpu_allocator skipped: TensorFlow's allocator plays no part on this backend")
        return []
    rows = []
    for task in TASKS:
        runs = {name: [] for name in CPU_ALLOCATORS}
        for _ in range(config["repeats"]):
            for name, use_bfc in CPU_ALLOCATORS.items():
                env = {**os.environ, "TF_CPU_ALLOCATOR_USE_BFC": use_bfc}
                command = [
                    sys.executable,
                    "-m",
                    "benchmarks._cpu_allocator",
                    json.dumps({**config, "task": task}),
                ]
                result = subprocess.run(
                    command, env=env, capture_output=True, text=True, timeout=3600
                )
                check(
                    result.returncode == 0,
                    f"{task} with {name} failed:\n{result.stderr[-3000:]}",
                )
                runs[name].append(json.loads(result.stdout.strip().splitlines()[-1]))
        malloc = runs[next(iter(CPU_ALLOCATORS))]
        baseline = _median(malloc, "instances_per_s")
        first_baseline = _median(malloc, "first_epoch_s")
        for name, measured in runs.items():
            rate = _median(measured, "instances_per_s")
            first_epoch_s = _median(measured, "first_epoch_s")
            rows.append(
                {
                    "task": task,
                    "allocator": name,
                    "instances_per_s": rate,
                    "vs_malloc": rate / baseline,
                    "page_faults_per_instance": _median(measured, "page_faults_per_instance"),
                    "first_epoch_s": first_epoch_s,
                    "first_epoch_vs_malloc": first_epoch_s / first_baseline,
                    "peak_rss_mib": float(max(r["peak_rss_mib"] for r in measured)),
                    "rates": [r["instances_per_s"] for r in measured],
                    "first_epochs_s": [r["first_epoch_s"] for r in measured],
                }
            )
            log(
                f"{task}, {name}: {rate:,.1f} instances/s (x{rate / baseline:.2f}), "
                f"{rows[-1]['page_faults_per_instance']:,.0f} page faults per instance, "
                f"first epoch {first_epoch_s:.1f} s"
            )
    return rows
