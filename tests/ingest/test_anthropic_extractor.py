"""The anthropic extractor, without network: an httpx2 MockTransport replays Messages API answers.

Covers a good answer, malformed JSON, a 429 then success, a 500, a timeout, a candidate citing a
missing event, a quote not in the transcript, a tool-authored preference, and the retry queue.
"""

from __future__ import annotations

import functools
import json

import httpx2
import pytest
from click.testing import CliRunner

from factledger.cli.main import cli
from factledger.ledger import LedgerError
from factledger.ledger.ingest.anthropic import AnthropicExtractor
from factledger.ledger.ingest.batch import ingest_paths, retry_failed
from tests.ingest.helpers import SESSIONS, types

MEAL1 = str(SESSIONS / "meal-kit" / "1-vegetarian-in-pune.json")
DEPLOY_B = str(SESSIONS / "deployment" / "b-runbook.jsonl")
DIGEST = "Priya, vegetarian in Pune, ordered a chickpea curry box for two."
GOOD = {"digest": DIGEST, "candidates": [
    {"subject": "user", "predicate": "diet", "value": "vegetarian", "quote": "I'm vegetarian",
     "evidence_event": "m1-e1", "basis": "stated", "negated": False},
    {"subject": "user", "predicate": "location", "value": "Pune", "quote": "we're in Pune",
     "evidence_event": "m1-e1", "basis": "stated", "negated": False},
]}


def message(payload, stop_reason="end_turn") -> httpx2.Response:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return httpx2.Response(200, json={
        "id": "msg_test", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
        "content": [{"type": "text", "text": text}], "stop_reason": stop_reason,
        "stop_sequence": None, "usage": {"input_tokens": 100, "output_tokens": 50}})


def error(status: int, kind: str) -> httpx2.Response:
    return httpx2.Response(status, headers={"retry-after-ms": "1"},
                           json={"type": "error", "error": {"type": kind, "message": kind}})


class Replay:
    """Serves canned responses in order (the last one repeats) and records the requests."""

    def __init__(self, *responses):
        self.responses = list(responses)
        self.requests: list[dict] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(json.loads(request.content))
        answer = self.responses.pop(0) if len(self.responses) > 1 else self.responses[0]
        if isinstance(answer, Exception):
            raise answer
        return answer

    def extractor(self, max_retries: int = 2) -> AnthropicExtractor:
        client = httpx2.Client(transport=httpx2.MockTransport(self))
        return AnthropicExtractor(http_client=client, api_key="test-key", max_retries=max_retries,
                                  timeout=5.0)


def ingest(ledger, replay, path=MEAL1, **kw):
    return ingest_paths(ledger._work, [path], None, None, replay.extractor(**kw))


def test_good_answer_stores_facts_and_the_digest(ledger):
    replay = Replay(message(GOOD))
    summary = ingest(ledger, replay)
    assert summary.as_dict()["applied"] == {"insert": 2}
    facts = {f["predicate"]: f["value"] for f in ledger.facts("mealkit", "priya", include_sensitive=True)}
    assert facts == {"diet": "vegetarian", "home_city": "Pune"}
    (row,) = ledger.sessions("mealkit", "priya")
    assert row["digest"] == DIGEST and row["extractor"] == "anthropic"
    ingested = ledger.log(type="SessionIngested")[0]["body"]
    assert ingested["model"] == "claude-haiku-4-5" and len(ingested["prompt_sha256"]) == 64
    (request,) = replay.requests
    assert request["model"] == "claude-haiku-4-5"
    assert "home_city | one | fact" in request["system"]
    assert "[m1-e1] user: Hi! I'm vegetarian, and we're in Pune." in request["messages"][0]["content"]
    assert request["output_config"]["format"]["type"] == "json_schema"


def test_prompt_carries_the_partitions_current_keys(ledger):
    ingest(ledger, Replay(message(GOOD)))
    replay = Replay(message({"digest": "moved", "candidates": []}))
    ingest(ledger, replay, path=str(SESSIONS / "meal-kit" / "2-moved-to-bengaluru.json"))
    assert "- user diet = vegetarian" in replay.requests[0]["messages"][0]["content"]
    assert "- user home_city = Pune" in replay.requests[0]["messages"][0]["content"]


def assert_failed_cleanly(ledger, summary, words):
    (failed,) = summary.failed
    assert failed.status == "failed" and words in failed.error
    assert types(ledger) == ["IngestFailed"]                    # nothing partial
    assert ledger.lookup.session_state("mealkit", "priya", "meal-1") is None   # watermark untouched
    (queued,) = ledger.lookup.ingest_queue()
    assert (queued["session"], queued["status"], queued["extractor"]) == ("meal-1", "open", "anthropic")
    assert queued["source"] == MEAL1


def test_malformed_json_fails_cleanly(ledger):
    summary = ingest(ledger, Replay(message('{"digest": "x", "candidates": [')))
    assert_failed_cleanly(ledger, summary, "malformed model output")


def test_answer_of_the_wrong_shape_fails_cleanly(ledger):
    summary = ingest(ledger, Replay(message({"digest": "x", "candidates": [{"predicate": "diet"}]})))
    assert_failed_cleanly(ledger, summary, "malformed model output")


def test_truncated_answer_fails_cleanly(ledger):
    summary = ingest(ledger, Replay(message(GOOD, stop_reason="max_tokens")))
    assert_failed_cleanly(ledger, summary, "max_tokens")


def test_429_then_success_is_retried(ledger):
    replay = Replay(error(429, "rate_limit_error"), message(GOOD))
    summary = ingest(ledger, replay)
    assert not summary.failed and len(replay.requests) == 2
    assert types(ledger)[-1] == "SessionIngested"


def test_500_fails_after_bounded_retries(ledger):
    replay = Replay(error(500, "api_error"))
    summary = ingest(ledger, replay, max_retries=2)
    assert len(replay.requests) == 3
    assert_failed_cleanly(ledger, summary, "HTTP 500")
    assert ledger.log(type="IngestFailed")[0]["body"]["attempts"] == 3


def test_400_is_not_retried(ledger):
    replay = Replay(error(400, "invalid_request_error"))
    summary = ingest(ledger, replay)
    assert len(replay.requests) == 1
    assert_failed_cleanly(ledger, summary, "HTTP 400")


def test_timeout_fails_cleanly(ledger):
    replay = Replay(httpx2.ReadTimeout("timed out"))
    summary = ingest(ledger, replay, max_retries=1)
    assert len(replay.requests) == 2
    assert_failed_cleanly(ledger, summary, "timed out")


def test_candidate_citing_a_missing_event_is_rejected(ledger):
    answer = dict(GOOD, candidates=GOOD["candidates"] + [
        {"subject": "user", "predicate": "household_size", "value": "2", "quote": "for two",
         "evidence_event": "m1-e99"}])
    summary = ingest(ledger, Replay(message(answer))).as_dict()
    assert summary["applied"] == {"insert": 2}
    assert summary["rejected"] == {"evidence_event_missing": 1}


def test_quote_not_in_the_transcript_is_rejected(ledger):
    answer = {"digest": "x", "candidates": [
        {"subject": "user", "predicate": "diet", "value": "vegan", "quote": "I'm vegan",
         "evidence_event": "m1-e1"}]}
    summary = ingest(ledger, Replay(message(answer))).as_dict()
    assert summary["rejected"] == {"quote_not_in_evidence": 1}
    assert ledger.facts("mealkit", "priya") == []


def test_tool_authored_preference_is_rejected(ledger):
    answer = {"digest": "asked where to deploy", "candidates": [
        {"subject": "user", "predicate": "deploy.region", "value": "us-central",
         "quote": "all teams must use us-central", "evidence_event": "b2", "basis": "stated"}]}
    summary = ingest(ledger, Replay(message(answer)), path=DEPLOY_B).as_dict()
    assert summary["rejected"] == {"preference_not_user_authored": 1}
    assert ledger.facts("deploybot", "team-atlas") == []


def test_retry_failed_retries_the_queue(ledger):
    ingest(ledger, Replay(error(500, "api_error")), max_retries=0)
    assert len(ledger.lookup.ingest_queue()) == 1
    replay = Replay(message(GOOD))
    client = httpx2.Client(transport=httpx2.MockTransport(replay))
    summary = retry_failed(ledger._work, http_client=client, api_key="test-key")
    assert [r.status for r in summary.results] == ["ingested"]
    assert ledger.lookup.ingest_queue() == []
    assert ledger.lookup.ingest_queue(status="done")[0]["attempts"] == 1
    assert types(ledger) == ["IngestFailed", "FactObserved", "FactObserved", "SessionIngested"]
    assert retry_failed(ledger._work).results == []


def test_cli_retry_failed(tmp_path, monkeypatch):
    import anthropic

    replay = Replay(error(500, "api_error"), error(500, "api_error"), error(500, "api_error"),
                    message(GOOD))
    client = httpx2.Client(transport=httpx2.MockTransport(replay))
    monkeypatch.setattr(anthropic, "Anthropic", functools.partial(anthropic.Anthropic, http_client=client))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    db = str(tmp_path / "l.db")
    first = CliRunner().invoke(cli, ["--db", db, "ingest", MEAL1, "--create", "--json", "--extractor", "anthropic"])
    assert first.exit_code == 1 and "HTTP 500" in first.stderr      # chosen: a key alone chooses nothing
    retried = CliRunner().invoke(cli, ["--db", db, "ingest", "--retry-failed", "--json"])
    assert retried.exit_code == 0, retried.output
    assert json.loads(retried.stdout)["applied"] == {"insert": 2}


def test_missing_api_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(LedgerError, match="ANTHROPIC_API_KEY"):
        AnthropicExtractor()
