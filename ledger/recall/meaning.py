"""How close in meaning a query is to each in-scope fact: the `semantic` part of recall's score.

A fact's meaning score is the larger of two cosines, each rescaled so that unrelated text
counts zero (`rescale`): the query against the fact's stored vector (its predicate, value and
quote as a sentence), and the query against its predicate's registry entry (name, aliases and
description as a sentence: "Where do I live?" is far from "home city is Bengaluru" but close to
"City the subject lives in").  The registry's vectors are worked out at query time and kept per
registry and encoder (they hold no fact text); the facts' vectors are the projection's rows.

The blend with the lexical score and recency is in `ledger.recall_facts` and docs/semantic.md.
"""

from __future__ import annotations

import sqlite3
from bisect import bisect_left
from collections.abc import Mapping
from datetime import datetime

from factledger.ledger.errors import LedgerError
from factledger.ledger.registry.predicates import Registry
from factledger.ledger.semantic import embedder as encoders
from factledger.projections.vectors import partition_vectors

# Cosines at or below the floor mean nothing (MiniLM puts unrelated short sentences at about
# 0.0 to 0.15); above it the score rises linearly to 1 at cosine 1.  Measured on the probe
# set (bench/semantic.py probes, docs/semantic.md): 0.25 missed 4 of 64 probes at 12, 0.15 none.
FLOOR = 0.15
# The relevance floor of a search: a fact no query word reaches is served for the query only when
# its rescaled meaning score is at least this (else recency alone carried unrelated facts in:
# "Where are we based?" served employer = Globex at 0.033).  Measured by `bench.semantic probes`
# (recall@12 kept, served-unrelated rate down; docs/semantic.md, "The relevance floor").
RELEVANCE_FLOOR = 0.05
# ... and at least this share of the best meaning score of the query's cleared facts.
RELEVANCE_SHARE = 0.3
# Hybrid relevance = MEANING_WEIGHT * meaning + (1 - MEANING_WEIGHT) * lexical.  0.4 measured
# best on LoCoMo 0-4 (answerable recall@10 0.859 against 0.848 at 0.6), the 64 probes unchanged
# (docs/semantic.md, "This round").
MEANING_WEIGHT = 0.4


def default_mode() -> str:
    """hybrid when meaning is available (the extra installed, not turned off), lexical otherwise."""
    return "hybrid" if encoders.wanted() else "lexical"


def resolve_mode(mode: str | None) -> str:
    """The mode a call runs in: the default when none was asked for; asking for meaning without
    it is an error, not a silent lexical answer."""
    if mode is None:
        return default_mode()
    if mode != "lexical" and not encoders.wanted():
        raise LedgerError(f"recall mode {mode} needs the semantic extra (pip install 'factledger[semantic]')"
                          " and FACTLEDGER_EMBEDDER not off")
    return mode


def rescale(cosine: float) -> float:
    return max(0.0, (cosine - FLOOR) / (1.0 - FLOOR))


def predicate_sentence(name: str, spec) -> str:
    words = name.replace("_", " ").replace(".", " ")
    aliases = ", ".join(a.replace("_", " ") for a in spec.aliases)
    text = f"{words}: {spec.description}" if spec.description else words
    return f"{text} ({aliases})" if aliases else text


_PREDICATE_VECTORS: dict[tuple[str, str], dict] = {}


def predicate_vectors(registry: Registry | None, model) -> dict:
    """predicate -> unit vector of its registry sentence, cached per (registry, encoder)."""
    if registry is None:
        return {}
    key = (registry.sha256, model.identity)
    cached = _PREDICATE_VECTORS.get(key)
    if cached is None:
        cached = {name: model.embed(predicate_sentence(name, spec))
                  for name, spec in registry.predicates.items()}
        _PREDICATE_VECTORS[key] = cached
    return cached


def _no_memo(key, build):
    return build()


def meaning_scores(conn: sqlite3.Connection, app: str, users: list[str], query: str,
                   rows: list[tuple], id_pos: int, predicate_pos: int,
                   registry: Registry | None, derived=_no_memo) -> Scores:
    """position -> (rescaled meaning score, raw cosine with the fact) for the rows that have a
    vector of the current encoder; an empty query or no encoder gives {}.

    `derived(key, build)` keeps what depends on the rows alone (`projections.recallcache`): the
    matrix of their vectors and each one's registry predicate, so a query costs one encoder run
    and two matrix products, not a read and decode of the partition's BLOBs."""
    model = encoders.get()
    if model is None or not query.strip() or not rows:
        return Scores()
    import numpy as np  # the semantic extra's: present once an encoder is (above)

    def build():
        return _matrix(np, conn, app, users, rows, id_pos, predicate_pos, registry, model)

    positions, at, matrix, predicates, by_predicate = derived(
        ("meaning", model.identity, registry and registry.sha256), build)
    if not positions:
        return Scores()
    q = model.embed(query)
    facts = (matrix @ q).astype(np.float64)
    if by_predicate is not None:
        best = np.maximum(facts, np.append(by_predicate @ q, -1.0).astype(np.float64)[predicates])
    else:
        best = facts
    scores = np.maximum(0.0, (best - FLOOR) / (1.0 - FLOOR))
    return Scores(positions, scores, facts, (np, at, scores))


class Scores(Mapping):
    """position -> (meaning, cosine), and the same as arrays (`arrays`: numpy, the positions, the
    meaning scores) for scoring every fact of a scope at once (`ledger.recall_facts`).

    The per-position pairs are made the first time one is asked for (`--explain`, or scoring
    without the arrays): made on every call, a thousand tuples were a fifth of a hybrid call's
    own work, the encoder's run apart."""

    arrays = None

    def __init__(self, positions=(), scores=None, cosines=None, arrays=None):
        self._from = (positions, scores, cosines)
        self._pairs = None if scores is not None else {}
        if arrays is not None:
            self.arrays = arrays

    def _table(self) -> dict[int, tuple[float, float]]:
        if self._pairs is None:
            positions, scores, cosines = self._from
            self._pairs = dict(zip(positions, zip(scores.tolist(), cosines.tolist())))
        return self._pairs

    def __getitem__(self, position: int) -> tuple[float, float]:
        if self._pairs is not None:
            return self._pairs[position]
        positions, scores, cosines = self._from          # one shown fact: no table
        k = bisect_left(positions, position)             # positions ascend
        if k == len(positions) or positions[k] != position:
            raise KeyError(position)
        return (float(scores[k]), float(cosines[k]))

    def __iter__(self):
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())


def confirmed_times(rows: list[tuple], confirmed_pos: int, derived=_no_memo):
    """Each row's confirmation time as POSIX seconds, a float64 array kept with the scope's rows:
    recall's best-first heap orders a thousand facts by score with it."""
    import numpy as np

    def build():
        seen: dict[str, float] = {}
        for row in rows:
            text = row[confirmed_pos]
            if text not in seen:
                seen[text] = datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
        return np.asarray([seen[row[confirmed_pos]] for row in rows], dtype=np.float64)
    return derived(("confirmed",), build)


def _matrix(np, conn, app, users, rows, id_pos, predicate_pos, registry, model) -> tuple:
    """(positions with a vector, the same as an int64 array, their vectors as one float32 matrix,
    the row of each one's predicate in the registry matrix (its last index + 1 when not a registry
    predicate), the registry's predicate vectors as a matrix or None)."""
    stored = partition_vectors(conn, app, users, model.identity)
    positions = [i for i, row in enumerate(rows) if row[id_pos] in stored]
    if not positions:
        return [], None, None, None, None
    at = np.asarray(positions, dtype=np.int64)
    matrix = np.frombuffer(b"".join(stored[rows[i][id_pos]] for i in positions), dtype="<f4")
    matrix = matrix.reshape(len(positions), -1).astype(np.float32)
    vectors = predicate_vectors(registry, model)
    if not vectors:
        return positions, at, matrix, None, None
    names = list(vectors)
    index = {name: k for k, name in enumerate(names)}
    predicates = np.asarray([index.get(rows[i][predicate_pos], len(names)) for i in positions], dtype=np.int64)
    return positions, at, matrix, predicates, np.stack([vectors[n] for n in names]).astype(np.float32)
