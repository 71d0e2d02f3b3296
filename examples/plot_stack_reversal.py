"""
Reversing strings with a neural stack
=====================================

To reverse a string, push every symbol onto a stack, then pop them all. A
``NeuralStackTransducer`` with ``memory="stack"`` can learn exactly that from examples
(Grefenstette et al. 2015): its controller emits, at every step, a push strength, a pop
strength and a vector to push, and the differentiable stack returns a read vector.

This example trains one on strings of 1 to 10 symbols, tests it on strings of 11 to 30
symbols, longer than any it has seen, and draws how it uses its stack with
:meth:`~skptr.NeuralStackTransducer.memory_trace` and
:func:`skptr.plotting.plot_memory_trace`.
"""

# %%
# Training on short strings
# -------------------------
# :func:`skptr.datasets.make_transduction` makes strings over the symbols ``a``, ``b``
# and ``c`` with their reverses as targets.
import matplotlib.pyplot as plt

from skptr import NeuralStackTransducer
from skptr.datasets import make_transduction
from skptr.metrics import coarse_accuracy, fine_accuracy
from skptr.plotting import plot_memory_trace

X, y = make_transduction(
    "reversal", n_samples=2000, min_length=1, max_length=10, vocab_size=3, random_state=0
)
print(X[:3], y[:3])

# %%
# With the defaults, ``fit`` trains up to ``n_init`` initialisations and keeps the first
# that predicts held-out training samples exactly (``init_scores_`` lists their scores).
est = NeuralStackTransducer(memory="stack", random_state=0)
est.fit(X, y)
print("held-out scores of the initialisations:", est.init_scores_)

# %%
# Testing on longer strings
# -------------------------
# Fine accuracy is the share of each target produced before the first mistake, coarse
# accuracy the share of targets produced entirely right (see :mod:`skptr.metrics`).
X_long, y_long = make_transduction(
    "reversal", n_samples=300, min_length=11, max_length=30, vocab_size=3, random_state=1
)
y_pred = est.predict(X_long)
print(f"lengths 11-30: fine accuracy {fine_accuracy(y_long, y_pred):.3f}")
print(f"lengths 11-30: coarse accuracy {coarse_accuracy(y_long, y_pred):.3f}")
print(X_long[0], "->", y_pred[0])

# %%
# How the stack is used
# ---------------------
# The trace of one input of 14 symbols. The controller reads the source, a separator
# (``|``) and then its own outputs; the time axis is labelled with the token fed in at
# each step. Top: push and pop strengths. Bottom: the strength of every stack slot
# after each step (slot ``t`` holds the vector pushed at step ``t``), so the stack grows
# as a staircase while the source is read and is emptied from the top while the reverse
# is written. The strengths are those ``predict`` uses: rounded to exactly 0 or 1
# (``snap_gates``), since the fit found that the controller predicts held-out samples as
# well with whole pushes and pops (``est.snap_gates_``). A pop of 1 at every output
# step, rather than a half-pop, is what lets the model work on any length.
trace = est.memory_trace(["abcaabcbbacabc"])[0]
print("output:", "".join(trace["output"]))
fig = plot_memory_trace(trace)
fig.axes[0].set_title("Stack operations while reversing 'abcaabcbbacabc'")
plt.show()
