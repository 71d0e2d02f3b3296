"""Unit tests of the differentiable memories, the controller and the network."""

import keras
import numpy as np
import pytest
from keras import ops

from skptr.memory._controller import MemoryController
from skptr.memory._memories import (
    deque_step,
    initial_memory,
    memory_step,
    queue_step,
    stack_step,
)
from skptr.memory._network import TransducerNetwork

V = np.eye(4, dtype="float32")  # distinguishable unit vectors v1..v4


def _gradients(loss, *arrays):
    """Gradients of ``loss(*arrays)`` with respect to each array, on the active backend."""
    if keras.backend.backend() == "jax":
        import jax

        grads = jax.grad(loss, argnums=tuple(range(len(arrays))))(*arrays)
    else:
        import tensorflow as tf

        variables = [tf.Variable(a) for a in arrays]
        with tf.GradientTape() as tape:
            value = loss(*variables)
        grads = tape.gradient(value, variables)
    return [np.asarray(g) for g in grads]


def run(step, pushes, pops, values, n_slots):
    """Run a memory step function over a script; return strengths and reads per step."""
    values_buf = ops.zeros((1, n_slots, values.shape[-1]))
    strengths = ops.zeros((1, n_slots))
    history = []
    for t, (push, pop, value) in enumerate(zip(pushes, pops, values, strict=True)):
        values_buf, strengths, read = step(
            values_buf,
            strengths,
            ops.convert_to_tensor(np.asarray([push], dtype="float32")),
            ops.convert_to_tensor(np.asarray([pop], dtype="float32")),
            ops.convert_to_tensor(np.asarray([value], dtype="float32")),
            t,
        )
        history.append((np.asarray(strengths)[0], np.asarray(read)[0]))
    return history


def test_stack_figure_1a():
    # Grefenstette et al. (2015), Figure 1(a).
    history = run(stack_step, [0.8, 0.5, 0.9], [0.0, 0.1, 0.9], V[:3], n_slots=3)
    np.testing.assert_allclose(history[0][0], [0.8, 0, 0], atol=1e-6)
    np.testing.assert_allclose(history[0][1], 0.8 * V[0], atol=1e-6)
    np.testing.assert_allclose(history[1][0], [0.7, 0.5, 0], atol=1e-6)
    np.testing.assert_allclose(history[1][1], 0.5 * V[1] + 0.5 * V[0], atol=1e-6)
    strengths, read = history[2]
    np.testing.assert_allclose(strengths, [0.3, 0.0, 0.9], atol=1e-6)
    np.testing.assert_allclose(read, 0.9 * V[2] + 0.0 * V[1] + 0.1 * V[0], atol=1e-6)


def test_queue_hand_computed():
    history = run(queue_step, [0.8, 0.5, 0.9], [0.0, 0.1, 0.9], V[:3], n_slots=3)
    np.testing.assert_allclose(history[0][0], [0.8, 0, 0], atol=1e-6)
    np.testing.assert_allclose(history[0][1], 0.8 * V[0], atol=1e-6)
    # Pop 0.1 from the front, then read the first 1.0 from the front: 0.7 v1 + 0.3 v2.
    np.testing.assert_allclose(history[1][0], [0.7, 0.5, 0], atol=1e-6)
    np.testing.assert_allclose(history[1][1], 0.7 * V[0] + 0.3 * V[1], atol=1e-6)
    # Pop 0.9: all of v1 (0.7) and 0.2 of v2.
    strengths, read = history[2]
    np.testing.assert_allclose(strengths, [0.0, 0.3, 0.9], atol=1e-6)
    np.testing.assert_allclose(read, 0.3 * V[1] + 0.7 * V[2], atol=1e-6)


def test_deque_hand_computed():
    values, strengths = initial_memory("deque", 1, 2, 4)
    assert tuple(strengths.shape) == (1, 4)

    def step(values, strengths, push, pop, value, t):
        return deque_step(
            values,
            strengths,
            ops.convert_to_tensor(np.asarray([push], dtype="float32")),
            ops.convert_to_tensor(np.asarray([pop], dtype="float32")),
            ops.convert_to_tensor(np.asarray([value], dtype="float32")),
            t,
        )

    # Step 0: push v1 on top (0.8) and v2 at the bottom (0.6). Slots: bottom .. top.
    values, strengths, read = step(values, strengths, [0.8, 0.6], [0, 0], [V[0], V[1]], 0)
    np.testing.assert_allclose(np.asarray(strengths)[0], [0, 0.6, 0.8, 0], atol=1e-6)
    read = np.asarray(read)[0]
    np.testing.assert_allclose(read[:4], 0.8 * V[0] + 0.2 * V[1], atol=1e-6)  # top
    np.testing.assert_allclose(read[4:], 0.6 * V[1] + 0.4 * V[0], atol=1e-6)  # bottom
    # Step 1: pop 0.5 from the top and 0.3 from the bottom (both from the old
    # strengths, keeping the smaller result), push v3 on top (0.4), nothing below.
    values, strengths, read = step(values, strengths, [0.4, 0.0], [0.5, 0.3], [V[2], V[3]], 1)
    np.testing.assert_allclose(np.asarray(strengths)[0], [0, 0.3, 0.3, 0.4], atol=1e-6)
    read = np.asarray(read)[0]
    np.testing.assert_allclose(read[:4], 0.4 * V[2] + 0.3 * V[0] + 0.3 * V[1], atol=1e-6)
    np.testing.assert_allclose(read[4:], 0.3 * V[1] + 0.3 * V[0] + 0.4 * V[2], atol=1e-6)


def test_queue_pop_spans_several_slots():
    # A pop larger than the front slot takes the rest from the next one (eq. 4), and
    # the read takes the first 1.0 of strength from the front (eq. 5).
    history = run(queue_step, [1.0, 0.6, 0.5, 0.0], [0.0, 0.0, 1.3, 0.4], V, n_slots=4)
    np.testing.assert_allclose(history[1][0], [1.0, 0.6, 0, 0], atol=1e-6)
    np.testing.assert_allclose(history[1][1], V[0], atol=1e-6)  # v2 lies behind 1.0 of v1
    np.testing.assert_allclose(history[2][0], [0.0, 0.3, 0.5, 0], atol=1e-6)
    np.testing.assert_allclose(history[2][1], 0.3 * V[1] + 0.5 * V[2], atol=1e-6)
    np.testing.assert_allclose(history[3][0], [0.0, 0.0, 0.4, 0.0], atol=1e-6)
    np.testing.assert_allclose(history[3][1], 0.4 * V[2], atol=1e-6)


def test_deque_pops_span_several_slots():
    values, strengths = initial_memory("deque", 1, 3, 4)

    def step(values, strengths, push, pop, value, t):
        return deque_step(
            values,
            strengths,
            ops.convert_to_tensor(np.asarray([push], dtype="float32")),
            ops.convert_to_tensor(np.asarray([pop], dtype="float32")),
            ops.convert_to_tensor(np.asarray([value], dtype="float32")),
            t,
        )

    # Step 0: v1 on top (1.0), v2 at the bottom (0.5).
    values, strengths, read = step(values, strengths, [1.0, 0.5], [0, 0], [V[0], V[1]], 0)
    np.testing.assert_allclose(np.asarray(strengths)[0], [0, 0, 0.5, 1.0, 0, 0], atol=1e-6)
    np.testing.assert_allclose(np.asarray(read)[0], np.concatenate([V[0], 0.5 * (V[1] + V[0])]))
    # Step 1: pop 0.7 from the bottom (all of v2 and 0.2 of v1), then push v3 on top
    # (0.2) and v4 at the bottom (1.0).
    values, strengths, read = step(values, strengths, [0.2, 1.0], [0, 0.7], [V[2], V[3]], 1)
    np.testing.assert_allclose(np.asarray(strengths)[0], [0, 1.0, 0, 0.8, 0.2, 0], atol=1e-6)
    read = np.asarray(read)[0]
    np.testing.assert_allclose(read[:4], 0.2 * V[2] + 0.8 * V[0], atol=1e-6)
    np.testing.assert_allclose(read[4:], V[3], atol=1e-6)
    # Step 2: pop 0.5 from the top (all of v3 and 0.3 of v1), push nothing.
    values, strengths, read = step(values, strengths, [0, 0], [0.5, 0], [V[0], V[0]], 2)
    np.testing.assert_allclose(np.asarray(strengths)[0], [0, 1.0, 0, 0.5, 0, 0], atol=1e-6)
    read = np.asarray(read)[0]
    np.testing.assert_allclose(read[:4], 0.5 * V[0] + 0.5 * V[3], atol=1e-6)
    np.testing.assert_allclose(read[4:], V[3], atol=1e-6)


@pytest.mark.parametrize("kind", ["stack", "queue", "deque"])
def test_gradients_reach_push_pop_and_values(kind):
    ends = 2 if kind == "deque" else 1
    rng = np.random.RandomState(0)
    pushes = rng.uniform(0.3, 0.7, (4, 1, ends)).astype("float32")
    pops = rng.uniform(0.2, 0.5, (4, 1, ends)).astype("float32")
    vals = rng.uniform(-1, 1, (4, 1, ends, 3)).astype("float32")
    weights = rng.normal(size=(4, ends * 3)).astype("float32")

    def loss(pushes, pops, vals):
        values, strengths = initial_memory(kind, 1, 4, 3)
        total = 0.0
        for t in range(4):
            values, strengths, read = memory_step(
                kind, values, strengths, pushes[t], pops[t], vals[t], t
            )
            total += ops.sum(read * weights[t])
        return total

    grads = _gradients(loss, pushes, pops, vals)
    for name, grad in zip(["push", "pop", "value"], grads, strict=True):
        assert np.all(np.isfinite(grad)), name
        assert np.abs(grad).max() > 1e-4, name
    # The last pop and the first pushed values matter to the reads.
    assert np.abs(np.asarray(grads[1])[-1]).max() > 1e-4
    assert np.abs(np.asarray(grads[2])[0]).max() > 1e-4


def test_stack_has_no_fixed_length():
    # 300 full pushes, then 299 full pops: the read walks back down to the first value.
    n = 300
    rng = np.random.RandomState(1)
    pushed = rng.normal(size=(n, 1, 2)).astype("float32")
    values, strengths = initial_memory("stack", 1, 2 * n, 2)
    for t in range(n):
        values, strengths, read = stack_step(
            values, strengths, ops.ones((1,)), ops.zeros((1,)), pushed[t], t
        )
    np.testing.assert_allclose(np.asarray(read), pushed[-1], atol=1e-5)
    for t in range(n, 2 * n - 1):
        values, strengths, read = stack_step(
            values, strengths, ops.zeros((1,)), ops.ones((1,)), ops.zeros((1, 2)), t
        )
    np.testing.assert_allclose(np.asarray(read), pushed[0], atol=1e-4)


@pytest.mark.parametrize("memory", ["stack", "queue", "deque"])
def test_controller_runs_at_any_length(memory):
    controller = MemoryController(8, memory=memory, memory_width=4)
    controller.build((None, None, 3))
    ends = 2 if memory == "deque" else 1
    for n_steps in (5, 120):
        inputs = np.random.RandomState(0).normal(size=(2, n_steps, 3)).astype("float32")
        hidden, traces = controller(inputs, return_traces=True)
        assert tuple(hidden.shape) == (2, n_steps, 8)
        assert tuple(traces["strengths"].shape) == (2, n_steps, ends * n_steps)
        assert tuple(traces["push"].shape) == (2, n_steps, ends)
        assert tuple(traces["read"].shape) == (2, n_steps, 4 * ends)


@pytest.mark.parametrize("cell", ["lstm", "gru", "rnn"])
def test_controller_biases_and_config(cell):
    controller = MemoryController(
        6, memory="stack", cell=cell, memory_width=5, pop_bias=-1.5, push_bias=0.5
    )
    controller.build((None, None, 3))
    head_bias = np.asarray(controller.head_bias)
    assert head_bias[0] == pytest.approx(0.5)  # push
    assert head_bias[1] == pytest.approx(-1.5)  # pop
    np.testing.assert_array_equal(head_bias[2:], 0)  # value
    clone = MemoryController.from_config(controller.get_config())
    assert clone.get_config() == controller.get_config()


def test_memoryless_controller_is_the_same_rnn():
    with_memory = MemoryController(8, memory="stack", memory_width=4)
    without = MemoryController(8, memory=None)
    with_memory.build((None, None, 3))
    without.build((None, None, 3))
    names = {w.path.split("/")[-1] for w in with_memory.weights}
    assert {w.path.split("/")[-1] for w in without.weights} == (
        names - {"read_kernel", "head_kernel", "head_bias"}
    )
    hidden = without(np.zeros((2, 7, 3), dtype="float32"))
    assert tuple(hidden.shape) == (2, 7, 8)


@pytest.mark.parametrize("memory", ["deque", None])
def test_network_keras_format_round_trip(tmp_path, memory):
    keras.utils.set_random_seed(0)
    network = TransducerNetwork(3, 2, memory=memory, hidden_size=8, memory_width=4)
    network.build()
    stream = np.array([[3, 4, 5, 1, 6, 7], [4, 1, 7, 0, 0, 0]], dtype="int32")
    path = tmp_path / "network.keras"
    network.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    np.testing.assert_allclose(np.asarray(loaded(stream)), np.asarray(network(stream)), atol=1e-6)


def test_truncated_gradients_keep_the_memory_path():
    keras.utils.set_random_seed(0)
    controller = MemoryController(4, memory="stack", memory_width=3, state_bptt_steps=0)
    controller.build((None, None, 2))
    inputs = np.random.RandomState(0).normal(size=(1, 6, 2)).astype("float32")
    (grad,) = _gradients(lambda x: ops.sum(controller(x)[:, -1]), inputs)
    # The first input reaches the last output only through the memory.
    assert np.abs(grad[0, 0]).max() > 0


def test_gate_noise_only_in_training():
    keras.utils.set_random_seed(0)
    noisy = MemoryController(4, memory="queue", memory_width=3, gate_noise=1.0)
    noisy.build((None, None, 2))
    quiet = MemoryController(4, memory="queue", memory_width=3)
    quiet.build((None, None, 2))
    quiet.set_weights(noisy.get_weights()[:-1])  # all but the noise scale
    inputs = np.random.RandomState(0).normal(size=(2, 5, 2)).astype("float32")
    expected = np.asarray(quiet(inputs, training=True))
    np.testing.assert_allclose(np.asarray(noisy(inputs)), expected, atol=1e-6)
    np.testing.assert_allclose(np.asarray(noisy(inputs, training=False)), expected, atol=1e-6)
    assert np.abs(np.asarray(noisy(inputs, training=True)) - expected).max() > 1e-3
    noisy.gate_noise_scale.assign(0.0)  # a schedule switches the noise off
    np.testing.assert_allclose(np.asarray(noisy(inputs, training=True)), expected, atol=1e-6)
    assert MemoryController.from_config(noisy.get_config()).gate_noise == 1.0


def test_snapped_strengths_are_rounded_soft_ones():
    controller = MemoryController(4, memory="deque", memory_width=3)
    controller.build((None, None, 2))
    inputs = np.random.RandomState(1).normal(size=(3, 9, 2)).astype("float32")
    _, soft = controller(inputs, return_traces=True)
    _, snapped = controller(inputs, return_traces=True, snap=True)
    for key in ("push", "pop"):
        first_step_soft = np.asarray(soft[key])[:, 0]
        assert np.all((first_step_soft > 0.01) & (first_step_soft < 0.99))
        # The first step's strengths depend only on the input, so they are comparable.
        np.testing.assert_array_equal(np.asarray(snapped[key])[:, 0], np.round(first_step_soft))
        assert set(np.unique(np.asarray(snapped[key]))) <= {0.0, 1.0}
    # Whole pushes and pops keep every slot's strength at exactly 0 or 1.
    assert set(np.unique(np.asarray(snapped["strengths"]))) <= {0.0, 1.0}


def test_reset_cell_state_forgets_the_cell_but_not_the_output():
    controller = MemoryController(3, memory="stack", memory_width=2, reset_cell_state=True)
    controller.build((None, None, 2))
    weights = controller.step_weights()
    state = list(controller.get_initial_state(1, 4))
    state[0] = ops.convert_to_tensor(np.array([[0.5, -0.2, 0.1]], dtype="float32"))
    inputs = ops.convert_to_tensor(np.array([[0.3, -0.7]], dtype="float32"))
    outputs = []
    for cell in (np.zeros((1, 3)), np.full((1, 3), 5.0)):
        state[1] = ops.convert_to_tensor(cell.astype("float32"))
        new_state, _ = controller.step(tuple(state), inputs, 0, weights)
        outputs.append(np.asarray(new_state[0]))
    np.testing.assert_array_equal(outputs[0], outputs[1])
    # By hand: c = i * g and h = o * tanh(c), from [x; r; h_prev] @ kernel + bias.
    x = np.concatenate([[0.3, -0.7], [0.0, 0.0], [0.5, -0.2, 0.1]])
    z = x @ np.asarray(weights["kernel"]) + np.asarray(weights["bias"])
    sigmoid = 1 / (1 + np.exp(-z))
    c = sigmoid[:3] * np.tanh(z[6:9])
    np.testing.assert_allclose(outputs[0][0], sigmoid[9:] * np.tanh(c), atol=1e-6)
    carried = MemoryController(3, memory="stack", memory_width=2)
    carried.build((None, None, 2))
    carried.set_weights(controller.get_weights())
    changed = [
        np.asarray(
            carried.step((state[0], ops.full((1, 3), v), *state[2:]), inputs, 0, weights)[0][0]
        )
        for v in (0.0, 5.0)
    ]
    assert np.abs(changed[0] - changed[1]).max() > 1e-3
    assert MemoryController.from_config(controller.get_config()).reset_cell_state
