"""Turning text into index terms, one way for stored facts and for queries.

Recall matches a query against facts by the terms they share, so both sides must be cut the same
way: NFKC and case folding (one term however it was typed), words split on anything that is not
a letter or digit (so `home_city` is `home city` and `user.daughter` is `user daughter`), a short
English stop-word list (so "where do I live" matches on `live`, not on `I`), and a light suffix
stemmer (`eats` and `eat`, `lives` and `live`, `allergies` and `allergy`).

Terms are plain lowercase word characters, so a term can be put inside double quotes in an FTS5
MATCH expression without any escaping: no query text ever reaches SQLite as syntax.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_WORD = re.compile(r"[^\W_]+", re.UNICODE)

STOP_WORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has
have having he her here hers herself him himself his how i if in into is it its itself just me
more most my myself no nor not now of off on once only or other our ours ourselves out over own
same she should so some such than that the their theirs them themselves then there these they
this those through to too under until up very was we were what when where which while who whom
why will with would you your yours yourself yourselves i'm im ive id ill youre dont doesnt didnt
tell know please remember recall anything something thing things us let lets get got also
subject user
""".split())


class TextMemo:
    """The texts one ledger has cut and the words it has stemmed (subjects, predicates and most
    values recur across facts, so a rebuild or a batch of observations cuts the same texts over
    and over).  Held by the ledger, not the process (`projections.recallcache.KeptScopes.texts`): the
    texts are fact values and quotes, which a forget drops with `clear`, and one ledger's forget
    leaves another's memo alone."""

    TEXTS = 16384
    WORDS = 65536

    def __init__(self) -> None:
        self.texts: dict[str, tuple[str, ...]] = {}
        self.words: dict[str, str] = {}

    def clear(self) -> None:
        self.texts.clear()
        self.words.clear()


_MEMO: ContextVar[TextMemo | None] = ContextVar("factledger_text_memo", default=None)


@contextmanager
def remembering(memo: TextMemo) -> Iterator[None]:
    """Within this block, texts are cut (and words stemmed) once, into `memo`; outside any such
    block nothing is memoised."""
    token = _MEMO.set(memo)
    try:
        yield
    finally:
        _MEMO.reset(token)


def stem(word: str) -> str:
    memo = _MEMO.get()
    return _stem(word) if memo is None else _stemmed(word, memo.words, memo.WORDS)


def _stemmed(word: str, known: dict[str, str], most: int) -> str:
    """`word` stemmed, from `known` (a memo's words) when it is there."""
    found = known.get(word)
    if found is None:
        if len(known) >= most:
            known.clear()
        found = known[word] = _stem(word)
    return found


def _stem(word: str) -> str:
    """A deliberately small suffix stemmer: enough to join plural, -ing and -ed forms.

    `live`, `lives`, `lived`, `living` all become `liv`; `allergies` and `allergy` both
    `allergy`; `eats` and `eating` both `eat`.  Queries and facts go through the same function,
    so an odd stem costs nothing as long as both sides agree.
    """
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("ing") and len(word) >= 6:
        word = _undouble(word[:-3])
    elif word.endswith("ed") and len(word) >= 5:
        word = _undouble(word[:-2])
    elif word.endswith(("ches", "shes", "xes", "zes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


def _undouble(base: str) -> str:
    """running -> run, planned -> plan (but not fill -> fil)."""
    if len(base) > 2 and base[-1] == base[-2] and base[-1] not in "lsz":
        return base[:-1]
    return base


def terms(text: str | None) -> list[str]:
    """The index terms of a text, in order, stop words dropped (repeats kept: they are tf)."""
    if not text:
        return []
    return list(_terms(text))


def _terms(text: str) -> tuple[str, ...]:
    memo = _MEMO.get()
    if memo is None:
        return _cut(text)
    found = memo.texts.get(text)
    if found is None:
        if len(memo.texts) >= memo.TEXTS:
            memo.texts.clear()
        found = memo.texts[text] = _cut(text)
    return found


def _cut(text: str) -> tuple[str, ...]:
    folded = unicodedata.normalize("NFKC", text).casefold().replace("'", "").replace("\u2019", "")
    words = [word for word in _WORD.findall(folded) if word not in STOP_WORDS]
    memo = _MEMO.get()                    # looked up once per text, not once per word
    if memo is None:
        return tuple(_stem(word) for word in words)
    known, most = memo.words, memo.WORDS           # a stem is never empty: `or` means "not kept"
    return tuple(known.get(word) or _stemmed(word, known, most) for word in words)


def term_counts(text: str | None) -> Counter:
    return Counter(terms(text))


def document_terms(subject: str, predicate: str, value: str, quote: str) -> str:
    """The terms a stored fact is found by, space separated (the index's `terms` column)."""
    return " ".join(terms(subject) + terms(predicate) + terms(value) + terms(quote))


_APART = "\x00"                                   # between two documents cut together: no word holds it
_WORD_OR_APART = re.compile(r"[^\W_]+|\x00", re.UNICODE)
# For ASCII text, what `_WORD_OR_APART` finds is what is left after every byte but a letter, a
# digit and NUL is made a space, NUL spaced apart, and the text split on spaces (a third of the time).
_ASCII_WORDS = bytes(b if chr(b).isalnum() or b == 0 else 32 for b in range(128)) + bytes([32] * 128)


def document_terms_many(documents: list[tuple[str, str, str, str]]) -> list[str]:
    """`document_terms` of each (subject, predicate, value, quote), cut in one pass: the texts
    joined (a space within a document, NUL between two; both are word boundaries that neither
    NFKC nor case folding join to a neighbour), normalised, folded and split once, each word
    looked up once.  The same terms as one `document_terms` a document (tests/domain); a text
    that holds a NUL, or is not a text, is cut on its own."""
    if not documents:
        return []
    if not all(type(text) is str for document in documents for text in document):
        return [document_terms(*document) for document in documents]
    joined = _APART.join(" ".join(document) for document in documents)
    if joined.count(_APART) != len(documents) - 1:
        return [document_terms(*document) for document in documents]
    folded = unicodedata.normalize("NFKC", joined).casefold().replace("'", "").replace("\u2019", "")
    memo = _MEMO.get()
    known, most = (memo.words, memo.WORDS) if memo is not None else ({}, 1 << 62)
    # NUL is kept as a word of its own (it stems to itself): the documents' terms split on it
    if folded.isascii():
        words = folded.encode("ascii").translate(_ASCII_WORDS).decode("ascii").replace(_APART, " \x00 ").split()
    else:
        words = _WORD_OR_APART.findall(folded)
    kept = [known.get(word) or _stemmed(word, known, most) for word in words if word not in STOP_WORDS]
    return [part.strip(" ") for part in " ".join(kept).split(_APART)]
