"""Turn saved benchmark results into plots, a markdown report and the docs page.

The report is described once, as a list of blocks (headings, paragraphs, tables and
figures), and rendered twice: to Markdown (``README.md`` beside the results) and to
reStructuredText (``docs/benchmarks.rst``).
"""

from __future__ import annotations

import statistics
from pathlib import Path

import numpy as np

from skptr._backend import SUPPORTED_BACKENDS

from ._common import read_json
from .speed import decoding_exponents, growth_exponents

__all__ = ["write_report"]

DOCS_PAGE = Path(__file__).parent.parent / "docs" / "benchmarks.rst"

# Published numbers (../shared/ANCHORS.md).
PUBLISHED_FLOAT_SORT = {
    5: "90 % (Ptr-Net); 94 % (read-process-write)",
    10: "28 %; 57 %",
    15: "4 %; 10 %",
}
PUBLISHED_HULL = {5: ("92.0 %", "99.6 %"), 10: ("87.0 %", "99.8 %"), 50: ("69.6 %", "99.9 %")}
PUBLISHED_TSP = {5: ("2.12", "2.12"), 10: ("2.87", "2.88"), 20: ("3.83", "3.88")}
PUBLISHED_TRANSDUCTION = {
    # task: (deep LSTM, stack, queue, deque), each "coarse / fine"
    "copy": (".01 / .50", ".00 / .22", "1.00 / 1.00", "1.00 / 1.00"),
    "reversal": (".04 / .13", "1.00 / 1.00", ".00 / .01", "1.00 / 1.00"),
    "bigram_flip": (".02 / .52", ".00 / .48", ".55 / .98", ".53 / .98"),
    "svo_sov": (".98 / .99", "1.00 / 1.00", "1.00 / 1.00", "1.00 / 1.00"),
    "gender_conjugation": (".99 / .99", ".93 / .97", "1.00 / 1.00", "1.00 / 1.00"),
}
MEMORY_COLUMN = {"none": 0, "stack": 1, "queue": 2, "deque": 3}
TASK_NAMES = {
    "sort8": "sort-8",
    "hull10": "convex hull n=10",
    "tsp10": "TSP n=10",
    "copy": "copy",
    "reversal": "reversal",
    "bigram_flip": "bigram flip",
    "svo_sov": "SVO → SOV",
    "gender_conjugation": "gender conjugation",
}


# ------------------------------------------------------------------------ blocks
def heading(text, level):
    return ("heading", text, level)


def para(text):
    return ("para", text)


def table(header, rows):
    return ("table", header, rows)


def figure(filename, alt):
    return ("figure", filename, alt)


def _to_markdown(blocks):
    lines = []
    for block in blocks:
        kind = block[0]
        if kind == "heading":
            lines += ["#" * block[2] + " " + block[1], ""]
        elif kind == "para":
            lines += [block[1], ""]
        elif kind == "table":
            header, rows = block[1], block[2]
            lines.append("| " + " | ".join(header) + " |")
            lines.append("|" + "|".join(" --- " for _ in header) + "|")
            lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
            lines.append("")
        elif kind == "figure":
            lines += [f"![{block[2]}]({block[1]})", ""]
    return "\n".join(lines)


def _rst_inline(text):
    # Markdown code spans become reST literals; ** bold ** is the same in both.
    parts = text.split("`")
    return "".join(p if i % 2 == 0 else f"``{p}``" for i, p in enumerate(parts))


def _to_rst(blocks, image_prefix):
    marks = {1: "=", 2: "-", 3: "~"}
    lines = [".. _benchmarks:", ""]
    for block in blocks:
        kind = block[0]
        if kind == "heading":
            lines += [block[1], marks[block[2]] * len(block[1]), ""]
        elif kind == "para":
            lines += [_rst_inline(block[1]), ""]
        elif kind == "table":
            header, rows = block[1], block[2]
            lines += [".. list-table::", "   :header-rows: 1", ""]
            for row in [header, *rows]:
                cells = [_rst_inline(str(c)) or "\\" for c in row]
                lines.append(f"   * - {cells[0]}")
                lines += [f"     - {c}" for c in cells[1:]]
            lines.append("")
        elif kind == "figure":
            lines += [f".. image:: {image_prefix}{block[1]}", f"   :alt: {block[2]}", ""]
    return "\n".join(lines)


# ------------------------------------------------------------------------ helpers
def _fmt(value, digits=0):
    return "\u2013" if value is None else f"{value:,.{digits}f}"


def _seconds(value):
    return "\u2013" if value is None else f"{value:.2f} s"


def _budget_text(budget, device):
    text = (
        f"{budget['n_train']:,} train seqs, {budget['epochs']} epochs, "
        f"hidden {budget['hidden_size']}"
    )
    return f"{text}, {budget['wall_s']:.0f} s on {device}"


def _device_short(device):
    cores = device.get("cpu_cores")
    accelerator = device.get("accelerator", "none (CPU only)")
    base = f"{cores}-core CPU" if not device.get("gpus") else accelerator
    return base


# ------------------------------------------------------------------------ plots
def _plot_pointer_speed(rows, path):
    import matplotlib.pyplot as plt

    labels = [f"{TASK_NAMES[r['task']]}\nh={r['hidden_size']}\n{r['backend']}" for r in rows]
    series = [
        ("train (pointer)", "train_seq_per_s"),
        ("train (reference)", "reference_train_seq_per_s"),
        ("greedy (pointer)", "greedy_seq_per_s"),
        ("greedy (reference)", "reference_greedy_seq_per_s"),
    ]
    series += [
        (f"beam {k[4:-10]} (pointer)", k)
        for k in rows[0]
        if k.startswith("beam") and k.endswith("_seq_per_s")
    ]
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(rows) + 2), 4))
    width = 0.8 / len(series)
    for i, (name, key) in enumerate(series):
        xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(rows))]
        ax.bar(xs, [r[key] for r in rows], width, label=name)
    ax.set_xticks(range(len(rows)), labels)
    ax.set_yscale("log")
    ax.set_ylabel("sequences / second")
    ax.set_title("PointerNetworkOrderer throughput vs a plain Keras seq2seq")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_transducer_speed(rows, path):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
    for ax, key, title in (
        (axes[0], "train_seq_per_s", "training (teacher-forced)"),
        (axes[1], "decode_seq_per_s", "greedy decoding"),
    ):
        for backend in dict.fromkeys(r["backend"] for r in rows):
            of_backend = [r for r in rows if r["backend"] == backend]
            exponents = growth_exponents(of_backend, key)
            for memory in dict.fromkeys(r["memory"] for r in of_backend):
                points = sorted(
                    (r["length"], 1000.0 / r[key]) for r in of_backend if r["memory"] == memory
                )
                exponent = exponents[memory]
                label = f"{memory}, {backend}"
                label += "" if exponent is None else f" (slope {exponent:.2f})"
                ax.plot(
                    *zip(*points, strict=True),
                    marker="o",
                    linestyle="-" if backend == "tensorflow" else "--",
                    label=label,
                )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("source length")
        ax.set_ylabel("ms per sequence")
        ax.set_title(title)
        ax.legend(fontsize=6)
    fig.suptitle("NeuralStackTransducer: time per sequence vs length (log-log)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_sort8(curves, path):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharex=True)
    for name, curve in curves.items():
        epochs = range(1, len(curve["position_accuracy"]) + 1)
        axes[0].plot(epochs, curve["position_accuracy"], marker="o", label=name)
        axes[1].plot(epochs, curve["sequence_accuracy"], marker="o", label=name)
    for ax, title in zip(axes, ("position accuracy", "sequence accuracy"), strict=True):
        ax.set_xlabel("epoch")
        ax.set_title(title)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.suptitle("Sort 8 digits (seed task), held-out accuracy per epoch")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_budget(rows, path):
    import matplotlib.pyplot as plt

    tasks = list(dict.fromkeys(row["task"] for row in rows))
    fig, axes = plt.subplots(1, len(tasks), figsize=(3.6 * len(tasks), 3.4))
    for ax, task in zip(np.atleast_1d(axes), tasks, strict=True):
        metric = "tour_ratio" if task.startswith("tsp") else "exact"
        for row in (row for row in rows if row["task"] == task):
            seconds = [point["seconds"] for point in row["curve"]]
            values = [point[metric] for point in row["curve"]]
            label = row.get("settings", "defaults")
            if "random_state" in row:
                label += f", seed {row['random_state']}"
            ax.plot(seconds, values, marker="o", label=label)
        ax.set_xlabel("training seconds (2 CPU cores)")
        ax.set_title(f"{task}: {'tour / best' if metric == 'tour_ratio' else metric}")
        ax.grid(alpha=0.3)
        if len(ax.get_lines()) > 1:
            ax.legend(fontsize="small")
    fig.suptitle("Pointer network: greedy decoding against training time")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _budget_cell(scores, metric):
    """A budget row's score, with the hull's area coverage where it was measured; tour
    ratios to four decimals, since the targets they are held against have three."""
    text = f"{scores[metric]:.4f}" if metric == "tour_ratio" else f"{scores[metric]:.3f}"
    if "area_coverage" in scores:
        text += f" (area {100 * scores['area_coverage']:.1f} %)"
    return text


def _torch_blocks(section):
    row = section["results"][0]
    commit = section["device"].get("skptr_commit", "?")
    blocks = [heading(f"Pointer network against PyTorch ({row['backend']})", 2)]
    if row.get("torch") is None:
        return [*blocks, para("PyTorch was not installed in this run: no reference rows.")]
    blocks.append(
        para(
            f"Convex hulls of 10 points, one-layer unidirectional LSTM encoder and decoder "
            f"of {row['hidden_size']} units, batch {row['batch_size']}, skptr at {commit} on "
            f"{row['backend']}; the reference is `benchmarks/_torch_reference.py` "
            f"(PyTorch {row['torch']}, {row['torch_threads']} threads, in a process of its "
            "own), the same network "
            "written as public PyTorch pointer networks are: fused `nn.LSTM` calls for "
            "training, a Python loop of batched calls over output steps for decoding "
            f"(batch 512). Training: `est.fit` of one epoch of {row['n_train']:,} sequences "
            f"against the reference's epoch; decoding: `est.predict` of {row['n_infer']:,} "
            "sequences. Median of interleaved repeats."
        )
    )
    rows = []
    for name, label in (
        ("train", "training"),
        ("greedy", "greedy decoding"),
        ("beam3", "beam search, width 3"),
    ):
        rows.append(
            [
                label,
                _fmt(row[f"{name}_seq_per_s"]),
                _fmt(row[f"torch_{name}_seq_per_s"]),
                f"x{row[f'{name}_ratio']:.2f}",
            ]
        )
    blocks.append(table(["sequences / s", "skptr", "PyTorch reference", "ratio"], rows))
    return blocks


def _budget_blocks(section):
    rows = section["results"]
    commit = section["device"].get("skptr_commit", "?")
    blocks = [heading("Pointer network after a budget of training seconds", 2)]
    presets = {}  # name -> parameter -> task -> value
    for row in rows:
        if row.get("settings", "defaults") != "defaults":
            for key, value in row["params"].items():
                presets.setdefault(row["settings"], {}).setdefault(key, {})[row["task"]] = value

    def setting(key, by_task):
        values = set(map(repr, by_task.values()))
        if len(values) == 1:
            return f"`{key}={values.pop()}`"
        return f"`{key}` " + ", ".join(f"`{v!r}` ({task})" for task, v in by_task.items())

    preset_text = "".join(
        f' The preset "{name}" sets '
        + ", ".join(setting(key, by_task) for key, by_task in params.items())
        + "."
        for name, params in presets.items()
    )
    blocks.append(
        para(
            f"The `PointerNetworkOrderer` with its defaults, or a preset below (skptr at "
            f"{commit}, {rows[0]['backend']}, `random_state=0`), trains one epoch per `fit` call "
            "(`warm_start=True`) on a pool of training instances until the training time "
            "reaches the budget (300 s, 1,200 s for hull50 and tsp20). The pools come from "
            "`skptr.datasets`, but hull50's mixes 5 to 50 points (Vinyals et al.'s "
            "training set) and tsp20's is labelled by LKH-3 (the `elkai` package). The "
            "test instances are drawn with NumPy and labelled by the benchmark (SciPy's "
            "hull, exact Held-Karp tours for 10 cities, LKH-3 tours for 20, `argsort`); "
            "tour ratios are against those tours. Evaluation time is not counted."
            + preset_text
            + section.get("note", "")
        )
    )
    table_rows = []
    for row in rows:
        metric = "tour_ratio" if row["task"].startswith("tsp") else "exact"
        beam = next(k for k in row if k.startswith("beam") and not k.endswith("instance"))
        table_rows.append(
            [
                row["task"],
                row.get("settings", "defaults")
                + (f", random_state={row['random_state']}" if "random_state" in row else ""),
                f"{row['seconds']:.0f} s, {row['epochs']} epochs of {row['n_train']:,}",
                metric.replace("_", " "),
                _budget_cell(row["greedy"], metric),
                _budget_cell(row[beam], metric),
                f"{row['greedy_ms_per_instance']:.3f} / {row[beam + '_ms_per_instance']:.3f}",
            ]
        )
    blocks.append(
        table(
            [
                "task",
                "settings",
                "training",
                "metric",
                "greedy",
                "beam 3",
                "ms per instance (greedy / beam)",
            ],
            table_rows,
        )
    )
    blocks.append(figure("pointer_budget.png", "accuracy against training seconds"))
    return blocks


# ------------------------------------------------------------------------ report
def _load(output):
    data = {}
    for path in sorted(Path(output).glob("*.json")):
        if path.stem != "run":
            data[path.stem] = read_json(path)
    for path in sorted((Path(output) / GPU_FOLDER).glob("*.json")):
        data[f"{GPU_FOLDER}/{path.stem}"] = read_json(path)
    return data, read_json(Path(output) / "run.json") or {}


#: The sub-folder of the results with the rows measured on a GPU host (see
#: :func:`_gpu_blocks`); the sections' own tables show this machine's rows only.
GPU_FOLDER = "gpu"


SPEED_SECTIONS = (
    "pointer_speed",
    "transducer_speed",
    "transducer_decoding",
    "transducer_restarts",
    "two_devices",
    "sklearn_overhead",
)


def _speed_rows(data, section):
    """The rows of a speed section from every backend's result file, TensorFlow first.

    Rows written before the backend was recorded take the backend of their file.
    """
    rows = []
    for key in sorted(k for k in data if k == section or k.startswith(f"{section}.")):
        backend = data[key].get("device", {}).get("keras_backend", "tensorflow")
        rows += [{"backend": backend, **row} for row in data[key]["results"]]
    order = {name: i for i, name in enumerate(SUPPORTED_BACKENDS)}
    return sorted(rows, key=lambda r: order.get(r["backend"], len(order)))


#: The pointer_budget tasks, with the headline row of a shorter section that their best
#: budget row replaces, their label, metric and published numbers.
BUDGET_HEADLINE = {
    "sort10": ("sort_floats", 10, "sort 10 floats", "sequence accuracy", PUBLISHED_FLOAT_SORT[10]),
    "hull10": (
        "convex_hull",
        10,
        "convex hull n=10",
        "exact polygons",
        f"{PUBLISHED_HULL[10][0]}, trained on 5..50",
    ),
    "tsp10": ("tsp", 10, "TSP n=10", "mean tour / optimal", "Ptr-Net 2.88 / 2.87 = 1.003"),
    "hull50": (
        None,
        None,
        "convex hull n=50 (trained on 5..50)",
        "exact polygons",
        f"{PUBLISHED_HULL[50][0]}",
    ),
    "tsp20": (
        None,
        None,
        "TSP n=20",
        "mean tour / LKH-3 tour",
        "Ptr-Net 3.88 / 3.83 = 1.013; attention model (Kool et al.) 1.0034",
    ),
}


def _budget_headline(data, device):
    """The best settings of each pointer_budget task, over its seeds, as headline rows.

    Returns
    -------
    rows : dict
        Task to a headline row.
    """
    results = data.get("pointer_budget", {}).get("results", [])
    groups = {}
    for row in results:
        groups.setdefault((row["task"], row.get("settings", "defaults")), []).append(row)
    best = {}
    for (task, settings), rows in groups.items():
        metric = "tour_ratio" if task.startswith("tsp") else "exact"
        sign = -1 if metric == "tour_ratio" else 1
        mean = sign * float(np.mean([row["greedy"][metric] for row in rows]))
        if task not in best or mean > best[task][0]:
            best[task] = (mean, settings, rows, metric)
    headline = {}
    for task, (_, settings, rows, metric) in best.items():
        if task not in BUDGET_HEADLINE:
            continue
        _, _, label, metric_name, published = BUDGET_HEADLINE[task]
        beam = next(key for key in rows[0] if key.startswith("beam") and "_ms" not in key)
        cells = []
        for decoding in ("greedy", beam):
            values = [row[decoding][metric] for row in rows]
            worst = max(values) if metric == "tour_ratio" else min(values)
            if metric == "tour_ratio":
                text, worst_text = f"{np.mean(values):.4f}", f"{worst:.4f}"
            else:
                text, worst_text = f"{100 * np.mean(values):.1f} %", f"{100 * worst:.1f} %"
            if len(values) > 1:
                text += f" (worst seed {worst_text})"
            cells.append(text)
        seeds = sorted(row.get("random_state", 0) for row in rows)
        seconds = max(row["seconds"] for row in rows)
        budget = (
            f"{rows[0]['budget_s']:,} s of training ({seconds:,.0f} s with the last epoch) "
            f'on {device}, {rows[0]["n_train"]:,}-instance pool, settings "{settings}", '
            f"random_state {', '.join(str(seed) for seed in seeds)}"
        )
        headline[task] = [
            label,
            f"{metric_name}: greedy / {beam.replace('beam', 'beam ')}",
            " / ".join(cells),
            published,
            budget,
        ]
    return headline


def _headline(data, device):
    budget_rows = _budget_headline(data, device)
    replaced = {
        BUDGET_HEADLINE[task][:2] for task in budget_rows if BUDGET_HEADLINE[task][0] is not None
    }
    rows = []
    if "sort8_curves" in data:
        section = data["sort8_curves"]["results"]
        curve = section["curves"]["pointer"]
        rows.append(
            [
                "sort 8 digits (seed)",
                "position / sequence accuracy",
                f"{curve['position_accuracy'][-1]:.3f} / {curve['sequence_accuracy'][-1]:.3f}",
                "position ≈ 1.0 after ~10 epochs",
                _budget_text(section["budget"], device),
            ]
        )
    for row in data.get("sort_floats", {}).get("results", []):
        if ("sort_floats", row["n"]) in replaced:
            continue
        rows.append(
            [
                f"sort {row['n']} floats",
                "sequence accuracy",
                f"{100 * row['sequence_accuracy']:.1f} %",
                PUBLISHED_FLOAT_SORT.get(row["n"], "\u2013"),
                _budget_text(row["budget"], device),
            ]
        )
    for row in data.get("convex_hull", {}).get("results", []):
        if ("convex_hull", row["n"]) in replaced:
            continue
        acc, area = PUBLISHED_HULL.get(row["n"], ("\u2013", "\u2013"))
        lo, hi = row["budget"]["train_points"]
        rows.append(
            [
                f"convex hull n={row['n']} (trained on {lo}..{hi})",
                "exact polygons (area coverage)",
                f"{100 * row['exact_accuracy']:.1f} % ({100 * row['area_coverage']:.1f} %)",
                f"{acc} ({area}), trained on 5..50",
                _budget_text(row["budget"], device),
            ]
        )
    for row in data.get("tsp", {}).get("results", []):
        if ("tsp", row["n"]) in replaced:
            continue
        optimal, ptr = PUBLISHED_TSP.get(row["n"], ("\u2013", "\u2013"))
        rows.append(
            [
                f"TSP n={row['n']}",
                f"mean tour: optimal / greedy / beam {row['beam_width']}",
                f"{row['optimal']:.2f} / {row['greedy']:.2f} / {row['beam']:.2f}",
                f"optimal {optimal}, Ptr-Net {ptr}",
                _budget_text(row["budget"], device),
            ]
        )
    rows.extend(budget_rows[task] for task in BUDGET_HEADLINE if task in budget_rows)
    return rows


TRANSDUCTION_SECTIONS = {
    "transduction_short": (
        "Short training, far tests",
        "Trained on {n_train} plain NumPy strings over {{a, b}} of lengths {train} (not "
        "drawn with `skptr.datasets`), tested on {n_test} strings per length range. The "
        "targets: coarse accuracy at least 0.99 on 1-10 and 0.95 on 11-20, fine accuracy "
        "at least 0.95 on 41-64 and 0.90 on 65-128, on every seed.",
    ),
    "transduction_grefenstette": (
        "Grefenstette et al. (2015) protocol",
        "Trained on {n_train} pairs of `make_transduction` with sources of {train} "
        "tokens, tested on {n_test} longer sources per range (the paper trains on 8-64 "
        "and tests on 65-128). Published: the paper's Fig. 2a, whose `memory=None` column "
        "is their best deep LSTM.",
    ),
    "transduction_deletang": (
        "Delétang et al. (2023) protocol",
        "Trained on {n_train} plain NumPy strings over {{a, b}} of lengths {train}, tested "
        "on {n_test} strings per range (the paper trains on 1-40 and tests on 41-500). "
        "Their metric is the per-token accuracy, the share of target positions predicted "
        "right; ours decodes autoregressively, which is harder, since one error can shift "
        "every later token. Published: reverse string Stack-RNN 100 %, LSTM about 61 %; "
        "duplicate string near chance for both, 100 % only for a tape model with a "
        "hand-built jump action.",
    ),
}
PUBLISHED_DELETANG = {("reversal", "stack"): "100 %", ("reversal", "none"): "61 %"}


def _transduction_summary(rows):
    """Rows (task, memory, per test range: mean and worst seed, published, budget)."""
    groups = {}
    for row in rows:
        changed = tuple(sorted(row.get("params", {}).items()))
        groups.setdefault((row["task"], row["memory"], changed), []).append(row)
    summary = []
    for (task, memory, changed), members in groups.items():
        protocol = members[0]["protocol"]
        cells = []
        for lengths in members[0]["tests"]:
            metric = "token" if protocol == "deletang" else "fine"
            coarse = [r["tests"][lengths]["coarse"] for r in members]
            value = [r["tests"][lengths][metric] for r in members]
            cells.append(
                f"{statistics.mean(coarse):.2f} / {statistics.mean(value):.2f} "
                f"(worst {min(coarse):.2f} / {min(value):.2f})"
            )
        if protocol == "grefenstette":
            published = PUBLISHED_TRANSDUCTION.get(task, ("\u2013",) * 4)[MEMORY_COLUMN[memory]]
        elif protocol == "deletang":
            published = PUBLISHED_DELETANG.get(
                (task, memory), "near chance" if task == "duplicate" else "\u2013"
            )
        else:
            published = "\u2013"
        n_inits = [max(1, len(r["init_scores"])) for r in members]
        name = TASK_NAMES.get(task, task)
        if changed:
            name += " (" + ", ".join(f"`{key}={value!r}`" for key, value in changed) + ")"
        summary.append(
            [
                name,
                memory,
                *cells,
                published,
                f"{len(members)}",
                f"{statistics.mean(r['fit_s'] for r in members):.0f} s "
                f"({statistics.mean(n_inits):.1f} init.)",
            ]
        )
    return summary


def _transduction_blocks(section, title, text, short):
    """Heading, text and table of one transduction protocol's saved section."""
    blocks = []
    rows = section["results"]
    backend = {"tensorflow": "TensorFlow", "jax": "JAX"}[section["device"]["keras_backend"]]
    text = text.format(
        n_train=f"{rows[0]['n_train']:,}",
        train="{}-{}".format(*rows[0]["train_lengths"]),
        n_test=section["config"]["n_test"],
    )
    blocks.append(heading(f"Transduction: {title} ({backend})", 2))
    metric = "per-token" if rows[0]["protocol"] == "deletang" else "fine"
    blocks.append(
        para(
            f"{text} Defaults of `NeuralStackTransducer`, {backend} on {short}, skptr at "
            f"{section['device'].get('skptr_commit', '?')}. Cells are coarse / "
            f"{metric} accuracy, the mean over the seeds ({len({r['seed'] for r in rows})}) "
            "and, in brackets, the worst seed. `fit` is the mean fit time and "
            "the mean number of initialisations tried (of `n_init`). A task followed by "
            "settings in brackets was fitted with those instead of the defaults. "
            + section.get("note", "")
        )
    )
    blocks.append(
        table(
            [
                "task",
                "memory",
                *(f"lengths {k}" for k in rows[0]["tests"]),
                "published",
                "seeds",
                "fit",
            ],
            _transduction_summary(rows),
        )
    )
    return blocks


def _svo_error_blocks(section):
    """Heading, text and table of the ``svo_errors`` section."""
    rows = section["results"]
    backend = {"tensorflow": "TensorFlow", "jax": "JAX"}[section["device"]["keras_backend"]]
    settings = rows[0]["params"]
    blocks = [heading(f"SVO to SOV: where the outputs go wrong ({backend})", 3)]
    blocks.append(
        para(
            "`NeuralStackTransducer(memory='deque')` with "
            + (", ".join(f"`{k}={v!r}`" for k, v in settings.items()) or "its defaults")
            + f", fitted as in the Grefenstette protocol above ({backend}, skptr at "
            f"{section['device'].get('skptr_commit', '?')}), predicts new sentences "
            "drawn by `make_transduction`: those of 65-128 words are the protocol's test "
            "sentences of the same seed. The target is the source with its main verb "
            "moved to the end. Each output is right up to its last word or wrong earlier; "
            "of the first, the columns count the exact ones and what the last word is "
            "instead of the main verb. `by depth` gives, for each nesting depth of the "
            "subject's relative clauses, the main verb's errors among the outputs right up "
            "to it. " + section.get("note", "")
        )
    )
    body = [
        [
            r["seed"],
            r["test_lengths"],
            r["n_test"],
            r["right up to the last word"],
            r["exact"],
            r["last word a verb of the subject's relative clauses"],
            r["last word a verb of the object's relative clauses"],
            r["last word another verb"] + r["last word not a verb"],
            r["last word missing"],
            r["wrong earlier"],
            ", ".join(
                f"{depth}: {wrong}/{total}"
                for depth, (wrong, total) in r["main verb wrong by subject depth"].items()
            ),
            f"{r['final_loss']:.3f} after {r['epochs']} epochs",
        ]
        for r in rows
    ]
    blocks.append(
        table(
            [
                "seed",
                "words",
                "sentences",
                "right up to the last word",
                "exact",
                "last word: a verb of the subject's clauses",
                "of the object's",
                "other",
                "missing",
                "wrong earlier",
                "by depth",
                "training loss",
            ],
            body,
        )
    )
    return blocks


def _jax_versions(data):
    """The JAX versions of this machine's result files (not of the GPU host's)."""
    return {
        d["device"]["jax"]
        for key, d in data.items()
        if "jax" in d.get("device", {}) and not key.startswith(f"{GPU_FOLDER}/")
    }


def _backend_comparison(data):
    """Rows (measurement, TensorFlow, JAX, ratio) for the speeds measured on both."""
    comparison = []

    def add(name, unit, tf_value, jax_value, higher_is_faster=True):
        if tf_value is None or jax_value is None:
            return
        ratio = jax_value / tf_value if higher_is_faster else tf_value / jax_value
        comparison.append(
            [name, f"{tf_value:,.{unit}f}", f"{jax_value:,.{unit}f}", f"\u00d7{ratio:.2f}"]
        )

    def pairs(section, key):
        rows = _speed_rows(data, section) if section in data else []
        by_key = {}
        for row in rows:
            by_key.setdefault(key(row), {})[row["backend"]] = row
        return [(k, v) for k, v in by_key.items() if {"tensorflow", "jax"} <= set(v)]

    for (task, hidden), both in pairs("pointer_speed", lambda r: (r["task"], r["hidden_size"])):
        tf, jx = both["tensorflow"], both["jax"]
        name = f"pointer {TASK_NAMES[task]}, h={hidden}"
        add(f"{name}: training, seq/s", 0, tf["train_seq_per_s"], jx["train_seq_per_s"])
        decoders = [k for k in tf if k.startswith(("greedy", "beam")) and k.endswith("_seq_per_s")]
        for key in decoders:
            label = key[: -len("_seq_per_s")].replace("beam", "beam ")
            add(f"{name}: {label} decoding, seq/s", 0, tf[key], jx.get(key))
    for (memory, length), both in pairs("transducer_speed", lambda r: (r["memory"], r["length"])):
        tf, jx = both["tensorflow"], both["jax"]
        name = f"transducer {memory}, length {length}"
        add(f"{name}: training, seq/s", 1, tf["train_seq_per_s"], jx["train_seq_per_s"])
        add(f"{name}: decoding, seq/s", 1, tf["decode_seq_per_s"], jx["decode_seq_per_s"])
    for estimator, both in pairs("sklearn_overhead", lambda r: r["estimator"]):
        tf, jx = both["tensorflow"], both["jax"]
        add(f"{estimator}: cold first fit, s", 1, tf["cold_fit_s"], jx["cold_fit_s"], False)
        add(
            f"{estimator}: warm `est.fit`, s",
            2,
            tf["estimator_fit_s"],
            jx["estimator_fit_s"],
            False,
        )
    return comparison


def _precision_blocks(rows, where, level):
    """The table of the precision section's rows."""
    first = rows[0]
    blocks = [heading(f"Mixed precision {where}", level)]
    blocks.append(
        para(
            "Each model trained from the same data and `random_state` under each "
            "`dtype_policy` (float32 weights, 16-bit computation for the mixed ones): "
            f"{first['epochs']} epochs of {first['n_train']:,} samples, hidden size "
            f"{first['hidden_size']}, then scored on {first['n_test']:,} inputs drawn "
            f"with NumPy (pointer network: {first.get('length', 10)} points sorted by their "
            "first coordinate; transducer: reversal of strings of 1-"
            f"{first.get('length', 10)} letters out of 8). Throughputs are "
            "medians of one-epoch fits and `predict` calls interleaved across the "
            "policies; the ratios compare each policy with float32 at the same batch size."
        )
    )
    body = [
        [
            r["backend"],
            r["accelerator"],
            r["model"],
            r["batch_size"],
            r["policy"],
            f"{r['train_seq_per_s']:,.0f} (\u00d7{r['train_vs_float32']:.2f})",
            f"{r['greedy_seq_per_s']:,.0f} (\u00d7{r['greedy_vs_float32']:.2f})",
            f"{r['exact']:.3f}",
            f"{r['first_fit_s']:.1f}",
        ]
        for r in rows
    ]
    blocks.append(
        table(
            [
                "backend",
                "device",
                "model",
                "batch",
                "dtype_policy",
                "training, seq/s",
                "greedy, seq/s",
                "exact",
                "first fit, s",
            ],
            body,
        )
    )
    return blocks


def _restarts_table(rows):
    """The ``transducer_restarts`` rows: fit seconds of each ``n_init``."""
    body = [
        [
            r["backend"],
            r["n_init"],
            _population_label(r),
            r["runs"],
            f"{r['n_samples']:,} \u00d7 {r['epochs']}",
            _seconds_and_spread(r),
            f"\u00d7{r['ratio']:.2f}",
        ]
        for r in rows
    ]
    return table(
        ["backend", "n_init", "trained", "runs", "samples \u00d7 epochs", "fit, s", "vs first"],
        body,
    )


def _seconds_and_spread(row):
    """A row's median fit seconds, and the range of its repeats when there are several."""
    seconds = row.get("fit_seconds", [])
    if len(seconds) < 2:
        return f"{row['fit_s']:.1f}"
    return f"{row['fit_s']:.1f} ({min(seconds):.1f}-{max(seconds):.1f})"


def _population_label(row):
    """How a ``transducer_restarts`` row trained its runs (rows measured before
    ``population`` existed trained them one after another)."""
    if row["n_init"] == 1:
        return "alone"
    return "side by side" if row.get("population") is True else "one after another"


def _gpu_blocks(data):
    """The rows measured on a GPU host: ``benchmarks/results/gpu/``."""
    gpu = {key.split("/", 1)[1]: value for key, value in data.items() if "/" in key}
    if not gpu:
        return [
            heading("On a GPU", 2),
            para("No GPU rows have been measured (`benchmarks/results/gpu/` is empty)."),
        ]
    device = next(v["device"] for v in gpu.values() if "device" in v)
    blocks = [heading(f"On one GPU ({device['accelerator']}, {device['keras_backend']})", 2)]
    blocks.append(
        para(
            f"Measured on a host with one {device['accelerator']}, "
            f"{device['cpu_cores']} CPU cores, JAX {device.get('jax')} and Keras "
            f"{device['keras']}, with `python -m benchmarks --backend jax --output DIR "
            "--set ...` (the budgets changed by `--set` are in each file's `config`) and "
            "copied to `benchmarks/results/gpu/`. That host had no TensorFlow, so there are "
            "no TensorFlow GPU rows. Ratios compare models measured in the same run."
        )
    )
    if "precision.jax" in gpu:
        blocks += _precision_blocks(gpu["precision.jax"]["results"], "on the GPU", 3)
    if "pointer_speed.jax" in gpu:
        blocks.append(heading("Pointer network against a plain Keras model on the GPU", 3))
        blocks.append(
            para(
                "As in the CPU table: one-epoch fits of the estimator's network and of a "
                "plain Keras encoder-decoder of the same size (batch 128), interleaved, "
                "and `predict`; ratios above 1: skptr is faster."
            )
        )
        body = [
            [
                r["task"],
                r["hidden_size"],
                f"{r['n_train']:,}",
                f"{r['train_seq_per_s']:,.0f}",
                f"{r['reference_train_seq_per_s']:,.0f}",
                f"\u00d7{r['train_ratio']:.2f}",
                f"{r['greedy_seq_per_s']:,.0f}",
                f"\u00d7{r['greedy_ratio']:.2f}",
                f"{r.get('beam3_seq_per_s', float('nan')):,.0f}",
            ]
            for r in gpu["pointer_speed.jax"]["results"]
        ]
        blocks.append(
            table(
                [
                    "task",
                    "hidden",
                    "sequences",
                    "training, seq/s",
                    "plain Keras, seq/s",
                    "ratio",
                    "greedy, seq/s",
                    "ratio",
                    "beam 3, seq/s",
                ],
                body,
            )
        )
    if "transducer_speed.jax" in gpu:
        blocks.append(heading("Transducer on the GPU", 3))
        body = [
            [
                r["length"],
                r["memory"] or "none (LSTM only)",
                f"{r['n_train']} / {r['batch_size']}",
                f"{r['train_seq_per_s']:,.0f}",
                f"{r['decode_seq_per_s']:,.0f}",
            ]
            for r in gpu["transducer_speed.jax"]["results"]
        ]
        blocks.append(
            table(
                ["length", "memory", "samples / batch", "training, seq/s", "greedy, seq/s"],
                body,
            )
        )
    if "transducer_decoding.jax" in gpu:
        body = [
            [
                r["memory"],
                r["strengths"],
                f"{r['length']:,}",
                f"{r['first_call_s']:.2f}",
                f"{r['seconds']:.3f}",
            ]
            for r in gpu["transducer_decoding.jax"]["results"]
        ]
        blocks.append(
            table(["memory", "strengths", "input tokens", "first call, s", "then, s"], body)
        )
    if "transducer_restarts.jax" in gpu:
        blocks.append(heading("Transducer: the cost of several initialisations on the GPU", 3))
        blocks.append(
            para(
                "Random targets (every initialisation runs to the end), sources of 8-64 "
                "tokens (streams of up to 130 steps) unless said otherwise, one fit "
                "each. One after another, the eight runs share the compiled step, and "
                "each costs little beside "
                "the first fit's compiling. Side by side, as one population "
                "(the removed `population=True`), compiling the population's step cost "
                "more than the runs it saved. " + gpu["transducer_restarts.jax"].get("note", "")
            )
        )
        blocks.append(_restarts_table(gpu["transducer_restarts.jax"]["results"]))
    if "hull50_budget" in gpu:
        row = gpu["hull50_budget"]
        first = row["curve"][0]
        cpu = [
            r["greedy"]["exact"]
            for r in data.get("pointer_budget", {}).get("results", [])
            if r["task"] == "hull50" and r.get("settings") == row["settings"]
        ]
        cpu_text = (
            f"the CPU reached {min(cpu):.3f}-{max(cpu):.3f} in "
            f"{data['pointer_budget']['config']['seconds']['hull50']:,} s; "
            if cpu
            else ""
        )
        blocks.append(heading("Convex hull n=50 under a budget on the GPU", 3))
        blocks.append(
            para(
                f'The `pointer_budget` row of hull-50 with the "{row["settings"]}" '
                f"preset (`random_state={row.get('random_state', 0)}`), with a budget of "
                f"{row['budget_s']} s: exact share "
                f"{row['greedy']['exact']:.3f} greedy, {row['beam3']['exact']:.3f} beam 3 "
                f"after {row['epochs']} epochs of {row['n_train']:,} hulls ({cpu_text}"
                f"published: {PUBLISHED_HULL[50][0]} trained on 5-50 points). The first "
                "epoch ended after "
                f"{first['seconds']:.0f} s and each later one took about "
                f"{_later_epoch_seconds(row):.1f} s: "
                "on JAX the batches cut to their longest sample compile one step per pair "
                "of cut lengths, so most of the first epoch was compiling, not training."
            )
        )
    if "hull50_batches" in gpu:
        blocks += _gpu_batches_blocks(gpu["hull50_batches"])
    return blocks


def _later_epoch_seconds(row):
    """Mean training seconds of a budget row's epochs after the first."""
    curve = row["curve"]
    return (curve[-1]["seconds"] - curve[0]["seconds"]) / max(row["epochs"] - 1, 1)


def _gpu_batches_blocks(section):
    """Hull-50 on the GPU in cut and in padded batches (``benchmarks.gpu_batches``)."""
    body = []
    for row in section["results"]:
        body.append(
            [
                row["settings"],
                row["batches"],
                f"{row['curve'][0]['seconds']:.0f}",
                f"{_later_epoch_seconds(row):.1f}",
                str(row["epochs"]),
                f"{row['greedy']['exact']:.3f}",
                f"{row['beam3']['exact']:.3f}",
            ]
        )
    row = section["results"][0]
    return [
        heading("Cut or padded batches on the GPU", 3),
        para(
            f"The hull-50 pool ({row['n_train']:,} hulls of 5-50 points), "
            f"`random_state={row['random_state']}`, {row['budget_s']} s of training, "
            "each row in its own process (`python -m benchmarks.gpu_batches`); "
            "'later' is the mean time of the later epochs, in seconds. Cut batches "
            "compile one step per pair of cut lengths and run no faster than padded "
            "ones, so JAX pads them on a GPU or TPU (see the compile policy). " + section["note"]
        ),
        table(
            ["settings", "batches", "first epoch, s", "later", "epochs", "greedy", "beam 3"],
            body,
        ),
    ]


def build_blocks(data, run):
    """The report as a list of blocks."""
    device = run.get("device") or next(iter(data.values()), {}).get("device", {})
    short = _device_short(device)
    blocks = [heading("Benchmarks", 1)]
    blocks.append(
        para(
            "Generated by `python -m benchmarks` (`make bench`) from the result files in "
            "`benchmarks/results/`; do not edit by hand. Speed ratios compare models "
            "measured in the same run with interleaved repeats, so they are more reliable "
            "than the absolute numbers on a shared machine. Quality rows use CPU budgets "
            "far below the papers' (which train on up to a million examples per task); "
            "each row states its budget."
        )
    )
    blocks.append(heading("Running the benchmarks", 2))
    blocks.append(
        para(
            "`make bench` (or `python -m benchmarks`) runs every section below and writes "
            "`benchmarks/results/*.json`, this report and its plots; `--only SECTION ...` "
            "reruns some sections and `--report-only` rebuilds the report from the saved "
            "results. `make bench ARGS=--quick` runs every section on tiny budgets in a "
            "few minutes, as the CI smoke test, and writes to `benchmarks/results/quick/` "
            "instead. `--backend jax` measures on Keras' JAX backend and writes "
            "`SECTION.jax.json`; the speed tables show the rows of both backends (`make "
            "bench` runs the speed sections on both). A GPU is used automatically when the "
            "backend sees one, and the device is recorded with the results. The PyTorch "
            "reference of `pointer_vs_torch` runs when PyTorch is installed in the same "
            "environment (`pip install torch`), and the TSP-20 row of `pointer_budget` "
            "when the `elkai` package (LKH-3) is (`pip install elkai`); skptr depends on "
            "neither."
        )
    )
    sections = run.get("sections", {})
    total = sum(s["wall_s"] for s in sections.values())
    blocks.append(heading("Machine and run", 2))
    blocks.append(
        table(
            ["item", "value"],
            [
                ["mode", run.get("mode", "?")],
                ["CPU", f"{device.get('cpu')} ({device.get('cpu_cores')} logical cores)"],
                ["accelerator", device.get("accelerator")],
                [
                    "software",
                    f"TensorFlow {device.get('tensorflow')}, "
                    + "".join(f"JAX {v}, " for v in sorted(_jax_versions(data)))
                    + f"Keras {device.get('keras')} "
                    f"({device.get('keras_backend')}), scikit-learn {device.get('scikit-learn')}, "
                    f"NumPy {device.get('numpy')}, Python {device.get('python')}",
                ],
                [
                    "load average at start / end (1 min)",
                    f"{device.get('load_average_1min')} / {run.get('load_average_end')}",
                ],
                ["wall time of all sections", f"{total / 60:.1f} min"],
            ]
            + [
                [
                    f"— {name}",
                    f"{s['wall_s']:.0f} s, finished {s.get('finished', '?')}, skptr at "
                    f"{s.get('skptr_commit') or 'an unrecorded commit'}",
                ]
                for name, s in sections.items()
            ],
        )
    )

    headline = _headline(data, short)
    if headline:
        blocks.append(heading("Headline: quality next to the published numbers", 2))
        blocks.append(table(["task", "metric", "skptr", "published", "our budget"], headline))

    comparison = _backend_comparison(data)
    if comparison:
        blocks.append(heading("Backends compared", 2))
        blocks.append(
            para(
                "The same measurements on Keras' TensorFlow and JAX backends, on this "
                "machine (ratio = JAX / TensorFlow; above 1: JAX is faster)."
            )
        )
        blocks.append(table(["measurement", "TensorFlow", "JAX", "JAX / TF"], comparison))

    for section in ("pointer_vs_torch", "pointer_vs_torch.jax"):
        if section in data:
            blocks += _torch_blocks(data[section])
    if "pointer_budget" in data:
        blocks += _budget_blocks(data["pointer_budget"])
    if "pointer_speed" in data:
        rows = _speed_rows(data, "pointer_speed")
        blocks.append(heading("Pointer network speed", 2))
        blocks.append(
            para(
                "Sequences per second, batch 128 for training (teacher-forced, one epoch of "
                f"{rows[0]['n_train']:,} sequences per repeat, median of "
                f"{len(rows[0]['train_seconds']['pointer'])} repeats after a warm-up epoch "
                "that traces the step) and the estimator's `predict` for inference "
                f"({rows[0]['n_infer']:,} sequences in the estimator's decoding batches; the "
                f"reference decodes in batches of {rows[0]['predict_batch_size']}). The "
                "reference is a plain Keras bidirectional-LSTM encoder and LSTM decoder "
                "with a softmax over positions, of the same sizes, trained on the same "
                "arrays and decoded greedily in a compiled loop; ratio = pointer / "
                "reference (above 1: the pointer network is faster). `work` is the "
                "reference's multiply-adds per sequence over the pointer network's (the "
                "matrix products of a teacher-forced forward pass on the padded shapes "
                "both train on, `benchmarks._reference.multiply_adds_per_sequence`): the "
                "pointer decoder reads the encodings, as wide as its state, where the "
                "reference's reads the chosen element, and the encoder reads an embedding "
                "of each element; a training ratio near `work` is the same speed per "
                "multiply-add."
            )
        )
        beams = [k[:-10] for k in rows[0] if k.startswith("beam") and k.endswith("_seq_per_s")]
        header = [
            "backend",
            "task",
            "hidden",
            "train",
            "ref. train",
            "ratio",
            "work",
            "greedy",
            "ref. greedy",
            "ratio",
        ]
        header += [f"beam {b[4:]}" for b in beams]
        body = []
        for r in rows:
            body.append(
                [
                    r["backend"],
                    TASK_NAMES[r["task"]],
                    r["hidden_size"],
                    _fmt(r["train_seq_per_s"]),
                    _fmt(r["reference_train_seq_per_s"]),
                    f"\u00d7{r['train_ratio']:.2f}",
                    f"\u00d7{r['work_ratio']:.2f}",
                    _fmt(r["greedy_seq_per_s"]),
                    _fmt(r["reference_greedy_seq_per_s"]),
                    f"\u00d7{r['greedy_ratio']:.2f}",
                ]
                + [_fmt(r.get(f"{b}_seq_per_s")) for b in beams]
            )
        blocks.append(table(header, body))
        blocks.append(figure("pointer_speed.png", "pointer network throughput"))

    if "transducer_speed" in data:
        rows = _speed_rows(data, "transducer_speed")
        blocks.append(heading("Transducer speed", 2))
        blocks.append(
            para(
                "Copy task with sources of exactly the given length (vocabulary 8, hidden "
                "32, memory width 32), batch 32. Training: teacher-forced epochs, compiled "
                "as the backend's compile policy compiles a fit of 100 steps: a traced "
                "graph without XLA on TensorFlow (the estimator turns XLA on from 400 "
                "steps, over sequences of at most 128 steps, whose XLA compile takes "
                "about 110 s at 257 steps), `jit` on JAX. Decoding: the "
                "estimator's greedy `predict` with at most length + 1 output tokens. "
                "Ratios are to `memory=None` at the same length. Models are barely "
                "trained, so decoding may stop early: `out len` is the mean number of "
                "tokens produced."
            )
        )
        body = [
            [
                r["backend"],
                r["memory"],
                r["length"],
                _fmt(r["train_seq_per_s"], 1),
                f"\u00d7{r.get('train_ratio_to_none', float('nan')):.2f}",
                _fmt(r["decode_seq_per_s"], 1),
                f"\u00d7{r.get('decode_ratio_to_none', float('nan')):.2f}",
                f"{r['mean_output_length']:.1f}",
            ]
            for r in sorted(rows, key=lambda r: (r["length"], r["memory"]))
        ]
        blocks.append(
            table(
                [
                    "backend",
                    "memory",
                    "length",
                    "train seq/s",
                    "vs none",
                    "decode seq/s",
                    "vs none",
                    "out len",
                ],
                body,
            )
        )
        exponents = []
        for backend in dict.fromkeys(r["backend"] for r in rows):
            of_backend = [r for r in rows if r["backend"] == backend]
            train_exp = growth_exponents(of_backend, "train_seq_per_s")
            decode_exp = growth_exponents(of_backend, "decode_seq_per_s")
            exponents += [
                [backend, m, _fmt(train_exp[m], 2), _fmt(decode_exp[m], 2)] for m in train_exp
            ]
        blocks.append(
            table(
                ["backend", "memory", "growth exponent, training", "growth exponent, decoding"],
                exponents,
            )
        )
        blocks.append(
            para(
                "The growth exponent is the slope of log(seconds per sequence) against "
                "log(length): 1 is linear in the length, 2 quadratic."
            )
        )
        blocks.append(figure("transducer_speed.png", "transducer time per sequence"))

    if any(k.startswith("transducer_restarts") for k in data):
        rows = _speed_rows(data, "transducer_restarts")
        blocks.append(heading("Transducer: the cost of several initialisations", 3))
        blocks.append(
            para(
                "`fit` with `n_init` initialisations against one, on random targets that no "
                "initialisation can learn, so that every one runs to the end "
                "(`gate_noise_start=0.6`: `n_init` runs, not up to twice as many). With more "
                "than one, each run trains on 90 % of the samples and is scored on the rest. "
                "The runs train one after another; rows marked side by side were trained "
                "as one batched population by the since removed `population=True`. With several "
                "repeats, the configurations take turns, the table gives the median fit and "
                "the range in brackets, and the ratio is that of the medians; a JAX process "
                "compiles each step once, so only its first repeat compiles."
            )
        )
        blocks.append(_restarts_table(rows))

    if any(k.startswith("two_devices") for k in data):
        rows = _speed_rows(data, "two_devices")
        blocks.append(heading("One device against two virtual CPU devices", 3))
        blocks.append(
            para(
                '`devices=None` against `devices="all"` over two virtual CPU devices '
                "(JAX: `--xla_force_host_platform_device_count=2`; TensorFlow: two logical "
                "CPU devices and a `MirroredStrategy`), in one process, same data and "
                "`random_state`; the last column is the share of test inputs for which "
                "both models, apart only by float rounding, predict the same. On JAX, "
                'the rows "2, two processes" fit the same models over two processes '
                "of a multi-process runtime on this machine (`keras.distribution."
                "initialize`, one CPU device each), each feeding half of every batch. "
                "The two devices share the same cores, so these rows show that every "
                "batch is split and what the split costs, not a speed-up. No GPU was "
                "available for these measurements."
            )
        )
        body = [
            [
                r["backend"],
                r["model"],
                f"{r['replicas']}, two processes"
                if r.get("devices") == "two processes"
                else r["replicas"],
                f"{r['train_seq_per_s']:,.0f}",
                f"{r['greedy_seq_per_s']:,.0f}",
                f"{r['agreement']:.1%}",
            ]
            for r in rows
        ]
        blocks.append(
            table(
                [
                    "backend",
                    "model",
                    "devices",
                    "training, seq/s",
                    "greedy, seq/s",
                    "same predictions as one device",
                ],
                body,
            )
        )

    if any(k.startswith("precision") for k in data):
        blocks += _precision_blocks(_speed_rows(data, "precision"), "on this machine's CPU", 3)

    if any(k.startswith("transducer_decoding") for k in data):
        rows = _speed_rows(data, "transducer_decoding")
        blocks.append(heading("Transducer: decoding one long input", 3))
        blocks.append(
            para(
                "`predict` on one input of n tokens whose n output tokens all run (the end "
                "token is made unreachable): 2n + 1 steps. With rounded strengths (the "
                "default `snap_gates`) the decoder runs the discrete stack, queue or deque, "
                "whose steps cost the same at any length; with soft ones every step reads "
                "and writes every slot of the continuous memory. First call (tracing and "
                "compiling included) and the median of the following ones, in seconds."
            )
        )
        body = [
            [
                r["backend"],
                r["memory"],
                r["strengths"],
                f"{r['length']:,}",
                f"{r['first_call_s']:.2f}",
                f"{r['seconds']:.3f}",
            ]
            for r in rows
        ]
        blocks.append(
            table(["backend", "memory", "strengths", "tokens", "first call, s", "then, s"], body)
        )
        exponents = []
        for backend in dict.fromkeys(r["backend"] for r in rows):
            of_backend = [r for r in rows if r["backend"] == backend]
            for (memory, strengths), exponent in decoding_exponents(of_backend).items():
                lengths = [
                    r["length"]
                    for r in of_backend
                    if (r["memory"], r["strengths"]) == (memory, strengths)
                ]
                span = f"{min(lengths):,}-{max(lengths):,}"
                exponents.append([backend, memory, strengths, span, _fmt(exponent, 2)])
        blocks.append(
            table(["backend", "memory", "strengths", "tokens", "growth exponent"], exponents)
        )

    if "sklearn_overhead" in data:
        rows = _speed_rows(data, "sklearn_overhead")
        blocks.append(heading("Overhead of the scikit-learn layer", 2))
        blocks.append(
            para(
                "`est.fit` (warm start: the network is already built and traced) against "
                "`est.network_.fit` on the same network, data and epochs, median of "
                "repeats. To attribute the difference, the estimator's data validation "
                "and encoding are also timed alone. The cold first `fit` also builds "
                "the network and traces its training step."
            )
        )
        blocks.append(
            table(
                [
                    "backend",
                    "estimator",
                    "samples \u00d7 epochs",
                    "`est.fit`",
                    "`network_.fit`",
                    "overhead",
                    "data preparation",
                    "cold first fit",
                ],
                [
                    [
                        r["backend"],
                        r["estimator"],
                        f"{r['n_samples']:,} \u00d7 {r['epochs']}",
                        f"{r['estimator_fit_s']:.2f} s",
                        f"{r['keras_fit_s']:.2f} s",
                        f"{r['overhead_s']:+.2f} s ({r['overhead_percent']:+.1f} %)",
                        _seconds(r.get("prepare_data_s")),
                        f"{r['cold_fit_s']:.1f} s",
                    ]
                    for r in rows
                ],
            )
        )

    if "sort8_curves" in data:
        section = data["sort8_curves"]["results"]
        blocks.append(heading("Sort 8 digits: pointer vs seq2seq", 2))
        blocks.append(
            para(
                "The seed task: 8 digits in 0..9 sorted descending, held-out accuracy after "
                "each epoch (greedy decoding; equal digits are interchangeable). "
                f"Budget: {_budget_text(section['budget'], short)} for all three models. "
                "The seq2seq models are the Keras references above (softmax over 8 fixed "
                "positions; the attention variant adds a dot-product attention over the "
                "encoder outputs)."
            )
        )
        curves = section["curves"]
        body = []
        for name, curve in curves.items():
            body.append(
                [
                    name,
                    f"{curve['position_accuracy'][-1]:.3f}",
                    f"{curve['sequence_accuracy'][-1]:.3f}",
                    f"{sum(curve['train_s']):.0f} s",
                ]
            )
        blocks.append(table(["model", "position acc.", "sequence acc.", "training time"], body))
        blocks.append(figure("sort8_curves.png", "sort-8 accuracy per epoch"))

    for protocol, (title, text) in TRANSDUCTION_SECTIONS.items():
        for section in (protocol, f"{protocol}.jax"):
            if section in data:
                blocks.extend(_transduction_blocks(data[section], title, text, short))
    for section in ("svo_errors", "svo_errors.jax"):
        if section in data:
            blocks.extend(_svo_error_blocks(data[section]))

    blocks += _gpu_blocks(data)
    blocks.append(heading("Method notes", 2))
    blocks.append(
        para(
            "Label formats follow the papers: convex hulls are the hull vertices "
            "counter-clockwise from the lowest index (exact accuracy compares the whole "
            "ordering), area coverage is the area of the convex hull of the predicted "
            "vertices over the true hull's area (scipy), TSP labels are optimal tours from "
            "city 0 (Held-Karp) and tour lengths are closed. Float sorting is ascending. "
            "Coarse accuracy is the share of outputs entirely right, fine accuracy the "
            "mean share of each target produced before the first error."
        )
    )
    blocks.append(heading("References", 2))
    blocks.append(
        para(
            "O. Vinyals, M. Fortunato and N. Jaitly, *Pointer Networks*, NeurIPS 2015 "
            "(convex hull and TSP). O. Vinyals, S. Bengio and M. Kudlur, *Order Matters: "
            "Sequence to Sequence for Sets*, ICLR 2016 (float sorting). E. Grefenstette, "
            "K. M. Hermann, M. Suleyman and P. Blunsom, *Learning to Transduce with "
            "Unbounded Memory*, NeurIPS 2015 (transduction). G. Delétang et al., *Neural "
            "Networks and the Chomsky Hierarchy*, ICLR 2023 (length generalisation to 500)."
        )
    )
    return blocks


def write_report(output, docs=False):
    """Write the plots and the markdown report (and, optionally, the docs page).

    Parameters
    ----------
    output : path-like
        The results folder.
    docs : bool, default=False
        Also write ``docs/benchmarks.rst``.

    Returns
    -------
    list of Path
        The files written.
    """
    output = Path(output)
    data, run = _load(output)
    written = []
    if "pointer_budget" in data:
        _plot_budget(data["pointer_budget"]["results"], output / "pointer_budget.png")
        written.append(output / "pointer_budget.png")
    if "pointer_speed" in data:
        _plot_pointer_speed(_speed_rows(data, "pointer_speed"), output / "pointer_speed.png")
        written.append(output / "pointer_speed.png")
    if "transducer_speed" in data:
        _plot_transducer_speed(
            _speed_rows(data, "transducer_speed"), output / "transducer_speed.png"
        )
        written.append(output / "transducer_speed.png")
    if "sort8_curves" in data:
        _plot_sort8(data["sort8_curves"]["results"]["curves"], output / "sort8_curves.png")
        written.append(output / "sort8_curves.png")
    blocks = build_blocks(data, run)
    (output / "README.md").write_text(_to_markdown(blocks))
    written.append(output / "README.md")
    if docs:
        relative = Path("..") / output.resolve().relative_to(DOCS_PAGE.parent.parent.resolve())
        DOCS_PAGE.write_text(_to_rst(blocks, f"{relative.as_posix()}/"))
        written.append(DOCS_PAGE)
    return written
