"""Isolation over random tokens and calls: no tool call ever returns or changes a fact outside
its token's scope.  The tokens are real entries of a token file (`--new-token`'s path), each
caller's scope is what the file gives back for its token, and the calls are the tools' own work
(`mcp_server/tools.py`, what the server runs for each call) on a real ledger file."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factledger.ledger import Ledger, LedgerError, make_candidate
from factledger.mcp_server.tokens import TokenFile, new_token
from factledger.mcp_server.tools import MemoryTools

APPS = ("a1", "a2")
USERS = ("u1", "u2", "u3")
CITIES = ("Lisbon", "Porto", "Faro")
PARTITIONS = [(a, u) for a in APPS for u in USERS]

scopes = st.tuples(st.sampled_from(APPS),
                   st.one_of(st.just(("*",)), st.lists(st.sampled_from(USERS), min_size=1, max_size=2,
                                                       unique=True).map(tuple)),
                   st.sampled_from(("agent", "reviewer")))
calls = st.tuples(st.integers(0, 3),                                    # which token
                  st.sampled_from(("recall", "facts", "history", "remember", "why", "forget", "forget-commit")),
                  st.integers(0, 3),         # the app argument: 0, 1 none (the token's own), else any app
                  st.integers(0, 4),         # the user argument: 0 none, 1, 2 one of the token's, else any user
                  st.sampled_from(CITIES), st.integers(0, 20))


def inside(scope, app: str, user: str) -> bool:
    return app == scope.app and (scope.any_user or user in scope.users)


def snapshot(ledger: Ledger) -> dict:
    return {p: sorted((f["fact_id"], f["value"]) for f in ledger.facts(*p, include_sensitive=True))
            for p in PARTITIONS}


TOKENS = st.lists(scopes, min_size=4, max_size=4)
SEQUENCES = st.lists(calls, min_size=4, max_size=12)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TOKENS, SEQUENCES)
def test_no_call_returns_or_changes_a_fact_outside_its_tokens_scope(token_scopes, sequence):
    check_isolation(token_scopes, sequence)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TOKENS, st.lists(calls, min_size=4, max_size=30))
def test_isolation_deeper(token_scopes, sequence):
    check_isolation(token_scopes, sequence)


def check_isolation(token_scopes, sequence) -> None:
    with tempfile.TemporaryDirectory() as folder:
        db, path = Path(folder) / "ledger.db", str(Path(folder) / "tokens.toml")
        tokens = []
        for app, users, role in token_scopes:
            token, text = new_token(path, app, list(users), "all", role, "2026-11-01T00:00:00Z")
            Path(path).write_text(text)
            tokens.append(token)
        file = TokenFile(path)
        tools = MemoryTools(lambda read_only: Ledger(db, create=not read_only, read_only=read_only))
        tools.writer.observe_many([make_candidate(         # a fact in every partition, for a call to leak
            app=a, user=u, predicate="home_city", value=f"Seed {a} {u}", quote=f"I live in Seed {a} {u}",
            session="seed", evidence_event=f"seed-{a}-{u}", said_at="2025-12-01T00:00:00Z") for a, u in PARTITIONS])
        owner: dict[str, tuple[str, str]] = {}           # fact id -> the partition it was said in
        for partition, facts in snapshot(tools.writer).items():
            owner.update({fid: partition for fid, _value in facts})
        try:
            for n, (which, tool, app_pick, user_pick, city, pick) in enumerate(sequence):
                scope = file.scope_of(tokens[which])
                app = None if app_pick < 2 else APPS[app_pick % 2]
                own = USERS if scope.any_user else scope.users
                user = None if user_pick == 0 else (own[user_pick % len(own)] if user_pick < 3 else
                                                    USERS[user_pick % len(USERS)])
                before = snapshot(tools.writer)
                known = sorted(owner)
                fact_id = known[pick % len(known)] if known else "no-such-fact"
                try:
                    answer = run(tools, scope, tool, app, user, city, fact_id, n)
                except LedgerError:
                    answer = None
                after = snapshot(tools.writer)
                for partition in PARTITIONS:                      # nothing outside the scope changed
                    if not inside(scope, *partition):
                        assert after[partition] == before[partition], (tool, scope, partition)
                for partition, facts in after.items():
                    owner.update({fid: partition for fid, _value in facts})
                for fid in returned_fact_ids(answer):            # nothing outside the scope came back
                    assert inside(scope, *owner[fid]), (tool, scope, owner[fid])
        finally:
            tools.close()


def run(tools: MemoryTools, scope, tool: str, app, user, city: str, fact_id: str, n: int):
    if tool in ("recall", "facts", "history"):
        return getattr(tools, tool)(scope, app=app, user=user)
    if tool == "remember":
        return tools.remember(scope, "home_city", city, f"I live in {city}", f"s{n}",
                              said_at=f"2026-01-01T00:00:{n:02d}Z", app=app, user=user)
    if tool == "why":
        return tools.why(scope, fact_id)
    plan = tools.forget(scope, "asked", fact_id=fact_id, app=app, user=user)
    if tool == "forget-commit" and plan["confirm"]:
        return tools.forget(scope, "asked", fact_id=fact_id, confirm=plan["confirm"], app=app, user=user)
    return plan


def returned_fact_ids(answer) -> list[str]:
    if not isinstance(answer, dict):
        return []
    found = [f["fact_id"] for f in answer.get("facts", [])]
    if "fact" in answer:                                   # why
        found.append(answer["fact"]["fact_id"])
    plan = answer.get("plan") or {}
    for part in plan.get("plan", []):
        found += part["facts"]
    return found

