"""What an actor may read: the ledger's own queries, with values above their clearance withheld.

Withheld values are counted, never shown (as `recall` does): a page says how many it left out
and of which sensitivity, so a viewer knows the picture is partial without learning its content.
Nothing here is cached; each call reads the ledger it is given.
"""

from __future__ import annotations

from collections import Counter

import orjson

from factledger.ledger import Ledger, LedgerError
from factledger.web.actors import FULL_CLEARANCE, Actor

# Body fields that name another fact, and what that fact is to the one on the page.
RELATIONS = (("by_fact_id", "replaced by"), ("disputes", "disputes"), ("winner_id", "settled for"),
             ("fact_id", "named by"))


class Withheld(LedgerError):
    """The page's subject is above the actor's clearance (shown as 403, not as an error)."""


def sensitivity_of(ledger: Ledger, predicate: str | None) -> str:
    """An unknown predicate (a held candidate's, typically) counts as the most sensitive."""
    spec = ledger.registry.resolve(predicate) if predicate else None
    return spec.sensitivity if spec is not None else FULL_CLEARANCE


def split(actor: Actor, rows: list[dict], sensitivity=lambda row: row["sensitivity"]):
    """(rows the actor may see, Counter of withheld rows by sensitivity)."""
    shown, withheld = [], Counter()
    for row in rows:
        level = sensitivity(row)
        if actor.cleared_for(level):
            shown.append(row)
        else:
            withheld[level] += 1
    return shown, withheld


PAGE_SIZE = 100


def partitions(ledger: Ledger, search: str = "", page: int = 1) -> tuple[list[dict], int, int]:
    """One page of the partitions with open facts, held candidates or ingested sessions, and
    their counts: those whose app or user contains `search` (case forgiven), `PAGE_SIZE` a page.
    Returns (rows, how many matched, the page shown): a ledger of ten thousand users is a page
    a reviewer can read, not a table of megabytes."""
    wanted = search.strip().casefold()
    rows = [r for r in ledger.lookup.partition_summaries()
            if not wanted or wanted in r["app"].casefold() or wanted in r["user"].casefold()]
    pages = max(1, -(-len(rows) // PAGE_SIZE))
    page = min(max(1, page), pages)
    return rows[(page - 1) * PAGE_SIZE:page * PAGE_SIZE], len(rows), page


def user_facts(ledger: Ledger, actor: Actor, app: str, user: str, as_of: str | None = None,
               valid_at: str | None = None) -> tuple[list[dict], Counter]:
    """The facts the actor may see, their text masked of every value above the actor's
    clearance (a quote can state a withheld fact: `ledger.audit.cleartext`), and the count
    withheld by sensitivity."""
    rows = ledger.facts(app, user, as_of=as_of or None, valid_at=valid_at or None, include_sensitive=True)
    shown, withheld = split(actor, rows)
    return ledger.lookup.clearance_mask(app, user, actor.clearance).rows(shown), withheld


def user_sessions(ledger: Ledger, actor: Actor, app: str, user: str) -> list[dict]:
    """Every session the log names for the partition (observed ones too: each can be erased from
    the user page); an ingestion's digest follows the strictest sensitivity it mentions, so one
    that carries a value above the actor's clearance is withheld whole (`digest_withheld`)."""
    mask = ledger.lookup.clearance_mask(app, user, actor.clearance)
    rows = ledger.lookup.user_sessions(app, user)
    for row in rows:
        ingestion = row.get("ingestion")
        if ingestion is None:
            continue
        digest = mask.digest(ingestion.get("digest"))
        ingestion["digest_withheld"] = digest is None and ingestion.get("digest") is not None
        ingestion["digest"] = digest
    return rows


def fact_page(ledger: Ledger, actor: Actor, fact_id: str) -> dict:
    """The fact, every event that touched it, and the other facts those events name."""
    try:
        found = ledger.why(fact_id)
    except LedgerError:
        erased = ledger.erased.fact_erasure(fact_id.strip()) if isinstance(fact_id, str) else None
        if erased is not None:           # the answer `why` gives: when, which receipt, no value
            raise LedgerError(f"fact {fact_id!r} was erased at {erased['erased_at'][:19]}Z by the receipt at seq "
                              f"{erased['receipt_seq']} ({erased['scope_kind']} scope); the ledger keeps no "
                              "value of it") from None
        raise LedgerError(f"no fact {fact_id!r} in this ledger (never recorded, or erased)") from None
    fact = found["fact"]
    if not actor.cleared_for(fact["sensitivity"]):
        raise Withheld(f"this fact is {fact['sensitivity']}: above your clearance ({actor.clearance})")
    related: dict[str, dict] = {}
    for event in found["events"]:
        body = event["body"] or {}
        names = [(body.get(field), label) for field, label in RELATIONS]
        names += [(loser, "closed by the same settlement") for loser in body.get("loser_ids", ())]
        for other, label in names:
            if other and other != fact_id and other not in related:
                related[other] = {"fact_id": other, "relation": f"{label} ({event['type']}, seq {event['seq']})"}
    for item in related.values():
        row = ledger.lookup.fact_interval(item["fact_id"])
        shown = row is not None and actor.cleared_for(row[2])
        item.update(value=row[0] if shown else None, state=row[1] if row else "erased",
                    withheld=row is not None and not shown)
    page = {"fact": fact, "events": found["events"], "related": list(related.values())}
    mask = ledger.lookup.clearance_mask(fact["app"], fact["user"], actor.clearance)
    return mask.row(page, own_value=fact["value"]) if mask else page


def key_history(ledger: Ledger, actor: Actor, app: str, user: str, subject: str,
                predicate: str) -> tuple[list[dict], Counter]:
    """The key's intervals the actor may see, masked, and the facts withheld by sensitivity.

    Decided per fact, not per key: a registry change can give one key's facts different classes
    (a newer value recorded `health` beside older `normal` ones), so every interval of a fact any
    of whose intervals is above the actor's clearance is withheld, and counted.  A key with no
    fact the actor may see is refused whole, as before."""
    spec = ledger.registry.resolve(predicate)
    rows = ledger.history(app, user, subject=subject, predicate=spec.name if spec else predicate)
    if not rows:
        level = sensitivity_of(ledger, predicate)
        if not actor.cleared_for(level):
            raise Withheld(f"{predicate} is {level}: above your clearance ({actor.clearance})")
        return [], Counter()
    above: dict[str, str] = {}
    for row in rows:
        if not actor.cleared_for(row["sensitivity"]):
            above.setdefault(row["fact_id"], row["sensitivity"])
    shown = [row for row in rows if row["fact_id"] not in above]
    if not shown:
        level = next(iter(above.values()))
        raise Withheld(f"{predicate} is {level}: above your clearance ({actor.clearance})")
    return ledger.lookup.clearance_mask(app, user, actor.clearance).rows(shown), Counter(above.values())


def key_erasures(ledger: Ledger, app: str, user: str, fact_ids: set[str]) -> list[dict]:
    """Reinstatements the key's facts owe to an erasure: the marks the timeline draws for one."""
    return ledger.erased.reinstatements(fact_ids)


def review_items(ledger: Ledger, actor: Actor) -> dict:
    """Open held candidates (with the registry predicates suggested for each), open disputes and
    contradicting pairs of open facts the actor may see, and how many they may not."""
    held = ledger.held()
    for item in held:
        item["sensitivity"] = sensitivity_of(ledger, item["predicate"])
    held, held_withheld = split(actor, held)
    disputes = []
    for item in ledger.lookup.disputed_by_key():
        item["disputes"] = orjson.loads(item["disputes"])
        item["against"] = ledger.lookup.key_current(item["app"], item["user"], item["subject"], item["predicate"])
        disputes.append(item)
    disputes, disputes_withheld = split(actor, disputes)
    contradictions, contradictions_withheld = split(actor, _contradictions(ledger, actor))
    return {"held": _masked(ledger, actor, held), "disputes": _masked(ledger, actor, disputes),
            "contradictions": _masked(ledger, actor, contradictions),
            "withheld": held_withheld + disputes_withheld + contradictions_withheld}


def _masked(ledger: Ledger, actor: Actor, rows: list[dict]) -> list[dict]:
    """Each row's text (a quote, a dispute's challengers) masked of the values its partition holds
    above the actor's clearance, as the user page masks its facts: one utterance may state a
    normal and a health fact, and the queue may be public."""
    masks: dict[tuple[str, str], object] = {}
    shown = []
    for row in rows:
        key = (row["app"], row["user"])
        if key not in masks:
            masks[key] = ledger.lookup.clearance_mask(*key, actor.clearance)
        shown.append(masks[key].row(row))
    return shown


def _contradictions(ledger: Ledger, actor: Actor) -> list[dict]:
    """Open pairs of contradicting facts (`Ledger.contradictions`), each with the sensitivity that
    decides whether the actor sees it: the first of the two facts' levels the actor is not
    cleared for, else the first fact's (a pair shows both values, so both must be cleared)."""
    pairs = ledger.contradictions()
    for pair in pairs:
        levels = [level for fact_id in (pair["fact_id"], pair["other_fact_id"])
                  if (level := ledger.lookup.fact_sensitivity(fact_id)) is not None]
        levels = levels or [FULL_CLEARANCE]
        pair["sensitivity"] = next((level for level in levels if not actor.cleared_for(level)), levels[0])
    return pairs


def held_item(ledger: Ledger, hold_id: str) -> dict:
    for item in ledger.held(status=None):
        if item["hold_id"] == hold_id:
            item["sensitivity"] = sensitivity_of(ledger, item["predicate"])
            return item
    raise LedgerError(f"no held candidate {hold_id!r}")
