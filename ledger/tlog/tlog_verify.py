"""A stand-alone verifier of factledger's checkpoints and proofs, for an auditor without the ledger.

This file imports nothing from the project (only the standard library and `cryptography`), so an
auditor can copy it alone and run it:

    python tlog_verify.py checkpoint NEW.ckpt --pubkey log.pub
    python tlog_verify.py inclusion proof.json --pubkey log.pub [--checkpoint NEW.ckpt]
    python tlog_verify.py consistency proof.json --pubkey log.pub [--witness w.pub]

Formats, as published by C2SP and the IETF:
- a checkpoint is a C2SP tlog-checkpoint (origin, tree size, base64 root hash) in a C2SP signed
  note; the log signs with Ed25519 (signature type 0x01), a witness cosigns with a timestamped
  Ed25519 cosignature/v1 (type 0x04); keys are vkeys, `name+hex key id+base64(type || key)`;
- the tree is RFC 9162's: leaf = SHA-256(0x00 || chain hash), node = SHA-256(0x01 || l || r),
  and proofs are checked with RFC 9162's own algorithms (sections 2.1.3.2 and 2.1.4.2).
Each failure raises `VerificationError` naming what failed; the command prints it and exits 1.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import hashlib
import json
import sys
from dataclasses import dataclass

ED25519, COSIGNATURE = 0x01, 0x04
EM_DASH = "\u2014"
MAX_SIGNATURES = 100
INCLUSION_FORMAT = "factledger/inclusion-proof/v1"
CONSISTENCY_FORMAT = "factledger/consistency-proof/v1"
LINK_TAG = b"factledger/link/v1\x00"


class VerificationError(Exception):
    """The checkpoint, signature or proof does not hold; the message says which part failed."""


def _sha(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def leaf_hash(chain_hash: bytes) -> bytes:
    return _sha(b"\x00" + chain_hash)


def node_hash(left: bytes, right: bytes) -> bytes:
    return _sha(b"\x01" + left + right)


def chain_hash(prev_hash: str, seq: int, event_id: str, type_: str, recorded_at: str,
               commitment: str) -> str:
    """An event's chain hash from its envelope (hex in, hex out), to tie a log row to a leaf."""
    data = (LINK_TAG + bytes.fromhex(prev_hash) + seq.to_bytes(8, "big")
            + b"\x00".join((event_id.encode(), type_.encode(), recorded_at.encode(), b""))
            + bytes.fromhex(commitment))
    return hashlib.sha256(data).hexdigest()


# RFC 9162 proof verification ---------------------------------------------------------------


def verify_inclusion(leaf: bytes, index: int, size: int, path: list[bytes], root: bytes) -> None:
    """RFC 9162 section 2.1.3.2: `leaf` is leaf `index` of the tree of `size` whose root is `root`."""
    if not 0 <= index < size:
        raise VerificationError(f"inclusion: leaf index {index} is outside a tree of {size}")
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            raise VerificationError("inclusion: the proof is longer than the tree is deep")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise VerificationError("inclusion: the proof is shorter than the tree is deep")
    if r != root:
        raise VerificationError("inclusion: the path does not lead to the checkpoint's root hash")


def verify_consistency(old_size: int, new_size: int, old_root: bytes, new_root: bytes,
                       path: list[bytes]) -> None:
    """RFC 9162 section 2.1.4.2: the tree (new_size, new_root) extends (old_size, old_root)."""
    if old_size > new_size:
        raise VerificationError(f"consistency: the older tree ({old_size}) is larger than the newer ({new_size})")
    if old_size == new_size:
        if path or old_root != new_root:
            raise VerificationError("consistency: two trees of one size with different roots (a fork)")
        return
    if old_size == 0:
        if path:
            raise VerificationError("consistency: a proof from the empty tree must be empty")
        return
    if not path:
        raise VerificationError("consistency: the proof is empty")
    if old_size & (old_size - 1) == 0:
        path = [old_root, *path]
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise VerificationError("consistency: the proof is longer than the tree is deep")
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise VerificationError("consistency: the proof is shorter than the tree is deep")
    if fr != old_root:
        raise VerificationError("consistency: the proof does not lead to the older root (not a prefix)")
    if sr != new_root:
        raise VerificationError("consistency: the proof does not lead to the newer root")


# C2SP signed notes, keys and checkpoints ----------------------------------------------------


def key_id(name: str, sig_type: int, public: bytes) -> bytes:
    return _sha(name.encode() + b"\n" + bytes([sig_type]) + public)[:4]


@dataclass(frozen=True)
class VerifierKey:
    name: str
    key_id: bytes
    sig_type: int            # ED25519 (a log's key) or COSIGNATURE (a witness's)
    public: bytes


def check_name(name: str) -> str:
    if not name or any(ch.isspace() or ch == "+" for ch in name) or any(ord(ch) < 0x20 for ch in name):
        raise VerificationError(f"key name {name!r} must be non-empty, without spaces or '+'")
    return name


def parse_vkey(text: str) -> VerifierKey:
    """`name+hex key id+base64(type || 32-byte public key)`, as Go's sumdb/note writes it."""
    parts = text.strip().split("+", 2)
    if len(parts) != 3:
        raise VerificationError("a public key must look like name+keyid+base64 (a vkey)")
    name, hex_id, blob = parts
    check_name(name)
    raw = _b64(blob, "the public key")
    if len(raw) != 33 or raw[0] not in (ED25519, COSIGNATURE):
        raise VerificationError("the public key is not an Ed25519 log key (type 1) or cosigner key (type 4)")
    kid = key_id(name, raw[0], raw[1:])
    if hex_id != kid.hex():
        raise VerificationError(f"the public key's id {hex_id} does not match its name and key ({kid.hex()})")
    return VerifierKey(name, kid, raw[0], raw[1:])


def _b64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise VerificationError(f"{what} is not valid base64") from None


def split_note(note: str) -> tuple[str, list[tuple[str, bytes]]]:
    """A signed note's text (with its final newline) and its (key name, signature bytes) lines."""
    if not isinstance(note, str) or not note:
        raise VerificationError("no checkpoint given (a signed note is text)")
    if any(ord(ch) < 0x20 and ch != "\n" for ch in note):
        raise VerificationError("the note contains a control character")
    cut = note.rfind("\n\n")
    if cut < 0 or not note.endswith("\n"):
        raise VerificationError("the note has no signature block (text, blank line, signature lines)")
    text, lines = note[:cut + 1], note[cut + 2:-1].split("\n")
    if len(lines) > MAX_SIGNATURES:
        raise VerificationError(f"the note has more than {MAX_SIGNATURES} signatures")
    signatures = []
    for line in lines:
        dash, _, rest = line.partition(" ")
        name, _, blob = rest.partition(" ")
        if dash != EM_DASH or not name or not blob or " " in blob:
            raise VerificationError(f"malformed signature line {line[:60]!r}")
        raw = _b64(blob, f"the signature by {name}")
        if len(raw) < 5:
            raise VerificationError(f"the signature by {name} is too short")
        signatures.append((check_name(name), raw))
    return text, signatures


def _ed25519_ok(public: bytes, signature: bytes, message: bytes) -> bool:
    # imported here, where a signature is checked: the ledger imports this module on every open,
    # and only the proof commands check signatures (docs/performance.md)
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        Ed25519PublicKey.from_public_bytes(public).verify(signature, message)
    except InvalidSignature:
        return False
    return True


def cosigned_message(text: str, timestamp: int) -> bytes:
    """What a cosignature/v1 signs: the header line, the time line, then the whole note text."""
    return f"cosignature/v1\ntime {timestamp}\n{text}".encode()


def signature_valid(key: VerifierKey, text: str, raw: bytes) -> bool:
    """One signature line's bytes (key id already matched) checked against `text`."""
    if key.sig_type == ED25519:
        return len(raw) == 68 and _ed25519_ok(key.public, raw[4:], text.encode())
    if len(raw) != 76:
        return False
    timestamp = int.from_bytes(raw[4:12], "big")
    return timestamp < 2**63 and _ed25519_ok(key.public, raw[12:], cosigned_message(text, timestamp))


def verify_note(note: str, log_key: VerifierKey, witnesses: list[VerifierKey] = (),
                quorum: int | None = None) -> str:
    """The note's text, once the log's key and `quorum` of the witnesses (default: all) have signed.

    As C2SP asks: lines from unknown keys are ignored, a known key's line that fails rejects the
    whole note, and a key counts once however many lines it has.  A witness is its public key: one
    listed twice (the same file twice, or the same key under two names) counts once, towards the
    quorum and towards the default (all of them).
    """
    text, signatures = split_note(note)
    if log_key.sig_type != ED25519 or any(w.sig_type != COSIGNATURE for w in witnesses):
        raise VerificationError("the log key must be an Ed25519 note key (type 1), witness keys cosigner keys (type 4)")
    distinct = len({w.public for w in witnesses})
    quorum = distinct if quorum is None else quorum
    if quorum > distinct:
        raise VerificationError(f"{quorum} witness cosignatures required but only {distinct} witness keys given"
                                " (a key listed twice counts once)")
    known = {(k.name, k.key_id): k for k in (log_key, *witnesses)}
    signed: set[tuple[str, bytes]] = set()
    for name, raw in signatures:
        key = known.get((name, raw[:4]))
        if key is None:
            continue
        if not signature_valid(key, text, raw):
            raise VerificationError(f"the signature by {name} (key {raw[:4].hex()}) does not verify")
        signed.add((name, key.key_id))
    if (log_key.name, log_key.key_id) not in signed:
        raise VerificationError(f"not signed by the log key {log_key.name}+{log_key.key_id.hex()} "
                                "(wrong key, or an unsigned checkpoint)")
    cosigned = len({w.public for w in witnesses if (w.name, w.key_id) in signed})
    if cosigned < quorum:
        raise VerificationError(f"{cosigned} of {distinct} witnesses cosigned; {quorum} required")
    return text


@dataclass(frozen=True)
class Checkpoint:
    origin: str
    size: int
    root: bytes
    extensions: tuple[str, ...] = ()


def parse_checkpoint(text: str) -> Checkpoint:
    """A C2SP tlog-checkpoint body: origin, tree size (decimal, no leading zero), base64 root."""
    lines = text.split("\n")
    if len(lines) < 4 or lines[-1] != "" or any(line == "" for line in lines[:-1]):
        raise VerificationError("a checkpoint is at least three non-empty lines: origin, size, root hash")
    origin, size, root = lines[:3]
    if not size.isdigit() or not size.isascii() or (size != "0" and size.startswith("0")):
        raise VerificationError(f"the checkpoint's tree size {size!r} is not a decimal number")
    digest = _b64(root, "the checkpoint's root hash")
    if len(digest) != 32:
        raise VerificationError("the checkpoint's root hash is not 32 bytes")
    return Checkpoint(origin, int(size), digest, tuple(lines[3:-1]))


def open_checkpoint(note: str, log_key: VerifierKey, witnesses: list[VerifierKey] = (),
                    quorum: int | None = None, origin: str | None = None) -> Checkpoint:
    """Signatures first (nothing in an unverified note is trusted), then the body, then the origin."""
    checkpoint = parse_checkpoint(verify_note(note, log_key, witnesses, quorum))
    if origin is not None and checkpoint.origin != origin:
        raise VerificationError(f"the checkpoint is of another log: origin {checkpoint.origin!r}, "
                                f"expected {origin!r}")
    return checkpoint


# factledger's proof documents ---------------------------------------------------------------


def _hex(value, what: str, length: int = 32) -> bytes:
    try:
        raw = bytes.fromhex(value)
    except (TypeError, ValueError):
        raise VerificationError(f"{what} is not hex") from None
    if len(raw) != length:
        raise VerificationError(f"{what} is not {length} bytes")
    return raw


def _int(proof: dict, field: str) -> int:
    value = proof.get(field)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise VerificationError(f"the proof's {field} is not a non-negative integer")
    return value


def _path(proof: dict) -> list[bytes]:
    path = proof.get("path")
    if not isinstance(path, list):
        raise VerificationError("the proof's path is not a list")
    return [_hex(p, f"path entry {i}") for i, p in enumerate(path)]


def _same(checkpoint: Checkpoint, size: int, root_hex, what: str) -> None:
    if checkpoint.size != size or checkpoint.root != _hex(root_hex, f"the proof's {what} root"):
        raise VerificationError(f"the proof's {what} tree (size {size}) is not the checkpoint's "
                                f"(size {checkpoint.size})")


def verify_inclusion_proof(proof: dict, checkpoint: Checkpoint) -> dict:
    """An inclusion proof document against a checkpoint already opened (signatures checked)."""
    if proof.get("format") != INCLUSION_FORMAT:
        raise VerificationError(f"not an inclusion proof (format must be {INCLUSION_FORMAT})")
    seq, size = _int(proof, "seq"), _int(proof, "tree_size")
    _same(checkpoint, size, proof.get("root_hash"), "")
    leaf = leaf_hash(_hex(proof.get("chain_hash"), "the event's chain hash"))
    verify_inclusion(leaf, seq - 1, size, _path(proof), checkpoint.root)
    return {"ok": True, "seq": seq, "tree_size": size, "origin": checkpoint.origin}


def verify_consistency_proof(proof: dict, old: Checkpoint, new: Checkpoint) -> dict:
    """A consistency proof document against two checkpoints already opened."""
    if proof.get("format") != CONSISTENCY_FORMAT:
        raise VerificationError(f"not a consistency proof (format must be {CONSISTENCY_FORMAT})")
    if old.origin != new.origin:
        raise VerificationError(f"the two checkpoints are of different logs ({old.origin!r}, {new.origin!r})")
    _same(old, _int(proof, "old_size"), proof.get("old_root"), "older")
    _same(new, _int(proof, "new_size"), proof.get("new_root"), "newer")
    verify_consistency(old.size, new.size, old.root, new.root, _path(proof))
    return {"ok": True, "old_size": old.size, "new_size": new.size, "origin": new.origin}


# command line --------------------------------------------------------------------------------


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise VerificationError(f"cannot read {path}: {exc}") from None


def _json(path: str) -> dict:
    try:
        data = json.loads(_read(path))
    except ValueError:
        raise VerificationError(f"{path} is not JSON") from None
    if not isinstance(data, dict):
        raise VerificationError(f"{path} is not a JSON object")
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tlog_verify", description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=("checkpoint", "inclusion", "consistency"))
    parser.add_argument("file", help="the checkpoint, or the proof JSON")
    parser.add_argument("--pubkey", required=True, help="the log's public key (vkey file)")
    parser.add_argument("--witness", action="append", default=[], help="a witness's public key (repeatable)")
    parser.add_argument("--quorum", type=int, default=None, help="witness cosignatures required (default: all)")
    parser.add_argument("--origin", help="the origin the checkpoint must name")
    parser.add_argument("--checkpoint", help="inclusion: the checkpoint you trust (default: the one in the proof)")
    parser.add_argument("--from", dest="old", help="consistency: the older checkpoint you trust")
    parser.add_argument("--to", dest="new", help="consistency: the newer checkpoint you trust")
    args = parser.parse_args(argv)
    try:
        log_key = parse_vkey(_read(args.pubkey))
        witnesses = [parse_vkey(_read(w)) for w in args.witness]

        def opened(note: str) -> Checkpoint:
            return open_checkpoint(note, log_key, witnesses, args.quorum, args.origin)

        if args.what == "checkpoint":
            c = opened(_read(args.file))
            result = {"ok": True, "origin": c.origin, "tree_size": c.size,
                      "root_hash": base64.b64encode(c.root).decode(), "extensions": list(c.extensions)}
        elif args.what == "inclusion":
            proof = _json(args.file)
            note = _read(args.checkpoint) if args.checkpoint else proof.get("checkpoint", "")
            result = verify_inclusion_proof(proof, opened(note))
        else:
            proof = _json(args.file)
            old = _read(args.old) if args.old else proof.get("old_checkpoint", "")
            new = _read(args.new) if args.new else proof.get("new_checkpoint", "")
            result = verify_consistency_proof(proof, opened(old), opened(new))
    except VerificationError as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
