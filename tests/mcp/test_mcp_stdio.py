"""`factledger mcp` over stdio, driven by the official Python `mcp` client in a subprocess: the
seven tools and their annotations, remember then recall, forget's plan and its one-time code, the
CLI's error text as a tool error, and nothing but protocol on stdout."""

from __future__ import annotations

import json
import subprocess

import anyio
import pytest

pytest.importorskip("mcp")

from tests.mcp.helpers import FACTLEDGER, SEVEN, cli, new_ledger, open_facts, said, stdio_session  # noqa: E402

PART = ("--app", "mealkit", "--user", "priya")


def test_the_seven_tools_with_honest_annotations_and_schemas(tmp_path):
    db = new_ledger(tmp_path)

    async def listed():
        async with stdio_session(db, *PART) as session:
            return (await session.list_tools()).tools

    tools = {t.name: t for t in anyio.run(listed)}
    assert set(tools) == SEVEN
    for name in ("recall", "facts", "history", "why"):     # each answer appends its serve record
        assert tools[name].annotations.read_only_hint is False
        assert tools[name].annotations.destructive_hint is False
        assert tools[name].annotations.idempotent_hint is False
    for name in ("remember", "ingest_session"):
        assert tools[name].annotations.read_only_hint is False
        assert tools[name].annotations.destructive_hint is False
    assert tools["ingest_session"].annotations.idempotent_hint is True
    assert tools["remember"].annotations.idempotent_hint is False     # offered again, it is recorded again
    assert tools["forget"].annotations.destructive_hint is True
    assert all(t.annotations.open_world_hint is False for t in tools.values())
    remember = tools["remember"].input_schema
    assert set(remember["required"]) == {"predicate", "value", "quote", "session"}
    assert remember["properties"]["negated"]["type"] == "boolean"
    assert "facts" in tools["recall"].output_schema["properties"]


def test_remember_then_recall_serves_the_value_in_the_block(tmp_path):
    db = new_ledger(tmp_path)

    async def story():
        async with stdio_session(db, *PART) as session:
            decided = await session.call_tool("remember", said("Lisbon"))
            again = await session.call_tool("remember", said("Lisbon"))
            served = await session.call_tool("recall", {"query": "where do I live?"})
            return decided, again, served

    decided, again, served = anyio.run(story)
    assert not decided.is_error and decided.structured_content["decision"] == "insert"
    assert again.structured_content["decision"] != "insert"
    assert "Lisbon" in served.content[0].text and "<stored_facts>" in served.content[0].text
    (fact,) = served.structured_content["facts"]
    assert fact["value"] == "Lisbon" and fact["predicate"] == "home_city" and fact["status"] == "current"
    assert fact["fact_id"] == decided.structured_content["fact_id"] and fact["said_at"]
    assert [f["value"] for f in open_facts(db, "mealkit", "priya")] == ["Lisbon"]


def test_forget_plans_without_changing_anything_then_commits_with_its_code(tmp_path):
    db = new_ledger(tmp_path)

    async def story():
        async with stdio_session(db, *PART, "--allow-forget") as session:
            fact = (await session.call_tool("remember", said("Lisbon"))).structured_content["fact_id"]
            await session.call_tool("remember", said("vegetarian", "diet"))
            plan = await session.call_tool("forget", {"fact_id": fact, "reason": "user asked"})
            head = cli(db, "head").stdout
            facts_after_plan = open_facts(db, "mealkit", "priya")
            wrong = await session.call_tool("forget", {"fact_id": fact, "reason": "another reason",
                                                       "confirm": plan.structured_content["confirm"]})
            replan = await session.call_tool("forget", {"fact_id": fact, "reason": "user asked"})
            done = await session.call_tool("forget", {"fact_id": fact, "reason": "user asked",
                                                      "confirm": replan.structured_content["confirm"]})
            reused = await session.call_tool("forget", {"fact_id": fact, "reason": "user asked",
                                                        "confirm": replan.structured_content["confirm"]})
            served = await session.call_tool("recall", {"query": "where do I live?"})
            return fact, plan, head, facts_after_plan, wrong, done, reused, served

    fact, plan, head, facts_after_plan, wrong, done, reused, served = anyio.run(story)
    answer = plan.structured_content
    assert not plan.is_error and answer["committed"] is False and answer["receipt"] is None
    assert answer["plan"]["dry_run"] and fact in answer["plan"]["plan"][0]["facts"] and answer["confirm"]
    assert {f["value"] for f in facts_after_plan} == {"Lisbon", "vegetarian"}      # the plan changed nothing
    assert head.startswith("2:")
    assert wrong.is_error and wrong.content[0].text.startswith("Error: the confirmation code does not match")
    assert done.structured_content["committed"] and done.structured_content["receipt"]["redaction_seq"]
    assert reused.is_error                                                       # a code is good once
    assert {f["value"] for f in open_facts(db, "mealkit", "priya")} == {"vegetarian"}
    assert "Lisbon" not in served.content[0].text
    assert json.loads(cli(db, "verify", "--json").stdout)["ok"] is True


def test_an_agent_may_plan_a_forget_but_not_commit_one(tmp_path):
    db = new_ledger(tmp_path)

    async def story():
        async with stdio_session(db, *PART) as session:
            await session.call_tool("remember", said("Lisbon"))
            plan = await session.call_tool("forget", {"all": True, "reason": "user asked"})
            commit = await session.call_tool("forget", {"all": True, "reason": "user asked", "confirm": "0000"})
            return plan, commit

    plan, commit = anyio.run(story)
    assert plan.structured_content["confirm"] is None and "reviewer" in plan.structured_content["note"]
    assert commit.is_error and "only a reviewer" in commit.content[0].text
    assert [f["value"] for f in open_facts(db, "mealkit", "priya")] == ["Lisbon"]


def test_errors_are_tool_errors_with_the_clis_text_and_nothing_is_written(tmp_path):
    db = new_ledger(tmp_path)
    cli_error = cli(db, "observe", *PART, "--predicate", "home_city", "--value", "Lisbon", "--quote",
                    "I live in Lisbon", "--session", "s", "--event-id", "e", "--said-at", "2026-01-01",
                    "--basis", "sure", check=False).stderr.strip()

    async def story():
        async with stdio_session(db, *PART) as session:
            bad = await session.call_tool("remember", said("Lisbon", event_id="e", said_at="2026-01-01",
                                                           session="s", basis="sure"))
            why = await session.call_tool("why", {"fact_id": "no-such-fact"})
            two = await session.call_tool("forget", {"session": "s", "all": True, "reason": "x"})
            return bad, why, two

    bad, why, two = anyio.run(story)
    assert bad.is_error and bad.content[0].text == cli_error and cli_error.startswith("Error: ")
    assert why.is_error and why.content[0].text.startswith("Error: no fact 'no-such-fact'")
    assert two.is_error and "exactly one of" in two.content[0].text
    assert cli(db, "head").stdout.startswith("0:")


def test_stdout_carries_only_the_protocol(tmp_path):
    """Raw JSON-RPC lines in, and every stdout line is a JSON-RPC message (notices go to stderr)."""
    db = new_ledger(tmp_path)
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "recall", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "facts",
                                                                       "arguments": {"user": "someone-else"}}},
    ]
    proc = subprocess.Popen([FACTLEDGER, "--db", str(db), "mcp", *PART], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines, answers = [], {}
    try:
        for message in messages:
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            while "id" in message and message["id"] not in answers:
                lines.append(proc.stdout.readline())
                answer = json.loads(lines[-1])
                if "id" in answer:
                    answers[answer["id"]] = answer
        proc.stdin.close()
        lines += proc.stdout.read().splitlines()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in lines)
    assert set(answers) == {1, 2, 3}
    assert answers[3]["result"]["isError"] is True


def test_ingest_history_why_the_resource_and_the_prompt(tmp_path):
    db = new_ledger(tmp_path)
    session = {"id": "chat-7", "appName": "mealkit", "userId": "priya", "events": [
        {"id": "e1", "author": "user", "timestamp": 1764000000, "content": {"parts": [{"text": "I live in Pune"}]}},
        {"id": "e2", "author": "user", "timestamp": 1764000600,
         "content": {"parts": [{"text": "we just moved to Lisbon"}]}}]}

    async def story():
        async with stdio_session(db, *PART) as session_:
            first = await session_.call_tool("ingest_session", {"session": session})
            again = await session_.call_tool("ingest_session", {"session": json.dumps(session)})
            other = await session_.call_tool("ingest_session", {"session": {**session, "userId": "arjun"}})
            facts = await session_.call_tool("facts", {"predicate": "home_city"})
            history = await session_.call_tool("history", {"predicate": "home_city"})
            fact_id = facts.structured_content["facts"][0]["fact_id"]
            why = await session_.call_tool("why", {"fact_id": fact_id})
            resource = await session_.read_resource("factledger://facts/home_city")
            prompt = await session_.get_prompt("memory_doctrine")
            return first, again, other, facts, history, why, resource, prompt

    first, again, other, facts, history, why, resource, prompt = anyio.run(story)
    assert first.structured_content["status"] == "ingested" and first.structured_content["events_read"] == 2
    assert again.structured_content["status"] == "unchanged"                     # idempotent: nothing appended
    assert other.is_error and "outside this caller's scope" in other.content[0].text
    assert [f["value"] for f in facts.structured_content["facts"]] == ["Lisbon"]
    assert {(r["value"], r["state"]) for r in history.structured_content["facts"]} >= {("Lisbon", "current")}
    assert "Pune" in {r["value"] for r in history.structured_content["facts"]}
    answer = json.loads(why.content[0].text)
    assert answer["fact"]["quote"] == "we just moved to Lisbon" and answer["events"]
    assert "Lisbon" in resource.contents[0].text
    assert "Memory doctrine" in prompt.messages[0].content.text


@pytest.mark.parametrize("args, words", [
    (("--app", "mealkit", "--user", "_erasures"), "reserved"),
    (("--app", "mealkit", "--user", "erased:0a1b"), "reserved"),
    (("--app", "_all", "--user", "priya"), "reserved"),
    (("--app", "mealkit"), "--app and --user"),
    (("--http",), "--tokens"),
])
def test_a_server_that_cannot_serve_says_why_and_exits_1(tmp_path, args, words):
    db = new_ledger(tmp_path)
    done = cli(db, "mcp", *args, check=False)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("Error: ") and words in done.stderr


def test_with_a_read_location_the_read_tools_read_it_and_remember_writes_the_ledger(tmp_path):
    """`factledger --read-db COPY mcp`: the read tools answer from the read location (a replica;
    here a file copied before the second write), as the read commands do, and `remember` writes
    `--db`."""
    import shutil

    db = new_ledger(tmp_path)
    cli(db, "observe", "--app", "mealkit", "--user", "priya", "--predicate", "home_city", "--value", "Pune",
        "--quote", "I live in Pune", "--session", "s1", "--event-id", "e1", "--said-at", "2026-08-30T10:00:00Z")
    copy = tmp_path / "copy.db"
    shutil.copy(db, copy)
    cli(db, "observe", "--app", "mealkit", "--user", "priya", "--predicate", "diet", "--value", "vegan",
        "--quote", "I am vegan", "--session", "s2", "--event-id", "e2", "--said-at", "2026-08-30T11:00:00Z")

    async def story():
        async with stdio_session(db, *PART, before=("--read-db", str(copy))) as session:
            facts = await session.call_tool("facts", {})
            decided = await session.call_tool("remember", said("Lisbon"))
            return facts, decided

    facts, decided = anyio.run(story)
    assert not facts.is_error and [f["value"] for f in facts.structured_content["facts"]] == ["Pune"]
    assert not decided.is_error
    assert sorted(f["value"] for f in open_facts(db, "mealkit", "priya")) == ["Lisbon", "vegan"]
    assert [f["value"] for f in open_facts(copy, "mealkit", "priya")] == ["Pune"]
