"""`verify`: recompute every link and every commitment, and prove redactions were authorised.

It reads the raw table, not the projections, and streams it, so it costs the same memory at a
million events as at ten.  The first problem found names its seq; nothing after it is trusted.
"""

from __future__ import annotations

import orjson

from factledger.ledger.domain.events import EVENT
from factledger.ledger.errors import LedgerError, StorageError
from factledger.ledger.store import chain
from factledger.ledger.store.engines import engine_of
from factledger.ledger.store.errors import storage_errors
from factledger.ledger.store.rowcheck import COLUMNS, column_problem
from factledger.ledger.vocabulary.bounds import MAX_SEQ
from factledger.ledger.vocabulary.progress import SILENT, STEP, Progress


def verify(conn, expect_head: str | None = None, progress: Progress = SILENT) -> dict:
    """The walk reports each `STEP` events it has checked to `progress` (its stage and total
    are the caller's to name)."""
    pinned = _parse_head(expect_head) if expect_head else None
    result = {"ok": True, "events": 0, "redacted": 0, "head": None, "first_bad_seq": None,
              "problem": None}

    def fail(seq: int, problem: str) -> dict:
        result.update(ok=False, first_bad_seq=seq, problem=problem)
        return result

    # The engine's own check of the log's storage (SQLite: integrity_check of the events table,
    # on a second connection while this one walks the chain; PostgreSQL: none, the walk is the
    # check); a problem it finds is reported first, as if it had run first.
    engine = engine_of(conn)
    check = engine.integrity_check(conn)
    try:
        with storage_errors():
            walked = _walk(conn, pinned, result, fail, progress)
    except StorageError as exc:
        walked = fail(result["events"] + 1, f"the file is damaged: {exc.detail}")
    problem = check.result()
    if problem is not None:
        result.update(ok=False, first_bad_seq=0, problem=problem, head=None, events=0, redacted=0,
                      integrity=True)    # the file, not one event: the CLI says so, not "seq 0"
        return result
    if walked["ok"]:
        # The chain holds; the append-only triggers must too (missing, altered, or restored on
        # an open since, each named).  The chain's own problem, when there is one, comes first.
        guards = engine.guard_problems(conn)
        if guards:
            walked.update(ok=False, first_bad_seq=0, problem="; ".join(guards), triggers=guards)
    return walked


def _walk(conn, pinned, result: dict, fail, progress: Progress = SILENT) -> dict:
    prev_hash, expected_seq = chain.GENESIS, 1
    scrubbed: dict[int, int] = {}          # redacted seq -> seq of the Redacted event naming it
    redactions: dict[int, set[int]] = {}   # Redacted event seq -> its target seqs
    pinned_seen = bool(pinned) and pinned[0] == 0 and pinned[1] == chain.GENESIS
    if pinned and pinned[0] == 0 and not pinned_seen:
        return _pin_failed(conn, result, fail, pinned)
    rows = conn.execute(f"SELECT {', '.join(COLUMNS)} FROM events ORDER BY seq")
    last_at = ""
    # The writer's own functions (ledger/store/chain.py): the hashes are computed in one place.
    link_of, commitment_of, fromhex, loads = chain.link, chain.commitment, bytes.fromhex, orjson.loads
    for row in rows:
        (seq, event_id, type_, app, user, recorded_at, body, salt, commit, prev, link, redacted_by) = row
        if ((salt is not None and type(salt) is not bytes) or (body is not None and type(body) is not str)
                or (redacted_by is not None and type(redacted_by) is not int)
                or type(seq) is not int or type(app) is not str or type(user) is not str):
            return fail(seq if type(seq) is int else expected_seq, column_problem(dict(zip(COLUMNS, row))))
        if seq != expected_seq:
            return fail(expected_seq, f"missing event (next seq present is {seq})")
        if prev != prev_hash:
            return fail(seq, "prev_hash does not match the previous event's hash")
        try:
            expected = link_of(prev, seq, event_id, type_, recorded_at, commit)
            well_formed = fromhex(commit).hex() == commit   # lower-case hex of 32 bytes, as written
        except (ValueError, TypeError, AttributeError, OverflowError):
            return fail(seq, column_problem(dict(zip(COLUMNS, row)))
                        or "a hash column or the envelope is not what the chain stores")
        if not well_formed:
            return fail(seq, "the commitment is not in the form the chain stores")
        if expected != link:
            return fail(seq, "hash does not match the event's envelope")
        if recorded_at < last_at:
            return fail(seq, "recorded_at goes backwards")
        if body is None:
            if salt is not None or redacted_by is None:
                return fail(seq, "body is missing but the event was not redacted")
            scrubbed[seq] = redacted_by
            result["redacted"] += 1
        else:
            if redacted_by is not None:
                return fail(seq, "a live event has redacted_by set (only a redaction sets it)")
            raw = body.encode()
            if salt is None or commitment_of(salt, raw) != commit:
                return fail(seq, "body does not match its commitment")
            try:
                data = loads(raw)
            except orjson.JSONDecodeError:
                return fail(seq, "body is not JSON")
            if not isinstance(data, dict):
                return fail(seq, "body is not a JSON object")
            if data.get("type") != type_ or data.get("app") != app or data.get("user") != user:
                return fail(seq, "type, app or user column disagrees with the body")
            if type_ == EVENT.Redacted:
                targets = data.get("target_seqs", [])
                if not isinstance(targets, list) or not all(isinstance(t, int) for t in targets):
                    return fail(seq, "a Redacted event's target_seqs is not a list of seqs")
                redactions[seq] = set(targets)
        if pinned and seq == pinned[0]:
            if link != pinned[1]:
                return _pin_failed(conn, result, fail, pinned)
            pinned_seen = True
        prev_hash, expected_seq, last_at = link, seq + 1, recorded_at
        result["events"] += 1
        if not seq % STEP:
            progress.update(STEP)
    if pinned and not pinned_seen:         # before orphaned scrubs: a cut tail explains them
        return _pin_failed(conn, result, fail, pinned, "the pinned head is beyond the end of the log (truncated?)")
    for seq, by in sorted(scrubbed.items()):
        if seq not in redactions.get(by, ()):
            return fail(seq, "scrubbed without a Redacted event naming it")
    result["head"] = f"{expected_seq - 1}:{prev_hash}"
    progress.update((expected_seq - 1) % STEP)
    return result


def _pin_failed(conn, result: dict, fail, pinned: tuple[int, str], why: str | None = None) -> dict:
    """The chain may be sound and still not be the one pinned: say so, with both heads (the log's
    last seq and hash as stored; the walk stops here, so they are not vouched for)."""
    last = conn.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
    log_at = f"{last[0]}:{last[1]}" if last else "0 (empty)"
    message = f"the log does not extend the pinned head (pinned {pinned[0]}:{pinned[1]}, log at {log_at})"
    result["pin"] = True
    return fail(pinned[0], message + (f": {why}" if why else ""))


def _parse_head(text: str) -> tuple[int, str]:
    seq, _, digest = text.strip().partition(":")
    digest = digest.lower()
    if (not (seq.isascii() and seq.isdigit()) or int(seq) > MAX_SEQ or len(digest) != 64
            or any(c not in "0123456789abcdef" for c in digest)):
        raise LedgerError(f"--expect-head {text!r} must look like SEQ:HASH (hash in hex)")
    return int(seq), digest
