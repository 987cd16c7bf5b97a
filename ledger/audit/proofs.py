"""Checkpoints and proofs: the use cases behind `checkpoint`, `prove` and `verify --checkpoint`.

A checkpoint is the Merkle tree head of the log at the moment it is issued, as a C2SP checkpoint
(signed when a key is given), recorded as a `CheckpointIssued` event and printed for publication.
Proofs are JSON documents holding only hashes (chain hashes, tree hashes, roots) and the
checkpoints they refer to, never a body or a partition: `tlog_verify.py` checks them without
the ledger.  Verifying a checkpoint against the ledger recomputes the roots from the events table
itself, so neither a rewritten log nor a stale or doctored tree table can pass.

The tree table is a projection, and a writer of the file can edit it: nothing is signed or proved
from it unchecked.  `issue` signs the root recomputed from the events' chain hashes (and refuses
when the stored tree disagrees); a proof is served only once its path, read from the stored tree,
verifies against the root the log gives at the checkpoint's size.  Either disagreement is
`ProjectionMismatch` ("the ledger is damaged").
"""

from __future__ import annotations

import base64

from factledger.ledger.domain.eventrow import body_of
from factledger.ledger.domain.events import EVENT, CheckpointIssued
from factledger.ledger.errors import LedgerError, ProjectionMismatch
from factledger.ledger.forget.scope import ALL_APPS, CHECKPOINTS_USER
from factledger.ledger.store.eventlog import head
from factledger.ledger.tlog import merkle
from factledger.ledger.tlog.note import Signer, checkpoint_text, sign
from factledger.ledger.tlog.tlog_verify import (
    CONSISTENCY_FORMAT,
    INCLUSION_FORMAT,
    Checkpoint,
    VerificationError,
    VerifierKey,
    check_name,
    open_checkpoint,
    parse_checkpoint,
    signature_valid,
    split_note,
    verify_consistency,
    verify_inclusion,
)
from factledger.projections.merkle_tree import MerkleTree

APP, USER = ALL_APPS, CHECKPOINTS_USER        # the partition of CheckpointIssued: the ledger's own
ORIGIN_PREFIX = "factledger/"
PROJECTIONS = "projections"       # a checkpoint's extension line `projections <hex>`: a record's digest (verifycheck)


def origin(conn) -> str | None:
    """The name in every checkpoint of this ledger: the first checkpoint's origin, else one made
    from the first event's chain hash (a copy or export of the log keeps it; another ledger's
    differs).  None while the log is empty."""
    row = conn.execute(f"SELECT body FROM events WHERE app = ? AND user = ? AND type = '{EVENT.CheckpointIssued}'"
                       " AND body IS NOT NULL ORDER BY seq LIMIT 1", (APP, USER)).fetchone()
    if row is not None:
        return body_of(row[0])["origin"]
    first = conn.execute("SELECT hash FROM events WHERE seq = 1").fetchone()
    return None if first is None else ORIGIN_PREFIX + first[0][:32]


def issue(ledger, signer: Signer | None = None, name: str | None = None,
          projections: tuple[int, str] | None = None) -> dict:
    """Checkpoint the tree as it stands, record it, and return the note to print.  `projections`:
    (seq, digest) of a record of the projections proved at that seq (`verifycheck`), committed by
    an extension line of the checkpoint when the log's head is still that seq."""
    with ledger.transaction():
        conn = ledger.conn
        size = head(conn)[0]
        if size == 0:
            raise LedgerError("the ledger is empty: there is nothing to checkpoint yet")
        if projections is not None and projections[0] != size:
            raise LedgerError("the log was written while its projections were checked: run checkpoint again")
        established = origin(conn)
        if name is not None and name != established and _has_checkpoint(conn):
            raise LedgerError(f"this ledger's checkpoints already name it {established!r}")
        log_origin = name or established
        try:
            check_name(log_origin)
        except VerificationError as exc:
            raise LedgerError(f"origin {log_origin!r}: {exc}") from None
        ledger.projector.flush(conn)          # the tree catches up with any event it has not folded
        root = _log_root(conn, size)          # what is signed is the log's, the stored tree checked
        text = checkpoint_text(log_origin, size, root)
        if projections is not None:
            text += f"{PROJECTIONS} {projections[1]}\n"
        note = sign(text, signer) if signer is not None else text
        event = ledger.store.append(CheckpointIssued(
            app=APP, user=USER, origin=log_origin, tree_size=size, root_hash=root.hex(), note=note,
            key_name=signer.name if signer else None, key_id=signer.key_id.hex() if signer else None))
    return {"note": note, "seq": event.seq, "origin": log_origin, "tree_size": size,
            "root_hash": root.hex(), "signed": signer is not None}


def _has_checkpoint(conn) -> bool:
    return conn.execute(f"SELECT 1 FROM events WHERE app = ? AND user = ? AND type = '{EVENT.CheckpointIssued}'"
                        " LIMIT 1", (APP, USER)).fetchone() is not None


def notes(conn):
    """Every recorded checkpoint's note, the latest first."""
    for (body,) in conn.execute(f"SELECT body FROM events WHERE app = ? AND user = ? AND type = "
                                f"'{EVENT.CheckpointIssued}' AND body IS NOT NULL ORDER BY seq DESC", (APP, USER)):
        yield body_of(body)["note"]


def latest(conn) -> str | None:
    row = conn.execute(f"SELECT body FROM events WHERE app = ? AND user = ? AND type = '{EVENT.CheckpointIssued}'"
                       " AND body IS NOT NULL ORDER BY seq DESC LIMIT 1", (APP, USER)).fetchone()
    return None if row is None else body_of(row[0])["note"]


def read_note(note: str) -> Checkpoint:
    """A checkpoint's body, signed or bare (the prover checks roots, not signatures)."""
    try:
        text = split_note(note)[0] if "\n\n" in note else note
        return parse_checkpoint(text)
    except VerificationError as exc:
        raise LedgerError(f"not a checkpoint: {exc}") from None


def _ours(conn, note: str, which: str = "the checkpoint") -> Checkpoint:
    """A checkpoint this ledger can prove against: our origin, within our log, our root at its size."""
    checkpoint = read_note(note)
    mine = origin(conn)
    if mine is None:
        raise LedgerError(f"the ledger is empty: {which} (origin {checkpoint.origin!r}, {checkpoint.size} events)"
                          " cannot be of it")
    if checkpoint.origin != mine:
        raise LedgerError(f"{which} is of another log: origin {checkpoint.origin!r}, this ledger is {mine!r}")
    events = head(conn)[0]
    if checkpoint.size > events:
        raise LedgerError(f"{which} covers {checkpoint.size} events; this ledger's log has {events}")
    if _log_root(conn, checkpoint.size) != checkpoint.root:
        raise LedgerError(f"{which}'s root is not this ledger's tree at size {checkpoint.size}: "
                          "the log was rewritten, or the checkpoint is of a fork")
    return checkpoint


def _log_root(conn, size: int) -> bytes:
    """The tree's root at `size` recomputed from the events' chain hashes, after checking that
    the stored tree (`merkle_hashes`, a projection) gives the same: a forged or missing node
    row raises `ProjectionMismatch` rather than be signed or proved from."""
    from_log = _roots_from_log(conn, [size]).get(size)
    if from_log is None:
        raise LedgerError(f"the log holds fewer than {size} events")
    tree = MerkleTree(conn)
    try:
        stored = tree.root(size) if tree.size() >= size else None
    except LedgerError:
        stored = None                          # a node row deleted
    if stored != from_log:
        raise ProjectionMismatch("merkle_hashes", None, size,
                                 "the stored Merkle tree's root differs from the one the log's chain hashes give")
    return from_log


def _tree_path(conn, read) -> list[bytes]:
    """A proof path read from the stored tree; a node row deleted is damage, not bad input."""
    try:
        return read(MerkleTree(conn))
    except LedgerError as exc:
        raise ProjectionMismatch("merkle_hashes", None, None, str(exc)) from None


def inclusion(conn, seq: int, note: str | None = None) -> dict:
    """The proof that event `seq` is leaf seq - 1 of the checkpoint's tree (default: the latest one)."""
    note = note or latest(conn)
    if note is None:
        raise LedgerError("no checkpoint yet: run `factledger checkpoint` (or give --checkpoint FILE)")
    checkpoint = _ours(conn, note)
    if not 1 <= seq <= checkpoint.size:
        raise LedgerError(f"event {seq} is not covered by the checkpoint (events 1..{checkpoint.size})")
    chain_hash = conn.execute("SELECT hash FROM events WHERE seq = ?", (seq,)).fetchone()[0]
    path = _tree_path(conn, lambda tree: tree.inclusion(seq - 1, checkpoint.size))
    try:                                       # the path is served only if it proves the leaf
        verify_inclusion(merkle.chain_leaf(chain_hash), seq - 1, checkpoint.size, path, checkpoint.root)
    except VerificationError:
        raise ProjectionMismatch("merkle_hashes", None, seq, "the stored tree's inclusion path does not "
                                 "reach the root the log gives") from None
    return {"format": INCLUSION_FORMAT, "origin": checkpoint.origin, "seq": seq,
            "tree_size": checkpoint.size, "root_hash": checkpoint.root.hex(), "chain_hash": chain_hash,
            "leaf_hash": merkle.chain_leaf(chain_hash).hex(), "path": [p.hex() for p in path],
            "checkpoint": note}


def consistency(conn, old_note: str, new_note: str) -> dict:
    """The proof that the newer checkpoint's tree extends the older one's."""
    old, new = _ours(conn, old_note, "the older checkpoint"), _ours(conn, new_note, "the newer checkpoint")
    if old.size > new.size:
        raise LedgerError(f"--from covers {old.size} events and --to {new.size}: give the older one as --from")
    path = _tree_path(conn, lambda tree: tree.consistency(old.size, new.size))
    try:                                       # the path is served only if it proves the extension
        verify_consistency(old.size, new.size, old.root, new.root, path)
    except VerificationError:
        raise ProjectionMismatch("merkle_hashes", None, new.size, "the stored tree's consistency path does "
                                 "not join the roots the log gives") from None
    return {"format": CONSISTENCY_FORMAT, "origin": new.origin, "old_size": old.size,
            "old_root": old.root.hex(), "new_size": new.size, "new_root": new.root.hex(),
            "path": [p.hex() for p in path], "old_checkpoint": old_note, "new_checkpoint": new_note}


def verify(conn, note: str, log_key: VerifierKey | None = None, witnesses: list[VerifierKey] = (),
           quorum: int | None = None, older: str | None = None) -> dict:
    """Check a checkpoint against this ledger; the first failed check is named in `check`.

    signature (with a key) -> origin -> size -> root (recomputed from the events' chain hashes)
    -> tree (the stored tree agrees) -> consistency (with an older checkpoint, same checks).
    """
    result = {"ok": True, "check": None, "problem": None, "signed_by": None}

    def fail(check: str, problem: str) -> dict:
        result.update(ok=False, check=check, problem=problem)
        return result

    notes = [("checkpoint", note)] + ([("older checkpoint", older)] if older else [])
    opened: list[Checkpoint] = []
    for which, text in notes:
        try:
            if log_key is not None:                # the witness policy is the newer checkpoint's
                opened.append(open_checkpoint(text, log_key, witnesses if not opened else [],
                                              quorum if not opened else None))
            else:
                opened.append(read_note(text))
        except VerificationError as exc:
            return fail("signature", f"{which}: {exc}")
        except LedgerError as exc:
            return fail("format", f"{which}: {exc}")
    if log_key is not None:
        result["signed_by"] = [log_key.name, *_cosigners(note, witnesses)]
    checkpoint = opened[0]
    result.update(origin=checkpoint.origin, tree_size=checkpoint.size,
                  root_hash=checkpoint.root.hex())
    mine = origin(conn)
    if mine is None:
        return fail("origin", f"the ledger is empty: the checkpoint (origin {checkpoint.origin!r},"
                              f" {checkpoint.size} events) cannot be of it")
    for which, c in zip(("checkpoint", "older checkpoint"), opened):
        if c.origin != mine:
            return fail("origin", f"the {which} is of another log: origin {c.origin!r}, this ledger is {mine!r}")
    sizes = sorted({c.size for c in opened})
    roots = _roots_from_log(conn, sizes)
    for which, c in zip(("checkpoint", "older checkpoint"), opened):
        if c.size not in roots:
            return fail("size", f"the {which} covers {c.size} events but the log holds {len(roots) and max(roots)}"
                        " (truncated?)")
        if roots[c.size] != c.root:
            return fail("root", f"the log's tree at size {c.size} has root {_b64(roots[c.size])}, the {which} "
                        f"says {_b64(c.root)}: an event at or before seq {c.size} was rewritten, or the "
                        "log was cut and re-extended")
    tree = MerkleTree(conn)
    if tree.size() < checkpoint.size or tree.root(checkpoint.size) != checkpoint.root:
        return fail("tree", "the stored Merkle tree disagrees with the log: run `factledger replay`")
    if older:
        old = opened[1]
        try:
            verify_consistency(old.size, checkpoint.size, old.root, checkpoint.root,
                               tree.consistency(old.size, checkpoint.size) if old.size <= checkpoint.size else [])
        except VerificationError as exc:
            return fail("consistency", str(exc))
        result["older_size"] = old.size
    return result


def _cosigners(note: str, witnesses: list[VerifierKey]) -> list[str]:
    """The witnesses whose cosignature on an already verified note holds (some may not have signed),
    each key once (under the first name it is listed with), as the quorum counts them."""
    text, signatures = split_note(note)
    names: dict[bytes, str] = {}
    for w in witnesses:
        if w.public not in names and any(name == w.name and raw[:4] == w.key_id and signature_valid(w, text, raw)
                                         for name, raw in signatures):
            names[w.public] = w.name
    return list(names.values())


def _roots_from_log(conn, sizes: list[int]) -> dict[int, bytes]:
    """The tree's root at each of `sizes`, folded from the events' chain hashes (no tree table).
    The largest size the log reaches maps to itself (0 when empty), so a missing size shows."""
    frontier, roots, wanted = merkle.Frontier(), {}, set(sizes)
    if 0 in wanted:
        roots[0] = merkle.EMPTY_ROOT
    limit = max(sizes) if sizes else 0
    for (chain_hash,) in conn.execute("SELECT hash FROM events WHERE seq <= ? ORDER BY seq", (limit,)):
        frontier.append(merkle.chain_leaf(chain_hash))
        if frontier.size in wanted:
            roots[frontier.size] = frontier.root()
    if frontier.size not in roots:
        roots.setdefault(frontier.size, frontier.root())
    return roots


def _b64(digest: bytes) -> str:
    return base64.b64encode(digest).decode()
