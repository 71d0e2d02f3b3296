"""
Saving and loading a model
==========================

There are two ways to store a fitted estimator, and the restored model makes exactly
the same predictions with either:

- :func:`joblib.dump` / :func:`joblib.load` (or :mod:`pickle`), as for any scikit-learn
  estimator. The Keras network is stored as its weights and rebuilt from the
  hyperparameters when loading.
- ``est.save(path)`` / :func:`skptr.load`, skptr's own pickle-free format: the
  hyperparameters and fitted attributes as JSON, the network in the Keras ``.keras``
  format. Loading validates the file and reads only the weights, into a network built
  from the validated hyperparameters.

.. warning::

   Loading a pickle (including with joblib) can run arbitrary code. Only unpickle files
   you created yourself or got from a source you trust; to exchange models, prefer
   ``est.save`` and :func:`skptr.load`, which do not run code stored in the file.
"""

# %%
# Fit and save
# ------------
import tempfile
from pathlib import Path

import joblib
import matplotlib.pyplot as plt
import numpy as np

import skptr
from skptr import PointerNetworkOrderer
from skptr.datasets import make_sorting
from skptr.plotting import plot_pointer_attention

X, y = make_sorting(n_samples=3000, n_steps=8, random_state=0)
est = PointerNetworkOrderer(hidden_size=32, epochs=4, random_state=0).fit(X[:2500], y[:2500])

folder = Path(tempfile.mkdtemp())
joblib.dump(est, folder / "sorter.joblib")
est.save(folder / "sorter.skptr")
for path in sorted(folder.iterdir()):
    print(f"saved {path.name}: {path.stat().st_size / 1024:.0f} KiB")

# %%
# Load and compare
# ----------------
# The loaded estimators keep their hyperparameters and fitted attributes, and their
# predictions and pointer distributions are identical to the original's.
from_joblib = joblib.load(folder / "sorter.joblib")
from_skptr = skptr.load(folder / "sorter.skptr")
print(from_skptr)

X_test, y_test = X[2500:], y[2500:]
proba = est.predict_proba(X_test)
for name, loaded in [("joblib.load", from_joblib), ("skptr.load", from_skptr)]:
    same = np.array_equal(est.predict(X_test), loaded.predict(X_test))
    change = np.abs(proba - loaded.predict_proba(X_test)).max()
    print(f"{name}: identical predictions {same}, largest change in predict_proba {change}")
print(f"held-out score: fitted {est.score(X_test, y_test):.4f}")
print(f"held-out score: loaded {from_skptr.score(X_test, y_test):.4f}")

# %%
# The same pointer, before and after
# ----------------------------------
# A model trained for only four epochs is still unsure between some positions, which
# makes the comparison of the two heatmaps meaningful: every cell matches.
fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
models = [est, from_joblib, from_skptr]
titles = ["fitted", "joblib.load", "skptr.load"]
for ax, model, title in zip(axes, models, titles, strict=True):
    plot_pointer_attention(
        model.predict_proba(X_test[:1])[0],
        inputs=X_test[0],
        ordering=model.predict(X_test[:1])[0],
        ax=ax,
    )
    ax.set_title(title)
fig.tight_layout()
plt.show()

for file in folder.iterdir():
    file.unlink()
folder.rmdir()
