"""Verified reads: a fact leaves the ledger only if the log says it.

Every fact the facade's reads hand out (`facts`, `history`, `why`, `recall`: so the CLI, the web
view, MCP and the ADK service) passes `check`: the events that touched the served facts (found by
`fact_events`, with the facts a dispute or split links in) are read, their bodies checked against
their commitments, folded with the facts fold itself, and every served field compared with the
interval the read claims.  The cost is per served fact, not per event of the log.  A
disagreement raises `ProjectionMismatch` naming table, fact, field and event; no row is dropped.
What a read cannot see (a fact missing from every table) `verify` finds by a full rebuild.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import orjson

from factledger.ledger.domain.eventrow import Event, body_of
from factledger.ledger.domain.events import EVENT
from factledger.ledger.domain.late import PAST_STATES
from factledger.ledger.domain.statement import heard_negation
from factledger.ledger.domain.textindex import document_terms
from factledger.ledger.errors import ProjectionMismatch
from factledger.ledger.store import chain
from factledger.ledger.store.reads import FIRST_HASH, LAST_HASH, LAST_SEQ, partition_marks
from factledger.ledger.store.scopes import summed_counts
from factledger.ledger.vocabulary.words import ALL_APPS, ERASURES_USER, OPEN_STATUSES
from factledger.projections.factbatch import FactBatch
from factledger.projections.factcolumns import SNAPSHOT_COLUMNS
from factledger.projections.history import HISTORY_COLUMNS
from factledger.projections.logkept import folded_many
from factledger.projections.runner import FOLDED_TO

CHUNK = 500
MAX_LINKED = 20_000         # facts folded for one answer, linked ones included (a guard, not a limit in use)

# The served fields compared with the log (a served dict is compared on those it has).
_COMPARED = ("app", "user", "subject", "predicate", "value", "status", "basis", "confidence",
             "sensitivity", "said_at", "recorded_at", "confirmed_at", "confirmed_by", "session",
             "evidence_event", "quote", "author", "disputes", "effective_date")
_INTERVAL = ("valid_from", "valid_to", "recorded_from", "recorded_to", "ended_by", "reason")


def check(conn, facts: Iterable[dict], *, table: str, at: str | None = None,
          history: bool = False, folds=None) -> dict[str, dict]:
    """Raise `ProjectionMismatch` unless every fact dict is what the log says.

    `at`: the facts were read as held at that transaction time (`--as-of`); otherwise they are
    the facts' open intervals.  `history`: the dicts are intervals (each names its
    `recorded_from`), and every interval of every fact named must be among them.  Returns the
    interval each fact was checked against, by fact id (the last one, for `history`).  `folds`:
    the write path's kept folds (`checkfolds.CheckFolds`), which give the intervals instead."""
    facts = [f for f in facts if f]
    if not facts:
        return {}
    checked: dict[str, dict] = {}
    ids = list(dict.fromkeys(f["fact_id"] for f in facts))
    where = {f["fact_id"]: (f["app"], f["user"]) for f in facts
             if isinstance(f.get("app"), str) and isinstance(f.get("user"), str)}
    intervals = folds.intervals(conn, ids, table, where) if folds is not None else _expected(conn, ids, table, where)[0]
    for fact in facts:
        fact_id = fact["fact_id"]
        found = intervals.get(fact_id)
        if not found:
            raise ProjectionMismatch(table, fact_id, fact.get("observed_seq"), "no event of the log establishes it")
        interval = _served_interval(fact, found, at, history)
        if interval is None:
            raise ProjectionMismatch(table, fact_id, found[-1]["from_seq"],
                                     "the log does not hold it in that state at that time")
        _compare(table, fact, interval)
        checked[fact_id] = interval
    if history:
        served = {(f["fact_id"], f.get("recorded_from")) for f in facts}
        for fact_id in ids:
            for interval in intervals.get(fact_id, ()):
                if (fact_id, interval["recorded_from"]) not in served:
                    raise ProjectionMismatch(table, fact_id, interval["from_seq"],
                                             "an interval the log holds is missing")
    return checked


def check_open(conn, app: str, user: str, served_ids: set[str], *, subject: str | None = None,
               predicate: str | None = None, include_sensitive: bool = False,
               kinds: tuple[str, ...] | None = None) -> None:
    """The open facts of a partition as `facts_current` serves them (under the same filters) must
    be the open intervals of `fact_history`: a row deleted from either, added to either, or moved
    out of the caller's sight (a sensitivity raised) is found here."""
    sql = ("SELECT fact_id FROM fact_history WHERE app = ? AND user = ? AND recorded_to IS NULL"
           " AND state IN ('current', 'disputed')")
    args: list = [app, user]
    if subject:
        sql, args = sql + " AND subject = ?", [*args, subject]
    if predicate:
        sql, args = sql + " AND predicate = ?", [*args, predicate]
    if not include_sensitive:
        sql += " AND sensitivity != 'health'"
    if kinds:
        sql, args = sql + f" AND kind IN ({', '.join('?' for _ in kinds)})", [*args, *kinds]
    held = {row[0] for row in conn.execute(sql, args)}
    for fact_id in sorted(held - served_ids):
        raise ProjectionMismatch("facts_current", fact_id, None, "an open fact of the log is missing")
    for fact_id in sorted(served_ids - held):
        raise ProjectionMismatch("facts_current", fact_id, None, "the fact is not open in the log")


def check_known(conn, app: str, user: str) -> None:
    """Every fact the partition's events name has intervals in `fact_history`, and no other: a
    read of past states (`history`, `facts --as-of/--valid-at`) serves whichever intervals are
    there, so a fact whose only interval was deleted would vanish with no notice.  Two indexed
    reads of the partition's fact ids (`fact_events` and `fact_history`); a row deleted from both
    is `verify`'s to find."""
    named = {row[0] for row in conn.execute("SELECT DISTINCT fact_id FROM fact_events WHERE app = ? AND user = ?",
                                            (app, user))}
    held = {row[0] for row in conn.execute("SELECT DISTINCT fact_id FROM fact_history WHERE app = ? AND user = ?",
                                           (app, user))}
    for fact_id in sorted(named - held):
        raise ProjectionMismatch("fact_history", fact_id, None, "the log's events name the fact and it has no interval")
    for fact_id in sorted(held - named):
        raise ProjectionMismatch("fact_history", fact_id, None, "no event of the log names the fact")


def check_touching(conn, fact_id: str, events: list[dict]) -> None:
    """The events `why` lists for a fact are the ones the log's fold of it read, and each names
    the fact (`fact_events` can be added to or deleted from, as any table)."""
    _intervals, touched = _expected(conn, [fact_id], "fact_events")
    listed = {event["seq"] for event in events}
    expected = touched.get(fact_id, set())
    if listed != expected:
        seq = min(listed ^ expected)
        raise ProjectionMismatch("fact_events", fact_id, seq, "the events listed are not the ones folded for it")
    for event in events:
        body = event.get("body")
        if body is None:
            continue
        named = {body.get(f) for f in ("fact_id", "by_fact_id", "disputes", "winner_id", "split_id")}
        if fact_id not in named and fact_id not in (body.get("loser_ids") or ()):
            raise ProjectionMismatch("fact_events", fact_id, event["seq"],
                                     "it names an event that does not touch the fact")


def check_current(conn, fact_id: str) -> None:
    """A fact's `facts_current` row, if it has one, is its open interval as the log says (`why`
    answers from `fact_history`, and says so when the row recall and `facts` serve is forged)."""
    cursor = conn.execute(f"SELECT {', '.join(SNAPSHOT_COLUMNS)} FROM facts_current WHERE fact_id = ?", (fact_id,))
    row = cursor.fetchone()
    if row is not None:
        fact = {name: value for name, value in zip(SNAPSHOT_COLUMNS, row) if name in _COMPARED or name == "fact_id"}
        check(conn, [fact], table="facts_current")


def check_key_rows(conn, key: tuple, facts: list[dict], open_ids: set[str], *, folds=None) -> None:
    """The decision table's read of a key (`projections.facts.FactsProjection.key_view`): each
    stored open fact it is about to decide against (`facts`, rows of `facts_current` with their
    open interval's `recorded_from`) is what the log says, and the key's open set is the one
    `fact_history` holds: a forged row cannot make a new value look like a restatement, a dispute
    or a supersession.  Called once per key per write transaction, before the first decision.
    `folds`: the ledger's kept folds of the facts (`checkfolds.CheckFolds`)."""
    app, user, subject, predicate = key
    kept = (*_COMPARED, "fact_id", "recorded_from")
    if folds is not None and facts:
        folds.guard(conn, [app])
    check(conn, [{name: value for name, value in fact.items() if name in kept} for fact in facts],
          table="facts_current", folds=folds)
    check_open(conn, app, user, open_ids, subject=subject, predicate=predicate, include_sensitive=True)


def check_keys_rows(conn, items: list[tuple[tuple, list[dict], set[str]]],
                    past: list[tuple[tuple, list[dict], set[str], set[str]]] = (), *, folds=None) -> None:
    """`check_key_rows` for many keys (a batch's, read up front), and `check_key_past` for those in
    `past`: every key's stored facts folded from the log in one `check`, and the keys' intervals
    read from `fact_history` in one statement per `CHUNK` keys, so a batch pays a few statements,
    not a few per key.  `folds`: the ledger's kept folds of the facts (`checkfolds.CheckFolds`)."""
    kept = (*_COMPARED, "fact_id", "recorded_from")
    if folds is not None:
        folds.guard(conn, dict.fromkeys(key[0] for key, *_rest in [*items, *past]))
    check(conn, [{name: value for name, value in fact.items() if name in kept}
                 for _key, facts, _ids in items for fact in facts], table="facts_current", folds=folds)
    held, filed = _intervals_of_keys(conn, [key for key, _facts, _ids in items] +
                                     [key for key, *_rest in past])
    for key, _facts, open_ids in items:
        found = held.get(key, set())
        for fact_id in sorted(found - open_ids):
            raise ProjectionMismatch("facts_current", fact_id, None, "an open fact of the log is missing")
        for fact_id in sorted(open_ids - found):
            raise ProjectionMismatch("facts_current", fact_id, None, "the fact is not open in the log")
    if not past:
        return
    check(conn, [{name: value for name, value in fact.items() if name in kept}
                 for _key, facts, _ids, _changed in past for fact in facts], table="fact_history", folds=folds)
    current_ids = {key: open_ids for key, _facts, open_ids in items}
    unfiled = _unfiled_many(conn, list(dict.fromkeys((key[0], key[1]) for key, *_rest in past)))
    wanted: dict[tuple, list[str]] = {}
    for key, _facts, past_ids, _changed in past:
        on_key = [f for f in filed.get(key, ()) if f not in current_ids.get(key, ())]
        wanted[key] = list(dict.fromkeys([*on_key, *sorted(past_ids), *unfiled.get((key[0], key[1]), ())]))
    ids = list(dict.fromkeys(f for ids in wanted.values() for f in ids))
    where = {f: (key[0], key[1]) for key, *_rest in past for f in wanted[key]}
    intervals = folds.intervals(conn, ids, "fact_history", where) if folds is not None else _expected(
        conn, ids, "fact_history")[0]
    for key, _facts, past_ids, changed in past:
        _app, _user, subject, predicate = key
        logged = {fact_id for fact_id in wanted[key]
                  if any(i["recorded_to"] is None and i["state"] in PAST_STATES and i["subject"] == subject
                         and i["predicate"] == predicate for i in intervals.get(fact_id, ()))}
        for fact_id in sorted((logged - past_ids) - changed):
            raise ProjectionMismatch("fact_history", fact_id, None, "a closed fact of the key in the log is missing")
        for fact_id in sorted((past_ids - logged) - changed):
            raise ProjectionMismatch("fact_history", fact_id, None, "the log does not close the fact on the key")


def _intervals_of_keys(conn, keys: list[tuple]) -> tuple[dict[tuple, set[str]], dict[tuple, list[str]]]:
    """key -> the fact ids `fact_history` holds open on it (`check_open` of one key), and key ->
    every fact id it files under the key, for many keys."""
    held: dict[tuple, set[str]] = {}
    filed: dict[tuple, list[str]] = {}
    keys = list(dict.fromkeys(keys))
    for start in range(0, len(keys), CHUNK):
        chunk = keys[start:start + CHUNK]
        values = ", ".join("(?,?,?,?)" for _ in chunk)
        # every interval of the keys, the open ones kept here: with `recorded_to IS NULL` in the
        # statement, PostgreSQL's planner read the whole open-interval index (fact_id's) for it
        for app, user, subject, predicate, fact_id, recorded_to, state in conn.execute(
                f"WITH k(a, u, s, p) AS (VALUES {values}) SELECT h.app, h.user, h.subject, h.predicate, h.fact_id,"
                " h.recorded_to, h.state FROM k JOIN fact_history h ON h.app = k.a AND h.user = k.u"
                " AND h.subject = k.s AND h.predicate = k.p", [v for key in chunk for v in key]):
            key = (app, user, subject, predicate)
            filed.setdefault(key, []).append(fact_id)
            if recorded_to is None and state in OPEN_STATUSES:
                held.setdefault(key, set()).add(fact_id)
    return held, {key: list(dict.fromkeys(ids)) for key, ids in filed.items()}


def _unfiled_many(conn, partitions: list[tuple[str, str]]) -> dict[tuple[str, str], list[str]]:
    """`_unfiled` of many partitions, in two statements per `CHUNK` of them."""
    named: dict[tuple[str, str], set[str]] = {}
    held: dict[tuple[str, str], set[str]] = {}
    for start in range(0, len(partitions), CHUNK):
        chunk = partitions[start:start + CHUNK]
        values = ", ".join("(?,?)" for _ in chunk)
        args = [v for p in chunk for v in p]
        for table, into in (("fact_events", named), ("fact_history", held)):
            for app, user, fact_id in conn.execute(
                    f"WITH k(a, u) AS (VALUES {values}) SELECT DISTINCT t.app, t.user, t.fact_id FROM k"
                    f" JOIN {table} t ON t.app = k.a AND t.user = k.u", args):
                into.setdefault((app, user), set()).add(fact_id)
    return {p: sorted(found - held.get(p, set())) for p, found in named.items() if found - held.get(p, set())}


def check_key_past(conn, key: tuple, facts: list[dict], past_ids: set[str], changed: set[str]) -> None:
    """The decision table's read of a key's past (`projections.history.KEY_PAST`, read for a
    statement said before the key's current value): each stored closed fact not yet folded in
    this transaction (`facts`) is the log's, and the key's closed facts (`past_ids`) are the ones
    the log's folds of the key's facts close (`changed`: facts this transaction changed, whose
    rows are not written yet).  The key's facts are the ones `fact_history` files under it, and
    the partition's facts `fact_events` names with no interval left: a fact whose rows were all
    deleted is found (`_unfiled`).  Once per key per write transaction, when the
    past is read."""
    app, user, subject, predicate = key
    kept = (*_COMPARED, "fact_id", "recorded_from")
    check(conn, [{name: value for name, value in fact.items() if name in kept} for fact in facts],
          table="fact_history")
    # the key's open facts are not folded again: `check_key_rows` checked them (and the key's
    # open set) before the table read the key's view, in this transaction
    filed = [row[0] for row in conn.execute(
        "SELECT DISTINCT fact_id FROM fact_history WHERE app = ? AND user = ? AND subject = ? AND predicate = ?"
        " AND fact_id NOT IN (SELECT fact_id FROM facts_current WHERE app = ? AND user = ? AND subject = ?"
        " AND predicate = ?)", (*key, *key))]
    intervals, _ = _expected(conn, list(dict.fromkeys([*filed, *sorted(past_ids), *_unfiled(conn, app, user)])),
                             "fact_history")
    logged = {fact_id for fact_id, found in intervals.items()
              if any(i["recorded_to"] is None and i["state"] in PAST_STATES and i["subject"] == subject
                     and i["predicate"] == predicate for i in found)}
    for fact_id in sorted((logged - past_ids) - changed):
        raise ProjectionMismatch("fact_history", fact_id, None, "a closed fact of the key in the log is missing")
    for fact_id in sorted((past_ids - logged) - changed):
        raise ProjectionMismatch("fact_history", fact_id, None, "the log does not close the fact on the key")


def _unfiled(conn, app: str, user: str) -> list[str]:
    """The partition's facts `fact_events` names and `fact_history` holds no interval of: folded
    too, so a fact whose every interval was deleted still counts (one with no interval in the log
    either, its observation scrubbed, counts for nothing)."""
    named = {row[0] for row in conn.execute("SELECT DISTINCT fact_id FROM fact_events WHERE app = ? AND user = ?",
                                            (app, user))}
    held = {row[0] for row in conn.execute("SELECT DISTINCT fact_id FROM fact_history WHERE app = ? AND user = ?",
                                           (app, user))}
    return sorted(named - held)


def _digest(*parts) -> str:
    return hashlib.sha256("\x00".join(str(p) for p in parts).encode()).hexdigest()[:32]


def _heard(state: dict, event: Event) -> None:
    """A negation event's key and content, as digests (no value is kept in memory)."""
    if event.body is None:
        return
    heard = heard_negation(event.seq, event.type, event.body)
    if heard is not None:
        (subject, predicate), wanted, negation = heard
        state[event.seq] = (_digest(subject, predicate),
                            _digest(subject, predicate, wanted, negation.said_at, negation.basis))


def check_key_negations(conn, key: tuple) -> None:
    """The negations a key has heard as `key_negations` holds them (what makes a value said before
    one of them end where it did: `ledger.late.denied`) are the ones the partition's log records:
    its `FactRetracted` and negation `CandidateRejected` events, folded and kept per partition
    (`projections.logkept`: afterwards only what was appended is read).  A row deleted, added or
    edited is "the ledger is damaged".  Once per key per write transaction, before the first
    decision on it."""
    check_keys_negations(conn, [key])      # its partition's marks and its guards' in one read


def check_keys_negations(conn, keys: list[tuple]) -> None:
    """`check_key_negations` for many keys: the partitions' negation folds in a few statements
    (`logkept.folded_many`) and the keys' `key_negations` rows in one per `CHUNK` keys."""
    partitions = list(dict.fromkeys((app, user) for app, user, _s, _p in keys))
    guards = {app: ((app, ERASURES_USER), (ALL_APPS, ERASURES_USER)) for app, _u in partitions}
    marks = partition_marks(conn, list(dict.fromkeys([*partitions, *(g for gs in guards.values() for g in gs)])))
    states = [folded_many(conn, name, partitions, type_, "key_negations", dict, _heard, dict,
                          guards=guards.__getitem__, marks=marks)
              for name, type_ in (("negations-retracted", EVENT.FactRetracted),
                                  ("negations-rejected", EVENT.CandidateRejected))]
    stored_of: dict[tuple, dict[int, str]] = {}
    for start in range(0, len(keys), CHUNK):
        chunk = keys[start:start + CHUNK]
        values = ", ".join("(?,?,?,?)" for _ in chunk)
        for app, user, subject, predicate, seq, value, said_at, basis in conn.execute(
                f"WITH k(a, u, s, p) AS (VALUES {values}) SELECT n.app, n.user, n.subject, n.predicate,"
                " n.seq, n.value_key, n.said_at, n.basis FROM k JOIN key_negations n ON n.app = k.a"
                " AND n.user = k.u AND n.subject = k.s AND n.predicate = k.p", [v for key in chunk for v in key]):
            stored_of.setdefault((app, user, subject, predicate), {})[seq] = _digest(subject, predicate, value,
                                                                                       said_at, basis)
    for key in keys:
        app, user, subject, predicate = key
        wanted = _digest(subject, predicate)
        logged = {seq: full for state in states for seq, (on_key, full) in state[(app, user)].items()
                  if on_key == wanted}
        stored = stored_of.get(key, {})
        for seq in sorted(set(logged) | set(stored)):
            if logged.get(seq) != stored.get(seq):
                raise ProjectionMismatch("key_negations", None, seq,
                                         "the key's negation is not the one the log records")


def check_key_kind(conn, app: str, user: str, predicate: str, kind: str | None) -> None:
    """An open key's kind as `queries.key_kind` read it (the rules a later statement that names no
    kind is validated by) is the log's: the kind of its open facts, or, with none open, of a fact
    the key had; None only if the log gives the key no fact.  The key's open set is checked
    (`check_open`); a fact whose rows were all deleted is folded too (`_unfiled`).  Once per key
    per transaction."""
    open_ids = {row[0] for row in conn.execute(
        "SELECT fact_id FROM facts_current WHERE app = ? AND user = ? AND predicate = ?", (app, user, predicate))}
    check_open(conn, app, user, open_ids, predicate=predicate, include_sensitive=True)
    filed = [row[0] for row in conn.execute(
        "SELECT DISTINCT fact_id FROM fact_history WHERE app = ? AND user = ? AND predicate = ?",
        (app, user, predicate))]
    intervals, _ = _expected(conn, list(dict.fromkeys([*sorted(open_ids), *filed, *_unfiled(conn, app, user)])),
                             "fact_history")
    on_key = [i for found in intervals.values() for i in found if i["predicate"] == predicate]
    expected = ({i["kind"] for i in on_key if i["recorded_to"] is None and i["fact_id"] in open_ids}
                or {i["kind"] for i in on_key})
    if (kind is None) != (not expected) or (kind is not None and kind not in expected):
        raise ProjectionMismatch("facts_current", None, None, f"the open key {predicate!r}'s kind is not the log's")


def check_sensitivity(conn, fact_id: str, level: str | None) -> None:
    """An open fact's sensitivity as `facts_current` gives it (None: not open) is the log's: it
    decides whether a viewer is shown the fact (the web view's contradictions)."""
    intervals, _ = _expected(conn, [fact_id], "facts_current")
    found = next((i for i in intervals.get(fact_id, ()) if i["recorded_to"] is None and i["state"] in OPEN_STATUSES),
                 None)
    if (found["sensitivity"] if found else None) != level:
        raise ProjectionMismatch("facts_current", fact_id, found["from_seq"] if found else None,
                                 "its sensitivity (or whether it is open) is not the log's")


def check_classes(conn, fact_ids: list[str], classes: dict[str, tuple[str, str, str]]) -> None:
    """The (sensitivity, subject, predicate) `fact_history` gives each fact a serve record names
    (absent: erased) is one the log gives it: what decides whether a reviewer sees its key."""
    ids = list(dict.fromkeys(fact_ids))
    intervals, _ = _expected(conn, ids, "fact_history")
    for fact_id in ids:
        logged = {(i["sensitivity"], i["subject"], i["predicate"]) for i in intervals.get(fact_id, ())}
        stored = classes.get(fact_id)
        if (stored is None) != (not logged) or (stored is not None and stored not in logged):
            raise ProjectionMismatch("fact_history", fact_id, None, "its class is not what the log says")


def check_recall(conn, app: str, users: list[str], facts: list[dict], at: str | None = None) -> None:
    """Recall's served facts (the selected ones, and every candidate an explanation shows): each
    is what the log says, and, read now, its recall index row holds its own terms; the scope's
    facts and index rows are as many (a row deleted from one of them hides a fact or keeps one)."""
    checked = check(conn, facts, table="facts_current" if at is None else "fact_history", at=at)
    if at is not None:
        return
    counts = conn.execute(*summed_counts(("facts_current", "recall_index"), app, users)).fetchone()
    if counts[0] != counts[1]:
        raise ProjectionMismatch("recall_index", None, None,
                                 f"{counts[1]} index rows for {counts[0]} open facts of {app}/{users[0]}")
    seqs = {interval["observed_seq"]: fact_id for fact_id, interval in checked.items()}
    stored: dict[int, tuple[str, str]] = {}
    where = {seq: (checked[fact_id]["app"], checked[fact_id]["user"]) for seq, fact_id in seqs.items()}
    for leaf, wanted in _by_leaf(conn, sorted(seqs), where).items():
        stored.update((seq, (fact_id, terms))
                      for seq, fact_id, terms in _lookup(conn, _INDEXED, "recall_index", leaf, wanted))
        missing = [seq for seq in wanted if seq not in stored] if leaf is not None else []
        if missing:
            stored.update((seq, (fact_id, terms)) for seq, fact_id, terms
                          in _lookup(conn, _INDEXED, "recall_index", None, missing))
    for seq, fact_id in seqs.items():
        interval = checked[fact_id]
        row = stored.get(seq)
        if row is None or row[0] != fact_id:
            raise ProjectionMismatch("recall_index", fact_id, seq, "the fact's index row is missing")
        if row[1] != document_terms(interval["subject"], interval["predicate"], interval["value"], interval["quote"]):
            raise ProjectionMismatch("recall_index", fact_id, seq, "the indexed terms are not the fact's")


def _served_interval(fact: dict, found: list[dict], at: str | None, history: bool) -> dict | None:
    if history:
        # one interval per transaction time: an interval that would last none is overwritten
        return next((i for i in found if i["recorded_from"] == fact.get("recorded_from")), None)
    if at is not None:
        return next((i for i in found if i["recorded_from"] <= at
                     and (i["recorded_to"] is None or i["recorded_to"] > at)), None)
    return next((i for i in found if i["recorded_to"] is None), None)


def _compare(table: str, fact: dict, interval: dict) -> None:
    expected = dict(interval, status=interval["state"])
    for name in _COMPARED + _INTERVAL + ("state",):
        if name not in fact:
            continue
        served, wanted = fact[name], expected.get(name)
        if name == "disputes":
            served = orjson.loads(served) if isinstance(served, str) else served
            wanted = orjson.loads(wanted) if isinstance(wanted, str) else wanted
            served, wanted = sorted(served or []), sorted(wanted or [])
        if served is None and name in ("value", "quote"):
            continue                   # withheld from this caller (recall's uncleared facts)
        if served != wanted:
            raise ProjectionMismatch(table, fact["fact_id"], interval["from_seq"], f"its {name} differs from the log's")
    if table == "facts_current" and expected["status"] not in OPEN_STATUSES:
        raise ProjectionMismatch(table, fact["fact_id"], interval["from_seq"], "the fact is not open in the log")


# What the log says of a fact cannot change while the log's head stays where it is, so the
# intervals folded for a fact are kept for the head they were folded at (and dropped, all of
# them, at the first check that sees another head), as recall keeps its scopes
# (`ledger/recall/cache.py`): a fact served again costs one statement, not a fold.  Only when the
# projections have folded up to the head (not inside a write whose projections are unflushed).
# What is compared is always the row read now: an edited projection row is found however often
# the fact was checked before.  A body edited in place under the same head (the triggers
# dropped) is found by `verify`, and by reads once the kept folds are dropped.
# The kept folds belong to one ledger (`Ledger` holds its own and lends it to its reads through
# `keeping`), so two ledgers in one process never share them and a forget drops only its own.
MAX_KEPT = 50_000


class KeptFolds:
    """One ledger's kept folds: fact id -> (its intervals, the seqs that touched it), for one head."""

    def __init__(self) -> None:
        self.folds: dict[str, tuple[list[dict], set[int]]] = {}
        self.at = None
        self.lock = threading.Lock()

    def clear(self) -> None:
        """Drop every kept fold (a forget: no forgotten value stays in memory)."""
        with self.lock:
            self.folds.clear()
            self.at = None


_KEEPING: ContextVar[KeptFolds | None] = ContextVar("factledger_served_kept", default=None)


@contextmanager
def keeping(kept: KeptFolds) -> Iterator[None]:
    """Checks inside this block may keep and reuse `kept`'s folds; outside any, nothing is kept."""
    token = _KEEPING.set(kept)
    try:
        yield
    finally:
        _KEEPING.reset(token)


_HEAD = f"SELECT {FIRST_HASH}, {LAST_SEQ}, {LAST_HASH}, {FOLDED_TO}"


def _expected(conn, ids: list[str], table: str, where: dict[str, tuple[str, str]] | None = None,
              ) -> tuple[dict[str, list[dict]], dict[str, set[int]]]:
    """fact id -> its intervals as the log gives them, and the seqs of the events that touched it.
    `where`: fact id -> the (app, user) partition the caller read it in (`_touched_rows`)."""
    first, seq, hash_, folded = conn.execute(_HEAD).fetchone()
    head = (first, seq, hash_)
    keep = first is not None and folded == seq
    intervals: dict[str, list[dict]] = {}
    touched: dict[str, set[int]] = {}
    kept = _KEEPING.get()
    keep = keep and kept is not None
    if keep:
        with kept.lock:
            if kept.at != head:
                kept.folds.clear()
                kept.at = head
            for fact_id in ids:
                found = kept.folds.get(fact_id)
                if found is not None:
                    intervals[fact_id], touched[fact_id] = found
    missing = [f for f in ids if f not in intervals]
    if missing:
        batch, established = _fold(conn, missing, table, where)
        folded_now: dict[str, list[dict]] = {}
        for row in batch.rows:
            interval = dict(zip(HISTORY_COLUMNS, row))
            folded_now.setdefault(interval["fact_id"], []).append(interval)
        for fact_id in missing:
            if fact_id in folded_now:
                intervals[fact_id] = folded_now[fact_id]
                touched[fact_id] = established.get(fact_id, set())
        if keep:
            with kept.lock:
                if kept.at == head:
                    if len(kept.folds) + len(missing) > MAX_KEPT:
                        kept.folds.clear()
                    kept.folds.update((f, (intervals[f], touched[f])) for f in missing if f in intervals)
    return intervals, touched


def _fold(conn, ids: list[str], table: str, where: dict[str, tuple[str, str]] | None = None,
          ) -> tuple[FactBatch, dict[str, set[int]]]:
    """Fold the events of these facts and of the facts linked to them, checking each event: one
    lookup of `fact_events` and one of the events it names per 500 facts (`_touched_rows`), and one
    more round only for the facts a dispute or a split links in (each in the partition of the
    event that links it: fact ids are partition-local)."""
    where = dict(where or {})
    wanted, seen = list(ids), set()
    established: dict[str, set[int]] = {}
    events: dict[int, Event] = {}
    while wanted and len(seen) <= MAX_LINKED:
        chunk_ids = [f for f in dict.fromkeys(wanted) if f not in seen]
        seen.update(chunk_ids)
        wanted = []
        for fact_id, seq, *row in _touched_rows(conn, chunk_ids, events, where):
            if seq in events:
                if events[seq].body is None:
                    established.setdefault(fact_id, set()).add(seq)
                continue
            event = events[seq] = _event(seq, row, table)
            body = event.body
            # the facts an event touches are the ones its body names (a redacted event's:
            # the ones `fact_events` names), whichever fact's rows brought it in
            for named in _named(body) if body is not None else (fact_id,):
                established.setdefault(named, set()).add(seq)
            # a dispute's two sides change each other's rows (`disputes`, closed by the
            # other's events); a split fact starts as a copy of the fact it was cut from
            if body is None:
                continue
            linked = len(wanted)
            if event.type == EVENT.FactDisputed:
                wanted += [f for f in (body.get("fact_id"), body.get("disputes"))
                           if isinstance(f, str) and f not in seen]
            elif event.type == EVENT.MeaningChecked:    # a rewording's statements count towards the other
                wanted += [f for f in (body.get("fact_id"), body.get("by_fact_id"))
                           if isinstance(f, str) and f not in seen]
            elif event.type == EVENT.FactSplit and body.get("split_id") in seen and body.get("fact_id") not in seen:
                wanted.append(body["fact_id"])
            for other in wanted[linked:]:
                where.setdefault(other, (event.app, event.user))
    batch = FactBatch()
    batch.fold(events[seq] for seq in sorted(events))
    return batch, established


def _named(body: dict) -> list[str]:
    """The facts an event's body names (`projections.provenance` indexes the same fields)."""
    found = [body[f] for f in ("fact_id", "by_fact_id", "disputes", "winner_id", "split_id")
             if isinstance(body.get(f), str) and body[f]]
    return found + [f for f in body.get("loser_ids") or () if isinstance(f, str)]


# The events that touched some facts, each beside the fact it touched (None for an event
# `fact_events` names and the log does not hold): two statements per 500 facts, the index rows by
# fact id, then the events by seq.  Not one join: PostgreSQL's planner, misjudging how many index
# rows a few fact ids have, hashed the join over a scan of the whole log (16 ms at 20,000 events,
# the p99 of 386 ms at 1,000,000 of issue 50); two lookups by key cost a read at any size.
# On a partitioned ledger the facts of at most LEAF_LOOKUPS leaves (a recall's user and `_domain`,
# a key's write) are read from those leaves by name (`fact_events_p3`, then `events_p3`: an event
# lies in the leaf of the `fact_events` row naming it, both keyed by the event's (app, user)):
# one table planned, not eight, and no (app, user) condition that the planner, from statistics
# older than the user, could answer by the leaf's partition index (docs/scale.md, "Partitioning").
# A fact with no row in its leaf, and a seq its leaf's log does not hold, are looked up again in
# the whole table, so what is found is what the lookups of the whole table find.
_TOUCHED = "SELECT fact_id, seq FROM {table} WHERE fact_id IN "
_EVENTS = ("SELECT seq, event_id, type, app, user, recorded_at, body, salt, commitment, redacted_by"
           " FROM {table} WHERE seq IN ")
_INDEXED = "SELECT seq, fact_id, terms FROM {table} WHERE seq IN "
_ABSENT = (None,) * 9
LEAF_LOOKUPS = 2


def _touched_rows(conn, fact_ids: list[str], known, where: dict[str, tuple[str, str]] | None = None,
                  ) -> Iterator[tuple]:
    """(fact_id, seq, *the event's columns) for every event `fact_events` names for these facts
    (the columns not read for the seqs in `known`, events an earlier round read).  `where`: fact id
    -> its (app, user), which names its leaf on a partitioned ledger."""
    pairs: list[tuple[str, int]] = []
    seqs_by_leaf: dict[str | None, set[int]] = {}
    for leaf, ids in _by_leaf(conn, fact_ids, where or {}).items():
        found = _lookup(conn, _TOUCHED, "fact_events", leaf, ids)
        if leaf is not None:
            named = {fact_id for fact_id, _seq in found}
            rest = [f for f in ids if f not in named]
            if rest:
                again = _lookup(conn, _TOUCHED, "fact_events", None, rest)
                seqs_by_leaf.setdefault(None, set()).update(seq for _f, seq in again)
                pairs += again
        seqs_by_leaf.setdefault(leaf, set()).update(seq for _f, seq in found)
        pairs += found
    rows: dict[int, tuple] = {}
    for leaf, seqs in sorted(seqs_by_leaf.items(), key=lambda item: item[0] is None):
        wanted = sorted(seq for seq in seqs if seq not in known and seq not in rows)
        rows.update((seq, tuple(rest)) for seq, *rest in _lookup(conn, _EVENTS, "events", leaf, wanted))
        if leaf is not None:
            missing = [seq for seq in wanted if seq not in rows]
            if missing:
                rows.update((seq, tuple(rest)) for seq, *rest in _lookup(conn, _EVENTS, "events", None, missing))
    for fact_id, seq in pairs:
        yield (fact_id, seq, *rows.get(seq, _ABSENT))


def _by_leaf(conn, keys: list, where: dict) -> dict[str | None, list]:
    """Keys (fact ids, seqs) by the leaf suffix (`_p3`) of their (app, user) in `where`, or all
    under None (the whole table): on plain tables, for keys of more than LEAF_LOOKUPS leaves, or
    of a partition not known."""
    leaf_of = getattr(conn, "leaf_of", None)
    if leaf_of is None or not getattr(conn, "leaves", 0) or any(k not in where for k in keys):
        return {None: keys} if keys else {}
    remainders = {k: leaf_of(*where[k]) for k in keys}
    if len(set(remainders.values())) > LEAF_LOOKUPS:
        return {None: keys}
    out: dict[str | None, list] = {}
    for key in keys:
        out.setdefault(f"_p{remainders[key]}", []).append(key)
    return out


def _lookup(conn, sql: str, table: str, leaf: str | None, keys: list) -> list:
    """The rows of `sql` (ending in `IN `) for `keys`, per CHUNK, from the leaf or the whole table."""
    text = sql.format(table=table + (leaf or ""))
    out: list = []
    for start in range(0, len(keys), CHUNK):
        chunk = keys[start:start + CHUNK]
        out += conn.execute(text + _marks(chunk), chunk).fetchall()
    return out


def _marks(chunk: list) -> str:
    return f"({', '.join('?' for _ in chunk)})"


def _event(seq: int, row: list, table: str) -> Event:
    """One event as the fold reads it, its body checked against its commitment."""
    event_id, type_, app, user, recorded_at, body, salt, commit, redacted_by = row
    if event_id is None:
        raise ProjectionMismatch(table, None, seq, "fact_events names an event the log does not hold")
    if body is None:
        if redacted_by is None:
            raise ProjectionMismatch(table, None, seq, "the event's body is missing and no redaction names it")
        return Event(seq, event_id, type_, app, user, recorded_at, None)
    raw = body.encode() if isinstance(body, str) else bytes(body)
    if salt is None or chain.commitment(bytes(salt), raw) != commit:
        raise ProjectionMismatch(table, None, seq, "the event's body does not match its commitment")
    data = body_of(raw)
    if not isinstance(data, dict) or data.get("type") != type_ or data.get("app") != app or data.get("user") != user:
        raise ProjectionMismatch(table, None, seq, "the event's envelope disagrees with its body")
    return Event(seq, event_id, type_, app, user, recorded_at, data)
