"""No acknowledged serve is lost to a crash: a process recalls in a burst, printing each serve's
seq once the text is in its hands; SIGKILL mid-burst; every seq it printed is a serve record in
the file, the chain verifies, and the serves projection agrees with the log."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

from factledger.ledger.service import Ledger
from tests.conftest import cand

BURST = textwrap.dedent("""
    import sys
    from factledger.ledger.service import Ledger
    with Ledger(sys.argv[1]) as ledger:
        for i in range(100000):
            result = ledger.recall("app", "u1", "diet", served_to=f"bot-{i % 3}")
            print(result.served_seq, flush=True)
""")


def test_sigkill_during_a_burst_of_recalls_loses_no_acknowledged_serve(tmp_path, clock):
    db = tmp_path / "l.db"
    with Ledger(db, clock=clock, create=True) as ledger:
        ledger.observe(cand(value="vegetarian"))
    proc = subprocess.Popen([sys.executable, "-c", BURST, str(db)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ})
    acked = []
    for line in proc.stdout:
        acked.append(int(line))
        if len(acked) == 40:
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait()
    proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    with Ledger(db) as ledger:
        recorded = {r["seq"] for r in ledger.served("app", "u1")}
        assert set(acked) <= recorded
        result = ledger.verify()
        assert result["ok"], result.get("problem")
