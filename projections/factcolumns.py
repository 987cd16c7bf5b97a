"""The columns of a fact, each spelled once with its SQL type.

`facts_current` is these columns; `fact_history` is these (with `status` named `state`: an
interval's state) followed by its interval columns; the facts fold writes and reads its rows in
this order (`factstate.encode` / `decode`); the public fields every read returns are these less
the fold's own bookkeeping, plus the confidence worked out at read time.
"""

from __future__ import annotations

FACT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("fact_id", "TEXT NOT NULL"), ("app", "TEXT NOT NULL"), ("user", "TEXT NOT NULL"),
    ("subject", "TEXT NOT NULL"), ("predicate", "TEXT NOT NULL"), ("value", "TEXT NOT NULL"),
    ("value_key", "TEXT NOT NULL"), ("status", "TEXT NOT NULL"), ("basis", "TEXT NOT NULL"),
    ("base_confidence", "REAL NOT NULL"), ("reinforcements", "INTEGER NOT NULL"),
    ("confidence", "REAL NOT NULL"), ("sensitivity", "TEXT NOT NULL"), ("kind", "TEXT NOT NULL"),
    ("cardinality", "TEXT NOT NULL"), ("said_at", "TEXT NOT NULL"), ("recorded_at", "TEXT NOT NULL"),
    ("effective_date", "TEXT"), ("confirmed_at", "TEXT NOT NULL"), ("confirmed_by", "TEXT NOT NULL"),
    ("session", "TEXT NOT NULL"), ("evidence_event", "TEXT NOT NULL"), ("quote", "TEXT NOT NULL"),
    ("author", "TEXT NOT NULL"), ("disputes", "TEXT NOT NULL"), ("sessions", "TEXT NOT NULL"),
    ("observed_seq", "INTEGER NOT NULL"), ("valid_to", "TEXT"),
)
SNAPSHOT_COLUMNS: tuple[str, ...] = tuple(name for name, _type in FACT_COLUMNS)

# What the fold keeps for itself and no read returns.
BOOKKEEPING = ("value_key", "base_confidence", "reinforcements", "cardinality", "sessions",
               "observed_seq", "valid_to")

# The public fields of a fact, in the order every output shows them: the stored columns in
# column order, `effective_confidence` (worked out at read time) after `confidence`, and
# `effective_date` last (where it has always been shown).
_SHOWN = [c for c in SNAPSHOT_COLUMNS if c not in BOOKKEEPING and c != "effective_date"]
FACT_FIELDS: tuple[str, ...] = tuple(
    _SHOWN[:_SHOWN.index("confidence") + 1] + ["effective_confidence"] + _SHOWN[_SHOWN.index("confidence") + 1:]
    + ["effective_date"])


def column_ddl(columns: tuple[tuple[str, str], ...], rename: dict[str, str] | None = None,
               types: dict[str, str] | None = None) -> str:
    """`name TYPE, ...` for a CREATE TABLE, with columns renamed or retyped where a table differs."""
    rename, types = rename or {}, types or {}
    return ",\n    ".join(f"{rename.get(name, name)} {types.get(name, type_)}" for name, type_ in columns)
