"""What a rule's `{value}` slot accepts: a vocabulary, free words up to a boundary, a place, a number.

A slot is asked "which values start here?" and answers longest first, each with where it ends,
so a rule can try a tail ("a {value} allergy") against each.  Values come out normalised: a
vocabulary word or synonym gives its canonical value ("hair stylist" -> "hairdresser", "dogs" ->
"dog"), a place its spelling in the text title-cased ("new york" -> "New York"), a number digits.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from factledger.ledger.registry.gazetteer import fold, is_place, places_available

_WORD = re.compile(r"[\w'’&+]+(?:-[\w'’&+]+)*")
_INDEFINITE = frozenset(("a", "an", "some", "any", "another"))
_LEADERS = frozenset("a an the my our some his her their".split())
NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}


@dataclass(frozen=True)
class SlotHit:
    end: int
    value: str


class Slot(Protocol):
    def match(self, text: str, pos: int, bounded: bool) -> list[SlotHit]: ...


def fold_value(value: str) -> str:
    return fold(value)


def _run(text: str, pos: int, limit: int) -> list[re.Match]:
    """Up to `limit` words from `pos`, joined by single spaces (punctuation ends the run)."""
    words: list[re.Match] = []
    while len(words) < limit:
        m = _WORD.match(text, pos)
        if m is None:
            break
        words.append(m)
        if not text.startswith(" ", m.end()):
            break
        pos = m.end() + 1
    return words


def _plurals(word: str) -> list[str]:
    if word.endswith("y") and len(word) > 2 and word[-2] not in "aeiou":
        return [word[:-1] + "ies"]
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return [word + "es"]
    if word.endswith("fe"):
        return [word + "s", word[:-2] + "ves"]
    return [word + "s"]


class VocabularySlot:
    """One of the predicate's values, said as the value itself, a synonym, or a plural of either."""

    def __init__(self, values: dict[str, tuple[str, ...]]):
        surface: dict[str, str] = {}
        for canonical, words in values.items():
            for word in (canonical, *words):
                surface.setdefault(fold(word), canonical)
        for key, canonical in list(surface.items()):
            head, _, last = key.rpartition(" ")
            for plural in _plurals(last):
                surface.setdefault(f"{head} {plural}".strip(), canonical)
        self.surface = surface
        self.longest = max((k.count(" ") + 1 for k in surface), default=1)

    def match(self, text: str, pos: int, bounded: bool) -> list[SlotHit]:
        words = _run(text, pos, self.longest)
        hits = []
        for n in range(len(words), 0, -1):
            key = fold(text[pos:words[n - 1].end()])
            if key in self.surface:
                hits.append(SlotHit(words[n - 1].end(), self.surface[key]))
        return hits


class WordsSlot:
    """Free words, from after any article up to a boundary: punctuation, a stop word, or the end.
    More than `max_words` words without a boundary is no value at all (it ran on)."""

    def __init__(self, stop: frozenset[str], max_words: int, values: dict[str, tuple[str, ...]],
                 indefinite: bool = True):
        self.stop, self.max_words, self.indefinite = stop, max_words, indefinite
        self.synonyms = VocabularySlot(values).surface if values else {}

    def match(self, text: str, pos: int, bounded: bool) -> list[SlotHit]:
        words = _run(text, pos, self.max_words + 3)
        if not self.indefinite and words and words[0].group().casefold() in _INDEFINITE:
            return []                    # "a bookstore" names no organisation, "burger king" does
        while words and words[0].group().casefold() in _LEADERS:
            words = words[1:]
        kept: list[re.Match] = []
        for word in words:
            if word.group().casefold() in self.stop:
                break
            kept.append(word)
        if not kept:
            return []
        if bounded:
            if len(kept) > self.max_words:
                return []
            return [self._hit(text, kept)]
        return [self._hit(text, kept[:n]) for n in range(min(len(kept), self.max_words), 0, -1)]

    def _hit(self, text: str, words: list[re.Match]) -> SlotHit:
        said = text[words[0].start():words[-1].end()]
        return SlotHit(words[-1].end(), self.synonyms.get(fold(said), said))


class PlaceSlot:
    """A place of the gazetteer, with or without capitals; without the gazetteer installed, a run
    of capitalised words (the only way left to tell a place from any other word)."""

    def __init__(self, not_places: Iterable[str], values: dict[str, tuple[str, ...]] | None = None):
        self.not_places = frozenset(fold(p) for p in not_places)
        # the predicate's own names for places ("cali" -> california, "the us" -> united states)
        self.synonyms = VocabularySlot(values) if values else None

    def match(self, text: str, pos: int, bounded: bool) -> list[SlotHit]:
        words = _run(text, pos, 4)
        hits = []
        if self.synonyms is not None:
            hits = [SlotHit(h.end, h.value.title()) for h in self.synonyms.match(text, pos, bounded)]
        if not places_available():
            capitalised = []
            for word in words[:3]:
                if not word.group()[:1].isupper():
                    break
                capitalised.append(word)
            return hits + [SlotHit(capitalised[n - 1].end(), text[pos:capitalised[n - 1].end()])
                           for n in range(len(capitalised), 0, -1)]
        for n in range(len(words), 0, -1):
            said = text[pos:words[n - 1].end()]
            if fold(said) in self.not_places or not is_place(said):
                continue
            hits.append(SlotHit(words[n - 1].end(), said if not said.islower() else said.title()))
        return hits


class NumberSlot:
    """Digits, or a number word up to twelve (given as digits)."""

    def match(self, text: str, pos: int, bounded: bool) -> list[SlotHit]:
        word = _WORD.match(text, pos)
        if word is None:
            return []
        said = word.group().casefold()
        if said.isdigit() and len(said) <= 4:
            return [SlotHit(word.end(), said)]
        if said in NUMBER_WORDS:
            return [SlotHit(word.end(), NUMBER_WORDS[said])]
        return []


def vocabulary_slot(values: dict[str, tuple[str, ...]]) -> Slot:
    return VocabularySlot(values)


def words_slot(stop: frozenset[str], max_words: int, values: dict[str, tuple[str, ...]],
               indefinite: bool = True) -> Slot:
    return WordsSlot(stop, max_words, values, indefinite)


def place_slot(not_places: Iterable[str], values: dict[str, tuple[str, ...]] | None = None) -> Slot:
    return PlaceSlot(not_places, values)


def number_slot() -> Slot:
    return NumberSlot()
