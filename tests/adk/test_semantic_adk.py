"""The google-adk memory service recalls by meaning with the extra (same default as the CLI)."""

from __future__ import annotations

import pytest

pytest.importorskip("google.adk")

from factledger.adk import LedgerMemoryService  # noqa: E402
from factledger.ledger import Ledger  # noqa: E402
from tests.adk.helpers import search  # noqa: E402
from tests.conftest import MovableClock, cand  # noqa: E402


def fill(ledger: Ledger) -> None:
    facts = [("home_city", "Bengaluru", "we moved to Bengaluru"), ("diet", "vegetarian", "I'm vegetarian"),
             ("pet", "a beagle called Max", "we have a beagle called Max")]
    for i, (predicate, value, quote) in enumerate(facts):
        ledger.observe(cand(app="mealkit", user="priya", predicate=predicate, value=value, quote=quote,
                            session=f"s{i}", event=f"e{i}"))
    for i in range(20):
        ledger.observe(cand(app="mealkit", user="priya", predicate="owned_product", value=f"board game {i}",
                            quote=f"we own board game {i}", session=f"f{i}", event=f"f{i}"))


@pytest.mark.parametrize("mode, found", [(None, True), ("hybrid", True), ("lexical", False)])
def test_search_memory_by_meaning(tmp_path, meaning, mode, found):
    with Ledger(tmp_path / "l.db", clock=MovableClock(), create=True) as ledger:
        fill(ledger)
        memory = LedgerMemoryService(ledger, clearance="all", preload=False, limit=3, mode=mode)
        served = [m.custom_metadata["value"] for m in search(memory, "Do they keep any animals at home?")]
        assert any("beagle" in v for v in served) is found
