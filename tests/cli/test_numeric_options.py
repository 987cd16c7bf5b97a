"""Every numeric option of the CLI, at and past its range: `Error:` and exit 1, never a traceback.

SQLite integers stop at 2**63 - 1 and dates at year 1: before the range checks, `log --after
2**70` and `log --limit 2**70` raised OverflowError, `verify --expect-head 2**70:HASH` TypeError,
and `retain --older-than 800000` OverflowError (its cut-off fell before year 1).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from factledger.cli.main import cli
from factledger.ledger import Ledger, LedgerError

FACTLEDGER = str(Path(sys.executable).with_name("factledger"))
HUGE = str(2**70)
SEQ_MAX = str(2**63 - 1)
HASH = "ab" * 32


@pytest.fixture
def db(tmp_path, monkeypatch):
    monkeypatch.setenv("FACTLEDGER_NOW", "2026-11-01T00:00:00Z")
    path = str(tmp_path / "n.db")
    result = CliRunner().invoke(cli, ["--db", path, "observe", "--create", "--app", "a", "--user", "u",
                                      "--predicate", "diet", "--value", "vegan", "--quote", "I'm vegan",
                                      "--session", "s1", "--event-id", "e1", "--said-at", "2026-08-30"])
    assert result.exit_code == 0, result.output
    return path


def invoke(db, *args):
    return CliRunner().invoke(cli, ["--db", db, *args])


BAD = [
    ("log", "--after", HUGE),
    ("log", "--after", "-1"),
    ("log", "--after", str(2**63)),
    ("log", "--limit", HUGE),
    ("log", "--limit", "-1"),
    ("verify", "--expect-head", f"{HUGE}:{HASH}"),
    ("verify", "--expect-head", f"{2**63}:{HASH}"),
    ("verify", "--expect-head", f"\u00b2:{HASH}"),            # a digit to isdigit(), not to int()
    ("retain", "--all", "--older-than", "800000", "--predicate", "diet"),
    ("retain", "--all", "--older-than", "800000"),
    ("retain", "--all", "--older-than", HUGE, "--sensitivity", "normal"),
    ("retain", "--all", "--older-than", "0", "--predicate", "diet"),
    ("retain", "--all", "--older-than", "-5", "--predicate", "diet"),
    ("retain", "--all", "--serves-older-than", "800000"),
    ("retain", "--all", "--serves-older-than", HUGE),
    ("retain", "--all", "--serves-older-than", "0"),
    ("observe", "--app", "a", "--user", "u", "--predicate", "diet", "--value", "x", "--quote", "x",
     "--session", "s", "--event-id", "e", "--said-at", "2026-01-01", "--confidence", "1e400"),
    ("observe", "--app", "a", "--user", "u", "--predicate", "diet", "--value", "x", "--quote", "x",
     "--session", "s", "--event-id", "e", "--said-at", "2026-01-01", "--confidence", "nan"),
    ("recall", "x", "--app", "a", "--user", "u", "--limit", "-1"),
    ("recall", "x", "--app", "a", "--user", "u", "--budget", "-1"),
    ("recall", "x", "--app", "a", "--user", "u", "--max-age", "9" * 400),
    ("recall", "x", "--app", "a", "--user", "u", "--half-life", "0"),
    ("recall", "x", "--app", "a", "--user", "u", "--half-life", "9" * 400 + "y"),
    ("recall", "x", "--app", "a", "--user", "u", "--min-confidence", "1e400"),
    ("recall", "x", "--app", "a", "--user", "u", "--recency-weight", "-0.1"),
]


@pytest.mark.parametrize("args", BAD, ids=lambda a: " ".join(a)[:60])
def test_out_of_range_is_an_error_not_a_traceback(db, args):
    result = invoke(db, *args)
    assert result.exit_code == 1, (result.output, result.exception)
    assert result.stderr.startswith("Error: "), result.stderr
    assert not isinstance(result.exception, (OverflowError, TypeError, ValueError))


GOOD = [
    ("log", "--after", SEQ_MAX),
    ("log", "--limit", SEQ_MAX),
    ("log", "--after", "0", "--limit", "0"),
    ("retain", "--all", "--older-than", "100000", "--predicate", "diet"),
    ("retain", "--all", "--older-than", "1", "--predicate", "diet"),
    ("retain", "--all", "--serves-older-than", "100000"),
    ("retain", "--all", "--serves-older-than", "1"),
    ("recall", "x", "--app", "a", "--user", "u", "--limit", HUGE, "--budget", HUGE),
    ("recall", "x", "--app", "a", "--user", "u", "--max-age", "99999999999999d"),
    ("recall", "x", "--app", "a", "--user", "u", "--half-life", "99999999999999999999y"),
]


@pytest.mark.parametrize("args", GOOD, ids=lambda a: " ".join(a)[:60])
def test_the_edges_of_each_range_still_work(db, args):
    result = invoke(db, *args)
    assert result.exit_code == 0, (result.output, result.exception)


def test_expect_head_at_the_largest_seq_is_beyond_the_log_not_a_crash(db):
    result = invoke(db, "verify", "--expect-head", f"{SEQ_MAX}:{HASH}")
    assert result.exit_code == 1 and "beyond the end of the log" in result.stderr


def test_the_real_console_script_says_error(db):
    env = {"FACTLEDGER_NOW": "2026-11-01T00:00:00Z", "PATH": ""}
    for args in (["log", "--after", HUGE], ["log", "--limit", HUGE],
                 ["verify", "--expect-head", f"{HUGE}:{HASH}"], ["retain", "--all", "--older-than", "800000"]):
        done = subprocess.run([FACTLEDGER, "--db", db, *args], capture_output=True, text=True, env=env)
        assert done.returncode == 1 and done.stderr.startswith("Error: "), (args, done.stderr)
        assert "Traceback" not in done.stderr


def test_the_library_checks_the_same_ranges(tmp_path):
    with Ledger(tmp_path / "l.db", create=True) as ledger:
        for call in (lambda: ledger.log(after=2**70), lambda: ledger.log(limit=2**70),
                     lambda: ledger.log(after=-1), lambda: ledger.log(limit=True),
                     lambda: ledger.verify(f"{2**70}:{HASH}"),
                     lambda: ledger.retain(older_than=800000, predicate="diet"),
                     lambda: ledger.retain(older_than=1.5, predicate="diet")):
            with pytest.raises(LedgerError):
                call()
        assert json.loads(json.dumps(ledger.log(after=2**63 - 1))) == []


def test_a_cutoff_before_year_one_is_refused_even_within_the_day_range(tmp_path):
    from factledger.ledger.vocabulary.clock import fixed_clock

    with Ledger(tmp_path / "l.db", clock=fixed_clock("0100-01-01"), create=True) as ledger:
        with pytest.raises(LedgerError, match="before year 1"):
            ledger.retain(older_than=99_999, predicate="diet")


def test_the_proof_commands_numbers(db, tmp_path):
    """`prove SEQ` and `verify --quorum N` far past any log: `Error:` and exit 1."""
    key = tmp_path / "k"
    assert invoke(db, "keygen", "--out", str(key), "--name", "test.example/log").exit_code == 0
    assert invoke(db, "checkpoint", "--key", str(key), "--out", str(tmp_path / "c.ckpt")).exit_code == 0
    for args in (("prove", HUGE), ("prove", SEQ_MAX), ("prove", "0"),
                 ("verify", "--checkpoint", str(tmp_path / "c.ckpt"), "--pubkey", str(key) + ".pub",
                  "--quorum", HUGE)):
        result = invoke(db, *args)
        assert result.exit_code == 1 and result.stderr.startswith("Error: "), (args, result.output)


@pytest.mark.parametrize("args", [
    ("--busy-timeout", "1e400", "head"), ("--busy-timeout", "-1", "head"),
    ("serve", "--port", "70000"), ("cosign", "c.ckpt", "--key", "k", "--pubkey", "k.pub", "--time", HUGE),
], ids=lambda a: " ".join(a)[:40])
def test_click_ranges_are_usage_errors_not_tracebacks(db, args):
    """Options whose range click checks are usage errors (exit 2), as for any malformed option."""
    result = invoke(db, *args)
    assert result.exit_code == 2 and "Error: " in result.stderr, result.output
    assert not isinstance(result.exception, (OverflowError, TypeError))


def test_a_bad_future_tolerance_is_an_error(db):
    for value in ("1e400", "-1d", "soon"):
        result = invoke(db, "--future-tolerance", value, "facts", "--app", "a", "--user", "u")
        assert result.exit_code == 1 and result.stderr.startswith("Error: "), result.output
