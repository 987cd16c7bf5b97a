"""Help for the reviewer: the registry predicates a held candidate most likely meant, and the
open facts of two keys that contradict each other.

Both are worked out when the queue is read, not stored (the registry is configuration, not an
event).  Suggestions: the held candidate's sentence compared by meaning with every registry
predicate's (or, without the extra, names sharing a word).  Contradictions: open facts of two
predicates declared (`contradicts`) or inferred (`opposites`) to contradict, same partition and
subject, equal values; `semantic_hint` adds their cosine for the reviewer (docs/semantic.md).
"""

from __future__ import annotations

import sqlite3

from factledger.ledger.domain import support
from factledger.ledger.domain.candidate import value_key
from factledger.ledger.domain.textindex import terms
from factledger.ledger.errors import LedgerError
from factledger.ledger.recall.meaning import FLOOR, predicate_vectors
from factledger.ledger.registry.predicates import Registry
from factledger.ledger.registry.slots import NumberSlot
from factledger.ledger.review.opposites import inferred
from factledger.ledger.review.queue import in_vocabulary
from factledger.ledger.semantic import embedder as encoders
from factledger.projections.current import pairs

SUGGESTIONS = 3


def suggestions(registry: Registry, predicate: str | None, value: str | None, quote: str | None) -> list[str]:
    """The registry predicates closest to a held candidate, best first ([] for a known one)."""
    if not predicate or registry.resolve(predicate) is not None:
        return []
    model = encoders.get()
    if model is None:
        wanted = set(terms(predicate.replace(".", " ").replace("_", " ")))
        scored = [(len(wanted & set(terms(f"{name} {' '.join(spec.aliases)} {spec.description}"))), name)
                  for name, spec in registry.predicates.items()]
        return [name for score, name in sorted(scored, key=lambda s: (-s[0], s[1])) if score > 0][:SUGGESTIONS]
    text = encoders.sentence("user", predicate, value or "", quote)
    mine = model.embed(text)
    scored = sorted(((float(v @ mine), name) for name, v in predicate_vectors(registry, model).items()),
                    key=lambda s: (-s[0], s[1]))
    return [name for cosine, name in scored if cosine > FLOOR][:SUGGESTIONS]


def fits(spec, value: str | None, quote: str | None) -> bool:
    """Whether a held value has the shape of `spec`'s values, as the registry gives it: in its
    closed vocabulary; for a predicate read only by number rules or regex patterns (a count, a
    reading, a dose), yielded from the quote by one of them, since any number has a number's
    shape; free words and places take any value.  So `shoe_size = 39` ("my shoe size is 39") is
    never offered as `household_size` ("there are 4 of us"), nor "teal" as a cuisine."""
    value, quote = str(value or ""), str(quote or "")
    if spec.vocabulary:
        try:
            in_vocabulary(spec, spec.normalise_value(value))
        except LedgerError:
            return False
        return True
    shaped = bool(spec.patterns) or (bool(spec.rules) and all(isinstance(r.slot, NumberSlot) for r in spec.rules))
    if shaped:
        return support.declared(spec, "user", spec.normalise_value(value), False, quote)
    return True


def with_suggestions(rows: list[dict], registry: Registry) -> list[dict]:
    """Each held row's suggested predicates: the closest by name or meaning whose value shape the
    held value fits (`fits`), so a suggestion is never a predicate the value cannot be."""
    for row in rows:
        named = suggestions(registry, row.get("predicate"), row.get("value"), row.get("quote"))
        row["suggestions"] = [name for name in named
                              if fits(registry.predicates[name], row.get("value"), row.get("quote"))]
    return rows


def contradictions(conn: sqlite3.Connection, registry: Registry, app: str | None = None,
                   user: str | None = None) -> list[dict]:
    """Open pairs of facts with equal values of two predicates that contradict each other:
    declared in the registry (`declared` True), or inferred by meaning from the registry
    (`ledger.semantic.opposites`, `declared` False, the predicates' cosine in the reason)."""
    relations = [(name, other, True, None) for name, spec in sorted(registry.predicates.items())
                 for other in spec.contradicts]
    relations += [(name, other, False, cosine) for (name, other), cosine in sorted(inferred(registry).items())]
    found = []
    for name, other, declared, cosine in relations:
        for row in pairs(conn, name, other, app, user):
            if value_key(row[5]) != value_key(row[8]):
                continue
            reason = f"{row[4]} = {row[5]} contradicts {row[7]} = {row[8]}"
            if not declared:
                by = "by words" if cosine is None else f"cosine {cosine}"
                reason += f" (inferred: {row[4]} reads as the negation of {row[7]}, {by})"
            found.append({"kind": "contradiction", "app": row[1], "user": row[2], "subject": row[3],
                          "predicate": row[4], "value": row[5], "fact_id": row[0],
                          "other_predicate": row[7], "other_value": row[8], "other_fact_id": row[6],
                          "reason": reason, "declared": declared, "semantic_hint": _hint(row)})
    return found


def _hint(row) -> float | None:
    model = encoders.get()
    if model is None:
        return None
    a = model.embed(encoders.sentence(row[3], row[4], row[5], None))
    b = model.embed(encoders.sentence(row[3], row[7], row[8], None))
    return round(float(a @ b), 4)
