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

import sqlite3

from factledger.ledger.store.postgres.backend import PgConnection
from factledger.projections.erasures import latest_receipt

_SETTINGS = ("wal_level", "archive_mode", "archive_command", "archive_library", "data_directory",
             "wal_keep_size", "max_slot_wal_keep_size", "hot_standby")


def residue(conn: sqlite3.Connection | PgConnection, location: str) -> dict:
    last = latest_receipt(conn)
    out = {"backend": getattr(conn, "backend", "sqlite"), "last_erasure_seq": last[0],
           "last_erasure_at": last[1], "places": []}
    places = out["places"]
    if out["backend"] != "postgresql":
        places.append(_place("ledger file", location, "scrubbed in place (secure_delete), WAL truncated "
                             "after each forget; `forget --vacuum` also compacts the file"))
        places.append(_place("copies and exports", "files you made (cp, backups, `factledger export`)",
                             "hold every value as it was: re-run the erasure on a restored copy "
                             "(`factledger erasures` lists what to repeat) or let them expire"))
        return out
    settings = dict(conn.raw.execute(
        "SELECT name, setting FROM pg_settings WHERE name = ANY(%s)", (list(_SETTINGS),)).fetchall())
    out["settings"] = settings
    places.append(_place("WAL (pg_wal)", f"{settings.get('data_directory') or '(data directory)'}/pg_wal",
                         "segments written before the forget hold the old rows until a checkpoint "
                         "recycles them (CHECKPOINT as a superuser, or wait for checkpoint_timeout)"))
    archiving = settings.get("archive_mode", "off") != "off"
    archiver = conn.raw.execute("SELECT archived_count, last_archived_wal, last_archived_time "
                                "FROM pg_stat_archiver").fetchone()
    places.append(_place(
        "WAL archive", (settings.get("archive_command") or settings.get("archive_library") or "(none)")
        if archiving else "archive_mode is off",
        (f"{archiver[0]} segments archived (last {archiver[1]} at {archiver[2]}): archived segments "
         "keep the old rows until your retention deletes them" if archiving else "nothing archived")))
    for name, client, state, sync in conn.raw.execute(
            "SELECT application_name, client_addr::text, state, sync_state FROM pg_stat_replication"):
        places.append(_place("replica", f"{name or '(unnamed)'} at {client or 'local socket'} ({state}, {sync})",
                             "replays the scrub and the redaction; VACUUM runs there too, but its own WAL "
                             "and archive are further copies"))
    for slot, kind, active in conn.raw.execute(
            "SELECT slot_name, slot_type, active FROM pg_replication_slots"):
        places.append(_place("replication slot", f"{slot} ({kind}, {'active' if active else 'inactive'})",
                             "keeps WAL from before the forget on the primary until its consumer "
                             "advances; a logical consumer already received the old rows"))
    places.append(_place("base backups", "pg_basebackup / pgBackRest / Barman / snapshots",
                         "each holds the heap as it was: expire those older than the last erasure, "
                         "or re-run the erasures after a restore (`factledger erasures`)"))
    places.append(_place("pg_dump files and exports", "files you made (pg_dump, `factledger export`)",
                         "hold every value as it was: delete or re-erase after restoring"))
    return out


def _place(kind: str, where: str, note: str) -> dict:
    return {"place": kind, "where": where, "note": note}
