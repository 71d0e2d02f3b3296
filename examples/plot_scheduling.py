"""
Scheduling jobs from a cost alone
=================================

Jobs wait for one machine. Each has a processing time, a weight and a due date; a job
that finishes after its due date costs its weight times its lateness. Which order of
the jobs makes the total weighted tardiness smallest? Nobody hands us optimal orders
to imitate, only a way to score an order, written here in a few lines of NumPy.

:class:`~skptr.PointerNetworkOrderer` learns from that cost alone: ``fit(X)`` without
targets samples orders from the network itself and moves it towards the cheaper ones
(see :ref:`pointer_cost`). We compare its schedules with the classic dispatching
rules, earliest due date (EDD), weighted shortest processing time (WSPT) and apparent
tardiness cost (ATC), and with the exact optimum, which dynamic programming over the
subsets of jobs finds for a few jobs.
"""

# %%
# The cost, as a user writes it
# -----------------------------
# Each sample is a ``(n_jobs, 3)`` array: processing time, weight, due date, drawn as
# in the literature (times and weights uniform in [0, 1], due dates in
# [0, n_jobs / 2]).
import matplotlib.pyplot as plt
import numpy as np

from skptr import PointerNetworkOrderer


def total_weighted_tardiness(X, orderings):
    jobs = np.take_along_axis(np.asarray(X), np.asarray(orderings)[..., None], axis=1)
    finish = np.cumsum(jobs[..., 0], axis=1)
    return np.sum(jobs[..., 1] * np.maximum(finish - jobs[..., 2], 0), axis=1)


def draw_jobs(n_samples, n_jobs, rng):
    times, weights = rng.random((n_samples, n_jobs)), rng.random((n_samples, n_jobs))
    due = rng.random((n_samples, n_jobs)) * n_jobs / 2
    return np.stack([times, weights, due], axis=-1)


rng = np.random.default_rng(0)
n_jobs = 10
X_train, X_test = draw_jobs(6000, n_jobs, rng), draw_jobs(500, n_jobs, rng)

# %%
# Learning from the cost
# ----------------------
# The jobs form a set (their order in ``X`` means nothing), so the attention encoder
# reads them. ``history_["loss"]`` is the mean cost of the orders sampled in each
# epoch.
est = PointerNetworkOrderer(
    encoder="attention",
    num_layers=2,
    decoder_layers=1,  # the decoder runs for every sampled order: keep it shallow
    hidden_size=64,
    attention="general",
    logit_clip=10,  # bounded logits keep the sampled orders exploring
    cost=total_weighted_tardiness,
    epochs=12,
    batch_size=128,
    random_state=0,
)
est.fit(X_train)
print("mean cost per epoch:", [round(loss, 3) for loss in est.history_["loss"]])

# %%
# The classic rules and the optimum
# ---------------------------------
# ATC ranks the waiting jobs by ``w / p * exp(-max(d - p - t, 0) / (k * mean(p)))`` at
# time ``t``; its look-ahead ``k`` is chosen per instance, the best of 0.5 to 4.


def apparent_tardiness_cost(X, k):
    times, weights, due = X[..., 0], X[..., 1], X[..., 2]
    rows = np.arange(len(X))
    waiting = np.ones(times.shape, dtype=bool)
    clock, order = np.zeros(len(X)), []
    for _ in range(X.shape[1]):
        mean_time = np.where(waiting, times, 0).sum(axis=1) / waiting.sum(axis=1)
        slack = np.maximum(due - times - clock[:, None], 0)
        priority = weights / times * np.exp(-slack / (k * mean_time[:, None]))
        job = np.argmax(np.where(waiting, priority, -np.inf), axis=1)
        order.append(job)
        waiting[rows, job] = False
        clock += times[rows, job]
    return np.stack(order, axis=1)


def optimal_cost(X):
    """Dynamic programming over the subsets of jobs: the cheapest way to finish each
    subset first, whose last job ends when the subset's processing times add up."""
    n = X.shape[1]
    masks = np.arange(2**n)
    members = (masks[:, None] >> np.arange(n)) & 1
    finish = members @ X[..., 0].T  # (2**n, n_samples)
    best = np.full((2**n, len(X)), np.inf)
    best[0] = 0
    for mask in masks[1:]:
        for job in np.flatnonzero(members[mask]):
            lateness = np.maximum(finish[mask] - X[:, job, 2], 0)
            best[mask] = np.minimum(best[mask], best[mask ^ (1 << job)] + X[:, job, 1] * lateness)
    return best[-1]


schedules = {
    "EDD": np.argsort(X_test[..., 2], axis=1),
    "WSPT": np.argsort(X_test[..., 0] / X_test[..., 1], axis=1),
}
atc_costs = np.stack(
    [
        total_weighted_tardiness(X_test, apparent_tardiness_cost(X_test, k))
        for k in np.arange(0.5, 4.01, 0.5)
    ]
)
schedules["pointer network, greedy"] = est.predict(X_test)
# Greedy decoding from every job, keeping the cheapest schedule under the cost.
schedules["pointer network, every start"] = est.set_params(decode="multistart").predict(X_test)
costs = {name: total_weighted_tardiness(X_test, order) for name, order in schedules.items()}
costs["ATC, best k per instance"] = atc_costs.min(axis=0)
costs["pointer network, beam of 8"] = total_weighted_tardiness(
    X_test, est.set_params(decode="beam", beam_width=8).predict(X_test)
)
optimum = optimal_cost(X_test)
for name, cost in costs.items():
    print(f"{name:28s} {cost.mean():.3f}  ({cost.mean() / optimum.mean():.3f} x optimum)")
print(f"{'optimum':28s} {optimum.mean():.3f}")

# %%
# Mean cost of each method, as a multiple of the optimum
# ------------------------------------------------------
# With a cost, beam search keeps the cheapest order of its final beam, not the most
# likely one.
fig, ax = plt.subplots(figsize=(7, 3))
names = list(costs)
ax.barh(names, [costs[name].mean() / optimum.mean() for name in names], color="C0")
ax.axvline(1, color="k", lw=1)
ax.set_xlabel("mean total weighted tardiness / optimum")
fig.tight_layout()
plt.show()
