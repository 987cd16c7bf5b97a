"""One verdict for one ledger: `verify` and `replay --check` answer the same whether the checker
has the semantic extra or not (FACTLEDGER_EMBEDDER=off stands for a plain install), in both
directions; a meaning index that is absent or stale is a notice with the command that refreshes
it, never damage; recall on such a ledger says it runs without meaning.  Real subprocesses, as
an auditor runs them."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

FACTLEDGER = str(Path(sys.executable).with_name("factledger"))
SESSIONS = Path(__file__).resolve().parents[2] / "examples" / "sessions"


def fl(db: Path, *args: str, meaning: bool) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "FACTLEDGER_EMBEDDER")}
    if not meaning:
        env["FACTLEDGER_EMBEDDER"] = "off"
    return subprocess.run([FACTLEDGER, "--db", str(db), *args], capture_output=True, text=True, env=env)


def written(tmp_path: Path, meaning: bool) -> Path:
    db = tmp_path / ("with.db" if meaning else "without.db")
    assert fl(db, "init", meaning=meaning).returncode == 0
    done = fl(db, "ingest", str(SESSIONS), meaning=meaning)
    assert done.returncode == 0, done.stderr
    return db


def vector_rows(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT COUNT(*) FROM fact_vectors").fetchone()[0]


def verdict(db: Path, *args: str, meaning: bool) -> tuple[int, dict, str]:
    done = fl(db, "verify", "--json", *args, meaning=meaning)
    return done.returncode, json.loads(done.stdout), done.stderr


def same_answer(db: Path) -> dict:
    """verify and replay --check with and without the extra: one exit code, one result."""
    code_with, with_, _ = verdict(db, meaning=True)
    code_without, without, _ = verdict(db, meaning=False)
    assert code_with == code_without
    strip = ("notices", "incremental")    # the second reads the first's record: the verdict is the same
    assert {k: v for k, v in with_.items() if k not in strip} == {k: v for k, v in without.items() if k not in strip}
    checks = [fl(db, "replay", "--check", "--json", meaning=m) for m in (True, False)]
    assert checks[0].returncode == checks[1].returncode == code_with
    assert json.loads(checks[0].stdout) == json.loads(checks[1].stdout)
    return with_


def test_written_with_the_extra_verified_without(tmp_path):
    db = written(tmp_path, meaning=True)
    assert vector_rows(db) > 0
    result = same_answer(db)
    assert result["ok"] and result["meaning"]["state"] == "current"
    code, result, stderr = verdict(db, meaning=False)
    assert code == 0 and stderr == ""                    # nothing to say: the index is current
    done = fl(db, "verify", "--vectors", meaning=False)
    assert done.returncode == 0
    assert "not recomputed" in done.stderr and "FACTLEDGER_EMBEDDER is off" in done.stderr
    assert "vectors" not in json.loads(done.stdout)["checked"]
    done = fl(db, "verify", "--vectors", meaning=True)
    assert done.returncode == 0 and done.stderr == "" and "vectors" in json.loads(done.stdout)["checked"]
    # The rows are still checked as stored without the encoder: one that names another fact is
    # damage, whoever checks.
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE fact_vectors SET fact_id = 'elsewhere' WHERE seq = (SELECT MIN(seq) FROM fact_vectors)")
    for meaning in (True, False):
        done = fl(db, "verify", meaning=meaning)
        assert done.returncode == 1 and "fact_vectors (seq " in done.stderr and "fact_id not what" in done.stderr
    result = same_answer(db)
    assert not result["ok"]


def test_written_without_the_extra_verified_with(tmp_path):
    db = written(tmp_path, meaning=False)
    assert vector_rows(db) == 0
    result = same_answer(db)
    assert result["ok"] and result["meaning"]["state"] == "absent"
    code, _result, stderr = verdict(db, meaning=True)
    assert code == 0 and "no meaning vectors" in stderr and "`factledger replay`" in stderr
    check = fl(db, "replay", "--check", meaning=True)
    assert check.returncode == 0 and "no meaning vectors" in check.stderr
    # Recall with meaning on such a ledger says it runs without it (stderr, and the JSON result).
    recall = fl(db, "recall", "--app", "mealkit", "--user", "priya", "what does she eat", meaning=True)
    assert recall.returncode == 0 and "recall ran without meaning" in recall.stderr
    explained = fl(db, "recall", "--app", "mealkit", "--user", "priya", "what does she eat", "--explain",
                   "--json", meaning=True)
    assert any("without meaning" in n for n in json.loads(explained.stdout)["notices"])
    plain = fl(db, "recall", "--app", "mealkit", "--user", "priya", "what does she eat", meaning=False)
    assert plain.returncode == 0 and "meaning" not in plain.stderr       # lexical was all it could do
    # The command the notice names refreshes it.
    assert fl(db, "replay", meaning=True).returncode == 0
    assert vector_rows(db) > 0
    code, result, stderr = verdict(db, meaning=True)
    assert code == 0 and result["meaning"]["state"] == "current" and stderr == ""
    recall = fl(db, "recall", "--app", "mealkit", "--user", "priya", "what does she eat", meaning=True)
    assert recall.returncode == 0 and "meaning" not in recall.stderr


def test_a_stale_index_is_a_notice_not_damage(tmp_path):
    db = written(tmp_path, meaning=True)
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM fact_vectors WHERE seq = (SELECT MIN(seq) FROM fact_vectors)")
    result = same_answer(db)
    assert result["ok"] and result["meaning"]["state"] == "stale" and result["meaning"]["without_vector"] == 1
    for meaning in (True, False):
        code, _result, stderr = verdict(db, meaning=meaning)
        assert code == 0 and "meaning index is stale" in stderr and "`factledger replay`" in stderr
