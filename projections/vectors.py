"""`fact_vectors`: one meaning vector per open fact, for recall and dedup by meaning.

A row per open fact, keyed like the recall index, with the encoder's identity (`model`) and a
float32 vector of the fact as a sentence; search is an exact cosine over one partition's rows.
It follows the facts fold, so a closed fact's row is deleted (zeroed under `secure_delete`).
Without the `semantic` extra the table stays empty; another encoder re-embeds every open fact
(`sync`).  `check` (for `verify` and `replay --check`) checks rows as stored and recomputes only
where the checker has the same encoder: a missing row is staleness, not damage.
"""

from __future__ import annotations

import sqlite3
import warnings
from contextlib import contextmanager

from factledger.ledger.domain.events import EVENT
from factledger.ledger.errors import UNUSABLE, LedgerError, ProjectionMismatch
from factledger.ledger.semantic import embedder as encoders
from factledger.ledger.store.eventlog import Event
from factledger.ledger.store.scopes import each_user
from factledger.projections.base import OPEN_FACTS, REBUILD, FactsFold
from factledger.projections.factstate import OPEN_STATES

TABLE = "fact_vectors"

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    seq INTEGER PRIMARY KEY, fact_id TEXT NOT NULL, app TEXT NOT NULL, user TEXT NOT NULL,
    predicate TEXT NOT NULL, model TEXT NOT NULL, vector BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS {TABLE}_partition ON {TABLE} (app, user);
"""
_INSERT = f"INSERT OR REPLACE INTO {TABLE} VALUES (?,?,?,?,?,?,?)"
# Facts stored without a vector because the encoder failed: the next write open re-embeds (`sync`).
INCOMPLETE = "vectors_incomplete"
_MARK_INCOMPLETE = f"INSERT OR IGNORE INTO ledger_meta (key, value) VALUES ('{INCOMPLETE}', '1')"
_IS_INCOMPLETE = f"SELECT 1 FROM ledger_meta WHERE key = '{INCOMPLETE}'"
# Facts opened without their dedup meaning check (`FactObserved.unchecked`): the next write open
# with a working encoder runs the checks (`UnitOfWork.recheck_meaning`); the log says which.
UNCHECKED = "meaning_checks_owed"
_MARK_UNCHECKED = f"INSERT OR IGNORE INTO ledger_meta (key, value) VALUES ('{UNCHECKED}', '1')"
_IS_UNCHECKED = f"SELECT 1 FROM ledger_meta WHERE key = '{UNCHECKED}'"
_CLEAR_UNCHECKED = f"DELETE FROM ledger_meta WHERE key = '{UNCHECKED}'"


class VectorProjection:
    name = "vectors"
    tables = (TABLE,)
    schema = SCHEMA

    def __init__(self, facts: FactsFold):
        self.facts = facts                    # flushes first; says which facts it changed (`base.FollowsFacts`)
        self.depends_on = (facts.name,)

    def apply(self, conn: sqlite3.Connection, event: Event) -> None:
        """Nothing per event (the vectors follow the facts the facts projection flushes) but the
        mark of a meaning check owed."""
        if event.type == EVENT.FactObserved and event.body is not None and event.body.get("unchecked"):
            conn.execute(_MARK_UNCHECKED)

    def flush(self, conn: sqlite3.Connection) -> None:
        # Deletes are made even with meaning off (no encoder needed): a row whose fact closed
        # would otherwise outlive it in a table a writer without the extra left in place.
        if not self.facts.flushed:
            return
        wanted = encoders.wanted()
        inserts, deletes = [], []
        for snap, was_open in self.facts.flushed:
            if snap["status"] in OPEN_STATES:
                if not was_open and wanted:
                    inserts.append(snap)
            elif was_open:
                deletes.append((snap["observed_seq"], snap["app"], snap["user"]))
        if deletes:
            conn.executemany(f"DELETE FROM {TABLE} WHERE seq = ? AND app = ? AND user = ?", deletes)
        if inserts:
            rows = _embedded(inserts)
            conn.executemany(_INSERT, rows)
            if len(rows) < len(inserts):
                conn.execute(_MARK_INCOMPLETE)        # re-embedded at the next write open (`sync`)

    def discard(self) -> None:
        pass

    def rebuild_partition(self, conn: sqlite3.Connection, events: list[Event], state: dict) -> None:
        """One row per fact open at the partition's end (set by FactsProjection.rebuild_partition)."""
        open_facts = state[OPEN_FACTS]
        if not open_facts:
            return
        once = state.get(REBUILD, {})
        if "model" not in once:                # looked up once per rebuild
            once["model"] = encoders.get() if encoders.wanted() else None
        model = once["model"]
        if model is None:
            return
        rows = sorted(_row(model, s) for s in open_facts.values())
        conn.executemany(_INSERT, rows)


def _embedded(snaps: list[dict]) -> list[tuple]:
    """The rows of the facts an encoder could embed.  One that fails leaves its facts without a
    vector (recall finds them by words; `verify` reports the meaning index as incomplete, and
    re-embedding refreshes it) rather than failing the write that opened them: a fact is never
    lost to the encoder."""
    try:
        model = encoders.get()
        return [] if model is None else [_row(model, s) for s in snaps]
    except LedgerError:
        raise                                 # the encoder was asked for and is not installed
    except Exception as exc:    # noqa: BLE001 - whatever the runtime raises, the facts are kept
        warnings.warn(f"factledger: the encoder failed ({type(exc).__name__}: {exc}); {len(snaps)} fact(s) "
                      "stored without a meaning vector, to be embedded at the next write",
                      RuntimeWarning, stacklevel=2)
        return []


def _row(model, s: dict) -> tuple:
    text = encoders.sentence(s["subject"], s["predicate"], s["value"], s["quote"])
    return (s["observed_seq"], s["fact_id"], s["app"], s["user"], s["predicate"], model.identity,
            model.embed(text).astype("<f4").tobytes())


def sync(conn: sqlite3.Connection, transaction) -> bool:
    """Make the table match the encoder in use: re-embed every open fact when its rows name
    another encoder (or none while facts are open), empty it when meaning is off.  Returns
    whether anything was rewritten.  A file this connection cannot write is left as it is
    (recall then ignores rows of another encoder)."""
    expected = encoders.identity()
    found = conn.execute(f"SELECT model FROM {TABLE} LIMIT 1").fetchone()
    if expected is None:
        if found is None:
            return False
        return _rewrite(conn, transaction, None)
    if conn.execute(_IS_INCOMPLETE).fetchone() is not None:     # an encoder failed mid-write before
        return _rewrite(conn, transaction, encoders.get())
    if found is not None and found[0] == expected:
        return False
    if found is None and conn.execute("SELECT 1 FROM facts_current LIMIT 1").fetchone() is None:
        return False
    return _rewrite(conn, transaction, encoders.get())


_OPEN = ("SELECT observed_seq, fact_id, app, user, subject, predicate, value, quote FROM facts_current"
         " ORDER BY observed_seq")


def _rewrite(conn: sqlite3.Connection, transaction, model) -> bool:
    """`transaction` is the ledger's write transaction (a context manager factory)."""
    names = ("observed_seq", "fact_id", "app", "user", "subject", "predicate", "value", "quote")
    try:
        with transaction():
            conn.execute(f"DELETE FROM {TABLE}")
            conn.execute(f"DELETE FROM ledger_meta WHERE key = '{INCOMPLETE}'")
            if model is not None:
                rows = [_row(model, dict(zip(names, r))) for r in conn.execute(_OPEN).fetchall()]
                conn.executemany(_INSERT, rows)
    except UNUSABLE:
        raise                                 # not a ledger that merely cannot be written now
    except LedgerError:                       # read-only or busy (factledger's, whatever the engine)
        return False                          # read-only or busy: recall skips other encoders' rows
    except Exception as exc:    # noqa: BLE001 - the encoder failed again: keep what is there, and the mark
        warnings.warn(f"factledger: the encoder failed ({type(exc).__name__}: {exc}); the meaning index "
                      "stays incomplete until it works", RuntimeWarning, stacklevel=2)
        return False
    return True


def checks_owed(conn: sqlite3.Connection) -> bool:
    """Whether a write marked a meaning check owed that no run has cleared since."""
    return conn.execute(_IS_UNCHECKED).fetchone() is not None


def checks_done(conn: sqlite3.Connection) -> None:
    conn.execute(_CLEAR_UNCHECKED)


def partition_vectors(conn: sqlite3.Connection, app: str, users: list[str], identity: str) -> dict:
    """fact_id -> vector bytes for one scope's open facts embedded by `identity`."""
    return shaped(dict(conn.execute(*each_user(
        f"SELECT fact_id, vector FROM {TABLE} WHERE app = ? AND user = ? AND model = ?",
        users, lambda user: (app, user, identity)))))


def key_vectors(conn: sqlite3.Connection, app: str, user: str, predicate: str) -> dict:
    """fact_id -> vector bytes for one partition's open facts of a predicate (any subject: the
    caller keeps the key's own), embedded by the encoder in use."""
    identity = encoders.identity()
    return shaped(dict(conn.execute(f"SELECT fact_id, vector FROM {TABLE} WHERE app = ? AND user = ?"
                                    " AND predicate = ? AND model = ?", (app, user, predicate, identity))))


# What `check` reads: the stored rows (the vector's length only, unless it is recomputed) and the
# open facts they must follow, both in seq order, merged as they stream.
_STORED = f"SELECT seq, fact_id, app, user, predicate, model, length(vector) FROM {TABLE} ORDER BY seq"
_STORED_BYTES = f"SELECT seq, fact_id, app, user, predicate, model, length(vector), vector FROM {TABLE} ORDER BY seq"
_KEYS = ("fact_id", "app", "user", "predicate")
_HEX = frozenset("0123456789abcdef")
BUNDLED_DIM = 384                   # the bundled MiniLM's vectors: known without loading it
REFRESH = "factledger replay"


def check(live, facts, recompute: bool = False, progress=None) -> tuple[dict | None, dict]:
    """(the first damaged row or None, the meaning index's state), for `verify` and `replay --check`.

    `live` holds the stored rows; `facts` the open facts they must follow (`facts_current`: the
    rebuilt one for `verify`, the live one when it was found equal to a rebuild).  Damage is what
    no writer leaves: a row for a seq the log gives no open fact, keys not the fact's, an identity
    that is not an encoder's, a vector not float32 of its encoder's one dimension, and, with
    `recompute` where this install's encoder made the rows, a vector that is not its output.  A
    missing row is staleness (`state`), so the verdict does not depend on the checker's install.
    A damaged row is a dict: row ({"seq": n}) and problem (a sentence naming the seq).
    `progress` (a `Progress`), when vectors are recomputed, hears of each one."""
    model = encoders.get() if recompute else None
    mine = model.identity if model is not None else None
    if model is not None and progress is not None:
        progress.stage("recomputing the meaning vectors",
                       live.execute(f"SELECT count(*) FROM {TABLE} WHERE model = ?", (mine,)).fetchone()[0])
    stored = live.execute(_STORED_BYTES if model is not None else _STORED)
    opened = iter(facts.execute(_OPEN))
    fact = next(opened, None)
    dims: dict[str, int] = {}
    rows = open_facts = without = recomputed = 0
    for row in stored:
        seq = row[0]
        while fact is not None and fact[0] < seq:
            open_facts, without, fact = open_facts + 1, without + 1, next(opened, None)
        if fact is None or fact[0] != seq:
            return _damaged(seq, "a row the log does not give"), {}
        open_facts, rows = open_facts + 1, rows + 1
        differ = [name for name, a, b in zip(_KEYS, row[1:5], (fact[1], fact[2], fact[3], fact[5])) if a != b]
        if differ:
            return _damaged(seq, f"{', '.join(differ)} not what the log gives"), {}
        problem = _shape_problem(row[5], row[6], dims)
        if problem:
            return _damaged(seq, problem), {}
        if model is not None and row[5] == mine:
            text = encoders.sentence(fact[4], fact[5], fact[6], fact[7])
            if bytes(row[7]) != model.embed(text).astype("<f4").tobytes():
                return _damaged(seq, "vector not what the encoder gives for the fact"), {}
            recomputed += 1
            if progress is not None:
                progress.update(1)
        fact = next(opened, None)
    while fact is not None:
        open_facts, without, fact = open_facts + 1, without + 1, next(opened, None)
    state = "absent" if open_facts and not rows else "stale" if without or len(dims) > 1 else "current"
    report = {"state": state, "encoders": sorted(dims), "vectors": rows, "open_facts": open_facts,
              "without_vector": without}
    if recompute:
        report["recomputed"] = recomputed
    return None, report


@contextmanager
def left_out(projector):
    """Within the block, `projector`'s rebuilds leave `fact_vectors` empty: a check's rebuild
    (`verify`, `replay --check`), where the table is checked by `check` instead of compared, and
    nothing is embedded to compare it with."""
    projection = next((p for p in projector.projections if getattr(p, "name", None) == "vectors"), None)
    if projection is None:
        yield
        return
    projection.rebuild_partition = lambda conn, events, state: None
    try:
        yield
    finally:
        del projection.rebuild_partition


def _damaged(seq: int, what: str) -> dict:
    return {"table": TABLE, "row": {"seq": seq}, "problem": f"{TABLE} (seq {seq}): {what}"}


def _shape_problem(identity, size, dims: dict) -> str | None:
    """What is wrong with a row's encoder identity (`name@` 16 hex digits of the model file's
    sha256, the integer rewrite's suffix or none) or its vector's length, else None."""
    name, _, digest = identity.rpartition("@") if isinstance(identity, str) else ("", "", "")
    digest = digest.removesuffix(encoders.INTEGER_SUFFIX)
    if not name or len(digest) != 16 or not set(digest) <= _HEX:
        return "model is not an encoder's identity"
    if not isinstance(size, int) or size <= 0 or size % 4:
        return "vector is not a float32 vector"
    dim = size // 4
    if name == encoders.MODEL_NAME and digest == encoders.MODEL_SHA256[:16] and dim != BUNDLED_DIM:
        return f"vector has {dim} dimensions where the encoder gives {BUNDLED_DIM}"
    if dims.setdefault(identity, dim) != dim:
        return f"vector has {dim} dimensions where the encoder's others have {dims[identity]}"
    return None


def notices(report: dict, recompute: bool = False) -> list[str]:
    """What the checker is told about the meaning index, beyond the verdict: stale or absent for
    its install (recall here runs by words only), and, with `recompute`, vectors it could not
    recompute because its encoder is not the one that made them."""
    if not report:
        return []
    mine = encoders.identity()
    made = report["encoders"]
    out = []
    if report["state"] == "stale":
        parts = []
        if report["without_vector"]:
            parts.append(f"{report['without_vector']} of {report['open_facts']} open facts have no vector")
        if len(made) > 1:
            parts.append(f"its vectors were made by {len(made)} encoders ({', '.join(made)})")
        out.append(f"the meaning index is stale ({'; '.join(parts)}): recall by meaning misses those facts"
                   f" until `{REFRESH}` (with the semantic extra) rebuilds it")
    elif report["state"] == "absent" and mine is not None:
        out.append("the ledger has no meaning vectors (written without the semantic extra, or with"
                   f" FACTLEDGER_EMBEDDER=off): recall here runs by words only until `{REFRESH}` builds them")
    elif report["state"] == "current" and made and mine is not None and made != [mine]:
        out.append(f"the meaning vectors were made by {made[0]}, and this install's encoder is {mine}:"
                   f" recall here runs by words only until `{REFRESH}` re-embeds them")
    if recompute and report["vectors"] and not report.get("recomputed"):
        have = "no encoder (the semantic extra is not installed, or FACTLEDGER_EMBEDDER is off)" \
            if mine is None else f"the encoder {mine}"
        out.append(f"--vectors: not recomputed, as they were made by {', '.join(made)} and this install has"
                   f" {have}; checked as stored (one per open fact, its keys, the encoder's identity and"
                   " dimension)")
    elif recompute and report.get("recomputed") and report["recomputed"] < report["vectors"]:
        out.append(f"--vectors: {report['recomputed']} of {report['vectors']} recomputed; the others, made by"
                   " another encoder, checked as stored")
    return out


def meaning_notice(conn, app: str, users: list[str]) -> str | None:
    """Recall's notice when it runs without meaning on a scope that has open facts: the ledger
    holds no vectors of this install's encoder for some of them (written without the extra, with
    another encoder, or left stale).  None when meaning is off here or every fact has a vector."""
    identity = encoders.identity()
    if identity is None:
        return None
    facts = vectors = 0
    for user in users:          # counts off the partition indexes; one row's encoder stands for all
        found = conn.execute(
            f"SELECT (SELECT COUNT(*) FROM facts_current WHERE app = ? AND user = ?),"
            f" (SELECT COUNT(*) FROM {TABLE} WHERE app = ? AND user = ?),"
            f" (SELECT model FROM {TABLE} WHERE app = ? AND user = ? LIMIT 1)",
            (app, user, app, user, app, user)).fetchone()
        facts += found[0]
        vectors += found[1] if found[2] == identity else 0
    if vectors >= facts:
        return None
    which = f"all {facts}" if not vectors else f"{facts - vectors} of {facts}"
    return (f"recall ran without meaning for {which} of the scope's open facts: the ledger holds no"
            " vectors of this install's encoder for them (written without the semantic extra, or with"
            f" another encoder); `{REFRESH}` rebuilds them")


def vector_width() -> int | None:
    """The bytes of one vector of the encoder in use (float32 each), or None when meaning is off."""
    model = encoders.get() if encoders.identity() is not None else None
    return None if model is None else int(model.dim) * 4


def shaped(stored: dict) -> dict:
    """`stored` (fact_id -> vector bytes), once every vector has the encoder's width: a row edited
    to another length would crash the matrix every recall of the partition builds, so it is
    refused as damage (`verify` names it too: `ledger.audit.projcheck`)."""
    if not stored:
        return stored
    width = vector_width()
    for fact_id, vector in stored.items():
        size = len(vector) if isinstance(vector, (bytes, bytearray, memoryview)) else -1
        if size != width:
            raise ProjectionMismatch(TABLE, fact_id, None, f"its meaning vector is {size} bytes, not the "
                                     f"encoder's {width}; `factledger replay` re-embeds it")
    return stored
