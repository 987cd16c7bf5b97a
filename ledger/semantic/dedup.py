"""Dedup by meaning, guarded: which open fact of a key, if any, a candidate only restates.

A duplicate is cheap; a lost fact is not.  So a candidate reinforces an open fact of another
wording only when every guard agrees: never across keys or for `series`; on a `many` key the two
values' sentences reach THRESHOLD and carry the same numbers, units, negation words, capitalised
names and contrast words; a `one` key merges by form alone (case, accents, spacing, punctuation),
since another value there is a change of state.  The decision is an event (`same_meaning`,
`same_form`), so a replay needs no encoder; the threshold and near misses: docs/semantic.md.
"""

from __future__ import annotations

import re
import unicodedata
import warnings

from factledger.ledger.domain.candidate import value_key
from factledger.ledger.errors import LedgerError
from factledger.ledger.semantic import embedder as encoders
from factledger.ledger.vocabulary.words import Rule

THRESHOLD = 0.94
PREFILTER = 3                  # open values looked at closely per candidate
PREFILTER_FLOOR = 0.6          # stored-sentence cosine below which a value is not looked at
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_WORD = re.compile(r"[^\W_]+")
_NEGATIONS = frozenset("no not never none nothing neither nor without non cannot cant dont doesnt didnt isnt "
                       "arent wasnt werent wont avoid avoids avoiding free".split())
# Unit words counted wherever they stand; any letters right after a number count as a unit too
# ("50mg", "5 km"), so short ambiguous words ("in", "m") are only units after a number.
_UNITS = frozenset("mg kg lb lbs oz ml mcg iu km cm mm mi miles mile ft feet inch inches hr hrs hours hour "
                   "minutes minute secs seconds day days week weeks month months year years percent usd eur "
                   "gbp inr celsius fahrenheit litre litres liter liters gram grams".split())
_AFTER_NUMBER = re.compile(r"\d(?:[.,]\d+)?\s*([^\W\d_]+)")
# Closed classes of words that name different values however close the sentences are: one of
# them on one side only is a different value, not another wording.
_CONTRASTS = frozenset("north south east west central northern southern eastern western left right upper "
                       "lower top bottom front back inner outer small medium large big little short long tall "
                       "early late morning afternoon evening night daily weekly monthly yearly spring summer "
                       "autumn fall winter red orange yellow green blue purple black white brown grey gray "
                       "pink hot cold warm cool mild strong weak light dark heavy sweet sour bitter salty "
                       "first second third last min max minimum maximum before after above below over under "
                       "more less fewer most least high low".split())
_NUMBER_WORDS = frozenset("zero one two three four five six seven eight nine ten eleven twelve twenty thirty "
                          "forty fifty hundred thousand million half twice once double single".split())


def form_key(value: str) -> str:
    """The value with only its letters and digits, unaccented and case folded."""
    decomposed = unicodedata.normalize("NFKD", value)
    plain = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return "".join(_WORD.findall(plain.casefold()))


def same_form(a: str, b: str) -> bool:
    return value_key(a) != value_key(b) and form_key(a) == form_key(b) and form_key(a) != ""


def _form(value: str) -> str:
    """`form_key`, remembered for the write transaction (a key's open values are compared with
    every candidate of the key)."""
    memo = encoders.memo()
    return form_key(value) if memo is None else encoders.remembered(memo, ("form", value), lambda: form_key(value))


def _same_form_facts(value: str, facts: list) -> list:
    """The facts whose value differs from `value` by form alone, in order."""
    mine = _form(value)
    if not mine:
        return []
    return [f for f in facts if _form(f.value) == mine and value_key(f.value) != value_key(value)]


def guards(a: str, b: str) -> str | None:
    """The first guard that keeps two values apart, or None when none does."""
    words_a, words_b = _words(a), _words(b)
    if _NUMBER.findall(a) != _NUMBER.findall(b) or (words_a & _NUMBER_WORDS) != (words_b & _NUMBER_WORDS):
        return "number"
    if _units(a, words_a) != _units(b, words_b):
        return "unit"
    if bool(words_a & _NEGATIONS) != bool(words_b & _NEGATIONS) or _negated(a) != _negated(b):
        return "negation"
    if _names(a) != _names(b):
        return "named_entity"
    if (words_a ^ words_b) & _CONTRASTS:
        return "contrast"
    return None


def _units(text: str, words: set[str]) -> set[str]:
    return (words & _UNITS) | {u.casefold() for u in _AFTER_NUMBER.findall(text)}


def _words(text: str) -> set[str]:
    return {w.replace("'", "") for w in _WORD.findall(text.casefold().replace("n't", "nt"))}


def _negated(text: str) -> bool:
    return "n't" in text.casefold() or text.strip().lower().startswith(("non-", "non "))


def _names(text: str) -> set[str]:
    """Capitalised words after the first (a value's first word is often capitalised as a
    sentence start), case folded."""
    words = _WORD.findall(text)
    return {w.casefold() for w in words[1:] if w[:1].isupper()} | (
        {words[0].casefold()} if words and words[0][:1].isupper() and len(words) == 1 else set())


# What `restated_by` gives in place of a rule when the encoder failed on a `many` key's candidate:
# the candidate is decided by the exact rules and the new fact records that its check is owed.
UNCHECKED = "unchecked"


def restated_by(candidate, spec, open_facts, stored_vectors):
    """What a candidate only restates, asked before the decision table by the live ledger and by
    re-decision after a forget alike: `same_meaning` when meaning is on, else (None, None).

    An encoder that fails (a runtime error, a file that no longer loads) costs the candidate its
    meaning check, never the candidate: it is decided by the exact rules and by form (a duplicate
    is cheap; a lost fact is not), and a warning says so.  On a `many` key the check is owed:
    (None, UNCHECKED), and the fact it opens says so (`FactObserved.unchecked`), to be checked
    again once the encoder works (`UnitOfWork.recheck_meaning`), recorded as an event."""
    if not encoders.wanted():
        return None, None
    try:
        return same_meaning(candidate, spec, open_facts, stored_vectors)
    except LedgerError:
        raise                                 # an encoder asked for that is not usable: the person's to fix
    except Exception as exc:    # noqa: BLE001 - whatever the runtime raises, the fact is kept
        warnings.warn(f"factledger: the meaning check failed ({type(exc).__name__}: {exc}); "
                      "the candidate was decided by the exact rules, its check queued", RuntimeWarning,
                      stacklevel=2)
        same_forms = _same_form_facts(candidate.value, list(open_facts))
        if same_forms:
            return same_forms[0], Rule.SAME_FORM
        return (None, UNCHECKED) if spec.cardinality == "many" else (None, None)


def same_meaning(candidate, spec, open_facts, stored_vectors):
    """(the open fact the candidate only restates, the rule) or (None, None).

    `open_facts` is the key's open facts (a list or the decision table's key view);
    `stored_vectors()` gives `key_matrix` of the stored vectors of the key's predicate
    (projections/vectors.py), which the caller may keep for its transaction (the table changes
    only when the transaction's projections flush).  The stored vectors (fact sentence with its quote) pick at most
    PREFILTER open values close to the candidate, and only those are embedded in the key's frame
    and put through the guards, so a key holding thousands of values costs one read and a few
    runs of the encoder, not one per value.  Facts opened earlier in the same transaction have
    no stored vector yet and are compared directly."""
    cardinality = spec.cardinality
    if cardinality == "series" or candidate.negated or not open_facts:
        return None, None
    value = candidate.value
    lookup = getattr(open_facts, "same", None)
    wanted = value_key(value)
    if (lookup(wanted) if lookup is not None else [f for f in open_facts if value_key(f.value) == wanted]):
        return None, None                   # the exact rule of the decision table applies
    if hasattr(open_facts, "holds"):
        facts = None                        # a key view: asked by form and by id, never scanned
        mine_form = _form(value)
        same_forms = [f for f in open_facts.same_form(_form, mine_form)
                      if value_key(f.value) != wanted] if mine_form else []
    else:
        facts = list(open_facts)
        same_forms = _same_form_facts(value, facts)
    model = encoders.get() if cardinality == "many" else None
    if model is None:
        return (same_forms[0], Rule.SAME_FORM) if same_forms else (None, None)
    import numpy as np  # the semantic extra's: present once an encoder is (above)

    rows, matrix = stored_vectors()
    subject, predicate = candidate.subject, spec.name
    full = model.embed(encoders.sentence(subject, predicate, value, candidate.quote))
    if hasattr(open_facts, "holds") and isinstance(rows, KeyVectors):
        shortlist = _nearest(open_facts, rows, full)
    else:
        facts = facts if facts is not None else list(open_facts)
        with_vector = [f for f in facts if f.fact_id in rows]
        shortlist = [f for f in facts if f.fact_id not in rows]
        if with_vector:
            cosines = (matrix @ full)[np.asarray([rows[f.fact_id] for f in with_vector], dtype=np.int64)]
            order = np.argsort(-cosines, kind="stable")[:PREFILTER]
            shortlist += [with_vector[k] for k in order.tolist() if cosines[k] >= PREFILTER_FLOOR]
    shortlist += [f for f in same_forms if f not in shortlist]
    mine = None                             # the candidate in the key's frame, once a value needs it
    best, best_cosine, rule = None, THRESHOLD, None
    for fact in shortlist:
        if fact in same_forms:
            return fact, Rule.SAME_FORM
        if guards(value, fact.value) is not None:
            continue
        if mine is None:
            mine = model.embed(encoders.sentence(subject, predicate, value, None))
        cosine = float(mine @ model.embed(encoders.sentence(subject, predicate, fact.value, None)))
        if cosine >= best_cosine:
            best, best_cosine, rule = fact, cosine, Rule.SAME_MEANING
    return (best, rule) if best is not None else (None, None)


class KeyVectors:
    """A partition's vectors of one predicate for a write transaction: those stored, then those of
    the facts the transaction opens (`add`), so a candidate is compared with every value of its
    key by one matrix product whether the value was stored before or opened a moment ago.
    Unpacks as (fact_id -> row, matrix), as `key_matrix` gives."""

    def __init__(self, stored: dict) -> None:
        self.rows: dict[str, int] = {}
        self._parts: list = []
        self._matrix = None
        self.ids: list[str] = []
        if stored:
            rows, matrix = key_matrix(stored)
            self.rows, self.ids, self._matrix = rows, list(rows), matrix

    def add(self, fact_id: str, vector) -> None:
        if fact_id in self.rows:
            return
        self.rows[fact_id] = len(self.ids)
        self.ids.append(fact_id)
        self._parts.append(vector)

    @property
    def matrix(self):
        if self._parts:
            import numpy as np

            block = np.vstack(self._parts).astype("<f4", copy=False)
            self._matrix = block if self._matrix is None else np.vstack((self._matrix, block))
            self._parts = []
        return self._matrix

    def __contains__(self, fact_id: str) -> bool:
        return fact_id in self.rows

    def __getitem__(self, fact_id: str) -> int:
        return self.rows[fact_id]

    def __iter__(self):
        return iter((self, self.matrix))


# How many of the nearest vectors `_nearest` looks at before it sorts them all: most are the
# key's open facts; a fact of another subject or one closed since is skipped.
_NEAREST = 64


def _nearest(view, vectors: KeyVectors, full) -> list:
    """The key's open facts (in `view`) nearest to `full`, at most PREFILTER of them at or above
    PREFILTER_FLOOR, best first, ties in key order: one matrix product over the key's vectors and
    a look at the nearest few, whatever the key holds."""
    import numpy as np

    matrix = vectors.matrix
    if matrix is None:
        return []
    cosines = matrix @ full
    ids = vectors.ids
    take = min(len(ids), _NEAREST)
    while True:
        if take < len(ids):
            top = np.argpartition(-cosines, take - 1)[:take]
        else:
            top = np.arange(len(ids))
        chosen = sorted((-float(cosines[k]), view.place(ids[k]), ids[k]) for k in top.tolist()
                         if cosines[k] >= PREFILTER_FLOOR and view.holds(ids[k]))
        if len(chosen) >= PREFILTER or take >= len(ids) or float(cosines[top].min()) < PREFILTER_FLOOR:
            return [view.fact(fact_id) for _c, _p, fact_id in chosen[:PREFILTER]]
        take = min(len(ids), take * 4)


def key_matrix(stored: dict) -> tuple[dict, object]:
    """(fact_id -> row, the rows as one float32 matrix) of fact_id -> stored vector bytes."""
    import numpy as np

    if not stored:
        return {}, None
    ids = list(stored)
    matrix = np.frombuffer(b"".join(stored[i] for i in ids), dtype="<f4").reshape(len(ids), -1)
    return {fact_id: k for k, fact_id in enumerate(ids)}, matrix


def merges(subject: str, predicate: str, a: str, b: str, model) -> tuple[bool, float, str | None]:
    """For measurement: whether b would reinforce a on a `many` key, the cosine, the guard."""
    if same_form(a, b):
        return True, 1.0, None
    cosine = float(model.embed(encoders.sentence(subject, predicate, a, None))
                   @ model.embed(encoders.sentence(subject, predicate, b, None)))
    guard = guards(a, b)
    return guard is None and cosine >= THRESHOLD, cosine, guard
