"""
Choosing ``hidden_size`` with a grid search
===========================================

Both estimators of skptr are ordinary scikit-learn estimators, so
:class:`~sklearn.model_selection.GridSearchCV` can tune them: it clones the estimator
for every parameter value and fold, fits the clones, and compares them with their
``score`` method (the position accuracy for :class:`~skptr.PointerNetworkOrderer`).

Here the search varies ``hidden_size``, the width of the recurrent layers, on sorting
six random floats in ascending order, with the same short training budget for every
size. A network of two units cannot hold enough about the set to sort it; the score
climbs with the size.
"""

# %%
# The search
# ----------
# Two-fold cross-validation and three sizes, a factor of four apart, keep the example
# fast; ``refit=False`` because only the scores are wanted here.
import matplotlib.pyplot as plt
from sklearn.model_selection import GridSearchCV

from skptr import PointerNetworkOrderer
from skptr.datasets import make_sorting
from skptr.plotting import plot_search_scores

X, y = make_sorting(n_samples=1600, n_steps=6, kind="float", descending=False, random_state=0)

search = GridSearchCV(
    PointerNetworkOrderer(epochs=10, batch_size=64, random_state=0),
    param_grid={"hidden_size": [2, 8, 32]},
    cv=2,
    refit=False,
)
search.fit(X, y)

for size, score, seconds in zip(
    search.cv_results_["param_hidden_size"],
    search.cv_results_["mean_test_score"],
    search.cv_results_["mean_fit_time"],
    strict=True,
):
    print(f"hidden_size={size:3d}: position accuracy {score:.3f} (fit in {seconds:.1f} s)")
print("best:", search.best_params_)

# %%
# Score against size
# ------------------
# The band is one standard deviation across the folds.
ax = plot_search_scores(search, "hidden_size")
ax.set_ylabel("position accuracy")
ax.set_title("Sorting 6 floats: cross-validated score against hidden_size")
plt.show()
