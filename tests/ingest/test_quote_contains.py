"""The whole-word search that decides whether a quote states a value (`ledger/domain/support.py:
_contains`) answers as the regex it replaced, `(?<!\\w)VALUE(?!\\w)`, on any text."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from factledger.ledger.domain.support import _contains

# letters, digits and underscores of many scripts, marks, spaces and punctuation, so boundaries vary
ALPHABET = st.sampled_from(list("ab _-.'9٣Ⅻßİı\u0301é中\u00a0")) | st.characters()


def by_regex(haystack: str, needle: str) -> bool:
    return bool(needle) and re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", haystack) is not None


@settings(max_examples=600, deadline=None)
@given(st.text(ALPHABET, max_size=30), st.text(ALPHABET, max_size=4), st.text(ALPHABET, max_size=30))
def test_the_search_answers_as_the_word_boundary_regex(before, needle, after):
    for haystack in (before + needle + after, before + needle + needle + after, before):
        assert _contains(haystack, needle) == by_regex(haystack, needle)


def test_words_inside_words_are_not_found():
    assert _contains("a great meal", "great") and not _contains("a great meal", "eat")
    assert _contains("eat, eat", "eat") and not _contains("eater_eat", "eat")
    assert _contains("INC-4411 is open", "INC-4411") and not _contains("INC-44110", "INC-4411")
