"""Supported Keras backends, their compile policies, and models moved between backends."""

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import joblib
import keras
import numpy as np
import pytest

from skptr import NeuralStackTransducer, PointerNetworkOrderer, _backend
from skptr._training import COMPILE_POLICY, CompilePolicy

BACKEND = keras.backend.backend()
OTHER_BACKEND = "jax" if BACKEND == "tensorflow" else "tensorflow"


def test_every_supported_backend_has_a_compile_policy():
    assert set(COMPILE_POLICY) == set(_backend.SUPPORTED_BACKENDS)
    assert _backend.SUPPORTED_BACKENDS[0] == "tensorflow"


def test_compile_policy_without_length_limit():
    policy = CompilePolicy(
        eager_steps=0, eager_length=0, jit_steps=5, jit_length=None, jit_opt_in=True
    )
    assert policy.training_mode(True, 5, 10_000) == "jit"
    assert policy.training_mode(False, 5, 10_000) == "graph"
    assert policy.training_mode(True, 4, 3) == "graph"


def test_fit_compiles_as_the_policy_says():
    X = np.random.default_rng(0).random((40, 4))
    y = np.argsort(-X, axis=1)
    est = PointerNetworkOrderer(hidden_size=8, epochs=2, batch_size=8, random_state=0)
    est.fit(X, y)  # 10 steps of length 4
    expected = COMPILE_POLICY[BACKEND].training_mode(False, 10, 4)
    assert est.network_.run_eagerly == (expected == "eager")
    assert bool(est.network_.jit_compile) == (expected == "jit")


def test_unsupported_backend_is_refused_with_a_clear_message(monkeypatch):
    monkeypatch.setattr(keras.backend, "backend", lambda: "torch")
    with pytest.raises(ImportError, match=r"tensorflow, jax.*'torch'.*KERAS_BACKEND"):
        _backend.check_backend()


def test_unsupported_backend_fails_at_import():
    code = "import skptr; skptr.PointerNetworkOrderer"
    env = {**os.environ, "KERAS_BACKEND": "numpy"}
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode != 0
    assert "ImportError: skptr's estimators run on the Keras backends tensorflow, jax" in (
        result.stderr
    )


def _fitted_estimators():
    # Ten training steps each or fewer: what is compared is the same arithmetic on both
    # backends, which needs weights out of a fit, not a trained model.
    rng = np.random.default_rng(7)
    X = rng.random((300, 6))
    orderer = PointerNetworkOrderer(hidden_size=16, epochs=1, batch_size=32, random_state=0)
    orderer.fit(X, np.argsort(X, axis=1))
    points = rng.random((300, 5, 2))
    set_orderer = PointerNetworkOrderer(
        encoder="attention", hidden_size=16, n_heads=4, epochs=1, batch_size=32, random_state=0
    )
    set_orderer.fit(points, np.argsort(points[:, :, 0], axis=1))
    sources = ["".join(rng.choice(list("ab"), size=rng.integers(1, 7))) for _ in range(200)]
    transducer = NeuralStackTransducer(
        hidden_size=16,
        embedding_dim=8,
        memory_width=8,
        epochs=1,
        batch_size=32,
        curriculum=False,
        n_init=1,
        random_state=0,
    )
    transducer.fit(sources, [s[::-1] for s in sources])
    return {
        "orderer": (orderer, X[:50]),
        "set_orderer": (set_orderer, points[:50]),
        "transducer": (transducer, sources[:50]),
    }


_PREDICT_ON_OTHER_BACKEND = textwrap.dedent(
    """
    import json, sys
    import joblib, keras, numpy as np
    import skptr
    assert keras.backend.backend() == sys.argv[2], keras.backend.backend()
    folder = sys.argv[1]
    out = {}
    for name in ("orderer", "set_orderer", "transducer"):
        X = joblib.load(f"{folder}/{name}.X.pkl")
        for how, est in (("file", skptr.load(f"{folder}/{name}.skptr")),
                         ("pickle", joblib.load(f"{folder}/{name}.pkl"))):
            out[f"{name}-{how}"] = [list(map(str, p)) if name != "transducer" else p
                                    for p in est.predict(X).tolist()]
            if name != "transducer":
                out[f"{name}-{how}-proba"] = np.asarray(est.predict_proba(X)).tolist()
    json.dump(out, open(f"{folder}/other.json", "w"))
    """
)


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec(OTHER_BACKEND) is None, reason=f"{OTHER_BACKEND} is not installed"
)
def test_models_saved_on_one_backend_predict_identically_on_the_other(tmp_path):
    fitted = _fitted_estimators()
    expected = {}
    for name, (est, X) in fitted.items():
        est.save(tmp_path / f"{name}.skptr")
        joblib.dump(est, tmp_path / f"{name}.pkl")
        joblib.dump(X, tmp_path / f"{name}.X.pkl")
        prediction = est.predict(X).tolist()
        expected[name] = (
            [list(map(str, p)) for p in prediction] if name != "transducer" else (prediction)
        )
    env = {**os.environ, "KERAS_BACKEND": OTHER_BACKEND, "TF_CPP_MIN_LOG_LEVEL": "3"}
    result = subprocess.run(
        [sys.executable, "-c", _PREDICT_ON_OTHER_BACKEND, str(tmp_path), OTHER_BACKEND],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    other = json.loads((tmp_path / "other.json").read_text())
    for how in ("file", "pickle"):
        assert other[f"transducer-{how}"] == expected["transducer"]
        for name in ("orderer", "set_orderer"):
            orderer, X = fitted[name]
            assert other[f"{name}-{how}"] == expected[name]
            np.testing.assert_allclose(
                other[f"{name}-{how}-proba"], np.asarray(orderer.predict_proba(X)), atol=1e-5
            )


@pytest.mark.skipif(BACKEND != "jax", reason="TensorFlow's fits read tf.data pipelines")
def test_no_tf_data_pipeline_runs_in_a_jax_process(monkeypatch):
    # Once a tf.data pipeline has run in a process, JAX's compiled calls there slow down.
    import tensorflow as tf

    from skptr import _startup

    def refuse(*args, **kwargs):
        raise AssertionError("a tf.data pipeline ran on JAX")

    monkeypatch.setattr(tf.data.Dataset, "__iter__", refuse)
    monkeypatch.setattr(tf.data.Dataset, "from_generator", refuse)
    monkeypatch.setattr(tf.data.Dataset, "from_tensor_slices", refuse)
    _startup._first_tensorflow_operations(started_before=True)
    X = np.random.default_rng(0).random((24, 5))
    est = PointerNetworkOrderer(hidden_size=8, epochs=1, batch_size=8, random_state=0)
    est.fit(X, np.argsort(X, axis=1)).predict(X)
    NeuralStackTransducer(hidden_size=8, epochs=1, batch_size=8, random_state=0).fit(
        ["ab", "ba", "abc"], ["ba", "ab", "cba"]
    ).predict(["ab"])


@pytest.mark.skipif(BACKEND != "jax", reason="JAX keeps dead models' executables")
@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs Linux's /proc")
def test_dead_models_executables_are_freed_on_jax(monkeypatch):
    # Each fitted and used estimator leaves ~1,000 memory maps in JAX's caches; XLA
    # crashes when a process reaches vm.max_map_count (65,530 by default).
    import jax

    jax.clear_caches()  # what earlier tests left behind
    held, _ = _backend._memory_maps()
    monkeypatch.setattr(_backend, "MAPS_BEFORE_CACHE_CLEAR", held + 500)
    X = np.random.default_rng(0).random((64, 5))
    y = np.argsort(X, axis=1)
    counts = []
    for seed in range(8):
        est = PointerNetworkOrderer(hidden_size=8, epochs=1, batch_size=32, random_state=seed)
        est.fit(X, y).predict(X)
        del est
        counts.append(_backend._memory_maps()[0])
    # Without clearing, the count grows by 800 to 1,000 at every estimator (+5,600 or more
    # over these eight).
    assert max(counts) - min(counts) < 2500, counts


@pytest.mark.skipif(BACKEND != "jax", reason="only JAX's caches are cleared")
@pytest.mark.parametrize(
    ("maps", "expected_clears"),
    [
        ((32_000, 65_530), 0),  # room left: the live models keep their executables
        ((32_766, 65_530), 20),  # over half the limit: cleared at every new network
        ((1_000, 2_000), 0),
        ((1_001, 2_000), 20),
        ((32_768, 1_000_000), 0),  # a large limit: at most MAPS_BEFORE_CACHE_CLEAR
        ((32_769, 1_000_000), 20),
        (None, 1),  # no /proc: every 16 networks
    ],
)
def test_jax_caches_are_cleared_only_when_the_mappings_crowd_the_process(
    monkeypatch, maps, expected_clears
):
    import jax

    clears = []
    monkeypatch.setattr(jax, "clear_caches", lambda: clears.append(1))
    monkeypatch.setattr(_backend, "_memory_maps", lambda: maps)
    monkeypatch.setattr(_backend, "_networks_since_clear", 0)
    for _ in range(20):
        _backend.new_network_built()
    assert len(clears) == expected_clears


def test_adam_squares_the_summed_gradient_of_repeated_tokens():
    # One sample whose loss is c . e[1] + c . e[1] + c . e[2]: token 1's gradient
    # is 2c, summed over its two occurrences, token 2's is c. Adam's first second
    # moment is (1 - beta_2) g**2, so 0.004 c**2 for token 1 on every backend (Keras'
    # own Adam on TensorFlow squares each occurrence: 0.002 c**2).
    c = np.array([1.0, -2.0, 0.5], dtype="float32")
    inputs = keras.Input((3,), dtype="int32")
    embedded = keras.layers.Embedding(5, 3, embeddings_initializer="ones")(inputs)
    model = keras.Model(inputs, keras.ops.sum(embedded * c, axis=(1, 2)))
    model.compile(
        optimizer=_backend.DenseGradientAdam(learning_rate=0.1),
        loss=lambda y_true, y_pred: keras.ops.mean(y_pred),
    )
    model.train_on_batch(np.array([[1, 1, 2]]), np.zeros(1))
    (velocity,) = [v for v in model.optimizer.variables if "velocity" in v.path]
    expected = np.zeros((5, 3))
    expected[1], expected[2] = 0.004 * c**2, 0.001 * c**2
    np.testing.assert_allclose(keras.ops.convert_to_numpy(velocity), expected, rtol=1e-5)


_ALLOCATOR_IN_USE = """
import keras  # a program may import Keras before skptr
import numpy as np
import tensorflow as tf
from skptr import PointerNetworkOrderer
PointerNetworkOrderer(hidden_size=4, epochs=1).fit(np.eye(3)[None], [[0, 1, 2]])
try:  # only the pooling allocator counts host memory (others raise, or report none)
    peak = tf.config.experimental.get_memory_info("CPU:0")["peak"]
except ValueError:
    peak = 0
print("pools" if peak > 0 else "malloc")
"""


@pytest.mark.skipif(BACKEND != "tensorflow", reason="TensorFlow's setting; run once")
@pytest.mark.parametrize(("given", "expected"), [(None, "pools"), ("false", "malloc")])
def test_tensorflow_pools_host_memory_unless_told_otherwise(given, expected):
    env = {k: v for k, v in os.environ.items() if k != "TF_CPU_ALLOCATOR_USE_BFC"}
    if given is not None:
        env["TF_CPU_ALLOCATOR_USE_BFC"] = given
    result = subprocess.run(
        [sys.executable, "-c", _ALLOCATOR_IN_USE],
        env={**env, "KERAS_BACKEND": "tensorflow"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == [expected]
