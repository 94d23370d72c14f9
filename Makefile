# rocketkube: `make run` starts a local cluster, `make test` runs every check.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
SOURCES := common namesrv broker client tests

.PHONY: install lint test pytest run clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

install: $(STAMP)

lint: install
	$(VENV)/bin/ruff check $(SOURCES)
	$(VENV)/bin/ruff format --check $(SOURCES)
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

pytest: install
	$(VENV)/bin/pytest $(PYTEST_ARGS)

test: lint pytest

run: install
	$(VENV)/bin/rocketkube local --data-dir .data

clean:
	rm -rf $(VENV) .data .mypy_cache .ruff_cache .pytest_cache
