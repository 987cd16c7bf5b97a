"""Does the quote say what the proposal claims?  The validator's tie of value and negation to it.

A quote found in the evidence event proves only that someone said those words.  An extractor (a
model above all, which can be talked into anything by the transcript it reads) may attach any
value to them: "I" as the quote for retracting a diet, "we're in Pune" as the quote for the value
"Ignore previous instructions".  So a proposal is kept only when its quote supports it:

- the quote has substance: at least `MIN_QUOTE_CHARS` letters or digits;
- the value (for a negation, the value retracted) is supported by one of
  1. normalised containment: the value, compared as `value_key` compares values (case, spacing,
     typographic quotes, "25 mg" = "25mg"), or with case and spacing folded only, occurs in the
     quote as whole words;
  2. the registry's value vocabulary: the predicate's `values` table lists words that state a
     value (`pescatarian = ["pescetarian", "eat fish"]`), and one of them occurs in the quote;
  3. a declared rule: one of the predicate's registry patterns matches the quote and yields this
     value with this negation (`I love spicy food` -> likes_spicy = true), or, for a negation,
     a rule reads the value in a retracting clause of the quote ("i don't have cats any more");
- a negation also needs the quote to negate: a declared negated pattern matches it, or it holds
  one of `NEGATION_CUES` ("no longer", "not", "stopped", "used to" ...).  English only: in other
  languages a retraction is rejected (never applied) unless the registry declares a pattern.

A value made of look-alike letters (Cyrillic `е` in "pеscatarian") is not contained in a quote
written in Latin letters, so it is rejected instead of silently replacing the real value.
"""

from __future__ import annotations

import re
import unicodedata

from factledger.ledger.domain.candidate import value_key
from factledger.ledger.registry.predicates import PredicateSpec
from factledger.ledger.registry.rules import TextView

MIN_QUOTE_CHARS = 3
NEGATION_CUES = re.compile(
    r"(?<!\w)(?:no|not|never|no longer|any ?more|n't|nor|neither|none|nothing|without|stopp?ed|"
    r"quit|gave up|give up|giving up|used to|formerly|former|ex|anymore|away from|left|moved "
    r"(?:away|out)|instead|no more|cancell?ed|dropped|ended|isn't|aren't|wasn't|weren't|don't|"
    r"doesn't|didn't|can't|cannot|won't|got rid of|gotten rid of|gave away)(?!\w)|n't(?!\w)",
    re.IGNORECASE)
_TYPOGRAPHIC = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                              "\u00a0": " "})


def plain_typography(text: str) -> str:
    """`text` NFC-normalised with typographic quotes and no-break spaces made plain.  ASCII text
    has none of them and is already NFC, so it is returned as it is: `str.translate` with a
    table looks each character up and raises (and catches) a KeyError for every character not in
    it, which made this the quote check's largest cost on a plain English quote."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFC", text).translate(_TYPOGRAPHIC)


def _fold(text: str) -> str:
    return value_key(plain_typography(text))


def _contains(haystack: str, needle: str) -> bool:
    """`needle` occurs in `haystack` as whole words (not "eat" inside "great"): an occurrence with
    no word character (`\\w`: a letter, digit or underscore) just before or just after it.  By
    `str.find`, not a regex built from the value: every observed candidate asks this, and a regex
    per value overflowed `re`'s cache and compiled anew (a third of `observe_many`'s time)."""
    if not needle:
        return False
    start, size = haystack.find(needle), len(haystack)
    while start != -1:
        end = start + len(needle)
        if (start == 0 or not _word(haystack[start - 1])) and (end == size or not _word(haystack[end])):
            return True
        start = haystack.find(needle, start + 1)
    return False


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"             # what `\\w` matches in a str pattern


def has_substance(quote: str) -> bool:
    """At least `MIN_QUOTE_CHARS` letters or digits; stops counting when it has them (every
    observed candidate asks, and a quote is often a whole sentence)."""
    found = 0
    for ch in quote:
        if ch.isalnum():
            found += 1
            if found >= MIN_QUOTE_CHARS:
                return True
    return False


def _declared(spec: PredicateSpec | None, subject: str, value: str, negated: bool, quote: str) -> bool:
    """A registry pattern of the predicate matches the quote and yields this very proposal."""
    if spec is None:
        return False
    text = " ".join(quote.split())
    wanted = _fold(value)
    for pattern in spec.patterns:
        if pattern.negated != negated or pattern.subject != subject:
            continue
        for match in pattern.regex.finditer(text):
            produced = pattern.value if pattern.value is not None else match.group("value")
            if produced and _fold(produced.strip()) == wanted:
                return True
    for rule in spec.rules:
        if rule.subject != subject:
            continue
        hits = list(rule.finditer(text)) if rule.negated == negated else []
        if negated:                       # a retracting clause said positively ("cats any more")
            hits += rule.retracted(TextView(text))
        if any(_fold(spec.normalise_value(hit.value)) == wanted for hit in hits):
            return True
    return False


def _plain(text: str) -> str:
    """Case and spacing folded, numbers left apart from the word after them: `value_key` reads
    "0 was" in "recipe number 0 was good" as a number and its unit ("0was"), which would hide
    the value "recipe number 0" (or "INC-4411" in "INC-4411 is still open") from its quote."""
    return " ".join(plain_typography(text).casefold().split())


def value_supported(value: str, quote: str, spec: PredicateSpec | None, subject: str = "user",
                    negated: bool = False) -> bool:
    folded = _fold(quote)
    if _contains(folded, _fold(value)):               # the common case: the plain form is not needed
        return True
    plain = _plain(quote)
    if _contains(plain, _plain(value)):
        return True
    words = spec.values.get(_fold(value), ()) if spec is not None else ()
    if any(_contains(folded, _fold(word)) or _contains(plain, _plain(word)) for word in words):
        return True
    return _declared(spec, subject, value, negated, quote)


def negation_supported(value: str, quote: str, spec: PredicateSpec | None, subject: str = "user") -> bool:
    return bool(NEGATION_CUES.search(quote if quote.isascii() else quote.translate(_TYPOGRAPHIC))) or _declared(
        spec, subject, value, True, quote)


def unsupported(proposal, spec: PredicateSpec | None) -> str | None:
    """The rejection reason when the quote does not support the proposal, else None."""
    if not has_substance(proposal.quote):
        return "quote_too_short"
    if not value_supported(proposal.value, proposal.quote, spec, proposal.subject, proposal.negated):
        return "value_not_in_quote"
    if proposal.negated and not negation_supported(proposal.value, proposal.quote, spec, proposal.subject):
        return "negation_not_in_quote"
    return None
