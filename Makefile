PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-jax lint install clean docs bench

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test,plot,jax]"
	touch $(STAMP)

install: $(STAMP)

export TF_CPP_MIN_LOG_LEVEL ?= 2

# Level 3 also hides the TensorFlow runtime's error-level notices (such as oneDNN's
# "DT_BOOL only on platforms with AVX-512"), which are not errors of the demo.
demo: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=3 $(BIN)/python -m skptr demo

test: $(STAMP)
	$(BIN)/python -m pytest -q --durations=15
	$(BIN)/ruff check .

# The estimator, persistence, model-selection and learning tests on Keras' JAX backend,
# with preprocessing, metrics and plotting (the other modules test backend-independent
# code), one process per module, so that a crash in one module cannot hide the others.
JAX_TESTS ?= tests/test_pointer_estimator.py tests/test_pointer_network.py \
	tests/test_memory_estimator.py tests/test_memory_memories.py tests/test_persistence.py \
	tests/test_load_validation.py tests/test_model_selection.py tests/test_reliability.py \
	tests/test_backends.py tests/test_sklearn_contract.py tests/test_preprocessing.py \
	tests/test_metrics.py tests/test_plotting.py

test-jax: $(STAMP)
	@status=0; for module in $(JAX_TESTS); do \
		echo "KERAS_BACKEND=jax pytest $$module"; \
		KERAS_BACKEND=jax $(BIN)/python -m pytest -q --durations=5 $$module || status=1; \
	done; exit $$status

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

SPEED_SECTIONS := pointer_vs_torch pointer_speed transducer_speed sklearn_overhead

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
