"""
Travelling-salesman tours
=========================

A tour through ``n`` cities is an ordering of the cities, so a pointer network can
learn to output one. Here :class:`~skptr.PointerNetworkOrderer` is trained on optimal
tours through six cities in the unit square, computed exactly by
:func:`skptr.datasets.make_tsp` (Held-Karp dynamic programming), and its tours are drawn
beside the optimal ones.

The label of a closed tour starts at city 0 and, of its two directions, takes the one
whose second city has the smaller index: a rule about positions, which a network learns
slowly (until it has, the first step is a coin toss between the two directions).
A tour has no first city and no direction, and ``cycle="undirected"`` says so: the
estimator then trains on each tour from its leftmost city, towards the neighbour with
the smaller ``x``, which the network can see in the coordinates, and hands its tours
back in the label format, from city 0. On this data that takes the greedy tours from
2.5% to 0.5% above the optimum, and the share of optimal tours found from 52% to 77%.
"""

# %%
# Data and model
# --------------
import matplotlib.pyplot as plt

from skptr import PointerNetworkOrderer
from skptr.datasets import make_tsp
from skptr.metrics import tour_length
from skptr.plotting import plot_tour

X, y = make_tsp(9000, n_cities=6, random_state=0)
X_train, y_train, X_test, y_test = X[:8000], y[:8000], X[8000:], y[8000:]

est = PointerNetworkOrderer(hidden_size=64, epochs=15, cycle="undirected", random_state=0)
est.fit(X_train, y_train)
print("training loss per epoch:", [round(loss, 3) for loss in est.history_["loss"]])

# %%
# Tour lengths
# ------------
# :func:`skptr.metrics.tour_length` measures closed tours. Every prediction is a valid
# tour (each city exactly once), so its length is never below the optimum; beam search
# (``decode="beam"``) keeps several partial tours and returns the most likely one.
optimal = tour_length(X_test, y_test)
greedy_tours = est.predict(X_test)
greedy = tour_length(X_test, greedy_tours)
beam = tour_length(X_test, est.set_params(decode="beam", beam_width=5).predict(X_test))
print(f"optimal tours:      {optimal.mean():.3f}")
print(f"greedy predictions: {greedy.mean():.3f} ({greedy.mean() / optimal.mean() - 1:.1%} longer)")
print(f"beam predictions:   {beam.mean():.3f} ({beam.mean() / optimal.mean() - 1:.1%} longer)")
print(f"optimal tours found (greedy): {(greedy <= optimal + 1e-9).mean():.1%}")

# %%
# Predicted and optimal tours
# ---------------------------
# Top row: the greedy predictions, with their lengths; bottom row: the optimal tours.
# The square marks city 0, where every tour starts.
fig, axes = plt.subplots(2, 4, figsize=(12, 6.5), sharex=True, sharey=True)
for column in range(4):
    plot_tour(X_test[column], greedy_tours[column], ax=axes[0, column], color="C0")
    plot_tour(X_test[column], y_test[column], ax=axes[1, column], color="C2")
    axes[0, column].set_title(f"predicted: {greedy[column]:.3f}")
    axes[1, column].set_title(f"optimal: {optimal[column]:.3f}")
fig.tight_layout()
plt.show()
