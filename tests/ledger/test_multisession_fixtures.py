"""Twenty-odd multi-session stories, each asserting every key's value after replay and rebuild.

A step is `(session, day, subject, predicate, value, options)`; options may set `basis`,
`author`, `neg` (negated) or `eff` (effective date).  `expect` maps each key to the set of
`value:status` strings that must be open at the end, and nothing else may be open.
"""

from __future__ import annotations

import pytest

from tests.conftest import cand

AUTHOR_FOR = {"verified": "document", "inferred": "agent"}

FIXTURES = {
    "simple move": (
        [("s1", 1, "user", "home_city", "Pune", {}), ("s2", 30, "user", "home_city", "Bengaluru", {})],
        {"user home_city": {"Bengaluru:current"}}),
    "move and move back": (
        [("s1", 1, "user", "home_city", "Pune", {}), ("s2", 10, "user", "home_city", "Delhi", {}),
         ("s3", 20, "user", "home_city", "Pune", {})],
        {"user home_city": {"Pune:current"}}),
    "late arrival never rolls back": (
        [("s2", 20, "user", "home_city", "Delhi", {}), ("s1", 5, "user", "home_city", "Pune", {})],
        {"user home_city": {"Delhi:current"}}),
    "negation retracts": (
        [("s1", 1, "user", "diet", "pescatarian", {}), ("s2", 9, "user", "diet", "pescatarian", {"neg": True})],
        {}),
    "negation of nothing is a no-op": (
        [("s1", 1, "user", "diet", "vegan", {}), ("s2", 9, "user", "diet", "keto", {"neg": True})],
        {"user diet": {"vegan:current"}}),
    "agent cannot retract a verified fact": (
        [("s1", 1, "user", "plan", "premium", {"basis": "verified"}),
         ("s2", 9, "user", "plan", "premium", {"neg": True, "basis": "inferred"})],
        {"user plan": {"premium:current"}}),
    "retract one of many": (
        [("s1", 1, "user", "allergy", "peanuts", {}), ("s1", 1, "user", "allergy", "shellfish", {}),
         ("s2", 5, "user", "allergy", "shellfish", {"neg": True})],
        {"user allergy": {"peanuts:current"}}),
    "many accumulates across sessions": (
        [("s1", 1, "user", "pet", "cat", {}), ("s2", 2, "user", "pet", "dog", {}),
         ("s3", 3, "user", "pet", "cat", {})],
        {"user pet": {"cat:current", "dog:current"}}),
    "third-party facts keep their subject": (
        [("s1", 1, "user.daughter", "allergy", "peanuts", {}), ("s1", 1, "user", "allergy", "pollen", {}),
         ("s2", 3, "user.partner", "name", "Sam", {})],
        {"user.daughter allergy": {"peanuts:current"}, "user allergy": {"pollen:current"},
         "user.partner name": {"Sam:current"}}),
    "reinforcement keeps one fact": (
        [("s1", 1, "user", "diet", "vegan", {}), ("s2", 5, "user", "diet", "Vegan", {}),
         ("s3", 9, "user", "diet", "vegan", {})],
        {"user diet": {"vegan:current"}}),
    "inferred guess disputes a stated fact": (
        [("s1", 1, "user", "diet", "vegetarian", {}), ("s2", 5, "user", "diet", "vegan", {"basis": "inferred"})],
        {"user diet": {"vegetarian:current", "vegan:disputed"}}),
    "user restating the challenger settles the dispute": (
        [("s1", 1, "user", "diet", "vegetarian", {}), ("s2", 5, "user", "diet", "vegan", {"basis": "inferred"}),
         ("s3", 9, "user", "diet", "vegan", {})],
        {"user diet": {"vegan:current"}}),
    "supersession closes the dispute": (
        [("s1", 1, "user", "diet", "vegetarian", {}), ("s2", 5, "user", "diet", "vegan", {"basis": "inferred"}),
         ("s3", 9, "user", "diet", "keto", {})],
        {"user diet": {"keto:current"}}),
    "verified order beats a user report": (
        [("d1", 3, "user", "medication_dose", "metoprolol 25 mg", {"basis": "verified"}),
         ("c1", 10, "user", "medication_dose", "metoprolol 50 mg", {}),
         ("o2", 12, "user", "medication_dose", "metoprolol 50 mg", {"basis": "verified"})],
        {"user medication_dose": {"metoprolol 50 mg:current"}}),
    "verified order stands against a user report": (
        [("d1", 3, "user", "medication_dose", "metoprolol 25 mg", {"basis": "verified"}),
         ("c1", 10, "user", "medication_dose", "metoprolol 50 mg", {})],
        {"user medication_dose": {"metoprolol 25 mg:current", "metoprolol 50 mg:disputed"}}),
    "series keeps every dated reading": (
        [("c1", 10, "user", "blood_pressure", "148/92 mmHg", {}),
         ("c2", 17, "user", "blood_pressure", "148/92 mmHg", {}),
         ("c3", 17, "user", "blood_pressure", "148/92 mmHg", {}),
         ("c3", 18, "user", "blood_pressure", "130/85 mmHg", {})],
        {"user blood_pressure": {"148/92 mmHg:current", "130/85 mmHg:current"}}),
    "series reading retracted by date": (
        [("c1", 10, "user", "weight", "80 kg", {}), ("c2", 17, "user", "weight", "80 kg", {}),
         ("c3", 18, "user", "weight", "80 kg", {"neg": True, "eff": "2026-08-17"})],
        {"user weight": {"80 kg:current"}}),
    "tool text cannot set a preference": (
        [("a", 1, "user", "deploy.region", "eu-west", {}),
         ("b", 2, "user", "deploy.region", "us-central", {"author": "tool"}),
         ("c", 3, "user", "deploy.region", "us-east", {})],
        {"user deploy.region": {"us-east:current"}}),
    "aliases converge on one key": (
        [("s1", 1, "user", "city", "Pune", {}), ("s2", 4, "user", "location", "Pune", {}),
         ("s3", 8, "user", "lives_in", "Goa", {})],
        {"user home_city": {"Goa:current"}}),
    "unknown predicates never become facts": (
        [("s1", 1, "user", "must_approve_refunds", "always", {}), ("s1", 1, "user", "diet", "vegan", {})],
        {"user diet": {"vegan:current"}}),
    "lower authority cannot retract after a move": (
        [("s1", 1, "user", "home_city", "Pune", {}), ("s2", 5, "user", "home_city", "Delhi", {}),
         ("s3", 6, "user", "home_city", "Pune", {"neg": True})],
        {"user home_city": {"Delhi:current"}}),
    "many with a late duplicate": (
        [("s2", 9, "user", "owned_product", "kettle", {}), ("s1", 2, "user", "owned_product", "kettle", {}),
         ("s1", 2, "user", "owned_product", "toaster", {})],
        {"user owned_product": {"kettle:current", "toaster:current"}}),
    "retraction then a new value": (
        [("s1", 1, "user", "diet", "vegan", {}), ("s2", 5, "user", "diet", "vegan", {"neg": True}),
         ("s3", 9, "user", "diet", "omnivore", {})],
        {"user diet": {"omnivore:current"}}),
    "dispute then the incumbent is retracted": (
        [("s1", 1, "user", "plan", "basic", {}), ("s2", 2, "user", "plan", "premium", {"basis": "inferred"}),
         ("s3", 3, "user", "plan", "basic", {"neg": True})],
        {"user plan": {"premium:current"}}),
    "a retracted incumbent passes to the strongest challenger": (
        [("s1", 1, "user", "home_city", "Pune", {"basis": "verified"}),
         ("s2", 2, "user", "home_city", "Mumbai", {}),
         ("s3", 3, "user", "home_city", "Goa", {"basis": "inferred"}),
         ("s4", 4, "user", "home_city", "Pune", {"neg": True, "basis": "verified"}),
         ("s5", 5, "user", "home_city", "Delhi", {"basis": "inferred"})],
        {"user home_city": {"Mumbai:current", "Goa:disputed", "Delhi:disputed"}}),
}


def play(ledger, steps, clock) -> None:
    for session, day, subject, predicate, value, opts in steps:
        clock.tick(3600)
        basis = opts.get("basis", "stated")
        author = opts.get("author", AUTHOR_FOR.get(basis, "user"))
        ledger.observe(cand(subject=subject, predicate=predicate, value=value, session=session,
                            event=f"{session}-e", said_at=f"2026-08-{day:02d}T09:00:00Z",
                            basis=basis, author=author, negated=opts.get("neg", False),
                            effective_date=opts.get("eff")))


def open_values(ledger) -> dict:
    out: dict = {}
    for f in ledger.facts("app", "u1", include_sensitive=True):
        out.setdefault(f"{f['subject']} {f['predicate']}", set()).add(f"{f['value']}:{f['status']}")
    return out


def test_there_are_at_least_twenty_stories():
    assert len(FIXTURES) >= 20


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_story(ledger, clock, name):
    steps, expect = FIXTURES[name]
    play(ledger, steps, clock)
    assert open_values(ledger) == expect
    assert ledger.replay_differences() == []
    ledger.replay()
    assert open_values(ledger) == expect
    assert ledger.verify()["ok"]
