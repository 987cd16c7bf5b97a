"""Proof commands: checkpoint, keygen, prove, cosign; and the checkpoint half of `verify`."""

from __future__ import annotations

import json
from pathlib import Path

import click

from factledger.cli.context import pass_state
from factledger.cli.files import refuse_evidence
from factledger.cli.output import dumps
from factledger.ledger import LedgerError
from factledger.ledger.service import is_server_location
from factledger.ledger.tlog.note import cosign as add_cosignature
from factledger.ledger.tlog.note import load_signer, new_signer, write_keys
from factledger.ledger.tlog.tlog_verify import (
    VerificationError,
    open_checkpoint,
    parse_vkey,
    verify_consistency_proof,
)

FILE = click.Path(dir_okay=False)


def read_text(path: str, what: str) -> str:
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise LedgerError(f"cannot read {what} {path}: {exc}") from None


def read_vkey(path: str):
    try:
        return parse_vkey(read_text(path, "the public key"))
    except VerificationError as exc:
        raise LedgerError(f"{path}: {exc}") from None


@click.command()
@click.option("--key", type=FILE, envvar="FACTLEDGER_CHECKPOINT_KEY",
              help="Private key to sign with (factledger keygen; env FACTLEDGER_CHECKPOINT_KEY); unsigned without")
@click.option("--origin", help="The ledger's name in checkpoints; only before the first one "
                               "(default: factledger/ and the first event's hash)")
@click.option("--out", type=FILE, help="Also write the checkpoint to this file")
@click.option("--projections", is_flag=True,
              help="Prove the projections first and commit their record in the checkpoint; verify starts from it")
@pass_state
def checkpoint(state, key, origin, out, projections) -> None:
    """Issue a C2SP checkpoint of the log's Merkle tree, record it, print it for publication."""
    signer = load_signer(key) if key else None
    refuse_evidence(state, out, write=True)    # before the checkpoint is recorded
    result = state.ledger().checkpoint(signer, origin, projections=projections)
    if out:
        try:
            Path(out).write_text(result["note"], encoding="utf-8")
        except OSError as exc:
            raise LedgerError(f"checkpoint {result['seq']} was recorded but {out} could not be "
                              f"written: {exc}") from None
    click.echo(result["note"], nl=False)


@click.command()
@click.option("--out", required=True, type=FILE, help="Write the private key here (0600) and the public key to OUT.pub")
@click.option("--name", help="Key name (default: the ledger's origin); a witness names itself, e.g. witness.example/w1")
@click.option("--witness", is_flag=True, help="A witness's cosigning key (C2SP tlog-cosignature, type 4)")
@pass_state
def keygen(state, out, name, witness) -> None:
    """Make an Ed25519 key pair in Go's sumdb/note text format."""
    refuse_evidence(state, out, f"{out}.pub")
    if name is None:
        if witness:
            raise LedgerError("a witness key needs --name (the witness's own name)")
        if not is_server_location(state.db) and not Path(state.db).exists():
            raise LedgerError(f"no ledger at {state.db} to name the key after: give --name")
        name = state.ledger(read_only=True).checkpoint_origin()
        if name is None:
            raise LedgerError("the ledger is empty and has no name yet: give --name")
    signer = new_signer(name, witness=witness)
    private, public = write_keys(out, signer)
    click.echo(f"wrote {private} (private, mode 0600) and {public}:\n{signer.vkey}")


@click.command()
@click.argument("seq", type=int, required=False)
@click.option("--checkpoint", "checkpoint_file", type=FILE,
              help="Prove against this checkpoint (default: the latest one recorded)")
@click.option("--from", "older", type=FILE, help="Older checkpoint (a consistency proof)")
@click.option("--to", "newer", type=FILE, help="Newer checkpoint (a consistency proof)")
@pass_state
def prove(state, seq, checkpoint_file, older, newer) -> None:
    """Inclusion proof of event SEQ, or (--from OLD --to NEW) a consistency proof, as JSON."""
    if seq is not None and (older or newer):
        raise click.UsageError("give SEQ (an inclusion proof) or --from/--to (a consistency proof), not both")
    if seq is None:
        if not (older and newer):
            raise click.UsageError("give SEQ, or both --from OLD.ckpt and --to NEW.ckpt")
        proof = state.ledger(read_only=True).prove_consistency(read_text(older, "the checkpoint"),
                                                 read_text(newer, "the checkpoint"))
    else:
        note = read_text(checkpoint_file, "the checkpoint") if checkpoint_file else None
        proof = state.ledger(read_only=True).prove_inclusion(seq, note)
    click.echo(dumps(proof))


@click.command()
@click.argument("checkpoint_file", metavar="CHECKPOINT", type=FILE)
@click.option("--key", required=True, type=FILE, help="The witness's private key (keygen --witness)")
@click.option("--pubkey", required=True, type=FILE, help="The log's public key: its signature is checked first")
@click.option("--previous", type=FILE, help="The last checkpoint this witness cosigned")
@click.option("--proof", "proof_file", type=FILE, help="Consistency proof from --previous to CHECKPOINT")
@click.option("--time", "timestamp", type=click.IntRange(min=0, max=2**63 - 1), default=None,
              help="Cosignature time, POSIX seconds (default: now)")
def cosign(checkpoint_file, key, pubkey, previous, proof_file, timestamp) -> None:
    """As a witness, add a cosignature to a checkpoint (no ledger needed): the log's signature and,
    given the previous checkpoint and a proof, consistency with it are checked first."""
    if bool(previous) != bool(proof_file):
        raise click.UsageError("--previous and --proof go together")
    note = read_text(checkpoint_file, "the checkpoint")
    log_key = read_vkey(pubkey)
    try:
        new = open_checkpoint(note, log_key)
        if previous:
            old = open_checkpoint(read_text(previous, "the checkpoint"), log_key)
            try:
                proof = json.loads(read_text(proof_file, "the proof"))
            except ValueError:
                raise LedgerError(f"{proof_file} is not JSON") from None
            verify_consistency_proof(proof if isinstance(proof, dict) else {}, old, new)
    except VerificationError as exc:
        raise LedgerError(f"not cosigned: {exc}") from None
    click.echo(add_cosignature(note, load_signer(key), timestamp), nl=False)


def checkpoint_report(ledger, checkpoint_file, pubkey, witnesses, quorum, older) -> dict:
    """`verify --checkpoint`: the checks of `ledger.proofs.verify`; raises naming the one that failed."""
    result = ledger.verify_checkpoint(
        read_text(checkpoint_file, "the checkpoint"), read_vkey(pubkey) if pubkey else None,
        [read_vkey(w) for w in witnesses], quorum, read_text(older, "the checkpoint") if older else None)
    if not result["ok"]:
        raise LedgerError(f"checkpoint {checkpoint_file}: {result['check']} check failed: {result['problem']}")
    return result


def render_checkpoint(r: dict) -> str:
    signed = f"signed by {', '.join(r['signed_by'])}" if r["signed_by"] else "signature not checked (no --pubkey)"
    older = f"; consistent with the older checkpoint (size {r['older_size']})" if "older_size" in r else ""
    return f"\ncheckpoint ok: {r['origin']} size {r['tree_size']}, {signed}; the log's tree has its root{older}"


COMMANDS = (checkpoint, keygen, prove, cosign)
