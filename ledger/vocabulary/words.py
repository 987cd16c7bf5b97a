"""The closed word lists of the ledger, each spelled once: who said a thing, on what authority,
what state a fact is in, how a predicate behaves, and what a decision does.

Models, the registry and the decision table use these types; the tuples are for code that needs
the words themselves (validation messages, ranks, SQL filters).
"""

from __future__ import annotations

from typing import Literal, get_args

Author = Literal["user", "agent", "tool", "document"]
Basis = Literal["inferred", "stated", "verified"]                 # lowest authority first
Status = Literal["current", "disputed", "superseded", "retracted", "rejected"]
Cardinality = Literal["one", "many", "series"]
Sensitivity = Literal["normal", "personal", "health"]             # least sensitive first
DecisionAction = Literal["insert", "reinforce", "supersede", "dispute", "retract", "reject", "backfill"]

AUTHORS: tuple[str, ...] = get_args(Author)
BASES: tuple[str, ...] = get_args(Basis)
STATUSES: tuple[str, ...] = get_args(Status)
OPEN_STATUSES: tuple[str, ...] = ("current", "disputed")
CARDINALITIES: tuple[str, ...] = get_args(Cardinality)
SENSITIVITIES: tuple[str, ...] = get_args(Sensitivity)
DECISION_ACTIONS: tuple[str, ...] = get_args(DecisionAction)
