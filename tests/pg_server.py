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
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-w",
                  "-o", f"-k {self.root} -c listen_addresses='' -c fsync=off -c max_connections=200",
                  "start")
        return self

    def stop(self) -> None:
        try:
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
