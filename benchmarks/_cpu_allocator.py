"""Training throughput of one process under the CPU allocator its environment names.

``python -m benchmarks._cpu_allocator CONFIG`` is run by the ``cpu_allocator`` section
with ``TF_CPU_ALLOCATOR_USE_BFC`` set to ``false`` (the allocator of the C library) or
``true`` (TensorFlow's best-fit-with-coalescing pools), since TensorFlow reads it once,
when it starts. The task ``CONFIG["task"]`` is fitted for ``CONFIG["epochs"]`` epochs;
the first epoch (which compiles the training step) is left out of the rate and timed
on its own, as the cost of a short fit. The last line printed is a JSON object:
instances per second, minor page faults per instance over the timed epochs, seconds
from the call of ``fit`` to the end of its first epoch, and the process's peak
resident memory.
"""

from __future__ import annotations

import json
import resource
import sys
import time

#: The tasks, each fitted in processes of its own.
TASKS = ("tours from the cost", "sorting, imitation")


def _usage():
    return time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _tasks(config):
    import numpy as np

    from skptr import PointerNetworkOrderer
    from skptr.datasets import make_sorting

    n = config["n_instances"]
    points = np.random.default_rng(0).random((n, config["tour_length"], 2))
    numbers, order = make_sorting(n, config["sort_length"], random_state=0)
    return {
        "tours from the cost": (
            PointerNetworkOrderer(**config["tour_params"], cost="tour", random_state=0),
            (points,),
        ),
        "sorting, imitation": (
            PointerNetworkOrderer(**config["sort_params"], random_state=0),
            (numbers, order),
        ),
    }


def main(config):
    import keras

    estimator, data = _tasks(config)[config["task"]]
    marks = []
    timer = keras.callbacks.LambdaCallback(on_epoch_end=lambda *_: marks.append(_usage()))
    estimator.set_params(epochs=config["epochs"], callbacks=[timer])
    called, _ = _usage()
    estimator.fit(*data)
    (start, faults_start), (end, faults_end) = marks[0], marks[-1]
    instances = len(data[0]) * (len(marks) - 1)
    result = {
        "instances_per_s": instances / (end - start),
        "page_faults_per_instance": (faults_end - faults_start) / instances,
        "first_epoch_s": start - called,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
