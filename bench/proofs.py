"""`python -m bench.proofs --leaves N`: what the Merkle tree costs at N events.

The tree's algorithms over a real SQLite table of N synthetic chain hashes (an events table with
only `seq` and `hash`, the two columns the tree reads): the fold from scratch (what `replay` adds),
the live append per event (what every write adds), a checkpoint's root, inclusion and consistency
proofs and their stand-alone verification, the root recomputed from the log (what
`verify --checkpoint` adds to verify), and the table's bytes per event.  Figures are medians of
repeated calls; nothing here is asserted (docs/audit.md reports a run).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from factledger.ledger.tlog import merkle
from factledger.ledger.tlog.note import new_signer
from factledger.ledger.tlog.tlog_verify import verify_consistency, verify_inclusion
from factledger.projections.merkle import MerkleProjection
from factledger.projections.merkle_tree import SCHEMA, MerkleTree

EVENTS = "CREATE TABLE events (seq INTEGER PRIMARY KEY, hash TEXT NOT NULL)"


def _chain_hash(i: int) -> str:
    return hashlib.sha256(i.to_bytes(8, "big")).hexdigest()


def _median_ms(func, calls: int) -> float:
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return round(statistics.median(times) * 1000, 4)


def run(leaves: int, workdir: Path, seed: int = 7, samples: int = 1000, appends: int = 1000) -> dict:
    rng = random.Random(seed)
    conn = sqlite3.connect(workdir / "tree.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(EVENTS)
    conn.executescript(SCHEMA)
    conn.execute("BEGIN")
    for start in range(1, leaves + 1, 100_000):
        conn.executemany("INSERT INTO events VALUES (?, ?)",
                         ((i, _chain_hash(i)) for i in range(start, min(start + 100_000, leaves + 1))))
    conn.execute("COMMIT")
    out: dict = {"leaves": leaves}
    projection = MerkleProjection()

    start = time.perf_counter()
    conn.execute("BEGIN")
    projection.rebuild(conn)
    conn.execute("COMMIT")
    out["build_s"] = round(time.perf_counter() - start, 2)
    out["stored_hashes"] = merkle.stored_count(leaves)
    pages = conn.execute("SELECT COUNT(*) FROM dbstat WHERE name = 'merkle_hashes'").fetchone()[0] \
        if _has_dbstat(conn) else None
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    out["bytes_per_event"] = round(pages * page_size / leaves, 1) if pages else None

    tree = MerkleTree(conn)
    out["checkpoint_root_ms"] = _median_ms(lambda: tree.root(tree.size()), 200)
    size = tree.size()
    root = tree.root(size)
    seqs = [rng.randrange(1, size + 1) for _ in range(samples)]
    paths = {}
    pending = iter(seqs)

    def prove():
        s = next(pending)
        paths[s] = tree.inclusion(s - 1, size)

    out["inclusion_proof_ms"] = _median_ms(prove, samples)
    items = iter(paths.items())

    def check():
        s, path = next(items)
        verify_inclusion(merkle.chain_leaf(_chain_hash(s)), s - 1, size, path, root)

    out["inclusion_verify_ms"] = _median_ms(check, len(paths))
    olds = [rng.randrange(1, size) for _ in range(samples)]
    proofs = {}
    pending_olds = iter(olds)

    def consist():
        m = next(pending_olds)
        proofs[m] = (tree.root(m), tree.consistency(m, size))

    out["consistency_proof_ms"] = _median_ms(consist, samples)
    pairs = iter(proofs.items())

    def check_consistency():
        m, (old_root, path) = next(pairs)
        verify_consistency(m, size, old_root, root, path)

    out["consistency_verify_ms"] = _median_ms(check_consistency, len(proofs))
    out["consistency_proof_hashes_max"] = max(len(p) for _r, p in proofs.values())

    conn.execute("BEGIN")
    start = time.perf_counter()
    for seq in range(size + 1, size + appends + 1):
        conn.execute("INSERT INTO events VALUES (?, ?)", (seq, _chain_hash(seq)))
        projection.flush(conn)
    per_append = (time.perf_counter() - start) / appends
    conn.execute("COMMIT")
    conn.execute("BEGIN")
    start = time.perf_counter()
    for seq in range(size + appends + 1, size + 2 * appends + 1):
        conn.execute("INSERT INTO events VALUES (?, ?)", (seq, _chain_hash(seq)))
    bare = (time.perf_counter() - start) / appends
    conn.execute("COMMIT")
    out["append_us"] = round(per_append * 1e6, 1)
    out["append_bare_insert_us"] = round(bare * 1e6, 1)

    start = time.perf_counter()
    frontier = merkle.Frontier()
    for (chain_hash,) in conn.execute("SELECT hash FROM events WHERE seq <= ? ORDER BY seq", (size,)):
        frontier.append(merkle.chain_leaf(chain_hash))
    assert frontier.root() == root
    out["root_from_log_s"] = round(time.perf_counter() - start, 2)
    conn.close()
    return out


def measure(ledger, samples: int = 200, seed: int = 7) -> dict:
    """On the suite's real ledger (`python -m bench`): a signed checkpoint, proofs against it, and
    `verify_checkpoint` (which refolds the root from the log). Appends two CheckpointIssued events."""
    rng = random.Random(seed)
    signer = new_signer("bench.factledger/ledger")
    start = time.perf_counter()
    first = ledger.checkpoint(signer)
    checkpoint_ms = (time.perf_counter() - start) * 1000
    second = ledger.checkpoint(signer)
    seqs = [rng.randrange(1, first["tree_size"] + 1) for _ in range(samples)]
    pending = iter(seqs)
    inclusion = _median_ms(lambda: ledger.prove_inclusion(next(pending), second["note"]), samples)
    consistency = _median_ms(lambda: ledger.prove_consistency(first["note"], second["note"]), samples)
    start = time.perf_counter()
    if not ledger.verify_checkpoint(second["note"], older=first["note"])["ok"]:
        raise RuntimeError("the bench ledger's checkpoint does not verify")
    return {"checkpoint_ms": round(checkpoint_ms, 3), "prove_inclusion_p50_ms": inclusion,
            "prove_consistency_p50_ms": consistency,
            "verify_checkpoint_s": round(time.perf_counter() - start, 3)}


def _has_dbstat(conn: sqlite3.Connection) -> bool:
    try:
        conn.execute("SELECT 1 FROM dbstat LIMIT 1")
    except sqlite3.OperationalError:
        return False
    return True


LINES = [
    ("build_s", "tree folded from scratch (replay's share), s"),
    ("append_us", "live append per event (leaf + closed subtrees), us"),
    ("append_bare_insert_us", "  the same event's bare INSERT, for scale, us"),
    ("checkpoint_root_ms", "checkpoint root at the full size, ms"),
    ("inclusion_proof_ms", "inclusion proof, ms"),
    ("inclusion_verify_ms", "inclusion proof verified (stand-alone), ms"),
    ("consistency_proof_ms", "consistency proof (older root + path), ms"),
    ("consistency_verify_ms", "consistency proof verified (stand-alone), ms"),
    ("consistency_proof_hashes_max", "longest consistency proof, hashes"),
    ("root_from_log_s", "root recomputed from the log (verify --checkpoint), s"),
    ("bytes_per_event", "merkle_hashes bytes per event"),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.proofs", description=__doc__.split("\n")[0])
    parser.add_argument("--leaves", type=int, default=1_000_000)
    parser.add_argument("--json", dest="json_path")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="factledger-bench-proofs-") as workdir:
        print(f"building a tree of {args.leaves:,} leaves ...", file=sys.stderr, flush=True)
        result = run(args.leaves, Path(workdir))
    for key, label in LINES:
        print(f"{label:<58} {result[key]}")
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
