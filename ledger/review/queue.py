"""The review queue's two verbs: accept a held candidate under a registry predicate, or reject it.

Both are events.  Accepting runs the candidate through the normal write path (registry rules,
decision table) with its `hold_id` set, so the fact's provenance still names the session, the
evidence event and the quote, and the queue item closes when the decision is appended.
Rejecting appends `CandidateRejected` with the reviewer's reason.

Accepting is the reviewer's own choice of predicate, so the target predicate's rules apply to
the value as to any statement of it: its normaliser (the validator's), and its closed vocabulary
when the registry gives one (a synonym or plural gives its canonical value; "teal" is no
`favorite_cuisine`).  A target of another sensitivity than the candidate was held under moves
the value into another class of readers: it is refused unless the caller confirms that class by
name (`confirm_sensitivity`), so the shell has to say it and the reviewer has to choose it.
"""

from __future__ import annotations

from factledger.ledger.domain.candidate import make_candidate
from factledger.ledger.domain.events import CandidateRejected
from factledger.ledger.domain.outcome import Outcome
from factledger.ledger.errors import LedgerError, SensitivityUnconfirmed
from factledger.ledger.registry.predicates import PredicateSpec, Registry
from factledger.ledger.registry.slots import VocabularySlot, fold_value
from factledger.ledger.review import said
from factledger.ledger.unit import UnitOfWork
from factledger.ledger.vocabulary.words import Rule
from factledger.projections.review import open_item


def _reviewer(by: str | None, reason: str | None = None) -> dict:
    """The reviewer's name and words as the events record them (absent when not given)."""
    out = {"reviewed_by": (by or "").strip()[:200], "review_reason": (reason or "").strip()[:500]}
    return {key: value for key, value in out.items() if value}


UNCLASSIFIED = "normal"      # the class of a predicate the registry does not know (its default)


def held_sensitivity(registry: Registry, candidate: dict) -> str:
    """The sensitivity class a held candidate has before a reviewer places it: its predicate's,
    or the registry's default for a predicate that declares none when the registry does not
    know it (shown as withheld from all but full clearance until then: `web/reading.py`)."""
    spec = registry.spec_for(candidate.get("predicate") or "", candidate.get("kind"), candidate.get("sensitivity"),
                             (str(candidate.get("value") or ""), str(candidate.get("quote") or "")))
    return spec.sensitivity if spec is not None else UNCLASSIFIED


def in_vocabulary(spec: PredicateSpec, value: str) -> str:
    """`value` as the predicate's vocabulary spells it (a synonym or a plural gives its canonical
    value); the value itself when the predicate has no closed vocabulary.  Refuses any other."""
    if not spec.vocabulary:
        return value
    canonical = VocabularySlot(spec.values).surface.get(fold_value(value))
    if canonical is None:
        more = len(spec.vocabulary) - 12
        shown = ", ".join(spec.vocabulary[:12]) + (f" and {more} more" if more > 0 else "")
        raise LedgerError(f"{value!r} is not in {spec.name}'s vocabulary ({shown}): accept it under another "
                          "predicate, or reject it")
    return canonical


def _confirmed(registry: Registry, item: dict, spec: PredicateSpec, confirm: str | None) -> None:
    was = held_sensitivity(registry, item["candidate"])
    if spec.sensitivity == was or (confirm or "").strip() == spec.sensitivity:
        return
    candidate = item["candidate"]
    held_as = candidate.get("predicate") or "?"
    known = registry.resolve(held_as) is not None
    before = f"{held_as} is {was}" if known else f"{held_as} is not in the registry, so it counts as {was}"
    raise SensitivityUnconfirmed(
        f"accepting {held_as} = {candidate.get('value')} for {item['app']}/{item['user']} as {spec.name} makes it "
        f"{spec.sensitivity} data, and {before}: confirm the class {spec.sensitivity} to accept it "
        f"(CLI: --confirm-sensitivity {spec.sensitivity})",
        held_as=held_as, value=str(candidate.get("value")), user=f"{item['app']}/{item['user']}",
        predicate=spec.name, sensitivity=spec.sensitivity, was=was)


def accept(work: UnitOfWork, hold_id: str, predicate: str | None, *, by: str | None = None,
           reason: str | None = None, confirm_sensitivity: str | None = None,
           kind: str | None = None) -> Outcome:
    """`predicate` None: the candidate's own (a hold `unsupported_by_quote` is accepted as it
    was proposed); `kind`: an open key of that kind, else the candidate's own kind if it had one."""
    if predicate is not None and not predicate.strip():
        raise LedgerError("say which predicate: --as PREDICATE")
    if kind is not None and kind not in work.registry.kinds:
        raise LedgerError(f"unknown kind {kind!r} (known: {', '.join(work.registry.kinds)})")
    with work.transaction():
        item = open_item(work.conn, hold_id)
        held_as = item["candidate"]
        name = predicate if predicate is not None else str(held_as.get("predicate") or "")
        spec = work.registry.spec_for(name, kind or held_as.get("kind"), held_as.get("sensitivity"),
                                      (str(held_as.get("value") or ""), str(held_as.get("quote") or "")))
        if spec is None:
            raise LedgerError(f"{name!r} is not a predicate of the registry (to keep it as a key of its own, "
                              "name its kind: --kind preference, fact, event, ...)")
        _confirmed(work.registry, item, spec, confirm_sensitivity)
        value = in_vocabulary(spec, spec.normalise_value(str(item["candidate"].get("value") or "")))
        fields = dict(item["candidate"], predicate=spec.name, value=value, app=item["app"], user=item["user"],
                      kind=spec.kind if spec.open else None)
        candidate = make_candidate(**fields)
        outcome = work.append_candidate(candidate, hold_id=hold_id, review=_reviewer(by, reason))
    outcome.summary = said.accepted(item["candidate"], item["app"], item["user"], spec.name, candidate.value,
                                    hold_id, outcome.decision, outcome.reason, outcome.fact_id, outcome.seqs)
    return outcome


def reject(work: UnitOfWork, hold_id: str, reason: str, *, by: str | None = None) -> Outcome:
    if not reason or not reason.strip():
        raise LedgerError("say why: --reason R")
    with work.transaction():
        item = open_item(work.conn, hold_id)
        event = work.store.append(CandidateRejected(
            app=item["app"], user=item["user"], reason=reason.strip()[:500], rule=Rule.REVIEWER,
            candidate=item["candidate"], hold_id=hold_id, registry_sha256=work.registry.sha256,
            **_reviewer(by)))
    return Outcome("reject", None, reason.strip(), Rule.REVIEWER, [event.seq],
                   said.rejected(item["candidate"], item["app"], item["user"], hold_id, [event.seq]))
