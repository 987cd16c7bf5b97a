# The two commands: `make demo` and `make test`. Each creates .venv on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test test-long install install-test install-bench bench bench-quick clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install --quiet -e .

install-test: $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test,adk,ui,semantic]'

# `make demo` leaves its ledger in $(DEMO_OUT)/ to explore afterwards (made afresh each run).
DEMO_OUT ?= demo-out
demo: install
	mkdir -p $(DEMO_OUT)
	rm -f $(DEMO_OUT)/factledger.db $(DEMO_OUT)/factledger.db-wal $(DEMO_OUT)/factledger.db-shm
	$(BIN)/factledger demo --out $(DEMO_OUT)/factledger.db

test: install-test
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

# The long crash and concurrency suites (marked slow; `make test` leaves them out).
test-long: install-test
	$(BIN)/python -m pytest -m slow

install-bench: $(BIN)/python
	$(BIN)/pip install --quiet -e '.[bench]'

# Performance suite (docs/performance.md): N = 1,000,000 events, and a quick N = 100,000 run.
bench: install-bench
	$(BIN)/python -m bench --events 1000000 --json bench-results.json

bench-quick: install-bench
	$(BIN)/python -m bench --events 100000 --forget-sizes 100,1000 --json bench-quick.json

clean:
	rm -rf $(VENV) *.egg-info build .pytest_cache .hypothesis
