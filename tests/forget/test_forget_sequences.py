"""Forget = never said, for any sequence of forgets.

A random multi-session history (several keys of every cardinality, users, agents and documents,
negations, disputes, reviewers' resolutions, held candidates a reviewer accepts, quotes that name
other values) is fed to a ledger; then 1-4 forgets of random scopes (session, predicate,
sensitivity, fact, now and then the whole user).  After each forget the ledger must hold what a
fresh ledger fed only the surviving statements holds (their quotes masked where a fact-wide
forget took a value they name): the same open facts, the same valid-time history (every fact's
latest interval: state, valid_from, valid_to), never two current values on a `one` key at any
as-of, and `verify` / `replay --check` pass.

Histories are made to hold derived records often: a value said on two days and then, learnt late,
a negation of it or another value said between them (a split), and a rewording said after a
wording ("peanut" / "peanuts", "São Paulo" / "Sao Paulo", a held "São Paulo" a reviewer accepts).
Each receipt must count, and file as forgotten whole, only the sessions its scope named.  A
second property runs the same with meaning on (the semantic extra), where rewordings are counted
towards the fact (`already_counted`, or a reinforcement), over the keys that have them.  The
examples are labelled with what they generated (`pytest --hypothesis-show-statistics`).

The default run tries 300 histories (100 with meaning on); `make test-long` runs the `slow`
variants (3,000, and 400 with meaning on).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import orjson
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from factledger.ledger import Ledger, LedgerError
from factledger.ledger.domain.decide import REJECTING_RULES
from factledger.ledger.domain.validate import check
from factledger.ledger.forget.masking import Masker
from factledger.ledger.forget.restate import RESTATING_RULES
from factledger.ledger.forget.scope import session_hash
from factledger.ledger.semantic.embedder import remembering
from tests.conftest import MovableClock, cand

# Rewordings: "São Paulo" is "Sao Paulo" by form (a `one` key), "peanut" is "peanuts" by meaning
# (a `many` key); with meaning on the live ledger counts one towards the other's fact
# (`already_counted` in the same session, a reinforcement from another).
VALUES = {"home_city": ["Pune", "Bengaluru", "Mumbai", "Sao Paulo", "São Paulo"],
          "allergy": ["peanuts", "shellfish", "peanut"],
          "blood_pressure": ["120/80 mmHg", "140/90 mmHg"], "medication_dose": ["25 mg", "50 mg"],
          "diet": ["vegan", "omnivore"],               # an agent's "stated" diet: the validator rejects
          "hometown_zz": ["Pune", "Mumbai", "São Paulo"]}   # unknown: held; ACCEPTED ones become home_city
ACCEPTED = ("Pune", "São Paulo")                       # held values a reviewer accepts as home_city
PREDICATES = sorted(VALUES)
BASIS = {"document": "verified", "agent": "inferred", "user": "stated"}

@st.composite
def histories(draw, ones=("home_city", "medication_dose"), others=tuple(PREDICATES), days=28):
    """1-12 things said or judged, about one to three predicates (so keys see several statements),
    one of them a `one` key (so there are disputes for reviewers to settle), said on `days` days
    in any order (so values and negations arrive late, between two statements: splits)."""
    one = draw(st.sampled_from(ones))                                      # a key that can be disputed
    predicates = sorted({one, *draw(st.lists(st.sampled_from(others), max_size=2))})
    named = sorted({v for p in predicates for v in VALUES[p]})
    out = []
    for _ in range(draw(st.integers(1, 12))):
        if draw(st.integers(0, 3)) == 0:
            out.append(("resolve", draw(st.integers(0, 5)), draw(st.booleans())))
        else:
            out.append(("say", draw(st.sampled_from(predicates)), draw(st.integers(0, 4)),
                        draw(st.integers(0, 3)), draw(st.integers(1, days)),
                        draw(st.sampled_from(["user", "user", "user", "document", "agent", "agent"])),
                        draw(st.sampled_from([False, False, False, True])),
                        draw(st.sampled_from([None, None, None, *named]))))   # a value the quote names
    if draw(st.integers(0, 2)) == 0:
        out.insert(draw(st.integers(0, len(out))), ("split", draw(st.sampled_from(predicates)),
                                                    draw(st.integers(0, 4)), draw(st.integers(0, 4)),
                                                    draw(st.integers(1, days)), draw(st.booleans())))
    if draw(st.integers(0, 2)) == 0:
        out.insert(draw(st.integers(0, len(out))), ("reword", draw(st.sampled_from(REWORDINGS)),
                                                    draw(st.integers(0, 3)), draw(st.integers(0, 3)),
                                                    draw(st.integers(1, days)), draw(st.integers(1, days))))
    return [said for entry in out for said in _reworded(_split(entry))]


# (predicate, value index) pairs that say one value in other words ("peanuts", "peanut"; "Sao
# Paulo", "São Paulo"; a held "São Paulo" a reviewer accepts as home_city)
REWORDINGS = [(("allergy", 0), ("allergy", 2)), (("home_city", 3), ("home_city", 4)),
              (("home_city", 3), ("hometown_zz", 2)), (("hometown_zz", 2), ("home_city", 3))]


def _reworded(entries: list[tuple]) -> list[tuple]:
    """A rewording made likely: one wording, then the other (same session or another)."""
    out = []
    for entry in entries:
        if entry[0] != "reword":
            out.append(entry)
            continue
        _, ((p1, v1), (p2, v2)), s1, s2, d1, d2 = entry
        out += [("say", p1, v1, s1, d1, "user", False, None), ("say", p2, v2, s2, d2, "user", False, None)]
    return out


def _split(entry) -> list[tuple]:
    """A split made likely: a value said on two days, then learnt late, said between them, a
    negation of it or another value (each from a session of its own)."""
    if entry[0] != "split":
        return [entry]
    _, predicate, value, other, day, negated = entry
    late = value if negated else (other if other % len(VALUES[predicate]) != value % len(VALUES[predicate])
                                  else other + 1)
    return [("say", predicate, value, 0, day, "user", False, None),
            ("say", predicate, value, 1, day + 2, "user", False, None),
            ("say", predicate, late, 2, day + 1, "user", negated, None)]


partial_scopes = st.lists(st.one_of(
    st.tuples(st.just("session"), st.integers(0, 3)),
    st.tuples(st.just("session"), st.integers(0, 3)),
    st.tuples(st.just("fact"), st.integers(0, 20)),
    st.tuples(st.just("fact"), st.integers(0, 20)),
    st.tuples(st.just("predicate"), st.sampled_from(["home_city", "allergy", "blood_pressure",
                                                     "medication_dose", "diet"])),
    st.tuples(st.just("sensitivity"), st.sampled_from(["personal", "health", "normal"])),
), min_size=1, max_size=4)
# now and then the whole user, last (after it every request is a no-op)
scopes = st.tuples(partial_scopes, st.sampled_from([False] * 9 + [True])).map(
    lambda t: t[0][:3] + [("user", 0)] if t[1] else t[0])


@dataclass
class Item:
    """One thing said (a candidate) or judged (a reviewer's resolution of item `target`'s fact)."""

    index: int
    candidate: object = None
    predicate: str = ""                  # as the registry names it ("" for a held candidate never accepted)
    target: int | None = None
    accept: bool = False
    alive: bool = True
    decided: bool = False                # a statement the decision table saw (not the validator's)


def _candidate(i, item):
    _, predicate, value, session, day, author, negated, mention = item
    options = VALUES[predicate]
    value = options[value % len(options)]
    basis = BASIS[author]
    if predicate == "diet" and author == "agent":
        basis = "stated"                                  # preference_not_user_authored
    said = "no longer" if negated else "I said"           # a negation's quote negates (observe checks)
    quote = f"{said} {value}" if mention is None else f"{value}, not {mention}"
    return cand(predicate=predicate, value=value, session=f"s{session}", event=f"e{i}", quote=quote,
                said_at=f"2026-09-{day:02d}T10:00:00Z", author=author, basis=basis,
                negated=negated and predicate != "blood_pressure")


def _say(ledger, c):
    """Observe; a held "Pune" or "São Paulo" is accepted by a reviewer as home_city straight away."""
    out = ledger.observe(c)
    if out.decision == "hold" and c.value in ACCEPTED:
        hold = ledger.held("app", "u1")[-1]["hold_id"]
        ledger.review_accept(hold, "home_city", confirm_sensitivity="personal")


def observers(ledger) -> dict[str, str]:
    """Each open fact's observing statement (the evidence of its live `FactObserved`): what a
    reviewer's judgement of the fact stands on.  Not `facts_current.evidence_event`, which a value
    learnt late moves to the earlier statement (`backfill`, rule `earlier_same_value`) while the
    judgement stays with the fact."""
    return dict(ledger._conn.execute(
        "SELECT f.fact_id, (SELECT json_extract(e.body, '$.evidence_event') FROM events e"
        " WHERE e.type = 'FactObserved' AND e.body IS NOT NULL AND json_extract(e.body, '$.fact_id') = f.fact_id"
        " ORDER BY e.seq DESC LIMIT 1) FROM facts_current f WHERE f.app = 'app' AND f.user = 'u1'"))


def _resolve(ledger, item: Item) -> bool:
    """Resolve the open fact item `target` observed, if it is open and in dispute here."""
    row = next((fact for fact, observed in observers(ledger).items() if observed == f"e{item.target}"), None)
    if row is None:
        return False
    try:
        ledger.resolve(row, item.accept, "dr-k", "checked")
    except LedgerError:
        return False
    return True


def feed(ledger, clock, history) -> list[Item]:
    items: list[Item] = []
    for i, entry in enumerate(history):
        if entry[0] == "say":
            c = _candidate(i, entry)
            spec = ledger.registry.resolve(c.predicate)
            name = spec.name if spec else ("home_city" if c.value in ACCEPTED else "")
            _say(ledger, c)
            decided = check(c, ledger.registry).action == "apply" or name == "home_city"
            items.append(Item(i, c, name, decided=decided))
        else:                                     # a reviewer looks at a key in dispute
            observed = observers(ledger)
            open_ = [observed[fact] for (fact,) in ledger._conn.execute(
                "SELECT fact_id FROM facts_current f WHERE app = 'app' AND user = 'u1' AND EXISTS"
                " (SELECT 1 FROM facts_current d WHERE d.app = f.app AND d.user = f.user AND"
                " d.subject = f.subject AND d.predicate = f.predicate AND d.status = 'disputed')"
                " ORDER BY rowid")]
            if open_:
                target = int(open_[entry[1] % len(open_)][1:])
                item = Item(i, target=target, accept=entry[2])
                if _resolve(ledger, item):
                    items.append(item)
        clock.tick()
    return items


def fresh_state(items: list[Item], clock_start: str):
    """A ledger that only ever heard the living items."""
    clock = MovableClock(clock_start)
    with Ledger(":memory:", clock=clock) as fresh:
        for item in items:
            if item.alive:
                if item.candidate is not None:
                    _say(fresh, item.candidate)
                else:
                    _resolve(fresh, item)
            clock.tick()
        return state(fresh)


def said(sessions: str) -> tuple:
    """A fact's statements as (session, said_at), without the seqs that recorded them (which
    differ between a ledger that forgot and one that never heard)."""
    return tuple(sorted((e, "") if isinstance(e, str) else (e[0], e[1]) for e in orjson.loads(sessions)))


def state(ledger) -> dict:
    conn = ledger._conn
    evidence = dict(conn.execute("SELECT fact_id, evidence_event FROM fact_history"
                                 " WHERE app = 'app' AND user = 'u1'"))
    fields = ("subject, predicate, value, basis, round(confidence, 6), reinforcements, said_at, session,"
              " evidence_event, quote, author, sessions, confirmed_at, confirmed_by, effective_date,"
              " valid_to, disputes")

    def row(r):
        *rest, sessions, confirmed_at, confirmed_by, effective_date, valid_to, disputes = r
        return (*rest, said(sessions), confirmed_at, confirmed_by,
                effective_date, valid_to, tuple(sorted(evidence[d] for d in orjson.loads(disputes))))

    open_ = sorted(row(r[1:]) + (r[0],) for r in conn.execute(
        f"SELECT status, {fields} FROM facts_current WHERE app = 'app' AND user = 'u1'"))
    valid = sorted(row(r[2:]) + (r[0], r[1]) for r in conn.execute(
        f"SELECT state, valid_from, {fields} FROM fact_history WHERE app = 'app' AND user = 'u1'"
        " AND recorded_to IS NULL"))
    return {"open": open_, "valid": valid}


def assert_one_current_at_every_as_of(ledger) -> None:
    conn = ledger._conn
    times = {t for (t,) in conn.execute("SELECT recorded_from FROM fact_history UNION"
                                        " SELECT recorded_to FROM fact_history") if t}
    for t in sorted(times):
        doubled = conn.execute(
            "SELECT subject, predicate, group_concat(value) FROM fact_history WHERE cardinality = 'one'"
            " AND state = 'current' AND recorded_from <= ? AND (recorded_to IS NULL OR recorded_to > ?)"
            " GROUP BY app, user, subject, predicate HAVING count(*) > 1", (t, t)).fetchall()
        assert doubled == [], f"two current values at as-of {t}: {doubled}"


def forgotten_by(ledger, scope, items: list[Item]) -> tuple[dict, set[int]]:
    """The forget's arguments and the items it takes (for a fact: as its plan says)."""
    kind, arg = scope
    alive = [it for it in items if it.alive and it.candidate is not None]
    if kind == "session":
        return {"session": f"s{arg}"}, {it.index for it in alive if it.candidate.session == f"s{arg}"}
    if kind == "predicate":
        return {"predicate": arg}, {it.index for it in alive if it.predicate == arg}
    if kind == "sensitivity":
        registry = ledger.registry
        return {"sensitivity": arg}, {it.index for it in alive if it.predicate
                                      and registry.resolve(it.predicate).sensitivity == arg}
    if kind == "user":
        return {}, {it.index for it in alive}
    facts = [f for (f,) in ledger._conn.execute(
        "SELECT DISTINCT fact_id FROM fact_history WHERE app = 'app' AND user = 'u1' ORDER BY observed_seq")]
    if not facts:
        return {"fact": None}, set()
    fact = facts[arg % len(facts)]
    plan = ledger.forget("app", "u1", fact=fact, reason="property", dry_run=True)["plan"][0]
    said_in = set()
    for seq in plan["target_seqs"]:            # the statements it takes (a closed hold or a validator's
        type_, body = ledger._conn.execute(     # rejection naming the value goes too: not statements)
            "SELECT type, body FROM events WHERE seq = ?", (seq,)).fetchone()
        body = orjson.loads(body)
        if type_ in ("FactObserved", "FactReinforced", "FactRetracted") or (
                type_ == "CandidateRejected" and body["rule"] in REJECTING_RULES):
            said_in.add(int(body.get("evidence_event", (body.get("candidate") or {}).get("evidence_event"))[1:]))
    return {"fact": fact}, {it.index for it in alive if it.index in said_in}


def run(history, forgets) -> None:
    start = "2026-11-01T00:00:00Z"
    clock = MovableClock(start)
    with Ledger(":memory:", clock=clock) as full:
        items = feed(full, clock, history)
        event(f"reviewer resolutions: {sum(it.candidate is None for it in items)}")
        derived(full)
        for scope in forgets:
            arguments, gone = forgotten_by(full, scope, items)
            if arguments.get("fact", "") is None:
                continue
            live = live_sessions(full)
            try:
                receipt = full.forget("app", "u1", reason="property", **arguments)
                event(f"forget {scope[0]}: {'re-decided' if receipt['counts']['restated'] else 'fold only'}")
                assert_receipt_counts_the_named_sessions(full, receipt, scope[0], arguments, live)
            except LedgerError as exc:               # only a session never said is unknown
                assert "no session" in str(exc)
                assert not [it for it in items if it.candidate is not None
                            and it.candidate.session == arguments["session"]]
            else:
                if receipt["noop"] and "session" in arguments:   # a session whose every event went
                    assert not [b for (b,) in full._conn.execute(  # before: already erased
                                "SELECT body FROM events WHERE body IS NOT NULL")
                                if orjson.loads(b).get("session", (orjson.loads(b).get("candidate") or {})
                                                       .get("session")) == arguments["session"]]
                    assert not [it for it in items if it.index in gone and it.decided]
            clock.tick()
            masker = Masker(it.candidate.value for it in items if it.index in gone) \
                if scope[0] in ("predicate", "sensitivity", "fact") else None
            for it in items:
                if it.index in gone:
                    it.alive = False
                elif masker and it.candidate is not None and it.alive:
                    c = it.candidate
                    it.candidate = c.model_copy(update={"quote": masker(c.quote, c.value)})
            for it in items:                          # a reviewer's judgement of a forgotten fact goes too
                if it.candidate is None and not items_by_index(items)[it.target].alive:
                    it.alive = False
            assert state(full) == fresh_state(items, start)
            assert_one_current_at_every_as_of(full)
            assert full.verify()["ok"]
            assert full.replay_differences() == []


def derived(ledger) -> None:
    """Label the example with the derived records its history made (hypothesis' statistics)."""
    rows = ledger._conn.execute(
        "SELECT type, json_extract(body, '$.rule'), json_extract(body, '$.hold_id'),"
        " json_extract(body, '$.early_state') FROM events WHERE body IS NOT NULL").fetchall()

    def label(name: str, n: int) -> None:
        event(f"{name}: {min(n, 2)}{'+' if n > 2 else ''}")
    label("splits by a late value", sum(t == "FactSplit" and e == "superseded" for t, _r, _h, e in rows))
    label("splits by a late negation", sum(t == "FactSplit" and e == "retracted" for t, _r, _h, e in rows))
    label("rewordings counted", sum(str(r).startswith(RESTATING_RULES) for _t, r, _h, _e in rows))
    label("holds accepted", sum(h is not None and t not in ("CandidateHeld", "CandidateRejected")
                                for t, _r, h, _e in rows))


def live_sessions(ledger) -> set[str]:
    """The sessions the partition's surviving events name."""
    found = set()
    for (b,) in ledger._conn.execute("SELECT body FROM events WHERE app = 'app' AND user = 'u1'"
                                     " AND body IS NOT NULL"):
        body = orjson.loads(b)
        session = body.get("session", (body.get("candidate") or {}).get("session"))
        if isinstance(session, str):
            found.add(session)
    return found


def assert_receipt_counts_the_named_sessions(ledger, receipt, kind, arguments, live: set[str]) -> None:
    """A receipt files as forgotten whole only the sessions its scope named (a session scope's
    own, a user's every session) and counts them; every other session keeps its events and can
    still be said to (`is_forgotten_session` false)."""
    if kind == "user":
        named = live
    elif kind == "session":
        named = {arguments["session"]} & live
    else:
        named = set()
    assert receipt["counts"]["sessions"] == len(named), (kind, receipt["counts"], live)
    if not receipt["noop"]:
        (body,) = ledger._conn.execute("SELECT body FROM events WHERE seq = ?",
                                       (receipt["redaction_seq"],)).fetchone()
        assert orjson.loads(body)["session_hashes"] == sorted(session_hash("app", "u1", x) for x in named)
    event(f"receipt sessions: {len(named)}")
    if kind == "user":
        return
    for other in live - named:
        assert not ledger.erased.is_forgotten_session("app", "u1", other)
    if kind == "session":
        assert live - named <= live_sessions(ledger)        # every other session keeps its say


def items_by_index(items):
    return {it.index: it for it in items}


H, A, D = "home_city", "allergy", "medication_dose"


# The default run searches the same 300 examples every time, so `make test` answers the same on
# every machine; the slow variant below searches afresh (`pytest -m slow`).
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(histories(), scopes)
# The issue's reproduction: Pune (user, 09-24), Bengaluru (agent, 09-12), Bengaluru (document,
# 09-16); forget s1, then s0: Bengaluru, verified, from s2.
@example([("say", H, 0, 0, 24, "user", False, None), ("say", H, 1, 1, 12, "agent", False, None),
          ("say", H, 1, 2, 16, "document", False, None)], [("session", 1), ("session", 0)])
# A merged-back duplicate: Pune, Bengaluru, Pune again; forget the Bengaluru session.
@example([("say", H, 0, 0, 1, "user", False, None), ("say", H, 1, 1, 2, "user", False, None),
          ("say", H, 0, 2, 3, "user", False, None)], [("session", 1), ("session", 0)])
# A reviewer settles a dispute; its loser's session is forgotten, then the winner's fact.
@example([("say", D, 0, 0, 3, "document", False, None), ("say", D, 1, 1, 5, "user", False, None),
          ("resolve", 1, True), ("say", D, 1, 2, 7, "user", False, None)],
         [("session", 0), ("fact", 0), ("session", 2)])
# One quote names another key's value; that value's predicate is forgotten.
@example([("say", A, 0, 0, 3, "user", False, "Pune"),
          ("say", H, 0, 1, 4, "user", False, None), ("say", A, 0, 2, 5, "user", False, None)],
         [("predicate", "home_city"), ("session", 0)])
# A hold, or a validator's rejection, naming a forgotten value goes with the fact; its session,
# then empty, is already erased (a no-op).
@example([("say", H, 2, 0, 1, "user", False, None), ("say", "hometown_zz", 1, 1, 1, "user", False, None)],
         [("fact", 0), ("session", 1)])
@example([("say", "diet", 0, 0, 1, "user", False, None), ("say", "diet", 0, 1, 1, "agent", False, None)],
         [("fact", 0), ("session", 1)])
# A reviewer's judgement whose dispute a first forget makes vanish, and a second brings back.
@example([("say", H, 0, 0, 1, "user", False, None), ("say", H, 0, 1, 2, "user", False, None),
          ("say", H, 1, 2, 1, "user", False, None), ("say", H, 0, 2, 1, "agent", False, None),
          ("resolve", 0, False)], [("session", 0), ("session", 1)])
# A value said again earlier (backfill moves the fact's first statement to it), a weaker value
# disputing it, a reviewer's judgement of the dispute, then the session of that earlier statement
# forgotten: the judgement stays with the fact, which its first observation still holds.
@example([("say", H, 1, 0, 2, "user", False, None), ("say", H, 1, 1, 1, "user", False, None),
          ("say", H, 0, 0, 1, "agent", False, None), ("resolve", 0, False)], [("session", 1)])
# A validator's rejection whose quote names a value a fact forget takes is kept, masked: a later
# forget of its own predicate's class must still mask its value where another quote names it.
@example([("say", A, 0, 0, 1, "user", False, None), ("say", H, 0, 0, 1, "user", False, "vegan"),
          ("say", "diet", 0, 0, 1, "agent", False, "peanuts")], [("fact", 0), ("sensitivity", "normal")])
# "Not Pune" (day 2) heard before "Pune" (day 1), which it ends there; forgetting the negation's
# session must open Pune again (a negation that retracted nothing still cuts its key).
@example([("say", H, 0, 0, 2, "user", True, None), ("say", H, 0, 1, 1, "user", False, None)],
         [("session", 0)])
# The same on a `many` key, and a negation said between two statements heard after both.
@example([("say", A, 0, 0, 3, "user", True, None), ("say", A, 0, 1, 1, "user", False, None),
          ("say", A, 0, 2, 5, "user", False, None), ("say", A, 0, 3, 4, "user", True, None)],
         [("session", 3), ("session", 0)])
# "Not Pune" heard before the Pune it ends: forgetting that fact takes the negation too (in said
# order it was the fact's retraction), then a forget of the negation's session has nothing left.
@example([("say", H, 0, 0, 3, "user", True, None), ("say", H, 0, 1, 1, "user", False, None),
          ("say", H, 1, 2, 5, "user", False, None)], [("fact", 0), ("session", 0)])
def test_any_sequence_of_forgets_equals_never_having_heard(history, forgets):
    run(history, forgets)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), scopes)
def test_any_sequence_of_forgets_equals_never_having_heard_long(history, forgets):
    run(history, forgets)


# With meaning on (the semantic extra), over the keys where rewordings are counted: "peanut" for
# "peanuts" by meaning, "São Paulo" for "Sao Paulo" by form, a held "São Paulo" a reviewer accepts.
# Encoding is the cost, so the run keeps one memo of sentences across its examples (a vector is
# the same single-sentence run whenever it is asked: `remembering()`), and fewer examples.
REWORDED = histories(ones=("home_city",), others=("allergy", "hometown_zz"), days=6)


@pytest.fixture
def sentences():
    """One memo of encoded sentences for a whole run of examples (see above)."""
    with remembering():
        yield


MEANING_CHECKS = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]   # set once, for every example


@settings(max_examples=100, deadline=None, suppress_health_check=MEANING_CHECKS, derandomize=True)
@given(REWORDED, scopes)
# A rewording counted in the session of the fact (`already_counted`); the fact forgotten.
@example([("say", A, 0, 0, 1, "user", False, None), ("say", A, 2, 0, 2, "user", False, None)], [("fact", 0)])
# A rewording by form from another session, then the fact forgotten, then its session.
@example([("say", H, 3, 0, 1, "user", False, None), ("say", H, 4, 1, 2, "user", False, None)],
         [("fact", 0), ("session", 1)])
# A held rewording a reviewer accepts, counted towards the fact; the fact's session forgotten.
@example([("say", H, 3, 0, 1, "user", False, None), ("say", "hometown_zz", 2, 0, 2, "user", False, None),
          ("say", H, 3, 1, 3, "user", True, None)], [("session", 0), ("fact", 0)])
def test_any_sequence_of_forgets_equals_never_having_heard_with_meaning(meaning, sentences, history, forgets):
    run(history, forgets)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=MEANING_CHECKS)
@given(REWORDED, scopes)
def test_any_sequence_of_forgets_equals_never_having_heard_with_meaning_long(meaning, sentences, history, forgets):
    run(history, forgets)


def test_the_issue_reproduction(tmp_path):
    """s0 Pune (user, 09-24), s1 Bengaluru (agent, 09-12), s2 Bengaluru (verified document,
    09-16); forget s1, then s0: Bengaluru, verified, from s2, as a ledger that heard only s2."""
    clock = MovableClock()
    with Ledger(tmp_path / "l.db", clock=clock, create=True) as ledger:
        for value, session, day, author, basis in (("Pune", "s0", 24, "user", "stated"),
                                                   ("Bengaluru", "s1", 12, "agent", "inferred"),
                                                   ("Bengaluru", "s2", 16, "document", "verified")):
            ledger.observe(cand(predicate="home_city", value=value, session=session, event=f"{session}-e",
                                said_at=f"2026-09-{day}T10:00:00Z", author=author, basis=basis))
            clock.tick()
        ledger.forget("app", "u1", session="s1", reason="r")
        clock.tick()
        ledger.forget("app", "u1", session="s0", reason="r")
        facts = ledger.facts("app", "u1", include_sensitive=True)
        assert [(f["value"], f["status"], f["basis"], f["session"]) for f in facts] == [
            ("Bengaluru", "current", "verified", "s2")]
        assert ledger.verify()["ok"] and ledger.replay_differences() == []


def test_the_item_model_is_what_the_ledger_validates():
    """The property's model of which predicate an item belongs to agrees with the validator."""
    with Ledger(":memory:") as ledger:
        c = _candidate(0, ("say", "diet", 0, 0, 1, "agent", False, None))
        assert check(c, ledger.registry).action == "reject"
        held = _candidate(1, ("say", "hometown_zz", 0, 0, 1, "user", False, None))
        assert check(held, ledger.registry).action == "hold"
        assert replace(Item(0), alive=False).alive is False
