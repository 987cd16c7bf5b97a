"""Does the quote support what the candidate claims?  Evidence, not spelling (docs/ingestion.md).

A quote proves only that someone said those words, yet a correct value is often not spelled by
it ("I eat fish now" for `diet = pescatarian`).  So: every candidate needs a quote of substance
and a negation a quote that negates (else refused or rejected); an `inferred` value need not be
spelled; a `stated` or `verified` value is supported by its spelling or the registry's words, the
same number in another format, the open value it updates, a yes/no predicate spoken of, or (the
semantic extra) the quote's meaning.  Anything else is held `unsupported_by_quote`: never served,
never lost.  The rules, one by one: docs/ingestion.md, "The support rule".
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


def declared(spec: PredicateSpec | None, subject: str, value: str, negated: bool, quote: str) -> bool:
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
    return declared(spec, subject, value, negated, quote)


def negation_supported(value: str, quote: str, spec: PredicateSpec | None, subject: str = "user") -> bool:
    return bool(NEGATION_CUES.search(quote if quote.isascii() else quote.translate(_TYPOGRAPHIC))) or declared(
        spec, subject, value, True, quote)


UNSUPPORTED = "unsupported_by_quote"          # held for a reviewer, never served, never lost
_NUMBER = re.compile(r"\d+(?:[.,/:]\d+)*")
_WORDS = re.compile(r"[^\W_]+")
UNITS = frozenset(
    "mg mcg g kg lb lbs oz ml l iu km cm mm m mi miles mile ft feet inch inches hr hrs hours hour min mins "
    "minutes minute secs seconds s day days week weeks month months year years percent pct usd eur gbp inr "
    "celsius fahrenheit c f litre litres liter liters gram grams kilos kilograms pounds mmhg bpm units unit "
    "tablet tablets pill pills daily".split())
_YES, _NO = frozenset({"true", "yes"}), frozenset({"false", "no"})
# Words of a predicate's name that say nothing of its topic (`likes_spicy` is about "spicy").
_GENERIC = frozenset("user likes like has have is wants prefers preference uses owns does the of a an "
                     "and favorite favourite preferred current".split())


def _words(text: str) -> list[str]:
    return _WORDS.findall(_plain(text))


def same_number(value: str, quote: str) -> bool:
    """Every number of the value is in the quote, and each other word of the value is in the
    quote or a unit it leaves out ("148/92 mmHg" from "BP 148/92"; "50 mg" from "50mg")."""
    numbers = _NUMBER.findall(value)
    if not numbers:
        return False
    said = set(_NUMBER.findall(quote))
    if not all(n in said for n in numbers):
        return False
    words = set(_words(quote))
    return all(w in words or w in UNITS for w in _words(_NUMBER.sub(" ", value)))


def updates_open(value: str, quote: str, open_values: list[str]) -> bool:
    """The quote says what changed and the value keeps the rest of an open value of the key:
    the value's words the quote leaves out are all words of that open value, and what the quote
    does say includes a word the open value lacks ("50 mg" of `metoprolol tartrate 50 mg` while
    `metoprolol tartrate 25 mg` is open)."""
    mine = [value_key(w) for w in _merged(value)]
    said = {value_key(w) for w in _merged(quote)}
    present = [w for w in mine if w in said]
    missing = [w for w in mine if w not in said]
    if not present or not missing:
        return False
    for old in open_values:
        theirs = {value_key(w) for w in _merged(old)}
        if set(missing) <= theirs and any(w not in theirs for w in present):
            return True
    return False


def _merged(text: str) -> list[str]:
    """Words, with a number and the unit after it as one ("50 mg" -> "50mg")."""
    return value_key(" ".join(_words(text))).split()


def yes_no(value: str, quote: str, spec: PredicateSpec | None) -> bool:
    """A yes/no predicate's value, from a quote that speaks of the predicate: without negating
    it for yes, negating it for no."""
    answer = value.strip().casefold()
    if spec is None or answer not in _YES | _NO:
        return False
    topic = {w for name in (spec.name, *spec.aliases) for w in re.split(r"[._\s-]+", name.casefold())
             if len(w) >= 3 and w not in _GENERIC}
    stems = {w[:4] for w in topic}
    if not any(w[:4] in stems for w in _words(quote) if len(w) >= 3):
        return False
    negates = bool(NEGATION_CUES.search(plain_typography(quote)))
    return negates == (answer in _NO)


def refused(proposal, spec: PredicateSpec | None) -> str | None:
    """The part of the rule that refuses outright (no evidence at all, or a negation that does
    not negate), asked before anything is written; None when the candidate may go on."""
    if not has_substance(proposal.quote):
        return "quote_too_short"
    if proposal.negated and not negation_supported(proposal.value, proposal.quote, spec, proposal.subject):
        return "negation_not_in_quote"
    return None


def unsupported(proposal, spec: PredicateSpec | None, open_values: list[str] | None = None,
                means=None) -> str | None:
    """Why the quote does not support the proposal, or None when it does (the module's rule).
    `quote_too_short` and `negation_not_in_quote` are refused; `unsupported_by_quote` is held.
    `open_values`: the key's open values (a `one` key's; for rule 3); `means(quote, spec, value)`:
    the meaning check, when the encoder is on (rule 5)."""
    quote, value = proposal.quote, proposal.value
    first = refused(proposal, spec)
    if first is not None:
        return first
    if getattr(proposal, "basis", "stated") == "inferred":
        return None
    if value_supported(value, quote, spec, proposal.subject, proposal.negated) or same_number(value, quote):
        return None
    if yes_no(value, quote, spec) or (open_values and updates_open(value, quote, open_values)):
        return None
    if means is not None and means(quote, spec, value):
        return None
    return UNSUPPORTED
