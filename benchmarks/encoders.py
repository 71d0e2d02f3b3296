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
    from .__main__ import CYCLES_PRESET, configuration

    config = configuration(quick=False)["pointer_budget"]
    preset = {**CYCLES_PRESET, "encoder": "attention", "num_layers": args.num_layers}
    name = "attention, cycle"
    if args.attention != "additive":
        preset["attention"] = args.attention
        name += f", {args.attention} scorer"
    if args.dtype_policy is not None:
        preset["dtype_policy"] = args.dtype_policy
        name += f", {args.dtype_policy}"
    if args.learning_rate_decay is not None:
        preset["learning_rate_decay"] = args.learning_rate_decay
        name += f", decay {args.learning_rate_decay}"
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
        data = (
            *budget._training_pool(task, budget._per_task(config["n_train"], task)),
            *budget._numpy_task(task, config["n_test"], seed=1000),
        )
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
