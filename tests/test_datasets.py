import itertools
import string

import numpy as np
import pytest

from skptr.datasets import (
    _hull_label,
    make_convex_hull,
    make_sorting,
    make_transduction,
    make_tsp,
    solve_tsp_exact,
)

# --------------------------------------------------------------------------------------
# helpers: independent reference implementations
# --------------------------------------------------------------------------------------


def closed_length(points, tour):
    ordered = np.asarray(points, dtype=float)[list(tour)]
    return float(np.linalg.norm(ordered - np.roll(ordered, -1, axis=0), axis=1).sum())


def brute_force_tour(points):
    """Shortest closed tour from city 0 by trying every permutation."""
    n = len(points)
    best, best_tour = np.inf, None
    for rest in itertools.permutations(range(1, n)):
        tour = (0, *rest)
        length = closed_length(points, tour)
        if length < best - 1e-12:
            best, best_tour = length, tour
    return best, best_tour


def monotone_chain_hull(points):
    """Counter-clockwise hull vertex indices (Andrew's monotone chain)."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], points[i][1]))

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    def half(indices):
        chain = []
        for i in indices:
            while len(chain) >= 2 and cross(points[chain[-2]], points[chain[-1]], points[i]) <= 0:
                chain.pop()
            chain.append(i)
        return chain

    lower, upper = half(order), half(order[::-1])
    return lower[:-1] + upper[:-1]


def rotate_to_smallest(indices):
    start = int(np.argmin(indices))
    return list(indices[start:]) + list(indices[:start])


# --------------------------------------------------------------------------------------
# sorting
# --------------------------------------------------------------------------------------


def test_sorting_default_is_eight_digits_descending():
    X, y = make_sorting(random_state=0)
    assert X.shape == (10_000, 8) and X.dtype == np.float64
    assert y.shape == (10_000, 8) and y.dtype == np.int64
    assert set(np.unique(X)) == set(range(10))
    assert np.array_equal(np.sort(y, axis=1), np.tile(np.arange(8), (10_000, 1)))
    ordered = np.take_along_axis(X, y, axis=1)
    assert np.all(ordered[:, :-1] >= ordered[:, 1:])


@pytest.mark.parametrize("descending", [True, False])
def test_sorting_labels_are_stable(descending):
    X, y = make_sorting(300, 8, low=0, high=3, descending=descending, random_state=1)
    sign = -1 if descending else 1
    for row, label in zip(X, y, strict=True):
        expected = sorted(range(len(row)), key=lambda i: (sign * row[i], i))
        assert label.tolist() == expected


def test_sorting_hand_checked_ties():
    X, y = make_sorting(500, 4, low=0, high=1, random_state=2)
    # A row [1, 0, 1, 0] sorted descending, ties in input order, is [0, 2, 1, 3].
    rows = np.flatnonzero((X == [1, 0, 1, 0]).all(axis=1))
    assert rows.size > 0
    assert np.all(y[rows] == [0, 2, 1, 3])


def test_sorting_floats_default_to_unit_interval():
    X, y = make_sorting(2_000, 5, kind="float", random_state=0)
    assert X.min() >= 0.0 and X.max() < 1.0
    assert len(np.unique(X)) > 9_000
    ordered = np.take_along_axis(X, y, axis=1)
    assert np.all(np.diff(ordered, axis=1) <= 0)
    X, _ = make_sorting(2_000, 5, kind="float", low=-3, high=-2, random_state=0)
    assert X.min() >= -3 and X.max() < -2


def test_sorting_integer_bounds_are_inclusive():
    X, _ = make_sorting(2_000, 8, low=-2, high=2, random_state=0)
    assert set(np.unique(X)) == {-2, -1, 0, 1, 2}
    X, y = make_sorting(3, 4, low=7, high=7, random_state=0)
    assert np.all(X == 7) and np.all(y == [0, 1, 2, 3])


def test_sorting_is_reproducible():
    first = make_sorting(50, random_state=3)
    second = make_sorting(50, random_state=np.random.RandomState(3))
    other = make_sorting(50, random_state=4)
    assert all(np.array_equal(a, b) for a, b in zip(first, second, strict=True))
    assert not np.array_equal(first[0], other[0])


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_samples": 0}, ValueError, "n_samples"),
        ({"n_samples": 2.5}, TypeError, "n_samples"),
        ({"n_steps": 0}, ValueError, "n_steps"),
        ({"n_steps": "8"}, TypeError, "n_steps"),
        ({"kind": "complex"}, ValueError, "kind"),
        ({"low": 0.5}, TypeError, "low"),
        ({"low": 5, "high": 4}, ValueError, "high"),
        ({"kind": "float", "low": 1.0, "high": 1.0}, ValueError, "high"),
        ({"kind": "float", "high": np.inf}, ValueError, "high"),
        ({"descending": "yes"}, TypeError, "descending"),
    ],
)
def test_sorting_rejects_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        make_sorting(**kwargs)


# --------------------------------------------------------------------------------------
# convex hull
# --------------------------------------------------------------------------------------


def test_hull_label_on_hand_made_points():
    points = np.array(
        [[0.5, 0.5], [1.0, 0.0], [0.2, 0.3], [0.0, 0.0], [1.0, 1.0], [0.0, 1.0], [0.9, 0.5]]
    )
    # Counter-clockwise from (1, 0): (1, 1), (0, 1), (0, 0); (0.9, 0.5) is inside.
    assert _hull_label(points).tolist() == [1, 4, 5, 3]
    triangle = np.array([[0.0, 1.0], [0.0, 0.0], [1.0, 0.0]])
    assert _hull_label(triangle).tolist() == [0, 1, 2]


def test_convex_hull_matches_monotone_chain():
    X, y = make_convex_hull(300, n_points=10, random_state=0)
    assert X.shape == (300, 10, 2) and X.dtype == np.float64
    assert X.min() >= 0 and X.max() < 1
    assert isinstance(y, list) and len(y) == 300
    for points, label in zip(X, y, strict=True):
        assert label.dtype == np.int64
        assert label.tolist() == rotate_to_smallest(monotone_chain_hull(points.tolist()))


def test_convex_hull_with_variable_sizes():
    X, y = make_convex_hull(200, n_points=(5, 8), random_state=1)
    assert isinstance(X, list) and len(X) == 200
    sizes = {len(points) for points in X}
    assert sizes == {5, 6, 7, 8}
    for points, label in zip(X, y, strict=True):
        assert points.shape[1] == 2
        assert label.tolist() == rotate_to_smallest(monotone_chain_hull(points.tolist()))


def test_convex_hull_is_reproducible():
    X1, y1 = make_convex_hull(20, n_points=(3, 9), random_state=5)
    X2, y2 = make_convex_hull(20, n_points=(3, 9), random_state=5)
    assert all(np.array_equal(a, b) for a, b in zip(X1, X2, strict=True))
    assert all(np.array_equal(a, b) for a, b in zip(y1, y2, strict=True))


@pytest.mark.parametrize(
    ("n_points", "error"),
    [
        (2, ValueError),
        ("5", TypeError),
        ((6, 5), ValueError),
        ((2, 5), ValueError),
        ((5,), ValueError),
    ],
)
def test_convex_hull_rejects_bad_sizes(n_points, error):
    with pytest.raises(error, match="n_points"):
        make_convex_hull(3, n_points=n_points)


# --------------------------------------------------------------------------------------
# travelling salesman
# --------------------------------------------------------------------------------------


def test_tsp_square_corners():
    corners = [[0, 0], [1, 1], [0, 1], [1, 0]]
    assert solve_tsp_exact(corners).tolist() == [0, 2, 1, 3]


def test_tsp_scrambled_hexagon():
    angles = np.deg2rad(60 * np.arange(6))
    hexagon = np.c_[np.cos(angles), np.sin(angles)]
    scramble = np.array([3, 0, 5, 1, 4, 2])  # point i of the instance is vertex scramble[i]
    points = hexagon[scramble]
    tour = solve_tsp_exact(points)
    # Walking the hexagon from vertex 3: 3 4 5 0 1 2, i.e. points 0 4 2 1 3 5;
    # the other direction starts 0 5 3 ..., so the canonical tour is the first one.
    assert tour.tolist() == [0, 4, 2, 1, 3, 5]
    assert closed_length(points, tour) == pytest.approx(6.0)


def test_tsp_three_cities_is_canonical():
    assert solve_tsp_exact([[0, 0], [0, 1], [5, 5]]).tolist() == [0, 1, 2]
    assert solve_tsp_exact([[0, 0, 0], [0, 1, 0], [0, 0, 1]]).tolist() == [0, 1, 2]


@pytest.mark.parametrize("n_cities", [3, 4, 5, 6, 7])
def test_held_karp_matches_brute_force(n_cities):
    X, y = make_tsp(15, n_cities, random_state=n_cities)
    for points, tour in zip(X, y, strict=True):
        best, best_tour = brute_force_tour(points)
        assert closed_length(points, tour) == pytest.approx(best, rel=1e-12)
        if best_tour[1] > best_tour[-1]:
            best_tour = (0, *best_tour[:0:-1])
        assert tour.tolist() == list(best_tour)


def test_tsp_labels_are_canonical_permutations():
    X, y = make_tsp(100, 9, random_state=0)
    assert X.shape == (100, 9, 2) and y.shape == (100, 9) and y.dtype == np.int64
    assert np.all(y[:, 0] == 0) and np.all(y[:, 1] < y[:, -1])
    assert np.array_equal(np.sort(y, axis=1), np.tile(np.arange(9), (100, 1)))


def test_tsp_batched_and_single_solutions_agree():
    X, y = make_tsp(150, 10, random_state=1)  # spans several internal batches
    for i in (0, 57, 149):
        assert np.array_equal(solve_tsp_exact(X[i]), y[i])


@pytest.mark.parametrize(("n_cities", "published"), [(5, 2.12), (10, 2.87)])
def test_tsp_mean_optimal_length_matches_published(n_cities, published):
    # Vinyals et al. (2015), Table 2: mean optimal tour length on uniform points.
    X, y = make_tsp(1_500 if n_cities == 5 else 400, n_cities, random_state=0)
    mean = np.mean([closed_length(points, tour) for points, tour in zip(X, y, strict=True)])
    assert mean == pytest.approx(published, abs=0.05)


def test_tsp_is_reproducible():
    X1, y1 = make_tsp(10, 6, random_state=7)
    X2, y2 = make_tsp(10, 6, random_state=7)
    assert np.array_equal(X1, X2) and np.array_equal(y1, y2)


@pytest.mark.parametrize("n_cities", [2, 13])
def test_tsp_refuses_sizes_out_of_range(n_cities):
    with pytest.raises(ValueError, match="n_cities"):
        make_tsp(2, n_cities)
    with pytest.raises(ValueError, match="n_cities"):
        solve_tsp_exact(np.zeros((n_cities, 2)))


def test_tsp_large_size_message_says_why():
    with pytest.raises(ValueError, match="exponential"):
        make_tsp(2, 20)


def test_solve_tsp_exact_rejects_bad_points():
    with pytest.raises(ValueError, match=r"points has 3 dimensions"):
        solve_tsp_exact(np.zeros((5, 2, 1)))
    with pytest.raises(ValueError, match=r"points contains NaN or infinity \(first at step 1\)"):
        solve_tsp_exact([[0, 0], [1, np.nan], [2, 2]])


def test_solve_tsp_exact_reads_a_one_dimensional_array_as_one_coordinate_per_city():
    assert solve_tsp_exact([0.0, 3.0, 1.0, 2.0]).tolist() == [0, 1, 3, 2]


# --------------------------------------------------------------------------------------
# transduction: copy, reversal, bigram flip
# --------------------------------------------------------------------------------------


def flip_bigrams(sequence):
    flipped = []
    for first, second in zip(sequence[::2], sequence[1::2], strict=True):
        flipped.extend([second, first])
    return "".join(flipped) if isinstance(sequence, str) else tuple(flipped)


def test_reference_bigram_flip_on_explicit_strings():
    assert flip_bigrams("abcdef") == "badcfe"
    assert flip_bigrams((1, 2, 3, 4)) == (2, 1, 4, 3)


@pytest.mark.parametrize(
    ("task", "transform"),
    [
        ("copy", lambda s: s),
        ("reversal", lambda s: s[::-1]),
        ("bigram_flip", flip_bigrams),
    ],
)
@pytest.mark.parametrize("vocab_size", [26, 52, 53, 128])
def test_sequence_tasks_are_exact(task, transform, vocab_size):
    X, y = make_transduction(task, 200, vocab_size=vocab_size, random_state=0)
    assert X.dtype == object and y.dtype == object and X.shape == y.shape == (200,)
    for source, target in zip(X, y, strict=True):
        assert target == transform(source)
        if vocab_size <= 52:
            assert isinstance(source, str)
            assert set(source) <= set(
                (string.ascii_lowercase + string.ascii_uppercase)[:vocab_size]
            )
        else:
            assert isinstance(source, tuple)
            assert all(type(token) is int and 0 <= token < vocab_size for token in source)


def test_letters_cover_the_whole_small_vocabulary():
    X, _ = make_transduction("copy", 200, vocab_size=52, random_state=0)
    assert set("".join(X)) == set(string.ascii_lowercase + string.ascii_uppercase)
    X, _ = make_transduction("copy", 5, vocab_size=1, random_state=0)
    assert all(set(source) == {"a"} for source in X)


def test_reversal_on_explicit_example():
    X, y = make_transduction(
        "reversal", 30, min_length=3, max_length=3, vocab_size=3, random_state=0
    )
    for source, target in zip(X, y, strict=True):
        assert len(source) == 3 and set(source) <= set("abc")
        assert target == source[2] + source[1] + source[0]


def test_lengths_are_uniform_in_range():
    X, _ = make_transduction("copy", 2_000, min_length=8, max_length=12, random_state=0)
    lengths = np.array([len(s) for s in X])
    assert set(lengths) == set(range(8, 13))
    assert np.bincount(lengths)[8:].min() > 300


def test_bigram_flip_draws_even_lengths_only():
    X, _ = make_transduction("bigram_flip", 500, min_length=7, max_length=12, random_state=0)
    assert {len(s) for s in X} == {8, 10, 12}
    with pytest.raises(ValueError, match="even length"):
        make_transduction("bigram_flip", 5, min_length=7, max_length=7)


@pytest.mark.parametrize(
    "task", ["copy", "reversal", "bigram_flip", "svo_sov", "gender_conjugation"]
)
def test_transduction_is_reproducible(task):
    X1, y1 = make_transduction(task, 20, random_state=11)
    X2, y2 = make_transduction(task, 20, random_state=np.random.RandomState(11))
    X3, _ = make_transduction(task, 20, random_state=12)
    assert list(X1) == list(X2) and list(y1) == list(y2)
    assert list(X1) != list(X3)


# --------------------------------------------------------------------------------------
# transduction: grammar tasks
# --------------------------------------------------------------------------------------


def word_class(token):
    return token[0]


def svo_to_sov(source):
    """Reference translation by recursive descent on the source grammar."""
    position = 0

    def take(expected):
        nonlocal position
        token = source[position]
        assert word_class(token) in expected, (token, expected, source)
        position += 1
        return token.upper()

    def noun_phrase():
        words = []
        while position < len(source) and word_class(source[position]) in "da":
            words.append(take("da"))
        words.append(take("n"))
        if position < len(source) and word_class(source[position]) == "r":
            words.append(take("r"))
            verb = take("v")
            words.extend(noun_phrase())
            words.append(verb)
        return words

    subject = noun_phrase()
    verb = take("v")
    obj = noun_phrase()
    assert position == len(source)
    return (*subject, *obj, verb)


def conjugate(source):
    """Reference gender agreement: determiners and adjectives agree with the next noun,
    relative pronouns with the previous word, a noun."""
    target = []
    for i, token in enumerate(source):
        kind = word_class(token)
        if kind in "da":
            noun = next(t for t in source[i + 1 :] if word_class(t) == "n")
            target.append(token.upper() + "mfn"[int(noun[1:]) % 3])
        elif kind == "r":
            assert word_class(source[i - 1]) == "n"
            target.append(token.upper() + "mfn"[int(source[i - 1][1:]) % 3])
        else:
            target.append(token.upper())
    return tuple(target)


def test_reference_translations_on_explicit_sentences():
    source = ("n1", "r0", "v1", "n2", "r0", "v2", "n3", "v3", "n4")
    assert svo_to_sov(source) == ("N1", "R0", "N2", "R0", "N3", "V2", "V1", "N4", "V3")
    source = ("d0", "a2", "n5", "v0", "d1", "n3", "r0", "v7", "d0", "a1", "a4", "n4")
    assert svo_to_sov(source) == (
        *("D0", "A2", "N5", "D1", "N3", "R0", "D0", "A1", "A4", "N4", "V7", "V0"),
    )
    source = ("d0", "a2", "a1", "n5", "r0", "v3", "d1", "n4", "v0", "d0", "n3")
    assert conjugate(source) == (
        *("D0n", "A2n", "A1n", "N5", "R0n", "V3", "D1f", "N4", "V0", "D0m", "N3"),
    )


@pytest.mark.parametrize("vocab_size", [5, 12, 128])
def test_svo_sov_targets_match_reference(vocab_size):
    X, y = make_transduction(
        "svo_sov", 300, 3, 40, vocab_size=vocab_size, grammar="nested", random_state=0
    )
    classes = set()
    for source, target in zip(X, y, strict=True):
        assert isinstance(source, tuple) and isinstance(target, tuple)
        assert 3 <= len(source) <= 40 and len(target) == len(source)
        assert target == svo_to_sov(source)
        classes.update(word_class(t) for t in source)
    assert classes == set("danvr")
    words = {token for source in X for token in source}
    assert len(words) <= vocab_size


def test_svo_sov_has_nested_clauses():
    _, y = make_transduction("svo_sov", 200, 30, 40, grammar="nested", random_state=0)
    verb_runs = [
        max(len(list(g)) for k, g in itertools.groupby(t, word_class) if k == "V") for t in y
    ]
    assert max(verb_runs) >= 3  # centre-embedded verbs pile up at the end of a phrase


@pytest.mark.parametrize("vocab_size", [5, 128])
def test_gender_conjugation_targets_match_reference(vocab_size):
    X, y = make_transduction(
        "gender_conjugation",
        300,
        5,
        40,
        vocab_size=vocab_size,
        grammar="nested",
        random_state=0,
    )
    for source, target in zip(X, y, strict=True):
        assert 5 <= len(source) <= 40
        assert target == conjugate(source)
    genders = {token[-1] for target in y for token in target if token[0] in "DAR"}
    assert genders == ({"m"} if vocab_size == 5 else {"m", "f", "n"})


def main_verb_position(source):
    """Where the paper's SVO grammar puts the main verb: at the first verb that closes
    no relative clause."""
    open_clauses = 0
    for i, token in enumerate(source):
        if word_class(token) == "r":
            open_clauses += 1
        elif word_class(token) == "v" and open_clauses == 0:
            return i
        elif word_class(token) == "v":
            open_clauses -= 1
    raise AssertionError(f"no main verb in {source}")


def move_main_verb(source):
    """Reference SVO to SOV of the paper's grammar: the main verb goes to the end."""
    i = main_verb_position(source)
    return (*(t.upper() for t in source[:i] + source[i + 1 :]), source[i].upper())


ARTICLES = {
    "the": {"m": "der", "f": "die", "n": "das"},
    "a": {"m": "ein", "f": "eine", "n": "ein"},
}


def translate_articles(source):
    """Reference genderless-to-gendered translation of the paper's grammar."""
    target = []
    for token, following in zip(source, [*source[1:], ""], strict=True):
        if token in ARTICLES:
            assert following[:1] in ("m", "f", "n"), source
            target.append(ARTICLES[token][following[0]])
        else:
            target.append({"and": "und", "or": "oder"}.get(token, token.upper()))
    return tuple(target)


def test_itg_reference_translations_on_the_papers_sentences():
    source = ("s1", "v28", "o5", "o7", "s15", "r0", "s19", "v16", "o10", "o24")
    assert move_main_verb(source) == (
        *("S1", "O5", "O7", "S15", "R0", "S19", "V16", "O10", "O24", "V28"),
    )
    source = ("s1", "r0", "s2", "r0", "s3", "v1", "v2", "v3", "o4")
    assert move_main_verb(source) == ("S1", "R0", "S2", "R0", "S3", "V1", "V2", "O4", "V3")
    source = ("w11", "the", "n19", "and", "the", "m17")
    assert translate_articles(source) == ("W11", "das", "N19", "und", "der", "M17")


@pytest.mark.parametrize("vocab_size", [4, 24, 128])
def test_itg_svo_sov_targets_match_reference(vocab_size):
    X, y = make_transduction("svo_sov", 300, 3, 70, vocab_size=vocab_size, random_state=0)
    for source, target in zip(X, y, strict=True):
        assert isinstance(source, tuple) and 3 <= len(source) <= 70
        assert target == move_main_verb(source)
        classes = [word_class(t) for t in source]
        assert classes.count("v") == classes.count("r") + 1
        assert "o" not in classes[: main_verb_position(source)]  # no object in subjects
    words = {token for source in X for token in source}
    assert {word_class(t) for t in words} == set("sovr")
    assert len(words) <= vocab_size
    if vocab_size == 128:
        assert len(words) == 128  # 42 + 42 + 43 words and the relative pronoun


@pytest.mark.parametrize("vocab_size", [8, 24])
def test_itg_gender_conjugation_targets_match_reference(vocab_size):
    X, y = make_transduction(
        "gender_conjugation", 300, 3, 70, vocab_size=vocab_size, random_state=0
    )
    targets = set()
    for source, target in zip(X, y, strict=True):
        assert 3 <= len(source) <= 70 and len(source) != 4
        assert target == translate_articles(source)
        for before, token in itertools.pairwise(("", *source)):
            assert (before in ARTICLES) == (token[:1] in ("m", "f", "n"))
        targets.update(target)
    assert {"der", "die", "das", "ein", "eine", "und", "oder"} <= targets
    assert len({token for source in X for token in source}) == vocab_size


def test_itg_grammars_recurse_in_long_sentences():
    X, _ = make_transduction("svo_sov", 100, 65, 128, random_state=0)
    assert min(source.count("r0") for source in X) >= 1
    X, _ = make_transduction("gender_conjugation", 100, 65, 128, random_state=0)
    assert min(source.count("or") + source.count("and") for source in X) >= 1
    assert max(source.count("or") for source in X) >= 5


@pytest.mark.parametrize("grammar", ["itg", "nested"])
def test_grammar_lengths_cover_the_range(grammar):
    for task in ("svo_sov", "gender_conjugation"):
        X, _ = make_transduction(task, 1_000, 8, 14, grammar=grammar, random_state=0)
        assert {len(s) for s in X} == set(range(8, 15))


def test_grammar_vocabulary_does_not_depend_on_the_seed():
    _, y1 = make_transduction("gender_conjugation", 200, grammar="nested", random_state=0)
    _, y2 = make_transduction("gender_conjugation", 200, 65, 128, grammar="nested", random_state=1)
    gender_of = {}
    for target in [*y1, *y2]:
        for det, noun in itertools.pairwise(target):
            if det[0] == "D" and noun[0] == "N":
                assert gender_of.setdefault(noun, det[-1]) == det[-1]
    assert len(gender_of) > 10


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        (("shuffle", 5), {}, ValueError, "copy.*reversal.*bigram_flip"),
        (("copy", 0), {}, ValueError, "n_samples"),
        (("copy", 5), {"min_length": 0}, ValueError, "min_length"),
        (("copy", 5), {"min_length": 9, "max_length": 8}, ValueError, "max_length"),
        (("copy", 5), {"vocab_size": 0}, ValueError, "vocab_size"),
        (("copy", 5), {"vocab_size": 2.0}, TypeError, "vocab_size"),
        (("svo_sov", 5), {"min_length": 2}, ValueError, "min_length"),
        (("gender_conjugation", 5), {"min_length": 2}, ValueError, "min_length"),
        (("gender_conjugation", 5), {"min_length": 4, "max_length": 4}, ValueError, "4..4"),
        (("svo_sov", 5), {"vocab_size": 3}, ValueError, "vocab_size >= 4"),
        (("gender_conjugation", 5), {"vocab_size": 7}, ValueError, "vocab_size >= 8"),
        (("copy", 5), {"grammar": "cfg"}, ValueError, "grammar"),
        (("gender_conjugation", 5), {"min_length": 4, "grammar": "nested"}, ValueError, "5"),
        (("svo_sov", 5), {"vocab_size": 4, "grammar": "nested"}, ValueError, "vocab_size"),
    ],
)
def test_transduction_rejects_bad_arguments(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        make_transduction(*args, **kwargs)
