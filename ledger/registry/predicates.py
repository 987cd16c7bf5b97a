"""The predicate registry: which keys exist, how they behave, and how drifted names map onto them.

A checked-in TOML file is the single source of truth for predicates: unknown predicates are held
for review, never invented.  The file's sha256 travels in every decision event, so an auditor can
tell which registry a decision was taken under.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import os
import re
import tomllib
from dataclasses import field
from importlib import resources
from pathlib import Path

from pydantic import ConfigDict
from pydantic.dataclasses import dataclass

from factledger.ledger.errors import LedgerError
from factledger.ledger.registry.kinds import (
    DEFAULT_HEALTH_WORDS,
    DEFAULT_KINDS,
    KindSpec,
    check_kind_table,
    higher,
    open_key_name,
    words_of,
)
from factledger.ledger.registry.rules import Language, Rule, compile_rule, parse_language
from factledger.ledger.vocabulary.booleans import NotABoolean, strict_bool
from factledger.ledger.vocabulary.files import read_regular
from factledger.ledger.vocabulary.words import (
    AUTHORS,
    BASES,
    CARDINALITIES,
    SENSITIVITIES,
    Author,
    Basis,
    Cardinality,
    Sensitivity,
)

# The registry's models are pydantic dataclasses: validated when built (a spec holds only the
# registry's words), positional like any dataclass, and as cheap to read as one.
_MODEL = ConfigDict(arbitrary_types_allowed=True)

# How long a fact of each sensitivity may go unconfirmed before recall asks the model to confirm
# it with the user (a predicate's `confirm_after_days` overrides it): a stale allergy or dose
# does harm a stale favourite cuisine does not (docs/recall.md, "Age").
CONFIRM_AFTER_DAYS = {"normal": 365, "personal": 365, "health": 180}
KINDS = tuple(DEFAULT_KINDS)            # a registry's [kinds.NAME] tables may add more
NORMALISERS = ("none", "lower", "title")
MAX_REGISTRY_BYTES = 16 * 1024 * 1024
NAME_RE = re.compile(r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*")          # whole-string: fullmatch


@dataclass(frozen=True, config=_MODEL)
class Pattern:
    """One offline-extractor rule: a regular expression with a `value` group, or a fixed value."""

    regex: re.Pattern
    value: str | None = None
    id: str = ""
    subject: str = "user"
    negated: bool = False
    basis: Basis = "stated"
    authors: tuple[Author, ...] = ("user",)


@dataclass(frozen=True, config=_MODEL)
class PredicateSpec:
    name: str
    cardinality: Cardinality
    sensitivity: Sensitivity
    kind: str
    aliases: tuple[str, ...] = ()
    description: str = ""
    retention_days: int | None = None
    normalise: str = "none"
    confirm_after_days: int | None = None      # None: CONFIRM_AFTER_DAYS by sensitivity
    patterns: tuple[Pattern, ...] = field(default=(), compare=False)
    # value -> words that state it, for the validator's check that a quote supports a value
    values: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False)
    # the closed list of values, when the registry gives one (`vocabulary`): a reviewer's accept
    # of a held candidate under this predicate must name one of them (or a synonym in `values`)
    vocabulary: tuple[str, ...] = field(default=(), compare=False)
    # predicates whose open fact with an equal value contradicts this one's (docs/semantic.md)
    contradicts: tuple[str, ...] = ()
    # the pattern language's rules (ledger/registry/rules.py), compiled once when the registry is loaded
    rules: tuple[Rule, ...] = field(default=(), compare=False)
    # an open key (ledger/registry/kinds.py): a candidate's own dotted key under its kind's rules
    open: bool = False
    # the serving threshold of its facts (None: the ledger's, `confidence.SERVING_THRESHOLD`)
    min_confidence: float | None = None
    # an event: its said date is its effective date (recall renders it as the date it happened)
    dated: bool = False

    @property
    def confirm_after(self) -> int:
        """Days a fact of this predicate may go unconfirmed before recall asks to confirm it."""
        if self.confirm_after_days is not None:
            return self.confirm_after_days
        return CONFIRM_AFTER_DAYS[self.sensitivity]

    @property
    def extractable(self) -> bool:
        """Does the offline extractor have anything to say about this predicate?"""
        return bool(self.patterns or self.rules)

    def normalise_value(self, value: str) -> str:
        if self.normalise == "lower":
            return value.lower()
        if self.normalise == "title":
            return value.title()
        return value


@dataclass(frozen=True, config=_MODEL)
class Registry:
    predicates: dict[str, PredicateSpec]
    aliases: dict[str, str]
    sha256: str
    source: str
    kinds: dict[str, KindSpec] = field(default_factory=lambda: dict(DEFAULT_KINDS))
    health_words: frozenset[str] = frozenset(DEFAULT_HEALTH_WORDS)
    serve_retention_days: int | None = None     # `[serves] retention_days`: serve records kept this long

    def resolve(self, name: str) -> PredicateSpec | None:
        """The spec for a predicate or one of its aliases (case and separators forgiven)."""
        key = _fold_name(name)
        canonical = self.aliases.get(key, key)
        return self.predicates.get(canonical)

    def spec_for(self, name: str, kind: str | None = None, sensitivity: str | None = None,
                 texts: tuple[str, ...] = ()) -> PredicateSpec | None:
        """The rules a candidate for `name` is decided under: the registry's predicate (by name or
        alias) whatever kind is named; else, with a `kind` the registry defines, an open key of
        that kind (ledger/registry/kinds.py); else None (held as an unknown predicate).  An open
        key's sensitivity is the kind's default, raised by `sensitivity` (what the candidate asks
        for, never lower) and raised to health by a health word in the key or in `texts`."""
        spec = self.resolve(name)
        if spec is not None or kind is None:
            return spec
        kind_spec = self.kinds.get(kind)
        key = open_key_name(name)
        if kind_spec is None or key is None:
            return None
        level = higher(kind_spec.sensitivity, sensitivity)
        if level != "health" and words_of(key, *texts) & self.health_words:
            level = "health"
        return PredicateSpec(
            name=key, cardinality=kind_spec.cardinality, sensitivity=level, kind=kind_spec.name,
            retention_days=kind_spec.retention_days, confirm_after_days=kind_spec.confirm_after_days,
            open=True, min_confidence=kind_spec.min_confidence, dated=kind_spec.dated,
            description=kind_spec.description)

    def kind_of(self, kind: str) -> KindSpec | None:
        return self.kinds.get(kind)

    def __len__(self) -> int:
        return len(self.predicates)

    def close_matches(self, name: str, n: int = 3) -> list[str]:
        """Predicates whose name or alias is spelled like `name` (difflib), for "did you mean"."""
        key = _fold_name(name)
        spelled = {p: p for p in self.predicates} | {alias: canon for alias, canon in self.aliases.items()}
        found = difflib.get_close_matches(key, list(spelled), n=n * 2, cutoff=0.6)
        out: list[str] = []
        for match in found:
            if spelled[match] not in out:
                out.append(spelled[match])
        return out[:n]

    def unknown(self, name: str) -> LedgerError:
        """The error for a predicate the registry does not know, naming the close matches."""
        matches = self.close_matches(name)
        hint = f"; did you mean {', '.join(matches)}?" if matches else " (`factledger predicates` lists them)"
        return LedgerError(f"unknown predicate {name!r} (not in the registry){hint}")


_NAME_SEPARATORS = re.compile(r"[\s\-]+")


@functools.lru_cache(maxsize=4096)
def _fold_name(name: str) -> str:
    """A predicate name with case and separators forgiven; kept (it is pure), as every observed
    candidate resolves its predicate more than once."""
    return _NAME_SEPARATORS.sub("_", name.strip().lower())


def default_registry_path() -> Path:
    return Path(str(resources.files("factledger.ledger") / "data" / "default_registry.toml"))


def load_registry(path: str | os.PathLike | None = None) -> Registry:
    """Load the registry named by `path`, else FACTLEDGER_REGISTRY, else the packaged default."""
    chosen = path or os.environ.get("FACTLEDGER_REGISTRY") or default_registry_path()
    source = str(chosen)
    try:
        raw = read_regular(chosen, MAX_REGISTRY_BYTES)
    except LedgerError as exc:
        raise LedgerError(f"registry {exc}") from None
    return parse_registry(raw, source)


def parse_registry(raw: bytes, source: str = "<registry>") -> Registry:
    """The registry in `raw`.  Compiling its rules takes tens of milliseconds and every ledger
    opened loads the registry, so the same bytes from the same source parse once per process (a
    registry is never changed once built)."""
    return _parse_cached(bytes(raw), source)


@functools.lru_cache(maxsize=16)
def _parse_cached(raw: bytes, source: str) -> Registry:
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise LedgerError(f"registry {source}: not valid TOML ({exc})") from None
    except RecursionError:
        raise LedgerError(f"registry {source}: not valid TOML (nested too deeply)") from None
    table = data.get("predicates")
    if not isinstance(table, dict) or not table:
        raise LedgerError(f"registry {source}: needs a [predicates.NAME] table for each predicate")
    language = parse_language(data.get("extract"), lambda f, why: LedgerError(
        f"registry {source}: field {f}: {why}"))
    kinds = _parse_kinds(source, data.get("kinds", {}))
    predicates: dict[str, PredicateSpec] = {}
    aliases: dict[str, str] = {}
    for name, body in table.items():
        spec = _parse_predicate(source, name, body, language, tuple(kinds))
        predicates[name] = spec
    for spec in predicates.values():
        for alias in spec.aliases:
            key = _fold_name(alias)
            if key in predicates or aliases.get(key, spec.name) != spec.name:
                raise LedgerError(
                    f"registry {source}: predicate {spec.name}: field aliases: "
                    f"{alias!r} already names another predicate"
                )
            aliases[key] = spec.name
    return Registry(predicates, aliases, hashlib.sha256(raw).hexdigest(), source, kinds,
                    _health_words(source, data.get("open_keys", {}), predicates, aliases),
                    _serve_retention(source, data.get("serves", {})))


def _serve_retention(source: str, table) -> int | None:
    """`[serves] retention_days`: how long a serve record (docs/audit.md) is kept before `retain`
    expires it; none by default (kept as long as the log)."""
    if not isinstance(table, dict) or set(table) - {"retention_days"}:
        raise LedgerError(f"registry {source}: serves takes only retention_days")
    days = table.get("retention_days")
    if days is not None and (isinstance(days, bool) or not isinstance(days, int) or days <= 0):
        raise LedgerError(f"registry {source}: serves: field retention_days: must be a positive number of days")
    return days


def _parse_kinds(source: str, table) -> dict[str, KindSpec]:
    """The built-in kinds, each overridden or joined by a `[kinds.NAME]` table of the registry."""
    if not isinstance(table, dict):
        raise LedgerError(f"registry {source}: kinds must be tables ([kinds.NAME])")
    kinds = dict(DEFAULT_KINDS)
    for name, body in table.items():
        if not isinstance(name, str) or not NAME_RE.fullmatch(name) or "." in name:
            raise LedgerError(f"registry {source}: kind {name!r}: use lower-case words joined by _")
        kinds[name] = check_kind_table(name, body, lambda f, why, n=name: LedgerError(
            f"registry {source}: kind {n}: field {f}: {why}"))
    return kinds


def _health_words(source: str, table, predicates: dict[str, PredicateSpec],
                  aliases: dict[str, str]) -> frozenset[str]:
    """Words that make an open key health data: the built-in list, `[open_keys] health_words`, and
    the registry's health predicates' names, aliases and values (one-word values only: "type 2
    diabetes" adds `diabetes` through its own entry, never `type`)."""
    if not isinstance(table, dict) or set(table) - {"health_words"}:
        raise LedgerError(f"registry {source}: open_keys takes only health_words")
    extra = table.get("health_words", [])
    if not isinstance(extra, list) or not all(isinstance(w, str) and w.strip() for w in extra):
        raise LedgerError(f"registry {source}: open_keys: field health_words: must be a list of words")
    words = set(DEFAULT_HEALTH_WORDS) | {w.strip().casefold() for w in extra}
    health = {name for name, spec in predicates.items() if spec.sensitivity == "health"}
    for name in health:
        words |= {part for part in re.split(r"[._]", name) if len(part) > 3}
        words |= {value for value in predicates[name].values if " " not in value and len(value) > 3}
    words |= {alias for alias, name in aliases.items() if name in health and "_" not in alias and len(alias) > 3}
    return frozenset(words)


def _parse_predicate(source: str, name: str, body, language: Language,
                     kinds: tuple[str, ...] = KINDS) -> PredicateSpec:
    def fail(fieldname: str, why: str) -> LedgerError:
        return LedgerError(f"registry {source}: predicate {name}: field {fieldname}: {why}")

    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise fail("name", "use lower-case words joined by _ or .")
    if not isinstance(body, dict):
        raise fail("(table)", "must be a table")
    known = {"cardinality", "sensitivity", "kind", "aliases", "description", "retention_days",
             "normalise", "patterns", "values", "vocabulary", "rules", "contradicts",
             "confirm_after_days"}
    for key in body:
        if key not in known:
            raise fail(key, f"unknown field (known: {', '.join(sorted(known))})")

    def choice(fieldname: str, options: tuple[str, ...], default: str | None = None) -> str:
        value = body.get(fieldname, default)
        if value is None:
            raise fail(fieldname, "is required")
        if value not in options:
            raise fail(fieldname, f"{value!r} is not one of {', '.join(options)}")
        return value

    aliases = body.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) and a.strip() for a in aliases):
        raise fail("aliases", "must be a list of names")
    retention = body.get("retention_days")
    if retention is not None and (isinstance(retention, bool) or not isinstance(retention, int)
                                  or retention <= 0):
        raise fail("retention_days", "must be a positive whole number of days")
    confirm_after = body.get("confirm_after_days")
    if confirm_after is not None and (isinstance(confirm_after, bool) or not isinstance(confirm_after, int)
                                      or confirm_after <= 0):
        raise fail("confirm_after_days", "must be a positive whole number of days")
    description = body.get("description", "")
    if not isinstance(description, str):
        raise fail("description", "must be text")
    patterns = body.get("patterns", [])
    if not isinstance(patterns, list):
        raise fail("patterns", "must be a list")
    values = body.get("values", {})
    if not isinstance(values, dict) or not all(
            isinstance(words, list) and all(isinstance(w, str) and w.strip() for w in words)
            for words in values.values()):
        raise fail("values", "must be a table of value = [words that state it]")
    vocabulary = body.get("vocabulary", [])
    if not isinstance(vocabulary, list) or not all(isinstance(w, str) and w.strip() for w in vocabulary):
        raise fail("vocabulary", "must be a list of values")
    folded = {" ".join(w.casefold().split()): () for w in vocabulary}
    folded.update({" ".join(k.casefold().split()): tuple(v) for k, v in values.items()})
    rules = body.get("rules", [])
    if not isinstance(rules, list):
        raise fail("rules", "must be a list of rule tables ([[predicates.NAME.rules]])")
    contradicts = body.get("contradicts", [])
    if not isinstance(contradicts, list) or not all(isinstance(c, str) and NAME_RE.fullmatch(c) for c in contradicts):
        raise fail("contradicts", "must be a list of predicate names")
    return PredicateSpec(
        name=name,
        cardinality=choice("cardinality", CARDINALITIES),
        sensitivity=choice("sensitivity", SENSITIVITIES, "normal"),
        kind=choice("kind", kinds, "fact"),
        aliases=tuple(aliases),
        description=description,
        retention_days=retention,
        confirm_after_days=confirm_after,
        normalise=choice("normalise", NORMALISERS, "none"),
        patterns=tuple(_parse_pattern(fail, i, p, f"{name}.patterns[{i}]") for i, p in enumerate(patterns)),
        values=folded,
        vocabulary=tuple(folded) if vocabulary else (),
        contradicts=tuple(contradicts),
        rules=tuple(_parse_rule(fail, name, i, r, folded, language) for i, r in enumerate(rules)),
    )


def _parse_rule(fail, name: str, index: int, entry, values: dict, language: Language) -> Rule:
    rule = compile_rule(entry, f"rules[{index}]", values, language, fail)
    if not set(rule.authors) <= set(AUTHORS):
        raise fail(f"rules[{index}].authors", "must list user, agent, tool or document")
    if rule.basis not in BASES:
        raise fail(f"rules[{index}].basis", f"{rule.basis!r} is not stated, inferred or verified")
    if rule.id == f"rules[{index}]":
        rule.id = f"{name}.rules[{index}]"
    return rule


def _parse_pattern(fail, index: int, entry, pattern_id: str = "") -> Pattern:
    where = f"patterns[{index}]"
    if isinstance(entry, str):
        entry = {"regex": entry}
    if not isinstance(entry, dict) or not isinstance(entry.get("regex"), str):
        raise fail(where, "must be a regex string or a table with a regex")
    try:
        regex = re.compile(entry["regex"], re.IGNORECASE)
    except re.error as exc:
        raise fail(where, f"bad regular expression ({exc})") from None
    value = entry.get("value")
    if value is None and "value" not in regex.groupindex:
        raise fail(where, "needs a (?P<value>...) group or a fixed value")
    authors = entry.get("authors", ["user"])
    if not isinstance(authors, list) or not set(authors) <= set(AUTHORS):
        raise fail(where, "authors must list user, agent, tool or document")
    basis = entry.get("basis", "stated")
    if basis not in BASES:
        raise fail(where, f"basis {basis!r} is not stated, inferred or verified")
    return Pattern(
        regex=regex,
        value=None if value is None else str(value),
        id=str(entry.get("id") or pattern_id),
        subject=str(entry.get("subject", "user")),
        negated=_flag(fail, where, entry.get("negated"), "negated"),
        basis=basis,
        authors=tuple(authors),
    )


def _flag(fail, where: str, value, name: str) -> bool:
    try:
        return strict_bool(value, name, default=False)
    except NotABoolean as exc:
        raise fail(where, str(exc)) from None
