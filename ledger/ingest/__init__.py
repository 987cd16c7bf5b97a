"""Ingestion: finished agent sessions in, validated facts with provenance out (docs/ingestion.md).

- `session`: the one in-memory shape of a session; the watermark's tail; rendering.
- `formats`: ADK session JSON and JSONL transcripts -> `Session` (authorship decided here).
- `sources`: files, directories and stdin, one failure per file, never one for the batch.
- `jsonl`: reading UTF-8 files and JSON Lines, with the same error messages everywhere.
- `proposal`: what an extractor proposes (no author, time or sensitivity of its own).
- `extractor`: the protocol; `patterns`, `anthropic`, `candidates` implement it.
- `validator`: the rules that need the session (evidence exists, quote occurs, said_at).
- `pipeline`: one session, one transaction; `batch`: many, with a summary and the retry queue.
- `review`: accept or reject held candidates; `evaluate`: the probe harness.
"""

from factledger.ledger.ingest.pipeline import SessionResult, ingest_session
from factledger.ledger.ingest.session import Delta, Session, SessionEvent

__all__ = ["Delta", "Session", "SessionEvent", "SessionResult", "ingest_session"]
