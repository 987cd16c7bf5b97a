"""The registry's pattern language: declarative rules the offline extractor runs (docs/ingestion.md).

One regular expression per phrasing could not keep up with real speech, and each got value
boundaries, articles and negation wrong in its own way.  A rule says what is stated: cue words
around a `{value}` slot, the slot's kind (vocabulary, free words, a place, a number), whether a
list may follow, and its guards (negation, question, hypothetical).  Rules are compiled once per
registry load, run deterministically, and each value carries its rule's id.  The template syntax:
docs/ingestion.md, "The pattern language".
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from factledger.ledger.errors import LedgerError
from factledger.ledger.registry.slots import (
    Slot,
    SlotHit,
    fold_value,
    number_slot,
    place_slot,
    vocabulary_slot,
    words_slot,
)

GUARDS = ("negation", "question", "hypothetical")
SLOTS = ("values", "words", "place", "number")

DEFAULT_PHRASES = {
    "i_am": "(i am|i'm|im)",
    "i_have": "(i have|i've|ive|i got|i've got|i have got)",
    "we": "(i|we)",
    "art": "[a|an|the]",
    "my": "[my|our]",
}
DEFAULT_STOP = (
    "and or but so because since as which that who whom whose where when while if though although "
    "than then also too very really now here there i i'm im me my we our you your he she it they "
    "them his her its their with without for from by at on in of to into about like just lol haha "
    "is am are was were be been being do does did have has had will would can could should"
).split()
DEFAULT_NEGATION = r"not|never|no|no longer|n't|dont|doesnt|didnt|cant|cannot|wont|isnt|arent|wasnt|used to|" \
    r"formerly|hardly|neither|nor"
DEFAULT_HYPOTHETICAL = (
    r"if|when|whenever|once|would|could|should|might|may|maybe|perhaps|wish|wishes|hope|hoping|want|wants|"
    r"wanted|wanna|gonna|going to|will|'ll|plan|plans|planning|dream|dreams|dreaming|someday|one day|"
    r"pretend|imagine|until|unless|aspire|aspiring|trying to|try to|thinking of|thinking about|"
    r"considering|soon|future")
DEFAULT_AFTER = r"one day|someday|some day|when i grow up|in the future|eventually|after i graduate|" \
    r"next year|soon"
DEFAULT_QUESTION = r"do you|are you|have you|did you|were you|can you|would you|will you|what|how|why|" \
    r"which|who|where|is it|is that"
DEFAULT_GAP_WORDS = (
    "a an the small little tiny big large quiet busy nice beautiful rural suburb suburbs suburban "
    "outskirts outside near middle heart center centre part area region town city village state "
    "country of in north south east west northern southern eastern western central downtown "
    "upstate coastal capital province county"
).split()
# Words that say a statement has stopped being true: a clause holding one is read as the
# retraction of what the clause, said positively, would state ("i don't have a dog anymore").
DEFAULT_RETRACTION = r"no longer|anymore|any more|after all|quit|quitting|gave up|given up|give up|" \
    r"moved away from|moved out of|got rid of|gotten rid of|gave away|stopped being"
_DEFAULT_CUES = {"negation": DEFAULT_NEGATION, "hypothetical": DEFAULT_HYPOTHETICAL, "after": DEFAULT_AFTER,
                 "question": DEFAULT_QUESTION, "retraction": DEFAULT_RETRACTION}
# How a retracting clause is said positively, in order (each a regex and its replacement): the
# negating auxiliaries and the cue words go, the verbs of giving up become the state given up.
_POSITIVE = [(re.compile(rf"(?<![\w'’]){a}(?![\w'’])", re.IGNORECASE), b) for a, b in (
    (r"(?:quit|gave up|given up|give up|stopped) being", "am"),
    (r"(?:quit|left|gave up) (?:my|the) job (?:at|with|for)", "work at"),
    (r"(?:quit|left|gave up) (?:my|the) job as", "work as"),
    (r"quit (?:working|work) (?:at|for)", "work at"),
    (r"moved (?:away from|out of)", "live in"),
    (r"(?:got rid of|gotten rid of|gave away|gave up|given up|give up)(?: (?:my|our|the|a|an))?", "have a"),
    (r"(?:do|does|did) not|(?:do|does|did)n['’]?t|dont|doesnt|didnt", ""),
    (r"(?:have|has)n['’]?t|havent|hasnt|(?:have|has) not", "have"),
    (r"(?:is|are|was|were)n['’]?t|isnt|arent", "is"),
    (r"not|no longer|anymore|any more|after all", ""),
)]
_CLAUSE_END = re.compile(r"[.!?;,:]|(?<=\s)(?:but|and|so|because)(?=\s)")
_LIST_SEP = r"(?:\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|&|plus|as well as)\s+)"
_LIST_LEAD = r"(?:(?:a|an|the|my|some|one|two|three|four|five|six|seven|eight|nine|ten|\d+)\s+)?"
_WORD_AT = re.compile(r"[\w'’]+")
_WORD_BEFORE = re.compile(r"([\w'’]+)\s*$")
_TOKEN = re.compile(r"\(|\)|\[|\]|\||\{[a-z_]+\}|[^\s()\[\]|{}]+")


def _cues(alternatives: str) -> re.Pattern:
    words = sorted((w.strip() for w in alternatives.split("|") if w.strip()), key=len, reverse=True)
    body = "|".join(_literal(w) if "'" in w else re.escape(w).replace(r"\ ", r"\s+") for w in words)
    return re.compile(rf"(?<![\w'’])(?:{body})(?![\w'’])", re.IGNORECASE)


def _literal(word: str) -> str:
    """A template word as a regex: apostrophes optional and typographic ones accepted."""
    parts = [re.escape(p) for p in re.split(r"['’]", word)]
    return r"\s?['’]?\s?".join(parts) if len(parts) > 1 else parts[0]


@dataclass
class Language:
    """What a registry's rules share: phrases, stop words, guard cues, filler words, places."""

    phrases: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_PHRASES))
    stop: frozenset[str] = frozenset(DEFAULT_STOP)
    gap_words: frozenset[str] = frozenset(DEFAULT_GAP_WORDS)
    negation: re.Pattern = field(default_factory=lambda: _cues(DEFAULT_NEGATION))
    hypothetical: re.Pattern = field(default_factory=lambda: _cues(DEFAULT_HYPOTHETICAL))
    after: re.Pattern = field(default_factory=lambda: _cues(DEFAULT_AFTER))
    question: re.Pattern = field(default_factory=lambda: _cues(DEFAULT_QUESTION))
    retraction: re.Pattern = field(default_factory=lambda: _cues(DEFAULT_RETRACTION))
    not_places: frozenset[str] = frozenset()

    def positive(self, clause: str) -> str | None:
        """The clause said positively when it retracts something ("i'm not allergic to shellfish
        after all" -> "i'm allergic to shellfish"), else None: the rules then read what it
        stopped being true.  "after all" retracts only beside a negation ("not ... after all"):
        alone it affirms ("i'm vegan after all")."""
        cues = {" ".join(m.group(0).casefold().split()) for m in self.retraction.finditer(clause)}
        if not cues or (cues == {"after all"} and not self.negation.search(clause)):
            return None
        for regex, replacement in _POSITIVE:
            clause = regex.sub(replacement, clause)
        return " ".join(clause.split())


def parse_language(table, fail: Callable[[str, str], LedgerError]) -> Language:
    """The registry's optional [extract] table over the built-in defaults."""
    lang = Language()
    if table is None:
        return lang
    if not isinstance(table, dict):
        raise fail("extract", "must be a table")
    known = {"phrases", "stop_words", "gap_words", "negation", "hypothetical", "after", "question",
             "retraction", "not_places"}
    for key in table:
        if key not in known:
            raise fail(f"extract.{key}", f"unknown field (known: {', '.join(sorted(known))})")
    phrases = table.get("phrases", {})
    if not isinstance(phrases, dict) or not all(isinstance(v, str) for v in phrases.values()):
        raise fail("extract.phrases", "must be a table of name = template")
    lang.phrases.update(phrases)
    for key in ("stop_words", "gap_words", "not_places"):
        words = table.get(key)
        if words is None:
            continue
        if not isinstance(words, list) or not all(isinstance(w, str) and w.strip() for w in words):
            raise fail(f"extract.{key}", "must be a list of words")
        folded = frozenset(" ".join(w.casefold().split()) for w in words)
        attr = {"stop_words": "stop"}.get(key, key)
        setattr(lang, attr, getattr(lang, attr) | folded)
    for key in ("negation", "hypothetical", "after", "question", "retraction"):
        words = table.get(key)
        if words is None:
            continue
        if not isinstance(words, list) or not all(isinstance(w, str) and w.strip() for w in words):
            raise fail(f"extract.{key}", "must be a list of cue words")
        setattr(lang, key, _cues(_DEFAULT_CUES[key] + "|" + "|".join(words)))
    return lang


class _Template:
    """Compiles one template into a head regex, the slot's gap, and a tail regex."""

    def __init__(self, text: str, lang: Language, depth: int = 0):
        self.lang, self.depth = lang, depth
        self.tokens = _TOKEN.findall(text)
        self.i = 0
        self.has_value = False

    def parse(self) -> list:
        items = self._sequence()
        if self.i != len(self.tokens):
            raise ValueError(f"unexpected {self.tokens[self.i]!r}")
        return items

    def _sequence(self) -> list:
        items: list = []
        while self.i < len(self.tokens) and self.tokens[self.i] not in (")", "]", "|"):
            items.append(self._item())
        return items

    def _alternatives(self, close: str) -> list[list]:
        alts = [self._sequence()]
        while self.i < len(self.tokens) and self.tokens[self.i] == "|":
            self.i += 1
            alts.append(self._sequence())
        if self.i >= len(self.tokens) or self.tokens[self.i] != close:
            raise ValueError(f"missing {close!r}")
        self.i += 1
        return alts

    def _item(self):
        token = self.tokens[self.i]
        self.i += 1
        if token in ("(", "["):
            alts = self._alternatives(")" if token == "(" else "]")
            if any(_has_marker(a) for a in alts):
                raise ValueError("{value} and {gap} cannot stand inside ( ) or [ ]")
            return ("alt", alts, token == "[")
        if token.startswith("{"):
            name = token[1:-1]
            if name in ("value", "gap"):
                return (name,)
            if name == "digits":
                return ("regex", r"\d{1,4}")
            if name not in self.lang.phrases:
                raise ValueError(f"unknown phrase {{{name}}}")
            if self.depth > 5:
                raise ValueError(f"phrase {{{name}}} nests too deeply")
            inner = _Template(self.lang.phrases[name], self.lang, self.depth + 1)
            items = inner.parse()
            if _has_marker([items]):
                raise ValueError(f"phrase {{{name}}} cannot hold {{value}} or {{gap}}")
            if len(items) == 1:
                return items[0]
            return ("alt", [items], False)
        return ("word", token)


def _has_marker(alts: list[list]) -> bool:
    for seq in alts:
        for item in seq:
            if item[0] in ("value", "gap") or (item[0] == "alt" and _has_marker(item[1])):
                return True
    return False


def _item_regex(item) -> tuple[str, bool]:
    if item[0] == "word":
        return _literal(item[1]), False
    if item[0] == "regex":
        return item[1], False
    # Longest first: the slot is matched after the regex, which never comes back to try "my two"
    # once "my" has matched and the slot failed on "two huskies".
    alts = sorted((_seq_regex(seq) for seq in item[1]), key=len, reverse=True)
    return "(?:" + "|".join(alts) + ")", item[2]


def _seq_regex(items: list, started: bool = False) -> str:
    """Items joined by whitespace; `started`: the sequence follows a word (each item, optional or
    not, brings its own leading space), as a tail after the value does."""
    out = ""
    for item in items:
        regex, optional = _item_regex(item)
        if not started:
            out += f"(?:{regex}\\s+)?" if optional else regex
            started = not optional
        else:
            out += f"(?:\\s+{regex})?" if optional else f"\\s+{regex}"
    if not started and items:
        raise ValueError("a sequence needs at least one word that is not optional")
    return out


@dataclass(frozen=True)
class Hit:
    start: int
    end: int
    value: str
    rule: str


class Rule:
    """One compiled rule of a predicate; `finditer` yields the values it states in a text.
    (A plain class: the registry's pydantic models hold it as an opaque, already-checked object.)"""

    def __init__(self, id: str, slot: Slot, heads: list[tuple[re.Pattern, bool, re.Pattern | None]],
                 lang: Language, as_list: bool = False, gap: int = 4, guards: tuple[str, ...] = GUARDS,
                 subject: str = "user", negated: bool = False, basis: str = "stated",
                 authors: tuple[str, ...] = ("user",), not_followed_by: frozenset[str] = frozenset(),
                 not_values: frozenset[str] = frozenset(), skip: int = 0, value: str | None = None,
                 not_preceded_by: frozenset[str] = frozenset()):
        self.id, self.slot, self.heads, self.lang = id, slot, heads, lang    # heads: (head, gap, tail)
        self.as_list, self.gap, self.guards = as_list, gap, guards
        self.subject, self.negated, self.basis, self.authors = subject, negated, basis, authors
        self.not_followed_by, self.not_values, self.skip, self.value = not_followed_by, not_values, skip, value
        self.not_preceded_by = not_preceded_by
        # Whether a retracting clause said positively is read by this rule (as a retraction of its
        # value): a rule that states a plain fact, guarded against negation.  Worked out once: the
        # extractor asks it of every rule for every turn.
        self.retracts = not negated and value is None and "negation" in guards

    def __repr__(self) -> str:
        return f"Rule({self.id!r})"

    def finditer(self, text: str, view: TextView | None = None) -> Iterator[Hit]:
        view = view or TextView(text)
        for head, gapped, tail in self.heads:
            for match in head.finditer(text):
                yield from self._from(text, view, match, gapped, tail)

    def retracted(self, view: TextView) -> Iterator[Hit]:
        """The values the text's retracting clauses stop being true, each hit spanning the whole
        clause in the text (so its sentence is the quote)."""
        if not self.retracts:
            return
        for start, end, positive in view.positives(self.lang):
            positive_view = TextView(positive)
            for hit in self.finditer(positive, positive_view):
                yield Hit(start, end, hit.value, self.id)

    def _preceded(self, text: str, pos: int, cue: bool = False) -> bool:
        """The word right before `pos` (the value, or with `cue` the cue words) is one the rule
        may not follow: listed, or before the cue words (with "'s" listed) a possessive: "my dog's
        | name is", "my pets | name is" name someone else."""
        if not self.not_preceded_by:
            return False
        word = _WORD_BEFORE.search(text, max(0, pos - 40), pos)
        if word is None:
            return False
        said = fold_value(word.group(1))
        if said in self.not_preceded_by:
            return True
        return cue and "'s" in self.not_preceded_by and (said.endswith(("'s", "s'")) or (
            len(said) > 3 and said.endswith("s") and said not in self.lang.stop))

    def _from(self, text, view, match, gapped, tail) -> Iterator[Hit]:
        if self._preceded(text, match.start(), cue=True):
            return
        if self.slot is None:                        # a fixed value: the cue says it all
            if not self._guarded(text, view, match.start(), match.end()):
                yield Hit(match.start(), match.end(), self.value, self.id)
            return
        starts = [match.end()]
        if gapped:
            starts += self._gap_starts(text, match.end())
        starts += self._skip_starts(text, match.end())
        for pos in starts:
            filler = gapped and self._word_at(text, pos) in self.lang.gap_words
            if self._preceded(text, pos):
                continue                             # "an avid | runner": a trait, not a job
            hit = self._slot_then_tail(text, pos, tail)
            if hit is None:
                continue
            end, value = hit
            if filler and end <= pos + len(self._word_at(text, pos)):
                continue                             # "the middle of": a filler, not the value
            # (a filler that starts a longer value is kept whole: "south carolina", not "carolina")
            if self._guarded(text, view, match.start(), end):
                return
            yield Hit(match.start(), end, value, self.id)
            if self.as_list and tail is None:
                yield from self._more(text, match.start(), end)
            return

    @staticmethod
    def _word_at(text: str, pos: int) -> str:
        word = _WORD_AT.match(text, pos)
        return word.group().casefold() if word else ""

    def _skip_starts(self, text: str, pos: int) -> list[int]:
        """After up to `skip` words of any kind but a stop word ("a famous | twitch streamer")."""
        out = []
        for _ in range(self.skip):
            word = re.compile(r"([\w'’]+) ").match(text, pos)
            if word is None or word.group(1).casefold() in self.lang.stop:
                break
            pos = word.end()
            out.append(pos)
        return out

    def _gap_starts(self, text: str, pos: int) -> list[int]:
        out = []
        for _ in range(self.gap):
            word = re.compile(r"([\w'’]+)\s+").match(text, pos)
            if word is None or word.group(1).casefold() not in self.lang.gap_words:
                break
            pos = word.end()
            out.append(pos)
        return out

    def _slot_then_tail(self, text: str, pos: int, tail: re.Pattern | None) -> tuple[int, str] | None:
        for found in self.slot.match(text, pos, bounded=tail is None):
            if fold_value(found.value) in self.not_values:
                continue
            if tail is None:
                if self._word_at(text, found.end + 1) in self.not_followed_by:
                    continue                         # "a dog allergy" names no pet
                return found.end, found.value
            after = tail.match(text, found.end)
            if after is not None:
                return after.end(), found.value
        return None

    def _more(self, text: str, start: int, end: int) -> Iterator[Hit]:
        more = re.compile(_LIST_SEP + _LIST_LEAD, re.IGNORECASE)
        for _ in range(20):
            sep = more.match(text, end)
            if sep is None:
                return
            found = next(iter(self.slot.match(text, sep.end(), bounded=True)), None)
            if found is None or fold_value(found.value) in self.not_values:
                return
            end = found.end
            yield Hit(start, end, found.value, self.id)

    def _guarded(self, text: str, view: TextView, start: int, end: int) -> bool:
        """Negated, asked, wished for or put in the future: the clause states no fact."""
        clause_start, clause_end, terminator = view.clause(start, end)
        before = text[clause_start:start]
        said = text[start:end]
        lang = self.lang
        if "negation" in self.guards and (lang.negation.search(before) or lang.negation.search(said)):
            return True
        if "hypothetical" in self.guards and (lang.hypothetical.search(before)
                                              or lang.after.search(text[end:clause_end])):
            return True
        if "question" in self.guards and (terminator == "?" or lang.question.search(before)):
            return True
        return False


class TextView:
    """A text's clause ends, found once: the guards look at the clause around each match."""

    def __init__(self, text: str):
        self.text = text
        self.ends = [(m.start() + len(m.group()) - 1, m.group()[-1]) for m in _CLAUSE_END.finditer(text)]
        self.positions = [p for p, _ in self.ends]
        self._positives: list[tuple[int, int, str]] | None = None

    def positives(self, lang: Language) -> list[tuple[int, int, str]]:
        """(start, end, said positively) of each clause that retracts something, found once."""
        if self._positives is None:
            found, left = [], 0
            for position in [*self.positions, len(self.text)]:
                clause = self.text[left:position]
                positive = lang.positive(clause)
                if positive:
                    found.append((left, position, positive))
                left = position + 1
            self._positives = found
        return self._positives

    def clause(self, start: int, end: int) -> tuple[int, int, str]:
        i = bisect.bisect_left(self.positions, start) - 1
        left = self.positions[i] + 1 if i >= 0 else 0
        j = bisect.bisect_left(self.positions, end)
        if j < len(self.ends):
            return left, self.ends[j][0], self.ends[j][1]
        return left, len(self.text), ""


def compile_rule(entry, where: str, values: dict[str, tuple[str, ...]], lang: Language,
                 fail: Callable[[str, str], LedgerError]) -> Rule:
    """A rule table of the registry (docs/ingestion.md, "The pattern language") compiled."""
    if not isinstance(entry, dict):
        raise fail(where, "must be a table")
    known = {"id", "say", "slot", "list", "gap", "max_words", "guards", "subject", "negated", "basis",
             "authors", "not_followed_by", "not_values", "skip", "value", "indefinite", "not_preceded_by"}
    for key in entry:
        if key not in known:
            raise fail(f"{where}.{key}", f"unknown field (known: {', '.join(sorted(known))})")
    say = entry.get("say")
    if isinstance(say, str):
        say = [say]
    if not isinstance(say, list) or not say or not all(isinstance(s, str) and s.strip() for s in say):
        raise fail(f"{where}.say", "must be a template or a list of templates")
    kind = entry.get("slot", "values" if values else "words")
    if kind not in SLOTS:
        raise fail(f"{where}.slot", f"{kind!r} is not one of {', '.join(SLOTS)}")
    guards = entry.get("guards", list(GUARDS))
    if not isinstance(guards, list) or not set(guards) <= set(GUARDS):
        raise fail(f"{where}.guards", f"must list some of {', '.join(GUARDS)}")
    numbers = {}
    for key, default, low, high in (("gap", 4, 0, 8), ("max_words", 3, 1, 8), ("skip", 0, 0, 4)):
        value = entry.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise fail(f"{where}.{key}", f"must be a whole number from {low} to {high}")
        numbers[key] = value
    lists = {}
    for key in ("not_followed_by", "not_values", "not_preceded_by"):
        words = entry.get(key, [])
        if not isinstance(words, list) or not all(isinstance(w, str) and w.strip() for w in words):
            raise fail(f"{where}.{key}", "must be a list of words")
        lists[key] = frozenset(fold_value(w) for w in words)
    fixed = entry.get("value")
    if fixed is not None and (not isinstance(fixed, str) or not fixed.strip()):
        raise fail(f"{where}.value", "must be the value the rule states")
    if kind == "values" and not values and fixed is None:
        raise fail(f"{where}.slot", "a values slot needs the predicate's values or vocabulary")
    slot = {"values": lambda: vocabulary_slot(values),
            "words": lambda: words_slot(lang.stop, numbers["max_words"], values, entry.get("indefinite") is not False),
            "place": lambda: place_slot(lang.not_places, values),
            "number": number_slot}[kind]() if fixed is None else None
    heads = []
    for template in say:
        try:
            heads.append(_compile_template(template, lang, fixed is not None))
        except (ValueError, re.error) as exc:
            raise fail(f"{where}.say", f"{template!r}: {exc}") from None
    return Rule(id=str(entry.get("id") or where), slot=slot, heads=heads, lang=lang,
                as_list=entry.get("list") is True, gap=numbers["gap"], guards=tuple(guards),
                subject=str(entry.get("subject", "user")), negated=entry.get("negated") is True,
                basis=str(entry.get("basis", "stated")), authors=tuple(entry.get("authors", ["user"])),
                not_followed_by=lists["not_followed_by"], not_values=lists["not_values"], skip=numbers["skip"],
                value=fixed, not_preceded_by=lists["not_preceded_by"])


def _compile_template(template: str, lang: Language, fixed: bool = False
                      ) -> tuple[re.Pattern, bool, re.Pattern | None]:
    items = _Template(template, lang).parse()
    if fixed:
        if any(item[0] in ("value", "gap") for item in items):
            raise ValueError("a rule with a fixed value has no {value} or {gap}")
        return re.compile(r"(?<![\w'’])" + _seq_regex(items) + r"(?![\w'’])", re.IGNORECASE), False, None
    values = [i for i, item in enumerate(items) if item[0] == "value"]
    if len(values) != 1:
        raise ValueError("needs exactly one {value}")
    at = values[0]
    before, after = items[:at], items[at + 1:]
    gapped = bool(before) and before[-1][0] == "gap"
    if gapped:
        before = before[:-1]
    if any(item[0] == "gap" for item in before + after):
        raise ValueError("{gap} stands only right before {value}")
    if not before:
        raise ValueError("needs cue words before {value}")
    head = re.compile(r"(?<![\w'’])" + _seq_regex(before) + r"\s+", re.IGNORECASE)
    tail = re.compile(_seq_regex(after, started=True) + r"(?![\w'’])", re.IGNORECASE) if after else None
    return head, gapped, tail


__all__ = ["GUARDS", "SLOTS", "Hit", "Language", "Rule", "SlotHit", "TextView", "compile_rule",
           "parse_language"]
