"""Two virtual CPU devices in every test process, for the multi-device tests.

The backends fix their devices when they start, so the split is made here, before any
test module starts one: on JAX, ``--xla_force_host_platform_device_count=2`` is in
``XLA_FLAGS`` while JAX starts and is taken out again, so that the child processes
that tests start have one device, as a user's would; on TensorFlow, the CPU is split
into two logical devices before TensorFlow initialises its runtime (TensorFlow raises
if it had started). Estimators use one device unless their ``devices`` says otherwise,
so the other tests run as on one.
"""

import os

DEVICE_COUNT_FLAG = "--xla_force_host_platform_device_count=2"


def _split_into_two_devices():
    if os.environ.get("KERAS_BACKEND", "tensorflow") == "jax":
        flags = os.environ.get("XLA_FLAGS")
        os.environ["XLA_FLAGS"] = f"{flags or ''} {DEVICE_COUNT_FLAG}"
        try:
            import jax

            n_devices = len(jax.local_devices())
        finally:
            if flags is None:
                del os.environ["XLA_FLAGS"]
            else:
                os.environ["XLA_FLAGS"] = flags
        if n_devices != 2:  # JAX had started before this file: fail, never skip
            raise RuntimeError(f"the CPU was not split into two JAX devices ({n_devices})")
        return
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)


_split_into_two_devices()
