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

# Worker processes for the suite (pytest-xdist; TEST_WORKERS=0 runs it in one process).
# Tests spread one by one; a module whose module-scoped fixture is costly (a browser, a
# shared `medasr run`) carries an xdist_group mark and stays on one worker. The ten slowest
# tests are printed at the end: the suite keeps to ten minutes here (DESIGN.md §10).
TEST_WORKERS ?= 2
PYTEST_PARALLEL := -n $(TEST_WORKERS) --dist loadgroup --durations=10

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
	$(BIN)/python -m pytest $(PYTEST_MARK) $(PYTEST_PARALLEL) -q

test-all: lint
	$(BIN)/python -m pytest $(PYTEST_PARALLEL) -q

demo: $(STAMP)
	$(BIN)/medasr demo

bench: $(STAMP)
	$(BIN)/python bench/audio_bench.py

# Pipeline throughput, overhead and memory (~30 min; workloads cached in bench/out/).
bench-pipeline: $(STAMP)
	$(BIN)/python bench/pipeline_bench.py --write-readme

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache *.egg-info
