"""Train RL4CO's POMO or Attention Model for a fixed time and score it on given instances.

This script gives skptr's ordering tasks an outside reference: an RL4CO model trained for
the same number of seconds on the same CPU, then judged on the same test instances. It
runs in an environment of its own that has PyTorch and RL4CO installed; skptr never
imports it, and PyTorch and RL4CO are imported only inside its functions.

The model is trained on instances drawn by RL4CO's own generator from the distribution
of the test instances: cities uniform in the unit square for the travelling salesman
problem (``tsp``), and for single-machine total weighted tardiness (``smtwt``)
processing times and weights uniform on (0, 1) and due dates uniform on (0, N/2). Every
setting is RL4CO's default for the model (the settings of the published papers as RL4CO
sets them) except the batch size and the arithmetic, plain float32 rather than RL4CO's
mixed precision. Training runs on the CPU with two PyTorch threads, without
validation, and stops once the given number of seconds has passed since its first
batch; the epochs are RL4CO's (100,000 instances each, a fresh sample every epoch, with
the Attention Model's greedy rollout baseline taking over after the first one) and
their number is unbounded, so the time budget is what ends training.

The trained policy then decodes the test instances greedily and, for POMO, greedily
from every possible first element, keeping the cheapest of the N solutions of each
instance. Each solution's cost is computed here in NumPy from the decoded order (the
length of the closed tour, or the total weighted tardiness of the schedule), after
checking that the order is a permutation of the N elements, and compared with RL4CO's
own reward.

Usage
-----
Run it with the Python of the RL4CO environment, from the repository root::

    path/to/rl4co-env/bin/python benchmarks/rl4co_side_by_side.py \\
        --problem tsp --model pomo --seconds 300 --seed 0 \\
        --instances tsp20.npy --out pomo_tsp20.json [--batch-size 64]

``--instances`` is a float64 ``.npy`` array of shape ``(n, N, 2)`` holding cities in
the unit square (``tsp``), or of shape ``(n, N, 3)`` holding each job's processing
time, weight and due date in that order (``smtwt``). The problem size N is read from
it.

Output
------
A JSON object with the keys

``problem``, ``model``, ``seed``, ``batch_size``
    The arguments.
``seconds``
    Measured training time, from the start of the first batch to the end of the last.
``instances``, ``instances_per_s``
    Training instances seen (batches times batch size) and their rate.
``rl4co_version``, ``torch_version``
    The installed versions.
``decodings``
    For ``"greedy"`` and, for POMO, ``"greedy from every start"``: ``costs``, the
    cost of each test instance in file order, and ``ms_per_instance``, the wall-clock
    time of decoding the whole file divided by its size, measured after one warm-up
    call.
``reward_check``
    Whether the greedy costs agree with minus RL4CO's reward to a relative 1e-4.

When the model fails during training, the file holds ``error`` (the exception's message
on one line) instead of ``decodings`` and ``reward_check``, and the script still exits
with status 0.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

#: Test instances decoded per policy call; a multistart call decodes N times as many.
EVAL_CHUNK = 256
#: Relative and absolute tolerances of the check of the costs against RL4CO's reward.
REWARD_RTOL = 1e-4
REWARD_ATOL = 1e-6
#: Epochs allowed to the trainer: far more than any time budget reaches.
MAX_EPOCHS = 1_000_000
THREADS = 2


def parse_args(argv=None):
    """Read the command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--problem", choices=("tsp", "smtwt"), required=True)
    parser.add_argument("--model", choices=("pomo", "am"), required=True)
    parser.add_argument("--seconds", type=float, required=True, help="training budget")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--instances", type=Path, required=True, help="test instances, .npy")
    parser.add_argument("--out", type=Path, required=True, help="result file, .json")
    parser.add_argument("--batch-size", type=int, default=64)
    return parser.parse_args(argv)


def load_instances(path, problem):
    """Load the test instances and check their shape against the problem."""
    instances = np.load(path).astype(np.float64)
    features = {"tsp": 2, "smtwt": 3}[problem]
    if instances.ndim != 3 or instances.shape[2] != features:
        raise ValueError(
            f"{problem} instances must have shape (n, N, {features}), got {instances.shape}"
        )
    return instances


def tour_lengths(cities, orders):
    """Length of the closed tour visiting ``cities`` (n, N, 2) in ``orders`` (n, N)."""
    visited = np.take_along_axis(cities, orders[..., None], axis=1)
    steps = np.roll(visited, -1, axis=1) - visited
    return np.sqrt((steps**2).sum(-1)).sum(-1)


def weighted_tardiness(jobs, orders):
    """Total weighted tardiness of ``jobs`` (n, N, 3) processed in ``orders`` (n, N)."""
    scheduled = np.take_along_axis(jobs, orders[..., None], axis=1)
    processing, weight, due = scheduled[..., 0], scheduled[..., 1], scheduled[..., 2]
    completion = np.cumsum(processing, axis=1)
    return (weight * np.maximum(completion - due, 0.0)).sum(-1)


def costs_of(problem, instances, orders):
    """Cost of each instance under its order, after checking the orders are permutations."""
    n, size = instances.shape[:2]
    if orders.shape != (n, size):
        raise ValueError(f"expected orders of shape {(n, size)}, got {orders.shape}")
    if not (np.sort(orders, axis=1) == np.arange(size)).all():
        raise ValueError(f"decoded orders are not permutations of 0..{size - 1}")
    if problem == "tsp":
        return tour_lengths(instances, orders)
    return weighted_tardiness(instances, orders)


def make_env(problem, size):
    """RL4CO's environment for the problem, its generator matching the test distribution."""
    from rl4co.envs import SMTWTPEnv, TSPEnv

    if problem == "tsp":
        # TSPGenerator draws each city uniformly from [min_loc, max_loc]^2 = [0, 1]^2 by
        # default; only the number of cities is set.
        return TSPEnv(generator_params={"num_loc": size})
    # SMTWTPGenerator draws due dates from U(min_time_span, max_time_span), weights from
    # U(min_job_weight, max_job_weight) and processing times from U(min_process_time,
    # max_process_time). Its defaults are already (0, N/2), (0, 1) and (0, 1); they are
    # set explicitly here, with num_job = N, so that the distribution cannot drift.
    return SMTWTPEnv(
        generator_params={
            "num_job": size,
            "min_time_span": 0.0,
            "max_time_span": size / 2,
            "min_job_weight": 0.0,
            "max_job_weight": 1.0,
            "min_process_time": 0.0,
            "max_process_time": 1.0,
        }
    )


def to_tensordict(problem, instances):
    """The test instances as the TensorDict that RL4CO's environment resets from."""
    import torch
    from tensordict import TensorDict

    data = torch.as_tensor(instances, dtype=torch.float32)
    n = data.shape[0]
    if problem == "tsp":
        return TensorDict({"locs": data}, batch_size=[n])
    # RL4CO's SMTWTP puts a dummy job 0 with all features zero in front of the N jobs;
    # rollouts start from it and decode the real jobs as actions 1..N.
    padded = torch.cat([torch.zeros(n, 1, 3), data], dim=1)
    return TensorDict(
        {
            "job_process_time": padded[..., 0],
            "job_weight": padded[..., 1],
            "job_due_time": padded[..., 2],
        },
        batch_size=[n],
    )


def make_model(model_name, env, batch_size):
    """POMO or the Attention Model with RL4CO's defaults except the batch size.

    The returned module skips RL4CO's end-of-epoch work (baseline challenge, next
    epoch's data and its baseline rollout) once the time budget has stopped training,
    since the next epoch never comes.
    """
    from rl4co.models import POMO, AttentionModel

    base = POMO if model_name == "pomo" else AttentionModel

    class StopsOnBudget(base):
        def on_train_epoch_end(self):
            if not self.trainer.should_stop:
                super().on_train_epoch_end()

    if model_name == "pomo":
        return StopsOnBudget(env, batch_size=batch_size)
    return StopsOnBudget(env, baseline="rollout", batch_size=batch_size)


def make_budget_callback(seconds):
    """A Lightning callback that stops training ``seconds`` after its first batch began."""
    from lightning.pytorch.callbacks import Callback

    class TimeBudget(Callback):
        def __init__(self):
            self.seconds = seconds
            self.start = None
            self.elapsed = 0.0
            self.batches = 0

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            if self.start is None:
                self.start = time.perf_counter()

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            self.batches += 1
            self.elapsed = time.perf_counter() - self.start
            if self.elapsed >= self.seconds:
                trainer.should_stop = True

    return TimeBudget()


def train(model, budget, workdir):
    """Train until the ``budget`` callback stops it."""
    from rl4co.utils.trainer import RL4COTrainer

    trainer = RL4COTrainer(
        accelerator="cpu",
        devices=1,
        # RL4CO's default, "16-mixed", is float16 autocast for GPUs, which Lightning turns
        # into bfloat16 autocast on a CPU; train in plain float32 instead.
        precision="32-true",
        max_epochs=MAX_EPOCHS,
        callbacks=[budget],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        limit_val_batches=0,
        num_sanity_val_steps=0,
        default_root_dir=workdir,
    )
    trainer.fit(model)


def decode(policy, env, td, decode_type, num_starts=None):
    """Decode every instance of ``td`` in chunks; return actions, rewards and seconds.

    Multistart actions and rewards come back as RL4CO lays them out per chunk
    (start-major) and are reshaped here to (n, starts, N) and (n, starts).
    """
    import torch
    from rl4co.utils.ops import unbatchify

    kwargs = {"decode_type": decode_type}
    if decode_type.startswith("multistart"):
        kwargs["num_starts"] = num_starts
    actions, rewards = [], []
    begin = time.perf_counter()
    with torch.inference_mode():
        for first in range(0, td.batch_size[0], EVAL_CHUNK):
            chunk = env.reset(td[first : first + EVAL_CHUNK])
            out = policy(chunk, env, phase="test", **kwargs)
            action, reward = out["actions"], out["reward"]
            if decode_type.startswith("multistart"):
                starts = action.shape[0] // chunk.batch_size[0]
                action, reward = unbatchify(action, starts), unbatchify(reward, starts)
            actions.append(action)
            rewards.append(reward)
    seconds = time.perf_counter() - begin
    return torch.cat(actions).numpy(), torch.cat(rewards).numpy(), seconds


def evaluate(model_name, problem, policy, env, instances):
    """Greedy (and for POMO multistart greedy) costs, timings and the reward check."""
    td = to_tensordict(problem, instances)
    n, size = instances.shape[:2]
    # SMTWTP's actions index the padded jobs, the real ones being 1..N.
    offset = 1 if problem == "smtwt" else 0
    policy.eval()

    modes = {"greedy": ("greedy", None)}
    if model_name == "pomo":
        modes["greedy from every start"] = ("multistart_greedy", size)
    decodings, reward_check = {}, None
    for name, (decode_type, num_starts) in modes.items():
        decode(policy, env, td[:EVAL_CHUNK], decode_type, num_starts)  # warm-up
        actions, rewards, seconds = decode(policy, env, td, decode_type, num_starts)
        actions = actions.astype(np.int64) - offset
        if decode_type == "greedy":
            costs = costs_of(problem, instances, actions)
            reward_check = bool(np.allclose(costs, -rewards, rtol=REWARD_RTOL, atol=REWARD_ATOL))
        else:
            firsts = np.sort(actions[:, :, 0], axis=1)
            if not (firsts == np.arange(size)).all():
                raise ValueError("multistart decoding did not start once from each element")
            starts = actions.shape[1]
            every = costs_of(
                problem,
                np.repeat(instances, starts, axis=0),
                actions.reshape(n * starts, size),
            ).reshape(n, starts)
            costs = every.min(axis=1)
        decodings[name] = {
            "costs": [float(c) for c in costs],
            "ms_per_instance": 1000.0 * seconds / n,
        }
    return decodings, reward_check


def one_line(error):
    """The exception as one line: its type and the first line of its message."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0] if lines else ''}".rstrip(": ")


def run(args):
    """Train, evaluate and return the result dictionary."""
    import lightning
    import rl4co
    import torch

    torch.set_num_threads(THREADS)
    # SMTWTPEnv has no solution check and logs a warning saying so at every reward; the
    # decoded orders are checked here instead.
    logging.getLogger("rl4co.envs.scheduling.smtwtp.env").setLevel(logging.ERROR)
    instances = load_instances(args.instances, args.problem)
    size = instances.shape[1]
    lightning.seed_everything(args.seed)

    env = make_env(args.problem, size)
    model = make_model(args.model, env, args.batch_size)
    budget = make_budget_callback(args.seconds)
    error = None
    try:
        with tempfile.TemporaryDirectory() as workdir:
            train(model, budget, workdir)
    except Exception as failure:  # a model that cannot train on the problem
        error = one_line(failure)
    seen = budget.batches * args.batch_size
    result = {
        "problem": args.problem,
        "model": args.model,
        "seed": args.seed,
        "seconds": budget.elapsed,
        "instances": seen,
        "instances_per_s": seen / budget.elapsed if budget.elapsed > 0 else 0.0,
        "batch_size": args.batch_size,
        "rl4co_version": rl4co.__version__,
        "torch_version": torch.__version__,
    }
    if error is not None:
        result["error"] = error
        return result
    decodings, reward_check = evaluate(args.model, args.problem, model.policy, env, instances)
    result["decodings"] = decodings
    result["reward_check"] = reward_check
    return result


def main(argv=None):
    """Run the benchmark and write its JSON file."""
    args = parse_args(argv)
    result = run(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    summary = {k: v for k, v in result.items() if k != "decodings"}
    for name, decoding in result.get("decodings", {}).items():
        summary[name] = {
            "mean_cost": float(np.mean(decoding["costs"])),
            "ms_per_instance": decoding["ms_per_instance"],
        }
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
