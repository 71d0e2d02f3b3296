"""Hull-50 under a budget on JAX, in batches cut to their samples or padded.

``python -m benchmarks.gpu_batches {cut,padded} SECONDS OUTPUT.json [NAME=JSON ...]``
trains the ``"attention, cycle"`` preset, with the hyperparameters given changed, on the
``pointer_budget`` hull50 pool (``random_state=0``) for ``SECONDS`` of training and
writes its ``pointer_budget`` row. ``cut`` cuts the batches to powers of two (JAX's
rule on a CPU), ``padded`` pads every batch to the longest sequence (JAX's rule on a GPU
or TPU); run each in a process of its own, so that neither reuses the other's compiled
steps. The rows of ``benchmarks/results/gpu/hull50_batches.json`` were measured this way.
"""

from __future__ import annotations

import dataclasses
import json
import sys


def main(argv=None):
    mode, seconds, output, *changes = argv if argv is not None else sys.argv[1:]
    from skptr import _training

    from . import budget
    from .__main__ import configuration
    from ._common import device_info
    from .encoders import attention_preset, budget_data

    policy = _training.COMPILE_POLICY["jax"]
    huge = {"recurrent": 2**62, "attention": 2**62}
    _training.COMPILE_POLICY["jax"] = (
        dataclasses.replace(policy, cut_on_accelerators=True)
        if mode == "cut"
        else dataclasses.replace(policy, cut_batches_steps=huge)
    )
    config = configuration(quick=False)["pointer_budget"]
    config["seconds"] = {"hull50": int(seconds)}
    name, preset = attention_preset(
        {key: json.loads(value) for key, value in (c.split("=", 1) for c in changes)}
    )
    row = budget._budget_run(config, "hull50", budget_data(config, "hull50"), name, preset, print)
    row.update(batches=mode, random_state=0, device=device_info())
    with open(output, "w") as file:
        json.dump(row, file, indent=1)


if __name__ == "__main__":
    main()
