"""
Stack, queue or no memory: copy and reversal
============================================

Which memory a ``NeuralStackTransducer`` needs depends on the order in which the task
consumes its input. Copying reads the source back first-in first-out, which is what a
queue does; reversal reads it last-in first-out, which is what a stack does. A plain
recurrent network (``memory=None``) must squeeze the whole source into its fixed-size
state, which works on short strings but not on longer ones.

Here each of the three is trained on both tasks, on strings of 1 to 10 symbols, and
tested on strings of up to 30 symbols. This is the comparison of Figure 2a of
Grefenstette et al. (2015) in miniature; training runs are kept short, from a single
initialisation each (``n_init=1``), so the models are far from converged. See
:ref:`sphx_glr_auto_examples_plot_length_generalisation.py` for the defaults, trained
to the end, on strings of up to 500 symbols.
"""

# %%
# Training
# --------
# The same hyperparameters for every model; only ``memory`` changes.
import matplotlib.pyplot as plt
import numpy as np

from skptr import NeuralStackTransducer
from skptr.datasets import make_transduction
from skptr.metrics import fine_accuracy
from skptr.plotting import plot_accuracy_by_length

tasks = ["copy", "reversal"]
memories = {"queue": "queue", "stack": "stack", "no memory": None}
bins = np.array([[1, 5], [6, 10], [11, 15], [16, 20], [21, 25], [26, 30]])
centres = bins.mean(axis=1)

scores = {task: {} for task in tasks}
for task in tasks:
    X, y = make_transduction(
        task, n_samples=600, min_length=1, max_length=10, vocab_size=3, random_state=0
    )
    X_test, y_test = make_transduction(
        task, n_samples=360, min_length=1, max_length=30, vocab_size=3, random_state=1
    )
    lengths = np.array([len(x) for x in X_test])
    for label, memory in memories.items():
        est = NeuralStackTransducer(memory=memory, epochs=8, n_init=1, random_state=0)
        est.fit(X, y)
        y_pred = est.predict(X_test)
        scores[task][label] = [
            fine_accuracy(y_test[mask], y_pred[mask])
            for mask in ((lengths >= low) & (lengths <= high) for low, high in bins)
        ]
        print(f"{task:8s} {label:9s} fine accuracy by length: {np.round(scores[task][label], 2)}")

# %%
# Accuracy against length
# -----------------------
# The shaded band is the range of training lengths. The memory that matches the task
# keeps its accuracy beyond it, the stack on reversal most clearly; the mismatched
# memory and the plain network fall off as soon as the strings get longer than those
# seen in training, or even before. Longer training carries the matching memory further.
fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
for ax, task in zip(axes, tasks, strict=True):
    plot_accuracy_by_length(
        centres, scores[task], train_lengths=(1, 10), ax=ax, ylabel="fine accuracy"
    )
    ax.set_title(task)
fig.tight_layout()
plt.show()
