"""The event log's own reads, beside the fold's stream (`store.iter_events`): which partitions it
names, what a receipt scrubbed or caused, a partition's rows as a forget plans from them.

These read the `events` table and nothing else, so they belong to the store, below the
projections: a second backend implements them with its log (the projections' tables have their
own read functions in `projections/`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import orjson

from factledger.ledger.domain.eventrow import (
    CLOSES_HOLD,
    EVENT_COLUMNS,
    Event,
    EventTuple,
    body_of,
    decode,
    partitions_of,
)
from factledger.ledger.domain.events import EVENT
from factledger.ledger.errors import ProjectionMismatch
from factledger.ledger.store import chain
from factledger.ledger.store.eventlog import equal_filters
from factledger.ledger.store.scopes import each_user


def has_partition(conn: sqlite3.Connection, app: str, user: str) -> bool:
    return conn.execute("SELECT 1 FROM events WHERE app = ? AND user = ? LIMIT 1",
                        (app, user)).fetchone() is not None


def has_app(conn: sqlite3.Connection, app: str) -> bool:
    return conn.execute("SELECT 1 FROM events WHERE app = ? LIMIT 1", (app,)).fetchone() is not None


def apps(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT DISTINCT app FROM events ORDER BY app")]


def users(conn: sqlite3.Connection, app: str) -> list[str]:
    """Every `user` value the app's events carry (receipts' and pseudonyms included), sorted."""
    return [r[0] for r in conn.execute("SELECT DISTINCT user FROM events WHERE app = ? ORDER BY user", (app,))]


def partitions(conn: sqlite3.Connection, but_user: str) -> list[tuple[str, str]]:
    """Every (app, user) the log names, but those whose user is `but_user`."""
    return conn.execute("SELECT DISTINCT app, user FROM events WHERE user != ?", (but_user,)).fetchall()


def partition_counts(conn: sqlite3.Connection, app: str | None = None) -> list[tuple]:
    """(app, user, events, first recorded_at, last recorded_at) per partition (of one app, if given)."""
    where, args = ("WHERE app = ?", [app]) if app is not None else ("", [])
    return conn.execute(f"SELECT app, user, COUNT(*), MIN(recorded_at), MAX(recorded_at) FROM events {where}"
                        " GROUP BY app, user ORDER BY app, user", args).fetchall()


# The log's ends as scalar subqueries, for a reader that needs them in one statement with
# something else (recall's kept scopes: with the projections' position, `projections/recallcache.py`).
# The first event's hash names the ledger (the same for every copy of one log).
FIRST_HASH = "(SELECT hash FROM events WHERE seq = 1)"
LAST_SEQ = "(SELECT seq FROM events ORDER BY seq DESC LIMIT 1)"
LAST_HASH = "(SELECT hash FROM events ORDER BY seq DESC LIMIT 1)"


def first_recorded_at(conn: sqlite3.Connection) -> str | None:
    row = conn.execute("SELECT recorded_at FROM events ORDER BY seq LIMIT 1").fetchone()
    return row[0] if row else None


def count(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]


def redacting_seqs(conn: sqlite3.Connection, app: str, users: tuple[str, ...]) -> set[int]:
    """Seqs of the receipts that scrubbed any event of these users of an app."""
    return {r[0] for r in conn.execute(*each_user(
        "SELECT redacted_by FROM events WHERE app = ? AND user = ? AND redacted_by IS NOT NULL",
        users, lambda user: (app, user), union="UNION"))}


def receipt_tickets(conn: sqlite3.Connection) -> dict[int, str]:
    """seq -> the external reference a receipt was filed under (only receipts that have one)."""
    return {seq: ticket for seq, ticket in conn.execute(
        f"SELECT seq, json_extract(body, '$.ticket') FROM events WHERE type = '{EVENT.Redacted}'"
        " AND body IS NOT NULL") if ticket}


def event_at(conn: sqlite3.Connection, seq: int) -> tuple | None:
    """(seq, event_id, type, app, recorded_at, body, prev_hash, hash) of one event, or None."""
    return conn.execute("SELECT seq, event_id, type, app, recorded_at, body, prev_hash, hash"
                        " FROM events WHERE seq = ?", (seq,)).fetchone()


def bodies_at(conn: sqlite3.Connection, seqs: list[int]) -> dict[int, tuple[str, str | None]]:
    """seq -> (recorded_at, stored body) of the events at these seqs."""
    found: dict[int, tuple[str, str | None]] = {}
    wanted = sorted(set(seqs))
    for start in range(0, len(wanted), 500):
        chunk = wanted[start:start + 500]
        found.update((seq, (at, body)) for seq, at, body in conn.execute(
            f"SELECT seq, recorded_at, body FROM events WHERE seq IN ({', '.join('?' for _ in chunk)})", chunk))
    return found


def statement_bodies(conn: sqlite3.Connection, seqs: list[int]) -> dict[int, dict]:
    """seq -> the body recorded there (a fact's statements, which a split divides); none scrubbed."""
    return {seq: body_of(body) for seq, (_at, body) in bodies_at(conn, seqs).items() if body is not None}


def caused_by(conn: sqlite3.Connection, seq: int) -> list[int]:
    """Seqs of the events recorded because of the event at `seq` (their body's `cause`)."""
    return [r[0] for r in conn.execute(
        "SELECT seq FROM events WHERE seq > ? AND CAST(json_extract(body, '$.cause') AS BIGINT) = ?"
        " ORDER BY seq", (seq, seq))]


def scrubbed_by(conn: sqlite3.Connection, seq: int) -> int:
    """How many events the receipt at `seq` scrubbed (as the log holds them now)."""
    return conn.execute("SELECT COUNT(*) FROM events WHERE redacted_by = ?", (seq,)).fetchone()[0]


def partition_rows(conn: sqlite3.Connection, app: str, user: str) -> list[tuple]:
    """(seq, type, body, redacted_by) of every event of a partition, in seq order, bodies as stored."""
    return conn.execute("SELECT seq, type, body, redacted_by FROM events WHERE app = ? AND user = ?"
                        " ORDER BY seq", (app, user)).fetchall()


def candidate_bodies(conn: sqlite3.Connection, app: str | None = None,
                     user: str | None = None) -> Iterator[tuple[str, str, dict]]:
    """(app, user, body) of every held or rejected candidate not yet scrubbed (of one app or
    partition, if given): what retention looks through beside the facts."""
    where, args = equal_filters(app=app, user=user)
    for row_app, row_user, body in conn.execute(
            f"SELECT app, user, body FROM events WHERE type IN ('{EVENT.CandidateHeld}', '{EVENT.CandidateRejected}')"
            " AND body IS NOT NULL" + where, args):
        yield row_app, row_user, body_of(body)


def ingested_bodies(conn: sqlite3.Connection, app: str, user: str, session: str) -> list[str]:
    """The stored bodies of a session's surviving `SessionIngested` events, in seq order."""
    return [r[0] for r in conn.execute(
        f"SELECT body FROM events WHERE app = ? AND user = ? AND type = '{EVENT.SessionIngested}'"
        " AND body IS NOT NULL AND json_extract(body, '$.session') = ? ORDER BY seq", (app, user, session))]


def iter_partitioned(conn: sqlite3.Connection) -> Iterator[list[EventTuple]]:
    """The whole log in `(app, user, seq)` order, streamed through the `events_partition` index, a
    list of events a partition (a full rebuild folds it partition by partition)."""
    return partitions_of(conn.execute(f"SELECT {EVENT_COLUMNS} FROM events INDEXED BY events_partition"
                                      " ORDER BY app, user, seq"))


def iter_partition_range(conn: sqlite3.Connection, first: tuple[str, str], last: tuple[str, str],
                         upto: int) -> Iterator[Event]:
    """The partitions from `first` to `last` (inclusive, in `(app, user)` order) up to seq `upto`,
    in `(app, user, seq)` order: one worker's share of a parallel rebuild, one index range scan."""
    cursor = conn.execute(f"SELECT {EVENT_COLUMNS} FROM events INDEXED BY events_partition"
                          " WHERE (app, user) >= (?, ?) AND (app, user) <= (?, ?) AND seq <= ?"
                          " ORDER BY app, user, seq", (*first, *last, upto))
    return map(decode, cursor)


def named_in_bodies(fields: tuple[str, ...], lists: tuple[str, ...]) -> str:
    """A SELECT of `(value, seq, app, user, type, field)` over the log up to seq `?` (SQLite's
    JSON functions, the body parsed once an event): each of `fields` an event's body holds with a
    value Python reads as true in `body.get(field)` (a non-empty text, a number other than zero,
    true), and each item of each of `lists` the body holds as a list.  A redacted body (NULL)
    names nothing.  The ledger writes bodies as canonical JSON objects (no repeated key), which
    this and `orjson` read alike.  For a projection whose rows are these, written in one
    statement by a full rebuild (`projections/provenance.py`)."""
    named = ", ".join(f"'{name}'" for name in fields + lists)
    singles = ", ".join(f"'{name}'" for name in fields)
    many = ", ".join(f"'{name}'" for name in lists)
    return (f"WITH named(seq, app, user, type, field, value, kind) AS ("
            " SELECT e.seq, e.app, e.user, e.type, j.key, j.value, j.type FROM events e, json_each(e.body) j"
            f" WHERE e.seq <= ? AND e.body IS NOT NULL AND j.key IN ({named}))"
            f" SELECT value, seq, app, user, type, field FROM named WHERE field IN ({singles})"
            " AND ((kind = 'text' AND value != '') OR (kind IN ('integer', 'real') AND value != 0) OR kind = 'true')"
            " UNION ALL SELECT item.value, n.seq, n.app, n.user, n.type, n.field FROM named n, json_each(n.value) item"
            f" WHERE n.field IN ({many}) AND n.kind = 'array'")


def partition_sizes(conn: sqlite3.Connection, upto: int) -> list[tuple[str, str, int]]:
    """(app, user, events up to seq `upto`) of every partition, in `(app, user)` order: what a
    parallel rebuild splits into shares."""
    return conn.execute("SELECT app, user, COUNT(*) FROM events INDEXED BY events_partition WHERE seq <= ?"
                        " GROUP BY app, user ORDER BY app, user", (upto,)).fetchall()


def chain_hashes(conn: sqlite3.Connection, after: int, upto: int | None = None) -> Iterator[tuple[int, str]]:
    """(seq, chain hash) of every event after seq `after` (up to `upto`), in seq order, streamed."""
    args = (after,) if upto is None else (after, upto)
    return conn.execute("SELECT seq, hash FROM events WHERE seq > ?" + ("" if upto is None else " AND seq <= ?")
                        + " ORDER BY seq", args)


LOG_KEYS = ("seq", "event_id", "type", "app", "user", "recorded_at", "body", "commitment",
            "prev_hash", "hash", "redacted_by")


def log(conn: sqlite3.Connection, *, app: str | None = None, user: str | None = None,
        type: str | None = None, after: int = 0, limit: int | None = None) -> list[dict]:
    """The log's rows after seq `after` (of one partition or type, if given), bodies decoded."""
    where, args = equal_filters(app=app, user=user, type=type)
    sql = f"SELECT {', '.join(LOG_KEYS)} FROM events WHERE seq > ?" + where + " ORDER BY seq"
    args = [after, *args]
    if limit is not None:
        sql += " LIMIT ?"
        args.append(limit)
    out = []
    for row in conn.execute(sql, args):
        item = dict(zip(LOG_KEYS, row))
        item["body"] = body_of(item["body"])
        out.append(item)
    return out


def rows_at(conn: sqlite3.Connection, seqs: list[int]) -> dict[int, tuple[str, str, str, str | None]]:
    """seq -> (event_id, type, recorded_at, stored body) of the events at these seqs."""
    found: dict[int, tuple[str, str, str, str | None]] = {}
    wanted = sorted(set(seqs))
    for start in range(0, len(wanted), 500):
        chunk = wanted[start:start + 500]
        found.update((seq, rest) for seq, *rest in conn.execute(
            f"SELECT seq, event_id, type, recorded_at, body FROM events WHERE seq IN ({', '.join('?' for _ in chunk)})",
            chunk))
    return {seq: tuple(rest) for seq, rest in found.items()}


def counts(conn: sqlite3.Connection) -> dict:
    """The log's size: events, by type, partitions named, events redacted."""
    one = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
    return {"events": one("SELECT COUNT(*) FROM events"),
            "by_type": dict(conn.execute("SELECT type, COUNT(*) FROM events GROUP BY type ORDER BY type")),
            "partitions": one("SELECT COUNT(*) FROM (SELECT DISTINCT app, user FROM events) AS partitions"),
            "redacted": one("SELECT COUNT(*) FROM events WHERE redacted_by IS NOT NULL")}


def checked_events(conn: sqlite3.Connection, seqs: list[int], table: str) -> dict[int, Event]:
    """seq -> the event at each seq, its body checked against its commitment (None once redacted
    by a named redaction): what an action reads when it must trust the log, not a projection row
    of `table` that names these seqs.  A seq the log does not hold is left out; a body that does
    not match its commitment, or a missing body no redaction names, raises `ProjectionMismatch`."""
    found: dict[int, Event] = {}
    wanted = sorted(set(seqs))
    for start in range(0, len(wanted), 500):
        chunk = wanted[start:start + 500]
        for seq, event_id, type_, app, user, recorded_at, body, salt, commit, redacted_by in conn.execute(
                "SELECT seq, event_id, type, app, user, recorded_at, body, salt, commitment, redacted_by"
                f" FROM events WHERE seq IN ({', '.join('?' for _ in chunk)})", chunk):
            if body is None:
                if redacted_by is None:
                    raise ProjectionMismatch(table, None, seq, "the event's body is missing and no redaction names it")
                found[seq] = Event(seq, event_id, type_, app, user, recorded_at, None)
                continue
            raw = body.encode() if isinstance(body, str) else bytes(body)
            if salt is None or chain.commitment(bytes(salt), raw) != commit:
                raise ProjectionMismatch(table, None, seq, "the event's body does not match its commitment")
            data = body_of(raw)
            if not isinstance(data, dict) or data.get("type") != type_ or data.get("app") != app \
                    or data.get("user") != user:
                raise ProjectionMismatch(table, None, seq, "the event's envelope disagrees with its body")
            found[seq] = Event(seq, event_id, type_, app, user, recorded_at, data)
    return found


def hold_closings(conn: sqlite3.Connection, app: str, user: str) -> list[int]:
    """The seqs of a partition's events that name a held candidate's `hold_id` (one that closes
    it: `eventrow.CLOSES_HOLD`), for checking the queue's statuses against the log."""
    return [row[0] for row in conn.execute(
        "SELECT seq FROM events WHERE app = ? AND user = ? AND type IN ("
        + ", ".join(f"'{t}'" for t in CLOSES_HOLD) + ") AND json_extract(body, '$.hold_id') IS NOT NULL"
        " ORDER BY seq", (app, user))]


def owed_meaning_checks(conn: sqlite3.Connection) -> list[tuple[int, dict]]:
    """(seq, body) of each observation whose dedup meaning check an encoder failure deferred
    (`FactObserved.unchecked`) and that no `MeaningChecked` has answered yet, in log order.  Two
    scans of the log: asked only after a failure marked the ledger, or by `ingest --retry-failed`."""
    done = {row[0] for row in conn.execute(
        f"SELECT json_extract(body, '$.fact_id') FROM events WHERE type = '{EVENT.MeaningChecked}'"
        " AND body IS NOT NULL")}
    owed = []
    for seq, body in conn.execute(
            f"SELECT seq, body FROM events WHERE type = '{EVENT.FactObserved}' AND body IS NOT NULL"
            " AND json_extract(body, '$.unchecked') IS NOT NULL ORDER BY seq"):
        data = body_of(body)
        if data.get("unchecked") and data["fact_id"] not in done:
            owed.append((seq, data))
    return owed


def partition_mark(conn: sqlite3.Connection, app: str, user: str) -> tuple[int, str] | None:
    """(seq, chain hash) of a partition's last event, or None: what a fold of the partition kept
    in memory is checked against (the hash chains every event before it)."""
    row = conn.execute("SELECT seq, hash FROM events WHERE app = ? AND user = ? ORDER BY seq DESC LIMIT 1",
                       (app, user)).fetchone()
    return (row[0], row[1]) if row else None


def hash_at(conn: sqlite3.Connection, seq: int) -> str | None:
    row = conn.execute("SELECT hash FROM events WHERE seq = ?", (seq,)).fetchone()
    return row[0] if row else None


def hashes_at(conn: sqlite3.Connection, seqs: list[int]) -> dict[int, str]:
    """`hash_at` of many seqs, in one statement per `MARKS` of them (a seq not held is left out)."""
    seqs = sorted(set(seqs))
    out: dict[int, str] = {}
    for start in range(0, len(seqs), MARKS):
        chunk = seqs[start:start + MARKS]
        out.update(conn.execute(f"SELECT seq, hash FROM events WHERE seq IN ({', '.join('?' for _ in chunk)})",
                                chunk).fetchall())
    return out


def partition_events_after(conn: sqlite3.Connection, app: str, user: str, after: int, type_: str,
                           table: str) -> list[Event]:
    """A partition's events of one type after `after`, in seq order, each body checked against its
    commitment (`checked_events`; a scrubbed one has no body)."""
    seqs = [row[0] for row in conn.execute(
        "SELECT seq FROM events WHERE app = ? AND user = ? AND seq > ? AND type = ? ORDER BY seq",
        (app, user, after, type_))]
    found = checked_events(conn, seqs, table)
    return [found[seq] for seq in seqs if seq in found]


# Many partitions at once, for a batch's keys: one statement per MARKS partitions; up to
# FEW_MARKS of them, one read by key each.
MARKS = 200
FEW_MARKS = 4


def partition_marks(conn: sqlite3.Connection,
                    partitions: list[tuple[str, str]]) -> dict[tuple[str, str], tuple[int, str]]:
    """`partition_mark` of each partition (one with no event is left out), in a few statements.
    A few partitions (a single observation's key and its guards) are read each by its key: on a
    partitioned PostgreSQL log the planner then reads one leaf, where the join by seq plans all
    of them, and on a plain one the join's plan took 4-5 ms at 20,000 events where the reads by
    key take a round trip each (docs/scale.md)."""
    out: dict[tuple[str, str], tuple[int, str]] = {}
    if len(partitions) <= FEW_MARKS:
        for partition in partitions:
            mark = partition_mark(conn, *partition)
            if mark:
                out[partition] = mark
        return out
    for start in range(0, len(partitions), MARKS):
        chunk = partitions[start:start + MARKS]
        keys = ", ".join("(?,?)" for _ in chunk)
        for app, user, seq, hash_ in conn.execute(
                f"WITH k(a, u) AS (VALUES {keys}) SELECT k.a, k.u, e.seq, e.hash FROM k JOIN events e"
                " ON e.seq = (SELECT MAX(seq) FROM events WHERE app = k.a AND user = k.u)",
                [v for p in chunk for v in p]):
            out[(app, user)] = (seq, hash_)
    return out


def partitions_bodies_from(conn: sqlite3.Connection, wanted: list[tuple[tuple[str, str], int]],
                           ) -> dict[tuple[str, str], list[tuple[int, str, dict | None]]]:
    """Each (partition, from seq): partition -> (seq, chain hash, body or None once redacted) of
    its events from that seq on (the event at it included), in seq order; one statement per
    `MARKS` partitions.  What the write path's kept key checks read to see which keys the log
    touched since they were kept (`ledger.audit.checkfolds`)."""
    out: dict[tuple[str, str], list[tuple[int, str, dict | None]]] = {}
    for start in range(0, len(wanted), MARKS):
        chunk = wanted[start:start + MARKS]
        keys = ", ".join("(?,?,?)" for _ in chunk)
        for app, user, seq, hash_, body in conn.execute(
                f"WITH k(a, u, s) AS (VALUES {keys}) SELECT e.app, e.user, e.seq, e.hash, e.body FROM k"
                " JOIN events e ON e.app = k.a AND e.user = k.u AND e.seq >= k.s ORDER BY e.seq",
                [v for (a, u), after in chunk for v in (a, u, after)]):
            out.setdefault((app, user), []).append((seq, hash_, body_of(body)))
    return out


def partitions_events_after(conn: sqlite3.Connection, wanted: list[tuple[tuple[str, str], int]], type_: str,
                            table: str) -> dict[tuple[str, str], list[Event]]:
    """`partition_events_after` of each (partition, after), in a few statements: partition ->
    its events of one type after its seq, in seq order, each body checked (one partition by its
    key, as `partition_marks` reads it)."""
    seqs: dict[tuple[str, str], list[int]] = {}
    if len(wanted) == 1:
        ((app, user), after), = wanted
        found_seqs = [row[0] for row in conn.execute(
            "SELECT seq FROM events WHERE app = ? AND user = ? AND seq > ? AND type = ? ORDER BY seq",
            (app, user, after, type_))]
        if found_seqs:
            seqs[(app, user)] = found_seqs
        wanted = []
    for start in range(0, len(wanted), MARKS):
        chunk = wanted[start:start + MARKS]
        keys = ", ".join("(?,?,?)" for _ in chunk)
        for seq, app, user in conn.execute(
                f"WITH k(a, u, s) AS (VALUES {keys}) SELECT e.seq, e.app, e.user FROM k JOIN events e"
                " ON e.app = k.a AND e.user = k.u AND e.seq > k.s WHERE e.type = ? ORDER BY e.seq",
                [*(v for (a, u), after in chunk for v in (a, u, after)), type_]):
            seqs.setdefault((app, user), []).append(seq)
    found = checked_events(conn, [s for group in seqs.values() for s in group], table)
    return {p: [found[s] for s in group if s in found] for p, group in seqs.items()}


# What a retention run chooses its partitions by, read from the log (a projection row deleted or
# edited must not make a run skip a partition that holds something past its retention).  Each is a
# superset the run's plans (`ledger.forget.targets.plan`, from the partition's events) narrow.

def partitions_observed_before(conn: sqlite3.Connection, cutoffs: dict[str, str], app: str | None = None,
                               user: str | None = None) -> set[tuple[str, str]]:
    """Partitions whose log holds a surviving observation of a predicate said before that
    predicate's cutoff (`cutoffs`: predicate -> cutoff): a fact expires only when its latest
    statement was said before the cutoff, so its first was.  One pass over the log for every
    policy, not one a predicate."""
    if not cutoffs:
        return set()
    where, args = equal_filters(app=app, user=user)
    policies = ", ".join("(?, ?)" for _ in cutoffs)
    return {(a, u) for a, u in conn.execute(
        f"WITH policies(predicate, cutoff) AS (VALUES {policies})"
        " SELECT DISTINCT app, user FROM events JOIN policies"
        " ON json_extract(body, '$.predicate') = policies.predicate"
        " AND json_extract(body, '$.said_at') < policies.cutoff"
        f" WHERE type = '{EVENT.FactObserved}' AND body IS NOT NULL" + where,
        [value for pair in cutoffs.items() for value in pair] + list(args))}


def partitions_serving_before(conn: sqlite3.Connection, cutoff: str, app: str | None = None,
                              user: str | None = None) -> set[tuple[str, str]]:
    """Partitions whose log holds a surviving serve record served before `cutoff`."""
    where, args = equal_filters(app=app, user=user)
    return {(a, u) for a, u in conn.execute(
        f"SELECT DISTINCT app, user FROM events WHERE type = '{EVENT.FactsServed}' AND body IS NOT NULL"
        " AND json_extract(body, '$.served_at') < ?" + where, [cutoff, *args])}


def predicates_observed_as(conn: sqlite3.Connection, sensitivity: str) -> set[str]:
    """Every predicate a surviving observation of this sensitivity names."""
    return {row[0] for row in conn.execute(
        f"SELECT DISTINCT json_extract(body, '$.predicate') FROM events WHERE type = '{EVENT.FactObserved}'"
        " AND body IS NOT NULL AND json_extract(body, '$.sensitivity') = ?", (sensitivity,))}


def serves_naming(conn: sqlite3.Connection, app: str, but_user: str, fact_ids: list[str]) -> dict[int, str]:
    """seq -> partition user of the app's surviving serve records outside `but_user` whose body
    names one of these facts: what a forget of a `_domain` fact must scrub, found in the log (a
    `served_facts` row deleted must not leave a record holding the forgotten text's hash).  One
    read of the app's serve records, each body checked against its commitment."""
    wanted = set(fact_ids)
    seqs = [row[0] for row in conn.execute(
        f"SELECT seq FROM events WHERE app = ? AND user <> ? AND type = '{EVENT.FactsServed}' AND body IS NOT NULL",
        (app, but_user))]
    found: dict[int, str] = {}
    for event in checked_events(conn, seqs, "served_facts").values():
        if event.body is not None and any(isinstance(f, dict) and f.get("fact_id") in wanted
                                          for f in event.body.get("facts") or ()):
            found[event.seq] = event.user
    return found


def iter_partitions(conn: sqlite3.Connection, partitions: list[tuple[str, str]], upto: int) -> Iterator[Event]:
    """The events of these partitions up to seq `upto`, in `(app, user, seq)` order, one statement
    (a verify's refold of what changed since its record)."""
    listed = orjson.dumps(partitions).decode()
    cursor = conn.execute(f"SELECT {EVENT_COLUMNS} FROM events INDEXED BY events_partition"
                          " WHERE (app, user) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?)) AND seq <= ?"
                          " ORDER BY app, user, seq", (listed, upto))
    return map(decode, cursor)
