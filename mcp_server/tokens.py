"""The HTTP transport's token file: one entry per bearer token, holding its hash, never the token.

`factledger mcp --new-token` makes a token, prints it once and appends its entry; the server
finds a caller's entry by hashing what the caller presents (SHA-256 of a 256-bit random token: a
stolen file gives no token back) and reads the file again when it changes, so a new or removed
token counts without a restart.  Each entry is a `Scope`: app, users, clearance, role.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import threading
import tomllib
from dataclasses import dataclass

from factledger.ledger.errors import LedgerError
from factledger.mcp_server.scope import ANY_USER, Scope

PREFIX = "fl_"
HEADER = ("# factledger MCP tokens (docs/mcp.md): each entry is one bearer token's scope and the\n"
          "# SHA-256 of the token; the tokens themselves are kept nowhere.\n")


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Entry:
    sha256: str
    scope: Scope
    created_at: str

    def as_toml(self) -> str:
        s = self.scope
        q = json.dumps          # a JSON string is a TOML basic string
        return (f"\n[[token]]\nname = {q(s.name)}\nsha256 = {q(self.sha256)}\napp = {q(s.app)}\n"
                f"users = [{', '.join(q(u) for u in s.users)}]\nclearance = {q(','.join(s.clearance))}\n"
                f"role = {q(s.role)}\ncreated_at = {q(self.created_at)}\n")


def read(path: str) -> list[Entry]:
    """The entries of a token file (none when it does not exist); `LedgerError` when it is not one."""
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        return []
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise LedgerError(f"{path} is not a readable token file: {exc}") from None
    entries = []
    for index, raw in enumerate(data.get("token", [])):
        try:
            scope = Scope.build(raw["app"], raw["users"], raw.get("clearance"), raw.get("role", "agent"),
                                raw.get("name") or f"token {index + 1}")
            entries.append(Entry(str(raw["sha256"]), scope, str(raw.get("created_at", ""))))
        except (KeyError, TypeError) as exc:
            raise LedgerError(f"{path}: token entry {index + 1} lacks {exc}") from None
        except LedgerError as exc:
            raise LedgerError(f"{path}: token entry {index + 1}: {exc}") from None
    return entries


def new_token(path: str, app: str, users: list[str], clearance: str | None, role: str,
              created_at: str, name: str | None = None) -> tuple[str, str]:
    """A fresh token and the token file's new text (the old entries and this one's hash)."""
    entries = read(path)
    token = PREFIX + secrets.token_urlsafe(32)
    label = name or f"{role}-{token_hash(token)[:8]}"
    if any(e.scope.name == label for e in entries):
        raise LedgerError(f"{path} already has a token named {label!r}")
    scope = Scope.build(app, users, clearance, role, label)
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        text = HEADER
    return token, text + Entry(token_hash(token), scope, created_at).as_toml()


def users_of(user: str | None, users: str | None) -> list[str]:
    """`--user U` (repeatable, one name) or `--users 'a,b'` / `--users '*'` as the scope's list."""
    if users is not None:
        names = [u.strip() for u in users.split(",") if u.strip()]
        return [ANY_USER] if names == [ANY_USER] else names
    return [user] if user else []


class TokenFile:
    """The entries of a token file by hash, read again whenever the file changes."""

    def __init__(self, path: str):
        self.path = path
        self._lock = threading.Lock()
        self._stamp: tuple | None = None
        self._by_hash: dict[str, Entry] = {}
        self.refresh()

    def refresh(self) -> None:
        try:
            stat = os.stat(self.path)
            stamp = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        except FileNotFoundError:
            stamp = None
        with self._lock:
            if stamp != self._stamp or stamp is None:
                self._by_hash = {e.sha256: e for e in read(self.path)}
                self._stamp = stamp

    def scope_of(self, token: str) -> Scope | None:
        """The scope of a presented token, or None when the file holds no such token."""
        self.refresh()
        entry = self._by_hash.get(token_hash(token))
        return entry.scope if entry is not None else None

    def __len__(self) -> int:
        return len(self._by_hash)
