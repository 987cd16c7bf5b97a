"""The validator rules that need only the candidate and the registry (docs/ingestion.md).

Ingestion adds the rules that need the session (evidence exists, quote occurs, said_at taken
from the event).  The outcome is a verdict, not an exception: a candidate that is not applied
still leaves a `CandidateRejected` or `CandidateHeld` event saying why.
"""

from __future__ import annotations

from dataclasses import dataclass

from factledger.ledger.domain.candidate import MAX_VALUE, Candidate, clean_text
from factledger.ledger.registry.predicates import PredicateSpec, Registry
from factledger.ledger.vocabulary.words import Reason


@dataclass(frozen=True)
class Verdict:
    action: str                      # "apply", "reject" or "hold"
    candidate: Candidate
    spec: PredicateSpec | None = None
    reason: str = ""
    basis_claimed: str | None = None


def check(candidate: Candidate, registry: Registry, key_kind: str | None = None) -> Verdict:
    """`key_kind`: the kind the partition's open key of this name already has, for a candidate
    that names none (an open key is reused, not held, when a later statement omits its kind)."""
    spec = registry.spec_for(candidate.predicate, candidate.kind or key_kind, candidate.sensitivity,
                             (candidate.value, candidate.quote))
    if spec is None:
        return Verdict("hold", candidate, reason=Reason.UNKNOWN_PREDICATE)
    claimed = candidate.basis
    basis = claimed
    if basis == "verified" and candidate.author != "document":
        basis = "stated"                       # only a document can verify
    if spec.kind == "preference" and basis == "stated" and candidate.author != "user":
        if claimed != "inferred":
            return Verdict("reject", candidate, spec, reason=Reason.PREFERENCE_NOT_USER_AUTHORED)
    if basis == "stated" and candidate.author != "user":
        basis = "inferred"                     # agent or tool text is not the user's word
    value = clean_text(spec.normalise_value(candidate.value), "value", MAX_VALUE)
    kind = spec.kind if spec.open else None
    if (spec.name, basis, value, kind) == (candidate.predicate, candidate.basis, candidate.value, candidate.kind):
        adjusted = candidate                   # nothing to adjust (most candidates): no copy
    else:
        adjusted = candidate.model_copy(update={"predicate": spec.name, "basis": basis, "value": value,
                                                "kind": kind})
    return Verdict("apply", adjusted, spec, basis_claimed=claimed if claimed != basis else None)
