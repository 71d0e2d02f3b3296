"""Budget rows of the pointer network's attention encoder beside the existing ones.

``python -m benchmarks.encoders [--tasks hull10 tsp10] [--seeds 0] [--attention general]
[--dtype-policy mixed_bfloat16] [--learning-rate-decay 0.97]`` trains the ``"attention,
cycle"`` preset (the cycles preset with ``encoder="attention"``; the scorer, the dtype
policy and the decay, when given, are set in the preset and named in its name) under
the budget of ``pointer_budget`` and appends its rows to
``benchmarks/results/pointer_budget.json`` (replacing earlier rows of the same task,
preset and seed), so that the report compares it with the recurrent encoder's rows
without training those again.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from ._common import RESULTS_DIR, device_info, read_json, write_json

#: How the preset's name shows a hyperparameter changed from the "attention, cycle"
#: preset (two blocks by default).
_CHANGE_NAMES = {
    "attention": "{} scorer",
    "dtype_policy": "{}",
    "learning_rate_decay": "decay {}",
}


def attention_preset(changes=None):
    """The "attention, cycle" preset with ``changes``, and its name in the rows.

    Parameters
    ----------
    changes : dict, optional
        Hyperparameters to set; each is named in the name, ``num_layers`` only when
        it is not the preset's two blocks.

    Returns
    -------
    name : str
    preset : dict
    """
    from .__main__ import CYCLES_PRESET

    preset = {**CYCLES_PRESET, "encoder": "attention", "num_layers": 2}
    name = "attention, cycle"
    for key, value in (changes or {}).items():
        preset[key] = value
        if key == "num_layers":
            if value != 2:
                name += f", {value} block" + ("s" if value > 1 else "")
        else:
            name += ", " + _CHANGE_NAMES.get(key, key + "={}").format(value)
    return name, preset


def budget_data(config, task):
    """The training pool and the NumPy-drawn test set of a ``pointer_budget`` task."""
    from . import budget

    return (
        *budget._training_pool(task, budget._per_task(config["n_train"], task)),
        *budget._numpy_task(task, config["n_test"], seed=1000),
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=["hull10", "tsp10"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--num-layers", type=int, default=2)
    parser.add_argument("--attention", default="additive", help="the pointer scorer")
    parser.add_argument("--dtype-policy", default=None, help="e.g. mixed_bfloat16")
    parser.add_argument(
        "--learning-rate-decay", type=float, default=None, help="instead of the preset's"
    )
    args = parser.parse_args(argv)

    from . import budget, report
    from .__main__ import configuration

    config = configuration(quick=False)["pointer_budget"]
    changes = {"num_layers": args.num_layers}
    if args.attention != "additive":
        changes["attention"] = args.attention
    if args.dtype_policy is not None:
        changes["dtype_policy"] = args.dtype_policy
    if args.learning_rate_decay is not None:
        changes["learning_rate_decay"] = args.learning_rate_decay
    name, preset = attention_preset(changes)
    path = RESULTS_DIR / "pointer_budget.json"
    section = read_json(path)
    note = (
        ' The "attention, cycle" rows are measured by `python -m benchmarks.encoders`, '
        "one task after another, alone on the machine (skptr_commit and random_state in "
        "each row)."
    )
    if note not in section.get("note", ""):
        section["note"] = section.get("note", "") + note
    device = device_info()
    for task in args.tasks:
        data = budget_data(config, task)
        for seed in args.seeds:
            row = budget._budget_run(config, task, data, name, preset, print, random_state=seed)
            row.update(random_state=seed, skptr_commit=device["skptr_commit"])
            section["results"] = [
                r
                for r in section["results"]
                if (r["task"], r.get("settings"), r.get("random_state", 0)) != (task, name, seed)
            ] + [row]
            write_json(path, section)
    report.write_report(RESULTS_DIR, docs=True)


if __name__ == "__main__":
    main()
