"""The write path's text shortcuts answer as the forms they skip, on any text: `plain_typography`
(ASCII text returned as it is) as NFC plus the typographic table, `value_key` (a value with no
word ending in a digit before another word skips the number-and-unit rule) as the rule applied,
and `has_substance` (it stops counting at the minimum) as the count."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from factledger.ledger.domain.candidate import value_key
from factledger.ledger.domain.support import MIN_QUOTE_CHARS, has_substance, plain_typography

TYPOGRAPHIC = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u00a0": " "})
ALPHABET = st.sampled_from(list("ab 25mg_-.'\u2018\u2019\u201c\u201d\u00a0\u0301é٣ İ\t\n")) | st.characters()


@settings(max_examples=600, deadline=None)
@given(st.text(ALPHABET, max_size=40))
def test_plain_typography_is_nfc_and_the_table(text):
    assert plain_typography(text) == unicodedata.normalize("NFC", text).translate(TYPOGRAPHIC)


@settings(max_examples=600, deadline=None)
@given(st.text(ALPHABET, max_size=20))
def test_value_key_is_casefold_spacing_and_the_number_unit_rule(value):
    folded = " ".join(value.casefold().split())
    assert value_key(value) == re.sub(r"(\d) (?=[^\W\d])", r"\1", folded)


@settings(max_examples=600, deadline=None)
@given(st.text(ALPHABET, max_size=12))
def test_substance_is_the_count_of_letters_and_digits(quote):
    assert has_substance(quote) == (sum(ch.isalnum() for ch in quote) >= MIN_QUOTE_CHARS)


def test_the_shortcuts_on_examples():
    assert plain_typography("I\u2019m in \u201cPune\u201d") == "I'm in \"Pune\""
    assert plain_typography("plain ascii") == "plain ascii"
    assert value_key("25 mg") == "25mg" and value_key("Vegan") == "vegan"
    assert value_key("1 2 a 3 b  9 ٣ x") == "1 2a 3b 9 ٣x"
    assert value_key("Household_size  772246") == "household_size 772246" and value_key(" ") == ""
    assert not has_substance("a.b") and has_substance("ab1")
