"""Text past clearance (`ledger/audit/cleartext.py`): withheld values masked in any text shown."""

from __future__ import annotations

from factledger.ledger.audit.cleartext import WITHHELD, ClearanceMask
from factledger.projections.history import values_above
from tests.conftest import cand


def test_values_above_a_clearance_are_masked_whatever_their_case_but_not_the_rows_own():
    mask = ClearanceMask(["sesame", "Straße 5"])
    assert mask.text("I eat thai and SESAME, at STRASSE 5") == f"I eat thai and {WITHHELD}, at {WITHHELD}"
    row = {"value": "sesame", "quote": "sesame it is", "reason": "said sesame"}
    assert mask.row(row) == row                              # its own value is shown at its own level
    assert mask.row({"value": "thai", "quote": "thai, sesame"})["quote"] == f"thai, {WITHHELD}"
    assert mask.deep({"events": [{"body": {"quote": "x sesame"}}]}) == {"events": [{"body": {"quote": f"x {WITHHELD}"}}]}


def test_a_digest_follows_the_strictest_sensitivity_it_mentions():
    mask = ClearanceMask(["asthma"])
    assert mask.digest("The user moved to Leeds.") == "The user moved to Leeds."
    assert mask.digest("The user moved to Leeds; asthma got worse.") is None
    assert ClearanceMask().digest("asthma") == "asthma"


def test_the_ledger_masks_every_interval_above_the_clearance(ledger):
    ledger.observe_many([cand(predicate="diet", value="vegan", quote="vegan and allergic to kiwi", event="e1"),
                         cand(predicate="allergy", value="kiwi", quote="vegan and allergic to kiwi", event="e1")])
    conn = ledger._conn
    assert values_above(conn, "app", ["u1"], ("normal",)) == ["kiwi"]
    assert values_above(conn, "app", ["u1"], ("normal", "personal", "health")) == []
    diet = [r for r in ledger.facts("app", "u1") if r["predicate"] == "diet"][0]
    assert ledger.lookup.clearance_mask("app", "u1", "personal").row(diet)["quote"] == f"vegan and allergic to {WITHHELD}"
    assert ledger.lookup.clearance_mask("app", "u1", "health").row(diet)["quote"] == "vegan and allergic to kiwi"
    served = ledger.recall("app", "u1", "what do I eat", clearance="normal").selected
    assert [f["quote"] for f in served] == [f"vegan and allergic to {WITHHELD}"]
