"""`delete_memory` of an app-wide fact raises, never returns as if it had deleted (issue 32, class 11).

`search_memory` serves a user the app's shared facts (the `_domain` partition); a user's
`delete_memory` of one logged a warning and returned normally, and the fact was served again on
the next search: a success that deleted nothing.  It now raises `SharedMemory` (a `ValueError`, as
google-adk's own services raise), saying the fact is shared and how the app's operator forgets
it; the fact stays served to every user.
"""

from __future__ import annotations

import pytest

pytest.importorskip("google.adk")

from factledger.adk import LedgerMemoryService  # noqa: E402
from factledger.adk.errors import SharedMemory  # noqa: E402
from factledger.ledger import Ledger, make_candidate  # noqa: E402
from factledger.ledger.vocabulary.clock import fixed_clock  # noqa: E402
from tests.adk.helpers import NOW, run, search  # noqa: E402


@pytest.mark.parametrize("app", ["mealkit", "_ops"])
def test_deleting_a_shared_fact_raises_and_it_stays_served(tmp_path, app):
    with Ledger(tmp_path / "adk.db", clock=fixed_clock(NOW), create=True) as ledger:
        memory = LedgerMemoryService(ledger)
        stored_app = "~" + app if app.startswith("_") else app
        shared = ledger.observe(make_candidate(
            app=stored_app, user="_domain", predicate="home_city", value="Porto",
            quote="we ship from Porto", session="ops", evidence_event="ops-1",
            said_at="2026-11-01T00:00:00Z", author="document", basis="verified")).fact_id
        assert shared in {m.id for m in search(memory, app=app)}
        head = ledger.head()
        with pytest.raises(SharedMemory) as raised:
            run(memory.delete_memory(app_name=app, user_id="priya", memory_id=shared))
        assert isinstance(raised.value, ValueError)
        message = str(raised.value)
        assert "shared by every user" in message and "not deleted" in message
        assert f"factledger forget --app {stored_app} --user _domain --fact {shared}" in message
        assert ledger.head() == head                                  # nothing was written
        for user in ("priya", "arjun"):
            assert shared in {m.id for m in search(memory, app=app, user=user)}
