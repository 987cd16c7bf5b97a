"""What one recall call works out about its in-scope facts: gates, times, scores, by position.

Why this shape: a user with a thousand open facts would otherwise cost a thousand dicts and a
thousand term lists, all alive at once.  Building them was most of a call's CPU, and because they lived
through several young-generation collections they were promoted to the oldest generation, so
Python's cyclic collector ran full collections in the middle of calls (the p99).  Here a fact
stays the tuple SQLite returned (its contents are atomic, so the collector soon stops tracking
it), what is derived sits in flat per-call lists and dicts keyed by position, and each value is
worked out the first time it is asked for, by the one function that works it out.  A search
without `--explain` asks only about the facts that share a term with the query (and the facts
they dispute); `--explain` and `--preload` ask about every fact, through the same functions.
A dict is built only for a fact that is shown (`fact`).  Nothing here outlives the call; what
recall keeps between calls (the scope's rows, its lexical index, its meaning matrix) is kept by
`projections.recallcache` while the ledger's head does not move, and dropped by every forget.
"""

from __future__ import annotations

import heapq
from collections import Counter
from datetime import datetime

import orjson

from factledger.ledger.domain.confidence import (
    DECAY_FLOOR,
    DECAY_PER_PERIOD,
    DECAY_PERIOD_DAYS,
    SERVING_THRESHOLD,
)
from factledger.ledger.domain.recall_options import RecallOptions
from factledger.ledger.domain.textindex import document_terms, terms
from factledger.ledger.recall.lexical import LexicalIndex
from factledger.ledger.registry.predicates import CONFIRM_AFTER_DAYS

# Positions in a thin row (ledger.recall._THIN).
(ID, USER, SUBJECT, PREDICATE, VALUE, SENSITIVITY, CONFIDENCE, CONFIRMED, DISPUTES, BASIS, SAID,
 SESSION, AUTHOR, TERMS, KIND, EFFECTIVE) = range(16)
# `kind`: the caller limited recall to other kinds (not withheld: not asked for).  `retention`:
# past its predicate's (or kind's) retention period, withheld before `retain` deletes it.
OUTCOMES = ("selected", "sensitivity", "kind", "no_match", "retention", "confidence", "age", "limit", "budget")
# Outcomes that withheld a fact the caller's scope held and (for a search) the query matched:
# counted, with their reason, in the block (`render.withheld_line`), never with their values.
WITHHELD = ("sensitivity", "retention", "confidence", "age", "limit", "budget")
# What the record says it knows for itself: the user said it, it was verified, or a document
# says it.  Age never hides such a fact (it lowers its rank and is shown, docs/recall.md "Age");
# the serving threshold judges an inferred fact by its decayed confidence.
DURABLE_BASES = ("stated", "verified")
DOCUMENT_AUTHOR = "document"
_PENDING = object()                     # an outcome not worked out yet
_JOINABLE = (None, "confidence", "age", "no_match", "limit", "budget")   # may join a disputed line
_WITHHELD = (None, None, None)
_NO_MEANING = (0.0, None)
_MARGIN = 1e-3                          # see InScope.best_first


# The share of the recency weight a dated fact (an event) gets: measured on LoCoMo
# (docs/semantic.md, "LoCoMo"): at the full weight a first-session event lost to every later one.
DATED_RECENCY_SHARE = 0.05


class KindRules:
    """What recall asks of the registry per fact beyond its clearance: the retention period (a
    registry predicate's `retention_days`, else its kind's) and the serving threshold of its
    kind (`[kinds.NAME] min_confidence`), each looked up by name."""

    def __init__(self, retention: dict[str, int] | None = None, kind_retention: dict[str, int] | None = None,
                 thresholds: dict[str, float] | None = None, predicates: frozenset[str] = frozenset(),
                 dated: frozenset[str] = frozenset(("event",))):
        self.retention = retention or {}
        self.kind_retention = kind_retention or {}
        self.thresholds = thresholds or {}
        self.predicates = predicates                 # the registry's own names (their rules win)
        self.dated = dated                           # kinds whose facts are dated events

    def recency_share(self, kind: str) -> float:
        """How much of the recency weight a fact of this kind gets: an event is never superseded,
        so its age says when it happened, not that it may be stale; a newer event is no truer than
        an older one.  Its recency only breaks near-ties (`DATED_RECENCY_SHARE`, docs/recall.md)."""
        return DATED_RECENCY_SHARE if kind in self.dated else 1.0

    def expired(self, predicate: str, kind: str, age_days: float) -> bool:
        days = self.retention.get(predicate)
        if days is None and predicate not in self.predicates:
            days = self.kind_retention.get(kind)
        return days is not None and age_days > days

    def threshold(self, kind: str, default: float) -> float:
        return self.thresholds.get(kind, default)


class InScope:
    """The in-scope facts of one call and what has been worked out about each (see the module
    docstring for why nothing here is a per-fact dict)."""

    def __init__(self, rows: list[tuple], now: datetime, options: RecallOptions,
                 suffixes: dict[str, str], cleared: Cleared | None = None,
                 confirm_after: dict[str, int] | None = None, rules: KindRules | None = None):
        self.rows = rows
        self.confirm_after = confirm_after or {}       # predicate -> days (registry)
        self.rules = rules or KindRules()              # retention and thresholds by predicate and kind
        self.now = now
        self.options = options
        self.suffixes = suffixes
        self.clearance = cleared if cleared is not None else Cleared(rows, options.clearance)
        self.outcome: list = list(self.clearance.outcome)
        self.cleared: list[int] = self.clearance.positions          # read only: may be kept
        self._cleared_set = self.clearance.set
        self.hits: list[int] = []                       # positions sharing a term with the query
        self.via: dict[int, str] = {}                   # shown beside the fact it disputes
        self._relevance: dict[int, float] = {}          # hits: relevance before rounding
        self._lexical_scores: dict[int, float] = {}
        self._scored: dict[int, tuple] = {}             # hits: (relevance, recency, score)
        self._by_age: dict[tuple, tuple] = {}           # non-hits: the same, once per distinct age and weight
        self._times: dict = {}
        self._by_id: dict[str, int] | None = None
        # Meaning (the semantic extra): position -> (rescaled meaning, raw cosine).
        self.mode = "lexical"
        self.meaning_weight = 0.0
        self.meaning: dict[int, tuple[float, float]] = {}
        # The relevance floor: a fact counts as tied to a query by meaning only at this rescaled
        # meaning score or above (`ledger.recall.meaning.RELEVANCE_FLOOR`); words always tie.
        self.meaning_floor = 0.0
        # ... and at least this share of the best meaning score among the cleared facts (the
        # floor moves with the query: a weak second cousin of the best match is not a match).
        self.meaning_share = 0.0
        # ... where the best may also be that of facts the call leaves out but a question may be
        # about: the app's shared facts under `domain=False` (`ledger.recall.serve._shared_best`).
        self.meaning_reference = 0.0
        # With meaning: (numpy, positions with a meaning score, the scores, every row's
        # confirmation time in POSIX seconds), to score a scope at once; see `_raw_scores`.
        self.arrays = None
        self._relevance_array = None
        self._weight_array = None                       # per position: recency weight (`weight`)
        # A zero-argument function giving the cleared facts' lexical index, when the caller
        # keeps one with the scope (`projections.recallcache`); None builds it per call.
        self.lexical_index = None

    # --- time ------------------------------------------------------------------------------

    def when(self, i: int) -> tuple[float, float, float]:
        """(confirmed_at as a timestamp, age in days, age rounded); each distinct confirmed_at
        is parsed once per call (facts confirmed together share it)."""
        confirmed_at = self.rows[i][CONFIRMED]
        known = self._times.get(confirmed_at)
        if known is None:
            confirmed = datetime.fromisoformat(confirmed_at.replace("Z", "+00:00"))
            age = max(0.0, (self.now - confirmed).total_seconds() / 86400.0)
            known = self._times[confirmed_at] = (confirmed.timestamp(), age, round(age, 3))
        return known

    def effective(self, i: int) -> float:
        row = self.rows[i]
        key = (row[CONFIDENCE], row[CONFIRMED])
        known = self._times.get(key)
        if known is None:
            known = self._times[key] = effective(row[CONFIDENCE], self.when(i)[1])
        return known

    def durable(self, i: int) -> bool:
        """Stated, verified or from a document: not hidden by age (`DURABLE_BASES`)."""
        row = self.rows[i]
        return row[BASIS] in DURABLE_BASES or row[AUTHOR] == DOCUMENT_AUTHOR

    def gated_confidence(self, i: int) -> float:
        """What `--min-confidence` is compared with: a durable fact's confidence as the log
        made it (age lowers its rank, not its standing), an inferred fact's decayed one."""
        return self.rows[i][CONFIDENCE] if self.durable(i) else self.effective(i)

    def unconfirmed(self, i: int) -> bool:
        """Shown "not confirmed since" its last confirmation: decay has taken the fact below the
        serving threshold (where the record used to stop serving it), or, for a fact that began
        below it (inferred), a whole decay period has passed."""
        confidence = self.rows[i][CONFIDENCE]
        if confidence >= SERVING_THRESHOLD:
            return self.effective(i) < SERVING_THRESHOLD
        return self.when(i)[1] > DECAY_PERIOD_DAYS

    def ask_to_confirm(self, i: int) -> bool:
        """Unconfirmed for longer than its predicate's confirm age (registry `confirm_after_days`,
        by sensitivity when the predicate is unknown)."""
        row = self.rows[i]
        days = self.confirm_after.get(row[PREDICATE]) or CONFIRM_AFTER_DAYS.get(row[SENSITIVITY], 365)
        return self.when(i)[1] > days

    # --- gates -----------------------------------------------------------------------------

    def gate(self, i: int):
        """The outcome so far: withheld, the first gate failed, no_match, or None (eligible);
        after packing, the packing's outcome."""
        outcome = self.outcome[i]
        if outcome is _PENDING:
            options, row, rules = self.options, self.rows[i], self.rules
            if options.kinds is not None and row[KIND] not in options.kinds:
                outcome = "kind"
            elif not options.preload and self.relevance(i) <= 0.0:
                outcome = "no_match"      # a hit whose relevance rounds to 0.0 is one as well
            elif rules.expired(row[PREDICATE], row[KIND], self.when(i)[1]):
                outcome = "retention"
            elif self.gated_confidence(i) < (options.min_confidence if options.threshold_given
                                             else rules.threshold(row[KIND], options.min_confidence)):
                outcome = "confidence"
            elif options.max_age_days is not None and self.when(i)[2] > options.max_age_days:
                outcome = "age"
            else:
                outcome = None
            self.outcome[i] = outcome
        return outcome

    # --- scores ----------------------------------------------------------------------------

    def score_hits(self, query_terms: list[str]) -> None:
        """Relevance by the call's mode, blended with exponential recency (docs/recall.md,
        docs/semantic.md): lexical is the TF-IDF cosine of `_lexical`; semantic is the meaning
        score set by `ledger.recall` from `ledger.semantic.meaning`; hybrid is their weighted sum.
        A fact whose relevance is 0 is not a hit.  Only the raw relevance is kept here; the
        rounded scores of a hit are worked out when asked for (`scores`)."""
        if self.mode != "lexical" and self.arrays is not None:
            found = self._lexical_at_once(query_terms) if self.mode == "hybrid" else None
            self._lexical_scores = dict(zip(found[0].tolist(), found[1].tolist())) if found else {}
            relevance = self._relevance_at_once(found)
            self._relevance = relevance
            self.hits = list(relevance)
            return
        lexical = self._lexical(query_terms) if self.mode != "semantic" else {}
        self._lexical_scores = lexical
        if self.mode == "lexical":
            relevance = lexical
        else:
            a = 1.0 if self.mode == "semantic" else self.meaning_weight
            b = 1.0 - a
            meaning, cleared, lex = self.meaning, self._cleared_set, lexical.get
            relevance = {}
            floor = self._meaning_threshold([meaning[i][0] for i in meaning if i in cleared])
            for i in sorted(lexical.keys() | meaning.keys() if lexical else meaning.keys()):
                if i in cleared:
                    m, w = meaning.get(i, _NO_MEANING)[0], lex(i, 0.0)
                    if w <= 0.0 and m < floor:
                        continue            # neither meaning nor words tie it to the query
                    r = a * m + b * w
                    if r > 0.0:
                        relevance[i] = r
        self._relevance = relevance
        self.hits = list(relevance)

    def _relevance_at_once(self, lexical) -> dict[int, float]:
        """The loop of `score_hits` over every fact at once (meaning gives nearly every fact a
        score): the same products and sums, element by element, so the same numbers.
        `lexical`: (positions, cosines) arrays, or None."""
        np, positions, scores, _ = self.arrays
        a = 1.0 if self.mode == "semantic" else self.meaning_weight
        relevance = np.zeros(len(self.rows), dtype=np.float64)
        relevance[positions] = a * scores
        tied = np.zeros(len(self.rows), dtype=bool)
        cleared_scores = scores[self.clearance.mask(np)[positions]]
        tied[positions] = scores >= self._meaning_threshold(cleared_scores.tolist())
        if lexical is not None:
            at, cosines = lexical
            relevance[at] = relevance[at] + (1.0 - a) * cosines
            tied[at] |= cosines > 0.0
        relevance[~(tied & self.clearance.mask(np))] = 0.0
        hits = np.flatnonzero(relevance > 0.0)
        self._relevance_array = relevance
        return dict(zip(hits.tolist(), relevance[hits].tolist()))

    def _meaning_threshold(self, cleared_scores: list[float]) -> float:
        """The meaning a fact no query word reaches needs to be served for this query: the
        floor, or the share of the best cleared fact's meaning if higher (computed over the
        cleared facts only, so a withheld fact's content moves nothing)."""
        best = max(max(cleared_scores, default=0.0), self.meaning_reference)
        return max(self.meaning_floor, self.meaning_share * best)

    def parts(self, i: int) -> tuple:
        """(meaning, lexical) of a cleared fact scored by meaning or words, for --explain."""
        if self.mode == "lexical" or i not in self._cleared_set:
            return (None, None)
        m, lex = self.meaning.get(i), self._lexical_scores.get(i)
        if m is None and lex is None:
            return (None, None)
        return (round((m or _NO_MEANING)[0], 4), round(lex or 0.0, 4))

    def _raw_scores(self, pool: list[int]) -> list[tuple[float, int]]:
        """(minus the score before rounding, position) for each of `pool`, by the arithmetic of
        `scores`; recency is worked out once per distinct confirmation time.  Without numpy;
        with it, `_raw_arrays`."""
        half_life = self.options.half_life_days
        rows, relevance, weighted = self.rows, self._relevance.get, {}
        out = []
        for i in pool:
            w = self.weight(i)
            confirmed = rows[i][CONFIRMED]
            recency = weighted.get((confirmed, w))
            if recency is None:
                recency = weighted[(confirmed, w)] = w * 0.5 ** (self.when(i)[2] / half_life)
            out.append((-((1.0 - w) * relevance(i, 0.0) + recency), i))
        return out

    def weight(self, i: int) -> float:
        """The recency weight of one fact: the call's, times its kind's share (`KindRules`)."""
        return self.options.recency_weight * self.rules.recency_share(self.rows[i][KIND])

    def _weights(self, np, at):
        """`weight` of each position of `at`, as an array (the call's weight where every fact
        takes it whole)."""
        if self._weight_array is None:
            self._weight_array = np.asarray([self.weight(i) for i in range(len(self.rows))], dtype=np.float64)
        return self._weight_array[at]

    def _raw_arrays(self, pool: list[int]):
        """(positions, scores before rounding) of `pool` as arrays, by `scores`' arithmetic."""
        half_life = self.options.half_life_days
        np, confirmed = self.arrays[0], self.arrays[3]
        at = np.asarray(pool, dtype=np.int64)
        w = self._weights(np, at)
        ages = np.round(np.maximum(0.0, (self.now.timestamp() - confirmed[at]) / 86400.0), 3)
        return at, (1.0 - w) * self._relevance_array[at] + w * 0.5 ** (ages / half_life)

    def best_first(self, pool: list[int]):
        """The eligible positions of `pool` (gate None), best first by `order_key`, worked out
        lazily: a call that fills its limit from the first few facts rounds, gates and orders
        only about those, not all of a thousand.

        Facts are taken from a heap by their unrounded score; one is yielded once no fact still
        in the heap could reach its rounded score (the rounding moves a score by at most 5e-5,
        far inside `_MARGIN`), so the order is exactly that of sorting every fact by
        `order_key`."""
        pending = self._descending(pool)
        head = next(pending, None)
        ready: list = []
        while head is not None or ready:
            while head is not None and (not ready or -head[0] >= -ready[0][0][0] - _MARGIN):
                i = head[1]
                head = next(pending, None)
                if self.gate(i) is None:
                    heapq.heappush(ready, (self.order_key(i), i))
            if ready:
                yield heapq.heappop(ready)[1]

    def _descending(self, pool: list[int]):
        """(minus the raw score, position) of each of `pool`, in the order a heap of them pops
        them (raw score down, position up); with numpy one sort of the arrays, without a
        thousand tuples."""
        if self._relevance_array is not None and pool:
            np = self.arrays[0]
            at, raw = self._raw_arrays(pool)
            order = np.lexsort((at, -raw))
            return zip((-raw[order]).tolist(), at[order].tolist())
        pending = self._raw_scores(pool)
        heapq.heapify(pending)
        return (heapq.heappop(pending) for _ in range(len(pending)))

    def _lexical(self, query_terms: list[str]) -> dict[int, float]:
        """position -> TF-IDF cosine (sublinear tf, smoothed idf over the cleared in-scope facts),
        for the facts sharing a term with the query (`ledger.recall_lexical`).

        A document is its stored terms plus its predicate's registry terms, one string, so its
        split is the term list tf and df have always been computed over.  The index comes from
        `lexical_index` (kept with the scope by `projections.recallcache`) or is built here."""
        q_counts = Counter(query_terms)
        if not q_counts or not self.cleared:
            return {}
        index = self.lexical_index() if self.lexical_index is not None else self.build_lexical_index()
        cleared = self.cleared
        return {cleared[j]: cosine for j, cosine in index.cosines(q_counts).items()}

    def _lexical_at_once(self, query_terms: list[str]):
        """`_lexical` as (positions, cosines) arrays, or None (`LexicalIndex.cosine_arrays`)."""
        q_counts = Counter(query_terms)
        if not q_counts or not self.cleared:
            return None
        index = self.lexical_index() if self.lexical_index is not None else self.build_lexical_index()
        return index.cosine_arrays(q_counts, self.arrays[0])

    def build_lexical_index(self) -> LexicalIndex:
        return lexical_index(self.rows, self.cleared, self.suffixes, self.rules.dated)

    def relevance(self, i: int) -> float:
        """`scores(i)[0]` without the recency and the score: what the gate asks of every hit
        (the withheld count gates them all), while only the facts the packing reaches are
        ordered by their scores.  Asked only of a fact not withheld for its sensitivity."""
        known = self._scored.get(i)
        if known is not None:
            return known[0]
        relevance = self._relevance.get(i)
        return 0.0 if relevance is None else round(relevance, 4)

    def scores(self, i: int) -> tuple:
        """(relevance, recency, score); a fact that shares no term with the query has relevance
        0.0 and a recency and score that depend on its age alone, worked out once per age."""
        known = self._scored.get(i)
        if known is not None:
            return known
        if self.outcome[i] == "sensitivity":
            return _WITHHELD
        relevance = self._relevance.get(i)
        w = self.weight(i)
        if relevance is not None:
            recency = 0.5 ** (self.when(i)[2] / self.options.half_life_days)
            known = self._scored[i] = (round(relevance, 4), round(recency, 4),
                                       round((1.0 - w) * relevance + w * recency, 4))
            return known
        age = self.when(i)[2]
        known = self._by_age.get((age, w))
        if known is None:
            recency = 0.5 ** (age / self.options.half_life_days)
            known = self._by_age[(age, w)] = (0.0, round(recency, 4),
                                              round((1.0 - w) * 0.0 + w * recency, 4))
        return known

    def order_key(self, i: int):
        """Best first: score, then the most recently confirmed, then fact id (a total order)."""
        return (-(self.scores(i)[2] or 0.0), -self.when(i)[0], self.rows[i][ID])

    def rank_key(self, i: int):
        """The explanation's order: by outcome, scored before withheld, then best first."""
        outcome = self.gate(i)
        return (OUTCOMES.index(outcome) if outcome in OUTCOMES else 99,
                self.scores(i)[2] is None, *self.order_key(i))

    # --- disputes --------------------------------------------------------------------------

    def disputes(self, i: int) -> list[str]:
        text = self.rows[i][DISPUTES]
        return [] if text == "[]" else orjson.loads(text)

    def partners(self, i: int) -> list[int]:
        """The in-scope facts this one disputes that may still go on its line: not withheld and
        not already shown."""
        ids = self.disputes(i)
        if not ids:
            return []
        if self._by_id is None:
            self._by_id = {row[ID]: k for k, row in enumerate(self.rows)}
        found = (self._by_id.get(d) for d in ids)
        return [k for k in found if k is not None and self.gate(k) in _JOINABLE]

    # --- the shown form --------------------------------------------------------------------

    def fact(self, i: int) -> dict:
        """One fact as a dict: the thin row's fields, the derived ones and the outcome so far."""
        (fact_id, user, subject, predicate, value, sensitivity, confidence, confirmed_at, _,
         basis, said_at, session, author, _, kind, effective_date) = self.rows[i]
        relevance, recency, score = self.scores(i)
        parts = self.parts(i)
        return {"fact_id": fact_id, "user": user, "subject": subject, "predicate": predicate,
                "value": value, "sensitivity": sensitivity, "confidence": confidence,
                "confirmed_at": confirmed_at, "disputes": self.disputes(i), "basis": basis,
                "said_at": said_at, "session": session, "author": author, "kind": kind,
                "effective_date": effective_date, "age_days": self.when(i)[2],
                "effective_confidence": self.effective(i),
                "relevance": relevance, "recency": recency, "score": score,
                "meaning": parts[0], "lexical": parts[1],
                "unconfirmed_since": confirmed_at if self.unconfirmed(i) else None,
                "ask_to_confirm": self.ask_to_confirm(i),
                "outcome": self.gate(i), "via": self.via.get(i)}


def lexical_index(rows: list[tuple], cleared: list[int], suffixes: dict[str, str],
                  dated: frozenset[str] = frozenset()) -> LexicalIndex:
    """The lexical index of the cleared rows.  A function of the rows, not a method: what a call
    stores on its `InScope` must not point back at it (a cycle would keep each call's per-fact
    lists alive until the cyclic collector runs, and its runs were recall's slowest calls).
    `dated`: the kinds whose facts also match the words of their date (`date_terms`)."""
    return LexicalIndex([_document(rows[i], suffixes, dated) for i in cleared], cleared)


_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
           "october", "november", "december")


def date_terms(day: str | None) -> str:
    """The words of a dated fact's day, as a question names it ("in May 2023", "on 8 May"):
    the month's name, the year and the day of the month.  Added at query time, like the
    registry's terms, so the stored index is unchanged; a reread of the scope drops them."""
    if not day or len(day) < 10:
        return ""
    year, month, date = day[:4], day[5:7], day[8:10]
    if not (year.isdigit() and month.isdigit() and date.isdigit()) or not 1 <= int(month) <= 12:
        return ""
    return " " + " ".join(terms(f"{_MONTHS[int(month) - 1]} {year} {int(date)}"))


class Cleared:
    """The rows a clearance lets through and the outcomes a call starts from (the others are
    `sensitivity`): the same for every call on a scope with that clearance, so kept with the
    scope (`projections.recallcache`) and only read by the calls that share it."""

    def __init__(self, rows: list[tuple], clearance):
        self.positions = [i for i, row in enumerate(rows) if row[SENSITIVITY] in clearance]
        self.set = frozenset(self.positions)
        self.outcome = ["sensitivity"] * len(rows)
        for i in self.positions:
            self.outcome[i] = _PENDING
        self._mask = None

    def mask(self, np):
        """The cleared rows as a boolean array (numpy from the semantic extra)."""
        if self._mask is None:
            mask = np.zeros(len(self.outcome), dtype=bool)
            mask[self.positions] = True
            self._mask = mask
        return self._mask


def _document(row: tuple, suffixes: dict[str, str], dated: frozenset[str] = frozenset()) -> str:
    """A fact's terms, space separated: the index's stored terms (or, for a row the index has
    not seen yet, the same cut of subject, predicate and value) plus its predicate's registry
    terms, and for a dated fact (an event) the words of its day."""
    stored = row[TERMS]
    if stored is None:
        stored = document_terms(row[SUBJECT], row[PREDICATE], row[VALUE], "")
    day = date_terms(row[EFFECTIVE] or row[SAID]) if row[KIND] in dated else ""
    return stored + suffixes.get(row[PREDICATE], "") + day


def effective(confidence: float, age_days: float) -> float:
    """`ledger.confidence.effective_confidence` from an age already computed (same constants;
    tests/recall/test_recall_core.py checks the two agree), so each timestamp is parsed once."""
    decayed = confidence * DECAY_PER_PERIOD ** (age_days / DECAY_PERIOD_DAYS)
    return round(max(DECAY_FLOOR, decayed) if confidence >= DECAY_FLOOR else confidence, 4)
