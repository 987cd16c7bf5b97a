# The two commands: `make demo` and `make test`. Each creates .venv on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test test-long install install-test clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install --quiet -e .

install-test: $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test]'

demo: install
	$(BIN)/factledger demo

test: install-test
	$(BIN)/python -m pytest

# The long crash and concurrency suites (marked slow; `make test` leaves them out).
test-long: install-test
	$(BIN)/python -m pytest -m slow

clean:
	rm -rf $(VENV) *.egg-info build .pytest_cache .hypothesis
