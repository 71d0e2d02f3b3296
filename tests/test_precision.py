"""Mixed precision: the ``dtype_policy`` hyperparameter and Keras' global policy."""

import pickle
import threading

import keras
import numpy as np
import pytest
from _marks import once

from skptr import NeuralStackTransducer, PointerNetworkOrderer, load

SMALL_TRANSDUCER = dict(
    hidden_size=16, embedding_dim=8, memory_width=8, epochs=2, batch_size=16, random_state=0
)


def _sorting(n_samples, seed, n_steps=6):
    X = np.random.default_rng(seed).random((n_samples, n_steps))
    return X, np.argsort(X, axis=1)


def _reversal(n_samples, seed, low=1, high=7):
    rng = np.random.default_rng(seed)
    X = [
        "".join(rng.choice(list("ab"), size=rng.integers(low, high + 1))) for _ in range(n_samples)
    ]
    return X, [x[::-1] for x in X]


@pytest.fixture
def global_policy():
    """Set Keras' global dtype policy for the test (Keras keeps it per thread)."""
    previous = keras.config.dtype_policy()
    yield keras.config.set_dtype_policy
    keras.config.set_dtype_policy(previous)


def test_mixed_bfloat16_pointer_network_keeps_float32_weights_and_scores(tmp_path):
    X, y = _sorting(64, seed=0)  # 4 steps, eager on TensorFlow; learning to sort traces them
    est = PointerNetworkOrderer(
        hidden_size=16, epochs=2, batch_size=32, random_state=0, dtype_policy="mixed_bfloat16"
    ).fit(X, y)
    assert est.network_params_["dtype_policy"] == "mixed_bfloat16"
    assert {w.dtype for w in est.network_.weights} == {"float32"}
    assert est.network_.dtype_policy.compute_dtype == "bfloat16"
    proba = est.predict_proba(X[:8])
    assert proba.dtype == np.float32
    np.testing.assert_allclose(proba.sum(axis=-1), 1.0, atol=1e-5)
    predicted = est.predict(X[:64])
    est.save(tmp_path / "model.skptr")
    loaded = load(tmp_path / "model.skptr")
    assert loaded.network_.dtype_policy.name == "mixed_bfloat16"
    np.testing.assert_array_equal(loaded.predict(X[:64]), predicted)
    est.set_params(decode="beam", beam_width=3)
    assert est.predict(X[:8]).shape == (8, 6)


def test_mixed_bfloat16_transducer_keeps_the_memory_in_float32():
    X, y = _reversal(96, seed=1)
    est = NeuralStackTransducer(**SMALL_TRANSDUCER, n_init=1, dtype_policy="mixed_bfloat16")
    est.fit(X, y)
    assert {w.dtype for w in est.network_.weights if w.trainable} == {"float32"}
    trace = est.memory_trace(X[:3])[0]
    assert trace["strengths"].dtype == np.float32
    assert est.predict(X[:5]).shape == (5,)


def test_mixed_float16_scales_the_loss_also_across_initialisations():
    X, y = _reversal(96, seed=2)
    est = NeuralStackTransducer(
        **SMALL_TRANSDUCER, n_init=2, gate_noise_start=0.6, dtype_policy="mixed_float16"
    ).fit(X, y)
    assert isinstance(est.network_.optimizer, keras.optimizers.LossScaleOptimizer)
    assert len(est.init_scores_) == 2
    assert np.all(np.isfinite(est.history_["loss"]))
    # The second initialisation trained with a reset loss scale, not a zero one.
    assert float(est.network_.optimizer.dynamic_scale) > 1.0


@once
def test_none_follows_keras_global_policy_of_the_fitting_thread(global_policy):
    X, y = _sorting(64, seed=3)
    global_policy("mixed_bfloat16")
    est = PointerNetworkOrderer(hidden_size=8, epochs=1, random_state=0).fit(X, y)
    assert est.network_params_["dtype_policy"] == "mixed_bfloat16"
    # A fit in another thread sees that thread's policy (float32 by default).
    other = PointerNetworkOrderer(hidden_size=8, epochs=1, random_state=0)
    thread = threading.Thread(target=other.fit, args=(X, y))
    thread.start()
    thread.join()
    assert other.network_params_["dtype_policy"] == "float32"
    # Changing the global policy after fit changes neither the model nor its copies.
    global_policy("float32")
    assert pickle.loads(pickle.dumps(est)).network_.dtype_policy.name == "mixed_bfloat16"


def test_unsupported_policies_fail_before_training(global_policy):
    X, y = _sorting(32, seed=4)
    est = PointerNetworkOrderer(hidden_size=8, epochs=1)
    with pytest.raises(ValueError, match="'dtype_policy' parameter"):
        est.set_params(dtype_policy="float64").fit(X, y)
    global_policy("bfloat16")
    with pytest.raises(ValueError, match="global dtype policy is 'bfloat16'"):
        est.set_params(dtype_policy=None).fit(X, y)
    assert not hasattr(est, "network_")


@pytest.mark.slow
@once
def test_mixed_bfloat16_learns_to_sort():
    # The budget at which float32 sorts as well: bfloat16 computation must not cost it.
    X, y = _sorting(3000, seed=5, n_steps=5)
    X_test, y_test = _sorting(500, seed=6, n_steps=5)
    est = PointerNetworkOrderer(
        hidden_size=32, epochs=6, batch_size=64, random_state=0, dtype_policy="mixed_bfloat16"
    ).fit(X, y)
    assert est.score(X_test, y_test) >= 0.95
