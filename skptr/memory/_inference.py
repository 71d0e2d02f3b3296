"""The transducer's inference: greedy decoding in compiled batches, and memory traces."""

from __future__ import annotations

from numbers import Integral

import keras
import numpy as np
from keras import ops

from .._backend import NetworkWrapper, quiet_retracing
from .._batches import power_of_two_at_least
from ._memories import unpadded_slots
from ._network import GreedyDecoder
from ._sizes import step_count

__all__ = ["MAX_TRACE_STEPS", "decode", "memory_traces"]

#: ``memory_trace`` records a (steps, slots) strengths matrix per sample; longer traces
#: are refused unless asked for.
MAX_TRACE_STEPS = 1024


def decode(est, codec, source_ids):
    """Greedy decoding of encoded sources by a fitted estimator; returns the output
    token ids of each sample.

    Sources are decoded in batches of similar lengths, padded to a power-of-two number
    of rows and of steps, so that the compiled decoder is reused.
    """
    snap = est.snap_gates_
    lengths = np.array([len(s) for s in source_ids])
    order = np.argsort(lengths, kind="stable")
    chunk = est._predict_batch_size()
    view = est._as_fitted()
    longest = codec.output_limit(lengths.max(initial=0), est.max_output_length)
    n_steps = power_of_two_at_least(lengths.max(initial=0) + 1) + power_of_two_at_least(
        longest + 1
    )
    view._check_memory(
        "decoding",
        min(chunk, len(source_ids)) * n_steps * step_count(view, 1),
        longest_stream=n_steps,
        max_output_length=est.max_output_length,
    )
    outputs = [None] * len(source_ids)
    for start in range(0, len(order), chunk):
        batch = order[start : start + chunk]
        n_rows = est._inference_rows(len(batch), chunk)
        sources = codec.left_padded([source_ids[i] for i in batch], n_rows)
        limit = codec.output_limit(lengths[batch].max(), est.max_output_length)
        canvas = np.zeros((n_rows, power_of_two_at_least(limit + 1)), dtype=np.int32)
        decoder = est._inference_model(
            ("decoder", snap),
            lambda network: GreedyDecoder(network, snap_gates=snap),
            n_rows,
            sources.shape[1] + canvas.shape[1],
        )
        with quiet_retracing():
            classes = est._predict_on_batch(decoder, {"source": sources, "canvas": canvas}, n_rows)
        classes = np.asarray(classes)
        for row, i in enumerate(batch):
            outputs[i] = codec.output_ids(classes[row], limit)
    return outputs


def checked_max_steps(max_steps):
    """``memory_trace``'s ``max_steps``, refused unless it is an int >= 1."""
    if isinstance(max_steps, bool | np.bool_) or not isinstance(max_steps, Integral):
        raise TypeError(
            f"max_steps must be an int >= 1, got {max_steps!r} (a {type(max_steps).__name__})."
        )
    if max_steps < 1:
        raise ValueError(f"max_steps must be an int >= 1, got {max_steps!r}.")
    return int(max_steps)


def _check_trace_length(n_steps, max_steps, what):
    too_long = np.flatnonzero(np.asarray(n_steps) > max_steps)
    if too_long.size:
        i = int(too_long[0])
        raise ValueError(
            f"X[{i}]: its {what} make a trace of {n_steps[i]} steps, more than "
            f"max_steps={max_steps} (a trace holds a steps-by-steps strengths matrix); "
            "trace a shorter input or pass a larger max_steps."
        )


def memory_traces(est, codec, sources, source_ids, max_steps):
    """The traces of :meth:`NeuralStackTransducer.memory_trace` for validated sources
    (``sources``: the samples as given; ``source_ids``: encoded)."""
    memory = est.network_params_["memory"]
    _check_trace_length([len(s) + 1 for s in source_ids], max_steps, "input")
    output_ids = decode(est, codec, source_ids)
    streams = [codec.trace_stream(s, o) for s, o in zip(source_ids, output_ids, strict=True)]
    _check_trace_length([len(s) for s in streams], max_steps, "input and output")
    n_rows = est._placement().inference.rows(len(streams))
    padded = codec.left_padded(streams, n_rows)
    n_steps = padded.shape[1]
    view = est._as_fitted()
    view._check_memory(
        "the traces", len(streams) * n_steps * step_count(view, n_steps), longest_trace=n_steps
    )
    snap = est.snap_gates_
    with quiet_retracing():
        tracer = est._inference_model(
            ("traces", snap), lambda network: _Traces(network, snap_gates=snap)
        )
        traces = est._predict_on_batch(tracer, padded, n_rows)
    traces = {key: np.asarray(value) for key, value in traces.items()}
    results = []
    for i, stream in enumerate(streams):
        first = n_steps - len(stream)
        results.append(
            {
                "source": sources[i],
                "output": codec.tokens(output_ids[i]),
                "push": traces["push"][i, first:],
                "pop": traces["pop"][i, first:],
                "strengths": unpadded_slots(traces["strengths"][i, first:], memory, first),
                "read": traces["read"][i, first:],
            }
        )
    return results


@keras.saving.register_keras_serializable(package="skptr")
class _Traces(NetworkWrapper):
    """Wraps :meth:`TransducerNetwork.traces` so that ``predict_on_batch`` compiles it."""

    def __init__(self, network, snap_gates=False, **kwargs):
        kwargs.setdefault("name", "memory_traces")
        super().__init__(network, **kwargs)
        self.snap_gates = bool(snap_gates)

    def call(self, stream):
        traces = self.network.traces(ops.cast(stream, "int32"), snap=self.snap_gates)
        return {key: traces[key] for key in ("push", "pop", "strengths", "read")}
