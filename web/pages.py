"""The reading pages: partitions, a user's facts, a fact, a key's timeline."""

from __future__ import annotations

from datasette.utils.asgi import Response

from factledger.ledger.domain.recall_options import PUBLIC_CLEARANCE
from factledger.ledger.vocabulary.clock import normalise_time
from factledger.ledger.vocabulary.ids import normalise_id
from factledger.web import reading
from factledger.web.access import PREFIX, Context, page
from factledger.web.timeline import STYLE, transaction_time_svg, valid_time_svg

NORMAL = PUBLIC_CLEARANCE           # the class a page may show without a serve record


async def root(datasette, request):
    return Response.redirect(PREFIX + "/")


def _partition(ctx: Context) -> tuple[str, str]:
    args = ctx.request.args
    return normalise_id(args.get("app", ""), "app"), normalise_id(args.get("user", ""), "user")


def _time(value: str | None) -> str | None:
    """An as-of / valid-at picker's value (a date, or a datetime-local read as UTC), as the CLI reads it."""
    value = (value or "").strip()
    return normalise_time(value) if value else None


@page()
async def home(ctx: Context):
    args = ctx.request.args
    search = (args.get("q") or "")[:200]
    try:
        wanted_page = int(args.get("page") or 1)
    except ValueError:
        wanted_page = 1
    with ctx.config.ledger() as ledger:
        rows, matched, shown_page = reading.partitions(ledger, search, wanted_page)
        head = ledger.head()
    pages = max(1, -(-matched // reading.PAGE_SIZE))
    return await ctx.render("factledger_home.html", partitions=rows, head=head, q=search, matched=matched,
                            page=shown_page, pages=pages)


def _user_data(ctx: Context) -> dict:
    app, user = _partition(ctx)
    as_of = _time(ctx.request.args.get("as_of"))
    valid_at = _time(ctx.request.args.get("valid_at"))
    with ctx.config.ledger() as ledger:
        facts, withheld = reading.user_facts(ledger, ctx.actor, app, user, as_of, valid_at)
        sessions = reading.user_sessions(ledger, ctx.actor, app, user)   # observed ones too
    return {"app": app, "user": user, "as_of": as_of, "valid_at": valid_at, "facts": facts,
            "withheld": dict(withheld), "sessions": sessions}


def _served(ctx: Context, tool: str, facts: list[dict], response: Response) -> Response:
    """A page that displays a value above `normal` is a serve to the signed-in reviewer: recorded
    on the ledger itself (never a replica) before the page is sent (docs/audit.md)."""
    shown = [f for f in facts if f.get("sensitivity") not in (None, NORMAL)]
    if shown:
        body = response.body if isinstance(response.body, str) else response.body.decode("utf-8")
        with ctx.config.ledger(write=True) as ledger:
            ledger.record_serve(shown[0]["app"], shown[0]["user"], caller=ctx.actor.name, surface="web",
                                tool=tool, clearance=ctx.actor.clearance, facts=facts, text=body)
    return response


@page()
async def user_page(ctx: Context):
    data = _user_data(ctx)
    # The pickers show what was asked, in their own formats (datetime-local has no zone: UTC).
    response = await ctx.render("factledger_user.html", **data, as_of_input=(data["as_of"] or "")[:19],
                                valid_at_input=(data["valid_at"] or "")[:10])
    return _served(ctx, "page", data["facts"], response)


@page()
async def user_json(ctx: Context):
    data = _user_data(ctx)
    data["withheld_count"] = sum(data["withheld"].values())
    return _served(ctx, "page", data["facts"], Response.json(data))


@page()
async def fact_page(ctx: Context):
    fact_id = normalise_id(ctx.request.args.get("id", ""), "fact id")
    with ctx.config.ledger() as ledger:
        found = reading.fact_page(ledger, ctx.actor, fact_id)
    return _served(ctx, "page", [found["fact"]], await ctx.render("factledger_fact.html", **found))


@page()
async def timeline_page(ctx: Context):
    app, user = _partition(ctx)
    args = ctx.request.args
    subject = normalise_id(args.get("subject") or "user", "subject")
    predicate = normalise_id(args.get("predicate", ""), "predicate")
    with ctx.config.ledger() as ledger:
        rows, withheld = reading.key_history(ledger, ctx.actor, app, user, subject, predicate)
        marks = reading.key_erasures(ledger, app, user, {row["fact_id"] for row in rows})
        now = ledger.clock()
    return await ctx.render(
        "factledger_timeline.html", app=app, user=user, subject=subject, predicate=predicate,
        rows=rows, withheld=withheld, marks=marks, svg_style=STYLE, valid_svg=valid_time_svg(rows, marks, now),
        transaction_svg=transaction_time_svg(rows, marks, now))


ROUTES = [
    (rf"^{PREFIX}/$", home),
    (rf"^{PREFIX}/user$", user_page),
    (rf"^{PREFIX}/user\.json$", user_json),
    (rf"^{PREFIX}/fact$", fact_page),
    (rf"^{PREFIX}/timeline$", timeline_page),
]
