"""Turn saved benchmark results into plots, a Markdown report and the docs page.

The report's text is the template ``report.md.jinja``; this module computes its table
rows and the numbers its prose quotes from the result files, renders it to Markdown
(``README.md`` beside the results) and converts that to reStructuredText
(``docs/benchmarks.rst``). ``findings.md``, short measurements kept outside the tables,
becomes the report's "Other measurements" section.
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import numpy as np

from skptr._backend import SUPPORTED_BACKENDS

from ._common import read_json
from .speed import decoding_exponents, growth_exponents

__all__ = ["write_report"]

DOCS_PAGE = Path(__file__).parent.parent / "docs" / "benchmarks.rst"
TEMPLATE = "report.md.jinja"
FINDINGS = Path(__file__).parent / "findings.md"

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


# ------------------------------------------------------------------------ rendering
def _table(header, rows):
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _figure(filename, alt):
    return f"![{alt}]({filename})"


def render_markdown(context):
    """The report in Markdown, from the template and ``context``."""
    import jinja2

    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    template = environment.get_template(TEMPLATE)
    lines = []
    for line in template.render(**context, table=_table, figure=_figure).splitlines():
        previous = lines[-1] if lines else ""
        starts_block = line.startswith(("#", "![")) or line.startswith("|") != previous.startswith(
            "|"
        )
        if previous and line and (starts_block or previous.startswith("#")):
            lines.append("")
        if line or previous:
            lines.append(line)
    return "\n".join(lines).strip() + "\n"


def _rst_inline(text):
    """Markdown code spans and links as reStructuredText (emphasis is the same)."""
    parts = text.split("`")
    text = "".join(p if i % 2 == 0 else f"``{p}``" for i, p in enumerate(parts))
    return re.sub(r"\[([^\]]+)\]\(([^)]+)\)", r"`\1 <\2>`_", text)


def markdown_to_rst(text, image_prefix):
    """The report's Markdown (headings, paragraphs, lists, tables, figures) as reST."""
    marks = {1: "=", 2: "-", 3: "~", 4: "^"}
    lines, rows, paragraph = [".. _benchmarks:", ""], [], []
    for line in [*text.splitlines(), ""]:
        if paragraph and (not line or line.startswith(("|", "#", "![", "- "))):
            lines.append(_rst_inline(" ".join(paragraph)))
            paragraph = []
        if line.startswith("|"):
            if not set(line) <= set("|- "):
                rows.append([_rst_inline(c.strip()) or "\\" for c in line.strip("|").split(" | ")])
            continue
        if rows:
            lines += [".. list-table::", "   :header-rows: 1", ""]
            for row in rows:
                lines += [f"   * - {row[0]}", *(f"     - {cell}" for cell in row[1:])]
            lines.append("")
            rows = []
        heading = re.match(r"(#+) (.*)", line)
        figure = re.match(r"!\[(.*)\]\((.*)\)$", line)
        if heading:
            title = _rst_inline(heading[2])
            lines += [title, marks[len(heading[1])] * len(title)]
        elif figure:
            lines += [f".. image:: {image_prefix}{figure[2]}", f"   :alt: {figure[1]}"]
        elif line:
            paragraph.append(line)
        else:
            lines.append("")
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines).rstrip() + "\n")


def _findings():
    """``findings.md``, its headings one level down, to follow the report's own."""
    if not FINDINGS.exists():
        return ""
    return re.sub(r"^#", "##", FINDINGS.read_text(), flags=re.MULTILINE)


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


def _later_epoch_seconds(row):
    """Mean training seconds of a budget row's epochs after the first."""
    curve = row["curve"]
    return (curve[-1]["seconds"] - curve[0]["seconds"]) / max(row["epochs"] - 1, 1)


# ------------------------------------------------------------------------ context
def _cells(records, row, **computed):
    """Table rows: ``row`` is a Markdown row of format strings over a record's entries,
    and of the entries ``computed`` by functions of the record."""
    rows = []
    for record in records:
        values = _Entries({**record, "x": "\u00d7", **{k: f(record) for k, f in computed.items()}})
        rows.append([cell.format_map(values) for cell in row.split(" | ")])
    return rows


class _Entries(dict):
    """A record whose missing entries read as NaN (rows of older result files)."""

    def __missing__(self, key):
        return float("nan")


def _torch_context(section):
    row = section["results"][0]
    context = {**row, "commit": section["device"].get("skptr_commit", "?"), "torch": None}
    if row.get("torch") is not None:
        names = [("train", "training"), ("greedy", "greedy decoding")]
        names.append(("beam3", "beam search, width 3"))
        context["torch"] = row["torch"]
        context["rows"] = [
            [label, _fmt(row[f"{k}_seq_per_s"]), _fmt(row[f"torch_{k}_seq_per_s"]), ratio]
            for k, label in names
            for ratio in [f"x{row[f'{k}_ratio']:.2f}"]
        ]
    return context


def _budget_context(section):
    rows = section["results"]
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

    table_rows = []
    for row in rows:
        metric = "tour_ratio" if row["task"].startswith("tsp") else "exact"
        beam = next(k for k in row if k.startswith("beam") and not k.endswith("instance"))
        seed = f", random_state={row['random_state']}" if "random_state" in row else ""
        table_rows.append(
            [
                row["task"],
                row.get("settings", "defaults") + seed,
                f"{row['seconds']:.0f} s, {row['epochs']} epochs of {row['n_train']:,}",
                metric.replace("_", " "),
                _budget_cell(row["greedy"], metric),
                _budget_cell(row[beam], metric),
                f"{row['greedy_ms_per_instance']:.3f} / {row[beam + '_ms_per_instance']:.3f}",
            ]
        )
    return {
        "commit": section["device"].get("skptr_commit", "?"),
        "backend": rows[0]["backend"],
        "presets": [
            (name, ", ".join(setting(key, by_task) for key, by_task in params.items()))
            for name, params in presets.items()
        ],
        "note": section.get("note", "").strip(),
        "rows": table_rows,
    }


def _cost_learning_context(section, side_by_side=None, side_by_side_finished=None):
    """Rows of the cost-learning section: the rules, each seed and mean and worst of
    skptr and of RL4CO's models (``side_by_side``, the ``rl4co_side_by_side`` section,
    finished at ``side_by_side_finished`` unless a row names its own day)."""
    results = section["results"]
    learned = [r for r in results if r["method"] == "skptr"]
    outside = side_by_side["results"] if side_by_side else []
    outside = [{"finished": side_by_side_finished, **r} for r in outside]
    rows = [
        [r["task"], r["method"], "", "", f"{r['ratio']:.3f}", ""]
        for r in results
        if r["method"] not in ("skptr", "host_cost")
    ]
    for task in dict.fromkeys(r["task"] for r in learned + outside):
        runs = [r for r in learned if r["task"] == task]
        rows += _seed_rows(task, "skptr", runs, lambda r: f"random_state={r['seed']}")
        for model in dict.fromkeys(r["model"] for r in outside if r["task"] == task):
            runs = [r for r in outside if r["task"] == task and r["model"] == model]
            name = f"RL4CO {RL4CO_MODELS[model]}"
            rows += [
                [task, name, _rl4co_run(r), _training_cell(r), "stops: " + r["error"], ""]
                for r in runs
                if "error" in r
            ]
            runs = [r for r in runs if "error" not in r]
            rows += _seed_rows(task, name, runs, _rl4co_run)
    host = [
        [r["cost"], f"{r['instances_per_s']:.1f}"] for r in results if r["method"] == "host_cost"
    ]
    params = {r["task"]: r["params"] for r in learned}
    pools = {r["task"]: r.get("n_pool") for r in learned}
    commits = {r["task"]: r.get("commit", section["device"].get("skptr_commit")) for r in learned}
    return {
        "backend": learned[0]["backend"] if learned else "?",
        "n_test": {r["task"]: r["n_test"] for r in learned + outside},
        "params": [
            (task, ", ".join(f"`{k}={v!r}`" for k, v in p.items()), pools[task], commits[task])
            for task, p in params.items()
        ],
        "rows": rows,
        "host": host,
        "rl4co": {  # runs of different days may have had different versions
            package: " or ".join(sorted({r["versions"][package] for r in outside}))
            for package in ("rl4co", "torch")
        }
        if outside
        else None,
        "rl4co_batch_size": outside[0]["batch_size"] if outside else None,
    }


def _rl4co_run(run):
    """An RL4CO run's seed and the day it finished (hosts differ in speed from day to
    day, so rows are compared within a day)."""
    finished = run.get("finished")
    return f"seed={run['seed']}" + (f", {finished[:10]}" if finished else "")


#: How the report names RL4CO's models.
RL4CO_MODELS = {"pomo": "POMO", "am": "attention model"}


def _training_cell(run):
    t = run["training"]
    epochs = f", {t['epochs']} epochs" if "epochs" in t else ""
    return (
        f"{t['seconds']:.0f} s, {t['instances']:,} instances "
        f"({t['instances_per_s']:.0f} / s{epochs})"
    )


def _seed_rows(task, name, runs, run_name):
    """One row per run and decoding, then the decoding's mean (worst) over the runs."""
    rows = []
    for decoding in runs[0]["decodings"] if runs else ():
        ratios = [r["decodings"][decoding]["ratio"] for r in runs]
        ms = np.mean([r["decodings"][decoding]["ms_per_instance"] for r in runs])
        rows += [
            [task, f"{name}, {decoding}", run_name(r), _training_cell(r), f"{ratio:.3f}", ""]
            for r, ratio in zip(runs, ratios, strict=True)
        ]
        rows.append(
            [
                task,
                f"{name}, {decoding}",
                "mean (worst)",
                "",
                f"{np.mean(ratios):.3f} ({max(ratios):.3f})",
                f"{ms:.2f}",
            ]
        )
    return rows


def _pointer_speed_context(rows):
    beams = [k[:-10] for k in rows[0] if k.startswith("beam") and k.endswith("_seq_per_s")]
    header = ["backend", "task", "hidden", "train", "ref. train", "ratio", "work", "greedy"]
    header += ["ref. greedy", "ratio", *(f"beam {b[4:]}" for b in beams)]
    cells = "".join(f" | {{{b}}}" for b in beams)
    body = _cells(
        rows,
        "{backend} | {name} | {hidden_size} | {train_seq_per_s:,.0f} | "
        "{reference_train_seq_per_s:,.0f} | {x}{train_ratio:.2f} | {x}{work_ratio:.2f} | "
        "{greedy_seq_per_s:,.0f} | {reference_greedy_seq_per_s:,.0f} | {x}{greedy_ratio:.2f}"
        + cells,
        name=lambda r: TASK_NAMES[r["task"]],
        **{b: lambda r, b=b: _fmt(r.get(f"{b}_seq_per_s")) for b in beams},
    )
    first = rows[0]
    repeats = len(first["train_seconds"]["pointer"])
    return {**first, "repeats": repeats, "header": header, "rows": body}


def _transducer_speed_context(rows):
    body = _cells(
        sorted(rows, key=lambda r: (r["length"], r["memory"])),
        "{backend} | {memory} | {length} | {train_seq_per_s:,.1f} | {x}{train_ratio_to_none:.2f}"
        " | {decode_seq_per_s:,.1f} | {x}{decode_ratio_to_none:.2f} | {mean_output_length:.1f}",
    )
    exponents = []
    for backend in dict.fromkeys(r["backend"] for r in rows):
        of_backend = [r for r in rows if r["backend"] == backend]
        train = growth_exponents(of_backend, "train_seq_per_s")
        decode = growth_exponents(of_backend, "decode_seq_per_s")
        exponents += [[backend, m, _fmt(train[m], 2), _fmt(decode[m], 2)] for m in train]
    return {"rows": body, "exponents": exponents}


def _restarts_rows(rows):
    return _cells(
        rows,
        "{backend} | {n_init} | {trained} | {runs} | {n_samples:,} {x} {epochs} | {fit} | "
        "{x}{ratio:.2f}",
        trained=_population_label,
        fit=_seconds_and_spread,
    )


def _two_devices_rows(rows):
    def devices(r):
        two = r.get("devices") == "two processes"
        return f"{r['replicas']}, two processes" if two else r["replicas"]

    return _cells(
        rows,
        "{backend} | {model} | {devices} | {train_seq_per_s:,.0f} | {greedy_seq_per_s:,.0f} | "
        "{agreement:.1%}",
        devices=devices,
    )


def _precision_context(rows):
    body = _cells(
        rows,
        "{backend} | {accelerator} | {model} | {batch_size} | {policy} | "
        "{train_seq_per_s:,.0f} ({x}{train_vs_float32:.2f}) | "
        "{greedy_seq_per_s:,.0f} ({x}{greedy_vs_float32:.2f}) | {exact:.3f} | {first_fit_s:.1f}",
    )
    return {**rows[0], "length": rows[0].get("length", 10), "rows": body}


_DECODING_CELLS = "{memory} | {strengths} | {length:,} | {first_call_s:.2f} | {seconds:.3f}"


def _decoding_context(rows):
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
    return {"rows": _cells(rows, "{backend} | " + _DECODING_CELLS), "exponents": exponents}


def _overhead_rows(rows):
    return _cells(
        rows,
        "{backend} | {estimator} | {n_samples:,} {x} {epochs} | {estimator_fit_s:.2f} s | "
        "{keras_fit_s:.2f} s | {overhead_s:+.2f} s ({overhead_percent:+.1f} %) | {prepare} | "
        "{cold_fit_s:.1f} s",
        prepare=lambda r: _seconds(r.get("prepare_data_s")),
    )


def _threads_rows(rows):
    return _cells(
        rows,
        "{backend} | {estimator} | {threads} | {rows_per_s:,.0f} | {vs_one_thread:.2f}",
    )


def _allocator_rows(rows):
    return _cells(
        rows,
        "{task} | {allocator} | {instances_per_s:,.1f} | {spread} | {vs_malloc:.2f} | "
        "{page_faults_per_instance:,.0f} | {first_epoch_s:.1f} s | {first_spread} | "
        "{first_epoch_vs_malloc:.2f} | {peak_rss_mib:,.0f} MiB",
        spread=lambda r: _span(r["rates"]),
        first_spread=lambda r: _span(r["first_epochs_s"]) + " s",
    )


def _target_cell(row, targets):
    """Whether a ``decoding_scale`` row meets the issue's target for its size and method."""
    if row["n_points"] != targets["n_points"] or row["method"] not in ("greedy", "multistart"):
        return ""
    if row["method"] == "greedy":
        goal = f"≤ {targets['greedy_s']:g} s"
        met = row.get("decode_s", float("inf")) <= targets["greedy_s"]
    else:
        goal = f"≤ {targets['multistart_s']:g} s, ≤ {targets['multistart_peak_mb']:,} MB"
        met = (
            row.get("decode_s", float("inf")) <= targets["multistart_s"]
            and row.get("peak_mb", float("inf")) <= targets["multistart_peak_mb"]
        )
    return f"{goal}: {'met' if met else '**not met**'}"


def _vs_greedy_cell(ratio):
    """A ``decoding_scale`` row's tour over greedy decoding's, marked when above 1: the
    greedy ordering is among every method's candidates, so only a lost one gives that."""
    if ratio is None or ratio <= 1 + 1e-9:
        return _fmt(ratio, 4)
    return f"**{ratio:.4f}** (greedy candidate lost)"


def _decoding_scale_context(section):
    """The rows of ``decoding_scale``: one per size and method, and the fit's settings."""
    config, rows = section["config"], section["results"]
    targets = config["targets"]
    body = []
    for row in rows:
        settings = row["settings"] or "\u2013"
        if row.get("overridden"):
            settings += " (not every start: too slow at this size)"
        if row["status"] != "ok":
            cells = [row["status"]] + [""] * 5
        else:
            cells = [
                f"{row['first_call_s']:,.2f}",
                f"{row['decode_s']:,.3f}",
                f"{row['peak_mb']:,.0f}",
                f"{row['model_mb']:,.0f}",
                f"{row['peak_mb'] - row['model_mb']:+,.0f}",
                _vs_greedy_cell(row.get("vs_greedy")),
            ]
        body.append(
            [f"{row['n_points']:,}", row["method"], settings, *cells, _target_cell(row, targets)]
        )
    return {
        "backend": _backend_name(section),
        "commit": section["device"].get("skptr_commit", "?"),
        "params": ", ".join(f"`{k}={v!r}`" for k, v in config["params"].items()),
        "n_train": config["n_train"],
        "train_length": config["train_length"],
        "epochs": config["epochs"],
        "timeout_s": config["timeout_s"],
        "targets": {**targets, "n_points": f"{targets['n_points']:,}"},
        "rows": body,
    }


def _cost_training_scale_context(section):
    """The rows of ``cost_training_scale``: per size and backend, the medians of its
    processes and their range, and JAX's instances per second over TensorFlow's."""
    import statistics

    config, rows = section["config"], section["results"]
    body = []
    for n_points in config["sizes"]:
        rates = {}
        for backend in config["backends"]:
            measured = [r for r in rows if r["n_points"] == n_points and r["backend"] == backend]
            ok = [r for r in measured if r["status"] == "ok"]
            if not ok:
                status = measured[0]["status"] if measured else "not run"
                body.append([f"{n_points:,}", backend, status, "", "", "", "", ""])
                continue
            rate = [r["instances_per_s"] for r in ok]
            rates[backend] = statistics.median(rate)
            body.append(
                [
                    f"{n_points:,}",
                    {"tensorflow": "TensorFlow", "jax": "JAX"}[backend],
                    str(len(ok)),
                    f"{statistics.median(r['first_step_s'] for r in ok):,.1f}",
                    f"{rates[backend]:,.1f}",
                    _span(rate),
                    f"{statistics.median(r['peak_mb'] for r in ok):,.0f}",
                    f"{statistics.median(r['peak_mb'] - r['start_mb'] for r in ok):+,.0f}",
                ]
            )
        if len(rates) == 2:
            body[-1].append(f"{rates['jax'] / rates['tensorflow']:.2f}")
    for row in body:
        row.extend([""] * (9 - len(row)))
    return {
        "commit": rows[0]["skptr_commit"] if rows else "?",
        "params": ", ".join(f"`{k}={v!r}`" for k, v in config["params"].items()),
        "seconds": config["seconds"],
        "n_pool": f"{config['n_pool']:,}",
        "rows": body,
    }


def _span(values):
    return f"{min(values):,.1f}-{max(values):,.1f}"


def _backend_name(section):
    return {"tensorflow": "TensorFlow", "jax": "JAX"}[section["device"]["keras_backend"]]


def _transduction_context(section, title):
    rows = section["results"]
    tests = [f"lengths {k}" for k in rows[0]["tests"]]
    return {
        "title": title,
        "protocol": rows[0]["protocol"],
        "backend": _backend_name(section),
        "n_train": f"{rows[0]['n_train']:,}",
        "train": "{}-{}".format(*rows[0]["train_lengths"]),
        "n_test": section["config"]["n_test"],
        "commit": section["device"].get("skptr_commit", "?"),
        "metric": "per-token" if rows[0]["protocol"] == "deletang" else "fine",
        "n_seeds": len({r["seed"] for r in rows}),
        "note": section.get("note", ""),
        "header": ["task", "memory", *tests, "published", "seeds", "fit"],
        "rows": _transduction_summary(rows),
    }


def _svo_context(section):
    rows = section["results"]
    settings = rows[0]["params"]

    def by_depth(r):
        depths = r["main_verb_wrong_by_subject_depth"].items()
        return ", ".join(f"{depth}: {wrong}/{total}" for depth, (wrong, total) in depths)

    return {
        "backend": _backend_name(section),
        "settings": ", ".join(f"`{k}={v!r}`" for k, v in settings.items()) or "its defaults",
        "commit": section["device"].get("skptr_commit", "?"),
        "note": section.get("note", ""),
        "rows": _cells(
            [{k.replace(" ", "_").replace("'", ""): v for k, v in r.items()} for r in rows],
            "{seed} | {test_lengths} | {n_test} | {right_up_to_the_last_word} | {exact} | "
            "{last_word_a_verb_of_the_subjects_relative_clauses} | "
            "{last_word_a_verb_of_the_objects_relative_clauses} | {other} | "
            "{last_word_missing} | {wrong_earlier} | {by_depth} | "
            "{final_loss:.3f} after {epochs} epochs",
            other=lambda r: r["last_word_another_verb"] + r["last_word_not_a_verb"],
            by_depth=by_depth,
        ),
    }


def _gpu_context(data):
    """The rows measured on a GPU host: ``benchmarks/results/gpu/``."""
    gpu = {key.split("/", 1)[1]: value for key, value in data.items() if "/" in key}
    if not gpu:
        return None

    def results(name):
        return gpu.get(name, {}).get("results", [])

    context = {"device": {"jax": None, **next(v["device"] for v in gpu.values() if "device" in v)}}
    context["precision"] = (
        _precision_context(results("precision.jax")) if results("precision.jax") else None
    )
    context["pointer_speed"] = _cells(
        results("pointer_speed.jax"),
        "{task} | {hidden_size} | {n_train:,} | {train_seq_per_s:,.0f} | "
        "{reference_train_seq_per_s:,.0f} | {x}{train_ratio:.2f} | {greedy_seq_per_s:,.0f} | "
        "{x}{greedy_ratio:.2f} | {beam:,.0f}",
        beam=lambda r: r.get("beam3_seq_per_s", float("nan")),
    )
    context["transducer_speed"] = _cells(
        results("transducer_speed.jax"),
        "{length} | {name} | {n_train} / {batch_size} | {train_seq_per_s:,.0f} | "
        "{decode_seq_per_s:,.0f}",
        name=lambda r: r["memory"] or "none (LSTM only)",
    )
    context["decoding"] = _cells(results("transducer_decoding.jax"), _DECODING_CELLS)
    context["restarts"] = _restarts_rows(results("transducer_restarts.jax"))
    context["restarts_note"] = gpu.get("transducer_restarts.jax", {}).get("note", "")
    if "hull50_budget" in gpu:
        row = gpu["hull50_budget"]
        cpu = [
            r["greedy"]["exact"]
            for r in data.get("pointer_budget", {}).get("results", [])
            if r["task"] == "hull50" and r.get("settings") == row["settings"]
        ]
        seconds = data.get("pointer_budget", {}).get("config", {}).get("seconds", {})
        reached = f"the CPU reached {min(cpu):.3f}-{max(cpu):.3f} in " if cpu else ""
        context["hull50"] = {
            **row,
            "random_state": row.get("random_state", 0),
            "greedy": f"{row['greedy']['exact']:.3f}",
            "beam3": f"{row['beam3']['exact']:.3f}",
            "n_train": f"{row['n_train']:,}",
            "cpu": f"{reached}{seconds['hull50']:,} s; " if cpu else "",
            "published": PUBLISHED_HULL[50][0],
            "first": f"{row['curve'][0]['seconds']:.0f}",
            "later": f"{_later_epoch_seconds(row):.1f}",
        }
    if "hull50_batches" in gpu:
        section = gpu["hull50_batches"]
        first = section["results"][0]
        rows = _cells(
            section["results"],
            "{settings} | {batches} | {first:.0f} | {later:.1f} | {epochs} | {greedy:.3f} | "
            "{beam:.3f}",
            first=lambda r: r["curve"][0]["seconds"],
            later=_later_epoch_seconds,
            greedy=lambda r: r["greedy"]["exact"],
            beam=lambda r: r["beam3"]["exact"],
        )
        context["batches"] = {**first, "n_train": f"{first['n_train']:,}", "note": section["note"]}
        context["batches"]["rows"] = rows
    return context


def _machine_rows(data, run, device):
    sections = run.get("sections", {})
    total = sum(s["wall_s"] for s in sections.values())
    software = (
        f"TensorFlow {device.get('tensorflow')}, "
        + "".join(f"JAX {v}, " for v in sorted(_jax_versions(data)))
        + f"Keras {device.get('keras')} ({device.get('keras_backend')}), scikit-learn "
        f"{device.get('scikit-learn')}, NumPy {device.get('numpy')}, Python {device.get('python')}"
    )
    rows = [
        ["mode", run.get("mode", "?")],
        ["CPU", f"{device.get('cpu')} ({device.get('cpu_cores')} logical cores)"],
        ["accelerator", device.get("accelerator")],
        ["software", software],
        [
            "load average at start / end (1 min)",
            f"{device.get('load_average_1min')} / {run.get('load_average_end')}",
        ],
        ["wall time of all sections", f"{total / 60:.1f} min"],
    ]
    return rows + [
        [
            f"— {name}",
            f"{s['wall_s']:.0f} s, finished {s.get('finished', '?')}, skptr at "
            f"{s.get('skptr_commit') or 'an unrecorded commit'}",
        ]
        for name, s in sections.items()
    ]


TRANSDUCTION_TITLES = {
    "transduction_short": "Short training, far tests",
    "transduction_grefenstette": "Grefenstette et al. (2015) protocol",
    "transduction_deletang": "Delétang et al. (2023) protocol",
}


def report_context(data, run):
    """What the template shows: the table rows and the numbers its prose quotes."""
    device = run.get("device") or next(iter(data.values()), {}).get("device", {})
    short = _device_short(device)

    def section(name, make):
        return make(_speed_rows(data, name)) if any(k.startswith(name) for k in data) else None

    return {
        "short": short,
        "machine": _machine_rows(data, run, device),
        "headline": _headline(data, short),
        "comparison": _backend_comparison(data),
        "torch": [
            _torch_context(data[name])
            for name in ("pointer_vs_torch", "pointer_vs_torch.jax")
            if name in data
        ],
        "budget": _budget_context(data["pointer_budget"]) if "pointer_budget" in data else None,
        "cost_learning": _cost_learning_context(
            data["cost_learning"],
            data.get("rl4co_side_by_side"),
            run.get("sections", {}).get("rl4co_side_by_side", {}).get("finished"),
        )
        if "cost_learning" in data
        else None,
        "pointer_speed": section("pointer_speed", _pointer_speed_context),
        "transducer_speed": section("transducer_speed", _transducer_speed_context),
        "restarts": section("transducer_restarts", _restarts_rows),
        "restarts_header": [
            "backend",
            "n_init",
            "trained",
            "runs",
            "samples \u00d7 epochs",
            "fit, s",
            "vs first",
        ],
        "two_devices": section("two_devices", _two_devices_rows),
        "precision": section("precision", _precision_context),
        "decoding": section("transducer_decoding", _decoding_context),
        "overhead": section("sklearn_overhead", _overhead_rows),
        "threads": section("predict_threads", _threads_rows),
        "allocator": section("cpu_allocator", _allocator_rows),
        "decoding_scale": _decoding_scale_context(data["decoding_scale"])
        if "decoding_scale" in data
        else None,
        "cost_training_scale": _cost_training_scale_context(data["cost_training_scale"])
        if "cost_training_scale" in data
        else None,
        "tour_scale": _tour_scale_context(data["tour_scale"]) if "tour_scale" in data else None,
        "sort8": {
            "budget": _budget_text(data["sort8_curves"]["results"]["budget"], short),
            "rows": [
                [
                    name,
                    f"{curve['position_accuracy'][-1]:.3f}",
                    f"{curve['sequence_accuracy'][-1]:.3f}",
                    f"{sum(curve['train_s']):.0f} s",
                ]
                for name, curve in data["sort8_curves"]["results"]["curves"].items()
            ],
        }
        if "sort8_curves" in data
        else None,
        "transduction": [
            _transduction_context(data[name], title)
            for protocol, title in TRANSDUCTION_TITLES.items()
            for name in (protocol, f"{protocol}.jax")
            if name in data
        ],
        "svo": [_svo_context(data[n]) for n in ("svo_errors", "svo_errors.jax") if n in data],
        "gpu": _gpu_context(data),
        "findings": _findings(),
    }


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
        rows = _speed_rows(data, "transducer_speed")
        _plot_transducer_speed(rows, output / "transducer_speed.png")
        written.append(output / "transducer_speed.png")
    if "sort8_curves" in data:
        _plot_sort8(data["sort8_curves"]["results"]["curves"], output / "sort8_curves.png")
        written.append(output / "sort8_curves.png")
    if "rows" in data.get("tour_scale", {}).get("results", {}):
        _plot_tour_scale(data["tour_scale"], output / "tour_scale.png")
        written.append(output / "tour_scale.png")
    markdown = render_markdown(report_context(data, run))
    (output / "README.md").write_text(markdown)
    written.append(output / "README.md")
    if docs:
        relative = Path("..") / output.resolve().relative_to(DOCS_PAGE.parent.parent.resolve())
        DOCS_PAGE.write_text(markdown_to_rst(markdown, f"{relative.as_posix()}/"))
        written.append(DOCS_PAGE)
    return written


def _plot_tour_scale(section, path):
    """Greedy tour length over LKH-3's on the learning-curve instances after each epoch,
    against training seconds, one line per (training, seed)."""
    import matplotlib.pyplot as plt

    results = section["results"]
    reference = results["curve_reference"]
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for row in results["rows"]:
        if row["status"] != "ok":
            continue
        seconds = [point["training_s"] for point in row["curve"]]
        ratio = [point["length"] / reference for point in row["curve"]]
        ax.plot(seconds, ratio, marker=".", label=f"{row['training']}, seed {row['seed']}")
    ax.set_xlabel("training seconds")
    ax.set_ylabel("greedy tour / LKH-3")
    ax.set_title(f"TSP-{section['config']['curve_points']} from the cost: learning curves")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _tour_scale_context(section):
    """The tables of ``tour_scale``: training, the issue's targets, every test size and
    decoding, and TSPLIB; means over the seeds with the worst seed beside them."""
    import statistics

    config, results = section["config"], section["results"]
    if "rows" not in results:
        return None
    rows = [r for r in results["rows"] if r["status"] == "ok"]
    goals, trainings = config["goals"], list(config["trainings"])

    def of(training):
        return [r for r in rows if r["training"] == training]

    def test_ratio(row, n_points, decoding):
        found = [t for t in row["test"] if t["n_points"] == n_points and t["decoding"] == decoding]
        return found[0] if found else None

    training_rows = [
        [
            r["training"],
            str(r["seed"]),
            str(r["epochs"]),
            f"{r['instances']:,}",
            f"{r['training_s']:,.0f}",
            f"{r['instances_per_s']:,.1f}",
            f"{r['peak_training_mb']:,.0f}",
            f"{r['curve'][-1]['length'] / results['curve_reference']:.3f}",
            ", ".join(f"{t}: {d}" for t, d in r["chosen"].items()),
        ]
        for r in rows
    ]

    def summary(values, fmt):
        return f"{fmt(statistics.mean(values))} (worst {fmt(max(values))})"

    ratio_fmt = "{:.3f}".format
    target_rows = []
    for training in trainings:
        done = of(training)
        if not done:
            continue
        tsp100_n, tsp100_limit = config["targets"]["tsp100"]
        greedy = [test_ratio(r, tsp100_n, "greedy")["ratio"] for r in done]
        chosen = [test_ratio(r, tsp100_n, r["chosen"]["tsp100"]) for r in done]
        target_rows.append(
            [
                training,
                f"TSP-{tsp100_n} greedy ≤ {goals['tsp100_greedy']:.2f}",
                summary(greedy, ratio_fmt),
                "",
                "met" if max(greedy) <= goals["tsp100_greedy"] else "missed",
            ]
        )
        target_rows.append(
            [
                training,
                f"TSP-{tsp100_n} chosen ≤ {goals['tsp100']:.2f} at ≤ {1000 * tsp100_limit:.0f} ms",
                summary([c["ratio"] for c in chosen], ratio_fmt),
                summary([c["ms_per_instance"] for c in chosen], "{:.1f} ms".format),
                "met" if max(c["ratio"] for c in chosen) <= goals["tsp100"] else "missed",
            ]
        )
        gaps = [
            statistics.mean(i[r["chosen"]["tsplib"]]["gap"] for i in r["tsplib"]) for r in done
        ]
        slowest = [max(i[r["chosen"]["tsplib"]]["s"] for i in r["tsplib"]) for r in done]
        target_rows.append(
            [
                training,
                f"TSPLIB mean gap ≤ {100 * goals['tsplib_gap']:.0f} % at ≤ "
                f"{config['targets']['tsplib'][1]:.0f} s",
                summary([100 * g for g in gaps], "{:.1f} %".format),
                f"slowest {max(slowest):.2f} s",
                "met" if max(gaps) <= goals["tsplib_gap"] else "missed",
            ]
        )
        big_n, big_limit = config["targets"]["tsp1000"]
        big = [test_ratio(r, big_n, r["chosen"]["tsp1000"]) for r in done]
        if all(big):
            target_rows.append(
                [
                    training,
                    f"TSP-{big_n:,} chosen ≤ {goals['tsp1000']:.2f} at ≤ {big_limit:.0f} s",
                    summary([b["ratio"] for b in big], ratio_fmt),
                    summary([b["ms_per_instance"] / 1000 for b in big], "{:.1f} s".format),
                    "met" if max(b["ratio"] for b in big) <= goals["tsp1000"] else "missed",
                ]
            )

    test_rows = []
    for n_points in config["test_sizes"]:
        for training in trainings:
            for decoding in config["decodings"]:
                found = [test_ratio(r, n_points, decoding) for r in of(training)]
                found = [f for f in found if f is not None]
                if not found:
                    continue
                test_rows.append(
                    [
                        f"{n_points:,}",
                        training,
                        decoding,
                        summary([f["ratio"] for f in found], ratio_fmt),
                        f"{max(f['worst_ratio'] for f in found):.3f}",
                        f"{statistics.median(f['ms_per_instance'] for f in found):,.1f}",
                    ]
                )

    tsplib_rows = []
    names = [i["instance"] for i in rows[0]["tsplib"]] if rows else []
    for index, name in enumerate(names):
        row = [name, str(rows[0]["tsplib"][index]["n_points"])]
        for training in trainings:
            done = of(training)
            for decoding in ("greedy", "chosen"):
                gaps = [
                    r["tsplib"][index][
                        r["chosen"]["tsplib"] if decoding == "chosen" else "greedy"
                    ]["gap"]
                    for r in done
                ]
                row.append(f"{100 * statistics.mean(gaps):.1f}" if gaps else "")
        tsplib_rows.append(row)
    if tsplib_rows:
        columns = list(zip(*(row[2:] for row in tsplib_rows), strict=True))
        tsplib_rows.append(
            ["mean", ""]
            + [
                f"{statistics.mean(float(v) for v in column):.1f}" if all(column) else ""
                for column in columns
            ]
        )
    return {
        "commit": rows[0]["skptr_commit"] if rows else "?",
        "params": ", ".join(f"`{k}={v!r}`" for k, v in config["params"].items()),
        "seconds": f"{config['seconds']:,}",
        "n_pool": f"{config['n_pool']:,}",
        "seeds": ", ".join(str(s) for s in config["seeds"]),
        "trainings": "; ".join(
            f"{name}: sizes {t['sizes'][0]}-{t['sizes'][1]}, `learning_rate_decay={t['decay']}`"
            for name, t in config["trainings"].items()
        ),
        "references": ", ".join(
            f"{size} points {ref['s_per_instance']:.1f} s"
            for size, ref in results["references"].items()
        ),
        "training_rows": training_rows,
        "target_rows": target_rows,
        "test_rows": test_rows,
        "tsplib_header": ["instance", "n"]
        + [f"{t}, {d}, gap %" for t in trainings for d in ("greedy", "chosen")],
        "tsplib_rows": tsplib_rows,
        "n_test": ", ".join(f"{n} at {size}" for size, n in config["n_test"].items()),
        "n_validation": ", ".join(f"{n} at {size}" for size, n in config["n_validation"].items()),
        "targets": ", ".join(
            f"{name} ({size} points, {limit} s per instance)"
            for name, (size, limit) in config["targets"].items()
        ),
    }
