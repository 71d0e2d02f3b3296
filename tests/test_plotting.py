"""Tests of skptr.plotting: what is drawn, and the error without matplotlib."""

import sys

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.image import AxesImage  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from skptr import plotting  # noqa: E402
from skptr.metrics import tour_length  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


SQUARE = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [0.5, 0.5]])


# ----------------------------------------------------------------- pointer attention
def test_pointer_attention_draws_the_distributions_and_the_choices():
    proba = np.array(
        [
            [0.1, 0.8, 0.1, 0.0],
            [0.7, 0.0, 0.3, 0.0],
            [0.0, 0.0, 1.0, 0.0],
            [0.0, 0.0, 0.0, 0.0],  # after the end: dropped
        ]
    )
    ax = plotting.plot_pointer_attention(proba, inputs=[2.0, 9.0, 1.0], ordering=[1, 0, 2])
    (image,) = [a for a in ax.get_children() if isinstance(a, AxesImage)]
    np.testing.assert_array_equal(image.get_array(), proba[:3, :3])  # no end column
    assert [t.get_text() for t in ax.get_xticklabels()] == ["2", "9", "1"]
    boxes = [p for p in ax.patches if isinstance(p, Rectangle)]
    assert [(b.get_x() + 0.5, b.get_y() + 0.5) for b in boxes] == [(1, 0), (0, 1), (2, 2)]
    assert ax.get_xlabel() == "input element"
    assert ax.get_ylabel() == "output step"
    assert len(ax.figure.axes) == 2  # the heatmap and its colorbar


def test_pointer_attention_shows_the_end_column_when_used():
    proba = np.array([[0.9, 0.1, 0.0], [0.0, 0.2, 0.8]])
    ax = plotting.plot_pointer_attention(proba, ordering=[0, -1], colorbar=False)
    assert ax.images[0].get_array().shape == (2, 3)
    assert ax.get_xticklabels()[-1].get_text() == "end"
    assert ax.get_xlabel() == "input position"
    ends = [p for p in ax.patches if p.get_x() + 0.5 == 2]
    assert len(ends) == 1
    assert len(ax.figure.axes) == 1


def test_pointer_attention_rejects_a_batch():
    with pytest.raises(ValueError, match="one sample of predict_proba"):
        plotting.plot_pointer_attention(np.zeros((2, 3, 4)))


# -------------------------------------------------------------------- convex hull
def test_convex_hull_exact_prediction():
    ax = plotting.plot_convex_hull(SQUARE, [0, 1, 2, 3, -1], true_hull=[0, 1, 2, 3])
    predicted, true = ax.lines
    np.testing.assert_array_equal(predicted.get_xydata(), SQUARE[[0, 1, 2, 3, 0]])
    np.testing.assert_array_equal(true.get_xydata(), SQUARE[[0, 1, 2, 3, 0]])
    assert ax.get_title() == "exact: 4 vertices"
    # only the point cloud: no markers for misses or wrong vertices
    assert len(ax.collections) == 1


def test_convex_hull_highlights_misses_and_wrong_vertices():
    ax = plotting.plot_convex_hull(SQUARE, [0, 1, 4], true_hull=[0, 1, 2, 3])
    assert ax.get_title() == "wrong: 3 vertices"
    labels = {c.get_label(): c for c in ax.collections}
    np.testing.assert_array_equal(labels["missed"].get_offsets(), SQUARE[[2, 3]])
    np.testing.assert_array_equal(labels["wrong"].get_offsets(), SQUARE[[4]])
    assert ax.get_xlabel() == "x" and ax.get_ylabel() == "y"


def test_convex_hull_same_cycle_rotated_is_exact():
    ax = plotting.plot_convex_hull(SQUARE, [2, 3, 0, 1], true_hull=[0, 1, 2, 3])
    assert ax.get_title().startswith("exact")
    ax = plotting.plot_convex_hull(SQUARE, [0, 3, 2, 1], true_hull=[0, 1, 2, 3])
    assert ax.get_title().startswith("wrong")  # clockwise


def test_convex_hull_rejects_out_of_range_indices():
    with pytest.raises(ValueError, match=r"hull holds index 7, outside the 5 positions of points"):
        plotting.plot_convex_hull(SQUARE, [0, 1, 7])


def test_orderings_and_points_follow_the_rules_of_the_estimators():
    with pytest.raises(ValueError, match=r"tour repeats index 1"):
        plotting.plot_tour(SQUARE, [0, 1, 1])
    with pytest.raises(ValueError, match=r"true_hull has -1 padding before its last index"):
        plotting.plot_convex_hull(SQUARE, [0, 1, 2], true_hull=[0, -1, 2])
    with pytest.raises(ValueError, match=r"points contains NaN or infinity \(first at step 1\)"):
        plotting.plot_tour([[0.0, 0.0], [np.nan, 1.0], [1.0, 1.0]], [0, 1, 2])
    with pytest.raises(ValueError, match=r"points must have 2 coordinates per point, got 3"):
        plotting.plot_tour(np.zeros((3, 3)), [0, 1, 2])
    with pytest.raises(ValueError, match=r"ordering holds index 5, outside the 2 positions"):
        plotting.plot_pointer_attention(np.eye(3), ordering=[0, 5])


# --------------------------------------------------------------------------- tours
def test_tour_line_is_the_closed_tour_and_the_title_its_length():
    rng = np.random.RandomState(0)
    points = rng.uniform(size=(7, 2))
    tour = np.array([0, 3, 5, 1, 6, 2, 4])
    ax = plotting.plot_tour(points, tour, label="predicted")
    line = ax.lines[-1]
    np.testing.assert_allclose(line.get_xydata(), points[np.append(tour, 0)])
    assert line.get_label() == "predicted"
    expected = tour_length(points[None], tour[None])[0]
    assert ax.get_title() == f"length {expected:.3f}"
    assert ax.get_xlabel() == "x" and ax.get_ylabel() == "y"


def test_tour_into_given_axes_with_custom_title():
    _, ax = plt.subplots()
    returned = plotting.plot_tour(SQUARE[:4], [0, 1, 2, 3, -1], ax=ax, title="optimal")
    assert returned is ax
    assert ax.get_title() == "optimal"
    assert len(ax.lines[-1].get_xdata()) == 5


# ----------------------------------------------------------------- memory trace
def _trace(n_steps=6, n_slots=6, ends=None):
    shape = (n_steps,) if ends is None else (n_steps, ends)
    strengths = np.tril(np.ones((n_steps, n_slots)))
    return {
        "push": np.linspace(0, 1, n_steps).reshape(-1, 1) * np.ones(shape).reshape(n_steps, -1),
        "pop": np.zeros(shape),
        "strengths": strengths,
        "read": np.zeros((n_steps, 3)),
    }


def test_memory_trace_draws_push_pop_and_strengths():
    trace = _trace()
    fig = plotting.plot_memory_trace(trace, tokens="abc|cb")
    top, bottom = fig.axes[:2]
    assert [line.get_label() for line in top.lines] == ["push", "pop"]
    np.testing.assert_allclose(top.lines[0].get_ydata(), trace["push"].ravel())
    image = bottom.images[0]
    np.testing.assert_array_equal(image.get_array(), trace["strengths"].T)
    assert [t.get_text() for t in bottom.get_xticklabels()] == list("abc|cb")
    assert bottom.get_xlabel() == "time step"
    assert bottom.get_ylabel() == "memory slot"
    assert top.get_ylabel() == "strength"
    assert len(fig.axes) == 3  # with the colorbar


def test_memory_trace_labels_steps_with_source_and_output():
    trace = {**_trace(n_steps=6), "source": "abc", "output": ["c", "b"]}
    fig = plotting.plot_memory_trace(trace, colorbar=False)
    assert [t.get_text() for t in fig.axes[1].get_xticklabels()] == list("abc|cb")


def test_memory_trace_of_a_deque_has_a_pair_of_lines_per_end():
    fig = plotting.plot_memory_trace(_trace(ends=2), colorbar=False)
    labels = [line.get_label() for line in fig.axes[0].lines]
    assert labels == ["push (top)", "pop (top)", "push (bottom)", "pop (bottom)"]


def test_memory_trace_crops_unused_slots():
    trace = _trace(n_steps=3, n_slots=10)
    trace["strengths"] = np.zeros((3, 10))
    trace["strengths"][:, 4:6] = 0.5
    fig = plotting.plot_memory_trace(trace, colorbar=False)
    assert fig.axes[1].images[0].get_array().shape == (2, 3)


def test_memory_trace_checks_its_input():
    with pytest.raises(ValueError, match="'push', 'pop' and 'strengths'"):
        plotting.plot_memory_trace({"push": [1.0]})
    with pytest.raises(ValueError, match="one symbol per step"):
        plotting.plot_memory_trace(_trace(), tokens="ab")


# ------------------------------------------------------------- accuracy by length
def test_accuracy_by_length_one_line_per_model():
    lengths = [5, 10, 20]
    scores = {"stack": [1.0, 1.0, 0.9], "no memory": [0.9, 0.4, 0.1]}
    ax = plotting.plot_accuracy_by_length(
        lengths, scores, train_lengths=(1, 10), ylabel="fine accuracy"
    )
    assert [line.get_label() for line in ax.lines] == ["stack", "no memory"]
    np.testing.assert_array_equal(ax.lines[1].get_xdata(), lengths)
    np.testing.assert_array_equal(ax.lines[1].get_ydata(), scores["no memory"])
    assert ax.get_xlabel() == "sequence length"
    assert ax.get_ylabel() == "fine accuracy"
    assert len(ax.patches) == 1  # the shaded training range


def test_accuracy_by_length_checks_shapes():
    with pytest.raises(ValueError, match="one score per length"):
        plotting.plot_accuracy_by_length([1, 2], {"a": [1.0]})


# ---------------------------------------------------------------- search scores
def test_search_scores_best_per_value_with_band():
    results = {
        "param_hidden_size": np.ma.array([8, 8, 32, 32], dtype=object),
        "param_cell": np.ma.array(["lstm", "gru", "lstm", "gru"], dtype=object),
        "mean_test_score": [0.5, 0.6, 0.9, 0.8],
        "std_test_score": [0.1, 0.1, 0.05, 0.05],
        "mean_train_score": [0.55, 0.65, 0.95, 0.85],
        "std_train_score": [0.0, 0.0, 0.0, 0.0],
    }
    ax = plotting.plot_search_scores(results, "hidden_size")
    test, train = ax.lines
    np.testing.assert_array_equal(test.get_xdata(), [8, 32])
    np.testing.assert_array_equal(test.get_ydata(), [0.6, 0.9])
    np.testing.assert_array_equal(train.get_ydata(), [0.65, 0.95])
    assert len(ax.collections) == 2  # one band per line
    assert ax.get_xlabel() == "hidden_size"
    assert ax.get_ylabel() == "score"


def test_search_scores_unknown_parameter():
    with pytest.raises(ValueError, match="no parameter 'depth'"):
        plotting.plot_search_scores({"param_hidden_size": [1]}, "depth")


# ----------------------------------------------------------- missing matplotlib
@pytest.mark.parametrize(
    ("function", "args"),
    [
        (plotting.plot_pointer_attention, (np.eye(3),)),
        (plotting.plot_convex_hull, (SQUARE, [0, 1, 2])),
        (plotting.plot_tour, (SQUARE, [0, 1, 2])),
        (plotting.plot_memory_trace, (_trace(),)),
        (plotting.plot_accuracy_by_length, ([1], {"a": [1.0]})),
        (plotting.plot_search_scores, ({"param_a": [1], "mean_test_score": [1.0]}, "a")),
    ],
)
def test_missing_matplotlib_gives_a_clear_error(monkeypatch, function, args):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match=r"needs matplotlib.*skptr\[plot\]"):
        function(*args)
