"""A rebuild's facts fold on rows (`projections/factbatch.py: WholeFold`) against the general batch fold
(`projections/factbatch.py`, with nothing stored): the same statements with the same rows in the
same order, the same open facts (snapshots and recall rows), for generated event sequences (every
fact event type, closed facts reinforced, disputes closed, transactions that share a time) and
for the partitions of generated ledgers."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factledger.ledger.domain.eventrow import Event, EventTuple
from factledger.ledger.domain.events import EVENT
from factledger.ledger.store.eventlog import iter_events
from factledger.ledger.store.reads import iter_partitioned
from factledger.ledger.vocabulary.words import Rule
from factledger.projections import recall
from factledger.projections.base import OPEN_FACTS
from factledger.projections.factbatch import FactBatch, OpenFacts, WholeFold, recall_terms
from factledger.projections.facts import FactsProjection
from tests.projections.test_fold_rebuild import ledger_after, operations


class Recorder:
    """Stands in for the rebuild's row buffer: every `executemany`, rows as tuples."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[tuple]]] = []

    def executemany(self, sql: str, rows) -> None:
        self.calls.append((sql, [tuple(row) for row in rows]))


def same_fold(events) -> None:
    general, whole = FactBatch(), WholeFold()
    general.fold(events)
    whole.fold(events)
    wrote_general, wrote_whole = Recorder(), Recorder()
    general.write(wrote_general)
    whole.write(wrote_whole)
    assert wrote_whole.calls == wrote_general.calls
    open_facts = OpenFacts(whole)
    assert list(open_facts) == list(general.current)
    assert [open_facts[f] for f in open_facts] == list(general.current.values())
    index = recall.RecallProjection(FactsProjection())
    by_rows, by_snaps = Recorder(), Recorder()
    index.rebuild_partition(by_rows, events, {OPEN_FACTS: open_facts})
    index.rebuild_partition(by_snaps, events, {OPEN_FACTS: general.current})
    assert by_rows.calls == by_snaps.calls
    buffered = Recorder()
    buffered.finish = {}                  # as the row buffer: the terms are cut when it writes
    index.rebuild_partition(buffered, events, {OPEN_FACTS: open_facts})
    assert [(sql, buffered.finish[sql](rows)) for sql, rows in buffered.calls] == by_snaps.calls
    assert recall_terms(whole.recall_texts()) == sorted(recall._row(s) for s in general.current.values())


FACTS = ("f1", "f2", "f3", "f4")
TIMES = ("2026-11-01T00:00:00Z", "2026-11-01T00:01:00Z", "2026-11-01T00:02:00Z")
SAID = st.sampled_from(["2026-08-01T10:00:00Z", "2026-08-05T10:00:00Z", "2026-08-09T10:00:00Z"])
SESSION = st.sampled_from(["s1", "s2", "s3"])
BASIS = st.sampled_from(["inferred", "stated", "verified"])
CONFIDENCE = st.sampled_from([0.4, 0.9, 0.95])
FACT = st.sampled_from(FACTS)


def _observed(fact_id, value, basis, confidence, said_at, session, dated):
    body = {"fact_id": fact_id, "app": "a", "user": "u", "subject": "user", "predicate": "diet",
            "value": value, "basis": basis, "confidence": confidence, "sensitivity": "normal",
            "kind": "preference", "cardinality": "one", "said_at": said_at, "session": session,
            "evidence_event": "ev-" + session, "quote": f"I eat {value} food", "author": "user"}
    if dated:
        body["effective_date"] = "2026-08-01"
    return EVENT.FactObserved, body


bodies = st.one_of(
    st.builds(_observed, FACT, st.sampled_from(["vegan", "Vegan", "keto diet", "3 kg"]), BASIS, CONFIDENCE,
              SAID, SESSION, st.booleans()),
    st.builds(lambda f, b, c, s, sess, rule: (EVENT.FactReinforced, {
        "fact_id": f, "basis": b, "confidence": c, "said_at": s, "session": sess, "rule": rule,
        "evidence_event": "ev-r" + sess, "quote": "again", "author": "user"}),
        FACT, BASIS, CONFIDENCE, SAID, SESSION, st.sampled_from([Rule.EARLIER_SAME_VALUE, "same_value"])),
    st.builds(lambda f, by, rule, valid_to: (EVENT.FactSuperseded, {
        "fact_id": f, "by_fact_id": by, "rule": rule, **({"valid_to": valid_to} if valid_to else {})}),
        FACT, FACT, st.sampled_from([Rule.BACKFILL, "newer_value"]), st.one_of(st.none(), SAID)),
    st.builds(lambda f, rule, s: (EVENT.FactRetracted, {"fact_id": f, "rule": rule, "said_at": s}),
              FACT, st.sampled_from([Rule.LATE_NEGATION, Rule.NEGATION]), SAID),
    st.builds(lambda f, s: (EVENT.FactNegated, {"fact_id": f, "valid_to": s}), FACT, SAID),
    st.builds(lambda f, other: (EVENT.FactDisputed, {"fact_id": f, "disputes": other}), FACT, FACT),
    st.builds(lambda w, losers, state: (EVENT.DisputeResolved, {
        "winner_id": w, "loser_ids": losers, "loser_state": state, "valid_to": "2026-08-07T10:00:00Z"}),
        FACT, st.lists(FACT, max_size=2), st.sampled_from(["superseded", "rejected"])),
    st.builds(lambda f: (EVENT.FactReinstated, {"fact_id": f}), FACT),
    st.builds(lambda f, by: (EVENT.MeaningChecked, {"fact_id": f, "by_fact_id": by}), FACT, FACT),
    st.builds(lambda f, at, split: (EVENT.FactSplit, {
        "fact_id": f, "split_id": split, "at": at, "basis": "stated", "confidence": 0.9,
        "early_basis": "inferred", "early_confidence": 0.4, "said_at": "2026-08-09T10:00:00Z",
        "session": "s3", "evidence_event": "ev-split", "quote": "later", "author": "user"}),
        FACT, SAID, st.sampled_from(["f5", "f6"])),
    st.just(("CandidateRejected", {"reason": "noise"})),
    st.just((EVENT.FactObserved, None)),             # a redacted body
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(bodies, st.integers(0, len(TIMES) - 1)), min_size=1, max_size=30), st.booleans())
def test_the_row_fold_writes_what_the_batch_fold_writes(steps, as_tuples):
    events, at = [], 0
    for seq, ((type_, body), tick) in enumerate(steps, start=1):
        at = max(at, tick)                  # transaction time never goes back; equal times overwrite
        cls = EventTuple if as_tuples else Event
        events.append(cls(seq, f"e{seq}", type_, "a", "u", TIMES[at], body))
    same_fold(events)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations)
def test_every_partition_of_a_ledger_folds_alike(ops):
    with ledger_after(ops) as ledger:
        partitions = list(iter_partitioned(ledger._conn))
        for events in partitions:
            same_fold(events)
            app, user = events[0].app, events[0].user
            assert [tuple(e) for e in events] == \
                [tuple(vars(e).values()) for e in iter_events(ledger._conn, app, user)]
