"""C2SP signed notes, checkpoints and cosignatures: the Go reference vectors, an independent Ed25519
(PyNaCl) cross-check, witnesses and k-of-n, and the ways a note or key is refused."""

from __future__ import annotations

import base64
import hashlib

import nacl.exceptions
import nacl.signing
import pytest

from factledger.ledger import LedgerError
from factledger.ledger.tlog.note import checkpoint_text, cosign, new_signer, parse_skey, sign, skey_text
from factledger.ledger.tlog.tlog_verify import (
    VerificationError,
    open_checkpoint,
    parse_checkpoint,
    parse_vkey,
    split_note,
    verify_note,
)

# The example of golang.org/x/mod/sumdb/note's documentation: key, text and the exact signed note.
GO_SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
GO_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
GO_TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n"
GO_NOTE = (GO_TEXT + "\n\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n")

ROOT = hashlib.sha256(b"root").digest()


def test_the_go_reference_note_byte_for_byte():
    signer = parse_skey(GO_SKEY)
    assert signer.vkey == GO_VKEY
    assert skey_text(signer) == GO_SKEY
    assert sign(GO_TEXT, signer) == GO_NOTE                    # Ed25519 is deterministic
    assert verify_note(GO_NOTE, parse_vkey(GO_VKEY)) == GO_TEXT


def test_pynacl_verifies_our_checkpoint_and_signs_the_same_bytes():
    signer = new_signer("example.org/ledger")
    text = checkpoint_text("example.org/ledger", 42, ROOT)
    note = sign(text, signer)
    _text, [(name, raw)] = split_note(note)
    assert name == "example.org/ledger"
    assert raw[:4] == hashlib.sha256(b"example.org/ledger\n\x01" + signer.public).digest()[:4]
    nacl.signing.VerifyKey(signer.public).verify(text.encode(), raw[4:])       # raises if wrong
    seed = base64.b64decode(skey_text(signer).split("+", 4)[-1])[1:]   # base64 may hold "+"
    assert nacl.signing.SigningKey(seed).sign(text.encode()).signature == raw[4:]
    assert parse_checkpoint(text).size == 42 and parse_checkpoint(text).root == ROOT


def test_pynacl_checks_a_witness_cosignature():
    log, witness = new_signer("example.org/ledger"), new_signer("witness.example/w1", witness=True)
    text = checkpoint_text("example.org/ledger", 7, ROOT)
    note = cosign(sign(text, log), witness, timestamp=1_800_000_000)
    raw = split_note(note)[1][1][1]
    assert raw[:4] == hashlib.sha256(b"witness.example/w1\n\x04" + witness.public).digest()[:4]
    assert int.from_bytes(raw[4:12], "big") == 1_800_000_000
    message = b"cosignature/v1\ntime 1800000000\n" + text.encode()
    nacl.signing.VerifyKey(witness.public).verify(message, raw[12:])
    with pytest.raises(nacl.exceptions.BadSignatureError):
        nacl.signing.VerifyKey(witness.public).verify(text.encode(), raw[12:])
    verify_note(note, parse_vkey(log.vkey), [parse_vkey(witness.vkey)])


def test_k_of_n_witnesses():
    log = new_signer("example.org/ledger")
    w1, w2, w3 = (new_signer(f"witness.example/w{i}", witness=True) for i in (1, 2, 3))
    keys = [parse_vkey(w.vkey) for w in (w1, w2, w3)]
    note = cosign(cosign(sign(checkpoint_text("example.org/ledger", 3, ROOT), log), w1), w3)
    log_key = parse_vkey(log.vkey)
    assert verify_note(note, log_key, keys, quorum=2)
    with pytest.raises(VerificationError, match="2 of 3 witnesses cosigned; 3 required"):
        verify_note(note, log_key, keys)
    with pytest.raises(VerificationError, match="only 3 witness keys"):
        verify_note(note, log_key, keys, quorum=4)


def test_refusals_each_say_why():
    log, other = new_signer("example.org/ledger"), new_signer("example.org/ledger")
    note = sign(checkpoint_text("example.org/ledger", 3, ROOT), log)
    with pytest.raises(VerificationError, match="not signed by the log key"):
        verify_note(note, parse_vkey(other.vkey))             # same name, another key: ignored
    forged = note.replace("\n3\n", "\n4\n")
    with pytest.raises(VerificationError, match="does not verify"):
        verify_note(forged, parse_vkey(log.vkey))
    with pytest.raises(VerificationError, match="another log"):
        open_checkpoint(note, parse_vkey(log.vkey), origin="example.org/other")
    with pytest.raises(VerificationError, match="signature block"):
        verify_note(checkpoint_text("example.org/ledger", 3, ROOT), parse_vkey(log.vkey))
    with pytest.raises(VerificationError, match="control character"):
        split_note(note.replace("\n3\n", "\n3\r\n"))
    for bad in ("a\n01\n" + base64.b64encode(ROOT).decode() + "\n", "a\n1\nAAAA\n", "a\n1\n\n", "a\n-1\nx\n"):
        with pytest.raises(VerificationError):
            parse_checkpoint(bad)


def test_mangled_keys_are_refused():
    bad_vkeys = [GO_VKEY[:-1], GO_VKEY.replace("c74f20a3", "c74f20a4"), "Peter Neumann+c74f20a3+x",
                 GO_VKEY.replace("+ARpc", "+BRpc"), "PeterNeumann+c74f20a3"]
    for text in bad_vkeys:
        with pytest.raises(VerificationError):
            parse_vkey(text)
    for text in (GO_SKEY[:-2], GO_SKEY.replace("c74f20a3", "00000000"), GO_VKEY, "PRIVATE+KEY+x"):
        with pytest.raises(LedgerError):
            parse_skey(text)
    witness = new_signer("w.example/1", witness=True)
    with pytest.raises(LedgerError, match="witness key"):
        sign("x\n1\n" + base64.b64encode(ROOT).decode() + "\n", witness)
    with pytest.raises(LedgerError, match="log key"):
        cosign(GO_NOTE, parse_skey(GO_SKEY))
