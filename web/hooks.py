"""The Datasette hooks: routes, who may see Datasette's own pages, and response headers.

Datasette's table, query and SQL pages read the ledger file as it is, raw `events` bodies and
salts included, so they are for signed-in actors with full clearance only; everyone else sees the
ledger through this plugin's pages, which withhold what their clearance does not cover.
"""

from __future__ import annotations

from datasette import hookimpl

from factledger.web import auth_views, erasure_views, pages, review_views
from factledger.web.config import config_of

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


@hookimpl(trylast=True)
def permission_allowed(datasette, actor, action, resource):
    """Datasette's own pages: the ledger database, to signed-in actors with full clearance."""
    config = config_of(datasette)
    if config is None or action not in DATASETTE_ACTIONS:
        return None
    known = config.actors.get(actor.get("id")) if isinstance(actor, dict) else None
    if known is None or not known.full_clearance:
        return False
    if action == "view-instance":
        return True
    database = resource[0] if isinstance(resource, tuple) else resource
    return database == config.database


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

