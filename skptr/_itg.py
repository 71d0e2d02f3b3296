"""The two synchronous grammars of Grefenstette et al. (2015), at exact lengths.

The paper's Table 1 gives inversion transduction grammars (ITG) whose recursive rules
are chosen with fixed probabilities, and keeps the sentences whose length falls in the
wanted range. Here every sentence is grown to a length drawn uniformly from that range
instead: at each non-terminal, the rules that can still reach the remaining length are
chosen with the paper's probabilities renormalised, and a split between two
non-terminals is drawn uniformly among those that can be completed.
"""

import functools

import numpy as np

#: Subject-verb-object grammar: subject nouns, object nouns, verbs, relative pronoun.
SVO_CLASSES = ("s", "o", "v", "r")
#: Genderless-to-gendered grammar: verbs and the nouns of each gender.
GENDER_CLASSES = ("w", "m", "f", "n")
GENDER_FUNCTION_WORDS = ("the", "a", "and", "or")
_ARTICLES = {
    ("the", "m"): "der",
    ("the", "f"): "die",
    ("the", "n"): "das",
    ("a", "m"): "ein",
    ("a", "f"): "eine",
    ("a", "n"): "ein",
}
_CONJUNCTIONS = {"and": "und", "or": "oder"}


def class_sizes(vocab_size, n_classes, n_function_words):
    """Split the words left after the function words as evenly as possible."""
    rest = vocab_size - n_function_words
    return [rest // n_classes + (i < rest % n_classes) for i in range(n_classes)]


def _svo_phrase(rng, length, terminal):
    """Word classes of a subject (``terminal="s"``) or object (``"o"``) phrase.

    ``S -> S S (1/5) | S rp S VT (1/5) | ST (3/5)``, and the same for ``O`` with
    ``OT``, except that the relative clause of an object is made of subjects.
    """
    if length == 1:
        return [terminal]
    if length >= 4 and rng.randint(2):  # the two recursive rules are equally likely
        left = rng.randint(1, length - 2)
        return [
            *_svo_phrase(rng, left, "s"),
            "r",
            *_svo_phrase(rng, length - 2 - left, "s"),
            "v",
        ]
    left = rng.randint(1, length)
    return [*_svo_phrase(rng, left, terminal), *_svo_phrase(rng, length - left, terminal)]


def svo_sentence(rng, length, sizes):
    """``A -> S VT O | S O VT``: the main verb moves behind the object; relative
    clauses keep their order. Returns the source and target tokens."""
    subject_length = rng.randint(1, length - 1)
    subject = _svo_phrase(rng, subject_length, "s")
    obj = _svo_phrase(rng, length - 1 - subject_length, "o")
    classes = [*subject, "v", *obj]
    class_sizes = [*sizes, 1]  # one relative pronoun
    words = rng.randint(0, np.take(class_sizes, [SVO_CLASSES.index(c) for c in classes]))
    source = [f"{c}{w}" for c, w in zip(classes, words, strict=True)]
    order = [*range(subject_length), *range(subject_length + 1, length), subject_length]
    return tuple(source), tuple(source[i].upper() for i in order)


@functools.cache
def _clause_lengths_up_to(length):
    """Which lengths a ``B`` of the gender grammar can have, for lengths ``0..length``.

    ``B -> B or B (1/4) | S and S (1/4) | S V (1/2)``, ``V -> W B (3/4) | W (1/4)``,
    ``S -> the|a noun``: 3, then every length from 5 on.
    """
    reachable = np.zeros(length + 1, dtype=bool)
    for n in range(3, length + 1):
        reachable[n] = n in (3, 5) or reachable[n - 3] or _or_splits(reachable, n).size > 0
    return reachable


def _or_splits(reachable, length):
    """Lengths of the left ``B`` in ``B or B`` that leave a reachable right one."""
    left = np.arange(3, length - 3)
    return left[reachable[left] & reachable[length - 1 - left]]


def _gender_clause(rng, length, reachable, sizes, words):
    rules, weights = [], []
    if length == 5:
        rules.append("and")
        weights.append(1)
    if length == 3 or (length > 3 and reachable[length - 3]):
        rules.append("verb")
        weights.append(2)
    splits = _or_splits(reachable, length)
    if splits.size:
        rules.append("or")
        weights.append(1)
    rule = rules[rng.choice(len(rules), p=np.divide(weights, sum(weights)))]
    if rule == "or":
        left = int(splits[rng.randint(splits.size)])
        _gender_clause(rng, left, reachable, sizes, words)
        words.append("or")
        _gender_clause(rng, length - 1 - left, reachable, sizes, words)
    elif rule == "and":
        _noun_phrase(rng, sizes, words)
        words.append("and")
        _noun_phrase(rng, sizes, words)
    else:
        _noun_phrase(rng, sizes, words)
        words.append(f"w{rng.randint(sizes[0])}")
        if length > 3:
            _gender_clause(rng, length - 3, reachable, sizes, words)


def _noun_phrase(rng, sizes, words):
    gender = 1 + rng.randint(3)
    words.append(GENDER_FUNCTION_WORDS[rng.randint(2)])
    words.append(f"{GENDER_CLASSES[gender]}{rng.randint(sizes[gender])}")


def gender_sentence(rng, length, sizes):
    """``A -> B``, translated word for word, each article taking the gender of its
    noun. Returns the source and target tokens."""
    source = []
    _gender_clause(rng, length, _clause_lengths_up_to(max(length, 128)), sizes, source)
    target = []
    for token, following in zip(source, [*source[1:], None], strict=True):
        if token in _CONJUNCTIONS:
            target.append(_CONJUNCTIONS[token])
        elif (token, following[0] if following else None) in _ARTICLES:
            target.append(_ARTICLES[token, following[0]])
        else:
            target.append(token.upper())
    return tuple(source), tuple(target)


def lengths_in_range(task, min_length, max_length):
    """The sentence lengths of ``min_length..max_length`` the task's grammar can produce
    (``svo_sov``: from 3 words, ``S VT O``; ``gender_conjugation``: 3, ``S W``, then
    from 5)."""
    lengths = np.arange(min_length, max_length + 1)
    if task == "svo_sov":
        return lengths[lengths >= 3]
    return lengths[_clause_lengths_up_to(max(max_length, 128))[lengths]]
