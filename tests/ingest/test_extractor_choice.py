"""Nothing leaves the machine unless asked: an ANTHROPIC_API_KEY in the environment alone does
not choose the anthropic extractor.  The proof is a local listener standing in for the API
(ANTHROPIC_BASE_URL): ingestion without a choice never connects to it, and with the choice it
does (so the listener would have seen a call).  The extractor that ran is printed."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from factledger.ledger.errors import LedgerError
from factledger.ledger.ingest.extractor import default_extractor_name

FACTLEDGER = str(Path(sys.executable).with_name("factledger"))
MEAL = str(Path(__file__).resolve().parents[2] / "examples" / "sessions" / "meal-kit")


@pytest.fixture
def listener():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    yield sock
    sock.close()


def env_for(listener, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("FACTLEDGER_EXTRACTOR", "HTTPS_PROXY", "HTTP_PROXY")}
    env.update(ANTHROPIC_API_KEY="sk-ant-test-not-a-key",
               ANTHROPIC_BASE_URL=f"http://127.0.0.1:{listener.getsockname()[1]}", **extra)
    return env


def connected(listener) -> bool:
    listener.setblocking(False)
    try:
        conn, _ = listener.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


def test_a_key_alone_sends_nothing(tmp_path, listener):
    db = str(tmp_path / "l.db")
    done = subprocess.run([FACTLEDGER, "--db", db, "ingest", MEAL, "--create", "--json"],
                          capture_output=True, text=True, env=env_for(listener))
    assert done.returncode == 0, done.stderr
    assert not connected(listener)
    assert "factledger: extractor: patterns" in done.stderr
    report = json.loads(done.stdout)
    assert report["extractor"] == "patterns" and report["ingested"] >= 1


@pytest.mark.parametrize("how", ["flag", "env"])
def test_the_choice_does_reach_out(tmp_path, listener, how):
    """The control: chosen, the extractor calls the listener (which never answers; the process is
    stopped once the connection is seen)."""
    args = ["--extractor", "anthropic"] if how == "flag" else []
    extra = {"FACTLEDGER_EXTRACTOR": "anthropic"} if how == "env" else {}
    proc = subprocess.Popen([FACTLEDGER, "--db", str(tmp_path / "l.db"), "ingest", MEAL, "--create", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env_for(listener, **extra))
    try:
        listener.settimeout(120)
        conn, _ = listener.accept()
        conn.close()
    finally:
        proc.kill()
        proc.wait()


def test_the_setting_is_checked(monkeypatch, tmp_path):
    monkeypatch.delenv("FACTLEDGER_EXTRACTOR", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-key")
    assert default_extractor_name() == "patterns"
    monkeypatch.setenv("FACTLEDGER_EXTRACTOR", "Anthropic")
    assert default_extractor_name() == "anthropic"
    monkeypatch.setenv("FACTLEDGER_EXTRACTOR", "gpt")
    with pytest.raises(LedgerError, match="FACTLEDGER_EXTRACTOR='gpt' is not an extractor"):
        default_extractor_name()
    env = {**os.environ, "FACTLEDGER_EXTRACTOR": "gpt"}
    done = subprocess.run([FACTLEDGER, "--db", str(tmp_path / "l.db"), "ingest", MEAL, "--create"],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 1 and done.stderr.startswith("Error: FACTLEDGER_EXTRACTOR")
