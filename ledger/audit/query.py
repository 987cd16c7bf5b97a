"""Ad-hoc read-only SQL over a ledger file (`factledger query`), in the manner of `sqlite-utils query`.

The file is read by the SQLite engine itself, behind three locks (`ledger/store/sqlite/adhoc.py`);
a PostgreSQL ledger is read with psql under a read-only role instead (docs/scale.md).
"""

from __future__ import annotations

from factledger.ledger.store.sqlite.adhoc import query

__all__ = ["query"]
