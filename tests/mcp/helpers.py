"""A real ledger file, the `factledger mcp` server as a subprocess (stdio or HTTP), and the
official Python `mcp` client's sessions on it, shared by the MCP tests."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

FACTLEDGER = str(Path(sys.executable).with_name("factledger"))
SEVEN = {"recall", "remember", "ingest_session", "facts", "history", "why", "forget"}


def cli(db, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([FACTLEDGER, "--db", str(db), *args], capture_output=True, text=True, timeout=120)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def new_ledger(tmp_path) -> Path:
    db = tmp_path / "ledger.db"
    cli(db, "init")
    return db


def new_token(db, tokens, app: str = "mealkit", *, user: str | None = None, users: str | None = None,
              role: str = "agent", clearance: str | None = None) -> str:
    args = ["mcp", "--new-token", "--tokens", str(tokens), "--app", app, "--role", role]
    args += ["--user", user] if user is not None else ["--users", users]
    args += ["--clearance", clearance] if clearance else []
    done = cli(db, *args)
    lines = done.stdout.splitlines()
    assert len(lines) == 1
    return lines[0]


def open_facts(db, app: str, user: str) -> list[dict]:
    return json.loads(cli(db, "facts", "--app", app, "--user", user, "--clearance", "all", "--json").stdout)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def http_server(db, tokens, *args: str, started: list | None = None):
    """`factledger mcp --http [ARGS...]` on a free localhost port; yields its /mcp URL once it
    answers (the server's process appended to `started`, when given)."""
    port = free_port()
    proc = subprocess.Popen([FACTLEDGER, "--db", str(db), "mcp", "--http", "--port", str(port), "--tokens",
                             str(tokens), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if started is not None:
        started.append(proc)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"the MCP server did not start: {proc.stderr.read()}") from None
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


@asynccontextmanager
async def stdio_session(db, *args: str, before: tuple[str, ...] = ()):
    """`factledger [--db DB BEFORE...] mcp ARGS...` over stdio: `before` holds the global options."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=FACTLEDGER, args=["--db", str(db), *before, "mcp", *args],
                                   env=dict(os.environ))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def http_session(url: str, token: str):
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http, \
            streamable_http_client(url, http_client=http) as streams, \
            ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        yield session


def said(value: str, predicate: str = "home_city", session: str = "chat-1", **extra) -> dict:
    quotes = {"home_city": f"I live in {value}", "diet": f"I am {value}"}
    return {"predicate": predicate, "value": value, "quote": quotes.get(predicate, value), "session": session,
            **extra}


def sixteen_at_once(url: str, token: str, users: list[str]) -> list[tuple]:
    """Every user's client at once, each `remember`ing three cities (City0..City2, one a
    session) and `recall`ing after each: (user, the remember's result, the recall's result)."""
    import anyio

    async def client(user, answers):
        async with http_session(url, token) as session:
            for n in range(3):
                decided = await session.call_tool("remember", said(f"City{n}", user=user, session=f"s{n}",
                                                                   said_at=f"2026-01-0{n + 1}T00:00:00Z"))
                served = await session.call_tool("recall", {"query": "where do I live", "user": user})
                answers.append((user, decided, served))

    async def all_at_once():
        answers = []
        async with anyio.create_task_group() as group:
            for user in users:
                group.start_soon(client, user, answers)
        return answers

    return anyio.run(all_at_once)
