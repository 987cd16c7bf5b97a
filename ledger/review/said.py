"""What a reviewer's decision says it did, in one sentence the CLI and the web view both print.

A reviewer who clicks through a queue must be able to tell from the confirmation alone what was
recorded: the predicate and the value, whose they are (app and user), and the seq of each event
written, with the full ids (a truncated id matches nothing a reviewer can look up).
"""

from __future__ import annotations


def _key(subject: str, predicate: str) -> str:
    return predicate if subject == "user" else f"{subject} {predicate}"


def _value(value: str, negated: bool = False) -> str:
    return f"not {value}" if negated else value


def _seqs(seqs: list[int]) -> str:
    return ("seq " if len(seqs) == 1 else "seqs ") + ", ".join(map(str, seqs))


def accepted(candidate: dict, app: str, user: str, predicate: str, value: str, hold_id: str,
             decision: str, reason: str, fact_id: str | None, seqs: list[int]) -> str:
    """A held candidate applied under `predicate` (its value as the registry normalised it)."""
    held_as = candidate.get("predicate")
    source = f"held as {held_as}, hold {hold_id}" if held_as and held_as != predicate else f"hold {hold_id}"
    fact = f", fact {fact_id}" if fact_id else ""
    return (f"accepted {_key(candidate.get('subject') or 'user', predicate)} = "
            f"{_value(value, bool(candidate.get('negated')))} for {app}/{user} ({source}): "
            f"{decision} ({reason}){fact}; {_seqs(seqs)}")


def rejected(candidate: dict, app: str, user: str, hold_id: str, seqs: list[int]) -> str:
    return (f"rejected {_key(candidate.get('subject') or 'user', candidate.get('predicate') or '?')} = "
            f"{_value(candidate.get('value') or '', bool(candidate.get('negated')))} for {app}/{user} "
            f"(hold {hold_id}): CandidateRejected at {_seqs(seqs)}")


def resolved(app: str, user: str, subject: str, predicate: str, value: str, fact_id: str, accept: bool,
             current: str | None, seqs: list[int]) -> str:
    """A dispute settled for or against `fact_id`; `current` is the key's value afterwards."""
    if accept:
        after = "it is the current value"
    elif current is not None:
        after = f"{current} is the current value"
    else:
        after = "the key has no open value left"
    return (f"{'accepted' if accept else 'rejected'} {_key(subject, predicate)} = {value} for {app}/{user} "
            f"(fact {fact_id}): {after}; DisputeResolved at {_seqs(seqs)}")
