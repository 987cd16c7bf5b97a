"""Where copies of forgotten bytes may still be, beyond the ledger's live tables.

A forget scrubs the log and the projections and makes that physical where the ledger can (SQLite:
`secure_delete`, WAL truncated; PostgreSQL: `VACUUM` of the touched tables).  What the ledger
cannot reach is every copy the database and its operator keep: on PostgreSQL the WAL (archived
segments hold every page image and row written before the forget), base backups, streaming and
logical replicas (each has its own heap and WAL to vacuum), `pg_dump` files; on SQLite, copies of
the file and exports.  This lists those places as the server reports them, so an operator knows
what to expire or re-erase (docs/forgetting.md).
"""

from __future__ import annotations

from factledger.ledger.store.engines import engine_of
from factledger.projections.erasures import latest_receipt


def residue(conn, location: str) -> dict:
    """The report: the last erasure, and each place its engine names (`Engine.residue`)."""
    last = latest_receipt(conn)
    engine = engine_of(conn)
    found = engine.residue(conn, location)
    out = {"backend": engine.kind, "last_erasure_seq": last[0], "last_erasure_at": last[1],
           "places": found["places"]}
    if "settings" in found:
        out["settings"] = found["settings"]
    return out
