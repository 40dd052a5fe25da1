# make test: bootstrap .venv (idempotent), then ruff, mypy (strict) and pytest on SQLite and PostgreSQL.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test lint typecheck pytest bench demo venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[postgres,test]'
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check engine wrapper
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

# Two workers (the CI machine has two cores), one test file per worker at a time: a
# file's tests share its module fixtures and run in order; files are handed out in
# collection order (a RUN_FIRST module first), not by their test counts (D77).
PYTEST_WORKERS ?= 2

pytest: $(STAMP)
	$(BIN)/pytest -q --numprocesses $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder

test: lint typecheck pytest

demo: $(STAMP)
	$(BIN)/python -m demo.run_demo

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
