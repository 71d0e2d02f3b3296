"""Plotting helpers for orderings, tours, attention and neural memories.

These functions draw what the estimators of skptr produce: pointer distributions
(:func:`plot_pointer_attention`), convex hulls (:func:`plot_convex_hull`), tours
(:func:`plot_tour`), the memory of a transducer over time (:func:`plot_memory_trace`),
accuracy against sequence length (:func:`plot_accuracy_by_length`) and the scores of a
hyperparameter search (:func:`plot_search_scores`).

Matplotlib is an optional dependency, imported only when a function is called; install
it with ``pip install "skptr[plot]"``. Every function draws into the Axes passed as
``ax`` (a new figure is created when it is None) and returns what it drew into, so plots
can be combined into larger figures and adjusted afterwards.
"""

from __future__ import annotations

import numpy as np

from ._sequences import check_numeric_sequence, check_ordering

__all__ = [
    "plot_accuracy_by_length",
    "plot_convex_hull",
    "plot_memory_trace",
    "plot_pointer_attention",
    "plot_search_scores",
    "plot_tour",
]

_MISSING_MATPLOTLIB = (
    "skptr.plotting needs matplotlib, which is not installed. Install it with "
    "'pip install \"skptr[plot]\"' (or 'pip install matplotlib')."
)


def _pyplot():
    """Import and return ``matplotlib.pyplot``, with a clear error when it is missing."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise ImportError(_MISSING_MATPLOTLIB) from error
    return plt


def _axes(ax, figsize=None):
    plt = _pyplot()
    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    return ax


def _points(points, name="points"):
    """One point set as a float array of shape (n_points, 2)."""
    points = check_numeric_sequence(points, name=name)
    if points.shape[1] != 2:
        raise ValueError(f"{name} must have 2 coordinates per point, got {points.shape[1]}.")
    return points


def _ordering(indices, points, name):
    """One ordering of ``points``, validated, without its -1 padding."""
    return check_ordering(indices, name=name, n_positions=len(points), sequence_name="points")


def plot_pointer_attention(
    probabilities,
    inputs=None,
    *,
    ordering=None,
    show_end="auto",
    ax=None,
    cmap="viridis",
    colorbar=True,
):
    """Draw the pointer distributions of one sample as a heatmap.

    Row ``k`` of the heatmap is the distribution over input positions at output step
    ``k``, as returned by :meth:`PointerNetworkOrderer.predict_proba
    <skptr.PointerNetworkOrderer.predict_proba>` for one sample.

    Parameters
    ----------
    probabilities : array-like of shape (n_outputs, n_positions + 1)
        One sample of ``predict_proba``: the last column is the probability of ending
        the output. Rows that are all zero (steps after the end) are dropped.
    inputs : array-like of shape (n_positions,), default=None
        The input values, used to label the columns (numbers are shown with up to three
        significant digits). When None, columns are labelled by position.
    ordering : array-like of shape (n_outputs,), default=None
        The decoded ordering of the sample (e.g. a row of ``predict``); when given, the
        chosen position of each step is outlined and rows are labelled with the element
        chosen.
    show_end : {"auto", True, False}, default="auto"
        Whether to show the end-of-output column. "auto" shows it when it holds any
        probability (models fitted on ordered subsets).
    ax : matplotlib Axes, default=None
        Axes to draw into; a new figure is created when None.
    cmap : str or Colormap, default="viridis"
        Colormap of the heatmap.
    colorbar : bool, default=True
        Whether to add a colorbar.

    Returns
    -------
    ax : matplotlib Axes
        The Axes holding the heatmap (an ``AxesImage`` whose array is the plotted
        probabilities).

    Examples
    --------
    >>> import numpy as np
    >>> from skptr.plotting import plot_pointer_attention
    >>> proba = np.array([[0.1, 0.9, 0.0], [1.0, 0.0, 0.0]])
    >>> ax = plot_pointer_attention(proba, inputs=[3.0, 7.0], ordering=[1, 0])
    >>> ax.images[0].get_array().shape
    (2, 2)
    """
    proba = np.asarray(probabilities, dtype=np.float64)
    if proba.ndim != 2 or proba.shape[1] < 2:
        raise ValueError(
            "probabilities must have shape (n_outputs, n_positions + 1), one sample of "
            f"predict_proba; got shape {proba.shape}."
        )
    if show_end not in ("auto", True, False):
        raise ValueError(f"show_end must be 'auto', True or False, got {show_end!r}.")
    proba = proba[np.any(proba > 0, axis=1)]
    n_positions = proba.shape[1] - 1
    if inputs is not None:
        inputs = check_numeric_sequence(inputs, name="inputs")
        if len(inputs) > n_positions:
            raise ValueError(
                f"inputs must hold at most {n_positions} elements, one per position; "
                f"got {len(inputs)}."
            )
        n_positions = len(inputs)
    end = bool(np.any(proba[:, -1] > 0)) if show_end == "auto" else bool(show_end)
    shown = proba[:, :n_positions]
    if end:
        shown = np.concatenate([shown, proba[:, -1:]], axis=1)

    ax = _axes(ax)
    from matplotlib.patches import Rectangle

    image = ax.imshow(shown, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto")
    if inputs is None:
        column_labels = [str(j) for j in range(n_positions)]
    else:
        scalars = inputs.shape[1] == 1
        column_labels = [f"{v[0]:.3g}" if scalars else str(j) for j, v in enumerate(inputs)]
    if end:
        column_labels.append("end")
    ax.set_xticks(np.arange(len(column_labels)), column_labels)
    ax.set_yticks(np.arange(shown.shape[0]))
    if ordering is not None:
        order = check_ordering(ordering, name="ordering", n_positions=n_positions)
        # The steps after the ordering's last index chose the end, when it is shown.
        after = [n_positions] if end else []
        columns = [*order.tolist(), *after * (len(proba) - order.size)][: len(proba)]
        for k, column in enumerate(columns):
            ax.add_patch(
                Rectangle(
                    (column - 0.5, k - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=1.5
                )
            )
        rows = [column_labels[column] for column in columns]
        rows += [""] * (len(proba) - len(rows))
        ax.set_yticklabels([f"{k}: {label}" for k, label in enumerate(rows)])
    ax.set_xlabel("input position" if inputs is None else "input element")
    ax.set_ylabel("output step")
    if colorbar:
        ax.figure.colorbar(image, ax=ax, label="pointer probability")
    return ax


def _closed(points, order):
    cycle = np.concatenate([order, order[:1]])
    return points[cycle]


def plot_convex_hull(points, hull, true_hull=None, *, ax=None, title=True):
    """Draw a point set with a predicted convex hull, and its errors.

    The predicted hull is drawn as a closed polygon over the points. When the true hull
    is given it is drawn dashed underneath, and the errors are highlighted: true hull
    vertices the prediction missed are circled in red, predicted vertices that are not
    on the true hull are marked with a red cross.

    Parameters
    ----------
    points : array-like of shape (n_points, 2)
        The point set.
    hull : array-like of shape (n_vertices,)
        Predicted hull vertices in order (indices into ``points``, -1 padding ignored),
        e.g. a row of :meth:`PointerNetworkOrderer.predict
        <skptr.PointerNetworkOrderer.predict>`.
    true_hull : array-like of shape (n_true_vertices,), default=None
        The true hull vertices in order, e.g. from
        :func:`skptr.datasets.make_convex_hull`.
    ax : matplotlib Axes, default=None
        Axes to draw into; a new figure is created when None.
    title : bool or str, default=True
        A string sets the title; True writes whether the prediction is exact (when
        ``true_hull`` is given) and how many vertices it has.

    Returns
    -------
    ax : matplotlib Axes
        Its first line is the predicted polygon, closed (its data are the coordinates
        of the hull vertices in order, the first repeated at the end).

    Examples
    --------
    >>> from skptr.plotting import plot_convex_hull
    >>> points = [[0, 0], [1, 0], [1, 1], [0, 1], [0.5, 0.5]]
    >>> ax = plot_convex_hull(points, [0, 1, 2, 3], true_hull=[0, 1, 2, 3])
    >>> ax.get_title()
    'exact: 4 vertices'
    """
    points = _points(points)
    order = _ordering(hull, points, "hull")
    ax = _axes(ax, figsize=(4, 4))
    polygon = _closed(points, order) if order.size else np.zeros((0, 2))
    ax.plot(polygon[:, 0], polygon[:, 1], "-", color="C0", linewidth=1.8, label="predicted")
    exact = None
    if true_hull is not None:
        truth = _ordering(true_hull, points, "true_hull")
        true_polygon = _closed(points, truth)
        ax.plot(
            true_polygon[:, 0],
            true_polygon[:, 1],
            "--",
            color="0.5",
            linewidth=1.0,
            label="true",
            zorder=1,
        )
        missed = np.setdiff1d(truth, order)
        extra = np.setdiff1d(order, truth)
        if missed.size:
            ax.scatter(
                points[missed, 0],
                points[missed, 1],
                s=120,
                facecolors="none",
                edgecolors="red",
                linewidths=1.5,
                label="missed",
                zorder=3,
            )
        if extra.size:
            ax.scatter(
                points[extra, 0],
                points[extra, 1],
                s=80,
                marker="x",
                color="red",
                label="wrong",
                zorder=3,
            )
        exact = _same_cycle(order, truth)
    ax.scatter(points[:, 0], points[:, 1], s=12, color="k", zorder=2)
    ax.set_aspect("equal")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    if title is True:
        prefix = "" if exact is None else ("exact: " if exact else "wrong: ")
        ax.set_title(f"{prefix}{order.size} vertices")
    elif title:
        ax.set_title(title)
    return ax


def _same_cycle(a, b):
    """Whether two orderings describe the same cycle, in the same direction."""
    if a.size != b.size:
        return False
    if a.size == 0:
        return True
    shift = np.flatnonzero(a == b[0])
    return bool(shift.size) and bool(np.array_equal(np.roll(a, -int(shift[0])), b))


def plot_tour(points, tour, *, ax=None, title=True, color="C0", label=None):
    """Draw a closed travelling-salesman tour.

    Parameters
    ----------
    points : array-like of shape (n_cities, 2)
        City coordinates.
    tour : array-like of shape (n_cities,)
        The order in which the cities are visited (indices into ``points``, -1 padding
        ignored), e.g. a row of :meth:`PointerNetworkOrderer.predict
        <skptr.PointerNetworkOrderer.predict>` or of the labels of
        :func:`skptr.datasets.make_tsp`. The return to the first city is drawn.
    ax : matplotlib Axes, default=None
        Axes to draw into; a new figure is created when None.
    title : bool or str, default=True
        A string sets the title; True writes the tour length (as computed by
        :func:`skptr.metrics.tour_length`).
    color : color, default="C0"
        Colour of the tour.
    label : str, default=None
        Legend label of the tour.

    Returns
    -------
    ax : matplotlib Axes
        Its last line is the tour, closed: its data are the coordinates of the visited
        cities in order, the first city repeated at the end. The first city is marked
        with a square.

    Examples
    --------
    >>> from skptr.plotting import plot_tour
    >>> ax = plot_tour([[0, 0], [1, 0], [1, 1], [0, 1]], [0, 1, 2, 3])
    >>> ax.get_title()
    'length 4.000'
    """
    points = _points(points)
    order = _ordering(tour, points, "tour")
    ax = _axes(ax, figsize=(4, 4))
    ax.scatter(points[:, 0], points[:, 1], s=14, color="k", zorder=3)
    if order.size:
        ax.scatter(*points[order[0]], s=60, marker="s", color=color, zorder=4)
    path = _closed(points, order) if order.size else np.zeros((0, 2))
    ax.plot(path[:, 0], path[:, 1], "-", color=color, linewidth=1.6, label=label, zorder=2)
    length = float(np.linalg.norm(np.diff(path, axis=0), axis=1).sum()) if order.size else 0.0
    ax.set_aspect("equal")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    if title is True:
        ax.set_title(f"length {length:.3f}")
    elif title:
        ax.set_title(title)
    return ax


_END_NAMES = {0: "top", 1: "bottom"}


def plot_memory_trace(trace, tokens=None, *, axes=None, cmap="Blues", colorbar=True):
    """Draw how a transducer uses its memory over time.

    Two panels share the time axis: the push and pop strengths of each step (one line
    each; the deque has one pair per end), and the strength of every memory slot after
    each step as a heatmap (the memory contents over time; slot 0 at the bottom).

    Parameters
    ----------
    trace : dict
        The memory trace of one sample, one item of the list returned by
        :meth:`NeuralStackTransducer.memory_trace
        <skptr.NeuralStackTransducer.memory_trace>`: arrays ``"push"`` and ``"pop"`` of
        shape ``(n_steps,)`` or ``(n_steps, n_ends)`` and ``"strengths"`` of shape
        ``(n_steps, n_slots)``; optionally ``"source"`` and ``"output"``, the tokens
        read and produced. Other keys are ignored.
    tokens : sequence, default=None
        The token fed to the controller at each step, used to label the time axis. By
        default, when the trace holds ``"source"`` and ``"output"`` with ``len(source)
        + len(output) + 1`` steps in all, the source tokens, a separator ``"|"`` and
        the output tokens.
    axes : sequence of two matplotlib Axes, default=None
        Axes for the strengths of the operations and for the memory; a new figure with
        two rows is created when None.
    cmap : str or Colormap, default="Blues"
        Colormap of the memory heatmap.
    colorbar : bool, default=True
        Whether to add a colorbar to the memory heatmap.

    Returns
    -------
    fig : matplotlib Figure
        The figure; ``fig.axes[0]`` holds the push and pop lines, ``fig.axes[1]`` the
        memory heatmap.

    Examples
    --------
    >>> import numpy as np
    >>> from skptr.plotting import plot_memory_trace
    >>> trace = {"push": np.array([1.0, 1.0, 0.0]), "pop": np.array([0.0, 0.0, 1.0]),
    ...          "strengths": np.array([[1.0, 0, 0], [1.0, 1.0, 0], [1.0, 0.0, 0.0]])}
    >>> fig = plot_memory_trace(trace, tokens="abX")
    >>> len(fig.axes[0].lines)
    2
    """
    try:
        push = np.asarray(trace["push"], dtype=np.float64)
        pop = np.asarray(trace["pop"], dtype=np.float64)
        strengths = np.asarray(trace["strengths"], dtype=np.float64)
    except (KeyError, TypeError, IndexError):
        raise ValueError(
            "trace must be a mapping with the arrays 'push', 'pop' and 'strengths' of one sample."
        ) from None
    push = push.reshape(len(push), -1)
    pop = pop.reshape(len(pop), -1)
    n_steps = len(push)
    if strengths.ndim != 2 or len(strengths) != n_steps or len(pop) != n_steps:
        raise ValueError(
            "push and pop must have one row per step and strengths shape (n_steps, "
            f"n_slots); got {push.shape}, {pop.shape} and {strengths.shape}."
        )
    if tokens is None and "source" in trace and "output" in trace:
        fed = [*trace["source"], "|", *trace["output"]]
        tokens = fed if len(fed) == n_steps else None
    if tokens is not None and len(tokens) != n_steps:
        raise ValueError(f"tokens must hold one symbol per step ({n_steps}), got {len(tokens)}.")
    plt = _pyplot()
    if axes is None:
        fig, axes = plt.subplots(
            2,
            1,
            sharex=True,
            figsize=(max(5.0, 0.3 * n_steps + 2), 5),
            gridspec_kw={"height_ratios": [1, 2]},
            layout="constrained",
        )
    top, bottom = axes
    fig = top.figure
    steps = np.arange(n_steps)
    ends = push.shape[1]
    for end in range(ends):
        suffix = "" if ends == 1 else f" ({_END_NAMES.get(end, end)})"
        top.plot(steps, push[:, end], "-o", markersize=3, label=f"push{suffix}")
        top.plot(steps, pop[:, end], "-s", markersize=3, label=f"pop{suffix}")
    top.set_ylim(-0.05, 1.05)
    top.set_ylabel("strength")
    top.legend(loc="upper left", fontsize="small", ncol=2 * ends)
    used = np.flatnonzero(np.any(strengths > 1e-3, axis=0))
    low, high = (int(used.min()), int(used.max()) + 1) if used.size else (0, strengths.shape[1])
    image = bottom.imshow(
        strengths[:, low:high].T,
        origin="lower",
        aspect="auto",
        cmap=cmap,
        vmin=0.0,
        vmax=1.0,
        extent=(-0.5, n_steps - 0.5, low - 0.5, high - 0.5),
        interpolation="nearest",
    )
    bottom.set_ylabel("memory slot")
    bottom.set_xlabel("time step")
    if tokens is not None:
        bottom.set_xticks(steps, [str(t) for t in tokens])
    if colorbar:
        # Taking the colorbar's room from both panels keeps their time axes aligned.
        fig.colorbar(image, ax=[top, bottom], label="slot strength", fraction=0.05, pad=0.02)
    return fig


def plot_accuracy_by_length(
    lengths,
    scores,
    *,
    train_lengths=None,
    ax=None,
    ylabel="accuracy",
    marker="o",
):
    """Draw accuracy against sequence length, one line per model.

    Parameters
    ----------
    lengths : array-like of shape (n_lengths,)
        Sequence lengths on the horizontal axis.
    scores : dict of str to array-like of shape (n_lengths,)
        For each model (the legend label), its score at each length.
    train_lengths : tuple of two numbers, default=None
        ``(min, max)`` of the training lengths, shaded so that extrapolation beyond the
        training range stands out.
    ax : matplotlib Axes, default=None
        Axes to draw into; a new figure is created when None.
    ylabel : str, default="accuracy"
        Label of the vertical axis (e.g. "fine accuracy").
    marker : str, default="o"
        Marker of the points.

    Returns
    -------
    ax : matplotlib Axes
        One line per entry of ``scores``, in order, labelled with its key.

    Examples
    --------
    >>> from skptr.plotting import plot_accuracy_by_length
    >>> ax = plot_accuracy_by_length([5, 10], {"stack": [1.0, 0.9], "none": [0.8, 0.2]})
    >>> [line.get_label() for line in ax.lines]
    ['stack', 'none']
    """
    lengths = np.asarray(lengths, dtype=np.float64)
    if lengths.ndim != 1:
        raise ValueError(f"lengths must be 1-D, got shape {lengths.shape}.")
    if not isinstance(scores, dict) or not scores:
        raise ValueError("scores must be a non-empty dict mapping a label to its scores.")
    ax = _axes(ax)
    for label, values in scores.items():
        values = np.asarray(values, dtype=np.float64)
        if values.shape != lengths.shape:
            raise ValueError(
                f"scores[{label!r}] has shape {values.shape}, expected {lengths.shape} (one "
                "score per length)."
            )
        ax.plot(lengths, values, marker=marker, label=str(label))
    if train_lengths is not None:
        low, high = train_lengths
        ax.axvspan(low, high, color="0.9", zorder=0, label="training lengths")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("sequence length")
    ax.set_ylabel(ylabel)
    ax.legend(loc="best", fontsize="small")
    return ax


def plot_search_scores(search, param, *, ax=None, log_scale=None, train_scores=True):
    """Draw cross-validated scores of a hyperparameter search against one parameter.

    Parameters
    ----------
    search : fitted GridSearchCV or RandomizedSearchCV, or dict
        A fitted search, or its ``cv_results_`` dict.
    param : str
        Name of the parameter on the horizontal axis, e.g. ``"hidden_size"``. When the
        search varied other parameters too, the best score over them is drawn for each
        value.
    ax : matplotlib Axes, default=None
        Axes to draw into; a new figure is created when None.
    log_scale : bool, default=None
        Logarithmic horizontal axis; None uses one when all values are positive numbers
        spanning more than a factor of 10.
    train_scores : bool, default=True
        Also draw the training scores when the search recorded them
        (``return_train_score=True``).

    Returns
    -------
    ax : matplotlib Axes
        The mean test score is the first line (its data are the parameter values and
        the mean scores); the shaded band is one standard deviation across folds.

    Examples
    --------
    >>> from skptr.plotting import plot_search_scores
    >>> results = {"param_hidden_size": [8, 16], "mean_test_score": [0.5, 0.9],
    ...            "std_test_score": [0.1, 0.05]}
    >>> ax = plot_search_scores(results, "hidden_size")
    >>> ax.lines[0].get_ydata().tolist()
    [0.5, 0.9]
    """
    results = getattr(search, "cv_results_", search)
    key = f"param_{param}"
    if not isinstance(results, dict) or key not in results:
        raise ValueError(f"the search results hold no parameter {param!r} ({key!r} is missing).")
    values = np.asarray(results[key], dtype=object)
    numeric = all(isinstance(v, int | float | np.number) for v in values)
    unique = sorted(set(values.tolist()), key=lambda v: (str(type(v)), v))
    x = np.asarray(unique, dtype=np.float64) if numeric else np.arange(len(unique))

    def best(name):
        means = np.asarray(results[f"mean_{name}_score"], dtype=np.float64)
        stds = np.asarray(results[f"std_{name}_score"], dtype=np.float64)
        chosen = [np.flatnonzero(values == v)[np.argmax(means[values == v])] for v in unique]
        return means[chosen], stds[chosen]

    ax = _axes(ax)
    kinds = ["test"]
    if train_scores and "mean_train_score" in results:
        kinds.append("train")
    for name in kinds:
        mean, std = best(name)
        (line,) = ax.plot(x, mean, "-o", label=f"{name} (cross-validated)")
        ax.fill_between(x, mean - std, mean + std, color=line.get_color(), alpha=0.2)
    if log_scale is None:
        log_scale = numeric and bool(np.all(x > 0)) and x.max() / x.min() > 10
    if log_scale:
        ax.set_xscale("log")
    if numeric:
        ax.set_xticks(x, [str(v) for v in unique])
        ax.minorticks_off()
    else:
        ax.set_xticks(x, [str(v) for v in unique])
    ax.set_xlabel(param)
    ax.set_ylabel("score")
    ax.legend(loc="best", fontsize="small")
    return ax
