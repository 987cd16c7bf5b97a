"""One fold: re-decision appends exactly what the live ledger appends for the same statements.

Re-decision after a forget (ledger/forget/redecide.py) decides a key's statements again through the live
path (decide, events_for or the reviewer's settlement, transition).  Fed a whole single-key
history from nothing, it must produce the live ledger's event stream body for body (the fact ids
too: an observation recorded again keeps its id).
"""

from __future__ import annotations

import orjson
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from factledger.ledger import Ledger, LedgerError
from factledger.ledger.domain.statement import Resolution, Statement
from factledger.ledger.domain.validate import check
from factledger.ledger.forget.redecide import KeyFold, redecide
from tests.conftest import MovableClock, cand

PREDICATES = {"home_city": ["Pune", "Bengaluru", "Mumbai"], "allergy": ["peanuts", "shellfish", "dust"],
              "blood_pressure": ["120/80 mmHg", "140/90 mmHg"]}
AUTHORS = {"user": "stated", "document": "verified", "agent": "inferred"}

said = st.tuples(st.just("say"), st.integers(0, 2), st.integers(0, 3), st.integers(1, 9),
                 st.sampled_from(["user", "user", "document", "agent"]),
                 st.sampled_from([False, False, False, True]), st.sampled_from([None, None, 0.5]))
judged = st.tuples(st.just("resolve"), st.integers(0, 3), st.booleans())
history = st.lists(st.one_of(said, said, said, judged), min_size=1, max_size=14)


def live_and_statements(predicate, items):
    """Feed the history to a live ledger; return its partition's bodies and the statements."""
    clock = MovableClock()
    statements: list[Statement] = []
    with Ledger(":memory:", clock=clock) as ledger:
        for i, item in enumerate(items):
            if item[0] == "say":
                _, value, session, day, author, negated, confidence = item
                options = PREDICATES[predicate]
                c = cand(predicate=predicate, value=options[value % len(options)], session=f"s{session}",
                         event=f"e{i}", said_at=f"2026-09-{day:02d}T10:00:00Z", author=author,
                         basis=AUTHORS[author], negated=negated and predicate != "blood_pressure",
                         confidence=confidence)
                verdict = check(c, ledger.registry)
                assert verdict.action == "apply"
                outcome = ledger.observe(c)
                observed = outcome.fact_id if outcome.decision in ("insert", "supersede", "dispute", "backfill") else None
                statements.append(Statement(i, verdict.candidate, verdict.basis_claimed, fact_id=observed))
            else:
                _, pick, accept = item
                open_ids = [f for (f,) in ledger._conn.execute(
                    "SELECT fact_id FROM facts_current ORDER BY rowid")]
                if not open_ids:
                    continue
                fact_id = open_ids[pick % len(open_ids)]
                try:
                    ledger.resolve(fact_id, accept, "dr-k", "checked")
                except LedgerError:
                    continue                      # not in dispute: the reviewer had nothing to settle
                statements.append(Statement(i, resolution=Resolution(fact_id, accept, "dr-k", "checked")))
            clock.tick()
        bodies = [orjson.loads(b) for (b,) in ledger._conn.execute(
            "SELECT body FROM events WHERE app = 'app' AND user = 'u1' ORDER BY seq")]
        facts = {f["fact_id"]: (f["value"], f["status"], f["disputes"])
                 for f in ledger.facts("app", "u1", include_sensitive=True)}
        return bodies, statements, facts, ledger.registry


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(PREDICATES)), history)
# a dispute, settled by a document's restatement, then the winner retracted
@example("home_city", [("say", 0, 0, 5, "user", False, None), ("say", 1, 1, 3, "agent", False, None),
                       ("say", 1, 2, 4, "document", False, None), ("say", 1, 3, 6, "user", True, None)])
# a reviewer rejects the incumbent of a three-way dispute: the key passes to a challenger
@example("home_city", [("say", 0, 0, 5, "user", False, None), ("say", 1, 1, 6, "agent", False, None),
                       ("say", 2, 2, 6, "agent", False, None), ("resolve", 0, False)])
def test_redecision_appends_what_the_live_ledger_appends(predicate, items):
    bodies, statements, facts, registry = live_and_statements(predicate, items)
    spec = registry.resolve(predicate)
    again = [b.model_dump(mode="json", exclude_none=True)
             for b in redecide(statements, spec, registry.sha256, "app", "u1")]
    assert again == bodies
    fold = KeyFold()
    for body in redecide(statements, spec, registry.sha256, "app", "u1"):
        fold.fold(body)
    assert {f.fact_id: (f.value, f.status) for f in fold.open_facts()} == {
        k: v[:2] for k, v in facts.items()}
