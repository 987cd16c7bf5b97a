"""Erasure (a dry-run plan, then the commit with a reason and a ticket), the receipts, the
printable record, and the integrity page (verify, optionally against a pinned head, and
replay --check).  Every erasure is `Ledger.forget`, requested in the signed-in reviewer's name."""

from __future__ import annotations

from datasette.utils.asgi import Response

from factledger.ledger import LedgerError
from factledger.ledger.audit.erasure_render import fields
from factledger.ledger.vocabulary.ids import normalise_id
from factledger.web.access import PREFIX, Context, page

KINDS = ("session", "fact", "predicate", "sensitivity", "user")


def _scope(form) -> dict:
    kind = (form.get("kind") or "").strip()
    if kind not in KINDS:
        raise LedgerError(f"the scope is one of {', '.join(KINDS)}")
    scope = {"app": normalise_id(form.get("app", ""), "app"), "user": normalise_id(form.get("user", ""), "user"),
             "kind": kind, "target": ""}
    if kind != "user":
        scope["target"] = normalise_id(form.get("target", ""), f"the {kind} to erase")
    return scope


def _forget(ctx: Context, scope: dict, reason: str, ticket: str, dry_run: bool) -> dict:
    """The ticket is an external reference (a case number), recorded in the receipt."""
    options = {scope["kind"]: scope["target"]} if scope["kind"] != "user" else {}
    # a dry run too plans inside a write transaction (rolled back), and repairs no schema
    with ctx.config.ledger(write=True, leave_schema=dry_run) as ledger:
        return ledger.forget(scope["app"], scope["user"], reason=reason, requested_by=ctx.actor.name,
                             dry_run=dry_run, ticket=ticket, **options)


@page()
async def erase_form(ctx: Context):
    args = ctx.request.args
    return await ctx.render("factledger_erase.html", kinds=KINDS, step="form",
                            scope={"app": args.get("app", ""), "user": args.get("user", ""),
                                   "kind": args.get("kind", "session"), "target": args.get("target", "")})


@page(act=True, methods=("POST",))
async def erase_plan(ctx: Context):
    form = await ctx.request.post_vars()
    scope = _scope(form)
    reason, ticket = ctx.form_value(form, "reason", "a reason"), ctx.form_value(form, "ticket", "a ticket")
    receipt = _forget(ctx, scope, reason, ticket, dry_run=True)
    return await ctx.render("factledger_erase.html", kinds=KINDS, step="plan", scope=scope, reason=reason,
                            ticket=ticket, receipt=receipt)


@page(act=True, methods=("POST",))
async def erase_commit(ctx: Context):
    form = await ctx.request.post_vars()
    scope = _scope(form)
    reason, ticket = ctx.form_value(form, "reason", "a reason"), ctx.form_value(form, "ticket", "a ticket")
    if form.get("confirm") != "yes":
        raise LedgerError("tick the box to confirm the erasure")
    receipt = _forget(ctx, scope, reason, ticket, dry_run=False)
    return await ctx.render("factledger_erase.html", kinds=KINDS, step="done", scope=scope, reason=reason,
                            ticket=ticket, receipt=receipt)


@page()
async def receipts(ctx: Context):
    """Every receipt, newest first; `?ticket=T` keeps those filed under that ticket (as the DPO
    has it: spaces around it and letter case forgiven); `?app=A&user=U` those of one data subject,
    found by hashing the ids as the receipts do (as `factledger erasures --app A --user U`), so a
    receipt still names no one and the subject's ids are never stored by the lookup."""
    args = ctx.request.args
    wanted = (args.get("ticket") or "").strip()
    app, user = (args.get("app") or "").strip(), (args.get("user") or "").strip()
    with ctx.config.ledger() as ledger:
        rows = ledger.erasures(ticket=wanted or None)   # as `factledger erasures --ticket` finds them
        if app and user:
            seqs = ledger.erased.receipt_seqs(app, user, None)
            rows = [r for r in rows if r["redaction_seq"] in seqs]
    return await ctx.render("factledger_erasures.html", receipts=list(reversed(rows)), ticket=wanted,
                            subject_app=app, subject_user=user, subject=bool(app and user))


@page()
async def record(ctx: Context):
    try:
        seq = int(ctx.request.args.get("seq", ""))
    except ValueError:
        raise LedgerError("seq must be the redaction's seq (a number)") from None
    with ctx.config.ledger() as ledger:
        report = ledger.erasure_report(seq)          # the same record as `factledger report erasure`
    return await ctx.render("factledger_record.html", report=report, rows=fields(report))


@page()
async def integrity(ctx: Context):
    """verify and replay --check are reads: `run=1` starts them as a background job (web/jobs.py)
    and answers at once with its page, which reloads itself until the verdict is there."""
    args = ctx.request.args
    job = _job(ctx)
    if job is None:
        return await ctx.render("factledger_integrity.html", job=None, expect_head=args.get("expect_head") or "")
    return await ctx.render("factledger_integrity.html", job=job.as_dict(), expect_head=job.expect_head or "")


@page()
async def integrity_json(ctx: Context):
    """The same as JSON, to poll: `run=1` starts (or joins) a job; `job=ID` says how far it is."""
    job = _job(ctx)
    if job is None:
        raise LedgerError("ask with run=1 to start the check, or job=ID for one running")
    return Response.json(job.as_dict())


def _job(ctx: Context):
    args = ctx.request.args
    if args.get("run"):
        return ctx.config.jobs.start(ctx.config, (args.get("expect_head") or "").strip() or None)
    if args.get("job"):
        return ctx.config.jobs.get(args.get("job"))
    return None


ROUTES = [
    (rf"^{PREFIX}/erase$", erase_form),
    (rf"^{PREFIX}/erase/plan$", erase_plan),
    (rf"^{PREFIX}/erase/commit$", erase_commit),
    (rf"^{PREFIX}/erasures$", receipts),
    (rf"^{PREFIX}/erasures/record$", record),
    (rf"^{PREFIX}/integrity$", integrity),
    (rf"^{PREFIX}/integrity\.json$", integrity_json),
]
