"""Token sequences: vocabularies and conversion to and from ids.

A token sequence is a string (each character a token), a list or tuple of hashable
tokens, or a 1-D array; :func:`skptr._sequences.check_token_sequences` validates them.
These helpers learn vocabularies, map tokens to ids with clear errors, and give
predictions back in the form the training targets had.
"""

from __future__ import annotations

import numpy as np

from .._sequences import token_key

__all__ = [
    "decode_tokens",
    "encode_tokens",
    "learn_vocabulary",
    "sequence_kind",
]


def sequence_kind(samples):
    """Describe how sequences like ``samples`` are written, to build predictions alike.

    Parameters
    ----------
    samples : list
        Training targets as given by the user.

    Returns
    -------
    kind : {"str", "tuple", "list", "array"}
        ``"str"`` if every sample is a string, ``"tuple"`` if every one is a tuple,
        ``"array"`` if every one is a NumPy array, ``"list"`` otherwise.
    dtype : str or None
        The dtype of the arrays for ``"array"``.
    """
    if all(isinstance(s, str) for s in samples):
        return "str", None
    if all(isinstance(s, tuple) for s in samples):
        return "tuple", None
    if all(isinstance(s, np.ndarray) for s in samples):
        return "array", np.result_type(*[s.dtype for s in samples]).str
    return "list", None


def learn_vocabulary(sequences):
    """Distinct tokens of ``sequences``, sorted when they can be compared.

    Tokens that compare equal but differ in type, such as ``True`` and ``1``, are
    distinct tokens.

    Parameters
    ----------
    sequences : list of list
        Token sequences, as returned by
        :func:`~skptr._sequences.check_token_sequences`.

    Returns
    -------
    ndarray of shape (n_tokens,), dtype object
        The vocabulary; a token's id is its position in it.
    """
    distinct = {token_key(token): token for tokens in sequences for token in tokens}
    tokens = list(distinct.values())
    try:
        tokens = sorted(tokens, key=lambda token: (token, type(token).__name__))
    except TypeError:
        pass  # tokens of mixed types keep their order of first appearance
    vocabulary = np.empty(len(tokens), dtype=object)
    vocabulary[:] = tokens
    return vocabulary


def encode_tokens(sequences, vocabulary, *, name, unknown=None, where="fit"):
    """Map token sequences to ids (the position of each token in ``vocabulary``).

    Parameters
    ----------
    sequences : list of list
        Token sequences, as returned by :func:`~skptr._sequences.check_token_sequences`.
    vocabulary : ndarray of shape (n_tokens,)
        Known tokens.
    name : str
        Name of the argument, used in error messages.
    unknown : int or None, default=None
        Id given to tokens missing from the vocabulary; ``None`` raises instead.
    where : str, default="fit"
        Where the vocabulary was learned, for error messages.

    Returns
    -------
    list of ndarray of int32
        The ids of each sequence.

    Raises
    ------
    ValueError
        If a token is not in the vocabulary and ``unknown`` is None, naming the sample
        and the token.
    """
    index = {token_key(token): i for i, token in enumerate(vocabulary.tolist())}
    encoded = []
    for i, tokens in enumerate(sequences):
        ids = np.empty(len(tokens), dtype=np.int32)
        for position, token in enumerate(tokens):
            token_id = index.get(token_key(token))
            if token_id is None:
                if unknown is None:
                    raise ValueError(
                        f"{name}[{i}] holds the token {token!r} (position {position}), which "
                        f"was not seen in {where}; known tokens: {_preview(vocabulary)}."
                    )
                token_id = unknown
            ids[position] = token_id
        encoded.append(ids)
    return encoded


def _preview(vocabulary, limit=10):
    items = [repr(t) for t in vocabulary.tolist()[:limit]]
    more = len(vocabulary) - limit
    return "[" + ", ".join(items) + (f", ... ({more} more)" if more > 0 else "") + "]"


def decode_tokens(ids, vocabulary, kind, dtype=None):
    """Build one sequence of the given kind from token ids.

    Parameters
    ----------
    ids : sequence of int
        Token ids.
    vocabulary : ndarray of shape (n_tokens,)
        The tokens.
    kind : {"str", "tuple", "list", "array"}
        As returned by :func:`sequence_kind`.
    dtype : str or None, default=None
        The dtype for ``kind="array"``.

    Returns
    -------
    str, tuple, list or ndarray
    """
    tokens = [vocabulary[i] for i in ids]
    if kind == "str":
        return "".join(tokens)
    if kind == "tuple":
        return tuple(tokens)
    if kind == "array":
        return np.asarray(tokens, dtype=dtype)
    return tokens
