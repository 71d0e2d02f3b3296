"""
Sorting digits, and what the pointer looks at
=============================================

The seed task of :class:`~skptr.PointerNetworkOrderer`: eight digits from 0 to 9, to be
output from the largest to the smallest. The label of a sequence is the ordering of its
positions, so the network never writes a digit: at every step it *points* at one of its
inputs.

:meth:`~skptr.PointerNetworkOrderer.predict_proba` returns the pointer distribution of
every output step. Drawn as a heatmap, each row shows where the decoder looked when it
chose the next element: one bright cell per row means the network is sure of its choice,
and a row split between equal digits shows it treating them as interchangeable.
Positions already chosen have probability exactly zero.
"""

# %%
# Data and model
# --------------
# 6000 sequences from :func:`skptr.datasets.make_sorting`: 5000 to train on, 1000
# held out.
import matplotlib.pyplot as plt
import numpy as np

from skptr import PointerNetworkOrderer
from skptr.datasets import make_sorting
from skptr.metrics import position_accuracy, sequence_accuracy
from skptr.plotting import plot_pointer_attention

X, y = make_sorting(n_samples=6000, n_steps=8, random_state=0)
X_train, y_train, X_test, y_test = X[:5000], y[:5000], X[5000:], y[5000:]

est = PointerNetworkOrderer(hidden_size=64, epochs=10, random_state=0)
est.fit(X_train, y_train)

# %%
# Held-out accuracy
# -----------------
# ``score`` is the position accuracy, where equal digits are interchangeable;
# :func:`~skptr.metrics.sequence_accuracy` counts the sequences sorted entirely right.
y_pred = est.predict(X_test)
print(f"position accuracy: {position_accuracy(y_test, y_pred, X=X_test):.3f}")
print(f"sequence accuracy: {sequence_accuracy(y_test, y_pred, X=X_test):.3f}")
print("input: ", X_test[0].astype(int))
print("output:", X_test[0, y_pred[0]].astype(int))

# %%
# The pointer attention
# ---------------------
# Left: a held-out sequence of eight digits. Right: a sequence of eleven digits, longer
# than anything seen in training; the same network handles it because its output is a
# distribution over the input positions, whatever their number. The red squares are
# the decoded choices.
longer = np.array([[3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5]], dtype=float)

fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), width_ratios=[8, 11])
for ax, sequence in zip(axes, [X_test[:1], longer], strict=True):
    proba = est.predict_proba(sequence)[0]
    ordering = est.predict(sequence)[0]
    plot_pointer_attention(proba, inputs=sequence[0], ordering=ordering, ax=ax)
    ax.set_title(f"{sequence.shape[1]} digits")
fig.tight_layout()
plt.show()
