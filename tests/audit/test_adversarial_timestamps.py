"""Every time in an event body is typed and checked wherever bodies enter (issue 32, class 8).

`said_at` and the other times of the event models were plain strings: a re-chained export whose
observation said `"said_at": "yesterday"` imported with exit 0, `verify` and `replay --check`
passed, and every later `history` of that partition failed.  A body's times must be exactly the
form the ledger writes (`clock.iso`: UTC, microseconds, `Z`; an `effective_date` may be a date
alone), on append (the models) and on import; a valid body's canonical JSON does not change.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from factledger.cli.main import cli
from factledger.ledger import Ledger, LedgerError
from factledger.ledger.domain.events import FactObserved, parse_body
from factledger.ledger.ingest.extractor import Extraction
from factledger.ledger.ingest.proposal import Proposal
from factledger.ledger.store.chain import canonical, commitment, link
from factledger.ledger.vocabulary.clock import iso
from tests.conftest import MovableClock, cand


class Proposing:
    name = "proposing"
    model = None

    def extract(self, delta, context):
        return Extraction(proposals=[Proposal(predicate="diet", value="vegan", quote="I am vegan",
                                              evidence_event="s9-e1")], digest="vegan")


def source_export(tmp_path) -> list[dict]:
    """An export with an observation, a supersession (valid_to), an effective date, a hold and an
    ingested session (watermark_at), as rows."""
    clock = MovableClock()
    with Ledger(tmp_path / "source.db", clock=clock, create=True) as ledger:
        ledger.observe(cand(predicate="home_city", value="Pune", session="s1", said_at="2026-08-01"))
        clock.tick()
        ledger.observe(cand(predicate="home_city", value="Bengaluru", session="s2", said_at="2026-09-01",
                            effective_date="2026-09-15"))
        ledger.observe(cand(predicate="zq_pet", value="a cat", session="s3"))
        ledger.ingest_session({"id": "s9", "appName": "app", "userId": "u1", "events": [
            {"id": "s9-e1", "author": "user", "timestamp": 1788080400.0,
             "content": {"parts": [{"text": "I am vegan"}]}}]}, extractor=Proposing())
        out = io.StringIO()
        ledger.export_log(out)
    return [orjson.loads(line) for line in out.getvalue().splitlines()]


def rechained(rows: list[dict], type_: str, change) -> str:
    """The export with `change` applied to the first (unscrubbed) body of `type_`, every later row re-chained
    and the header's head moved: what a forger with the export (and no key) can write."""
    header, events = rows[0], [dict(r) for r in rows[1:]]
    target = next(i for i, r in enumerate(events) if r["type"] == type_ and r["body"] is not None)
    body = orjson.loads(events[target]["body"])
    change(body)
    events[target]["body"] = canonical(body).decode()
    prev = events[target]["prev_hash"]
    for row in events[target:]:
        if row["body"] is not None and row["salt"] is not None:
            row["commitment"] = commitment(bytes.fromhex(row["salt"]), row["body"].encode())
        row["prev_hash"] = prev
        row["hash"] = prev = link(prev, row["seq"], row["event_id"], row["type"], row["recorded_at"],
                                  row["commitment"])
    header = {**header, "head": f"{events[-1]['seq']}:{events[-1]['hash']}"}
    return "".join(orjson.dumps(r).decode() + "\n" for r in [header, *events])


def candidate_said_at(value):
    return lambda b: b["candidate"].update(said_at=value)


CHANGES = {
    "said_at yesterday": ("FactObserved", lambda b: b.update(said_at="yesterday")),
    "said_at a date alone": ("FactObserved", lambda b: b.update(said_at="2026-08-01")),
    "said_at without microseconds": ("FactObserved", lambda b: b.update(said_at="2026-08-01T00:00:00Z")),
    "said_at in another zone": ("FactObserved", lambda b: b.update(said_at="2026-08-01T02:00:00.000000+02:00")),
    "said_at a number": ("FactObserved", lambda b: b.update(said_at=1788080400)),
    "effective_date soon": ("FactObserved", lambda b: b.update(effective_date="soon")),
    "valid_to yesterday": ("FactSuperseded", lambda b: b.update(valid_to="yesterday")),
    "a held candidate's said_at": ("CandidateHeld", candidate_said_at("yesterday")),
    "a reinforcement's said_at": ("FactObserved", lambda b: b.update(said_at="2026-13-01T00:00:00.000000Z")),
    "watermark_at": ("SessionIngested", lambda b: b.update(watermark_at="later")),
}


def test_the_export_imports_as_it_is(tmp_path):
    rows = source_export(tmp_path)
    path = tmp_path / "ok.jsonl"
    path.write_text(rechained(rows, "FactObserved", lambda b: None))        # re-chained, unchanged
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "ok.db"), "import", str(path)])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("case", sorted(CHANGES))
def test_import_refuses_a_body_whose_time_is_not_the_ledgers_form(tmp_path, case):
    type_, change = CHANGES[case]
    path = tmp_path / "x.jsonl"
    path.write_text(rechained(source_export(tmp_path), type_, change))
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "b.db"), "import", str(path)])
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("Error: line ") and "not a valid event body" in result.stderr
    assert not (tmp_path / "b.db").exists()                        # nothing imported, no file left
    with Ledger(tmp_path / "lib.db", create=True) as copy:
        with pytest.raises(LedgerError, match="not a valid event body"):
            copy.import_log(path)
        assert copy.head()[0] == 0


def test_append_refuses_a_body_whose_time_is_not_the_ledgers_form(tmp_path):
    with Ledger(tmp_path / "l.db", clock=MovableClock(), create=True) as ledger:
        ledger.observe(cand(predicate="home_city", value="Pune"))
        body = orjson.loads(ledger._conn.execute("SELECT body FROM events WHERE seq = 1").fetchone()[0])
        with pytest.raises(ValidationError, match="said_at"):
            FactObserved(**{**body, "said_at": "yesterday"})
        before = ledger.head()
        with pytest.raises(ValidationError):
            with ledger.transaction() as store:
                store.append(FactObserved.model_validate({**body, "said_at": "yesterday"}))
        assert ledger.head() == before


OBSERVED = {"type": "FactObserved", "app": "a", "user": "u", "fact_id": "f", "rule": "r", "subject": "user",
            "predicate": "p", "value": "v", "session": "s", "evidence_event": "e", "quote": "q",
            "author": "user", "basis": "stated", "confidence": 0.9, "sensitivity": "normal", "kind": "fact",
            "cardinality": "one", "said_at": "2026-08-01T00:00:00.000000Z"}
MOMENTS = st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59),
                       timezones=st.just(UTC))


def near_misses(moment: datetime) -> list[str]:
    """Other spellings of the same moment: each parses as ISO 8601, none is the ledger's form."""
    stamp = iso(moment)
    return [stamp[:-1], stamp[:19] + "Z", stamp[:10], stamp.replace("T", " "), stamp[:-1] + "+00:00",
            stamp.lower(), " " + stamp, stamp + "\n"]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(MOMENTS, st.text(max_size=40))
@example(datetime(2026, 8, 1, tzinfo=UTC), "yesterday")
def test_a_body_time_is_exactly_the_ledgers_form(moment, junk):
    """Any moment in the ledger's form is accepted and its canonical JSON kept byte for byte; the
    same moment spelt otherwise, and random text, are refused."""
    stamp = iso(moment)
    given_body = {**OBSERVED, "said_at": stamp, "effective_date": stamp[:10]}
    dumped = parse_body(given_body).model_dump(mode="json", exclude_none=True)
    assert canonical({k: v for k, v in dumped.items() if k in given_body}) == canonical(given_body)
    for other in [*near_misses(moment), junk]:
        if other == stamp:
            continue
        with pytest.raises(ValidationError):
            parse_body({**OBSERVED, "said_at": other})
