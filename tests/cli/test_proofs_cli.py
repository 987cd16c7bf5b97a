"""The proof commands as real processes: keygen, checkpoint, prove, cosign, verify --checkpoint, and
the stand-alone verifier copied out of the project and run on its own."""

from __future__ import annotations

import ast
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import factledger.ledger.tlog.tlog_verify as standalone

BIN = Path(sys.executable).with_name("factledger")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sessions"


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
    """Built once (each command is a process): the examples ingested, two checkpoints, the keys."""
    tmp_path = tmp_path_factory.mktemp("proofs")
    fl(tmp_path, "init")
    fl(tmp_path, "ingest", str(EXAMPLES), "--extractor", "patterns")
    fl(tmp_path, "keygen", "--out", "log.key")
    fl(tmp_path, "keygen", "--out", "w1.key", "--witness", "--name", "witness.example/w1")
    (tmp_path / "c1.ckpt").write_text(fl(tmp_path, "checkpoint", "--key", "log.key").stdout)
    fl(tmp_path, "observe", "--app", "mealkit", "--user", "priya", "--predicate", "diet", "--value",
       "vegan", "--quote", "I am vegan now", "--session", "s9", "--event-id", "e9", "--said-at", "2026-10-01")
    fl(tmp_path, "checkpoint", "--key", "log.key", "--out", "c2.ckpt")
    (tmp_path / "auditor").mkdir()
    shutil.copy(standalone.__file__, tmp_path / "auditor" / "tlog_verify.py")
    for name in ("c1.ckpt", "c2.ckpt", "log.key.pub", "w1.key.pub"):
        shutil.copy(tmp_path / name, tmp_path / "auditor" / name)
    return tmp_path


def test_keygen_writes_a_private_key_only_its_owner_reads(world):
    assert stat.S_IMODE((world / "log.key").stat().st_mode) == 0o600
    assert (world / "log.key").read_text().startswith("PRIVATE+KEY+factledger/")
    again = fl(world, "keygen", "--out", "log.key", check=False)
    assert again.returncode == 1 and "never overwrites" in again.stderr


def test_checkpoint_prove_and_verify_end_to_end(world):
    c1, c2 = (world / "c1.ckpt").read_text(), (world / "c2.ckpt").read_text()
    assert c1.split("\n")[0] == c2.split("\n")[0] and "\n\n\u2014 " in c2
    (world / "auditor" / "inc.json").write_text(fl(world, "prove", "5", "--checkpoint", "c2.ckpt").stdout)
    (world / "auditor" / "cons.json").write_text(fl(world, "prove", "--from", "c1.ckpt", "--to", "c2.ckpt").stdout)
    for args in (["checkpoint", "c2.ckpt"], ["inclusion", "inc.json", "--checkpoint", "c2.ckpt"],
                 ["consistency", "cons.json", "--from", "c1.ckpt", "--to", "c2.ckpt"]):
        result = audit(world, *args, "--pubkey", "log.key.pub")
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["ok"] is True
    ok = fl(world, "verify", "--checkpoint", "c2.ckpt", "--pubkey", "log.key.pub", "--older", "c1.ckpt", "-t")
    assert "checkpoint ok" in ok.stdout and "consistent with the older checkpoint" in ok.stdout
    report = json.loads(fl(world, "verify", "--checkpoint", "c2.ckpt", "--pubkey", "log.key.pub", "--json").stdout)
    assert report["ok"] and report["checkpoint"]["check"] is None


def test_failures_exit_1_naming_the_check(world):
    wrong = fl(world, "verify", "--checkpoint", "c2.ckpt", "--pubkey", "w1.key.pub", check=False)
    assert wrong.returncode == 1 and "signature check failed" in wrong.stderr
    swapped = audit(world, "consistency", "--pubkey", "log.key.pub", "--from", "c2.ckpt", "--to", "c1.ckpt",
                    "/dev/null")
    assert swapped.returncode == 1 and swapped.stderr.startswith("FAILED:")
    (world / "auditor" / "inc.json").write_text(fl(world, "prove", "5").stdout)
    forged = json.loads((world / "auditor" / "inc.json").read_text())
    forged["chain_hash"] = "00" * 32
    (world / "auditor" / "forged.json").write_text(json.dumps(forged))
    result = audit(world, "inclusion", "forged.json", "--pubkey", "log.key.pub")
    assert result.returncode == 1 and "root hash" in result.stderr
    usage = fl(world, "verify", "--pubkey", "log.key.pub", check=False)
    assert usage.returncode == 2
    assert fl(world, "prove", check=False).returncode == 2


def test_witness_cosigns_and_verify_requires_it(world):
    (world / "cons.json").write_text(fl(world, "prove", "--from", "c1.ckpt", "--to", "c2.ckpt").stdout)
    cosigned = fl(world, "cosign", "c2.ckpt", "--key", "w1.key", "--pubkey", "log.key.pub",
                  "--previous", "c1.ckpt", "--proof", "cons.json", "--time", "1800000000").stdout
    (world / "c2w.ckpt").write_text(cosigned)
    (world / "auditor" / "c2w.ckpt").write_text(cosigned)
    assert fl(world, "verify", "--checkpoint", "c2w.ckpt", "--pubkey", "log.key.pub",
              "--witness", "w1.key.pub").returncode == 0
    missing = fl(world, "verify", "--checkpoint", "c2.ckpt", "--pubkey", "log.key.pub",
                 "--witness", "w1.key.pub", check=False)
    assert missing.returncode == 1 and "0 of 1 witnesses cosigned" in missing.stderr
    report = json.loads(fl(world, "verify", "--checkpoint", "c2w.ckpt", "--pubkey", "log.key.pub", "--witness",
                           "w1.key.pub", "--json").stdout)
    assert report["checkpoint"]["signed_by"] == [report["checkpoint"]["origin"], "witness.example/w1"]
    posing = fl(world, "verify", "--checkpoint", "c2.ckpt", "--pubkey", "log.key.pub", "--witness", "log.key.pub",
                check=False)                                 # the log's own signature is no cosignature
    assert posing.returncode == 1 and "witness keys cosigner keys" in posing.stderr
    ok = audit(world, "checkpoint", "c2w.ckpt", "--pubkey", "log.key.pub", "--witness", "w1.key.pub")
    assert ok.returncode == 0, ok.stderr
    refused = fl(world, "cosign", "c2.ckpt", "--key", "w1.key", "--pubkey", "w1.key.pub", check=False)
    assert refused.returncode == 1 and "not cosigned" in refused.stderr


def test_the_standalone_verifier_imports_nothing_of_the_project():
    tree = ast.parse(Path(standalone.__file__).read_text())
    roots = {(node.module or "").split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    roots |= {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
              for alias in node.names}
    assert roots - {"__future__", "cryptography"} <= set(sys.stdlib_module_names)
