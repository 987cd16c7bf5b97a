"""The library's write paths make the checks the CLI and ingestion make (issue 28, item 6):
`Ledger(path)` refuses a missing ledger unless `create=True`, and `observe` refuses a candidate
whose quote does not state its value, writing nothing."""

from __future__ import annotations

import pytest

from factledger.ledger import Ledger, LedgerError
from factledger.ledger.errors import CandidateRefused, LedgerNotFound
from tests.conftest import MovableClock, cand


def events(ledger: Ledger) -> int:
    return ledger._conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]


def test_a_mistyped_path_raises_and_creates_nothing(tmp_path):
    typo = tmp_path / "typo.db"
    with pytest.raises(LedgerNotFound, match="no ledger at") as raised:
        Ledger(typo)
    assert isinstance(raised.value, LedgerError) and isinstance(raised.value, FileNotFoundError)
    assert not typo.exists() and list(tmp_path.iterdir()) == []
    with Ledger(typo, create=True) as made:                    # asked for: made, and then found
        assert events(made) == 0
    with Ledger(typo) as reopened:
        assert events(reopened) == 0


def test_a_missing_postgresql_schema_is_refused_too(postgres):
    location = postgres.location()
    with pytest.raises(LedgerNotFound, match="no ledger at"):
        Ledger(location)
    with Ledger(location, create=True) as made:
        assert events(made) == 0


def test_observe_holds_a_value_its_quote_does_not_support_and_refuses_no_evidence(tmp_path):
    """Support, not spelling (docs/ingestion.md): a value the quote does not support is held for
    a reviewer, never served and never lost; a quote of no substance, or a negation that does not
    negate, is refused and nothing is written."""
    with Ledger(tmp_path / "l.db", clock=MovableClock(), create=True) as ledger:
        ledger.observe(cand(predicate="employer", value="Acme Corp", quote="I work at Acme Corp"))
        held = ledger.observe(cand(predicate="employer", value="Globex", quote="I ate steak",
                                   session="s2", event="e2"))
        assert (held.decision, held.reason) == ("hold", "unsupported_by_quote")
        before = events(ledger)
        with pytest.raises(CandidateRefused, match="negation_not_in_quote"):
            ledger.observe(cand(predicate="employer", value="Acme Corp", quote="Acme Corp is big",
                                negated=True, session="s3", event="e3"))
        with pytest.raises(CandidateRefused, match="quote_too_short") as raised:
            ledger.observe(cand(predicate="employer", value="Globex", quote="!!", session="s4"))
        assert raised.value.reason == "quote_too_short"
        assert events(ledger) == before                          # nothing, not even a rejection
        assert [f["value"] for f in ledger.facts("app", "u1", include_sensitive=True)] == ["Acme Corp"]
        assert [h["value"] for h in ledger.held("app", "u1") if h.get("hold_id")] == ["Globex"]


def test_one_refused_candidate_writes_none_of_its_batch(tmp_path):
    with Ledger(tmp_path / "l.db", clock=MovableClock(), create=True) as ledger:
        with pytest.raises(CandidateRefused):
            ledger.observe_many([cand(predicate="diet", value="vegan", quote="I am vegan"),
                                 cand(predicate="employer", value="Globex", quote="!!",
                                      session="s2", event="e2")])
        assert events(ledger) == 0


def test_the_quote_checks_are_the_ones_ingestion_makes(tmp_path):
    """What ingestion's validator accepts, observe accepts: a synonym the registry lists, a value
    a rule reads in the quote, a negation with its cue."""
    with Ledger(tmp_path / "l.db", clock=MovableClock(), create=True) as ledger:
        assert ledger.observe(cand(predicate="diet", value="pescatarian",
                                   quote="I eat fish now")).decision == "insert"
        assert ledger.observe(cand(predicate="likes_spicy", value="true", quote="I love spicy food",
                                   session="s2")).decision == "insert"
        assert ledger.observe(cand(predicate="diet", value="pescatarian", negated=True,
                                   quote="I no longer eat fish", session="s3",
                                   said_at="2026-08-31T10:00:00Z")).decision == "retract"
