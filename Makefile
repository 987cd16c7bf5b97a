# The two commands: `make demo` and `make test`. Each creates .venv on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint test-long install install-test install-bench bench bench-quick clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install --quiet -e '.[places]'

install-test: $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test,adk,ui,semantic,places,postgres,mcp]'

# `make demo` leaves its ledger in $(DEMO_OUT)/ to explore afterwards (made afresh each run).
DEMO_OUT ?= demo-out
demo: install
	$(BIN)/factledger demo --out $(DEMO_OUT)/factledger.db --replace

test: lint
	$(BIN)/python -m pytest

# ruff, and the import-layer contracts of pyproject's [tool.importlinter].  import-linter reads a
# package from one folder, and the card's folders install under `factledger` by a package-dir
# mapping, so the graph is read from build/import-graph/factledger, links to those folders.
IMPORT_GRAPH := build/import-graph
lint: install-test
	$(BIN)/ruff check .
	rm -rf $(IMPORT_GRAPH) && mkdir -p $(IMPORT_GRAPH)/factledger
	cp factledger/__init__.py $(IMPORT_GRAPH)/factledger/
	for d in ledger projections cli web adk mcp_server; do ln -s $(CURDIR)/$$d $(IMPORT_GRAPH)/factledger/$$d; done
	cd $(IMPORT_GRAPH) && PYTHONPATH=. $(CURDIR)/$(BIN)/lint-imports --no-cache $(CURDIR)/pyproject.toml

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
