"""Signing side of C2SP signed notes: keys, checkpoint text, the log's signature, a witness's cosignature.

Keys use the text encodings of Go's golang.org/x/mod/sumdb/note, so tools built for Go's checksum
database and transparency-dev read them: the private key `PRIVATE+KEY+name+keyid+base64(type ||
seed)`, the public key (vkey) `name+keyid+base64(type || public key)`.  Type 0x01 is a log's
Ed25519 key, 0x04 a witness's (C2SP tlog-cosignature: its signature carries a timestamp and covers
`cosignature/v1`, the time, and the checkpoint).  Parsing and checking live in `tlog_verify.py`.
"""

from __future__ import annotations

import base64
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from factledger.ledger.errors import LedgerError
from factledger.ledger.tlog.tlog_verify import (
    COSIGNATURE,
    ED25519,
    EM_DASH,
    VerificationError,
    check_name,
    cosigned_message,
    key_id,
    split_note,
)

# cryptography is imported where a key is made, read or used, not with this module: the ledger
# imports it on every open, and only the proof commands sign (docs/performance.md).
if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

PRIVATE_PREFIX = "PRIVATE+KEY+"


@dataclass(frozen=True)
class Signer:
    name: str
    key_id: bytes
    sig_type: int
    private: Ed25519PrivateKey

    @property
    def public(self) -> bytes:
        from cryptography.hazmat.primitives import serialization

        return self.private.public_key().public_bytes(serialization.Encoding.Raw,
                                                      serialization.PublicFormat.Raw)

    @property
    def vkey(self) -> str:
        blob = base64.b64encode(bytes([self.sig_type]) + self.public).decode()
        return f"{self.name}+{self.key_id.hex()}+{blob}"


def _raw_seed(private: Ed25519PrivateKey) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return private.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                                 serialization.NoEncryption())


def new_signer(name: str, witness: bool = False) -> Signer:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    sig_type = COSIGNATURE if witness else ED25519
    private = Ed25519PrivateKey.generate()
    try:
        check_name(name)
    except VerificationError as exc:
        raise LedgerError(str(exc)) from None
    public = private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return Signer(name, key_id(name, sig_type, public), sig_type, private)


def skey_text(signer: Signer) -> str:
    blob = base64.b64encode(bytes([signer.sig_type]) + _raw_seed(signer.private)).decode()
    return f"{PRIVATE_PREFIX}{signer.name}+{signer.key_id.hex()}+{blob}"


def parse_skey(text: str) -> Signer:
    """A private key file's text; every part is checked (a key id that does not match is refused)."""
    text = text.strip()
    parts = text[len(PRIVATE_PREFIX):].split("+", 2) if text.startswith(PRIVATE_PREFIX) else []
    if len(parts) != 3:
        raise LedgerError("not a private key (PRIVATE+KEY+name+keyid+base64, as `factledger keygen` writes)")
    name, hex_id, blob = parts
    try:
        check_name(name)
        raw = base64.b64decode(blob, validate=True)
    except (VerificationError, ValueError) as exc:
        raise LedgerError(f"the private key is malformed: {exc}") from None
    if len(raw) != 33 or raw[0] not in (ED25519, COSIGNATURE):
        raise LedgerError("the private key is not an Ed25519 key of type 1 (log) or 4 (witness)")
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    private = Ed25519PrivateKey.from_private_bytes(raw[1:])
    signer = Signer(name, b"", raw[0], private)
    signer = Signer(name, key_id(name, raw[0], signer.public), raw[0], private)
    if signer.key_id.hex() != hex_id:
        raise LedgerError(f"the private key's id {hex_id} does not match its name and key")
    return signer


def load_signer(path: str | os.PathLike) -> Signer:
    try:
        return parse_skey(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise LedgerError(f"cannot read the key {path}: {exc}") from None


def write_keys(out: str | os.PathLike, signer: Signer) -> tuple[Path, Path]:
    """OUT (the private key, mode 0600, never overwritten) and OUT.pub (the vkey to publish)."""
    private, public = Path(out), Path(f"{out}.pub")
    for path in (private, public):
        if path.exists():
            raise LedgerError(f"{path} exists; keygen never overwrites a key")
    try:
        fd = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(skey_text(signer) + "\n")
        public.write_text(signer.vkey + "\n", encoding="utf-8")
    except OSError as exc:
        raise LedgerError(f"cannot write the key: {exc}") from None
    return private, public


def checkpoint_text(origin: str, size: int, root: bytes) -> str:
    """A C2SP tlog-checkpoint body: origin, tree size, base64 root hash, each line ending in newline."""
    return f"{origin}\n{size}\n{base64.b64encode(root).decode()}\n"


def sign(text: str, signer: Signer) -> str:
    """The signed note: `text`, a blank line, and the log's signature line."""
    if signer.sig_type != ED25519:
        raise LedgerError(f"{signer.name} is a witness key: it cosigns (factledger cosign), it does not sign")
    line = _line(signer, signer.private.sign(text.encode()))
    return f"{text}\n{line}"


def cosign(note: str, signer: Signer, timestamp: int | None = None) -> str:
    """`note` with a cosignature/v1 line from a witness key added (earlier lines kept as they are)."""
    if signer.sig_type != COSIGNATURE:
        raise LedgerError(f"{signer.name} is a log key; a witness key is made with `keygen --witness`")
    try:
        text, _signatures = split_note(note)
    except VerificationError as exc:
        raise LedgerError(str(exc)) from None
    timestamp = int(time.time()) if timestamp is None else timestamp
    signature = signer.private.sign(cosigned_message(text, timestamp))
    return note + _line(signer, timestamp.to_bytes(8, "big") + signature)


def _line(signer: Signer, payload: bytes) -> str:
    return f"{EM_DASH} {signer.name} {base64.b64encode(signer.key_id + payload).decode()}\n"
