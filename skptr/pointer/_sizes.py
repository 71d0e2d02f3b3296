"""Sizes of the pointer network's work: the estimates of memory that bound a fit and a
decoding call before they start (see :mod:`skptr._limits`), and of decoding calls.
"""

from __future__ import annotations

from ._layers import decoder_depth

__all__ = [
    "activation_count",
    "count_orderings",
    "decoding_numbers",
    "encoding_count",
    "weight_count",
]

#: Decoded lanes (samples times candidates) per decoding call, and the most numbers a
#: call may hold (:func:`decoding_numbers`), unless one sample needs more.
DECODER_ROWS = 2048
DECODER_NUMBERS = 2**24
# Gates per recurrent cell.
_GATES = {"lstm": 4, "gru": 3, "rnn": 1}


def count_orderings(n_positions, ordered_subsets, at_most):
    """Orderings of ``n_positions`` positions (all permutations; with ``ordered_subsets``
    also every shorter ordered subset, the empty one included), counted up to
    ``at_most``: a beam wider than this holds every ordering."""
    total, prefixes = (1, 1) if ordered_subsets else (0, 1)
    for remaining in range(n_positions, 0, -1):
        prefixes *= remaining
        if ordered_subsets or remaining == 1:
            total += prefixes
        if total >= at_most or prefixes >= at_most:
            return at_most
    return max(total, 1)


def _widths(est):
    """Width of the recurrent states and of the encodings."""
    directions = 2 if est.bidirectional and est.encoder == "recurrent" else 1
    return est.hidden_size, est.hidden_size * directions


def weight_count(est):
    """Estimated number of the weights of the network ``est`` (an estimator with the
    hyperparameters the network is built with) describes."""
    hidden, width = _widths(est)
    gates, directions = _GATES[est.cell], width // hidden
    if est.encoder == "attention":
        heads = est.n_heads * max(1, hidden // est.n_heads)
        block = 4 * (hidden + 1) * heads + 9 * hidden * hidden + 9 * hidden
        encoder = (est.n_features_in_ + 1) * hidden + est.num_layers * block
    else:
        encoder = (est.n_features_in_ + 1) * hidden + est.num_layers * directions * gates * (
            hidden * (width + hidden + 2)
        )
    decoder = decoder_depth(est.num_layers, est.decoder_layers) * gates * width * (2 * width + 2)
    scorers = (1 + min(est.n_glimpses, 1)) * (2 * width * hidden + width * width + 2 * hidden)
    return encoder + decoder + scorers


def activation_count(est, n_rows, n_steps, decoded_rows=None):
    """Estimated numbers a training step holds for ``n_rows`` sequences of ``n_steps``
    steps, weights excluded; ``decoded_rows`` (default ``n_rows``) is the number of
    orderings the decoder is taught, when it differs (the rollouts of a cost)."""
    hidden, width = _widths(est)
    decoded_rows = n_rows if decoded_rows is None else decoded_rows
    # Per position and row: the encoder's layers (attention weights, then 10 vectors
    # per block) ...
    if est.encoder == "attention":
        encoder = est.num_layers * (2 * est.n_heads * n_steps + 10 * hidden) + hidden
    else:
        encoder = est.num_layers * _GATES[est.cell] * width + hidden
    # ... and per step and taught ordering: the decoder's layers, its copy of the keys,
    # and the scores of every position (an additive scorer's tanh layer included).
    per_score = hidden + 2 if est.attention == "additive" else 6
    decoder = (
        decoder_depth(est.num_layers, est.decoder_layers) * _GATES[est.cell] * width
        + 2 * width
        + n_steps * per_score * (1 + est.n_glimpses)
    )
    return 2 * (n_steps + 1) * (n_rows * encoder + decoded_rows * decoder)


def decoding_numbers(est, n_steps, sampled):
    """Estimated numbers a decoding call holds per image row for ``n_steps``
    positions: those its lanes share (encodings, projected keys) and those of each
    lane (decoder state, chosen positions, one step's scores, its ordering, and with
    ``sampled`` one step's Gumbel noise and the hashes it comes from)."""
    hidden, width = _widths(est)
    glimpse = min(est.n_glimpses, 1)
    shared = (n_steps + 1) * (2 * width + (1 + glimpse) * hidden)
    scored = 8 + (hidden * (1 + est.n_glimpses) if est.attention == "additive" else 0)
    states = 4 * decoder_depth(est.num_layers, est.decoder_layers) * width
    per_lane = (n_steps + 1) * scored + 2 * n_steps + states
    if sampled:
        per_lane += 4 * (n_steps + 1)
    return shared, per_lane


def encoding_count(est, n_rows, n_steps):
    """Estimated numbers the encoder holds for ``n_rows`` sequences of ``n_steps``
    steps at inference."""
    hidden, width = _widths(est)
    per_step = est.num_layers * _GATES[est.cell] * width + hidden
    if est.encoder == "attention":
        per_step += est.num_layers * (est.n_heads * n_steps + 4 * hidden)
    return n_rows * (n_steps + 1) * per_step
