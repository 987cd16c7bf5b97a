"""The predicate registry: the default file, aliases, and errors that name file, predicate, field."""

from __future__ import annotations

import pytest

from factledger.ledger import LedgerError
from factledger.ledger.registry.predicates import load_registry, parse_registry


def test_default_registry_covers_the_design_examples():
    reg = load_registry()
    assert 20 <= len(reg) <= 40
    for name in ("diet", "home_city", "allergy", "owned_product", "likes_spicy", "deploy.region",
                 "plan", "medication_dose", "blood_pressure", "name", "preferred_language"):
        assert reg.resolve(name) is not None, name
    assert reg.resolve("blood_pressure").cardinality == "series"
    assert reg.resolve("allergy").cardinality == "many"
    assert reg.resolve("medication_dose").sensitivity == "health"
    assert len(reg.sha256) == 64


@pytest.mark.parametrize("alias,canonical", [("city", "home_city"), ("Location", "home_city"),
                                             ("partner-name", "name"), ("bp", "blood_pressure")])
def test_aliases_resolve_to_their_predicate(alias, canonical):
    assert load_registry().resolve(alias).name == canonical


def test_unknown_predicate_resolves_to_nothing():
    assert load_registry().resolve("must_approve_refunds") is None


@pytest.mark.parametrize("body,predicate,field", [
    ('[predicates.diet]\ncardinality = "several"\n', "diet", "cardinality"),
    ('[predicates.diet]\nsensitivity = "normal"\n', "diet", "cardinality"),
    ('[predicates.diet]\ncardinality = "one"\nsensitivity = "secret"\n', "diet", "sensitivity"),
    ('[predicates.diet]\ncardinality = "one"\nkind = "mood"\n', "diet", "kind"),
    ('[predicates.diet]\ncardinality = "one"\naliases = "x"\n', "diet", "aliases"),
    ('[predicates.diet]\ncardinality = "one"\nretention_days = -3\n', "diet", "retention_days"),
    ('[predicates.diet]\ncardinality = "one"\ncolour = "red"\n', "diet", "colour"),
    ('[predicates.diet]\ncardinality = "one"\npatterns = ["(unclosed"]\n', "diet", "patterns[0]"),
    ('[predicates.diet]\ncardinality = "one"\npatterns = ["no group"]\n', "diet", "patterns[0]"),
    ('[predicates.Diet]\ncardinality = "one"\n', "Diet", "name"),
    ('[predicates.a]\ncardinality = "one"\naliases = ["b"]\n[predicates.b]\ncardinality = "one"\n',
     "a", "aliases"),
])
def test_bad_registry_names_file_predicate_and_field(tmp_path, body, predicate, field):
    path = tmp_path / "reg.toml"
    path.write_text(body)
    with pytest.raises(LedgerError) as err:
        load_registry(path)
    message = str(err.value)
    assert str(path) in message and f"predicate {predicate}" in message and f"field {field}" in message


def test_unparseable_registry_names_the_file(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text("[predicates.diet\n")
    with pytest.raises(LedgerError, match="broken.toml"):
        load_registry(path)


def test_missing_registry_file_is_a_clear_error(tmp_path):
    with pytest.raises(LedgerError, match="cannot read"):
        load_registry(tmp_path / "absent.toml")


def test_registry_hash_changes_with_content():
    a = parse_registry(b'[predicates.diet]\ncardinality = "one"\n')
    b = parse_registry(b'[predicates.diet]\ncardinality = "many"\n')
    assert a.sha256 != b.sha256
