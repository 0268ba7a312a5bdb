# The two commands of the README: `make run` and `make test`.  Both set up the
# virtual environment themselves (VENV= to choose another), and share it.

SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.ragsage-installed
DEMO_STATE := .ragsage/demo-state.json

.PHONY: setup lint typecheck unit test run bench clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

setup: $(STAMP)

lint: setup
	$(BIN)/ruff check ragsage worker api tests bench examples
	$(BIN)/ruff format --check ragsage worker api tests bench examples

typecheck: setup
	$(BIN)/mypy --strict ragsage worker api

unit: setup
	$(BIN)/pytest -q

test: lint typecheck unit

run: setup
	@rm -f $(DEMO_STATE)
	$(BIN)/ragsage ingest examples/docs --state $(DEMO_STATE)
	@echo
	@echo '$$ ragsage query "How does row-level security isolate namespaces?"'
	@$(BIN)/ragsage query "How does row-level security isolate namespaces?" --state $(DEMO_STATE)
	@echo
	@echo '$$ ragsage query "What is the price of a Pro subscription?"'
	@$(BIN)/ragsage query "What is the price of a Pro subscription?" --state $(DEMO_STATE)
	@echo
	@echo "Ask your own: $(BIN)/ragsage query \"<question>\" --state $(DEMO_STATE)"

bench: setup
	$(BIN)/python bench/ingest_offline.py

clean:
	rm -rf $(VENV) .ragsage .mypy_cache .ruff_cache .pytest_cache
