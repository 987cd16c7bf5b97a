"""The hash chain, in one place: how a body becomes a commitment and an envelope becomes a link.

The chain covers commitments, not content: scrubbing a body (right-to-forget) keeps every link
valid, and the random salt makes a scrubbed commitment useless for guessing what was there.
"""

from __future__ import annotations

import hashlib
import os

import orjson

COMMITMENT_TAG = b"factledger/commitment/v1\x00"
LINK_TAG = b"factledger/link/v1\x00"
GENESIS = "0" * 64
SALT_BYTES = 16


def canonical(body: dict) -> bytes:
    return orjson.dumps(body, option=orjson.OPT_SORT_KEYS)


def new_salt() -> bytes:
    return os.urandom(SALT_BYTES)


def commitment(salt: bytes, body_bytes: bytes) -> str:
    return hashlib.sha256(COMMITMENT_TAG + salt + body_bytes).hexdigest()


def link(prev_hash: str, seq: int, event_id: str, type_: str, recorded_at: str, commit: str) -> str:
    digest = hashlib.sha256(LINK_TAG)
    digest.update(bytes.fromhex(prev_hash))
    digest.update(seq.to_bytes(8, "big"))
    digest.update(b"\x00".join((event_id.encode(), type_.encode(), recorded_at.encode(), b"")))
    digest.update(bytes.fromhex(commit))
    return digest.hexdigest()
