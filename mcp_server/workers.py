"""`factledger mcp --http --workers N`: N server processes on one listening socket.

Concurrent calls then use every core instead of sharing one interpreter's lock.

The parent binds the socket, makes the state every worker must share (`SharedState`: forget
confirmation codes, and a counter of committed forgets), then forks the workers; each opens its
own ledgers after the fork and runs uvicorn on the inherited socket (the kernel hands each new
connection to one of them).  A worker that dies is started again; one that fails at start-up
stops the server.  A worker whose parent is gone stops itself.  The workers share no MCP session:
with more than one, the HTTP app is stateless (each request carries its bearer token and is
served by whichever worker accepts it; docs/decisions.md).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import wait
from multiprocessing.managers import SyncManager

from factledger.ledger.errors import LedgerError
from factledger.mcp_server.tools import SharedState

LOG = logging.getLogger("factledger.mcp")
STARTUP_SECONDS = 5.0           # a worker that exits on its own sooner than this failed to start


def default_workers() -> int:
    """One worker per core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:                       # not Linux
        return max(1, os.cpu_count() or 1)


def listening_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto named: asyncio sets TCP_NODELAY only on sockets whose proto is IPPROTO_TCP, and an
    # accepted socket inherits the listener's (proto 0 leaves Nagle on: a 40 ms wait per call)
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise LedgerError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _ignore_interrupts() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _watch_parent(parent: int) -> None:
    """Stop this worker (as SIGTERM does: uvicorn finishes its requests) once its parent is gone."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os.kill(os.getpid(), signal.SIGTERM)


def _worker(serve: Callable[[SharedState, socket.socket], None], shared: SharedState, sock: socket.socket,
            parent: int) -> None:
    _ignore_interrupts()                             # the parent decides when the workers stop
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    try:
        serve(shared, sock)
    except LedgerError as exc:
        print(f"Error: {exc}", file=sys.stderr, flush=True)
        sys.exit(1)


def serve_workers(serve: Callable[[SharedState, socket.socket], None], host: str, port: int, workers: int,
                  announce: Callable[[int], None] = lambda port: None) -> None:
    """Run `serve(shared, sock)` in `workers` forked processes until SIGTERM or SIGINT; `announce`
    is called with the bound port once the socket listens, before the workers start."""
    context = multiprocessing.get_context("fork")
    manager = SyncManager(ctx=context)       # started before the socket is bound: it does not hold it
    manager.start(_ignore_interrupts)        # Ctrl-C reaches the whole group: the parent stops everything
    try:
        sock = listening_socket(host, port)
    except LedgerError:
        manager.shutdown()
        raise
    announce(sock.getsockname()[1])
    lock_dir = tempfile.mkdtemp(prefix="factledger-mcp-")        # owner-only
    lock_path = os.path.join(lock_dir, "writer.lock")
    os.close(os.open(lock_path, os.O_CREAT | os.O_RDWR, 0o600))
    shared = SharedState(manager.Lock(), manager.dict(), manager.dict(), context.Value("q", 0, lock=False),
                         lock_path)
    stopping = threading.Event()
    failed: list[str] = []

    def stop(signum, frame) -> None:
        stopping.set()

    def start() -> tuple[multiprocessing.process.BaseProcess, float]:
        proc = context.Process(target=_worker, args=(serve, shared, sock, os.getpid()), daemon=False)
        proc.start()
        return proc, time.monotonic()

    old = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    running = [start() for _ in range(workers)]
    try:
        while not stopping.is_set():
            wait([p.sentinel for p, _ in running], timeout=0.5)
            for i, (proc, began) in enumerate(running):
                if proc.is_alive() or stopping.is_set():
                    continue
                code = proc.exitcode
                if code is not None and code >= 0 and time.monotonic() - began < STARTUP_SECONDS:
                    failed.append(f"a worker exited with code {code} while starting")
                    stopping.set()
                    break
                LOG.warning("worker %d ended (exit code %s); starting another", i, code)
                running[i] = start()
    finally:
        for proc, _ in running:
            if proc.is_alive():
                proc.terminate()
        for proc, _ in running:
            proc.join(timeout=15)
            if proc.is_alive():
                proc.kill()
                proc.join()
        manager.shutdown()
        sock.close()
        shutil.rmtree(lock_dir, ignore_errors=True)
        for s, handler in old.items():
            signal.signal(s, handler)
    if failed:
        raise LedgerError(f"the MCP server stopped: {failed[0]} (its error is above)")
