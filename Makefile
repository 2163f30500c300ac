# Two entry points that work on a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP_BASE := $(VENV)/.installed-base
STAMP_TEST := $(VENV)/.installed-test

.PHONY: demo test test-slow test-deep bench lint clean paper rules prove install-all fuzz fuzz-summary

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP_BASE): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet -e .
	touch $@

$(STAMP_TEST): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet -e '.[test,tvm,torch,onnx,docs]'
	touch $@

# Every extra (README "Installing"): the TVM backend, both importers, the benchmarks' peers.
install-all: $(BIN)/python
	$(BIN)/pip install --quiet -e '.[tvm,onnx,torch,bench,docs]'

demo: $(STAMP_BASE)
	$(BIN)/python examples/demo.py

test: $(STAMP_TEST)
	HYPOTHESIS_PROFILE=ci $(BIN)/python -m pytest -q -n 2 tests

# The long model tests (marked `slow`), skipped by `make test`.
test-slow: $(STAMP_TEST)
	RELAY_SLOW=1 HYPOTHESIS_PROFILE=ci $(BIN)/python -m pytest -q -n 2 -m slow tests

test-deep: $(STAMP_TEST)
	HYPOTHESIS_PROFILE=deep $(BIN)/python -m pytest -q tests

# Fuzz the differential properties (tests/fuzz) with HypoFuzz on every core, until stopped.
# RELAY_FUZZ_DB=dir|redis://... shares the example database (docs/conformance.md).
# HypoFuzz's workers are started by tools/hypofuzz_workers.py, not `hypothesis fuzz`: its
# hub gives up after 60 s when no worker has run 100 inputs yet, and ours take seconds each.
# FUZZ_PROCS=n to use n processes; `make fuzz-summary` prints what the database holds.
FUZZ_PROCS ?= $(shell nproc 2>/dev/null || echo 1)
STAMP_FUZZ := $(VENV)/.installed-fuzz

$(STAMP_FUZZ): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet -e '.[test,tvm,fuzz]'
	touch $@

fuzz: $(STAMP_FUZZ)
	$(BIN)/python tools/hypofuzz_workers.py -n $(FUZZ_PROCS) -- tests/fuzz

fuzz-summary: $(STAMP_FUZZ)
	$(BIN)/python tools/hypofuzz_workers.py --summary -- tests/fuzz

STAMP_BENCH := $(VENV)/.installed-bench

$(STAMP_BENCH): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet -e '.[bench,tvm,quantize]'
	touch $@

# The paper's figures (Markdown tables + PNG plots) in paper/; see REPRODUCING.md.
paper: $(STAMP_BENCH)
	$(BIN)/python bench/paper.py --out paper
	$(BIN)/python bench/models.py > paper/models.md
	$(BIN)/python bench/vta.py > paper/vta.md
	$(BIN)/python bench/quantize.py > paper/quantize.md

# semantics/RULES.md typeset as inference rules (PNG per section + PDF) in docs/rules/out/.
rules: $(STAMP_BASE)
	$(BIN)/pip install --quiet 'matplotlib>=3.8'
	$(BIN)/python docs/rules/render.py --out docs/rules/out

# Every proof obligation (relations, rewrites, soundness) with its verdict.
prove: $(STAMP_BASE)
	$(BIN)/python -m relay prove

bench: $(STAMP_BASE)
	$(BIN)/python bench/parse.py

STAMP_DEV := $(VENV)/.installed-dev

$(STAMP_DEV): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet -e '.[test,dev,tvm,torch,onnx,docs]'
	touch $@

lint: $(STAMP_DEV)
	$(BIN)/ruff check .
	$(BIN)/python tools/size_budget.py
	$(BIN)/mypy

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
