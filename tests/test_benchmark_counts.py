"""The benchmarks' count of the work of one sequence, against hand-computed values."""

import pytest

from benchmarks._reference import build_reference, multiply_adds_per_sequence
from skptr.pointer._layers import PointerNetwork


def test_pointer_network_multiply_adds_by_hand():
    network = PointerNetwork(hidden_size=4, bidirectional=False, seed=0).build_for(2)
    # 3 positions, 4 decoder steps, 4 pointer positions (with the end): the embedding
    # 2 x 4 per position; the encoder and decoder LSTMs (4 + 4) x 16 per step; the
    # additive scorer's key projection 4 x 4 per pointer position, its query
    # projection 4 x 4 per step and its score vector 4 per step and pointer position.
    expected = 3 * 8 + 3 * 128 + 4 * 128 + (4 * 16 + 4 * 16 + 4 * 4 * 4)
    assert multiply_adds_per_sequence(network, 3, 4) == expected


def test_bidirectional_pointer_and_general_scorer_by_hand():
    network = PointerNetwork(hidden_size=2, attention="general", seed=0).build_for(1)
    # Width 4: the embedding 1 x 2 per position, two encoder directions (2 + 2) x 8 per
    # step, the decoder (4 + 4) x 16 per step, the general scorer's key projection
    # 4 x 4 per pointer position and a product of width 4 per step and pointer position.
    expected = 5 * 2 + 5 * 2 * 32 + 3 * 128 + 6 * 16 + 3 * 6 * 4
    assert multiply_adds_per_sequence(network, 5, 3) == expected


def test_reference_multiply_adds_by_hand():
    reference = build_reference(hidden_size=2, n_classes=6, n_features=2)
    # Two encoder directions (2 + 2) x 8 per position, the decoder of width 4 reading the
    # chosen element and a start flag, (3 + 4) x 16 per step, and the classifier 4 x 6.
    expected = 5 * 2 * 32 + 3 * 112 + 3 * 24
    assert multiply_adds_per_sequence(reference, 5, 3) == expected


def test_uncounted_architectures_are_refused():
    network = PointerNetwork(hidden_size=4, glimpses=1, seed=0).build_for(2)
    with pytest.raises(ValueError, match="glimpses"):
        multiply_adds_per_sequence(network, 3, 4)
