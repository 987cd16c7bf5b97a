"""One printable record of an erasure for the compliance file: the receipt as the ledger keeps it,
and the state of the chain when the record was made (verify's result and the head to pin).

Shared by the web view's printable page and any command that prints the same record; it holds no
personal content, because the receipt holds none (a scope hash, counts, reason, requester).
"""

from __future__ import annotations

from .errors import LedgerError
from .timeutil import iso


def erasure_record(ledger, redaction_seq: int, expect_head: str | None = None) -> dict:
    receipt = next((r for r in ledger.erasures() if r["redaction_seq"] == redaction_seq), None)
    if receipt is None:
        raise LedgerError(f"no erasure receipt at seq {redaction_seq} (see `factledger erasures`)")
    verified = ledger.verify(expect_head)
    seq, digest = ledger.head()
    return {"receipt": receipt, "verify": verified, "head": f"{seq}:{digest}",
            "expect_head": expect_head, "made_at": iso(ledger.clock())}
