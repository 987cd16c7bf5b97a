"""Every table's SQL lives with its owner: a projection's in projections/, the log's in the store.

Read from the source, so a new statement written in the wrong place fails here rather than in
review: no module of ledger/, cli/ or web/ names a projection table in SQL (they call the
projection's read functions), and no projection reads the `events` table itself (the store's
`ledger/store/reads.py`, `store.iter_events`, and the PostgreSQL store's own modules do).  The log's dedicated tools (export and import,
verify and its row check, the proofs, the auditor's filtered log) keep their own reads of it.
"""

from __future__ import annotations

import re
from pathlib import Path

from factledger.projections.catalog import all_projections
from factledger.projections.runner import Projector

ROOT = Path(__file__).resolve().parents[2]
PROJECTION_TABLES = set(Projector(all_projections()).all_tables) | {"projection_positions"}
# SQL keywords in capitals, as every statement here writes them (prose says "into events")
SQL = r"\b(?:FROM|JOIN|INTO|UPDATE|TABLE)\s+({})\b"
LOG_TOOLS = {"ledger/store/eventlog.py", "ledger/store/reads.py", "ledger/store/postgres/backend.py", "ledger/store/postgres/schema.py",
             "ledger/store/postgres/partitions.py",
             "ledger/export.py", "ledger/audit/verify.py", "ledger/store/rowcheck.py", "ledger/audit/proofs.py",
             "ledger/audit/logquery.py", "ledger/audit/served.py", "ledger/audit/verifycheck.py"}
# What checks the projections against the log reads both, row by row, as `verify` reads the log:
# the served-fact check and verify's projection comparison (docs/audit.md).
PROJECTION_CHECKERS = {"ledger/audit/served.py", "ledger/audit/projcheck.py"}
# What rewrites the projections' own statements for a partitioned PostgreSQL ledger (facts by id
# as one probe per id: `partitions.on_leaves`), and sends none of its own over their tables.
STATEMENT_REWRITERS = {"ledger/store/postgres/partitions.py"}


def _sources(*folders: str):
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            yield path.relative_to(ROOT).as_posix(), path.read_text()


def test_the_projection_tables_are_known():
    assert {"facts_current", "fact_history", "fact_events", "review_queue", "recall_index",
            "sessions", "ingest_queue", "erasures", "forgotten_scopes", "merkle_hashes"} <= PROJECTION_TABLES


def test_no_sql_over_a_projection_table_outside_projections():
    pattern = re.compile(SQL.format("|".join(sorted(PROJECTION_TABLES))))
    found = [(name, m.group(0)) for name, text in _sources("ledger", "cli", "web", "adk", "mcp_server")
             if name not in PROJECTION_CHECKERS | STATEMENT_REWRITERS for m in pattern.finditer(text)]
    assert found == []


def test_the_events_table_is_read_by_the_store_and_the_log_tools_only():
    pattern = re.compile(SQL.format("events"))
    found = sorted({name for name, text in _sources("ledger", "projections", "cli", "web", "adk", "mcp_server")
                    if pattern.search(text) and name not in LOG_TOOLS})
    assert found == []
