# medasr: two commands on a fresh machine — `make demo` and `make test`.
# The Makefile owns the virtual environment; nothing relies on a hand install.

PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

# CI runs every test, the slow soak ones included; locally `make test` skips them
# (run `make test-all` for the full suite).
ifeq ($(CI),true)
PYTEST_MARK :=
else
PYTEST_MARK := -m "not slow"
endif

.PHONY: all install lint format typecheck test test-all demo bench bench-pipeline clean

all: test

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "medasr needs Python 3.11 ($(PYTHON) not found)"; exit 2; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

typecheck: $(STAMP)
	$(BIN)/mypy

test: lint
	$(BIN)/python -m pytest $(PYTEST_MARK) -q

test-all: lint
	$(BIN)/python -m pytest -q

demo: $(STAMP)
	$(BIN)/medasr demo

bench: $(STAMP)
	$(BIN)/python bench/audio_bench.py

# Pipeline throughput, overhead and memory (~30 min; workloads cached in bench/out/).
bench-pipeline: $(STAMP)
	$(BIN)/python bench/pipeline_bench.py --write-readme

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache *.egg-info
