"""Run skptr's benchmarks: ``python -m benchmarks [--quick] [--only SECTION ...]``.

``--backend jax`` measures on Keras' JAX backend instead of TensorFlow. The full mode
writes ``benchmarks/results/*.json`` (``SECTION.jax.json`` for JAX; the report shows
the speed rows of both backends side by side), the report
``benchmarks/results/README.md`` with its plots, and the documentation page
``docs/benchmarks.rst``. The quick mode (a smoke test for CI, a few minutes on two CPU
cores) runs every section on tiny budgets and writes to ``benchmarks/results/quick/``
only, leaving the committed results alone. Any failure exits with a nonzero status.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("MPLBACKEND", "Agg")

SECTIONS = (
    "pointer_vs_torch",
    "pointer_budget",
    "cost_learning",
    "rl4co_side_by_side",
    "pointer_speed",
    "transducer_speed",
    "transducer_decoding",
    "transducer_restarts",
    "two_devices",
    "precision",
    "sklearn_overhead",
    "predict_threads",
    "cpu_allocator",
    "decoding_scale",
    "cost_training_scale",
    "tour_scale",
    "sort8_curves",
    "sort_floats",
    "convex_hull",
    "tsp",
    "transduction_short",
    "transduction_grefenstette",
    "transduction_deletang",
    "svo_errors",
)

TRANSDUCTION_VOCAB = {
    "copy": 8,
    "reversal": 8,
    "bigram_flip": 8,
    "svo_sov": 24,
    "gender_conjugation": 24,
}

#: The pointer network's settings for a few minutes of CPU (user guide, "Training under
#: a time budget"): about three times the sequences per second, and a step size that
#: falls tenfold over the 17 epochs of 100,000 convex hulls that fit in 300 s.
TIME_BUDGET_PRESET = {"bidirectional": False, "learning_rate_decay": 0.87}
#: The same, with the cyclic targets declared (``cycle``): hulls keep their direction,
#: tours may be reversed.
CYCLES_PRESET = {
    **TIME_BUDGET_PRESET,
    "cycle": {
        "hull10": "directed",
        "hull50": "directed",
        "tsp10": "undirected",
        "tsp20": "undirected",
    },
}

#: ``svo_errors``: seed 0's fit of SVO to SOV under the Grefenstette protocol, and
#: where its outputs go wrong on its test sentences (65-128 words, the same as
#: ``transduction_grefenstette``'s) and on new ones of the training lengths.
SVO_ERRORS = {
    "seeds": [0],
    "memory": "deque",
    "vocab_size": TRANSDUCTION_VOCAB["svo_sov"],
    "train_lengths": [8, 64],
    "test_lengths": [[65, 128], [8, 64]],
    "n_train": 2000,
    "n_test": 200,
    "params": {},
}

#: The user guide's recommended settings for learning from a cost (tours and schedules).
RECOMMENDED_COST_PARAMS = {
    "encoder": "attention",
    "num_layers": 2,
    "decoder_layers": 1,
    "hidden_size": 128,
    "attention": "general",
    "logit_clip": 10,
    "batch_size": 128,
    "learning_rate": 2e-3,
}

#: ``cost_learning``: the user guide's recommended settings for tours and schedules,
#: learned from the cost alone for 1,200 s (tsp20), 3,600 s (tsp50) and 600 s (smtwt20).
COST_LEARNING = {
    "tasks": ["smtwt20", "tsp20", "tsp50"],
    "seeds": [0, 1, 2],
    "seconds": {"tsp20": 1200, "tsp50": 3600, "smtwt20": 600},
    # Epochs of 10,000 instances: the step size falls tenfold or a little more over the
    # epochs that fit each budget on a 2-core CPU (TSP-50's hour fits about as many
    # epochs as TSP-20's 20 minutes, so they share a decay).
    "params": {
        task: {**RECOMMENDED_COST_PARAMS, "learning_rate_decay": decay}
        for task, decay in (("tsp20", 0.92), ("tsp50", 0.92), ("smtwt20", 0.84))
    },
    "n_pool": {"tsp20": 10_000, "tsp50": 10_000, "smtwt20": 10_000},
    "n_test": 1000,
    "beam_widths": [16, 64, 128, 256],
    "image_beam_widths": [1, 4, 16],
    "host_cost_seconds": 60,
}

#: ``cpu_allocator``: both allocators alternate over the repeats; each fit runs its
#: epochs of ``n_instances`` (TSP-20 with the recommended settings of ``cost_learning``,
#: sorting 10 numbers with the defaults), the first one, which compiles, timed apart.
CPU_ALLOCATOR = {
    "repeats": 5,
    "epochs": 4,
    "n_instances": 640,
    "tour_length": 20,
    "tour_params": RECOMMENDED_COST_PARAMS,
    "sort_length": 10,
    "sort_params": {"batch_size": 64},
}

#: ``rl4co_side_by_side``: RL4CO's POMO and attention model (rollout baseline), its
#: defaults but batch 64 and float32, trained for cost_learning's seconds in the
#: environment whose Python ``SKPTR_RL4CO_PYTHON`` names (the section is skipped without).
RL4CO = {
    "python": os.environ.get("SKPTR_RL4CO_PYTHON"),
    "runs": {task: ["pomo", "am"] for task in COST_LEARNING["tasks"]},
    "seeds": COST_LEARNING["seeds"],
    "seconds": COST_LEARNING["seconds"],
    "n_test": COST_LEARNING["n_test"],
    "batch_size": 64,
}

#: ``cost_training_scale``: training from the cost ``"tour"`` with the recommended
#: settings on N uniform random points, each measurement in a fresh process per backend,
#: budgeted by a per-batch callback (as a user's budget is); three processes per backend
#: at 20 and 100 points (the backends alternate), one at the other sizes.
COST_TRAINING_SCALE = {
    "sizes": [20, 50, 100, 200],
    "backends": ["tensorflow", "jax"],
    "repeats": {"20": 3, "100": 3},
    "seconds": 30,
    "n_pool": 10_000,
    "params": RECOMMENDED_COST_PARAMS,
    "seed": 0,
    "timeout_s": 600,
}

#: ``tour_scale``: TSP-100 from the cost with the recommended settings, on a pool of 100
#: points and on a pool of 20 to 100 points, each for an hour; each decay makes the step
#: size fall tenfold over the epochs of 10,000 instances that the hour holds at the
#: throughput measured on this CPU (TensorFlow: about 55 instances/s at 100 points, 78
#: on the mixed pool). Decodings are listed cheapest first; each target's decoding is
#: chosen on validation instances within its time limit per instance.
TOUR_SCALE = {
    "seeds": [0, 1, 2],
    "trainings": {
        "100 points": {"sizes": [100, 100], "decay": 0.891},
        "20-100 points": {"sizes": [20, 100], "decay": 0.921},
    },
    "seconds": 3600,
    "n_pool": 10_000,
    "params": RECOMMENDED_COST_PARAMS,
    "curve_points": 100,
    "n_curve": 100,
    "decodings": {
        "greedy": {"decode": "greedy", "augment": False},
        "greedy, 8 images": {"decode": "greedy", "augment": True},
        "every start": {"decode": "multistart", "n_candidates": None, "augment": False},
        "every start, 8 images": {"decode": "multistart", "n_candidates": None, "augment": True},
    },
    "targets": {"tsp100": [100, 0.05], "tsplib": [150, 2.0], "tsp1000": [1000, 20.0]},
    "n_validation": {"100": 100, "150": 20, "1000": 3},
    "test_sizes": [100, 200, 500, 1000],
    "n_test": {"100": 200, "200": 50, "500": 20, "1000": 10},
    "validation_seed": 11,
    "test_seed": 12,
    "timeout_s": 3 * 3600,
    # The issue's targets: tour over LKH-3's (greedy, and the chosen decoding) and the
    # mean gap to the TSPLIB optima.
    "goals": {"tsp100_greedy": 1.10, "tsp100": 1.05, "tsplib_gap": 0.04, "tsp1000": 1.15},
    # Finished rows, kept for a later run with the same settings and package code.
    "rows_dir": "results/tour_scale_rows",
}

#: ``decoding_scale``: one instance of N uniform random points per size, decoded by each
#: method (each measurement in a process of its own) by a network with the recommended
#: settings for tours, fitted from the cost for one epoch of TSP-20 instances (decoding
#: time does not depend on how well it is trained). Multistart starts from every
#: element, except at 5,000 elements, where that would take too long.
DECODING_SCALE = {
    "sizes": [200, 500, 1000, 2000, 5000],
    "methods": {
        "greedy": {"decode": "greedy"},
        "multistart": {"decode": "multistart", "n_candidates": None},
        "sample": {"decode": "sample", "n_candidates": 16},
        "beam": {"decode": "beam", "beam_width": 16},
    },
    "overrides": {"5000": {"multistart": {"n_candidates": 100}}},
    "params": RECOMMENDED_COST_PARAMS,
    "n_train": 256,
    "train_length": 20,
    "epochs": 1,
    "seed": 0,
    "timeout_s": 900,
    # The targets, at 1,000 elements.
    "targets": {
        "n_points": 1000,
        "multistart_s": 20,
        "multistart_peak_mb": 2000,
        "greedy_s": 1,
    },
}

SEEDS = [0, 1, 2, 3, 4]
#: Point 1 of the short protocol holds for every random_state from 0 to 7.
SHORT_SEEDS = list(range(8))

#: The three length-generalisation protocols of the transducer, each at the
#: estimator's defaults.
TRANSDUCTION_PROTOCOLS = {
    # Short training, far tests, on plain NumPy strings over {a, b}.
    "transduction_short": {
        "protocol": "short",
        "data": "numpy",
        "tasks": {"reversal": ["stack", None], "copy": ["queue", None]},
        "seeds": SHORT_SEEDS,
        "train_lengths": [1, 10],
        "test_lengths": [[1, 10], [11, 20], [21, 40], [41, 64], [65, 128]],
        "n_train": 2000,
        "n_test": 200,
    },
    # Grefenstette et al. (2015): train on 8-64, test on 65-128, the paper's five tasks,
    # each with the deque (the paper's one memory that solves all five) and with the
    # memory its algorithm needs where that is a stack or a queue.
    "transduction_grefenstette": {
        "protocol": "grefenstette",
        "data": "make_transduction",
        "tasks": {
            "reversal": ["stack", "deque"],
            "copy": ["queue", "deque"],
            "bigram_flip": ["queue", "deque"],
            "svo_sov": ["deque"],
            "gender_conjugation": ["deque"],
        },
        "vocab_sizes": TRANSDUCTION_VOCAB,
        "seeds": SEEDS,
        "train_lengths": [8, 64],
        "test_lengths": [[65, 128]],
        "n_train": 2000,
        "n_test": 200,
    },
    # Delétang et al. (2023): train on 1-40, test on 41-500, binary strings.
    "transduction_deletang": {
        "protocol": "deletang",
        "data": "numpy",
        "tasks": {"reversal": ["stack", None], "duplicate": ["queue"]},
        "seeds": SEEDS,
        "train_lengths": [1, 40],
        "test_lengths": [[41, 100], [101, 250], [251, 500]],
        "n_train": 2000,
        "n_test": 100,
    },
}


def configuration(quick):
    """The budgets of every section.

    Parameters
    ----------
    quick : bool
        Tiny budgets for the smoke test, or the full run's budgets.

    Returns
    -------
    dict
        Section name to its configuration.
    """
    if quick:
        return {
            "pointer_vs_torch": {
                "n_train": 1024,
                "n_infer": 1024,
                "hidden_size": 128,
                "batch_size": 128,
                "torch_batch_size": 512,
                "repeats": 1,
            },
            "pointer_budget": {
                "tasks": ["hull10", "tsp10", "sort10"],
                "seconds": 3,
                "n_train": 512,
                "n_test": 64,
                "n_curve": 32,
                "beam_width": 3,
                "params": {},
                "presets": {
                    "time budget": TIME_BUDGET_PRESET,
                    "time budget, cycle": CYCLES_PRESET,
                },
                "preset_tasks": {"time budget": ["hull10"], "time budget, cycle": ["hull10"]},
            },
            "cost_learning": {
                **COST_LEARNING,
                "seeds": [0],
                "tasks": ["smtwt20", "tsp20"],
                "seconds": {"tsp20": 5, "smtwt20": 5},
                "n_pool": {"tsp20": 256, "smtwt20": 256},
                "n_test": 16,
                "host_cost_seconds": 0,
            },
            "tour_scale": {
                **TOUR_SCALE,
                "seeds": [0],
                "trainings": {"8-10 points": {"sizes": [8, 10], "decay": 0.9}},
                "seconds": 3,
                "n_pool": 256,
                "curve_points": 10,
                "n_curve": 8,
                "targets": {"tsp100": [10, 0.05], "tsplib": [12, 2.0], "tsp1000": [20, 20.0]},
                "n_validation": {"10": 8, "12": 4, "20": 2},
                "test_sizes": [10, 20],
                "n_test": {"10": 8, "20": 4},
                "timeout_s": 600,
                "rows_dir": None,  # the smoke test always trains
            },
            "rl4co_side_by_side": {
                **RL4CO,
                "runs": {"smtwt20": ["am"], "tsp20": ["pomo"]},
                "seeds": [0],
                "seconds": {"tsp20": 5, "smtwt20": 5},
                "n_test": 16,
            },
            "pointer_speed": {
                "tasks": ["sort8"],
                "hidden_sizes": [128],
                "n_train": 1536,
                "n_infer": 512,
                "repeats": 2,
                "beam_widths": [3],
            },
            "transducer_speed": {
                "memories": ["stack", None],
                "lengths": [10, 20],
                "n_train": lambda length: 128,
                "n_infer": 64,
                "repeats": 2,
                "fit_steps": 100,
            },
            "transducer_decoding": {
                "memories": ["stack"],
                "lengths": [250, 500],
                "soft_lengths": [250],
                "repeats": 1,
            },
            "two_devices": {
                "n_train": 256,
                "n_test": 64,
                "length": 8,
                "hidden_size": 16,
                "batch_size": 32,
                "epochs": 1,
                "repeats": 1,
            },
            "precision": {
                "n_train": 256,
                "n_test": 64,
                "length": 6,
                "hidden_size": 16,
                "batch_sizes": [64],
                "epochs": 1,
                "repeats": 1,
            },
            "transducer_restarts": {
                "n_samples": 200,
                "lengths": (2, 8),
                "epochs": 1,
                "n_inits": [1, 2],
                "repeats": 1,
            },
            "sklearn_overhead": {
                "n_samples": 1536,
                "epochs": 1,
                "repeats": 2,
                "transducer_length": 8,
            },
            "predict_threads": {
                "n_train": 512,
                "n_infer": 256,
                "calls": 2,
                "repeats": 1,
                "threads": [1, 2, 4],
            },
            "cpu_allocator": {
                **CPU_ALLOCATOR,
                "repeats": 1,
                "epochs": 2,
                "n_instances": 64,
                "tour_length": 8,
                "sort_length": 5,
            },
            "decoding_scale": {
                **DECODING_SCALE,
                "sizes": [50],
                "methods": {
                    name: DECODING_SCALE["methods"][name] for name in ("greedy", "multistart")
                },
                "n_train": 32,
                "timeout_s": 300,
            },
            "cost_training_scale": {
                **COST_TRAINING_SCALE,
                "sizes": [8],
                "repeats": {},
                "seconds": 2,
                "n_pool": 512,
                "timeout_s": 300,
            },
            "sort8_curves": {"n_train": 2000, "epochs": 2, "hidden_size": 32},
            "sort_floats": {"sizes": [5], "n_train": 1500, "epochs": 2, "hidden_size": 32},
            "convex_hull": {
                "train_points": [5, 10],
                "test_sizes": [5, 10],
                "n_train": 1500,
                "epochs": 2,
                "hidden_size": 32,
            },
            "tsp": {
                "sizes": [5],
                "n_train": 1500,
                "epochs": 2,
                "hidden_size": 32,
                "beam_width": 3,
            },
            "transduction_short": {
                **TRANSDUCTION_PROTOCOLS["transduction_short"],
                "tasks": {"reversal": ["stack"]},
                "seeds": [0],
                "n_train": 64,
                "test_lengths": [[11, 20]],
                "n_test": 16,
                "params": {"epochs": 1, "n_init": 2},
            },
            "transduction_grefenstette": {
                **TRANSDUCTION_PROTOCOLS["transduction_grefenstette"],
                "tasks": {"bigram_flip": ["deque"]},
                "seeds": [0],
                "train_lengths": [8, 12],
                "test_lengths": [[13, 16]],
                "n_train": 64,
                "n_test": 16,
                "params": {"epochs": 1, "n_init": 1},
            },
            "transduction_deletang": {
                **TRANSDUCTION_PROTOCOLS["transduction_deletang"],
                "tasks": {"duplicate": ["queue"]},
                "seeds": [0],
                "train_lengths": [1, 8],
                "test_lengths": [[9, 40]],
                "n_train": 64,
                "n_test": 16,
                "params": {"epochs": 1, "n_init": 1},
            },
            "svo_errors": {
                **SVO_ERRORS,
                "train_lengths": [8, 12],
                "test_lengths": [[13, 16], [8, 12]],
                "n_train": 64,
                "n_test": 16,
                "params": {"epochs": 1, "n_init": 1},
            },
        }
    return {
        "pointer_vs_torch": {
            "n_train": 10240,
            "n_infer": 4096,
            "hidden_size": 128,
            "batch_size": 128,
            "torch_batch_size": 512,
            "repeats": 5,
        },
        "pointer_budget": {
            "tasks": ["hull10", "tsp10", "sort10", "hull50", "tsp20"],
            "seconds": {"hull10": 300, "tsp10": 300, "sort10": 300, "hull50": 1200, "tsp20": 1200},
            "n_train": {
                "hull10": 100_000,
                "tsp10": 100_000,
                "sort10": 100_000,
                "hull50": 100_000,
                "tsp20": 20_000,
            },
            "n_test": 1000,
            "n_curve": 300,
            "beam_width": 3,
            "params": {},
            "presets": {"time budget": TIME_BUDGET_PRESET, "time budget, cycle": CYCLES_PRESET},
            "preset_tasks": {
                "time budget": ["hull10", "tsp10", "sort10"],
                "time budget, cycle": ["hull10", "tsp10"],
            },
        },
        "cost_learning": COST_LEARNING,
        "rl4co_side_by_side": RL4CO,
        "pointer_speed": {
            "tasks": ["sort8", "hull10", "tsp10"],
            "hidden_sizes": [128, 256],
            "n_train": 1536,
            "n_infer": 512,
            "repeats": 3,
            "beam_widths": [3, 5],
        },
        "transducer_speed": {
            "memories": ["stack", "queue", "deque", None],
            "lengths": [10, 32, 64, 128],
            "n_train": lambda length: max(32, min(256, 2048 // length)),
            "n_infer": 64,
            "repeats": 2,
            "fit_steps": 100,
        },
        "transducer_decoding": {
            "memories": ["stack", "queue", "deque"],
            "lengths": [1250, 2500, 5000, 10000],
            "soft_lengths": [1250, 2500],
            "repeats": 5,
        },
        "two_devices": {
            "n_train": 4096,
            "n_test": 1024,
            "length": 10,
            "hidden_size": 64,
            "batch_size": 128,
            "epochs": 2,
            "repeats": 2,
        },
        "precision": {
            "n_train": 4096,
            "n_test": 1000,
            "length": 10,
            "hidden_size": 64,
            "batch_sizes": [128],
            "epochs": 8,
            "repeats": 2,
        },
        "transducer_restarts": {
            "n_samples": 1000,
            "lengths": (2, 16),
            "epochs": 3,
            "n_inits": [1, 8],
            "repeats": 1,
        },
        "sklearn_overhead": {
            "n_samples": 2048,
            "epochs": 2,
            "repeats": 3,
            "transducer_length": 16,
        },
        "predict_threads": {
            "n_train": 2000,
            "n_infer": 2048,
            "calls": 4,
            "repeats": 3,
            "threads": [1, 2, 4],
        },
        "cpu_allocator": CPU_ALLOCATOR,
        "decoding_scale": DECODING_SCALE,
        "cost_training_scale": COST_TRAINING_SCALE,
        "tour_scale": TOUR_SCALE,
        "sort8_curves": {"n_train": 9000, "epochs": 6, "hidden_size": 64},
        "sort_floats": {"sizes": [5, 10], "n_train": 5000, "epochs": 8, "hidden_size": 64},
        "convex_hull": {
            "train_points": [5, 10],
            "test_sizes": [5, 10],
            "n_train": 5000,
            "epochs": 8,
            "hidden_size": 64,
        },
        "tsp": {
            "sizes": [5, 10],
            "n_train": 5000,
            "epochs": 8,
            "hidden_size": 64,
            "beam_width": 5,
        },
        **TRANSDUCTION_PROTOCOLS,
        "svo_errors": SVO_ERRORS,
    }


def _printable(config):
    return {
        key: (f"<function of the length: {[value(n) for n in (10, 32, 64, 128)]}>")
        if callable(value)
        else value
        for key, value in config.items()
    }


def _override(config, setting, parser):
    """Apply one ``SECTION.KEY=JSON`` setting of ``--set`` to ``config``."""
    import json

    target, _, value = setting.partition("=")
    section, _, key = target.partition(".")
    if section not in config or not key or not value:
        parser.error(f"--set {setting!r}: expected SECTION.KEY=JSON with a known section")
    try:
        config[section][key] = json.loads(value)
    except json.JSONDecodeError as error:
        parser.error(f"--set {setting!r}: the value is not JSON ({error})")


def main(argv=None):
    """Command-line entry point; returns the process exit status."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny budgets (CI smoke test)")
    parser.add_argument(
        "--only", nargs="+", choices=SECTIONS, metavar="SECTION", help="run only these sections"
    )
    parser.add_argument(
        "--report-only", action="store_true", help="rebuild the report from saved results"
    )
    parser.add_argument("--output", help="results folder (default: benchmarks/results[/quick])")
    parser.add_argument(
        "--set",
        nargs="+",
        action="extend",
        default=[],
        metavar="SECTION.KEY=JSON",
        help="change one budget, e.g. precision.batch_sizes=[256,2048] (the value is JSON)",
    )
    parser.add_argument(
        "--backend",
        help="Keras backend to measure: tensorflow or jax (default: KERAS_BACKEND)",
    )
    args = parser.parse_args(argv)
    if args.backend is not None:
        os.environ["KERAS_BACKEND"] = args.backend
    from skptr._startup import start_backend_quietly

    # Before Keras, so that the backend starts with skptr's settings (such as
    # TensorFlow's allocator), as it does in a program that imports skptr first.
    start_backend_quietly()
    import keras

    from skptr._backend import SUPPORTED_BACKENDS  # refuses unsupported backends

    backend = keras.backend.backend()
    if args.backend is not None and backend != args.backend:
        parser.error(f"Keras was already imported with the {backend} backend")
    suffix = "" if backend == SUPPORTED_BACKENDS[0] else f".{backend}"

    from . import report
    from ._common import RESULTS_DIR, device_info, load_average, read_json, write_json

    output = RESULTS_DIR / "quick" if args.quick and args.output is None else RESULTS_DIR
    if args.output is not None:
        from pathlib import Path

        output = Path(args.output)
    mode = "quick" if args.quick else "full"
    start = time.perf_counter()

    def log(message):
        print(f"[{time.perf_counter() - start:7.1f} s] {message}", flush=True)

    if not args.report_only:
        from . import (
            budget,
            cost_learning,
            cost_training_scale,
            decoding_scale,
            precision,
            quality,
            speed,
            tour_scale,
        )

        runners = {
            "pointer_vs_torch": budget.pointer_vs_torch,
            "pointer_budget": budget.pointer_budget,
            "cost_learning": cost_learning.cost_learning,
            "rl4co_side_by_side": cost_learning.rl4co_side_by_side,
            "pointer_speed": speed.pointer_speed,
            "transducer_speed": speed.transducer_speed,
            "transducer_decoding": speed.transducer_decoding,
            "transducer_restarts": speed.transducer_restarts,
            "two_devices": speed.two_devices,
            "precision": precision.precision,
            "sklearn_overhead": speed.sklearn_overhead,
            "predict_threads": speed.predict_threads,
            "cpu_allocator": speed.cpu_allocator,
            "decoding_scale": decoding_scale.decoding_scale,
            "cost_training_scale": cost_training_scale.cost_training_scale,
            "tour_scale": tour_scale.tour_scale,
            "sort8_curves": quality.sort8_curves,
            "sort_floats": quality.sort_floats,
            "convex_hull": quality.convex_hull,
            "tsp": quality.tsp,
            "transduction_short": quality.transduction,
            "transduction_grefenstette": quality.transduction,
            "transduction_deletang": quality.transduction,
            "svo_errors": quality.svo_errors,
        }
        config = configuration(args.quick)
        for setting in args.set:
            _override(config, setting, parser)
        device = device_info()
        log(f"device: {device['cpu']} x{device['cpu_cores']}, accelerator {device['accelerator']}")
        run = read_json(output / "run.json") or {}
        run.update(mode=mode, device=device, sections=run.get("sections", {}))
        failed = []
        for name in args.only or SECTIONS:
            log(f"--- {name}")
            section_start = time.perf_counter()
            load_before = load_average()
            try:
                results = runners[name](config[name], log)
            except Exception:
                traceback.print_exc()
                failed.append(name)
                continue
            seconds = time.perf_counter() - section_start
            write_json(
                output / f"{name}{suffix}.json",
                {
                    "section": name,
                    "mode": mode,
                    "config": _printable(config[name]),
                    "wall_s": seconds,
                    "load_average_before": load_before,
                    "load_average_after": load_average(),
                    "device": device,
                    "results": results,
                },
            )
            run["sections"][f"{name}{suffix}"] = {
                "wall_s": seconds,
                "finished": time.strftime("%Y-%m-%d %H:%M"),
                "skptr_commit": device["skptr_commit"],
            }
            log(f"{name} done in {seconds:.0f} s")
        run["wall_s"] = time.perf_counter() - start
        run["load_average_end"] = load_average()
        write_json(output / "run.json", run)
        if failed:
            log(f"FAILED: {', '.join(failed)}")
            return 1
    written = report.write_report(output, docs=not args.quick and args.output is None)
    log("wrote " + ", ".join(str(p) for p in written))
    log(f"total {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
