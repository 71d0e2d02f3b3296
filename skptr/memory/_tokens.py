"""Token sequences: validation, vocabularies and conversion to and from ids.

A token sequence is a string (each character a token), a list or tuple of hashable
tokens, or a 1-D array. These helpers turn a collection of them into lists of Python
tokens, learn vocabularies, map tokens to ids with clear errors, and give predictions
back in the form the training targets had.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "check_token_sequences",
    "decode_tokens",
    "encode_tokens",
    "learn_vocabulary",
    "sequence_kind",
]


def _split_samples(X, name):
    if hasattr(X, "tocsr") or hasattr(X, "toarray"):
        raise TypeError(
            f"{name} is a sparse matrix; sparse input is not supported, pass token "
            "sequences (strings, lists of tokens or 1-D arrays)."
        )
    if isinstance(X, str | bytes):
        raise TypeError(
            f"{name} must be a collection of token sequences (e.g. a list of strings), "
            f"got a single {type(X).__name__}."
        )
    if isinstance(X, np.ndarray) and X.dtype != object and X.ndim != 2:
        raise ValueError(
            f"{name} must be a 1-D collection of token sequences or a 2-D array (one "
            f"sequence per row); got an array of shape {X.shape}. Reshape your data: a "
            "single sequence s is passed as [s]."
        )
    if hasattr(X, "to_numpy") and not isinstance(X, list | tuple):
        X = X.to_numpy()
    try:
        samples = list(X)
    except TypeError:
        raise TypeError(
            f"{name} must be a collection of token sequences, got {type(X).__name__}."
        ) from None
    if not samples:
        raise ValueError(f"{name} holds no samples; at least one sequence is required.")
    return samples


def _check_token(token, index, position, name):
    try:
        hash(token)
    except TypeError:
        raise ValueError(
            f"{name}[{index}] has an unhashable token at position {position} "
            f"({type(token).__name__}); tokens must be hashable (str, int, tuple, ...)."
        ) from None
    if isinstance(token, complex):
        raise ValueError(
            f"{name}[{index}] has the complex token {token!r} at position {position}: "
            "Complex data not supported; tokens are discrete symbols (str, int, tuple, ...)."
        )
    if isinstance(token, float):
        what = "a NaN token" if math.isnan(token) else f"the number token {token!r}"
        raise ValueError(
            f"{name}[{index}] has {what} at position {position}; tokens are "
            "discrete symbols (str, int, tuple, ...), not floating-point numbers. Convert "
            "integer-valued floats with .astype(int)."
        )


def _sample_tokens(sample, index, name):
    if sample is None:
        raise ValueError(f"{name}[{index}] is None; every sample must be a token sequence.")
    if isinstance(sample, str):
        return list(sample)
    if isinstance(sample, bytes):
        raise ValueError(
            f"{name}[{index}] is a bytes object; decode it to str first (or pass a list "
            "of tokens)."
        )
    if isinstance(sample, np.ndarray):
        if sample.ndim != 1:
            raise ValueError(
                f"{name}[{index}] must be a 1-D sequence of tokens, got an array of shape "
                f"{sample.shape}."
            )
        tokens = sample.tolist()
    elif isinstance(sample, list | tuple):
        tokens = list(sample)
    elif isinstance(sample, dict | set | frozenset) or not hasattr(sample, "__iter__"):
        raise ValueError(
            f"{name}[{index}] is a {type(sample).__name__}, not a token sequence (a string, "
            "a list or tuple of tokens, or a 1-D array)."
        )
    else:
        tokens = list(sample)
    for position, token in enumerate(tokens):
        if isinstance(token, np.generic):
            token = token.item()
            tokens[position] = token
        _check_token(token, index, position, name)
    return tokens


def check_token_sequences(X, name="X"):
    """Validate a collection of token sequences.

    Parameters
    ----------
    X : sequence of token sequences
        Strings, lists or tuples of hashable tokens, or 1-D arrays; a 2-D array is read
        as one sequence per row. Lengths may differ; empty sequences are allowed.
    name : str, default="X"
        Name of the argument, used in error messages.

    Returns
    -------
    tokens : list of list
        The tokens of each sample, as Python objects (NumPy scalars are converted).
    samples : list
        The samples as given, used to learn the kind of the sequences.

    Raises
    ------
    ValueError
        If a sample is not a token sequence, holds an unhashable or NaN token, or is a
        multi-dimensional array, naming the sample.
    TypeError
        If ``X`` is not a collection of samples.
    """
    samples = _split_samples(X, name)
    return [_sample_tokens(s, i, name) for i, s in enumerate(samples)], samples


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

    Parameters
    ----------
    sequences : list of list
        Token sequences, as returned by :func:`check_token_sequences`.

    Returns
    -------
    ndarray of shape (n_tokens,), dtype object
        The vocabulary; a token's id is its position in it.
    """
    seen = dict.fromkeys(token for tokens in sequences for token in tokens)
    tokens = list(seen)
    try:
        tokens = sorted(tokens)
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
        Token sequences, as returned by :func:`check_token_sequences`.
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
    index = {token: i for i, token in enumerate(vocabulary.tolist())}
    encoded = []
    for i, tokens in enumerate(sequences):
        ids = np.empty(len(tokens), dtype=np.int32)
        for position, token in enumerate(tokens):
            token_id = index.get(token)
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
