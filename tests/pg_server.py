"""A throwaway PostgreSQL server for the tests: `initdb` into a temporary folder, a Unix socket
in it, no TCP; started once per session (`tests/conftest.py: postgres`), stopped at its end.

PostgreSQL refuses to run as root, so as root the server runs as the `postgres` user (Debian's
package creates it) and the folder is given to that user.  Each test then gets a schema of its
own in the one database (`Server.location`), which is all a ledger needs.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path


def find_bindir() -> Path | None:
    """The server's binaries: `pg_config --bindir`, else Debian's /usr/lib/postgresql/*/bin."""
    candidates = []
    if shutil.which("pg_config"):
        try:
            out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, timeout=30)
            candidates.append(out.stdout.strip())
        except (OSError, subprocess.SubprocessError):
            pass
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for folder in candidates:
        if folder and (Path(folder) / "initdb").exists() and (Path(folder) / "pg_ctl").exists():
            return Path(folder)
    return None


class Server:
    def __init__(self, bindir: Path):
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="flpg-"))
        self.data = self.root / "data"
        self.as_root = os.geteuid() == 0
        if self.as_root:
            shutil.chown(self.root, "postgres", "postgres")
        os.chmod(self.root, 0o755)

    def _run(self, *args: str) -> None:
        command = [str(self.bindir / args[0]), *args[1:]]
        if self.as_root:
            command = ["runuser", "-u", "postgres", "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if result.returncode:
            raise RuntimeError(f"{' '.join(command)} failed:\n{result.stdout}\n{result.stderr}")

    def start(self) -> Server:
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8",
                  "--locale=C", "--no-sync")
        self._start_server()
        return self

    def _start_server(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-w",
                  "-o", f"-k {self.root} -c listen_addresses='' -c fsync=off -c max_connections=200",
                  "start")

    def crash(self) -> None:
        """Stop at once, as a crash would (`pg_ctl stop -m immediate`: no checkpoint, no goodbye to
        clients or standbys); the folder stays, for `stop` to remove."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def require_synchronous(self, standby_name: str, commit: str = "on") -> None:
        """Every commit waits for the named standby (`synchronous_standby_names`) to have flushed
        (`on`) or applied (`remote_apply`) it: an acknowledged write is on both servers."""
        self.sql(f"ALTER SYSTEM SET synchronous_standby_names = '{standby_name}'",
                 f"ALTER SYSTEM SET synchronous_commit = '{commit}'", "SELECT pg_reload_conf()")

    def sql(self, *statements: str) -> list:
        """Run statements on the server as postgres (autocommit); the last one's rows."""
        import psycopg

        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            rows = []
            for statement in statements:
                cursor = conn.execute(statement)
                rows = cursor.fetchall() if cursor.description else []
            return rows

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    @property
    def conninfo(self) -> str:
        return f"host={self.root} user=postgres dbname=postgres"

    def location(self, schema: str | None = None) -> str:
        """A ledger URL in this server: a fresh schema unless one is named."""
        schema = schema or f"t_{uuid.uuid4().hex[:16]}"
        return f"postgresql://postgres@/postgres?host={self.root}&schema={schema}"


class Standby(Server):
    """A streaming replica of a running `Server`: `pg_basebackup` of its data folder (WAL streamed
    with it), `standby.signal`, and `primary_conninfo` naming the primary's socket, so the standby
    replays the primary's WAL as it is written and answers read-only queries (hot standby).

    `name` is its `application_name` on the primary: `Server.require_synchronous(name)` makes
    the primary wait for it on every commit (synchronous replication)."""

    def __init__(self, primary: Server, name: str = "standby1"):
        super().__init__(primary.bindir)
        self.primary = primary
        self.name = name

    def start(self) -> Standby:
        self._run("pg_basebackup", "-D", str(self.data), "-h", str(self.primary.root), "-U", "postgres",
                  "-X", "stream", "-c", "fast", "--no-sync")
        with open(self.data / "postgresql.auto.conf", "a") as conf:
            conf.write(f"primary_conninfo = 'host={self.primary.root} user=postgres "
                       f"application_name={self.name}'\nhot_standby = on\n")
        (self.data / "standby.signal").touch()
        if self.as_root:
            shutil.chown(self.data / "standby.signal", "postgres", "postgres")
        self._start_server()
        return self

    def promote(self) -> None:
        """The standby becomes a primary (`pg_ctl promote -w` returns once it accepts writes)."""
        self._run("pg_ctl", "-D", str(self.data), "-w", "promote")

    def catch_up(self, timeout: float = 60.0) -> None:
        """Wait until this standby has replayed all the primary has written so far
        (`pg_last_wal_replay_lsn()` at or past the primary's `pg_current_wal_lsn()`)."""
        import time

        target = self.primary.sql("SELECT pg_current_wal_lsn()::text")[0][0]
        deadline = time.monotonic() + timeout
        while not self.sql(f"SELECT pg_last_wal_replay_lsn() >= '{target}'::pg_lsn")[0][0]:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the standby did not replay up to {target} in {timeout} s")
            time.sleep(0.05)
