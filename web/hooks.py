"""The Datasette hooks: routes, who may see Datasette's own pages, and response headers.

Datasette's table, query and SQL pages read the ledger file as it is, raw `events` bodies and
salts included, so they are for signed-in actors with full clearance only; everyone else sees the
ledger through this plugin's pages, which withhold what their clearance does not cover.

Two hooks give that one decision: `permission_allowed` (Datasette 0.65, the pinned release) and
`permission_resources_sql` (Datasette 1.0, from 1.0a20, which removed `permission_allowed`).
Each release calls only the hook it defines; pluggy registers a hookimpl whose name the installed
Datasette has no spec for without complaint, and `optionalhook=True` keeps even
`PluginManager.check_pending()` quiet about it, so both are registered unconditionally.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from datasette import hookimpl

from factledger.web import auth_views, erasure_views, pages, review_views
from factledger.web.config import config_of

try:                                            # Datasette 1.0
    from datasette.permissions import PermissionSQL
except ImportError:                             # Datasette 0.65 never calls the 1.0 hook; this
    @dataclass                                  # stand-in has PermissionSQL's fields so that the
    class PermissionSQL:                        # hook can be run (and tested) on 0.65 as well
        sql: str | None = None
        params: dict[str, Any] | None = None
        source: str | None = None
        restriction_sql: str | None = None

DATASETTE_ACTIONS = ("view-instance", "view-database", "view-database-download", "view-table",
                     "view-query", "execute-sql")
NO_STORE = b"no-store"
OWN_PAGES = (
    b"default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; "
    b"frame-ancestors 'none'; base-uri 'none'")


@hookimpl
def register_routes(datasette):
    if config_of(datasette) is None:
        return []
    return [(r"^/$", pages.root), *auth_views.ROUTES, *pages.ROUTES, *review_views.ROUTES,
            *erasure_views.ROUTES]


def _full_clearance(config, actor) -> bool:
    known = config.signed_in(actor)
    return known is not None and known.full_clearance


@hookimpl(trylast=True, optionalhook=True)
def permission_allowed(datasette, actor, action, resource):
    """Datasette 0.65: its own pages, the ledger database, to signed-in actors with full clearance.

    trylast: Datasette 0.65 takes the last answer that is not None, so this one overrides the
    defaults (and any other plugin) on these actions."""
    config = config_of(datasette)
    if config is None or action not in DATASETTE_ACTIONS:
        return None
    if not _full_clearance(config, actor):
        return False
    if action == "view-instance":
        return True
    database = resource[0] if isinstance(resource, tuple) else resource
    return database == config.database


# Datasette 1.0 decides a check from rows (parent, child, allow, reason) that the plugins'
# `permission_resources_sql` return: the most specific matching row wins (a table or query, then
# a database, then the instance), a deny beats an allow at the same depth, and no row is a deny.
# A deny row cannot outrank another plugin's more specific allow, so the denials are also given
# as `restriction_sql`, an allowlist of (parent, child) that a resource must fall under whatever
# the rows say: nothing, for an actor without full clearance; the ledger database, for one with
# it.  The parameter's name carries the plugin's, since 1.0 binds every plugin's parameters
# into one query.
DENY_SQL = ("SELECT NULL AS parent, NULL AS child, 0 AS allow, "
            "'factledger: Datasette pages need a signed-in actor with full clearance' AS reason")
NOTHING_SQL = "SELECT NULL AS parent, NULL AS child WHERE 0"
ALLOW_INSTANCE_SQL = ("SELECT NULL AS parent, NULL AS child, 1 AS allow, "
                      "'factledger: full clearance' AS reason")
ALLOW_LEDGER_SQL = ("SELECT :factledger_database AS parent, NULL AS child, 1 AS allow, "
                    "'factledger: full clearance, the ledger database' AS reason")
ONLY_LEDGER_SQL = "SELECT :factledger_database AS parent, NULL AS child"


@hookimpl(optionalhook=True)
def permission_resources_sql(datasette, actor, action):
    """Datasette 1.0: the same decisions as `permission_allowed`, as permission SQL."""
    config = config_of(datasette)
    if config is None or action not in DATASETTE_ACTIONS:
        return None
    if not _full_clearance(config, actor):
        return PermissionSQL(sql=DENY_SQL, restriction_sql=NOTHING_SQL)
    if action == "view-instance":
        return PermissionSQL(sql=ALLOW_INSTANCE_SQL)
    return PermissionSQL(sql=ALLOW_LEDGER_SQL, params={"factledger_database": config.database},
                         restriction_sql=ONLY_LEDGER_SQL)


@hookimpl
def asgi_wrapper(datasette):
    """Every response is `Cache-Control: no-store`: no browser or proxy keeps a page that an
    erasure may make wrong; this plugin's pages also load nothing from anywhere (CSP)."""
    def wrap(app):
        async def with_headers(scope, receive, send):
            if scope.get("type") != "http" or config_of(datasette) is None:
                await app(scope, receive, send)
                return
            own = scope.get("path", "").startswith("/-/factledger")

            async def send_no_store(message):
                if message["type"] == "http.response.start":
                    headers = [(k, v) for k, v in message.get("headers", [])
                               if k.lower() not in (b"cache-control", b"expires", b"pragma")]
                    headers += [(b"cache-control", NO_STORE), (b"x-content-type-options", b"nosniff"),
                                (b"referrer-policy", b"no-referrer"), (b"x-frame-options", b"DENY")]
                    if own:
                        headers.append((b"content-security-policy", OWN_PAGES))
                    message = dict(message, headers=headers)
                await send(message)

            await app(scope, receive, send_no_store)
        return with_headers
    return wrap

