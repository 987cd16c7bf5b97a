"""Who may sign in to the web view, with which clearance and role.

Actors come from a TOML file or from the same text in an environment variable (a secret a
deployment injects), never from Datasette's metadata, which Datasette publishes at
`/-/metadata.json`.  Passwords are stored as PBKDF2-SHA256 hashes in the format
datasette-auth-passwords uses, so an existing file of hashes can be reused:

    [actors.dr-rao]
    password = "pbkdf2_sha256$480000$<salt>$<base64 hash>"
    clearance = "health"        # normal < personal < health (each includes the ones before)
    role = "reviewer"           # viewer: looks; reviewer: also accepts, rejects, resolves, erases
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import tomllib
from dataclasses import dataclass

from factledger.ledger import LedgerError
from factledger.ledger.domain.recall_options import PUBLIC_CLEARANCE
from factledger.ledger.registry.predicates import SENSITIVITIES
from factledger.ledger.vocabulary.ids import normalise_id

CLEARANCES = SENSITIVITIES                 # ordered: each level sees its own and the ones before
FULL_CLEARANCE = CLEARANCES[-1]
ROLES = ("viewer", "reviewer")
ITERATIONS = 480_000


@dataclass(frozen=True)
class Actor:
    name: str
    clearance: str
    role: str
    password: str = ""          # the stored hash; empty for the anonymous actor of --public
    signed_in: bool = True

    def cleared_for(self, sensitivity: str | None) -> bool:
        """A value of an unknown sensitivity is treated as the most sensitive one."""
        level = sensitivity if sensitivity in CLEARANCES else FULL_CLEARANCE
        return CLEARANCES.index(level) <= CLEARANCES.index(self.clearance)

    @property
    def full_clearance(self) -> bool:
        return self.clearance == FULL_CLEARANCE

    @property
    def may_act(self) -> bool:
        return self.signed_in and self.role == "reviewer"

    def as_dict(self) -> dict:
        return {"name": self.name, "clearance": self.clearance, "role": self.role,
                "signed_in": self.signed_in}


ANONYMOUS = Actor("anonymous", PUBLIC_CLEARANCE, "viewer", signed_in=False)


def hash_password(password: str, salt: str | None = None, iterations: int = ITERATIONS) -> str:
    if not password:
        raise LedgerError("an empty password cannot be hashed")
    salt = salt or secrets.token_hex(8)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt.encode(), iterations)
    return f"pbkdf2_sha256${iterations}${salt}${base64.b64encode(digest).decode()}"


def check_password(password: str, stored: str) -> bool:
    """Constant-time comparison; a malformed stored hash never matches."""
    try:
        algorithm, iterations, salt, _ = stored.split("$", 3)
        if algorithm != "pbkdf2_sha256":
            return False
        expected = hash_password(password, salt, int(iterations))
    except (ValueError, LedgerError):
        return False
    return hmac.compare_digest(expected.encode(), stored.encode())


def parse_actors(text: str, source: str) -> dict[str, Actor]:
    """The actors of a TOML text; any mistake names the source and the actor, and loads nothing."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise LedgerError(f"{source}: not valid TOML ({exc})") from None
    table = data.get("actors")
    if not isinstance(table, dict) or not table:
        raise LedgerError(f"{source}: no [actors.NAME] tables")
    actors = {}
    for raw_name, fields in table.items():
        name = normalise_id(raw_name, "actor name")
        if not isinstance(fields, dict):
            raise LedgerError(f"{source}: actor {name!r} is not a table")
        unknown = set(fields) - {"password", "clearance", "role"}
        if unknown:
            raise LedgerError(f"{source}: actor {name!r} has unknown keys {sorted(unknown)}")
        password, clearance, role = (fields.get("password"), fields.get("clearance", PUBLIC_CLEARANCE),
                                     fields.get("role", "viewer"))
        if not isinstance(password, str) or not password.startswith("pbkdf2_sha256$"):
            raise LedgerError(f"{source}: actor {name!r} needs a password hash "
                              "(make one with `factledger serve --hash-password`)")
        if clearance not in CLEARANCES:
            raise LedgerError(f"{source}: actor {name!r} has clearance {clearance!r} "
                              f"(known: {', '.join(CLEARANCES)})")
        if role not in ROLES:
            raise LedgerError(f"{source}: actor {name!r} has role {role!r} (known: {', '.join(ROLES)})")
        actors[name] = Actor(name, clearance, role, password)
    return actors


def load_actors(path: str | None = None, env_text: str | None = None) -> dict[str, Actor]:
    if path:
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as exc:
            raise LedgerError(f"cannot read the actors file {path}: {exc.strerror}") from None
        return parse_actors(text, path)
    if env_text:
        return parse_actors(env_text, "FACTLEDGER_UI_ACTORS")
    return {}
