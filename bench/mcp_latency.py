"""`python -m bench.mcp_latency [--calls 200] [--rounds 3] [--workers N] [--json FILE]`: MCP tool-call
latency over HTTP on localhost.

`recall` and `remember` through `factledger mcp --http` (a server subprocess with `--workers N`,
the official Python `mcp` client, a bearer token), with 1 client and with 16 at once, beside the
same calls made in-process on the tools the server runs (`mcp_server/tools.py`, with 1 and 16
threads), on the same kind of ledger.  Each client warms up first; then `--rounds` timed rounds,
and each figure (p50, p99, recalls/s) is the median of its rounds, so that one noisy round on a
shared machine does not make the 16/1 ratios.  Needs the `mcp` extra.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import ssl
import statistics
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

def in_process(db: Path, calls: int, clients: int, rounds: int = 1, warm: int = 0) -> list[dict[str, list[float]]]:
    """Per round: the timings of `clients` threads making `calls` calls each (after `warm` untimed)."""
    from factledger.mcp_server.scope import Scope
    from factledger.mcp_server.tools import MemoryTools

    tools = MemoryTools(lambda read_only: Ledger(db, read_only=read_only))
    scope = Scope.build(APP, ["*"], "personal", "agent", "bench")
    runs: list[dict[str, list[float]]] = [{"recall": [], "remember": [], "ended": []} for _ in range(rounds)]
    started: list[float] = []
    lock = threading.Lock()
    barrier = threading.Barrier(clients, action=lambda: started.append(time.perf_counter()))

    def client(user: int) -> None:
        for n in range(warm):
            tools.recall(scope, **recall_args(user))
            tools.remember(scope, **remember_args(user, -1 - n))
        for r in range(rounds):
            barrier.wait()
            mine: dict[str, list[float]] = {"recall": [], "remember": []}
            for n in range(calls):
                t0 = time.perf_counter()
                tools.recall(scope, **recall_args(user))
                t1 = time.perf_counter()
                tools.remember(scope, **remember_args(user, r * calls + n))
                mine["recall"].append(t1 - t0)
                mine["remember"].append(time.perf_counter() - t1)
            with lock:
                for name, samples in mine.items():
                    runs[r][name] += samples
                runs[r]["ended"].append(time.perf_counter())

    threads = [threading.Thread(target=client, args=(u,)) for u in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    tools.close()
    for r, run in enumerate(runs):
        run["wall"] = [max(run.pop("ended")) - started[r]]
    return runs


# --- over HTTP --------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(db: Path, tokens: Path, workers: int | None = None) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([FACTLEDGER, "--db", str(db), "mcp", "--http", "--port", str(port), "--tokens",
                             str(tokens)] + (["--workers", str(workers)] if workers else []),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"factledger mcp --http did not start: {proc.stderr.read()!r}") from None
            time.sleep(0.1)


def over_http(url: str, token: str, calls: int, clients: int, rounds: int = 1,
              warm: int = 0) -> list[dict[str, list[float]]]:
    """Per round: the timings of `clients` sessions making `calls` calls each, timed from the
    moment every client is ready (sessions open, `warm` untimed calls made) to the last call."""
    import anyio
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    runs: list[dict[str, list[float]]] = [{"recall": [], "remember": [], "ended": []} for _ in range(rounds)]
    # One TLS context for every client (the URL is plain http, but each httpx client would load
    # the CA store anew, a quarter of a second of the one event loop every client shares), and
    # the calls timed once every session is open: what is measured is calls, not handshakes.
    tls = ssl.create_default_context()
    ready = [0] * rounds
    started: list[float] = [0.0] * rounds

    async def client(user: int, gates) -> None:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120, verify=tls) as http, \
                streamable_http_client(url, http_client=http) as streams, \
                ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            for n in range(warm):
                await session.call_tool("recall", recall_args(user))
                await session.call_tool("remember", remember_args(user, -1 - n))
            for r in range(rounds):
                ready[r] += 1
                if ready[r] == clients:
                    started[r] = time.perf_counter()
                    gates[r].set()
                await gates[r].wait()
                for n in range(calls):
                    t0 = time.perf_counter()
                    served = await session.call_tool("recall", recall_args(user))
                    t1 = time.perf_counter()
                    decided = await session.call_tool("remember", remember_args(user, r * calls + n))
                    runs[r]["remember"].append(time.perf_counter() - t1)
                    runs[r]["recall"].append(t1 - t0)
                    if served.is_error or decided.is_error:
                        raise RuntimeError(f"a bench call failed: {served.content or decided.content}")
                runs[r]["ended"].append(time.perf_counter())

    async def all_clients() -> None:
        gates = [anyio.Event() for _ in range(rounds)]
        async with anyio.create_task_group() as group:
            for user in range(clients):
                group.start_soon(client, user, gates)

    anyio.run(all_clients)
    for r, run in enumerate(runs):       # from every client ready to the round's last call
        run["wall"] = [max(run.pop("ended")) - started[r]]
    return runs


def median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(statistics.median(known), 3) if known else None


# --- the run ----------------------------------------------------------------------------------

def measure(calls: int = 200, concurrent: int = 16, rounds: int = 3, warm: int = 10, workers: int | None = None,
            log=print) -> dict:
    """Figures for 1 client (`calls` calls of each tool) and `concurrent` clients (`calls //
    concurrent` each, at least 10), over HTTP and in-process, each on a freshly seeded ledger:
    each figure the median of `rounds` rounds, after `warm` untimed calls per client."""
    results: dict = {"load_average_start": [round(x, 2) for x in os.getloadavg()]}
    with tempfile.TemporaryDirectory() as work:
        for clients in (1, concurrent):
            each = calls if clients == 1 else max(10, calls // clients)
            for mode in ("in_process", "http"):
                db = Path(work) / f"{mode}-{clients}.db"
                seed(db)
                if mode == "in_process":
                    runs = in_process(db, each, clients, rounds, warm)
                else:
                    tokens = Path(work) / f"tokens-{clients}.toml"
                    token = subprocess.run([FACTLEDGER, "--db", str(db), "mcp", "--new-token", "--tokens",
                                            str(tokens), "--app", APP, "--users", "*"], capture_output=True,
                                           text=True, check=True).stdout.strip()
                    proc, url = start_server(db, tokens, workers)
                    try:
                        runs = over_http(url, token, each, clients, rounds, warm)
                    finally:
                        proc.terminate()
                        proc.wait(timeout=30)
                        proc.stderr.close()
                for tool in ("recall", "remember"):
                    for q in (50, 99):
                        per_round = [ms(percentile(run[tool], q)) for run in runs]
                        results[f"mcp_{mode}_{tool}_c{clients}_p{q}_ms"] = median(per_round)
                        results[f"mcp_{mode}_{tool}_c{clients}_p{q}_ms_rounds"] = per_round
                # recalls completed per second of the run (each client alternates recall and remember)
                per_s = [round(len(run["recall"]) / run["wall"][0], 1) for run in runs]
                results[f"mcp_{mode}_recall_c{clients}_per_s"] = median(per_s)
                results[f"mcp_{mode}_recall_c{clients}_per_s_rounds"] = per_s
                log(f"{mode:>10}, {clients:>2} client(s), {each} calls each, median of {rounds}: " + ", ".join(
                    f"{tool} p50 {results[f'mcp_{mode}_{tool}_c{clients}_p50_ms']} ms"
                    f" p99 {results[f'mcp_{mode}_{tool}_c{clients}_p99_ms']} ms" for tool in ("recall", "remember"))
                    + f", {results[f'mcp_{mode}_recall_c{clients}_per_s']} recalls/s {per_s}")
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
    results.update(concurrent_clients=concurrent, rounds=rounds, warm_calls=warm, calls=calls,
                   workers=workers or "default (one per core)", cores=os.cpu_count(),
                   load_average_end=[round(x, 2) for x in os.getloadavg()])
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.mcp_latency", description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="calls of each tool by the single client")
    parser.add_argument("--concurrent", type=int, default=16, help="clients at once in the second run")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds; each figure is their median")
    parser.add_argument("--warm", type=int, default=10, help="untimed calls of each tool per client first")
    parser.add_argument("--workers", type=int, default=None, help="the server's --workers (default: its own)")
    parser.add_argument("--json", dest="json_out", default=None)
    args = parser.parse_args(argv)
    os.environ.setdefault("FACTLEDGER_EMBEDDER", "off")
    results = measure(args.calls, args.concurrent, args.rounds, args.warm, args.workers)
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
