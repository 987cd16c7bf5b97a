"""The review queue and its three actions, each a `Ledger` call recorded as events in the
signed-in reviewer's name with their reason: accept or reject a held candidate, settle a dispute.

Nothing is chosen for the reviewer: the accept form starts on no predicate (the suggestions are
shown beside it, not selected), a dispute's verdict on neither side.  A predicate of another
sensitivity than the candidate's is named in the form, and accepting under it is a second step
that asks for that class by name (the ledger refuses it otherwise: `SensitivityUnconfirmed`).
Each confirmation is the ledger's own sentence (`Outcome.summary`): predicate, value, user, seqs.
"""

from __future__ import annotations

from urllib.parse import urlencode

from datasette.utils.asgi import Response

from factledger.ledger import LedgerError
from factledger.ledger.errors import SensitivityUnconfirmed
from factledger.ledger.vocabulary.ids import normalise_id
from factledger.web import reading
from factledger.web.access import PREFIX, Context, page, served
from factledger.web.reading import Withheld

VERDICTS = {"accept": True, "reject": False}


@page()
async def queue(ctx: Context):
    with ctx.config.ledger() as ledger:
        items = reading.review_items(ledger, ctx.actor)
        predicates = [{"name": spec.name, "sensitivity": spec.sensitivity}
                      for spec in sorted(ledger.registry.predicates.values(), key=lambda spec: spec.name)]
        for item in items["held"]:
            item["held_class"] = ledger.lookup.held_class(item["predicate"])
        shown = _shown(ledger, items)
    done = ctx.request.args.get("done")
    response = await ctx.render("factledger_review.html", **items, withheld_total=sum(items["withheld"].values()),
                                predicates=predicates, done=done)
    return served(ctx, "review", shown, response)


def _shown(ledger, items: dict) -> dict[tuple[str, str], dict]:
    """What the queue shows, per partition: the facts of its disputes (the challenger and what it
    stands against) and of its contradictions (both sides, each with its own class), and its held
    candidates; the page is a serve in each partition where one of them is above `normal`."""
    parts: dict[tuple[str, str], dict] = {}

    def fact(app: str, user: str, fact_id: str, sensitivity: str | None) -> None:
        parts.setdefault((app, user), {"facts": [], "held": []})["facts"].append(
            {"fact_id": fact_id, "user": user, "sensitivity": sensitivity})

    for item in items["held"]:
        parts.setdefault((item["app"], item["user"]), {"facts": [], "held": []})["held"].append(item)
    for d in items["disputes"]:
        fact(d["app"], d["user"], d["fact_id"], d.get("sensitivity"))
        for other in d.get("against") or ():
            fact(d["app"], d["user"], other["fact_id"], other.get("sensitivity", d.get("sensitivity")))
    for c in items["contradictions"]:
        for fact_id in (c["fact_id"], c["other_fact_id"]):
            fact(c["app"], c["user"], fact_id, ledger.lookup.fact_sensitivity(fact_id))
    return parts


def _done(message: str) -> Response:
    return Response.redirect(f"{PREFIX}/review?" + urlencode({"done": message}))


@page(act=True, methods=("POST",))
async def accept(ctx: Context):
    form = await ctx.request.post_vars()
    hold_id = normalise_id(form.get("hold_id", ""), "hold id")
    predicate = ctx.form_value(form, "predicate", "a predicate (choose one)")
    reason = ctx.form_value(form, "reason", "a reason")
    confirm = ctx.form_value(form, "confirm_sensitivity", required=False) or None
    with ctx.config.ledger(write=True) as ledger:
        item = reading.held_item(ledger, hold_id)
        target = reading.sensitivity_of(ledger, predicate)
        if not (ctx.actor.cleared_for(item["sensitivity"]) and ctx.actor.cleared_for(target)):
            raise Withheld("this candidate is above your clearance")
        try:
            outcome = ledger.review_accept(hold_id, predicate, by=ctx.actor.name, reason=reason,
                                           confirm_sensitivity=confirm)
        except SensitivityUnconfirmed as question:
            return await ctx.render("factledger_confirm.html", question=question, item=item, hold_id=hold_id,
                                    predicate=predicate, reason=reason)
    return _done(outcome.summary)


@page(act=True, methods=("POST",))
async def reject(ctx: Context):
    form = await ctx.request.post_vars()
    hold_id = normalise_id(form.get("hold_id", ""), "hold id")
    reason = ctx.form_value(form, "reason", "a reason")
    with ctx.config.ledger(write=True) as ledger:
        item = reading.held_item(ledger, hold_id)
        if not ctx.actor.cleared_for(item["sensitivity"]):
            raise Withheld("this candidate is above your clearance")
        outcome = ledger.review_reject(hold_id, reason, by=ctx.actor.name)
    return _done(outcome.summary)


@page(act=True, methods=("POST",))
async def resolve(ctx: Context):
    form = await ctx.request.post_vars()
    fact_id = normalise_id(form.get("fact_id", ""), "fact id")
    verdict = ctx.form_value(form, "verdict", "a verdict (accept or reject the challenger)")
    reason = ctx.form_value(form, "reason", "a reason")
    if verdict not in VERDICTS:
        raise LedgerError("the verdict is accept or reject")
    with ctx.config.ledger(write=True) as ledger:
        reading.fact_page(ledger, ctx.actor, fact_id)           # exists, and within clearance
        outcome = ledger.resolve(fact_id, VERDICTS[verdict], ctx.actor.name, reason)
    return _done(outcome.summary)


ROUTES = [
    (rf"^{PREFIX}/review$", queue),
    (rf"^{PREFIX}/review/accept$", accept),
    (rf"^{PREFIX}/review/reject$", reject),
    (rf"^{PREFIX}/resolve$", resolve),
]
