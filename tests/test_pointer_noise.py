"""The step-by-step Gumbel noise of sampled decoding (skptr.pointer._noise)."""

import numpy as np
from keras import ops
from scipy import stats

from skptr.pointer._noise import gumbel_step_noise, uniform_step_noise


def _murmur_finaliser(h):
    h = h.astype(np.uint64)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h


def _numpy_uniform(keys, step, n_lanes, n_positions):
    golden = 0x9E3779B9
    row = (step * n_lanes + np.arange(n_lanes) + golden) & 0xFFFFFFFF
    positions = _murmur_finaliser((np.arange(n_positions) * golden) & 0xFFFFFFFF)
    per_row = _murmur_finaliser(keys.astype(np.uint64)[:, None] ^ _murmur_finaliser(row)[None])
    hashed = _murmur_finaliser(per_row[:, :, None] ^ positions[None, None, :])
    return ((hashed >> 9).astype(np.float64) + 0.5) / 2**23


def _uniform(keys, step, n_lanes, n_positions):
    keys = ops.convert_to_tensor(np.asarray(keys, dtype=np.int32))
    return ops.convert_to_numpy(uniform_step_noise(keys, step, n_lanes, n_positions))


def test_the_noise_is_the_documented_hash_bit_for_bit():
    keys = np.array([0, 1, 12345, 2**31 - 1], dtype=np.int32)
    for step in (0, 3, 999):
        np.testing.assert_array_equal(
            _uniform(keys, step, 5, 11), _numpy_uniform(keys, step, 5, 11).astype(np.float32)
        )


def test_the_noise_is_uniform_strictly_inside_0_and_1_and_unrelated_across_its_axes():
    values = _uniform(np.arange(64), 7, 8, 256)  # 131,072 numbers
    assert 0 < values.min() and values.max() < 1
    assert stats.kstest(values.ravel(), "uniform").pvalue > 1e-3
    # Neighbouring samples, lanes, positions and steps are uncorrelated.
    for a, b in (
        (values[:-1], values[1:]),
        (values[:, :-1], values[:, 1:]),
        (values[:, :, :-1], values[:, :, 1:]),
        (values, _uniform(np.arange(64), 8, 8, 256)),
    ):
        assert abs(np.corrcoef(a.ravel(), b.ravel())[0, 1]) < 0.02
    # The most extreme values stay finite as Gumbel noise.
    extremes = gumbel_step_noise(np.arange(4096), 0, 1, 4096)
    assert np.all(np.isfinite(ops.convert_to_numpy(extremes)))


def test_the_argmax_of_logits_plus_the_noise_samples_their_softmax():
    logits = np.log(np.array([0.5, 0.25, 0.15, 0.1]))
    noise = ops.convert_to_numpy(gumbel_step_noise(np.arange(20_000), 3, 2, 4))
    counts = np.bincount(np.argmax(logits + noise, axis=-1).ravel(), minlength=4)
    expected = np.exp(logits) * counts.sum()
    assert stats.chisquare(counts, expected).pvalue > 1e-3
