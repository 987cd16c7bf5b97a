"""Concurrency: four real processes append to one ledger file at once, on overlapping partitions.

Two observe writers (`Ledger.observe_many` batches), one ingest writer (the ingestion pipeline,
one session per transaction) and one forget writer (session erasures of whatever the others
wrote) start together on a fresh file: about 2,000 operations in all with `-m slow`, about
1,100 in the default suite.  Each writer records the
seqs its operations got.  Then:

- nothing is lost and nothing is foreign: the writers' seqs are exactly 1..N, no seq claimed twice;
- nothing is interleaved: every operation's events have consecutive seqs;
- the chain verifies and every projection equals a rebuild from the log;
- a writer that waits beyond the busy timeout gets `Error: ... busy ...`, exit 1, no traceback,
  and writes nothing.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from factledger.ledger import Ledger
from tests.store.test_crash_ingest import write_sessions

FACTLEDGER = str(Path(sys.executable).with_name("factledger"))
ROOT = Path(__file__).resolve().parents[2]
ENV = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "FACTLEDGER_NOW")}

WORKER = r"""
import json, random, sys, time
from pathlib import Path
role, db, out, go, params = sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4]), json.loads(sys.argv[5])
while not go.exists():
    time.sleep(0.002)
from factledger.ledger import Ledger, LedgerError, make_candidate
rng = random.Random(params["seed"])
ops = 0
# said_at dates are drawn across 2026 whatever the system clock says: no future check here
with open(out, "w") as log, Ledger(db, busy_timeout=60, future_tolerance="100y", create=True) as ledger:
    def record(kind, seqs, **extra):
        log.write(json.dumps({"kind": kind, "seqs": seqs, **extra}) + "\n")
    if role == "observe":
        batch = 0
        while ops < params["ops"]:
            size = min(rng.randint(1, 8), params["ops"] - ops)
            session = f"{params['name']}-s{batch}"
            cands = []
            for k in range(size):
                user = rng.choice(params["users"])
                pred, value = rng.choice([
                    ("home_city", f"City{rng.randrange(6)}"), ("diet", rng.choice(["vegan", "vegetarian"])),
                    ("pet", f"pet{rng.randrange(40)}"), ("plan", rng.choice(["basic", "premium"])),
                    ("favorite_cuisine", f"cuisine{rng.randrange(5)}")])
                cands.append(make_candidate(app="concapp", user=user, predicate=pred, value=value,
                    quote=f"I said {value}", session=session, evidence_event=f"e{k}",
                    said_at=f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"))
            outcomes = ledger.observe_many(cands)
            record("observe", [s for o in outcomes for s in o.seqs], session=session, n=size)
            ops += size
            batch += 1
    elif role == "ingest":
        from factledger.ledger.ingest.batch import ingest_paths
        for path in sorted(Path(params["folder"]).glob("*.json")):
            summary = ingest_paths(ledger._work, [str(path)], None, None, "patterns", None, None)
            for r in summary.results:
                record("ingest", list(r.seqs), session=r.session, status=r.status,
                       n=r.candidates + 1)
                ops += r.candidates + 1
    elif role == "forget":
        for i in range(params["requests"]):
            time.sleep(rng.uniform(0, params["pause"]))
            # aim at sessions another writer has already committed (else the request is a no-op)
            written = ledger._conn.execute(
                "SELECT DISTINCT user, json_extract(body, '$.session') FROM events WHERE app ="
                " 'concapp' AND type IN ('FactObserved', 'SessionIngested') AND body IS NOT NULL"
                " ORDER BY 1, 2").fetchall()
            user, session = rng.choice(written) if written and rng.random() < 0.8 else \
                rng.choice(params["targets"])
            try:
                receipt = ledger.forget("concapp", user, session=session, reason="concurrency test")
            except LedgerError as exc:        # not written (yet) by that user: nothing to forget
                assert "no session" in str(exc), exc
                receipt = {"noop": True}
            seqs = [] if receipt["noop"] else [receipt["redaction_seq"], *receipt["compensating_seqs"]]
            record("forget", seqs, session=session, noop=receipt["noop"], n=1)
            ops += 1
print(ops)
"""


def start(role: str, db: Path, out: Path, go: Path, params: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", WORKER, role, str(db), str(out), str(go),
                             json.dumps(params)], env=ENV, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def run_writers(tmp_path: Path, observe_ops: int, sessions: int, forgets: int, db=None) -> dict:
    db = db or tmp_path / "shared.db"           # fresh: the four also race to create it
    go = tmp_path / "go"
    folder = tmp_path / "sessions"
    write_sessions(folder, n=sessions, users=3, app="concapp", prefix="c")
    # session ids the forget writer aims at: the observe writers' and the ingested ones
    targets = [[f"user{i % 3}", f"csess-{i:03d}"] for i in range(0, sessions, 3)]
    targets += [[u, f"{name}-s{b}"] for name in ("obsA", "obsB") for b in range(0, 60, 4)
                for u in ("user0", "user1", "user2")]
    workers = {
        "obsA": start("observe", db, tmp_path / "obsA.jsonl", go,
                      {"seed": 1, "name": "obsA", "ops": observe_ops, "users": ["user0", "user1"]}),
        "obsB": start("observe", db, tmp_path / "obsB.jsonl", go,
                      {"seed": 2, "name": "obsB", "ops": observe_ops, "users": ["user1", "user2"]}),
        "ingest": start("ingest", db, tmp_path / "ingest.jsonl", go, {"seed": 3, "folder": str(folder)}),
        "forget": start("forget", db, tmp_path / "forget.jsonl", go,
                        {"seed": 4, "requests": forgets, "pause": 0.1, "targets": targets}),
    }
    time.sleep(0.3)
    go.touch()
    ops = 0
    for name, proc in workers.items():
        stdout, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, (name, stderr[-3000:])
        ops += int(stdout.strip())
    records = []
    for name in workers:
        for line in (tmp_path / f"{name}.jsonl").read_text().splitlines():
            records.append({"writer": name, **json.loads(line)})
    backend = "PostgreSQL" if str(db).startswith("postgresql://") else "SQLite"
    return {"db": db, "records": records, "ops": ops, "backend": backend}


def check_nothing_lost_or_interleaved(db: Path, records: list[dict]) -> int:
    claimed: dict[int, str] = {}
    for i, rec in enumerate(records):
        seqs = rec["seqs"]
        if seqs:
            assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), \
                f"{rec['writer']} {rec['kind']} {rec['session']}: seqs not consecutive: {seqs}"
        for seq in seqs:
            assert seq not in claimed, f"seq {seq} claimed by {claimed[seq]} and {rec['writer']}"
            claimed[seq] = f"{rec['writer']}#{i}"
    with Ledger(db, create=False) as ledger:   # a file or a postgresql:// URL
        total = ledger._conn.execute("SELECT COUNT(*), MAX(seq) FROM events").fetchone()
        types = dict(ledger._conn.execute("SELECT seq, type FROM events").fetchall())
    assert total[0] == total[1] == len(claimed), (total, len(claimed))
    assert set(claimed) == set(range(1, total[0] + 1))
    for rec in records:
        if rec["kind"] == "forget" and rec["seqs"]:
            assert types[rec["seqs"][0]] == "Redacted"
        if rec["kind"] == "ingest" and rec["seqs"]:
            assert types[rec["seqs"][-1]] == "SessionIngested"
    return total[0]


def check_sound(db: Path) -> None:
    with Ledger(db) as ledger:
        assert ledger.verify()["ok"]
        assert ledger.replay_differences() == []


def writers_test(tmp_path, capsys, observe_ops, sessions, forgets, db=None):
    started = time.monotonic()
    result = run_writers(tmp_path, observe_ops, sessions, forgets, db)
    events = check_nothing_lost_or_interleaved(result["db"], result["records"])
    check_sound(result["db"])
    kinds = {}
    for rec in result["records"]:
        kinds[rec["kind"]] = kinds.get(rec["kind"], 0) + rec["n"]
    forgotten = sum(1 for r in result["records"] if r["kind"] == "forget" and not r["noop"])
    with capsys.disabled():
        print(f"\nconcurrent operations with nothing lost: {result['ops']} "
              f"({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))}; {forgotten} erasures "
              f"took effect) in {events} events from 4 processes on {result['backend']}, "
              f"{time.monotonic() - started:.1f}s")
    assert result["ops"] >= 0.9 * (2 * observe_ops + forgets)
    assert forgotten >= forgets // 4, "the forget writer must really race the others"


def test_four_writers_lose_and_interleave_nothing(tmp_path, capsys):
    writers_test(tmp_path, capsys, observe_ops=380, sessions=64, forgets=30)      # ~1,100


@pytest.mark.slow
def test_four_writers_lose_and_interleave_nothing_long(tmp_path, capsys):
    writers_test(tmp_path, capsys, observe_ops=700, sessions=120, forgets=60)     # ~2,060


# --- the busy timeout ------------------------------------------------------------------------

OBSERVE = ["observe", "--app", "concapp", "--user", "user0", "--predicate", "diet", "--value",
           "vegan", "--quote", "I'm vegan", "--session", "busy", "--event-id", "e1",
           "--said-at", "2026-10-01"]


@pytest.fixture
def locked(tmp_path):
    """A ledger whose write lock another connection holds (as a long transaction would)."""
    db = tmp_path / "busy.db"
    with Ledger(db, create=True) as ledger:
        ledger.observe_many([])
    sessions = write_sessions(tmp_path / "s", n=1, users=1, app="concapp")
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    yield db, sessions[0]
    holder.execute("ROLLBACK")
    holder.close()


@pytest.mark.parametrize("how", ["option", "env"])
def test_a_writer_past_the_busy_timeout_gets_a_clear_error(locked, how):
    db, _ = locked
    env = dict(ENV)
    args = [FACTLEDGER, "--db", str(db)]
    if how == "option":
        args += ["--busy-timeout", "0.3"]
    else:
        env["FACTLEDGER_BUSY_TIMEOUT"] = "0.3"
    result = subprocess.run(args + OBSERVE, capture_output=True, text=True, env=env)
    assert result.returncode == 1, result.stdout
    assert result.stderr == ("Error: the ledger is busy: another writer held it past the busy "
                             "timeout; try again\n"), result.stderr
    # How long it waited is a timing, measured in bench/, not asserted here.


def test_busy_ingest_and_forget_give_clear_errors_and_write_nothing(locked):
    db, session = locked
    conn = sqlite3.connect(db)
    before = conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]
    conn.close()
    for command in (["ingest", str(session), "--extractor", "patterns"],
                    ["forget", "--app", "concapp", "--user", "user0", "--reason", "r", "--yes"]):
        result = subprocess.run([FACTLEDGER, "--db", str(db), "--busy-timeout", "0.2", *command],
                                capture_output=True, text=True, env=ENV)
        assert result.returncode == 1, (command, result.stdout)
        assert "Traceback" not in result.stderr, result.stderr
        assert "Error: " in result.stderr and "busy" in result.stderr, result.stderr
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] == before
    conn.close()


def test_bad_busy_timeout_is_a_usage_error(tmp_path):
    result = subprocess.run([FACTLEDGER, "--db", str(tmp_path / "x.db"), "--busy-timeout", "-1",
                             "head"], capture_output=True, text=True, env=ENV)
    assert result.returncode == 2 and "Traceback" not in result.stderr
