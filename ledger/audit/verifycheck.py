"""`verify` that costs what changed: a record of the projections' pages and rows as last proved,
and a check that refolds only the partitions whose rows may have changed since.

A full check (`projcheck.projection_problem`: every table against a rebuild of the whole log)
that finds nothing writes a record: the log's head, the projector's schema, and for each table
every leaf page's digest with the rows on it (rowid, partition hashed, a digest of the row's
values).  The next check reads the pages again; on a page not as recorded (then, or now) it reads
the rows and compares each with its recorded digest.  It refolds, into memory, only the suspect
partitions: those with an event after the recorded head or an event scrubbed since, and those of
a row that is new, gone or not as recorded (then and now); and compares their rows with the live
ones.  Why a partition that is none of these is still what the log gives: each of its rows then
and now is either on a recorded page still in its table's tree byte for byte, or on a changed
page, where it was compared by rowid with its recorded digest; so its rows are exactly those
proved equal to a fold of its events, and it has had no event since.  The log-wide Merkle tree
is refolded from its first changed page.  A disagreement is left to the full check, which names
its first row.  The record is the verifier's (like a pinned head), kept outside the ledger by
the caller; `checkpoint --projections` commits a record's digest in a checkpoint, and once the
log holds such a checkpoint only the record it commits is used (docs/audit.md).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import tempfile
from pathlib import Path

import orjson

from factledger.ledger.audit import proofs
from factledger.ledger.domain.eventrow import body_of
from factledger.ledger.domain.events import EVENT
from factledger.ledger.store.engines import engine_of
from factledger.ledger.store.eventlog import head
from factledger.ledger.store.reads import iter_partitions
from factledger.ledger.tlog import merkle
from factledger.ledger.vocabulary.progress import SILENT, Progress
from factledger.projections.vectors import TABLE as VECTORS
from factledger.projections.vectors import check as check_vectors
from factledger.projections.vectors import left_out

FORMAT = "factledger-verified/2"
DIGEST_HEX = 32                     # a row's digest in the record: 128 bits of sha256, in hex
STATE_ENV = "FACTLEDGER_VERIFY_STATE"    # where `factledger verify` keeps its records (a folder)


def default_record(location: str) -> Path:
    """The record `factledger verify` keeps for the ledger file at `location`: in the verifier's
    own folder ($FACTLEDGER_VERIFY_STATE, else ~/.cache/factledger/verified), named by the file's
    resolved path, so that a writer of the ledger's folder does not reach it."""
    root = Path(os.environ.get(STATE_ENV) or Path.home() / ".cache" / "factledger" / "verified")
    return root / (hashlib.sha256(str(Path(location).resolve()).encode()).hexdigest()[:32] + ".json")


def partition_key(app: str, user: str) -> str:
    """A partition as the record names it: hashed, so the record keeps no one's ids."""
    return hashlib.sha256(f"{app}\0{user}".encode()).hexdigest()[:32]


def fingerprint(projector) -> str:
    return hashlib.sha256(projector.schema.encode()).hexdigest()


def _partitioned(conn, table: str) -> bool:
    columns = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
    return {"app", "user"} <= columns


def row_digest(row: tuple) -> str:
    """A row's values (their types too: `repr` tells 1 from '1' from b'1'), hashed: 128 bits."""
    return hashlib.sha256(repr(row).encode()).hexdigest()[:DIGEST_HEX]


def _rows(conn, table: str, rowids=None):
    """(rowid, app, user, digest of every column) for the rows of `table` (those of `rowids`)."""
    sql = f"SELECT rowid, app, user, * FROM {table}"
    if rowids is None:
        found = conn.execute(sql)
    else:
        found = conn.execute(sql + " WHERE rowid IN (SELECT value FROM json_each(?))",
                             (orjson.dumps(sorted(rowids)).decode(),))
    return ((row[0], row[1], row[2], row_digest(row[3:])) for row in found)


def record(conn, projector) -> dict | None:
    """The record of the projections as they are now (just proved equal to a rebuild on this
    snapshot); None when this engine has no pages to read."""
    engine = engine_of(conn)
    tables = tuple(projector.all_tables)
    pages = engine.table_pages(conn, tables)
    if pages is None:
        return None
    seq, digest = head(conn)
    names: dict[str, int] = {}
    out_tables = {}
    for table in tables:
        entry: dict = {"pages": {str(p): d for p, d in pages[table].items()}}
        cells = engine.rowids_on(conn, pages[table])
        if cells is None:
            return None
        if _partitioned(conn, table):
            rows = {rowid: (names.setdefault(partition_key(app, user), len(names)), digest_)
                    for rowid, app, user, digest_ in _rows(conn, table)}
            # one string a page, "rowid partition digest" per row, read only when the page changed
            entry["rows"] = {str(p): ";".join(f"{r} {rows[r][0]} {rows[r][1]}" for r in sorted(rowids) if r in rows)
                             for p, rowids in cells.items()}
        else:
            entry["first"] = {str(p): min(rowids) for p, rowids in cells.items() if rowids}
            entry["count"] = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        out_tables[table] = entry
    return {"format": FORMAT, "seq": seq, "hash": digest, "projector": fingerprint(projector),
            "partitions": sorted(names, key=names.get), "tables": out_tables}


def encode(data: dict) -> bytes:
    return orjson.dumps(data, option=orjson.OPT_SORT_KEYS)


def write(conn, projector, path: str | Path) -> str | None:
    """Record the projections as they are now, just proved equal to a rebuild on this snapshot;
    the record's digest (sha256 of its bytes, hex), or None when this engine has no pages to
    read (nothing is written)."""
    data = record(conn, projector)
    if data is None:
        return None
    raw = encode(data)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".verified-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(raw)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return hashlib.sha256(raw).hexdigest()


def committed_record(path: str | Path) -> Path:
    """Where the record a checkpoint committed is kept, beside the verifier's own."""
    path = Path(path)
    return path.with_name(path.stem + ".checkpoint.json")


def commitment(conn) -> tuple[int, str] | None:
    """(tree size, record digest) of the latest checkpoint that commits the projections (its
    `projections` extension line, docs/audit.md); None when no checkpoint of the log does."""
    for note in proofs.notes(conn):
        for line in proofs.read_note(note).extensions:
            word, _, digest = line.partition(" ")
            if word == proofs.PROJECTIONS:
                return proofs.read_note(note).size, digest
    return None


def _load(path: str | Path, expect: tuple[int, str] | None = None) -> dict | None:
    """The record at `path`; with `expect` (a checkpoint's tree size and record digest), only a
    record of exactly those bytes, at that size."""
    try:
        raw = Path(path).read_bytes()
        record = orjson.loads(raw)
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        return None
    if expect is not None and (hashlib.sha256(raw).hexdigest() != expect[1] or record.get("seq") != expect[0]):
        return None                                 # not the record the log commits: altered, or another
    return record


def check(conn, projector, path: str | Path, vectors: bool = False, progress: Progress = SILENT,
          expect: tuple[int, str] | None = None) -> tuple[list[str], bool, dict, dict] | None:
    """(the tables checked, whether they all agree, the meaning index's state, what was read),
    or None when the record cannot be used (none, another log or schema, an engine without
    pages, not the one `expect` names): then only a full check will do.  "Not all agree" is for
    the full check to name.  Run after the chain walk (`audit.verify`) has passed on the same
    snapshot: which partitions were scrubbed since is read from the Redacted events it proved."""
    record = _load(path, expect)
    if record is None or record.get("projector") != fingerprint(projector):
        return None
    since = record["seq"]
    row = conn.execute("SELECT hash FROM events WHERE seq = ?", (since,)).fetchone()
    if since and (row is None or row[0] != record["hash"]):
        return None                                 # not this log (or not as it was)
    engine = engine_of(conn)
    upto = head(conn)[0]
    tables = list(projector.all_tables)
    progress.stage("reading the projections' pages", len(tables))
    # a leaf byte for byte as recorded by `record` (whose walk digests a leaf with overflow pages
    # otherwise) holds no cell that spills, so its cells need not be read (`table_pages`)
    pages = engine.table_pages(conn, tuple(tables), leaves_only=True)
    if pages is None or set(record["tables"]) != set(tables):
        return None
    suspects = _written_since(conn, since)
    keys: set[int] = set()
    log_wide: dict[str, int] = {}
    changed_pages = compared = 0
    for table in tables:
        recorded, now = record["tables"][table], pages[table]
        old = recorded["pages"]
        changed_old = [p for p, d in old.items() if d is None or now.get(int(p)) != d]
        changed_new = [p for p, d in now.items() if d is None or old.get(str(p)) != d]
        changed_pages += len(changed_new)
        if "rows" in recorded:
            # the rows on a page not as recorded (then, or now), compared one by one: a row whose
            # digest is not the one recorded for its rowid (or that is new, or gone) makes its
            # partition suspect, then and now
            then: dict[int, tuple[int, str]] = {}
            for p in changed_old:
                _unpack(recorded["rows"].get(p), then)
            cells = engine.rowids_on(conn, changed_new) if changed_new else {}
            if cells is None:
                return None
            wanted = set(then).union(*cells.values()) if cells else set(then)
            seen = set()
            for rowid, app, user, digest_ in (_rows(conn, table, wanted) if wanted else ()):
                seen.add(rowid)
                was = then.get(rowid)
                if was is None or was[1] != digest_:
                    suspects.add((app, user))
                    if was is not None:
                        keys.add(was[0])
                compared += 1
            keys.update(then[rowid][0] for rowid in set(then) - seen)    # recorded, and gone now
        else:
            # a log-wide table only grows at its end: the rows before the first one on a page not
            # as recorded (now, or then) are the ones proved, and only those after it are refolded
            cells = engine.rowids_on(conn, changed_new) if changed_new else {}
            if cells is None:
                return None
            firsts = [min(rowids) for rowids in cells.values() if rowids]
            firsts += [recorded["first"].get(p, 0) for p in changed_old]
            if firsts or upto != since:                # else every page, and the log, as recorded
                log_wide[table] = min([*firsts, recorded["count"]])
        progress.update(1)
    if keys:
        wanted = {record["partitions"][k] for k in keys}
        suspects.update(part for part in conn.execute("SELECT DISTINCT app, user FROM events").fetchall()
                        if partition_key(*part) in wanted)
    suspects = sorted((str(a), str(u)) for a, u in suspects)
    agree, meaning = _compare(conn, projector, suspects, log_wide, vectors, progress)
    read = {"since_seq": since, "partitions_refolded": len(suspects), "pages_changed": changed_pages,
            "rows_compared": compared}
    return tables, agree, meaning, read


def _written_since(conn, since: int) -> set[tuple[str, str]]:
    """The partitions with an event after `since`, or an event scrubbed since: every scrub is
    named by the Redacted event that set its `redacted_by` (the chain walk, which runs first,
    fails otherwise), so those are the targets of the Redacted events after `since`."""
    found = set(conn.execute("SELECT DISTINCT app, user FROM events WHERE seq > ?", (since,)).fetchall())
    targets: set[int] = set()
    for (body,) in conn.execute(f"SELECT body FROM events WHERE seq > ? AND type = '{EVENT.Redacted}'"
                                " AND body IS NOT NULL", (since,)):
        targets.update(body_of(body).get("target_seqs") or ())
    if targets:
        found.update(conn.execute("SELECT DISTINCT app, user FROM events WHERE seq IN (SELECT value FROM json_each(?))",
                                  (orjson.dumps(sorted(targets)).decode(),)).fetchall())
    return found


def _unpack(entry: str | None, into: dict[int, tuple[int, str]]) -> None:
    """A recorded page's rows into `into`: rowid -> (partition, digest)."""
    for row in entry.split(";") if entry else ():
        rowid, part, digest = row.split(" ")
        into[int(rowid)] = (int(part), digest)


def _compare(conn, projector, suspects, log_wide: dict[str, int], vectors: bool,
             progress: Progress) -> tuple[bool, dict]:
    fresh = sqlite3.connect(":memory:", isolation_level=None)
    try:
        projector.create(fresh)
        engine = engine_of(conn)
        if not engine.attach_live(conn, fresh):
            return False, {}
        upto = head(conn)[0]
        fresh.execute("BEGIN")
        progress.stage("refolding the partitions changed since the last full check", len(suspects))
        with left_out(projector):
            projector.fold_into(fresh, iter_partitions(conn, suspects, upto))
        progress.update(len(suspects))
        kept = {}
        for projection in projector.log_wide:
            kept.update(_catch_up(conn, fresh, projection, log_wide, upto))
        fresh.execute("COMMIT")
        fresh.execute("CREATE TEMP TABLE suspects (app TEXT, user TEXT, PRIMARY KEY (app, user))")
        fresh.executemany("INSERT INTO temp.suspects VALUES (?, ?)", suspects)
        progress.stage("comparing them with the live tables", len(projector.all_tables))
        for table in projector.all_tables:
            progress.update(1)
            if table == VECTORS:
                continue
            if table in kept:
                if kept[table] is not None and not _same_tail(fresh, table, kept[table]):
                    return False, {}
            elif suspects and not _same_partitions(fresh, table):
                return False, {}
        # the vectors, as stored, against the open facts now proved (`projections.vectors.check`)
        found, meaning = check_vectors(conn, conn, recompute=vectors, progress=progress)
        return found is None, meaning
    finally:
        fresh.close()


def _catch_up(conn, fresh: sqlite3.Connection, projection, log_wide: dict[str, int], upto: int) -> dict:
    """table -> the first rowid refolded (None: the table is as recorded).  The Merkle tree keeps
    its hashes in append order (`pos`), so the proved prefix is copied, cut to a whole tree, and
    the rest is folded from the log after it; another log-wide projection is refolded whole."""
    if not any(t in log_wide for t in projection.tables):
        return {t: None for t in projection.tables}
    if projection.tables == ("merkle_hashes",) and hasattr(projection, "catch_up"):
        first = merkle.stored_count(_whole(log_wide["merkle_hashes"]))
        fresh.execute("INSERT INTO main.merkle_hashes SELECT pos, hash FROM live.merkle_hashes WHERE pos < ?",
                      (first,))
        projection.catch_up(fresh, upto, source=conn)
        return {"merkle_hashes": first}
    projection.rebuild(fresh, conn, upto)
    return {t: 0 for t in projection.tables}


def _whole(count: int) -> int:
    """The largest tree size whose stored hashes number at most `count`."""
    size = max(0, count) // 2 + max(0, count).bit_length()
    while size and merkle.stored_count(size) > count:
        size -= 1
    return size


def _grouped(fresh: sqlite3.Connection, table: str, columns: str, source: str, where: str = "") -> str:
    """The rows, each with how many times it occurs (a table with a primary key holds each once)."""
    if any(row[5] for row in fresh.execute(f"PRAGMA main.table_info({table})")):
        return f"SELECT {columns} FROM {source} {where}"
    return f"SELECT {columns}, count(*) FROM {source} {where} GROUP BY {columns}"


def _differ(fresh: sqlite3.Connection, one: str, other: str, args: tuple = ()) -> bool:
    return bool(fresh.execute(f"SELECT EXISTS ({one} EXCEPT {other}) OR EXISTS ({other} EXCEPT {one})",
                              args * 4).fetchone()[0])


def _columns(fresh: sqlite3.Connection, table: str, alias: str = "") -> str:
    info = fresh.execute(f"PRAGMA main.table_info({table})").fetchall()
    return ", ".join(f'{alias}"{row[1]}"' for row in info)


def _same_partitions(fresh: sqlite3.Connection, table: str) -> bool:
    """The suspect partitions' rows of `table`, with their multiplicity, are the same in the
    refold (main, which holds only theirs) and in the live file (read through its (app, user)
    index, one partition after another)."""
    rebuilt = _grouped(fresh, table, _columns(fresh, table), f"main.{table}")
    live = _grouped(fresh, table, _columns(fresh, table, "x."),
                    f"temp.suspects AS s CROSS JOIN live.{table} AS x ON x.app = s.app AND x.user = s.user")
    return not _differ(fresh, rebuilt, live)


def _same_tail(fresh: sqlite3.Connection, table: str, first: int) -> bool:
    """The rows from rowid `first` on are the same in the refold and the live file, and so are
    the tables' counts (the rows before `first` were copied from the live file, proved)."""
    columns = _columns(fresh, table)
    where = "WHERE rowid >= ?"
    rebuilt, live = (_grouped(fresh, table, columns, f"{side}.{table}", where) for side in ("main", "live"))
    if _differ(fresh, rebuilt, live, (first,)):
        return False
    return fresh.execute(f"SELECT (SELECT count(*) FROM main.{table}) = (SELECT count(*) FROM live.{table})"
                         ).fetchone()[0] == 1
