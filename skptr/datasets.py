"""Synthetic tasks with exact ground truth.

Pointer-network tasks (the targets are orderings of the input):

- :func:`make_sorting` -- sort numbers (Vinyals, Bengio and Kudlur 2016);
- :func:`make_convex_hull` -- the convex hull of points in the unit square
  (Vinyals, Fortunato and Jaitly 2015);
- :func:`make_tsp` -- the optimal travelling-salesman tour through a few cities, solved
  exactly by Held-Karp dynamic programming (:func:`solve_tsp_exact` solves one instance).

Transduction tasks (token sequence to token sequence) of Grefenstette, Hermann, Suleyman
and Blunsom 2015, *Learning to Transduce with Unbounded Memory*:

- :func:`make_transduction` -- copy, reversal, bigram flipping, SVO to SOV reordering
  and gender conjugation.

Every generator takes a ``random_state`` and returns the same data for the same seed.
"""

from __future__ import annotations

import functools
import string
from numbers import Integral, Real

import numpy as np
from scipy.spatial import ConvexHull
from sklearn.utils import check_random_state

from . import _itg
from ._sequences import check_numeric_sequence

__all__ = [
    "make_convex_hull",
    "make_sorting",
    "make_transduction",
    "make_tsp",
    "solve_tsp_exact",
]

_MAX_TSP_CITIES = 12
_LETTERS = string.ascii_lowercase + string.ascii_uppercase
_TRANSDUCTION_TASKS = ("copy", "reversal", "bigram_flip", "svo_sov", "gender_conjugation")


# --------------------------------------------------------------------------------------
# argument checks
# --------------------------------------------------------------------------------------


def _check_int(value, name, minimum):
    if isinstance(value, bool | np.bool_) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an integer, got {value!r} ({type(value).__name__}).")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}.")
    return value


def _check_real(value, name):
    if isinstance(value, bool | np.bool_) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a real number, got {value!r} ({type(value).__name__}).")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}.")
    return value


# --------------------------------------------------------------------------------------
# sorting
# --------------------------------------------------------------------------------------


def make_sorting(
    n_samples=10_000,
    n_steps=8,
    *,
    low=None,
    high=None,
    kind="int",
    descending=True,
    random_state=None,
):
    """Generate a number-sorting task.

    Each sample is a sequence of ``n_steps`` numbers; its label is the sequence of
    indices that visits the numbers in sorted order. The defaults give the seed task:
    eight integers drawn uniformly from 0..9, sorted in descending order. With
    ``kind="float"`` and the default bounds the numbers are uniform in [0, 1), the
    float-sorting task of Vinyals, Bengio and Kudlur (2016).

    Parameters
    ----------
    n_samples : int, default=10_000
        Number of sequences.
    n_steps : int, default=8
        Number of values per sequence.
    low, high : int or float, default=None
        Range of the values. For ``kind="int"`` the values are uniform over the integers
        ``low..high``, both included (default 0 and 9). For ``kind="float"`` they are
        uniform in ``[low, high)`` (default 0.0 and 1.0).
    kind : {"int", "float"}, default="int"
        Whether to draw integers or floats.
    descending : bool, default=True
        Sort from largest to smallest (True) or from smallest to largest (False).
    random_state : int, RandomState instance or None, default=None
        Seed or generator for reproducible output.

    Returns
    -------
    X : ndarray of shape (n_samples, n_steps), dtype float64
        The values, one number per step.
    y : ndarray of shape (n_samples, n_steps), dtype int64
        For each row, a permutation of ``range(n_steps)`` such that ``X[i, y[i]]`` is
        sorted in the requested direction. The sort is stable: equal values keep their
        input order, so the labels are unique even when values repeat.

    Examples
    --------
    >>> from skptr.datasets import make_sorting
    >>> X, y = make_sorting(n_samples=2, n_steps=5, random_state=0)
    >>> X.shape, y.shape
    ((2, 5), (2, 5))
    >>> bool((X[0, y[0]][:-1] >= X[0, y[0]][1:]).all())
    True
    """
    n_samples = _check_int(n_samples, "n_samples", 1)
    n_steps = _check_int(n_steps, "n_steps", 1)
    if kind not in ("int", "float"):
        raise ValueError(f"kind must be 'int' or 'float', got {kind!r}.")
    if not isinstance(descending, bool | np.bool_):
        raise TypeError(f"descending must be a bool, got {descending!r}.")
    rng = check_random_state(random_state)
    if kind == "int":
        low = 0 if low is None else low
        high = 9 if high is None else high
        for name, value in (("low", low), ("high", high)):
            if isinstance(value, bool | np.bool_) or not isinstance(value, Integral):
                raise TypeError(
                    f"{name} must be an integer when kind='int', got {value!r}; "
                    "use kind='float' for real-valued bounds."
                )
        low, high = int(low), int(high)
        if high < low:
            raise ValueError(f"high must be >= low for kind='int', got low={low}, high={high}.")
        X = rng.randint(low, high + 1, size=(n_samples, n_steps)).astype(np.float64)
    else:
        low = 0.0 if low is None else _check_real(low, "low")
        high = 1.0 if high is None else _check_real(high, "high")
        if not high > low:
            raise ValueError(f"high must be > low for kind='float', got low={low}, high={high}.")
        X = rng.uniform(low, high, size=(n_samples, n_steps))
    keys = -X if descending else X
    y = np.argsort(keys, axis=1, kind="stable").astype(np.int64)
    return X, y


# --------------------------------------------------------------------------------------
# convex hull
# --------------------------------------------------------------------------------------


def _hull_label(points):
    vertices = np.asarray(ConvexHull(points).vertices, dtype=np.int64)
    return np.roll(vertices, -int(np.argmin(vertices)))


def make_convex_hull(n_samples, n_points=5, *, random_state=None):
    """Generate a planar convex-hull task.

    Points are drawn uniformly in the unit square. The label of a point set is its
    convex hull in the format of Vinyals et al. (2015): the indices of the hull
    vertices in counter-clockwise order, starting from the hull vertex with the lowest
    index. Hulls are computed with :class:`scipy.spatial.ConvexHull`.

    Parameters
    ----------
    n_samples : int
        Number of point sets.
    n_points : int or tuple of two ints, default=5
        Number of points per set (at least 3). A ``(min, max)`` tuple draws the number of
        points of each set uniformly from ``min..max`` (both included), as in the
        "trained on n = 5..50" experiments.
    random_state : int, RandomState instance or None, default=None
        Seed or generator for reproducible output.

    Returns
    -------
    X : ndarray of shape (n_samples, n_points, 2) or list of ndarray
        The points, float64. With a ``(min, max)`` tuple, a list of ``(n_i, 2)`` arrays.
    y : list of ndarray
        One 1-D int64 array per sample: the hull vertices, counter-clockwise, starting
        from the smallest index. Hulls have varying numbers of vertices, hence a list.

    Examples
    --------
    >>> from skptr.datasets import make_convex_hull
    >>> X, y = make_convex_hull(3, n_points=6, random_state=0)
    >>> X.shape, len(y)
    ((3, 6, 2), 3)
    >>> bool(all(int(h[0]) == int(h.min()) for h in y))
    True
    """
    n_samples = _check_int(n_samples, "n_samples", 1)
    rng = check_random_state(random_state)
    if isinstance(n_points, tuple | list):
        if len(n_points) != 2:
            raise ValueError(f"n_points must be an int or a (min, max) tuple, got {n_points!r}.")
        low = _check_int(n_points[0], "n_points[0]", 3)
        high = _check_int(n_points[1], "n_points[1]", 3)
        if high < low:
            raise ValueError(f"n_points must be (min, max) with min <= max, got {n_points!r}.")
        counts = rng.randint(low, high + 1, size=n_samples)
        flat = rng.uniform(0.0, 1.0, size=(int(counts.sum()), 2))
        X = np.split(flat, np.cumsum(counts)[:-1])
    else:
        n_points = _check_int(n_points, "n_points", 3)
        X = rng.uniform(0.0, 1.0, size=(n_samples, n_points, 2))
    y = [_hull_label(points) for points in X]
    return X, y


# --------------------------------------------------------------------------------------
# travelling salesman
# --------------------------------------------------------------------------------------


@functools.cache
def _held_karp_plan(m):
    """Flat gather and scatter indices of the Held-Karp recursion over ``m`` cities.

    Subsets of the non-start cities are bitmasks, and ``cost[S, j]`` (stored flat at
    ``S * m + j``) is the length of the shortest path that leaves city 0, visits the
    cities of ``S`` and ends at city ``j + 1`` (``j`` in ``S``). For each subset size
    ``s >= 2`` the plan holds, for every pair ``(S, j)`` with ``j`` in ``S``:
    ``target`` (P,), the flat position of ``cost[S, j]``; ``source`` (P, s - 1), the
    flat positions of ``cost[S - {j}, k]`` for the ``k`` left in ``S - {j}``; ``step``
    (P, s - 1), the flat positions of the distances from ``k + 1`` to ``j + 1`` in the
    ``(m, m)`` block of non-start cities; and ``last`` (P, s - 1), the ``k`` themselves.
    """
    masks = np.arange(1 << m, dtype=np.int64)
    member = (masks[:, None] >> np.arange(m)) & 1 == 1
    sizes = member.sum(axis=1)
    plan = []
    for size in range(2, m + 1):
        subsets, ends = np.nonzero(member & (sizes == size)[:, None])
        previous = subsets ^ (1 << ends)
        last = np.nonzero(member[previous])[1].reshape(len(previous), size - 1)
        level = (subsets * m + ends, previous[:, None] * m + last, last * m + ends[:, None], last)
        for array in level:
            array.flags.writeable = False  # shared by every call through the cache
        plan.append(level)
    return tuple(plan)


def _held_karp(distances):
    """Optimal closed tours from city 0 for a batch of distance matrices.

    Parameters
    ----------
    distances : ndarray of shape (batch, n, n)
        Pairwise distances, ``3 <= n <= 12``.

    Returns
    -------
    tours : ndarray of shape (batch, n), int64
        Optimal tours starting at city 0, in the direction whose second city has the
        smaller index.
    """
    batch, n = distances.shape[:2]
    m = n - 1
    full = (1 << m) - 1
    cities = np.arange(m)
    # The batch is the last axis, so every gather moves contiguous rows.
    cost = np.full(((1 << m) * m, batch), np.inf)
    parent = np.zeros(((1 << m) * m, batch), dtype=np.int64)
    cost[(1 << cities) * m + cities] = distances[:, 0, 1:].T
    steps = np.ascontiguousarray(distances[:, 1:, 1:].reshape(batch, m * m).T)
    for target, source, step, last in _held_karp_plan(m):
        candidates = cost[source] + steps[step]  # (pairs, s - 1, batch)
        best = candidates.argmin(axis=1)
        cost[target] = np.take_along_axis(candidates, best[:, None, :], axis=1)[:, 0]
        parent[target] = np.take_along_axis(last, best, axis=1)
    closing = cost[full * m : (full + 1) * m].T + distances[:, 1:, 0]
    current = closing.argmin(axis=1)
    rows = np.arange(batch)
    subset = np.full(batch, full, dtype=np.int64)
    tours = np.zeros((batch, n), dtype=np.int64)
    for position in range(m, 0, -1):
        tours[:, position] = current + 1
        previous_city = parent[subset * m + current, rows]
        subset = subset ^ (1 << current)
        current = previous_city
    flip = tours[:, -1] < tours[:, 1]
    tours[flip, 1:] = tours[flip, :0:-1]
    return tours


def _check_tsp_size(n_cities, name):
    n_cities = _check_int(n_cities, name, 3)
    if n_cities > _MAX_TSP_CITIES:
        raise ValueError(
            f"{name}={n_cities} is too large: exact solving (Held-Karp) takes time and "
            f"memory exponential in the number of cities; at most {_MAX_TSP_CITIES} "
            "cities are supported."
        )
    return n_cities


def _pairwise_distances(points):
    difference = points[..., :, None, :] - points[..., None, :, :]
    return np.sqrt((difference**2).sum(axis=-1))


def solve_tsp_exact(points):
    """Solve one travelling-salesman instance exactly.

    Uses Held-Karp dynamic programming over subsets of cities, vectorised over subsets
    of equal size; time and memory grow as ``2**n * n**2``.

    Parameters
    ----------
    points : array-like of shape (n_cities, n_dims) or (n_cities,)
        City coordinates (Euclidean distances), ``3 <= n_cities <= 12``; a 1-D array
        holds one coordinate per city, as a 2-D ``X`` does for the estimators.

    Returns
    -------
    tour : ndarray of shape (n_cities,), dtype int64
        An optimal closed tour starting at city 0. Of its two directions, the one whose
        second city has the smaller index is returned.

    Examples
    --------
    >>> from skptr.datasets import solve_tsp_exact
    >>> solve_tsp_exact([[0, 0], [1, 1], [0, 1], [1, 0]]).tolist()
    [0, 2, 1, 3]
    """
    points = check_numeric_sequence(points, name="points")
    _check_tsp_size(points.shape[0], "n_cities")
    return _held_karp(_pairwise_distances(points)[None])[0]


def make_tsp(n_samples, n_cities=5, *, random_state=None):
    """Generate a travelling-salesman task with exact optimal tours.

    Cities are drawn uniformly in the unit square, as in Vinyals et al. (2015). Each
    label is the optimal closed tour, computed exactly by Held-Karp dynamic programming.
    Exact solving is exponential in the number of cities, so at most 12 cities are
    allowed.

    Parameters
    ----------
    n_samples : int
        Number of instances.
    n_cities : int, default=5
        Number of cities per instance, from 3 to 12.
    random_state : int, RandomState instance or None, default=None
        Seed or generator for reproducible output.

    Returns
    -------
    X : ndarray of shape (n_samples, n_cities, 2), dtype float64
        City coordinates.
    y : ndarray of shape (n_samples, n_cities), dtype int64
        Optimal tours starting at city 0. A closed tour can be walked in two directions;
        the one whose second city has the smaller index is returned.

    See Also
    --------
    solve_tsp_exact : Solve a single instance.
    skptr.metrics.tour_length : Length of closed tours.

    Examples
    --------
    >>> from skptr.datasets import make_tsp
    >>> X, y = make_tsp(4, n_cities=6, random_state=0)
    >>> X.shape, y.shape
    ((4, 6, 2), (4, 6))
    >>> bool((y[:, 0] == 0).all() and (y[:, 1] < y[:, -1]).all())
    True
    """
    n_samples = _check_int(n_samples, "n_samples", 1)
    n_cities = _check_tsp_size(n_cities, "n_cities")
    rng = check_random_state(random_state)
    X = rng.uniform(0.0, 1.0, size=(n_samples, n_cities, 2))
    # Instances are solved in batches whose cost tables stay around 4 MB.
    chunk = max(1, 2**19 // ((1 << (n_cities - 1)) * (n_cities - 1)))
    y = np.empty((n_samples, n_cities), dtype=np.int64)
    for start in range(0, n_samples, chunk):
        stop = min(start + chunk, n_samples)
        y[start:stop] = _held_karp(_pairwise_distances(X[start:stop]))
    return X, y


# --------------------------------------------------------------------------------------
# transduction tasks
# --------------------------------------------------------------------------------------

# Word classes of the synchronous grammars.
_DET, _ADJ, _NOUN, _VERB, _REL = range(5)
_SOURCE_PREFIX = ("d", "a", "n", "v", "r")
_TARGET_PREFIX = ("D", "A", "N", "V", "R")
_GENDERS = ("m", "f", "n")


def _lexicon_sizes(vocab_size):
    """Split ``vocab_size`` source words into determiners, adjectives, nouns, verbs and
    relative pronouns."""
    n_rel = 1
    n_det = max(1, vocab_size // 32)
    rest = vocab_size - n_rel - n_det
    n_noun = max(1, round(0.4 * rest))
    n_verb = max(1, round(0.3 * rest))
    n_adj = rest - n_noun - n_verb
    return np.array([n_det, n_adj, n_noun, n_verb, n_rel], dtype=np.int64)


class _Sentence:
    """Word classes of a source sentence, plus how each word reaches the target."""

    def __init__(self):
        self.classes = []  # word class of each source position
        self.order = []  # source positions in target order
        self.governor = []  # noun position a word agrees with, or -1

    def add(self, word_class, governor=-1):
        self.classes.append(word_class)
        self.governor.append(governor)
        return len(self.classes) - 1


def _noun_phrase(rng, sentence, budget, *, gendered):
    """Append a noun phrase of exactly ``budget`` words.

    A noun phrase is ``[determiner] adjective* noun [relative-pronoun verb NP]``; the
    optional relative clause makes the phrase a chain of segments. In the SVO grammar
    the determiner is optional, at most three modifiers precede the noun, and the
    relative clause puts its verb last in the target. In the gendered grammar the
    determiner is required, up to four adjectives follow it, and the order is kept.
    """
    head = 2 if gendered else 1  # words every phrase has: (determiner +) noun
    max_modifiers = 4 if gendered else 3
    smallest_clause = 2 + head  # relative pronoun, verb, smallest phrase
    pending_verbs = []
    while True:
        options = [
            m
            for m in range(max_modifiers + 1)
            if budget - head - m == 0 or budget - head - m >= smallest_clause
        ]
        n_modifiers = options[rng.randint(len(options))]
        modifiers = []
        if gendered:
            modifiers.append(sentence.add(_DET))
            modifiers.extend(sentence.add(_ADJ) for _ in range(n_modifiers))
        else:
            has_det = n_modifiers > 0 and bool(rng.randint(2))
            if has_det:
                modifiers.append(sentence.add(_DET))
            modifiers.extend(sentence.add(_ADJ) for _ in range(n_modifiers - has_det))
        noun = sentence.add(_NOUN)
        for position in modifiers:
            sentence.governor[position] = noun
        sentence.order.extend([*modifiers, noun])
        budget -= head + n_modifiers
        if budget == 0:
            break
        relative = sentence.add(_REL, governor=noun)
        verb = sentence.add(_VERB)
        sentence.order.append(relative)
        if gendered:
            sentence.order.append(verb)
        else:
            pending_verbs.append(verb)
        budget -= 2
    sentence.order.extend(reversed(pending_verbs))


def _grammar_sentence(rng, length, sizes, *, gendered):
    """One (source, target) pair of ``length`` source words as tuples of str tokens."""
    sentence = _Sentence()
    smallest_phrase = 2 if gendered else 1
    subject = rng.randint(smallest_phrase, length - smallest_phrase)
    _noun_phrase(rng, sentence, subject, gendered=gendered)
    verb = sentence.add(_VERB)
    if gendered:
        sentence.order.append(verb)
    _noun_phrase(rng, sentence, length - 1 - subject, gendered=gendered)
    if not gendered:
        sentence.order.append(verb)
    classes = np.asarray(sentence.classes)
    words = rng.randint(0, sizes[classes])
    source = tuple(f"{_SOURCE_PREFIX[c]}{w}" for c, w in zip(classes, words, strict=True))
    target = []
    for position in sentence.order:
        token = f"{_TARGET_PREFIX[classes[position]]}{words[position]}"
        governor = sentence.governor[position]
        if gendered and governor >= 0:
            token += _GENDERS[words[governor] % 3]
        target.append(token)
    return source, tuple(target)


def _itg_transduction(task, n_samples, min_length, max_length, vocab_size, rng):
    if task == "svo_sov":
        n_function_words, n_classes, sentence = 1, 3, _itg.svo_sentence
    else:
        n_function_words, n_classes, sentence = 4, 4, _itg.gender_sentence
    if vocab_size < n_function_words + n_classes:
        raise ValueError(
            f"task {task!r} needs vocab_size >= {n_function_words + n_classes} (one "
            f"word per word class); got vocab_size={vocab_size}."
        )
    if min_length < 3:
        raise ValueError(
            f"task {task!r} makes sentences of at least 3 words; got min_length={min_length}."
        )
    lengths = _itg.lengths_in_range(task, min_length, max_length)
    if lengths.size == 0:
        raise ValueError(
            f"task {task!r} makes no sentence of a length in min_length..max_length "
            f"({min_length}..{max_length}): its sentences have 3 words, or 5 and more."
        )
    sizes = _itg.class_sizes(vocab_size, n_classes, n_function_words)
    drawn = lengths[rng.randint(lengths.size, size=n_samples)]
    pairs = [sentence(rng, int(n), sizes) for n in drawn]
    return _object_array([s for s, _ in pairs]), _object_array([t for _, t in pairs])


def _object_array(items):
    array = np.empty(len(items), dtype=object)
    for i, item in enumerate(items):
        array[i] = item
    return array


def make_transduction(
    task,
    n_samples,
    min_length=8,
    max_length=64,
    vocab_size=128,
    *,
    grammar="itg",
    random_state=None,
):
    """Generate a transduction task of Grefenstette et al. (2015).

    Parameters
    ----------
    task : {"copy", "reversal", "bigram_flip", "svo_sov", "gender_conjugation"}
        The task:

        - ``"copy"``: the target is the source.
        - ``"reversal"``: the target is the source reversed.
        - ``"bigram_flip"``: the two tokens of each consecutive pair are swapped,
          ``a1 a2 a3 a4 -> a2 a1 a4 a3``; sources have even lengths only.
        - ``"svo_sov"``: sentences of a subject-verb-object language translated into a
          subject-object-verb one (see ``grammar``).
        - ``"gender_conjugation"``: a language with genderless articles translated
          word for word into one whose articles take the gender of their noun (see
          ``grammar``).

    n_samples : int
        Number of (source, target) pairs.
    min_length, max_length : int, default=8 and 64
        Source lengths are drawn uniformly from ``min_length..max_length`` (both
        included; for ``"bigram_flip"`` uniformly among the even lengths in that range).
        The paper trains on 8-64 and tests on 65-128. The grammar tasks need at least 3
        words per sentence; the paper's gender grammar (``grammar="itg"``) makes
        sentences of 3 words, then of 5 or more, and the nested one of 5 or more.
    vocab_size : int, default=128
        For copy, reversal and bigram flipping, the number of distinct source symbols,
        drawn uniformly. For the grammar tasks, the number of distinct source words,
        split into fixed word classes, as evenly as the grammar allows (see
        ``grammar``); the target language has its own words.
    grammar : {"itg", "nested"}, default="itg"
        The synchronous grammar of the two grammar tasks; ignored by the others.

        - ``"itg"``: the paper's inversion transduction grammars (its Table 1).
          In ``"svo_sov"``, a sentence is ``S VT O``, with subject and object phrases
          ``S -> S S | S rp S VT | ST`` and ``O -> O O | S rp S VT | OT``; only the main
          verb moves, behind the object, and relative clauses keep their order:
          ``s1 v28 o5 s15 r0 s19 v16 o10`` becomes ``S1 O5 S15 R0 S19 V16 O10 V28``.
          The words are subject nouns ``s<i>``, object nouns ``o<i>``, verbs ``v<i>``
          and the relative pronoun ``r0`` (``vocab_size - 1`` split in three, at
          least 4 words in all). In ``"gender_conjugation"``, a clause is
          ``B -> B or B | NP and NP | NP V``, ``V -> W B | W``, ``NP -> the|a noun``,
          with verbs ``w<i>`` and masculine, feminine and neuter nouns ``m<i>``,
          ``f<i>``, ``n<i>`` (``vocab_size - 4`` split in four, at least 8 words).
          It is translated word for word: nouns and verbs to capitals (``"M3"``),
          ``and``/``or`` to ``und``/``oder``, and each article to ``der``, ``die``,
          ``das``, ``ein`` or ``eine`` by the gender of the noun after it. Recursive
          rules are chosen with the paper's probabilities among those that can reach
          the sentence's length.
        - ``"nested"``: harder grammars with noun phrases ``[determiner] adjective*
          noun`` and relative clauses ``relative-pronoun verb noun-phrase``. In
          ``"svo_sov"`` every verb moves after its object, in the main clause and in
          every relative clause, so nested clauses become centre-embedded:
          ``n1 r0 v1 n2 r0 v2 n3 v3 n4`` becomes ``N1 R0 N2 R0 N3 V2 V1 N4 V3``. In
          ``"gender_conjugation"`` each determiner and adjective takes the gender of
          the noun it precedes (possibly several adjectives later) and each relative
          pronoun the gender of the noun it follows; noun phrases are ``determiner
          adjective* noun``, and the gender of noun ``n<i>`` is fixed by the vocabulary
          (``i % 3``: masculine, feminine, neuter), so a model must learn it per noun.
          The words are determiners, adjectives, nouns, verbs and one relative pronoun
          (at least 5 words).
    random_state : int, RandomState instance or None, default=None
        Seed or generator for reproducible output.

    Returns
    -------
    X : ndarray of shape (n_samples,), dtype object
        Source sequences.
    y : ndarray of shape (n_samples,), dtype object
        Target sequences, ``y[i]`` the exact transduction of ``X[i]``.

    Notes
    -----
    The type of the sequences depends on the task and the vocabulary:

    - copy, reversal and bigram flipping with ``vocab_size <= 52``: Python strings, one
      character per token, the symbols being ``"a"``-``"z"`` then ``"A"``-``"Z"``;
    - the same tasks with ``vocab_size > 52``: tuples of Python ints in
      ``range(vocab_size)``;
    - the grammar tasks, whatever ``vocab_size``: tuples of str tokens, one word per
      token. Source words are a class letter and a number (in the nested grammars
      ``"d0"`` determiner, ``"a3"`` adjective, ``"n7"`` noun, ``"v2"`` verb, ``"r0"``
      relative pronoun); target words use the capital letter of the class (``"N7"``),
      and in the nested gender task the agreeing words end with their gender
      (``"D0f"``, ``"A3m"``, ``"R0n"``).

    The paper draws sentences from its grammars and rejects those outside the length
    range; here each sentence is grown to a length drawn uniformly from the lengths in
    range that the grammar can produce, as for the other tasks. The grammars are
    unambiguous (each word class decides the next parsing step), so every source
    sentence has exactly one target. The word classes and the genders
    depend only on ``vocab_size``, so sets drawn with different seeds (a training set
    and a longer test set, say) speak the same languages.

    Examples
    --------
    >>> from skptr.datasets import make_transduction
    >>> X, y = make_transduction("reversal", 2, vocab_size=26, random_state=0)
    >>> all(target == source[::-1] for source, target in zip(X, y))
    True
    >>> X, y = make_transduction("svo_sov", 1, min_length=5, max_length=5, random_state=0)
    >>> len(X[0]), len(y[0])
    (5, 5)
    >>> X, y = make_transduction("gender_conjugation", 1, 3, 3, random_state=0)
    >>> len(X[0]), y[0][0] in ("der", "die", "das", "ein", "eine")
    (3, True)
    """
    if not isinstance(task, str) or task not in _TRANSDUCTION_TASKS:
        raise ValueError(
            f"task must be one of {', '.join(map(repr, _TRANSDUCTION_TASKS))}; got {task!r}."
        )
    n_samples = _check_int(n_samples, "n_samples", 1)
    min_length = _check_int(min_length, "min_length", 1)
    max_length = _check_int(max_length, "max_length", 1)
    if max_length < min_length:
        raise ValueError(
            f"max_length must be >= min_length, got min_length={min_length}, "
            f"max_length={max_length}."
        )
    vocab_size = _check_int(vocab_size, "vocab_size", 1)
    rng = check_random_state(random_state)

    if grammar not in ("itg", "nested"):
        raise ValueError(f"grammar must be 'itg' or 'nested'; got {grammar!r}.")
    if task in ("svo_sov", "gender_conjugation") and grammar == "itg":
        return _itg_transduction(task, n_samples, min_length, max_length, vocab_size, rng)
    if task in ("svo_sov", "gender_conjugation"):
        gendered = task == "gender_conjugation"
        shortest = 5 if gendered else 3
        if min_length < shortest:
            raise ValueError(
                f"task {task!r} makes sentences of at least {shortest} words; got "
                f"min_length={min_length}."
            )
        if vocab_size < 5:
            raise ValueError(
                f"task {task!r} needs vocab_size >= 5 (one word per word class); got "
                f"vocab_size={vocab_size}."
            )
        sizes = _lexicon_sizes(vocab_size)
        lengths = rng.randint(min_length, max_length + 1, size=n_samples)
        pairs = [_grammar_sentence(rng, int(n), sizes, gendered=gendered) for n in lengths]
        return _object_array([s for s, _ in pairs]), _object_array([t for _, t in pairs])

    if task == "bigram_flip":
        lowest = min_length + min_length % 2
        highest = max_length - max_length % 2
        if lowest > highest:
            raise ValueError(
                "task 'bigram_flip' needs an even length in min_length..max_length; got "
                f"min_length={min_length}, max_length={max_length}."
            )
        lengths = 2 * rng.randint(lowest // 2, highest // 2 + 1, size=n_samples)
    else:
        lengths = rng.randint(min_length, max_length + 1, size=n_samples)
    symbols = rng.randint(vocab_size, size=int(lengths.sum()))
    sources = np.split(symbols, np.cumsum(lengths)[:-1])
    if task == "copy":
        targets = sources
    elif task == "reversal":
        targets = [s[::-1] for s in sources]
    else:
        targets = [s.reshape(-1, 2)[:, ::-1].ravel() for s in sources]
    if vocab_size <= len(_LETTERS):
        letters = np.array(list(_LETTERS[:vocab_size]), dtype=object)

        def encode(sequence):
            return "".join(letters[sequence])
    else:

        def encode(sequence):
            return tuple(sequence.tolist())

    return (
        _object_array([encode(s) for s in sources]),
        _object_array([encode(t) for t in targets]),
    )
