"""What exists: the partitions of a ledger and the predicates of its registry, as rows.

The first two questions a new operator asks ("which apps and users are in here?", "which
predicates can I ask about?"), answered from the log's partition index and the registry.
"""

from __future__ import annotations

import sqlite3

from factledger.ledger.forget.scope import ERASURES_USER
from factledger.ledger.registry.predicates import Registry
from factledger.ledger.store.reads import partition_counts
from factledger.ledger.vocabulary.words import ERASED_PREFIX
from factledger.projections.current import open_counts
from factledger.projections.review import held_counts


def partitions(conn: sqlite3.Connection, app: str | None = None) -> list[dict]:
    """Every (app, user) with its event, open-fact and held-candidate counts; erased users and the
    receipts' own partition are shown as what they are."""
    events = partition_counts(conn, app)
    open_facts = open_counts(conn, app)
    held = held_counts(conn, app)
    out = []
    for a, u, n, first, last in events:
        kind = "receipts" if u == ERASURES_USER else "erased" if u.startswith(ERASED_PREFIX) else "user"
        out.append({"app": a, "user": u, "kind": kind, "events": n, "open_facts": open_facts.get((a, u), 0),
                    "held": held.get((a, u), 0), "first_recorded": first, "last_recorded": last})
    return out


def predicates(registry: Registry) -> list[dict]:
    return [{"name": s.name, "cardinality": s.cardinality, "sensitivity": s.sensitivity,
             "kind": s.kind, "aliases": list(s.aliases), "retention_days": s.retention_days,
             "description": s.description}
            for s in sorted(registry.predicates.values(), key=lambda s: s.name)]


def kinds(registry: Registry) -> list[dict]:
    """The kinds an open key may take (`predicates --kinds`), with the rules each gives its keys."""
    return [{"name": k.name, "cardinality": k.cardinality, "sensitivity": k.sensitivity,
             "retention_days": k.retention_days, "min_confidence": k.min_confidence,
             "confirm_after_days": k.confirm_after_days, "dated": k.dated, "description": k.description}
            for k in registry.kinds.values()]


def pattern_coverage(registry: Registry) -> list[dict]:
    """Per predicate, what the offline extractor has for it (`predicates --check`): a predicate
    with no rule and no pattern is one the offline extractor can never find, whatever is said."""
    out = []
    for spec in sorted(registry.predicates.values(), key=lambda s: s.name):
        ids = [r.id for r in spec.rules] + [p.id for p in spec.patterns]
        out.append({"name": spec.name, "rules": len(spec.rules), "patterns": len(spec.patterns),
                     "values": len(spec.values), "ids": ids,
                     "status": "ok" if spec.extractable else "no patterns"})
    return out
