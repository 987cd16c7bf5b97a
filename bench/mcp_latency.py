"""`python -m bench.mcp_latency [--calls 200] [--json FILE]`: MCP tool-call latency over HTTP on localhost.

`recall` and `remember` through `factledger mcp --http` (a server subprocess, the official Python
`mcp` client, a bearer token), with 1 client and with 16 at once, beside the same calls made
in-process on the tools the server runs (`mcp_server/tools.py`, with 1 and 16 threads),
on the same kind of ledger.  p50 and p99 per call, and the ratios HTTP / in-process: what a call
pays for the protocol, the HTTP round trip and the token check.  Needs the `mcp` extra.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from factledger.ledger import Ledger, make_candidate

from .stats import ms, percentile, ratio

APP = "bench-mcp"
USERS = 16
CITIES = ["Lisbon", "Porto", "Pune", "Berlin", "Austin", "Faro", "Leeds", "Oslo"]
FACTLEDGER = str(Path(sys.executable).with_name("factledger"))


def seed(db: Path, facts_per_user: int = 40) -> None:
    """Each user's partition with a home city and some allergies said over time (recall has facts
    to score and serve)."""
    with Ledger(db, create=True) as ledger:
        candidates = []
        for u in range(USERS):
            for k in range(facts_per_user):
                predicate, value = (("home_city", CITIES[k % len(CITIES)]) if k % 4 == 0 else
                                    ("allergy", f"xallergen{k}"))
                candidates.append(make_candidate(
                    app=APP, user=f"u{u}", predicate=predicate, value=value, quote=f"I said {value}",
                    session=f"seed-{k}", evidence_event=f"seed-{u}-{k}", said_at=f"2026-0{1 + k % 9}-01"))
        ledger.observe_many(candidates)


def remember_args(user: int, n: int) -> dict:
    city = CITIES[n % len(CITIES)]
    return {"predicate": "home_city", "value": city, "quote": f"I live in {city} now",
            "session": f"bench-{user}-{n}", "user": f"u{user}"}


def recall_args(user: int) -> dict:
    return {"query": "where do I live, and what am I allergic to?", "user": f"u{user}"}


# --- in-process -------------------------------------------------------------------------------

def in_process(db: Path, calls: int, clients: int) -> dict[str, list[float]]:
    from factledger.mcp_server.scope import Scope
    from factledger.mcp_server.tools import MemoryTools

    tools = MemoryTools(lambda read_only: Ledger(db, read_only=read_only))
    scope = Scope.build(APP, ["*"], "personal", "agent", "bench")
    timings: dict[str, list[float]] = {"recall": [], "remember": []}
    lock = threading.Lock()

    def client(user: int) -> None:
        mine: dict[str, list[float]] = {"recall": [], "remember": []}
        for n in range(calls):
            t0 = time.perf_counter()
            tools.recall(scope, **recall_args(user))
            t1 = time.perf_counter()
            tools.remember(scope, **remember_args(user, n))
            mine["recall"].append(t1 - t0)
            mine["remember"].append(time.perf_counter() - t1)
        with lock:
            for name, samples in mine.items():
                timings[name] += samples

    threads = [threading.Thread(target=client, args=(u,)) for u in range(clients)]
    started = time.perf_counter()       # the readers open their ledgers within the run (as the server's do)
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    timings["wall"] = [time.perf_counter() - started]
    tools.close()
    return timings


# --- over HTTP --------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(db: Path, tokens: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([FACTLEDGER, "--db", str(db), "mcp", "--http", "--port", str(port), "--tokens",
                             str(tokens)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"factledger mcp --http did not start: {proc.stderr.read()!r}") from None
            time.sleep(0.1)


def over_http(url: str, token: str, calls: int, clients: int) -> dict[str, list[float]]:
    import anyio
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    timings: dict[str, list[float]] = {"recall": [], "remember": []}
    # One TLS context for every client (the URL is plain http, but each httpx client would load
    # the CA store anew, a quarter of a second of the one event loop every client shares), and
    # the calls timed once every session is open: what is measured is calls, not handshakes.
    tls = ssl.create_default_context()
    ready: list[int] = []
    started: list[float] = []

    async def client(user: int, all_open) -> None:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120, verify=tls) as http, \
                streamable_http_client(url, http_client=http) as streams, \
                ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            ready.append(user)
            if len(ready) == clients:
                started.append(time.perf_counter())
                all_open.set()
            await all_open.wait()
            for n in range(calls):
                t0 = time.perf_counter()
                served = await session.call_tool("recall", recall_args(user))
                t1 = time.perf_counter()
                decided = await session.call_tool("remember", remember_args(user, n))
                timings["remember"].append(time.perf_counter() - t1)
                timings["recall"].append(t1 - t0)
                if served.is_error or decided.is_error:
                    raise RuntimeError(f"a bench call failed: {served.content or decided.content}")
            timings.setdefault("ended", []).append(time.perf_counter())

    async def all_clients() -> None:
        all_open = anyio.Event()
        async with anyio.create_task_group() as group:
            for user in range(clients):
                group.start_soon(client, user, all_open)

    anyio.run(all_clients)
    timings["wall"] = [max(timings.pop("ended")) - started[0]]     # from every session open to the last call
    return timings


# --- the run ----------------------------------------------------------------------------------

def measure(calls: int = 200, concurrent: int = 16, log=print) -> dict:
    """Figures for 1 client (`calls` calls of each tool) and `concurrent` clients (`calls //
    concurrent` each, at least 10), over HTTP and in-process, each on a freshly seeded ledger."""
    results: dict = {}
    with tempfile.TemporaryDirectory() as work:
        for clients in (1, concurrent):
            each = calls if clients == 1 else max(10, calls // clients)
            for mode in ("in_process", "http"):
                db = Path(work) / f"{mode}-{clients}.db"
                seed(db)
                if mode == "in_process":
                    timings = in_process(db, each, clients)
                else:
                    tokens = Path(work) / f"tokens-{clients}.toml"
                    token = subprocess.run([FACTLEDGER, "--db", str(db), "mcp", "--new-token", "--tokens",
                                            str(tokens), "--app", APP, "--users", "*"], capture_output=True,
                                           text=True, check=True).stdout.strip()
                    proc, url = start_server(db, tokens)
                    try:
                        timings = over_http(url, token, each, clients)
                    finally:
                        proc.terminate()
                        proc.wait(timeout=30)
                        proc.stderr.close()
                wall = timings.pop("wall")[0]
                for tool, samples in timings.items():
                    for q in (50, 99):
                        results[f"mcp_{mode}_{tool}_c{clients}_p{q}_ms"] = ms(percentile(samples, q))
                # recalls completed per second of the run (each client alternates recall and remember)
                results[f"mcp_{mode}_recall_c{clients}_per_s"] = round(len(timings["recall"]) / wall, 1)
                log(f"{mode:>10}, {clients:>2} client(s), {each} calls each: " + ", ".join(
                    f"{tool} p50 {ms(percentile(s, 50))} ms p99 {ms(percentile(s, 99))} ms"
                    for tool, s in timings.items()) + f", {results[f'mcp_{mode}_recall_c{clients}_per_s']} recalls/s")
        for clients in (1, concurrent):
            for tool in ("recall", "remember"):
                for q in (50, 99):
                    key = f"{tool}_c{clients}_p{q}"
                    results[f"mcp_http_vs_in_process_{key}"] = ratio(results[f"mcp_http_{key}_ms"],
                                                                     results[f"mcp_in_process_{key}_ms"])
    # the issue-50 targets: p99 at `concurrent` clients within 10x one client's, throughput >= 1.5x
    for mode in ("in_process", "http"):
        results[f"mcp_{mode}_recall_p99_c{concurrent}_vs_c1"] = ratio(
            results[f"mcp_{mode}_recall_c{concurrent}_p99_ms"], results[f"mcp_{mode}_recall_c1_p99_ms"])
        results[f"mcp_{mode}_recall_per_s_c{concurrent}_vs_c1"] = ratio(
            results[f"mcp_{mode}_recall_c{concurrent}_per_s"], results[f"mcp_{mode}_recall_c1_per_s"])
    results["concurrent_clients"] = concurrent
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.mcp_latency", description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="calls of each tool by the single client")
    parser.add_argument("--concurrent", type=int, default=16, help="clients at once in the second run")
    parser.add_argument("--json", dest="json_out", default=None)
    args = parser.parse_args(argv)
    os.environ.setdefault("FACTLEDGER_EMBEDDER", "off")
    results = measure(args.calls, args.concurrent)
    print()
    print(f"{'ratio HTTP / in-process':<32} {'p50':>8} {'p99':>8}")
    for clients in (1, args.concurrent):
        for tool in ("recall", "remember"):
            row = [results[f"mcp_http_vs_in_process_{tool}_c{clients}_p{q}"] for q in (50, 99)]
            print(f"{tool + f', {clients} client(s)':<32} {row[0]!s:>8} {row[1]!s:>8}")
    print()
    for mode in ("in_process", "http"):
        print(f"{mode}: recall p99 c{args.concurrent}/c1 {results[f'mcp_{mode}_recall_p99_c{args.concurrent}_vs_c1']},"
              f" recalls/s c{args.concurrent}/c1 {results[f'mcp_{mode}_recall_per_s_c{args.concurrent}_vs_c1']}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
