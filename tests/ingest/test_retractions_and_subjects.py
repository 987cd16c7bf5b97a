"""The offline extractor reads everyday retractions and keeps others' names and multi-word places
apart (issue 28, item 5): the pattern language's retracting clauses, `not_preceded_by`, and a
gap word that starts a place."""

from __future__ import annotations

import pytest

from factledger.ledger.domain.support import unsupported
from factledger.ledger.ingest.extractor import Context
from factledger.ledger.ingest.patterns import PatternsExtractor
from factledger.ledger.ingest.session import Session, SessionEvent, tail
from factledger.ledger.registry.predicates import default_registry_path, load_registry, parse_registry

REGISTRY = load_registry()


def proposals(text: str, registry=REGISTRY):
    session = Session(id="s", app="a", user="u", events=(
        SessionEvent(id="e1", author="user", said_at="2026-01-01T00:00:00.000000Z", text=text),))
    return PatternsExtractor().extract(tail(session, None), Context("a", "u", registry)).proposals


def said(text: str, registry=REGISTRY) -> set[tuple[str, str, str, bool]]:
    return {(p.subject, p.predicate, p.value.casefold(), p.negated) for p in proposals(text, registry)}


@pytest.mark.parametrize("text, predicate, value", [
    ("I don't have a dog anymore.", "pet", "dog"),
    ("I no longer have a dog.", "pet", "dog"),
    ("i do not have cats any more", "pet", "cat"),
    ("I'm not allergic to shellfish after all.", "allergy", "shellfish"),
    ("I am no longer a vegetarian.", "diet", "vegetarian"),
    ("I gave up being vegan last spring.", "diet", "vegan"),
    ("I quit my job at Globex.", "employer", "Globex"),
    ("i quit being a nurse", "job_title", "nurse"),
    ("We moved away from Pune.", "home_city", "pune"),
    ("I got rid of my tractor.", "owned_product", "tractor"),
    ("I no longer live in south carolina.", "home_city", "south carolina"),
])
def test_a_retracting_clause_retracts_what_it_would_state(text, predicate, value):
    found = said(text)
    assert ("user", predicate, value.casefold(), True) in found, found
    assert not any(p == predicate and not negated for _, p, _, negated in found), found
    for proposal in proposals(text):                   # and the validator's quote check agrees
        assert unsupported(proposal, REGISTRY.resolve(proposal.predicate)) is None, proposal


def test_a_retraction_keeps_its_subject_and_its_clause():
    assert ("user.daughter", "allergy", "peanuts", True) in said(
        "my daughter is not allergic to peanuts anymore")
    found = said("I have a cat but I don't have a dog anymore.")
    assert ("user", "pet", "cat", False) in found and ("user", "pet", "dog", True) in found
    assert ("user", "pet", "cat", True) not in found   # the retraction is the second clause's only


def test_plain_statements_and_questions_are_no_retractions():
    assert said("I have a dog.") == {("user", "pet", "dog", False)}
    assert said("do you still have a dog anymore?") == set()      # a question stays a question
    assert said("i don't want a dog anymore if it barks") == set()  # nor does a wish
    assert said("i quit smoking") == set()


def test_a_rule_of_a_negated_statement_is_not_read_twice():
    found = said("I'm no longer a vegetarian.")
    assert found == {("user", "diet", "vegetarian", True)}


def test_someone_elses_name_is_not_the_users():
    assert said("my dog's name is charlie") == set()
    assert said("my pets name is charlie.") == set()
    assert said("his name is bob") == set()
    assert said("My wife's name is Ana.") == {("user.partner", "name", "ana", False)}
    assert said("my son's name is leo") == {("user.son", "name", "leo", False)}
    assert said("my name is kim") == {("user", "name", "kim", False)}
    assert said("hi , names bill") == {("user", "name", "bill", False)}


def test_a_place_that_starts_with_a_gap_word_is_kept_whole():
    assert said("i live in south carolina") == {("user", "home_city", "south carolina", False)}
    assert said("we live in north dakota now") == {("user", "home_city", "north dakota", False)}
    assert said("i live in the middle of alabama") == {("user", "home_city", "alabama", False)}


def test_a_trait_is_no_job_and_a_vehicle_driven_at_work_is_not_owned():
    assert said("i am an avid runner") == set()
    assert said("i'm a great chef , i love cooking") == set()
    assert said("i am a runner") == {("user", "job_title", "runner", False)}
    assert said("i drive a forklift in a plant") == set()
    assert said("i ride the bus to school") == set()
    assert said("i drive a toyota") == {("user", "owned_product", "toyota", False)}


def test_a_registry_names_its_own_retraction_cues_and_preceding_words():
    extra = b'''
[predicates.snack]
cardinality = "many"
sensitivity = "normal"
kind = "preference"
vocabulary = ["peanuts", "chips"]
[[predicates.snack.rules]]
id = "snack.eat"
say = "i snack on {value}"
not_preceded_by = ["sometimes"]
'''
    raw = default_registry_path().read_bytes().replace(
        b'negation = ["retired", "former", "ex"]',
        b'negation = ["retired", "former", "ex"]\nretraction = ["these days not"]') + extra
    registry = parse_registry(raw)
    assert said("i snack on chips", registry) == {("user", "snack", "chips", False)}
    assert said("sometimes i snack on chips", registry) == set()
    assert said("these days not i snack on chips", registry) == {("user", "snack", "chips", True)}
