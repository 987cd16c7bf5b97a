"""The Integrity check as a background job: the request that starts it answers at once, the page
polls its progress, and shows the verdict when it is done.

The checks read the whole log (verify, then replay --check): minutes on a large ledger, longer
than a proxy holds a request open.  So a job runs them in a thread of the server on a read-only
ledger of its own, reporting each stage as `Ledger.verify` and `replay_differences` name them
(`ledger/vocabulary/progress.py`).  One job runs at a time: asking again while one runs joins it,
so a page reloaded or a button pressed twice does not start a second read of the log.  The last
few jobs are kept for their pages; nothing of them outlives the server.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict

from factledger.ledger import LedgerError
from factledger.ledger.vocabulary.clock import iso

KEPT = 8                             # finished jobs whose result a page may still ask for


class Job:
    """One run of the checks; a `Progress` for the ledger to report to."""

    def __init__(self, expect_head: str | None):
        self.id = secrets.token_urlsafe(12)
        self.expect_head = expect_head
        self.state = "running"                 # running, done or failed
        self.label, self.done, self.total = "starting", 0, 0
        self.result: dict | None = None
        self.error: str | None = None
        self.started = time.monotonic()

    def stage(self, label: str, total: int) -> None:
        self.label, self.done, self.total = label, 0, total

    def update(self, n: int) -> None:
        self.done += n

    def as_dict(self) -> dict:
        out = {"job": self.id, "state": self.state, "stage": self.label, "done": self.done,
               "total": self.total, "percent": self.percent, "expect_head": self.expect_head,
               "seconds": round(time.monotonic() - self.started, 1)}
        if self.result is not None:
            out["result"] = self.result
        if self.error is not None:
            out["error"] = self.error
        return out

    @property
    def percent(self) -> int:
        if self.state != "running":
            return 100
        return min(100, int(100 * self.done / self.total)) if self.total else 0

    def run(self, config) -> None:
        try:
            with config.ledger() as ledger:
                began = iso(ledger.clock())
                started = time.perf_counter()
                verified = ledger.verify(self.expect_head, log_only=True, progress=self)
                verify_seconds = time.perf_counter() - started
                started = time.perf_counter()
                differences = ledger.replay_differences(progress=self)
                replay_seconds = time.perf_counter() - started
                self.result = {"verify": verified, "differences": differences, "ran_at": began,
                               "verify_seconds": round(verify_seconds, 3),
                               "replay_seconds": round(replay_seconds, 3),
                               "head": "{}:{}".format(*ledger.head())}
            self.state = "done"
        except LedgerError as exc:
            self.error, self.state = str(exc), "failed"
        except Exception as exc:               # a thread's failure must reach the page, not vanish
            self.error, self.state = f"the check stopped: {type(exc).__name__}", "failed"
            raise


class Jobs:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: OrderedDict[str, Job] = OrderedDict()

    def start(self, config, expect_head: str | None) -> Job:
        """A new job, or the one running already (whatever head it pins: the page says which)."""
        with self._lock:
            running = next((j for j in self._jobs.values() if j.state == "running"), None)
            if running is not None:
                return running
            job = Job(expect_head)
            self._jobs[job.id] = job
            finished = [k for k, j in self._jobs.items() if j.state != "running"]
            for key in finished[:max(0, len(finished) - KEPT)]:
                del self._jobs[key]
        threading.Thread(target=job.run, args=(config,), name=f"integrity-{job.id}", daemon=True).start()
        return job

    def get(self, job_id: str) -> Job:
        with self._lock:
            job = self._jobs.get(job_id or "")
        if job is None:
            raise LedgerError("no such integrity check (it finished long ago, or the server restarted): run it again")
        return job
