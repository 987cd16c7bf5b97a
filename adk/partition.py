"""How a google-adk app, user or session id becomes the ledger's partition name.

google-adk accepts any string as an id.  The ledger reserves a few names for itself: the user
`_domain` (facts shared by every user of an app, served to all of them), `_erasures` (erasure
receipts), `_checkpoints` (signed checkpoints), `erased:...` (a forgotten user's pseudonym), the
app `_all` (a retention run across apps), and any name starting with `_` it may add; the service
also files events sent without a session id under a reserved session.  A caller's id must never
reach one of them, or a user named `_domain` would write the whole app's shared memory.  So every
id passes through `normalise_id` (NFC, stripped, bounded: the one spelling the library uses) and
is then escaped: an id that starts with `_`, `~` or `erased:` gains a leading `~`.  The mapping
is one-to-one (only escaped ids start with `~`, and removing one `~` gives the caller's id back),
so no two callers' ids meet and every id google-adk accepts still works; the CLI shows the
escaped form (`~_domain`).
"""

from __future__ import annotations

from factledger.ledger.errors import InvalidId
from factledger.ledger.vocabulary.ids import MAX_ID_LENGTH, normalise_id
from factledger.ledger.vocabulary.words import ERASED_PREFIX

ESCAPE = "~"
RESERVED_PREFIXES = ("_", ESCAPE, ERASED_PREFIX)
UNNAMED_SESSION = "_adk_events"      # events sent without a session id (reserved: no caller reaches it)


def escape(value: str) -> str:
    return ESCAPE + value if value.startswith(RESERVED_PREFIXES) else value


def unescape(value: str) -> str:
    return value[len(ESCAPE):] if value.startswith(ESCAPE) else value


def caller_id(value, what: str) -> str:
    """The partition name for a caller's id; `InvalidId` (a `ValueError`) when it cannot be one."""
    name = escape(normalise_id(value, what))
    if len(name) > MAX_ID_LENGTH:
        raise InvalidId(f"{what} is longer than {MAX_ID_LENGTH - len(ESCAPE)} characters "
                        f"(an id starting with '_', '~' or '{ERASED_PREFIX}' is stored with a leading '~')")
    return name


def session_id(value) -> str:
    """A caller's session id, or the reserved session for events sent without one."""
    return UNNAMED_SESSION if value is None else caller_id(value, "session id")
