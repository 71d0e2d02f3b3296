"""Unit tests of the differentiable memories, the controller and the network."""

import keras
import numpy as np
import pytest
from keras import ops

from skptr.memory._controller import MemoryController
from skptr.memory._discrete import discrete_memory_step, initial_discrete_memory
from skptr.memory._memories import (
    deque_step,
    initial_memory,
    memory_step,
    queue_step,
    stack_step,
)
from skptr.memory._network import GreedyDecoder, TransducerNetwork

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


@pytest.mark.parametrize("kind", ["stack", "queue", "deque"])
def test_reads_through_the_final_values_have_the_same_value_and_gradients(kind):
    ends = 2 if kind == "deque" else 1
    n_steps = 5
    rng = np.random.RandomState(1)
    pushes = rng.uniform(0.2, 0.9, (n_steps, 2, ends)).astype("float32")
    pops = rng.uniform(0.1, 0.8, (n_steps, 2, ends)).astype("float32")
    vals = rng.uniform(-1, 1, (n_steps, 2, ends, 3)).astype("float32")
    weights = rng.normal(size=(n_steps, 2, ends * 3)).astype("float32")

    def loss(pushes, pops, vals, final_values=None):
        values, strengths = initial_memory(kind, 2, n_steps, 3)
        total = 0.0
        for t in range(n_steps):
            values, strengths, read = memory_step(
                kind, values, strengths, pushes[t], pops[t], vals[t], t, final_values
            )
            total += ops.sum(read * read * weights[t])
        return total, values

    _, final_values = loss(pushes, pops, vals)
    final_values = np.asarray(final_values)
    expected = _gradients(lambda *a: loss(*a)[0], pushes, pops, vals)
    through_final = _gradients(lambda *a: loss(*a, final_values)[0], pushes, pops, vals)
    for name, want, got in zip(["push", "pop", "value"], expected, through_final, strict=True):
        assert np.abs(want).max() > 1e-3, name
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)
    np.testing.assert_allclose(
        float(loss(pushes, pops, vals, final_values)[0]), float(loss(pushes, pops, vals)[0])
    )


@pytest.mark.parametrize(("memory", "bptt"), [("stack", None), ("queue", 0), ("deque", 2)])
def test_long_training_calls_have_the_gradients_of_one_run(monkeypatch, memory, bptt):
    from skptr.memory import _controller

    keras.utils.set_random_seed(0)
    controller = MemoryController(5, memory=memory, memory_width=3, state_bptt_steps=bptt)
    controller.build((None, None, 2))
    n_steps = _controller.TWO_RUNS_MIN_STEPS + 3
    inputs = np.random.RandomState(2).normal(size=(2, n_steps, 2)).astype("float32")
    mask = np.ones((2, n_steps), bool)
    mask[1, :7] = False  # a left-padded row
    targets = np.random.RandomState(3).normal(size=(2, n_steps, 5)).astype("float32")
    variables = controller.trainable_variables

    def loss_and_gradients():
        if keras.backend.backend() == "jax":
            import jax

            def of(values):
                frozen = [v.value for v in controller.non_trainable_variables]
                out, _ = controller.stateless_call(
                    values, frozen, inputs, mask=mask, training=True
                )
                return ops.sum((out - targets) ** 2)

            value, grads = jax.value_and_grad(of)([v.value for v in variables])
        else:
            import tensorflow as tf

            with tf.GradientTape() as tape:
                value = ops.sum((controller(inputs, mask=mask, training=True) - targets) ** 2)
            grads = tape.gradient(value, variables)
        return float(value), [np.asarray(g) for g in grads]

    runs = []  # what each training call's first run returned (None: no first run)
    original = _controller._final_values

    def recorded(*args):
        runs.append(original(*args))
        return runs[-1]

    monkeypatch.setattr(_controller, "_final_values", recorded)
    value, grads = loss_and_gradients()
    two_runs = keras.backend.backend() == "jax"
    assert (runs[0] is not None) == two_runs
    monkeypatch.setattr(_controller, "TWO_RUNS_MIN_STEPS", n_steps + 1)
    one_run_value, one_run_grads = loss_and_gradients()
    assert runs[-1] is None
    np.testing.assert_allclose(value, one_run_value, rtol=1e-6)
    for variable, got, want in zip(variables, grads, one_run_grads, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=variable.path)


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


def _discrete_reads(kind, pushes, pops, values):
    """Reads of the discrete memory along a one-sample script of 0/1 strengths."""
    ends = 2 if kind == "deque" else 1
    memory = initial_discrete_memory(kind, 1, len(pushes), values.shape[-1])
    reads = []
    for t, (push, pop, value) in enumerate(zip(pushes, pops, values, strict=True)):
        memory, read = discrete_memory_step(
            kind,
            memory,
            np.asarray([push], dtype="float32").reshape(1, ends),
            np.asarray([pop], dtype="float32").reshape(1, ends),
            np.asarray([value], dtype="float32").reshape(1, ends, -1),
            t,
        )
        reads.append(np.asarray(read)[0])
    return np.array(reads), int(np.asarray(memory.size)[0])


ZERO = np.zeros(4, dtype="float32")


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        # Push v1, push v2, pop (v2 goes), pop and push v4 (v1 goes), pop (v4 goes).
        ("stack", [V[0], V[1], V[0], V[3], ZERO]),
        # The same script from the front: pops take v1, then v2; v4 is read alone.
        ("queue", [V[0], V[0], V[1], V[3], ZERO]),
    ],
)
def test_discrete_stack_and_queue_hand_computed(kind, expected):
    reads, size = _discrete_reads(kind, [1, 1, 0, 1, 0], [0, 0, 1, 1, 1], V[[0, 1, 2, 3, 0]])
    np.testing.assert_array_equal(reads, np.array(expected))
    assert size == 0


def test_discrete_deque_hand_computed():
    # Columns: top end, bottom end.
    pushes = [[1, 1], [1, 0], [0, 0], [0, 1], [0, 0]]
    pops = [[0, 0], [0, 0], [1, 1], [1, 0], [1, 1]]
    values = np.stack([V[[0, 1]], V[[2, 3]], V[[0, 0]], V[[1, 3]], V[[0, 0]]])
    reads, size = _discrete_reads("deque", pushes, pops, values)
    # Memory (bottom .. top) after each step: v2 v1 | v2 v1 v3 | v1 | v4 (the top pop
    # takes v1 before v4 goes in at the bottom) | empty (both ends pop the one item).
    expected = [
        (V[0], V[1]),
        (V[2], V[1]),
        (V[0], V[0]),
        (V[3], V[3]),
        (ZERO, ZERO),
    ]
    np.testing.assert_array_equal(reads, np.array([np.concatenate(pair) for pair in expected]))
    assert size == 0


@pytest.mark.parametrize("kind", ["stack", "queue", "deque"])
def test_discrete_memory_reads_what_the_continuous_one_reads(kind):
    rng = np.random.default_rng(3)
    batch, n_steps, width = 6, 40, 3
    ends = 2 if kind == "deque" else 1
    pushes = (rng.random((n_steps, batch, ends)) < 0.6).astype("float32")
    pops = (rng.random((n_steps, batch, ends)) < 0.5).astype("float32")
    vectors = rng.normal(size=(n_steps, batch, ends, width)).astype("float32")
    values, strengths = initial_memory(kind, batch, n_steps, width)
    discrete = initial_discrete_memory(kind, batch, n_steps, width)
    for t in range(n_steps):
        values, strengths, read = memory_step(
            kind, values, strengths, pushes[t], pops[t], vectors[t], t
        )
        discrete, discrete_read = discrete_memory_step(
            kind, discrete, pushes[t], pops[t], vectors[t], t
        )
        np.testing.assert_array_equal(np.asarray(discrete_read), np.asarray(read))
        np.testing.assert_array_equal(
            np.asarray(discrete.size), np.asarray(strengths).sum(axis=1).round()
        )


@pytest.mark.parametrize("memory", ["stack", "queue", "deque"])
def test_discrete_controller_equals_snapped_continuous_one(memory):
    controller = MemoryController(6, memory=memory, memory_width=3, pop_bias=0.0, seed=4)
    rng = np.random.default_rng(5)
    inputs = ops.convert_to_tensor(rng.normal(size=(5, 30, 4)).astype("float32"))
    mask = np.ones((5, 30), dtype=bool)
    mask[1, :7] = mask[3, :19] = False  # left padding, as in batched decoding
    controller.build(inputs.shape)
    weights = controller.step_weights()
    # Large head weights make the strengths swing, so that pushes and pops both occur.
    weights["head_kernel"] = weights["head_kernel"] * 6.0
    results = {}
    for discrete in (False, True):
        state = controller.get_initial_state(5, 30, discrete=discrete)
        final, outputs = controller.run(
            state,
            inputs,
            weights,
            mask=ops.convert_to_tensor(mask),
            snap=True,
            discrete=discrete,
            return_traces=not discrete,
        )
        results[discrete] = (np.asarray(outputs[0]), np.asarray(final[-1]))
        if not discrete:
            push, pop = np.asarray(outputs[1])[mask], np.asarray(outputs[2])[mask]
            assert 0.1 < push.mean() < 0.9 and 0.1 < pop.mean() < 0.9
    np.testing.assert_allclose(results[True][0], results[False][0], rtol=0, atol=1e-6)
    np.testing.assert_allclose(results[True][1], results[False][1], rtol=0, atol=1e-6)


@pytest.mark.parametrize("memory", ["stack", "deque"])
def test_snapped_decoding_equals_the_continuous_memorys(memory):
    network = TransducerNetwork(3, 3, memory=memory, hidden_size=8, memory_width=4, seed=1)
    network.build()
    bias = np.asarray(network.readout.bias).copy()
    bias[0] = -1e4  # the end token never wins: every step runs
    network.readout.bias.assign(bias)
    rng = np.random.default_rng(0)
    source = rng.integers(3, 6, size=(2, 50)).astype("int32")
    snapped = np.asarray(network.decode(source, 60, snap=True))  # the discrete memory
    assert snapped.shape == (2, 60)
    assert (snapped > 0).all()  # every step ran
    over_slots = np.asarray(network.decode(source, 60, snap=True, discrete=False))
    np.testing.assert_array_equal(snapped, over_slots)
    continuous = _snapped_continuous_decode(network, source, 60)
    np.testing.assert_array_equal(snapped, continuous)


def test_the_compiled_decoder_runs_the_decoding_once_on_its_first_call(monkeypatch):
    # An unbuilt wrapper would be run once more outside the compiled function, to
    # build it (Keras' predict_on_batch on JAX): a whole decoding more.
    network = TransducerNetwork(3, 3, hidden_size=8, memory_width=4, seed=1)
    network.build()
    runs = []
    decode = TransducerNetwork.decode

    def counted(self, *args, **kwargs):
        runs.append(args)
        return decode(self, *args, **kwargs)

    monkeypatch.setattr(TransducerNetwork, "decode", counted)
    decoder = GreedyDecoder(network, snap_gates=True)
    decoder.compile(jit_compile=True)
    source = np.random.default_rng(0).integers(3, 6, size=(4, 7)).astype("int32")
    first = decoder.predict_on_batch({"source": source, "canvas": np.zeros((4, 8), "int32")})
    assert len(runs) == 1
    np.testing.assert_array_equal(first, np.asarray(network.decode(source, 8, snap=True)))


def _snapped_continuous_decode(network, source, n_steps):
    """Greedy decoding with rounded strengths over the continuous memory, step by step."""
    controller = network.controller
    weights = controller.step_weights()
    embeddings = np.asarray(network.embedding.embeddings)
    state = controller.get_initial_state(source.shape[0], source.shape[1] + n_steps)
    state, _ = controller.run(state, embeddings[source], weights, snap=True)
    previous = np.full(source.shape[0], 1)
    produced = []
    for i in range(n_steps):
        state, _ = controller.step(
            state, embeddings[previous], source.shape[1] + i, weights, snap=True
        )
        logits = np.asarray(network.readout(state[0]))
        token = logits.argmax(axis=-1)
        produced.append(token)
        previous = np.where(token == 0, 1, token - 1 + network.output_offset)
    return np.stack(produced, axis=1)


def test_write_slot_writes_one_slot_of_every_row_and_passes_gradients():
    from skptr._backend import write_slot

    array = np.arange(24, dtype="float32").reshape(2, 4, 3)
    update = -np.arange(6, dtype="float32").reshape(2, 3) - 1.0
    written = write_slot(ops.convert_to_tensor(array), 2, ops.convert_to_tensor(update))
    written = np.asarray(written)
    expected = array.copy()
    expected[:, 2] = update
    np.testing.assert_array_equal(written, expected)
    weights = np.arange(24, dtype="float32").reshape(2, 4, 3) / 10.0

    def loss(array, update):
        return ops.sum(write_slot(array, ops.convert_to_tensor(1, "int32"), update) * weights)

    grad_array, grad_update = _gradients(loss, array, update)
    expected_array = weights.copy()
    expected_array[:, 1] = 0.0  # overwritten
    np.testing.assert_allclose(grad_array, expected_array, rtol=1e-6)
    np.testing.assert_allclose(grad_update, weights[:, 1], rtol=1e-6)
