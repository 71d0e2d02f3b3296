PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint install clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test,plot]"
	touch $(STAMP)

install: $(STAMP)

export TF_CPP_MIN_LOG_LEVEL ?= 2

demo: $(STAMP)
	$(BIN)/python -m skptr demo

test: $(STAMP)
	$(BIN)/python -m pytest -q --durations=15
	$(BIN)/ruff check .

lint: $(STAMP)
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
