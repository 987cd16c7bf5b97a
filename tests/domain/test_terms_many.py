"""`document_terms_many` (a rebuild's texts cut in one pass) against `document_terms` one by one."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from factledger.ledger.domain.textindex import TextMemo, document_terms, document_terms_many, remembering

# any text, with the characters that could join or split words at a boundary made likely:
# combining marks, apostrophes, underscores, NUL, a no-break space, letters NFKC or folding changes
text = st.text(st.one_of(st.characters(), st.sampled_from(
    ["\u0301", "\u0308", "'", "\u2019", "_", "\x00", "\u00a0", "\u1100", "\u1161", "ß", "ﬁ", "Σ", "İ", " ", "\n",
     "a", "b", "s", "g", "1"])), max_size=12)
# ASCII alone (cut by a byte table, not the regular expression), control characters included
ascii_text = st.text(st.one_of(st.characters(max_codepoint=127), st.sampled_from(["'", "_", " ", "g", "s", "\x00"])),
                     max_size=12)
documents = st.one_of(st.lists(st.tuples(text, text, text, text), max_size=6),
                      st.lists(st.tuples(ascii_text, ascii_text, ascii_text, ascii_text), max_size=6))


@settings(max_examples=400, deadline=None)
@given(documents, st.booleans())
def test_cut_together_is_cut_one_by_one(docs, memo):
    if memo:
        with remembering(TextMemo()):
            assert document_terms_many(docs) == [document_terms(*d) for d in docs]
    else:
        assert document_terms_many(docs) == [document_terms(*d) for d in docs]


def test_the_bench_shape():
    docs = [("user", "pet", "pet 169430", "I have pet 169430"), ("user", "diet", "Vegan", "I'm eating vegan dishes"),
            ("user.partner", "home_city", "", "")]
    assert document_terms_many(docs) == [document_terms(*d) for d in docs]
