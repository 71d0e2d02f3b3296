"""Learning orderings from a cost: the built-in costs, the REINFORCE gradient, fits
without labels, decoding that keeps the cheapest candidate, persistence and bad costs."""

import itertools
import pickle

import keras
import numpy as np
import pytest
from _files import tampered
from _marks import once, once_on_jax
from scipy.spatial.distance import pdist
from sklearn.model_selection import GridSearchCV
from sklearn.utils._param_validation import InvalidParameterError

from skptr import PointerNetworkOrderer, load, metrics
from skptr._sequences import check_numeric_sequences
from skptr.costs import path_length, tour_length
from skptr.pointer import _sizes
from skptr.pointer._layers import PointerNetwork
from skptr.pointer._reinforce import CostTrainer, graph_costs, graph_length
from skptr.pointer._symmetries import mirror_images

TINY = {"hidden_size": 8, "encoder": "attention", "epochs": 1, "batch_size": 32}


def _points(n_samples, n_cities, seed):
    return np.random.default_rng(seed).random((n_samples, n_cities, 2))


def _optimal_tours(X):
    """Exact shortest tours by enumeration (small cities only)."""
    rest = list(itertools.permutations(range(1, X.shape[1])))
    tours = np.array([[0, *p] for p in rest])
    return np.array([tour_length(np.repeat(x[None], len(tours), 0), tours).min() for x in X])


def user_tour(X, orderings):
    """A cost written as a user would: the closed tour through the points."""
    costs = []
    for points, ordering in zip(X, orderings, strict=True):
        visited = np.asarray(points)[ordering[ordering >= 0]]
        costs.append(np.linalg.norm(visited - np.roll(visited, -1, axis=0), axis=1).sum())
    return np.array(costs)


def test_built_in_costs_match_hand_computed_tours():
    square = [[[0, 0], [1, 1], [0, 1], [1, 0]]]
    assert tour_length(square, [[0, 2, 1, 3]]).tolist() == [4.0]
    assert tour_length(square, [[0, 1, 2, 3]])[0] == pytest.approx(2 + 2 * np.sqrt(2))
    assert path_length([[0.0, 3.0, 1.0]], [[0, 2, 1]]).tolist() == [3.0]
    ragged = [np.array([[0, 0], [3, 4]]), np.array([[0, 0], [1, 0], [1, 1]])]
    np.testing.assert_allclose(tour_length(ragged, [[1, 0], [0, 1, 2]]), [10, 2 + np.sqrt(2)])
    np.testing.assert_allclose(path_length(ragged, [[1, 0, -1], [2, 1, 0]]), [5, 2])


def test_in_graph_costs_equal_the_numpy_costs():
    rng = np.random.default_rng(0)
    X = [rng.random((n, 3)) for n in (1, 2, 5, 7)]
    orderings = [rng.permutation(len(x)) for x in X]
    values = np.zeros((4, 7, 3), dtype="float32")
    padded = np.full((4, 7), -1, dtype="int32")
    for i, (x, ordering) in enumerate(zip(X, orderings, strict=True)):
        values[i, : len(x)], padded[i, : len(x)] = x, ordering
    for closed, numpy_cost in ((True, tour_length), (False, path_length)):
        in_graph = keras.ops.convert_to_numpy(graph_length(values, padded, closed))
        np.testing.assert_allclose(in_graph, numpy_cost(X, orderings), rtol=1e-5)


def test_one_route_length_for_costs_and_metrics():
    assert tour_length is metrics.tour_length
    X = np.array([[[0, 0], [3, 4], [6, 8]]] * 2, dtype=float)
    # An ordering may leave elements out: the length is that of the listed ones.
    np.testing.assert_allclose(tour_length(X, [[0, 1, 2], [2, 0, -1]]), [20, 20])
    np.testing.assert_allclose(path_length(X, [[0, 1, 2], [2, 0, -1]]), [10, 10])
    with pytest.raises(ValueError, match="orderings"):
        path_length(X, [[0, 0, 1], [0, 1, 2]])


SAMPLED_ROLLOUTS = 8


def _sampled_and_exact_gradients(every_start, n_instances):
    """The training loss and its gradient on ``n_instances`` copies of three points
    (path cost), and the expected cost and its exact gradient over the six orderings,
    each weighted by its probability (given its start with ``every_start``: one
    rollout from each start, else 8 sampled ones)."""
    import tensorflow as tf

    points = np.array([[0.0, 0.0], [1.0, 0.2], [0.3, 0.9]], dtype="float32")
    network = PointerNetwork(hidden_size=8, encoder="attention", seed=3).build_for(2)
    n_rollouts = None if every_start else SAMPLED_ROLLOUTS
    trainer = CostTrainer(network, graph_costs("path"), n_rollouts, every_start, seed=0)
    inputs = {
        "values": np.repeat(points[None], n_instances, 0),
        "lengths": np.full(n_instances, 3, "int32"),
        "index": np.zeros(n_instances, "int32"),
    }
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(trainer(inputs, training=True))
    sampled = tape.gradient(loss, network.trainable_variables)
    orderings = np.array(list(itertools.permutations(range(3))), dtype="int32")
    costs = path_length(np.repeat(points[None], 6, 0), orderings).astype("float32")
    every = {"values": inputs["values"][:6], "lengths": inputs["lengths"][:6]}
    with tf.GradientTape() as tape:
        log_probs = tf.nn.log_softmax(network({**every, "targets": orderings}), axis=-1)
        picked = tf.gather(log_probs, orderings, axis=2, batch_dims=2)
        if every_start:  # the start was given, not chosen
            picked = picked[:, 1:]
        expected = tf.reduce_sum(tf.exp(tf.reduce_sum(picked, axis=1)) * costs)
    exact = tape.gradient(expected, network.trainable_variables)

    def flat(gradients):
        return np.concatenate([np.ravel(g) for g in gradients])

    return float(loss), float(expected), flat(sampled), flat(exact)


@once
def test_the_gradient_is_the_reinforce_estimate_of_the_expected_costs_gradient():
    # Three points, so the six orderings' probabilities are exact: the mean gradient of
    # many rollouts with the shared baseline is (K - 1) / K times the gradient of the
    # expected cost (each rollout's baseline includes its own cost).
    loss, expected, sampled, exact = _sampled_and_exact_gradients(False, 4096)
    assert loss == pytest.approx(expected, rel=0.01)  # the mean cost
    exact = exact * (SAMPLED_ROLLOUTS - 1) / SAMPLED_ROLLOUTS
    assert np.linalg.norm(sampled - exact) < 0.05 * np.linalg.norm(exact)


@once
def test_the_gradient_from_every_start_leaves_the_given_start_out():
    # One rollout from each of the K = 3 starts; rollouts from different starts are
    # independent, so the mean gradient is (K - 1) / K**2 times the sum over the starts
    # of the gradient of the expected cost from that start.
    loss, expected, sampled, exact = _sampled_and_exact_gradients(True, 2048)
    assert loss == pytest.approx(expected / 3, rel=0.01)  # the mean cost
    exact = exact * 2 / 9
    assert np.linalg.norm(sampled - exact) < 0.05 * np.linalg.norm(exact)


@pytest.mark.slow
@once
def test_learns_five_city_tours_from_the_cost_alone():
    X, X_test = _points(1024, 5, seed=1), _points(200, 5, seed=2)
    est = PointerNetworkOrderer(
        hidden_size=32,
        encoder="attention",
        num_layers=1,
        cost="tour",
        epochs=4,
        batch_size=32,
        random_state=0,
    ).fit(X)
    optimum = _optimal_tours(X_test).mean()
    assert tour_length(X_test, est.predict(X_test)).mean() < 1.03 * optimum
    assert est.score(X_test) == pytest.approx(-tour_length(X_test, est.predict(X_test)).mean())


def _nearest_neighbour_tour(points):
    left, tour = list(range(1, len(points))), [0]
    while left:
        distances = np.linalg.norm(points[left] - points[tour[-1]], axis=1)
        tour.append(left.pop(int(np.argmin(distances))))
    return np.array(tour)


def test_one_model_trained_on_mixed_sizes_orders_larger_instances_than_it_saw():
    rng = np.random.default_rng(100)
    X = [rng.random((size, 2)) for size in rng.integers(5, 13, size=2000)]
    est = PointerNetworkOrderer(
        hidden_size=32,
        encoder="attention",
        num_layers=1,
        decoder_layers=1,
        attention="general",
        logit_clip=10,
        cost="tour",
        epochs=3,
        batch_size=64,
        learning_rate=2e-3,
        random_state=0,
    ).fit(X)
    # Twice and three times the largest training instance: shorter tours than the
    # nearest-neighbour rule's.
    for n_cities, bound in ((16, 0.96), (24, 1.0)):
        X_test = np.random.default_rng(200 + n_cities).random((100, n_cities, 2))
        tours = est.predict(X_test)
        assert all(np.array_equal(np.sort(tour), np.arange(n_cities)) for tour in tours)
        nearest = np.stack([_nearest_neighbour_tour(points) for points in X_test])
        ratio = tour_length(X_test, tours).mean() / tour_length(X_test, nearest).mean()
        assert ratio < bound, (n_cities, ratio)


def test_decoding_with_a_cost_keeps_the_cheapest_candidate():
    X = _points(64, 6, seed=3)
    est = PointerNetworkOrderer(cycle="undirected", cost="tour", random_state=0, **TINY).fit(X)
    est.set_params(cost=None)
    greedy = tour_length(X, est.predict(X))
    beam = tour_length(X, est.set_params(decode="beam", beam_width=3).predict(X))
    est.set_params(cost=user_tour)
    cheapest_beam = tour_length(X, est.predict(X))
    every_start = tour_length(X, est.set_params(decode="multistart").predict(X))
    # The likeliest hypotheses are among the candidates.
    assert np.all(cheapest_beam <= beam + 1e-9) and np.all(every_start <= greedy + 1e-9)
    assert every_start.mean() < greedy.mean()
    distributions = est.predict_proba(X)
    orderings = est.predict(X)
    chosen = np.take_along_axis(distributions, orderings[:, :, None], axis=2)
    assert np.all(chosen[:, 1:] > 0)  # the decoded orderings, after the given start
    np.testing.assert_allclose(distributions.sum(axis=2), 1, atol=1e-5)


def _mirror_image(X, image):
    """Image ``image`` of points ``X`` (n, cities, 2): bit 1 reflects the first
    coordinate, bit 2 the second, each about the middle of the sample's range in it,
    and bit 4 swaps the coordinates after."""
    low, high = X.min(axis=1, keepdims=True), X.max(axis=1, keepdims=True)
    flipped = np.array([image & 1, image & 2], dtype=bool)
    points = np.where(flipped, low + high - X, X)
    return points[..., ::-1] if image & 4 else points


def test_mirror_images_keep_every_distance_and_the_range_of_each_coordinate():
    rng = np.random.default_rng(9)
    ragged = [rng.random((n, 2)) * [3.0, 1.0] + [5.0, -2.0] for n in (3, 7, 5)]
    sequences = check_numeric_sequences(ragged)
    images = mirror_images({"values": sequences.values, "lengths": sequences.lengths}, 8)
    assert images["values"].shape == (24, 7, 2)
    np.testing.assert_array_equal(images["values"][::8], sequences.values)
    for i, points in enumerate(ragged):
        n = len(points)
        rows = images["values"][8 * i : 8 * i + 8]
        np.testing.assert_array_equal(images["lengths"][8 * i : 8 * i + 8], n)
        assert np.all(rows[:, n:] == 0)  # padding stays padding
        for image, row in enumerate(rows[:, :n]):
            np.testing.assert_allclose(pdist(row), pdist(points), atol=1e-5)
            np.testing.assert_allclose(row, _mirror_image(points[None], image)[0], atol=1e-5)
            box = np.stack([points.min(axis=0), points.max(axis=0)])
            box = box[:, ::-1] if image & 4 else box
            np.testing.assert_allclose(
                np.stack([row.min(axis=0), row.max(axis=0)]), box, atol=1e-5
            )
        assert len({row[:n].round(4).tobytes() for row in rows}) == 8


def test_decoding_mirror_images_keeps_the_best_candidate_of_every_image():
    # Points on a grid of 1/64: their reflections are exact in float32. 60 samples
    # decode in a few batches, each small enough to run the same way in every call.
    # Decoding is the subject: two training steps are enough.
    X = np.random.default_rng(10).integers(0, 64, size=(64, 6, 2)) / 64
    est = PointerNetworkOrderer(cycle="undirected", cost="tour", random_state=0, **TINY).fit(X)
    X = X[:60]
    for decoding in ({"decode": "greedy"}, {"decode": "beam", "beam_width": 3}):
        est.set_params(augment=False, **decoding)
        each_image = np.stack(
            [tour_length(X, est.predict(_mirror_image(X, image))) for image in range(8)]
        )
        est.set_params(augment=True)
        mirrored = est.predict(X)
        np.testing.assert_allclose(tour_length(X, mirrored), each_image.min(axis=0), rtol=1e-6)
        assert tour_length(X, mirrored).mean() < each_image[0].mean()
        # Batches of any size keep each sample's candidates together.
        pieces = np.concatenate([est.predict(X[i : i + 7]) for i in range(0, len(X), 7)])
        np.testing.assert_array_equal(pieces, mirrored)
    assert est.score(X) == pytest.approx(-tour_length(X, est.predict(X)).mean())

    def log_likelihood(X):
        orderings = est.predict(X)
        chosen = np.take_along_axis(est.predict_proba(X), orderings[:, :, None], axis=2)
        return np.log(chosen).sum(axis=(1, 2))

    for decoding in ({"decode": "greedy"}, {"decode": "beam", "beam_width": 3}):
        est.set_params(cost=None, augment=False, **decoding)
        each_image = np.stack([log_likelihood(_mirror_image(X, image)) for image in range(8)])
        est.set_params(augment=True)
        np.testing.assert_allclose(log_likelihood(X), each_image.max(axis=0), atol=1e-4)


def test_mirror_images_of_samples_of_different_lengths():
    rng = np.random.default_rng(12)
    ragged = [rng.random((n, 2)) for n in rng.integers(3, 7, size=40)]
    est = PointerNetworkOrderer(cycle="undirected", cost="tour", random_state=0, **TINY)
    est.fit(ragged)
    for decoding in ({"decode": "greedy"}, {"decode": "beam", "beam_width": 8}):
        alone = tour_length(ragged, est.set_params(augment=False, **decoding).predict(ragged))
        orderings = est.set_params(augment=True).predict(ragged)
        for points, ordering in zip(ragged, orderings, strict=True):
            assert sorted(ordering[ordering >= 0]) == list(range(len(points)))
        assert np.all(tour_length(ragged, orderings) <= alone + 1e-9)


@once
def test_mirror_images_need_points_in_the_plane():
    X = np.random.default_rng(11).random((16, 4, 3))
    est = PointerNetworkOrderer(cost=user_tour, augment=True, random_state=0, **TINY)
    with pytest.raises(ValueError, match=r"augment=True .* needs 2 features .* fitted on 3"):
        est.fit(X)
    assert not hasattr(est, "network_")
    est.set_params(augment=False).fit(X)
    with pytest.raises(ValueError, match=r"augment=True .* needs 2 features"):
        est.set_params(augment=True).predict(X)
    with pytest.raises(InvalidParameterError, match=r"'augment' parameter"):
        est.set_params(augment=8).fit(X)


@once
def test_fit_without_targets_needs_a_cost():
    with pytest.raises(ValueError, match=r"requires y to be passed.*or a cost"):
        PointerNetworkOrderer(**TINY).fit(_points(8, 4, seed=0))
    with pytest.raises(ValueError, match=r"score\(X\) without y needs a cost"):
        PointerNetworkOrderer(**TINY).score(_points(8, 4, 0))


def test_a_cost_function_receives_the_samples_as_given():
    rng = np.random.default_rng(4)
    ragged = [rng.random((n, 2)) for n in rng.integers(3, 6, size=40)]
    seen = []

    def recording(X, orderings):
        seen.append(type(X))
        assert len(X) == len(orderings)
        for points, ordering in zip(X, orderings, strict=True):
            assert sorted(ordering[ordering >= 0]) == list(range(len(points)))
        return user_tour(X, orderings)

    est = PointerNetworkOrderer(cost=recording, random_state=0, **TINY).fit(ragged)
    assert set(seen) == {list}
    np.testing.assert_allclose(-est.score(ragged), tour_length(ragged, est.predict(ragged)).mean())
    seen.clear()
    est.fit(_points(40, 4, seed=5))
    assert set(seen) == {np.ndarray}


@once
def test_searches_and_cross_validation_tune_without_labels():
    X = _points(64, 5, seed=6)
    est = PointerNetworkOrderer(cost="tour", random_state=0, **TINY)
    search = GridSearchCV(est, {"hidden_size": [4, 8]}, cv=2).fit(X)
    best = search.best_estimator_
    scores = search.cv_results_["split0_test_score"], search.cv_results_["split1_test_score"]
    assert np.all(np.isfinite(scores)) and np.all(np.asarray(scores) < 0)
    assert best.score(X) == pytest.approx(-tour_length(X, best.predict(X)).mean())


@once
def test_persistence_keeps_a_built_in_cost_by_name_and_a_function_by_reference(tmp_path):
    X = _points(64, 5, seed=7)
    est = PointerNetworkOrderer(
        cost="tour",
        cycle="undirected",
        decode="beam",
        beam_width=3,
        augment=True,
        random_state=0,
        **TINY,
    ).fit(X)
    est.save(tmp_path / "tour.skptr")
    loaded = load(tmp_path / "tour.skptr")
    assert loaded.cost == "tour" and loaded.augment is True
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    est.set_params(cost=user_tour)
    restored = pickle.loads(pickle.dumps(est))
    assert restored.cost is user_tour
    np.testing.assert_array_equal(restored.predict(X), est.predict(X))
    with pytest.raises(TypeError, match=r"cost function cannot be stored.*set_params"):
        est.save(tmp_path / "function.skptr")


@once
def test_a_pickle_from_before_a_hyperparameter_existed_takes_its_default():
    est = PointerNetworkOrderer(cost="tour", random_state=0, **TINY).fit(_points(32, 4, seed=8))
    state = est.__getstate__()
    del state["n_candidates"]
    restored = PointerNetworkOrderer.__new__(PointerNetworkOrderer)
    restored.__setstate__(state)
    assert restored.get_params()["n_candidates"] is None


@once
def test_a_pickle_from_before_explicit_decoding_decodes_and_trains_as_it_did():
    # Then greedy decoding with a cost ran from every start, symmetries=8 decoded the
    # mirror images, and with cycle set the training rolled out one ordering per start.
    X = _points(32, 4, seed=8)
    est = PointerNetworkOrderer(cost="tour", cycle="undirected", random_state=0, **TINY).fit(X)
    state = est.__getstate__()
    for name in ("n_candidates", "augment", "rollouts", "n_rollouts"):
        del state[name]
    state["symmetries"] = 8
    restored = PointerNetworkOrderer.__new__(PointerNetworkOrderer)
    restored.__setstate__(state)
    params = restored.get_params()
    assert "symmetries" not in params and params["augment"] is True
    assert params["decode"] == "multistart" and params["n_candidates"] is None
    assert params["rollouts"] == "multistart" and params["n_rollouts"] is None
    expected = est.set_params(decode="multistart", augment=True).predict(X)
    np.testing.assert_array_equal(restored.predict(X), expected)


def _raises(X, orderings):
    raise RuntimeError("no road between these cities")


def _fails_after_the_first_call(X, orderings):
    if np.any(orderings[:, 1] != 1):  # the check of the first samples uses 0, 1, ...
        return np.zeros(len(X) + 1)
    return user_tour(X, orderings)


def test_a_cost_never_changes_which_decoding_runs():
    X = _points(64, 6, seed=4)
    est = PointerNetworkOrderer(cost="path", random_state=0, **TINY).fit(X)
    with_cost = est.predict(X)
    np.testing.assert_array_equal(with_cost, est.set_params(cost=None).predict(X))
    est.set_params(cost="path", decode="multistart")
    every_start = path_length(X, est.predict(X))
    greedy = path_length(X, with_cost)
    assert np.all(every_start <= greedy + 1e-9) and every_start.mean() < greedy.mean()


def _log_likelihoods(est, X, decodings):
    """The log-likelihood under ``est`` of its orderings of ``X`` for each decoding."""
    found = []
    for decoding in decodings:
        est.set_params(**decoding)
        orderings = est.predict(X)
        chosen = np.take_along_axis(est.predict_proba(X), orderings[:, :, None], axis=2)
        found.append(np.log(np.maximum(chosen[..., 0], 1e-30)).sum(axis=1))
    return found


DECODINGS = (
    {"decode": "sample", "n_candidates": 6},
    {"decode": "multistart", "n_candidates": None},
    {"decode": "beam", "beam_width": 4},
)


@pytest.fixture(scope="module")
def six_city_model():
    """A model of 6-city tours, fitted once for the decoding tests (each takes a
    shallow copy to set its decoding on)."""
    return PointerNetworkOrderer(cost="tour", random_state=0, **TINY).fit(_points(64, 6, 13))


def test_no_decoding_is_costlier_than_greedy_also_on_longer_inputs(six_city_model):
    # Trained on 6 cities, decoded on 6, 18 and 30: every decoding's candidates include
    # the greedy ordering, so none is costlier than greedy on any sample.
    est = six_city_model._shallow_copy()
    rng = np.random.default_rng(14)
    for n_cities in (6, 18, 30):
        X = rng.random((24, n_cities, 2))
        greedy = tour_length(X, est.set_params(decode="greedy").predict(X))
        for decoding in DECODINGS:
            cheapest = tour_length(X, est.set_params(**decoding).predict(X))
            assert np.all(cheapest <= greedy + 1e-9), (n_cities, decoding)
            if n_cities == 6 or decoding["decode"] != "sample":  # samples of a flat
                assert cheapest.mean() < greedy.mean(), (n_cities, decoding)  # model: worse


def test_without_a_cost_no_decoding_is_less_likely_than_greedy_on_longer_inputs(six_city_model):
    est = six_city_model._shallow_copy()
    X = np.random.default_rng(16).random((16, 30, 2))
    est.set_params(cost=None)
    greedy, *others = _log_likelihoods(est, X, ({"decode": "greedy"}, *DECODINGS))
    for decoding, likelihood in zip(DECODINGS, others, strict=True):
        assert np.all(likelihood >= greedy - 1e-3), decoding


def test_ties_in_cost_keep_the_likeliest_candidate(six_city_model):
    X = _points(32, 6, seed=17)
    est = six_city_model._shallow_copy()
    for decoding in DECODINGS:
        likeliest = est.set_params(cost=None, **decoding).predict(X)
        constant = est.set_params(cost=lambda X, o: np.ones(len(X))).predict(X)
        np.testing.assert_array_equal(constant, likeliest)


def test_sampled_candidates_are_repeatable_with_an_int_random_state(six_city_model):
    X = _points(16, 7, seed=18)
    est = six_city_model._shallow_copy()
    est.set_params(decode="sample", n_candidates=3)
    first = est.predict(X)
    np.testing.assert_array_equal(est.predict(X), first)
    np.testing.assert_array_equal(est.predict(X[5:9]), first[5:9])  # whatever the batch
    assert not np.array_equal(est.set_params(random_state=1).predict(X), first)


def test_multistart_spreads_its_starts_and_decodes_every_start_in_pieces(
    six_city_model, monkeypatch
):
    X = _points(8, 9, seed=19)
    est = six_city_model._shallow_copy().set_params(cost=user_tour, decode="multistart")
    every_start = est.predict(X)
    # A call allowed a few numbers decodes the candidates in several pieces: the same.
    shared, per_lane = _sizes.decoding_numbers(est._as_fitted(), 9, sampled=False)
    monkeypatch.setattr(_sizes, "DECODER_NUMBERS", shared + 3 * per_lane)
    np.testing.assert_array_equal(est.predict(X), every_start)
    # Sampled candidates in pieces of 3 lanes, the last one short: greedy's stays.
    greedy = tour_length(X, est.set_params(decode="greedy").predict(X))
    sampled = tour_length(X, est.set_params(decode="sample", n_candidates=4).predict(X))
    assert np.all(sampled <= greedy + 1e-9)
    monkeypatch.undo()
    est.set_params(decode="multistart")
    fewer = tour_length(X, est.set_params(n_candidates=3).predict(X))
    assert np.all(tour_length(X, every_start) <= fewer + 1e-9)


@pytest.mark.parametrize(
    ("name", "value"),
    [("decode", "bogus"), ("n_candidates", 0), ("beam_width", -1), ("augment", 8), ("cost", 3)],
)
def test_a_typo_in_a_decoding_parameter_raises_at_every_inference_call(
    six_city_model, name, value
):
    X = _points(8, 4, seed=20)
    est = six_city_model._shallow_copy().set_params(**{name: value})
    for call in (est.predict, est.predict_proba, est.score):
        with pytest.raises(InvalidParameterError, match=f"'{name}' parameter"):
            call(X)


@once
def test_cycle_says_what_the_targets_are_and_leaves_the_training_alone():
    X = _points(64, 5, seed=21)
    plain = PointerNetworkOrderer(cost="tour", random_state=0, **TINY).fit(X)
    cycles = PointerNetworkOrderer(cost="tour", cycle="undirected", random_state=0, **TINY)
    cycles.fit(X)
    for a, b in zip(plain.network_.get_weights(), cycles.network_.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    multistart = PointerNetworkOrderer(
        cost="tour", rollouts="multistart", n_rollouts=None, random_state=0, **TINY
    ).fit(X)
    assert np.isfinite(multistart.history_["loss"]).all()


@pytest.mark.parametrize(
    ("cost", "message"),
    [
        # Checked on the first samples before training, on the host: once.
        pytest.param(_raises, r"cost _raises raised RuntimeError.*X\[0\]: no road", marks=once),
        pytest.param(
            lambda X, o: np.zeros((len(X), 2)),
            r"shape \(\d+,\).*returned shape \(\d+, 2\)",
            marks=once,
        ),
        pytest.param(
            lambda X, o: np.where(np.arange(len(X)) == 3, np.nan, 1.0),
            r"nan for X\[3\]",
            marks=once,
        ),
        pytest.param(
            lambda X, o: ["cheap"] * len(X), "must return an array of numbers", marks=once
        ),
        pytest.param(
            _fails_after_the_first_call,
            r"shape \(\d+,\).*returned shape \(\d+,\)",
            marks=once,
        ),
    ],
)
def test_bad_costs_fail_clearly_and_leave_the_estimator_as_it_was(cost, message):
    X = _points(64, 4, seed=8)
    est = PointerNetworkOrderer(cost=cost, random_state=0, **TINY)
    with pytest.raises(ValueError, match=message):
        est.fit(X)
    assert not hasattr(est, "network_")
    est.set_params(cost="path").fit(X)
    before = est.predict(X), est.history_
    with pytest.raises(ValueError, match=message):
        est.set_params(cost=cost, warm_start=True).fit(X)
    np.testing.assert_array_equal(est.set_params(cost="path").predict(X), before[0])
    assert est.history_ == before[1]
    with pytest.raises(InvalidParameterError, match="cost"):
        PointerNetworkOrderer(cost=3).fit(X)


@once_on_jax  # on TensorFlow, a case of test_bad_costs_fail_clearly_... runs this fit
def test_a_cost_that_fails_inside_training_stops_the_fit_with_its_error():
    # The first samples pass the check before training; the error comes from inside
    # the compiled step (a host callback), raised after it.
    X = _points(64, 4, seed=8)
    est = PointerNetworkOrderer(cost=_fails_after_the_first_call, random_state=0, **TINY)
    with pytest.raises(ValueError, match=r"returned shape \(\d+,\)"):
        est.fit(X)
    assert not hasattr(est, "network_")


def test_built_in_costs_refuse_models_of_ordered_subsets():
    X = _points(32, 5, seed=9)
    y = np.tile([0, 2, -1, -1, -1], (32, 1))
    est = PointerNetworkOrderer(random_state=0, **TINY).fit(X, y).set_params(cost="tour")
    with pytest.raises(ValueError, match=r"'tour' cost needs orderings of every element.*subsets"):
        est.score(X)
    with pytest.raises(ValueError, match="ordered subsets"):
        est.set_params(warm_start=True).fit(X)


@once
def test_imitation_then_refinement_from_the_cost():
    X = _points(64, 5, seed=10)
    est = PointerNetworkOrderer(random_state=0, **TINY).fit(X, np.tile(np.arange(5), (64, 1)))
    est.set_params(cost="tour", warm_start=True, epochs=2).fit(X)
    assert est.n_iter_ == 3 and len(est.history_["loss"]) == 3
    assert est.network_params_["hidden_size"] == 8


@once
def test_a_file_from_before_explicit_decoding_decodes_as_it_did(tmp_path):
    X = _points(32, 5, seed=22)
    est = PointerNetworkOrderer(cost="tour", random_state=0, **TINY).fit(X)
    est.save(tmp_path / "new.skptr")

    def written_before(metadata):
        for name in ("n_candidates", "augment", "rollouts", "n_rollouts"):
            del metadata["params"][name]
        metadata["params"]["symmetries"] = 8

    loaded = load(tampered(tmp_path / "new.skptr", tmp_path / "old.skptr", written_before))
    assert loaded.augment is True and loaded.decode == "multistart"
    expected = est.set_params(decode="multistart", augment=True).predict(X)
    np.testing.assert_array_equal(loaded.predict(X), expected)
