"""A witness counts once per key, however often it is listed (issue 32, class 7).

`verify --checkpoint --quorum N` and the stand-alone `tlog_verify.py` counted each `--witness`
entry whose cosignature held: the same key file given twice (a copy in the auditor's key folder),
or the same key under a second name (each name has its own key id, so one witness can add a line
per name), made one witness two cosignatures.  The quorum is what resists one colluding witness.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import factledger.ledger.tlog.tlog_verify as standalone
from factledger.ledger.tlog.note import Signer, cosign, key_id, load_signer

BIN = Path(sys.executable).with_name("factledger")


def fl(tmp_path: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "FACTLEDGER_DB": str(tmp_path / "ledger.db")}
    result = subprocess.run([str(BIN), *args], capture_output=True, text=True, env=env, cwd=tmp_path)
    if check and result.returncode:
        raise AssertionError(f"factledger {' '.join(args)}: {result.returncode}\n{result.stderr}")
    return result


def audit(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """The verifier as an auditor runs it: a copied file, isolated mode, outside the project."""
    return subprocess.run([sys.executable, "-I", "tlog_verify.py", *args], capture_output=True,
                          text=True, cwd=tmp_path / "auditor")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A checkpoint cosigned by w1 (`one.ckpt`), by w1 and w2 (`two.ckpt`), and by w1 under its
    own name and a second one (`alias.ckpt`); w1's public key copied into `copy/`."""
    tmp = tmp_path_factory.mktemp("quorum")
    fl(tmp, "init")
    fl(tmp, "observe", "--app", "mealkit", "--user", "priya", "--predicate", "diet", "--value", "vegan",
       "--quote", "I am vegan now", "--session", "s1", "--event-id", "e1", "--said-at", "2026-10-01")
    fl(tmp, "keygen", "--out", "log.key")
    fl(tmp, "keygen", "--out", "w1.key", "--witness", "--name", "witness.example/w1")
    fl(tmp, "keygen", "--out", "w2.key", "--witness", "--name", "witness.example/w2")
    fl(tmp, "checkpoint", "--key", "log.key", "--out", "c.ckpt")
    one = fl(tmp, "cosign", "c.ckpt", "--key", "w1.key", "--pubkey", "log.key.pub", "--time", "1800000000").stdout
    (tmp / "one.ckpt").write_text(one)
    (tmp / "two.ckpt").write_text(cosign(one, load_signer(tmp / "w2.key"), 1800000001))
    w1 = load_signer(tmp / "w1.key")
    alias = Signer("witness.example/alias", key_id("witness.example/alias", w1.sig_type, w1.public),
                   w1.sig_type, w1.private)
    (tmp / "alias.key.pub").write_text(alias.vkey + "\n")
    (tmp / "alias.ckpt").write_text(cosign(one, alias, 1800000002))
    (tmp / "copy").mkdir()
    shutil.copy(tmp / "w1.key.pub", tmp / "copy" / "w1.key.pub")
    (tmp / "auditor").mkdir()
    shutil.copy(standalone.__file__, tmp / "auditor" / "tlog_verify.py")
    for name in ("one.ckpt", "two.ckpt", "alias.ckpt", "log.key.pub", "w1.key.pub", "w2.key.pub",
                 "alias.key.pub"):
        shutil.copy(tmp / name, tmp / "auditor" / name)
    shutil.copytree(tmp / "copy", tmp / "auditor" / "copy")
    return tmp


TWICE = {  # checkpoint, the witness keys listed: one witness each time
    "the same file twice": ("one.ckpt", ["w1.key.pub", "w1.key.pub"]),
    "a copy of the file": ("one.ckpt", ["w1.key.pub", "copy/w1.key.pub"]),
    "the same key under two names": ("alias.ckpt", ["w1.key.pub", "alias.key.pub"]),
}


def witness_args(keys: list[str]) -> list[str]:
    return [arg for key in keys for arg in ("--witness", key)]


@pytest.mark.parametrize("case", sorted(TWICE))
def test_verify_counts_one_witness_once_towards_the_quorum(world, case):
    ckpt, keys = TWICE[case]
    refused = fl(world, "verify", "--checkpoint", ckpt, "--pubkey", "log.key.pub", *witness_args(keys),
                 "--quorum", "2", check=False)
    assert refused.returncode == 1, refused.stdout
    assert refused.stderr.startswith("Error: ") and "signature check failed" in refused.stderr
    assert "only 1 witness keys given (a key listed twice counts once)" in refused.stderr
    # one witness is a quorum of one, and is all of the listed witnesses
    for quorum in (["--quorum", "1"], []):
        report = json.loads(fl(world, "verify", "--checkpoint", ckpt, "--pubkey", "log.key.pub",
                               *witness_args(keys), *quorum, "--json").stdout)
        assert report["checkpoint"]["signed_by"][1:] == ["witness.example/w1"]


@pytest.mark.parametrize("case", sorted(TWICE))
def test_the_standalone_verifier_counts_one_witness_once(world, case):
    ckpt, keys = TWICE[case]
    refused = audit(world, "checkpoint", ckpt, "--pubkey", "log.key.pub", *witness_args(keys), "--quorum", "2")
    assert refused.returncode != 0
    assert "only 1 witness keys given (a key listed twice counts once)" in refused.stderr + refused.stdout
    ok = audit(world, "checkpoint", ckpt, "--pubkey", "log.key.pub", *witness_args(keys), "--quorum", "1")
    assert ok.returncode == 0, ok.stderr


def test_two_witnesses_still_make_a_quorum_of_two(world):
    keys = ["w1.key.pub", "w2.key.pub", "copy/w1.key.pub"]
    assert fl(world, "verify", "--checkpoint", "two.ckpt", "--pubkey", "log.key.pub", *witness_args(keys),
              "--quorum", "2").returncode == 0
    assert audit(world, "checkpoint", "two.ckpt", "--pubkey", "log.key.pub", *witness_args(keys),
                 "--quorum", "2").returncode == 0
    short = fl(world, "verify", "--checkpoint", "one.ckpt", "--pubkey", "log.key.pub", *witness_args(keys),
               "--quorum", "2", check=False)
    assert short.returncode == 1 and "1 of 2 witnesses cosigned; 2 required" in short.stderr


def test_the_library_counts_a_key_once(world):
    log_key = standalone.parse_vkey((world / "log.key.pub").read_text())
    w1 = standalone.parse_vkey((world / "w1.key.pub").read_text())
    alias = standalone.parse_vkey((world / "alias.key.pub").read_text())
    for note, witnesses in (("one.ckpt", [w1, w1]), ("alias.ckpt", [w1, alias])):
        with pytest.raises(standalone.VerificationError, match="only 1 witness keys given"):
            standalone.verify_note((world / note).read_text(), log_key, witnesses, quorum=2)
        standalone.verify_note((world / note).read_text(), log_key, witnesses)      # all: the one
