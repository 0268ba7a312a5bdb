# The two commands of the README: `make run` and `make test`.  Both set up the
# virtual environment themselves (VENV= to choose another), and share it.

SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PORT ?= 8000
# The stamp names the pyproject it was installed from, so a venv shared by several
# checkouts (VENV=...) is reused as long as their dependencies are the same.
DEPS_HASH := $(shell sha256sum pyproject.toml | cut -c1-16)
STAMP := $(VENV)/.ragsage-installed-$(DEPS_HASH)
# This checkout's code wins over whatever checkout the shared venv was installed from.
export PYTHONPATH := $(CURDIR)$(if $(PYTHONPATH),:$(PYTHONPATH))

.PHONY: setup system-packages lint typecheck unit test run bench screenshot clean

$(STAMP):
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

setup: $(STAMP)

lint: setup
	$(BIN)/ruff check ragsage worker api tests bench examples evaluation_data
	$(BIN)/ruff format --check ragsage worker api tests bench examples evaluation_data

typecheck: setup
	$(BIN)/mypy --strict ragsage worker api evaluation_data

# Debian packages some tests drive (OCR, a real manual, a headless browser).
system-packages:
	@bash tests/system-packages.sh

# Two processes: much of the suite waits on the services and workers it starts.
# The 20 slowest tests are listed at the end, so a slow new test shows at once.
unit: setup system-packages
	$(BIN)/pytest -q --numprocesses=2 --dist=loadfile --durations=20

test: lint typecheck unit

run: setup
	$(BIN)/ragsage up --port $(PORT)

bench: setup
	$(BIN)/python bench/ingest_offline.py

# Refreshes docs/web-page.png, the README's picture of the page (needs Debian's chromium
# and chromium-driver); not part of the tests.
screenshot: setup
	$(BIN)/python -m api.web.screenshot

clean:
	rm -rf $(VENV) .ragsage .mypy_cache .ruff_cache .pytest_cache
