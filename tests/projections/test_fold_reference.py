"""The batched facts fold against the event-at-a-time SQL fold it replaced (tests/projections/reference_fold.py).

`replay --check` compares a rebuild with the live tables, and both now go through
`projections/factbatch.py`; this compares them with an independent fold of the same log.
Generated sequences of single observations, batched `observe_many` transactions and reviewer
resolutions, with a clock that sometimes does not move (so intervals are overwritten in place).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factledger.ledger import Ledger
from tests.conftest import MovableClock
from tests.projections.reference_fold import TABLES, key_order, reference_tables
from tests.projections.test_fold_rebuild import _candidate, observation

step = st.one_of(
    st.fixed_dictionaries({"op": st.just("one"), "obs": observation}),
    st.fixed_dictionaries({"op": st.just("many"), "obs": st.lists(observation, min_size=1, max_size=6)}),
    st.fixed_dictionaries({"op": st.just("resolve"), "pick": st.integers(0, 50), "accept": st.booleans()}),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=3, max_size=25), st.lists(st.sampled_from([0, 0, 60]), min_size=1))
def test_live_tables_equal_the_event_at_a_time_fold(steps, ticks):
    with tempfile.TemporaryDirectory() as tmp:
        clock = MovableClock()
        with Ledger(Path(tmp) / "l.db", clock=clock, create=True) as ledger:
            for i, s in enumerate(steps):
                clock.tick(ticks[i % len(ticks)])
                if s["op"] == "one":
                    ledger.observe(_candidate(s["obs"]))
                elif s["op"] == "many":
                    ledger.observe_many([_candidate(o) for o in s["obs"]])
                else:
                    disputed = ledger._conn.execute("SELECT fact_id FROM facts_current"
                                                   " WHERE disputes != '[]' ORDER BY fact_id").fetchall()
                    if disputed:
                        ledger.resolve(disputed[s["pick"] % len(disputed)][0], s["accept"],
                                       by="reviewer", reason="checked")
            live = {t: sorted(ledger._conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr)
                    for t in TABLES}
            live["key_order"] = key_order(ledger._conn)
            assert live == reference_tables(ledger._conn)
            ledger.replay()                        # a rebuild keeps the order decide sees too
            assert key_order(ledger._conn) == live["key_order"]
