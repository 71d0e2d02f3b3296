PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-jax lint install clean docs bench

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test,plot,jax,bench]"
	touch $(STAMP)

install: $(STAMP)

export TF_CPP_MIN_LOG_LEVEL ?= 2

# Level 3 also hides the TensorFlow runtime's error-level notices (such as oneDNN's
# "DT_BOOL only on platforms with AVX-512"), which are not errors of the demo.
demo: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=3 $(BIN)/python -m skptr demo

# Two worker processes (pytest-xdist): one per core, since most of a test's time is
# single-threaded tracing and Python; work stealing balances the long learning tests.
PYTEST := $(BIN)/python -m pytest -q -n 2 --dist worksteal

# JAX compiles every new model's functions; its persistent compilation cache lets a test
# that fits the same architecture again (clones, refits, searches) reuse the executables.
test test-jax: export JAX_COMPILATION_CACHE_DIR ?= $(abspath $(VENV))/jax-compilation-cache
test test-jax: export JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS ?= 0
test test-jax: export JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES ?= 0
# Most of a JAX test's time (and of the JAX subprocesses of make test) is compiling
# small models for a few steps each: a lower LLVM optimisation level and XLA's older
# elemental emitters (its CPU fusion emitters compile them about twice as slowly)
# compile faster and run them about as fast. TensorFlow's XLA-compiled steps and
# decoders read the same flags.
test test-jax: export XLA_FLAGS ?= --xla_backend_optimization_level=1 \
	--xla_cpu_use_fusion_emitters=false

# tests/conftest.py splits the CPU into two virtual devices in every test process, for
# the multi-device tests; their module of the long two-process fit comes first, so that
# it does not start last.
DEVICE_TESTS := tests/devices/test_several_processes.py tests/devices/test_devices.py
test: $(STAMP)
	$(PYTEST) --durations=15 $(DEVICE_TESTS) tests
	$(BIN)/ruff check .

# The estimator, persistence, model-selection and learning tests on Keras' JAX backend,
# with preprocessing, metrics and plotting (the other modules test backend-independent
# code). A worker that crashes is reported and replaced, so it cannot hide other tests.
JAX_TESTS ?= tests/test_pointer_estimator.py tests/test_pointer_network.py \
	tests/test_memory_estimator.py tests/test_memory_memories.py tests/test_persistence.py \
	tests/test_load_validation.py tests/test_limits_and_persistence.py \
	tests/test_model_selection.py tests/test_reliability.py \
	tests/test_backends.py tests/test_sklearn_contract.py tests/test_preprocessing.py \
	tests/test_precision.py \
	tests/test_pointer_batches.py tests/test_memory_batches.py \
	tests/test_properties_files.py tests/test_saving.py tests/test_threads.py \
	tests/test_pointer_cost.py tests/test_pointer_noise.py

test-jax: $(STAMP)
	KERAS_BACKEND=jax $(PYTEST) --durations=15 $(DEVICE_TESTS) $(JAX_TESTS)

lint: $(STAMP)
	$(BIN)/ruff check .

DOCS_STAMP := $(VENV)/.docs-installed

$(DOCS_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[docs]"
	touch $(DOCS_STAMP)

# SKPTR_DOCS_EXAMPLES=<regex> runs only the matching examples (default: all of them).
docs: $(DOCS_STAMP)
	$(BIN)/python -m sphinx -W --keep-going -b html docs docs/_build/html
	@echo "Documentation: docs/_build/html/index.html"

# ARGS=--quick runs the CI smoke test; without it, the full run (about 35 min on 2 cores).
# The speed sections run on both backends; the report shows them side by side.
bench: $(STAMP)
	$(BIN)/python -m benchmarks $(ARGS)
	$(BIN)/python -m benchmarks --backend jax --only $(SPEED_SECTIONS) $(ARGS)

SPEED_SECTIONS := pointer_vs_torch pointer_speed transducer_speed sklearn_overhead predict_threads two_devices

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
