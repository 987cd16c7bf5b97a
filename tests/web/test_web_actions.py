"""The web view's pages and actions, in process through Datasette's test client: each action is a
`Ledger` call recorded in the signed-in reviewer's name, and what a page shows is the ledger's now."""

from __future__ import annotations

import re
import threading
import time

import orjson
import pytest
from click.testing import CliRunner

pytest.importorskip("datasette", reason="the web view is the optional `ui` extra")

from factledger.cli.main import cli  # noqa: E402
from factledger.ledger import Ledger, make_candidate  # noqa: E402
from tests.web.helpers import HELD_VALUE, Client, fill, web  # noqa: E402


@pytest.fixture
def ledger_file(tmp_path, clock):
    path = tmp_path / "ledger.db"
    fill(path, clock)
    return path


@pytest.fixture
def rao(ledger_file, clock):
    c = Client(web(ledger_file, clock))
    c.sign_in("rao")
    yield c
    c.close()


def home_city(path) -> dict:
    with Ledger(path) as ledger:
        return {f["value"]: f["fact_id"] for f in ledger.history("mealkit", "priya", predicate="home_city")}


def why(path, fact_id: str) -> dict:
    result = CliRunner().invoke(cli, ["--db", str(path), "why", fact_id, "--json"])
    assert result.exit_code == 0, result.output
    data = orjson.loads(result.stdout)
    return data[0] if isinstance(data, list) else data


def test_partitions_user_and_pickers(rao):
    home = rao.get("/-/factledger/")
    assert "priya" in home.text and "arun" in home.text and "Head of the log" in home.text
    now = rao.get("/-/factledger/user?app=mealkit&user=priya")
    assert "Bengaluru" in now.text and "Pune" not in now.text and "meal-2" in now.text
    then = rao.get("/-/factledger/user?app=mealkit&user=priya&valid_at=2026-09-01")
    assert "Pune" in then.text and "Bengaluru" not in then.text
    believed = rao.get("/-/factledger/user?app=mealkit&user=priya&as_of=2020-01-01T00:00:00Z")
    assert "Bengaluru" not in believed.text and "No facts" in believed.text
    bad = rao.get("/-/factledger/user?app=mealkit&user=priya&valid_at=yesterday")
    assert bad.status_code == 400 and "Error: timestamp" in bad.text
    assert rao.get("/-/factledger/user?app=&user=priya").status_code == 400


def test_fact_page_shows_provenance_events_and_what_replaced_it(rao, ledger_file):
    ids = home_city(ledger_file)
    page = rao.get(f"/-/factledger/fact?id={ids['Pune']}")
    assert page.status_code == 200
    assert "I&#39;m vegetarian, and we&#39;re in Pune" in page.text or "in Pune" in page.text
    assert "meal-1" in page.text and "FactObserved" in page.text and "FactSuperseded" in page.text
    related = page.text.split('id="related"')[1].split("</table>")[0]
    assert "Bengaluru" in related and "replaced by" in related
    missing = rao.get("/-/factledger/fact?id=no-such-fact")
    assert missing.status_code == 400 and "no fact" in missing.text


def test_timeline_draws_both_times_as_svg(rao):
    page = rao.get("/-/factledger/timeline?app=mealkit&user=priya&predicate=city")     # an alias works
    assert page.status_code == 200
    valid = page.text.split('id="valid-time"')[1].split("</figure>")[0]
    assert valid.count("<svg") == 1 and "Pune" in valid and "Bengaluru" in valid
    assert "▶ superseded" in valid and 'fill="#1f5fbf"' in valid                      # stated: blue
    transaction = page.text.split('id="transaction-time"')[1].split("</figure>")[0]
    assert "what we believed when" in transaction and "state-superseded" in transaction
    dispute = rao.get("/-/factledger/timeline?app=mealkit&user=priya&predicate=household_size")
    assert 'fill="url(#hatch)"' in dispute.text and 'fill="#c77700"' in dispute.text   # inferred, disputed


def test_accept_goes_through_the_ledger_in_the_reviewers_name(rao, ledger_file):
    with Ledger(ledger_file) as ledger:
        hold = ledger.held()[0]["hold_id"]
    refused = rao.post("/-/factledger/review/accept", {"hold_id": hold, "predicate": "favorite_cuisine", "reason": " "})
    assert refused.status_code == 400 and "a reason is required" in refused.text
    done = rao.post("/-/factledger/review/accept", {"hold_id": hold, "predicate": "favorite_cuisine",
                                                    "reason": "a cuisine, said by the user"})
    assert done.status_code == 302
    assert "Done" in rao.get(done.headers["location"]).text
    with Ledger(ledger_file) as ledger:
        assert ledger.held() == []
        fact = next(f for f in ledger.facts("mealkit", "priya") if f["value"] == HELD_VALUE)
    shown = why(ledger_file, fact["fact_id"])
    observed = next(e for e in shown["events"] if e["type"] == "FactObserved")
    assert observed["body"]["reviewed_by"] == "rao"
    assert observed["body"]["review_reason"] == "a cuisine, said by the user"
    assert observed["body"]["hold_id"] == hold
    again = rao.post("/-/factledger/review/accept", {"hold_id": hold, "predicate": "favorite_cuisine", "reason": "x"})
    assert again.status_code == 400 and "already" in again.text


def test_reject_and_resolve_are_recorded_with_the_reviewer(rao, ledger_file):
    with Ledger(ledger_file) as ledger:
        hold = ledger.held()[0]["hold_id"]
        challenger = next(f["fact_id"] for f in ledger.facts("mealkit", "priya") if f["status"] == "disputed")
    assert rao.post("/-/factledger/review/reject", {"hold_id": hold, "reason": "not a fact"}).status_code == 302
    bad = rao.post("/-/factledger/resolve", {"fact_id": challenger, "verdict": "maybe", "reason": "r"})
    assert bad.status_code == 400
    assert rao.post("/-/factledger/resolve", {"fact_id": challenger, "verdict": "reject",
                                              "reason": "orders were gifts"}).status_code == 302
    with Ledger(ledger_file) as ledger:
        rejected = ledger.log(type="CandidateRejected")[-1]["body"]
        resolved = ledger.log(type="DisputeResolved")[-1]["body"]
        assert [f["status"] for f in ledger.facts("mealkit", "priya", predicate="household_size")] == ["current"]
    assert rejected["reviewed_by"] == "rao" and rejected["reason"] == "not a fact"
    assert resolved["resolved_by"] == "rao" and resolved["reason"] == "orders were gifts"
    assert "No open disputes" in rao.get("/-/factledger/review").text


def test_erasure_plan_changes_nothing_then_commit_brings_the_earlier_value_back(rao, ledger_file):
    bengaluru = home_city(ledger_file)["Bengaluru"]
    assert "Bengaluru" in rao.get(f"/-/factledger/fact?id={bengaluru}").text   # a serve: recorded
    with Ledger(ledger_file) as ledger:
        head = ledger.head()
    scope = {"app": "mealkit", "user": "priya", "kind": "session", "target": "meal-2",
             "reason": "user request", "ticket": "DPO-114"}
    plan = rao.post("/-/factledger/erase/plan", scope)
    assert plan.status_code == 200 and "Dry run: nothing was changed" in plan.text
    assert "user home_city" in plan.text and "Bengaluru" not in plan.text
    with Ledger(ledger_file) as ledger:
        assert ledger.head() == head
    unconfirmed = rao.post("/-/factledger/erase/commit", scope)
    assert unconfirmed.status_code == 400
    done = rao.post("/-/factledger/erase/commit", {**scope, "confirm": "yes"})
    assert done.status_code == 200 and "Forgotten: session" in done.text
    seq = int(re.search(r"redaction seq (\d+)", done.text).group(1))
    priya = rao.get("/-/factledger/user?app=mealkit&user=priya")
    assert "Pune" in priya.text and "Bengaluru" not in priya.text
    for path in ["/-/factledger/timeline?app=mealkit&user=priya&predicate=home_city",
                 "/-/factledger/user.json?app=mealkit&user=priya", "/-/factledger/review"]:
        assert "Bengaluru" not in rao.get(path).text, path
    erased = rao.get(f"/-/factledger/fact?id={bengaluru}")
    assert erased.status_code == 400 and "erased" in erased.text and "Bengaluru" not in erased.text
    timeline = rao.get("/-/factledger/timeline?app=mealkit&user=priya&predicate=home_city")
    assert f"reinstated after erasure (seq {seq})" in timeline.text
    # the legend's dashed erasure line is drawn, labelled with the receipt's seq
    assert 'class="erasure"' in timeline.text and f'class="mark mark-erasure">erasure {seq}<' in timeline.text
    assert "dashed line: an erasure that brought a value of this key back" in timeline.text
    receipts = rao.get("/-/factledger/erasures")
    assert "user request" in receipts.text and ">rao<" in receipts.text
    assert "<th>ticket</th>" in receipts.text and "<td>DPO-114</td>" in receipts.text
    record = rao.get(f"/-/factledger/erasures/record?seq={seq}")
    assert record.status_code == 200 and "<strong>ok</strong>" in record.text and "DPO-114" in record.text
    assert "priya" not in record.text.split("<main>")[1]
    assert rao.get("/-/factledger/erasures/record?seq=1").status_code == 400
    again = rao.post("/-/factledger/erase/commit", {**scope, "confirm": "yes"})
    assert again.status_code == 200 and "Nothing to forget" in again.text


def finished(client, started) -> str:
    """Poll a started Integrity job (its page, or its JSON) until it is done; its page then.
    A bound on the polls, not a timing assertion: the checks of a small ledger take moments."""
    text = started.text if hasattr(started, "text") else started
    job = re.search(r"job=([A-Za-z0-9_-]+)", text).group(1)
    for _ in range(600):
        state = client.get(f"/-/factledger/integrity.json?job={job}").json()
        if state["state"] != "running":
            return client.get(f"/-/factledger/integrity?job={job}").text
        time.sleep(0.1)
    raise AssertionError(f"the integrity job did not finish: {state}")


def test_integrity_runs_verify_and_replay_check(rao, ledger_file):
    idle = rao.get("/-/factledger/integrity")
    assert "Nothing has run yet" in idle.text
    page = finished(rao, rao.get("/-/factledger/integrity?run=1"))
    assert 'id="verify-ok"' in page and 'id="replay-ok"' in page and "ran at" in page
    assert 'http-equiv="refresh"' not in page
    with Ledger(ledger_file) as ledger:
        seq, digest = ledger.head()
    pinned = finished(rao, rao.get(f"/-/factledger/integrity?run=1&expect_head={seq}:{digest}"))
    assert 'id="verify-ok"' in pinned
    wrong = finished(rao, rao.get(f"/-/factledger/integrity?run=1&expect_head={seq + 5}:{digest}"))
    assert 'id="verify-bad"' in wrong
    malformed = finished(rao, rao.get("/-/factledger/integrity?run=1&expect_head=nonsense"))
    assert 'id="check-failed"' in malformed and "must look like SEQ:HASH" in malformed


def test_integrity_answers_at_once_and_reports_progress(rao, ledger_file, monkeypatch):
    """The start request returns while the check is still running (held here, mid-walk, until
    the test lets it go), with a job id; polling shows the stage and how far it is, a second
    start joins the running job, and the verdict comes when it is done."""
    from factledger.ledger import service

    gate, reached = threading.Event(), threading.Event()
    real = service.Ledger.verify

    def held(self, *args, progress, **kwargs):
        class Held:
            def stage(self, label, total):
                progress.stage(label, total)

            def update(self, n):
                progress.update(n)
                reached.set()
                assert gate.wait(60)
        return real(self, *args, progress=Held(), **kwargs)

    monkeypatch.setattr(service.Ledger, "verify", held)
    with Ledger(ledger_file) as ledger:
        events = ledger.event_count()
    try:
        started = rao.get("/-/factledger/integrity.json?run=1").json()
        assert started["state"] == "running" and started["job"]
        assert reached.wait(60)
        polled = rao.get(f"/-/factledger/integrity.json?job={started['job']}").json()
        assert polled["state"] == "running" and polled["stage"] == "verifying the chain"
        assert polled["total"] == events and 0 < polled["done"] <= events and "result" not in polled
        page = rao.get(f"/-/factledger/integrity?job={started['job']}").text
        assert 'id="progress"' in page and 'http-equiv="refresh"' in page and "verifying the chain" in page
        assert rao.get("/-/factledger/integrity.json?run=1").json()["job"] == started["job"]
    finally:
        gate.set()
    done = finished(rao, f"job={started['job']}")
    assert 'id="verify-ok"' in done and 'id="replay-ok"' in done
    final = rao.get(f"/-/factledger/integrity.json?job={started['job']}").json()
    assert final["state"] == "done" and final["result"]["verify"]["ok"] and final["result"]["differences"] == []
    assert rao.get("/-/factledger/integrity.json?job=no-such-job").status_code == 400


def test_a_viewer_sees_erasure_receipts_without_forms(ledger_file, clock):
    c = Client(web(ledger_file, clock))
    try:
        c.sign_in("vic")
        assert c.get("/-/factledger/erasures").status_code == 200
        form = c.get("/-/factledger/erase")
        assert "Only a signed-in reviewer" in form.text
    finally:
        c.close()


def _hold(path, predicate: str, value: str, event: str) -> str:
    with Ledger(path) as ledger:
        ledger.observe(make_candidate(app="mealkit", user="priya", predicate=predicate, value=value,
                                      quote=f"about {value}", session="meal-12", evidence_event=event,
                                      said_at="2026-10-30T11:00:00Z"))
        return next(h["hold_id"] for h in ledger.held() if h["value"] == value)


def done_text(client, response) -> str:
    assert response.status_code == 302, response.text
    page = client.get(response.headers["location"]).text
    return re.search(r'<p class="ok" id="done">(.*?)</p>', page, re.S).group(1)


def test_nothing_is_chosen_for_the_reviewer_and_a_new_class_is_confirmed(rao, ledger_file):
    """Issue 29: no predicate or verdict pre-selected; a target of another sensitivity is said in
    the form and asks for its own confirmation; the target's vocabulary applies."""
    shoe = _hold(ledger_file, "shoe_size", "39", "m12-e1")
    teal = _hold(ledger_file, "fav_colour", "teal", "m12-e2")
    page = rao.get("/-/factledger/review").text
    assert '<option value="" selected disabled>choose a predicate…</option>' in page
    assert "blood_pressure (health: asks to confirm)" in page and "favorite_cuisine (normal)" in page
    assert ' checked' not in page.split('id="disputes"')[1]                # no verdict chosen
    unchosen = rao.post("/-/factledger/review/accept", {"hold_id": shoe, "reason": "closest"})
    assert unchosen.status_code == 400 and "a predicate (choose one) is required" in unchosen.text
    with Ledger(ledger_file) as ledger:
        head = ledger.head()
    asked = rao.post("/-/factledger/review/accept", {"hold_id": shoe, "predicate": "blood_pressure",
                                                     "reason": "closest"})
    assert asked.status_code == 200 and 'id="confirm-sensitivity"' in asked.text
    assert "makes it <strong>health</strong> data" in asked.text and "shoe_size = 39" in asked.text
    with Ledger(ledger_file) as ledger:
        assert ledger.head() == head                                        # asking changed nothing
    confirmed = rao.post("/-/factledger/review/accept", {"hold_id": shoe, "predicate": "blood_pressure",
                                                         "reason": "closest", "confirm_sensitivity": "health"})
    said = done_text(rao, confirmed)
    assert f"accepted blood_pressure = 39 for mealkit/priya (held as shoe_size, hold {shoe})" in said
    assert re.search(r"seqs? \d+", said)

    colour = rao.post("/-/factledger/review/accept", {"hold_id": teal, "predicate": "favorite_cuisine",
                                                      "reason": "a cuisine?"})
    assert colour.status_code == 400 and "&#39;teal&#39; is not in favorite_cuisine&#39;s vocabulary" in colour.text
    said = done_text(rao, rao.post("/-/factledger/review/reject", {"hold_id": teal, "reason": "a colour"}))
    assert f"rejected fav_colour = teal for mealkit/priya (hold {teal}): CandidateRejected at seq" in said

    with Ledger(ledger_file) as ledger:
        challenger = next(f["fact_id"] for f in ledger.facts("mealkit", "priya") if f["status"] == "disputed")
    unsettled = rao.post("/-/factledger/resolve", {"fact_id": challenger, "reason": "r"})
    assert unsettled.status_code == 400 and "a verdict (accept or reject the challenger) is required" in unsettled.text
    said = done_text(rao, rao.post("/-/factledger/resolve", {"fact_id": challenger, "verdict": "accept",
                                                             "reason": "the orders say four"}))
    assert said.startswith(f"Done: accepted household_size = 4 for mealkit/priya (fact {challenger}): it is the current")
    assert "DisputeResolved at seq" in said


def test_an_observed_session_is_listed_and_erased_under_its_ticket_found_by_ticket(rao, ledger_file):
    """Issue 29: a session written by `observe` is on the user page with its erase link; the
    "Erased" confirmation names the ticket; the receipts page finds the receipt by its ticket."""
    cli_observe = CliRunner().invoke(cli, [
        "--db", str(ledger_file), "observe", "--app", "mealkit", "--user", "priya", "--predicate", "pet",
        "--value", "cat", "--quote", "we have a cat", "--session", "chat-7", "--event-id", "c7-e1",
        "--said-at", "2026-10-29T08:00:00Z"])
    assert cli_observe.exit_code == 0, cli_observe.output
    page = rao.get("/-/factledger/user?app=mealkit&user=priya").text
    sessions = re.search(r'<table id="sessions">(.*?)</table>', page, re.S).group(1)
    row = re.search(r"<tr><td>chat-7</td>(.*?)</tr>", sessions, re.S).group(1)
    assert "observe" in row and "kind=session&amp;target=chat-7" in row
    assert "<tr><td>meal-2</td><td>ingestion</td>" in sessions
    scope = {"app": "mealkit", "user": "priya", "kind": "session", "target": "chat-7",
             "reason": "asked to forget the cat", "ticket": "DPO-2026-114", "confirm": "yes"}
    done = rao.post("/-/factledger/erase/commit", scope)
    assert done.status_code == 200
    receipt = re.search(r'<p class="ok" id="receipt">(.*?)</p>', done.text, re.S).group(1)
    assert "under ticket <strong id=\"receipt-ticket\">DPO-2026-114</strong>" in receipt
    assert "chat-7" not in rao.get("/-/factledger/user?app=mealkit&user=priya").text
    rao.post("/-/factledger/erase/commit", {**scope, "target": "meal-2", "ticket": "DPO-2026-200"})

    found = rao.get("/-/factledger/erasures?ticket=dpo-2026-114 ").text
    assert "1 receipt filed under ticket" in found
    rows = re.search(r'<table id="receipts">(.*?)</table>', found, re.S).group(1)
    assert "<td>DPO-2026-114</td>" in rows and "DPO-2026-200" not in rows
    assert "2026-200" in rao.get("/-/factledger/erasures").text
    none = rao.get("/-/factledger/erasures?ticket=DPO-0").text
    assert "No receipt is filed under ticket DPO-0" in none
