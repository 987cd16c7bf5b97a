"""The reading pages: partitions, a user's facts, a fact, a key's timeline."""

from __future__ import annotations

from datasette.utils.asgi import Response

from factledger.ledger.vocabulary.clock import normalise_time
from factledger.ledger.vocabulary.ids import normalise_id
from factledger.web import reading
from factledger.web.access import PREFIX, Context, page, partition_of, served
from factledger.web.timeline import STYLE, transaction_time_svg, valid_time_svg


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


@page()
async def user_page(ctx: Context):
    data = _user_data(ctx)
    # The pickers show what was asked, in their own formats (datetime-local has no zone: UTC).
    response = await ctx.render("factledger_user.html", **data, as_of_input=(data["as_of"] or "")[:19],
                                valid_at_input=(data["valid_at"] or "")[:10])
    return served(ctx, "page", partition_of(data["facts"], data["app"], data["user"]), response)


@page()
async def user_json(ctx: Context):
    data = _user_data(ctx)
    data["withheld_count"] = sum(data["withheld"].values())
    return served(ctx, "page", partition_of(data["facts"], data["app"], data["user"]), Response.json(data))


@page()
async def fact_page(ctx: Context):
    fact_id = normalise_id(ctx.request.args.get("id", ""), "fact id")
    with ctx.config.ledger() as ledger:
        found = reading.fact_page(ledger, ctx.actor, fact_id)
    fact = found["fact"]
    return served(ctx, "page", partition_of([fact], fact["app"], fact["user"]),
                  await ctx.render("factledger_fact.html", **found))


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
    response = await ctx.render(
        "factledger_timeline.html", app=app, user=user, subject=subject, predicate=predicate,
        rows=rows, withheld=withheld, marks=marks, svg_style=STYLE, valid_svg=valid_time_svg(rows, marks, now),
        transaction_svg=transaction_time_svg(rows, marks, now))
    return served(ctx, "timeline", partition_of(rows, app, user), response)


@page(act=True)
async def served_page(ctx: Context):
    """The partition's serve records for a reviewer: when, to whom, by which surface and under
    which clearance, the facts by id and key, the withheld counts.  No value is on the page (so
    viewing it is no serve); a fact above the reviewer's clearance shows its class, not its key."""
    app, user = _partition(ctx)
    with ctx.config.ledger() as ledger:
        rows = ledger.served(app, user)
        classes = ledger.serves.served_fact_classes(app, [f for row in rows for f in row["fact_ids"]])
    masked = 0
    for row in rows:
        row["served"] = []
        for fact_id in row["fact_ids"]:
            sensitivity, subject, predicate = classes.get(fact_id, (None, None, None))
            shown = sensitivity is not None and ctx.actor.cleared_for(sensitivity)
            masked += sensitivity is not None and not shown
            row["served"].append({"fact_id": fact_id if shown or sensitivity is None else None,
                                  "sensitivity": sensitivity or "erased",
                                  "key": f"{subject} / {predicate}" if shown else None})
    return await ctx.render("factledger_served.html", app=app, user=user, rows=rows, masked=masked)


ROUTES = [
    (rf"^{PREFIX}/$", home),
    (rf"^{PREFIX}/user$", user_page),
    (rf"^{PREFIX}/user\.json$", user_json),
    (rf"^{PREFIX}/fact$", fact_page),
    (rf"^{PREFIX}/timeline$", timeline_page),
    (rf"^{PREFIX}/served$", served_page),
]
