"""Who is asking, whether they may, and the one way every page is rendered.

Every route goes through `page`: no actor (and no `--public`) gets the sign-in form on a page
(status 401, and back to the page once signed in) and 403 on an action; an
action needs a signed-in reviewer and a POST (Datasette's CSRF check has already run on every
POST that carries a cookie); a `LedgerError` is shown as the CLI would print it, status 400.
"""

from __future__ import annotations

from dataclasses import dataclass

from datasette.utils.asgi import NotFound, Response

from factledger.ledger import LedgerBusy, LedgerError
from factledger.ledger.domain.recall_options import PUBLIC_CLEARANCE
from factledger.web.actors import Actor
from factledger.web.config import WebConfig, config_of
from factledger.web.reading import Withheld

PREFIX = "/-/factledger"
NORMAL = PUBLIC_CLEARANCE           # the class a page may show without a serve record (the lowest)


def current_actor(datasette, request) -> Actor | None:
    """The signed-in actor as the actors file says now (the cookie names them and their live
    session, nothing more)."""
    config = config_of(datasette)
    if config is None:
        return None
    actor = config.signed_in(request.actor)
    if actor is not None:
        return actor
    return config.anonymous if config.public else None


def back_to(target: str | None) -> str:
    """Where a sign-in returns to: a page of the web view, never another site (`//host`)."""
    target = (target or "").strip()
    if target.startswith(PREFIX + "/") and "//" not in target and "\\" not in target and "\n" not in target:
        return target
    return PREFIX + "/"


@dataclass
class Context:
    datasette: object
    request: object
    config: WebConfig
    actor: Actor

    async def render(self, template: str, status: int = 200, **values) -> Response:
        return await render(self.datasette, self.request, self.actor, template, status, **values)

    def form_value(self, form: dict, name: str, what: str | None = None, required: bool = True) -> str:
        value = (form.get(name) or "").strip()
        if required and not value:
            raise LedgerError(f"{what or name} is required")
        return value


async def render(datasette, request, actor: Actor | None, template: str, status: int = 200,
                 **values) -> Response:
    config = config_of(datasette)
    values.update(me=actor, prefix=PREFIX, database=config.database if config else None,
                  public=bool(config and config.public))
    html = await datasette.render_template(template, values, request=request)
    return Response.html(html, status=status)


def page(*, act: bool = False, methods: tuple[str, ...] = ("GET",)):
    """Resolve the actor, check the role and the method, and turn a LedgerError into a 400 page."""
    def decorate(view):
        async def wrapped(datasette, request):
            config = config_of(datasette)
            if config is None:
                raise NotFound("factledger is not configured on this Datasette")
            actor = current_actor(datasette, request)
            if actor is None and request.method == "GET":
                asked = request.path + (f"?{request.query_string}" if request.query_string else "")
                return await render(datasette, request, None, "factledger_login.html", 401,
                                    message="Sign in to see this page.", next=back_to(asked))
            if actor is None:
                return await render(datasette, request, None, "factledger_denied.html", 403,
                                    message="Sign in to do this.", sign_in=True)
            if request.method not in methods:
                return await render(datasette, request, actor, "factledger_denied.html", 405,
                                    message=f"{request.method} is not allowed here.")
            if act and not actor.may_act:
                return await render(datasette, request, actor, "factledger_denied.html", 403,
                                    message="Only a signed-in reviewer may do this.",
                                    sign_in=not actor.signed_in)
            ctx = Context(datasette, request, config, actor)
            try:
                return await view(ctx)
            except Withheld as exc:
                return await ctx.render("factledger_denied.html", 403, message=f"Withheld: {exc}.")
            except LedgerBusy as exc:                       # busy or locked: nothing was changed
                return await ctx.render("factledger_error.html", 503, message=str(exc))
            except LedgerError as exc:
                return await ctx.render("factledger_error.html", 400, message=str(exc))
        # Not functools.wraps: Datasette reads the view's signature to pass it arguments.
        wrapped.__name__, wrapped.__doc__ = view.__name__, view.__doc__
        return wrapped
    return decorate


def served(ctx: Context, tool: str, shown: dict[tuple[str, str], dict], response: Response) -> Response:
    """A page that displays a value above `normal` is a serve to the signed-in reviewer: one
    record per partition whose values it shows, each naming every fact (and held candidate) of
    that partition on the page and the sha256 of the page, recorded on the ledger itself (never a
    replica) before the page is sent (docs/audit.md).  `shown`: (app, user) -> {"facts": [fact
    dicts with fact_id and sensitivity], "held": [held items with hold_id and sensitivity]}."""
    def above(row: dict) -> bool:
        return row.get("sensitivity") not in (None, NORMAL)

    recorded = [(part, items) for part, items in shown.items()
                if any(above(row) for row in [*items.get("facts", ()), *items.get("held", ())])]
    if recorded:
        body = response.body if isinstance(response.body, str) else response.body.decode("utf-8")
        with ctx.config.ledger(write=True) as ledger:
            for (app, user), items in recorded:
                ledger.serves.record_serve(app, user, caller=ctx.actor.name, surface="web", tool=tool,
                                    clearance=ctx.actor.clearance, facts=list(items.get("facts", ())),
                                    held=[row["hold_id"] for row in items.get("held", ())] or None, text=body)
    return response


def partition_of(rows: list[dict], app: str, user: str) -> dict[tuple[str, str], dict]:
    """The rows of one page of one partition, in the shape `served` takes."""
    return {(app, user): {"facts": rows}}
