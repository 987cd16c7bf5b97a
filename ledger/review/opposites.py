"""Contradicting predicates the registry does not declare, inferred from what they mean.

A registry written by someone else may not declare `contradicts`.  A predicate whose name,
aliases or description carry a negation or avoidance word reads as the opposite of another that
carries none when, with those words taken out, the two sentences mean the same (cosine at least
HINT_THRESHOLD; the default registry's scores are in docs/semantic.md).  Worked out once per
registry and encoder, since what two keys mean does not depend on their values; open facts are
then checked by value as for a declared relation.  Without the extra the test is made on words.
"""

from __future__ import annotations

import re

from factledger.ledger.registry.predicates import Registry
from factledger.ledger.semantic import embedder as encoders

HINT_THRESHOLD = 0.85
MARKERS = frozenset("no not never none without non cannot cant dont doesnt avoid avoids avoided avoiding "
                    "dislike dislikes disliked hate hates hated exclude excludes excluded banned forbidden".split())
_WORD = re.compile(r"[^\W_]+")
_KEPT: dict[tuple, dict] = {}


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold().replace("n't", "nt").replace("'", ""))


def _marked(name: str, spec) -> bool:
    return bool(set(_words(" ".join((name, *spec.aliases, spec.description or "")))) & MARKERS)


def _sentence(name: str, spec, strip: bool) -> str:
    words = _words(f"{name} {spec.description or ''}")
    return " ".join(w for w in words if not (strip and w in MARKERS))


def inferred(registry: Registry) -> dict[tuple[str, str], float | None]:
    """(negated predicate, the predicate it negates) -> cosine (None when found by words), for
    the pairs the registry does not declare either way."""
    model = encoders.get()
    key = (registry.sha256, model.identity if model is not None else None)
    found = _KEPT.get(key)
    if found is not None:
        return found
    predicates = registry.predicates
    declared = {(a, b) for a, spec in predicates.items() for b in spec.contradicts}
    negated = [n for n, spec in predicates.items() if _marked(n, spec)]
    plain = [n for n, spec in predicates.items() if not _marked(n, spec)]
    found = {}
    for name in negated:
        if model is None:
            stripped = [w for w in _words(name) if w not in MARKERS]
            for other in plain:
                if _words(other) == stripped and (name, other) not in declared and (other, name) not in declared:
                    found[(name, other)] = None
            continue
        mine = model.embed(_sentence(name, predicates[name], strip=True))
        for other in plain:
            if (name, other) in declared or (other, name) in declared:
                continue
            cosine = float(mine @ model.embed(_sentence(other, predicates[other], strip=False)))
            if cosine >= HINT_THRESHOLD:
                found[(name, other)] = round(cosine, 4)
    _KEPT[key] = found
    return found
