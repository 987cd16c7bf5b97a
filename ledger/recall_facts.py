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
A dict is built only for a fact that is shown (`fact`).  Nothing outlives the call: no fact
text is kept between calls here (the text index's memo of cut texts is emptied by every forget),
so a forgotten fact leaves nothing behind in memory.
"""

from __future__ import annotations

import math
from collections import Counter
from datetime import datetime
from itertools import chain

import orjson

from .confidence import DECAY_FLOOR, DECAY_PER_PERIOD, DECAY_PERIOD_DAYS
from .recall_options import RecallOptions
from .textindex import document_terms

# Positions in a thin row (ledger.recall._THIN).
(ID, USER, SUBJECT, PREDICATE, VALUE, SENSITIVITY, CONFIDENCE, CONFIRMED, DISPUTES, BASIS, SAID,
 SESSION, AUTHOR, TERMS) = range(14)
OUTCOMES = ("selected", "sensitivity", "confidence", "age", "no_match", "limit", "budget")
_PENDING = object()                     # an outcome not worked out yet
_JOINABLE = (None, "confidence", "age", "no_match", "limit", "budget")   # may join a disputed line
_WITHHELD = (None, None, None)


class InScope:
    """The in-scope facts of one call and what has been worked out about each (see the module
    docstring for why nothing here is a per-fact dict)."""

    def __init__(self, rows: list[tuple], now: datetime, options: RecallOptions,
                 suffixes: dict[str, str]):
        self.rows = rows
        self.now = now
        self.options = options
        self.suffixes = suffixes
        self.outcome: list = [_PENDING] * len(rows)
        self.cleared: list[int] = []
        for i, row in enumerate(rows):
            if row[SENSITIVITY] in options.clearance:
                self.cleared.append(i)
            else:
                self.outcome[i] = "sensitivity"
        self.hits: list[int] = []                       # positions sharing a term with the query
        self.via: dict[int, str] = {}                   # shown beside the fact it disputes
        self._scored: dict[int, tuple] = {}             # hits: (relevance, recency, score)
        self._by_age: dict[float, tuple] = {}           # non-hits: the same, once per distinct age
        self._times: dict = {}
        self._by_id: dict[str, int] | None = None
        # Meaning (the semantic extra): position -> (rescaled meaning, raw cosine), and the
        # parts of each scored relevance, (meaning, lexical), for --explain.
        self.mode = "lexical"
        self.meaning_weight = 0.0
        self.meaning: dict[int, tuple[float, float]] = {}
        self.parts: dict[int, tuple] = {}

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

    # --- gates -----------------------------------------------------------------------------

    def gate(self, i: int):
        """The outcome so far: withheld, the first gate failed, no_match, or None (eligible);
        after packing, the packing's outcome."""
        outcome = self.outcome[i]
        if outcome is _PENDING:
            options = self.options
            if self.effective(i) < options.min_confidence:
                outcome = "confidence"
            elif options.max_age_days is not None and self.when(i)[2] > options.max_age_days:
                outcome = "age"
            elif not options.preload and self.scores(i)[0] <= 0.0:
                outcome = "no_match"      # a hit whose relevance rounds to 0.0 is one as well
            else:
                outcome = None
            self.outcome[i] = outcome
        return outcome

    # --- scores ----------------------------------------------------------------------------

    def score_hits(self, query_terms: list[str]) -> None:
        """Relevance by the call's mode, blended with exponential recency (docs/recall.md,
        docs/semantic.md): lexical is the TF-IDF cosine of `_lexical`; semantic is the meaning
        score set by `ledger.recall` from `ledger.semantic.meaning`; hybrid is their weighted sum.
        A fact whose relevance is 0 is not a hit."""
        lexical = self._lexical(query_terms) if self.mode != "semantic" else {}
        if self.mode == "lexical":
            scored = lexical
        else:
            a = 1.0 if self.mode == "semantic" else self.meaning_weight
            cleared = set(self.cleared)
            scored = {}
            for i in sorted(cleared & (set(lexical) | set(self.meaning))):
                m = self.meaning.get(i, (0.0, None))[0]
                lex = lexical.get(i, 0.0)
                self.parts[i] = (round(m, 4), round(lex, 4))
                if a * m + (1.0 - a) * lex > 0.0:
                    scored[i] = a * m + (1.0 - a) * lex
        w = self.options.recency_weight
        half_life = self.options.half_life_days
        for i, relevance in scored.items():
            recency = 0.5 ** (self.when(i)[2] / half_life)
            self._scored[i] = (round(relevance, 4), round(recency, 4),
                               round((1.0 - w) * relevance + w * recency, 4))
            self.hits.append(i)

    def _lexical(self, query_terms: list[str]) -> dict[int, float]:
        """position -> TF-IDF cosine (sublinear tf, smoothed idf over the cleared in-scope facts),
        for the facts sharing a term with the query.

        A substring test finds the few documents that can share a term before any is split, and
        document frequencies are counted only when some document does.  A document is its
        stored terms plus its predicate's registry terms, one string, so its split is the term
        list tf and df have always been computed over."""
        q_counts = Counter(query_terms)
        if not q_counts or not self.cleared:
            return {}
        rows, suffixes = self.rows, self.suffixes
        docs = [_document(rows[i], suffixes) for i in self.cleared]
        q_keys = q_counts.keys()
        maybe = {j for t in q_keys for j, doc in enumerate(docs) if t in doc}
        hits = [j for j in sorted(maybe) if not q_keys.isdisjoint(docs[j].split())]
        if not hits:
            return {}
        n = len(docs)
        df = Counter(chain.from_iterable(map(set, map(str.split, docs))))
        idf_of: dict[str, float] = {}

        def idf(term: str) -> float:
            if term not in idf_of:
                idf_of[term] = math.log((1 + n) / (1 + df[term])) + 1.0
            return idf_of[term]

        q = {t: (1 + math.log(k)) * idf(t) for t, k in q_counts.items()}
        q_norm = math.sqrt(sum(x * x for x in q.values()))
        found = {}
        for j in hits:
            d = {t: (1 + math.log(k)) * idf(t) for t, k in Counter(docs[j].split()).items()}
            dot = sum(weight * d[t] for t, weight in q.items() if t in d)
            found[self.cleared[j]] = dot / (q_norm * math.sqrt(sum(x * x for x in d.values())))
        return found

    def scores(self, i: int) -> tuple:
        """(relevance, recency, score); a fact that shares no term with the query has relevance
        0.0 and a recency and score that depend on its age alone, worked out once per age."""
        known = self._scored.get(i)
        if known is not None:
            return known
        if self.outcome[i] == "sensitivity":
            return _WITHHELD
        age = self.when(i)[2]
        known = self._by_age.get(age)
        if known is None:
            w = self.options.recency_weight
            recency = 0.5 ** (age / self.options.half_life_days)
            known = self._by_age[age] = (0.0, round(recency, 4),
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
         basis, said_at, session, author, _) = self.rows[i]
        relevance, recency, score = self.scores(i)
        return {"fact_id": fact_id, "user": user, "subject": subject, "predicate": predicate,
                "value": value, "sensitivity": sensitivity, "confidence": confidence,
                "confirmed_at": confirmed_at, "disputes": self.disputes(i), "basis": basis,
                "said_at": said_at, "session": session, "author": author,
                "age_days": self.when(i)[2], "effective_confidence": self.effective(i),
                "relevance": relevance, "recency": recency, "score": score,
                "meaning": self.parts.get(i, (None, None))[0], "lexical": self.parts.get(i, (None, None))[1],
                "outcome": self.gate(i), "via": self.via.get(i)}


def _document(row: tuple, suffixes: dict[str, str]) -> str:
    """A fact's terms, space separated: the index's stored terms (or, for a row the index has
    not seen yet, the same cut of subject, predicate and value) plus its predicate's registry
    terms."""
    stored = row[TERMS]
    if stored is None:
        stored = document_terms(row[SUBJECT], row[PREDICATE], row[VALUE], "")
    return stored + suffixes.get(row[PREDICATE], "")


def effective(confidence: float, age_days: float) -> float:
    """`ledger.confidence.effective_confidence` from an age already computed (same constants;
    tests/test_recall_core.py checks the two agree), so each timestamp is parsed once."""
    decayed = confidence * DECAY_PER_PERIOD ** (age_days / DECAY_PERIOD_DAYS)
    return round(max(DECAY_FLOOR, decayed) if confidence >= DECAY_FLOOR else confidence, 4)
