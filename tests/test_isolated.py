"""Calls that could hang, exhaust memory or crash the process, run in a child process.

One child runs every case in turn under an address-space limit; the parent kills it
when a case runs past its wall-clock limit and goes on with the next cases in a new
child. Each case must end within its limit, grow the child's resident memory by less
than its allowance, and either work or fail with a clear error (``_properties``).
"""

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

#: Address space a child may map beyond what it maps with the backend loaded.
HEADROOM_MB = 6144
#: Seconds for the child to import the backend and skptr.
STARTUP_S = 180
#: Bytes a zip bomb inflates to: four times what a load may grow the memory by.
BOMB = 2**28
#: Wall-clock limits are multiplied by this on JAX, which compiles every new shape.
SCALE = 2.0 if os.environ.get("KERAS_BACKEND") == "jax" else 1.0


# ------------------------------------------------------------------- the cases
def _pointer_long_input(ctx):
    from _properties import check_orderings, fitted

    check_orderings(fitted("pointer").predict([np.arange(5000.0)]), [5000])


def _transducer_long_input(ctx):
    from _properties import check_transductions, fitted

    check_transductions(fitted("stack").predict(["ab" * 2500]), 1)


def _transducer_unbounded_output(ctx):
    from _properties import check_transductions, fit_tiny

    model = fit_tiny("stack", max_output_length=2**31 - 1)
    check_transductions(model.predict(["ab" * 20]), 1)


def _huge_epochs_with_a_callback(ctx):
    import keras
    from _properties import fit_tiny

    class Stop(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            self.model.stop_training = True

    assert fit_tiny("pointer", epochs=2**31 - 1, callbacks=[Stop()]).n_iter_ == 1


def _widest_beam(ctx):
    from _properties import check_orderings, fitted

    model = fitted("pointer")
    model.set_params(decode="beam", beam_width=2**20)
    try:
        check_orderings(model.predict([[3.0, 1.0, 2.0, 5.0, 4.0]]), [5])
    finally:
        model.set_params(decode="greedy", beam_width=5)


def _trace_with_a_huge_limit(ctx):
    from _properties import fitted

    assert len(fitted("stack").memory_trace(["ab"], max_steps=2**70)) == 1


def _widest_sizes(name, kind):
    def case(ctx):
        from _properties import either, fit_tiny

        either(lambda: fit_tiny(kind, **{name: {"n_init": 2**16}.get(name, 2**20)}))

    return case


def _many_features(ctx):
    from _properties import either, sorting

    from skptr import PointerNetworkOrderer

    X, y = sorting()
    either(
        lambda: PointerNetworkOrderer(hidden_size=4, epochs=1).fit(
            np.repeat(X[..., None], 10**4, -1), y
        )
    )


def _load(make):
    """A case loading the file ``make(ctx, data)`` writes from the saved pointer model."""

    def case(ctx):
        from _properties import either

        import skptr

        either(lambda: skptr.load(ctx["path"]), mention=ctx["path"])

    def setup(ctx):
        from _properties import saved

        path = os.path.join(ctx["folder"], f"{len(os.listdir(ctx['folder']))}.skptr")
        make(path, saved("pointer"))
        return {**ctx, "path": path}

    case.setup = setup
    return case


def _write_bomb(member, filler=b"\0", suffix=b""):
    """A file whose ``member`` is ``BOMB`` bytes of ``filler`` (then ``suffix``), compressed."""
    import zipfile

    from _properties import zip_members

    def make(path, data):
        chunk = filler * (2**20 // len(filler))
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for name, payload in zip_members(data).items():
                if name != member:
                    archive.writestr(name, payload)
                    continue
                with archive.open(name, "w", force_zip64=True) as handle:
                    for _ in range(BOMB // len(chunk)):
                        handle.write(chunk)
                    handle.write(suffix if suffix else b"")

    return make


def _inner_bomb(member):
    import io
    import zipfile

    from _properties import with_member, zip_members

    def make(path, data):
        inner = zip_members(zip_members(data)["network.keras"])
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for name, payload in inner.items():
                if name != member:
                    archive.writestr(name, payload)
            with archive.open(member, "w", force_zip64=True) as handle:
                for _ in range(BOMB // 2**20):
                    handle.write(b"\0" * 2**20)
        Path(path).write_bytes(with_member(data, "network.keras", buffer.getvalue()))

    return make


def _edited(edit):
    from _properties import with_metadata

    def make(path, data):
        Path(path).write_bytes(with_metadata(data, edit))

    return make


def _declared(field, value):
    from _properties import set_field, zip_field_offsets

    def make(path, data):
        offset, width = zip_field_offsets(data)[field]
        Path(path).write_bytes(set_field(data, offset, width, value))

    return make


def _json_bomb(path, data):
    from _properties import zip_members

    _write_bomb("skptr.json", b" ", zip_members(data)["skptr.json"])(path, data)


def _state(key, value):
    return _edited(lambda m: m["state"].__setitem__(key, value))


def _param(key, value):
    return _edited(lambda m: m["params"].__setitem__(key, value))


#: name -> (case, wall-clock seconds, MiB the resident memory may grow by).
CASES = {
    "predict 5000 points": (_pointer_long_input, 120, 4096),
    "transduce 5000 tokens": (_transducer_long_input, 120, 4096),
    "max_output_length 2**31-1": (_transducer_unbounded_output, 60, 2048),
    "epochs 2**31-1 stopped by a callback": (_huge_epochs_with_a_callback, 60, 2048),
    "beam_width 2**20 on 5 points": (_widest_beam, 60, 2048),
    "memory_trace max_steps 2**70": (_trace_with_a_huge_limit, 60, 2048),
    "10**4 features": (_many_features, 120, 4096),
    **{
        f"{kind} {name} at its maximum": (_widest_sizes(name, kind), 15, 1024)
        for kind, name in [
            ("pointer", "hidden_size"),
            ("stack", "hidden_size"),
        ]
    },
    **{
        f"load: {name}": (_load(make), 30, 64)
        for name, make in [
            ("network.keras 256 MiB of zeros", _write_bomb("network.keras")),
            ("skptr.json 256 MiB of zeros", _write_bomb("skptr.json")),
            ("skptr.json 256 MiB of spaces then the metadata", _json_bomb),
            ("model.weights.h5 256 MiB of zeros", _inner_bomb("model.weights.h5")),
            ("config.json 256 MiB of zeros", _inner_bomb("config.json")),
            ("skptr.json declares 1 GiB", _declared("cd[skptr.json].usize", 2**30)),
            ("skptr.json compressed size 1 GiB", _declared("cd[skptr.json].csize", 2**30)),
            ("network.keras declares 4 GiB", _declared("cd[network.keras].usize", 2**32 - 1)),
            ("state.n_features_in_ 10**7", _state("n_features_in_", 10**7)),
            ("state.n_features_in_ 2**40", _state("n_features_in_", 2**40)),
            ("params.hidden_size 10**7", _param("hidden_size", 10**7)),
            ("params.num_layers 10**4", _param("num_layers", 10**4)),
            (
                "params.random_state an array of 10**12",
                _param("random_state", {"__ndarray__": [1], "dtype": "<i8", "shape": [10**12]}),
            ),
            (
                "params.random_state a <U1000000000 array",
                _param(
                    "random_state", {"__ndarray__": ["a"], "dtype": "<U1000000000", "shape": [1]}
                ),
            ),
        ]
    },
}


# ------------------------------------------------------------------- the child
def _status_kb(field):
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _child(names, folder):
    """Run the cases ``names``, writing one JSON line per event to stdout."""
    import contextlib
    import resource
    import warnings

    warnings.simplefilter("ignore")
    sys.path.insert(0, str(Path(__file__).parent))
    from _properties import unclear

    import skptr  # noqa: F401 - the backend is loaded before the limit is set

    limit = (_status_kb("VmSize") // 1024 + HEADROOM_MB) * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
    for name in names:
        case = CASES[name][0]
        context = {"folder": folder}
        if hasattr(case, "setup"):
            context = case.setup(context)
        print(json.dumps({"start": name}), flush=True)
        with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        before, started = _status_kb("VmRSS"), time.monotonic()
        error = ""
        try:
            case(context)
        except (Exception, KeyboardInterrupt) as exc:
            error = f"{type(exc).__name__}: {exc}"
            why = unclear(exc) if not isinstance(exc, AssertionError) else "failed"
            error = f"{why}: {error}"[:2000] if why else ""
        grown = (max(_status_kb("VmHWM"), before) - before) // 1024
        seconds = round(time.monotonic() - started, 1)
        print(
            json.dumps({"end": name, "error": error, "grown_mb": grown, "s": seconds}), flush=True
        )


def _run(names, folder):
    """Outcomes of the cases: name -> a failure ("" when the case passed)."""
    outcomes = {}
    pending = list(names)
    while pending:
        log = open(os.path.join(folder, "child.log"), "w+")
        process = subprocess.Popen(
            [sys.executable, __file__, folder, *pending],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
        current, deadline, progressed = None, time.monotonic() + STARTUP_S, False
        try:
            while True:
                ready, _, _ = select.select([process.stdout], [], [], 1.0)
                if ready:
                    line = process.stdout.readline()
                    if not line:
                        break
                    if not line.startswith("{"):
                        continue
                    event = json.loads(line)
                    progressed = True
                    if "start" in event:
                        current = event["start"]
                        deadline = time.monotonic() + CASES[current][1] * SCALE
                    else:
                        name, current = event["end"], None
                        deadline = time.monotonic() + STARTUP_S
                        allowed = CASES[name][2]
                        over = event["grown_mb"] > allowed
                        outcomes[name] = event["error"] or (
                            f"grew by {event['grown_mb']} MiB, over {allowed}" if over else ""
                        )
                        pending.remove(name)
                elif time.monotonic() > deadline:
                    break
        finally:
            process.kill()
            returncode = process.wait()
            log.seek(0)
            tail = log.read()[-1500:]
            log.close()
        if current is not None:
            outcomes[current] = (
                f"ran past {CASES[current][1] * SCALE:.0f} s"
                if time.monotonic() > deadline
                else f"crashed the process (exit status {returncode}): {tail}"
            )
            pending.remove(current)
        elif pending and not progressed:
            for name in pending:
                outcomes[name] = f"the child did not start (exit status {returncode}): {tail}"
            break
    return outcomes


def test_each_case_ends_in_time_and_memory_and_clearly(tmp_path):
    """One test, so that one child process runs every case (not one per test worker)."""
    outcomes = _run(list(CASES), str(tmp_path))
    failures = {name: why for name, why in outcomes.items() if why and name not in _KNOWN}
    assert not failures, "\n".join(f"{name}: {why}" for name, why in failures.items())
    fixed = [name for name in _KNOWN if not outcomes[name]]
    assert not fixed, f"known failures that now pass (remove them from _KNOWN): {fixed}"


#: Cases that fail today, and why.
_KNOWN = {}


if __name__ == "__main__":
    _child(sys.argv[2:], sys.argv[1])
