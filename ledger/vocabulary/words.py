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


# --- Reserved partitions: the users (and the app) the ledger keeps for itself, never a person's.
# The guard triggers' SQL builds its literals from these (ledger/store/eventlog.py, postgres).

DOMAIN_USER = "_domain"              # facts shared by every user of an app, served to all of them
ERASURES_USER = "_erasures"          # the partition `Redacted` events live in
ALL_APPS = "_all"                    # app of a retention run that spans apps
CHECKPOINTS_USER = "_checkpoints"    # with ALL_APPS, where `CheckpointIssued` events live
ERASED_PREFIX = "erased:"            # a forgotten user's pseudonym starts so
RESERVED_USERS: tuple[str, ...] = (ERASURES_USER, CHECKPOINTS_USER)


# --- Decisions: the rule that took a decision and the reason it gives, as events record them
# (`rule` and `reason` fields).  Plain strings, each spelt here once; code names them, never
# writes them out (tests/project/test_each_once.py).

class Rule:
    """The rule of a decision (an event's `rule`)."""

    NEGATION = "negation"
    SAME_VALUE = "same_value"
    SERIES_DUPLICATE = "series_duplicate"
    SERIES_READING = "series_reading"
    NEW_KEY = "new_key"
    LOWER_AUTHORITY = "lower_authority"
    NEWER_VALUE = "newer_value"
    MANY_ACCUMULATES = "many_accumulates"
    LATE_SAME_VALUE = "late_same_value"
    EARLIER_SAME_VALUE = "earlier_same_value"
    BACKFILL = "backfill"
    LATE_NEGATION = "late_negation"
    NEGATED_LATER = "negated_later"          # the new fact's end, at a negation heard before
    SPLIT = "split"                          # the part of a fact before a statement said within it
    SAME_MEANING = "same_meaning"            # another wording, by meaning (semantic extra)
    SAME_FORM = "same_form"                  # another wording, by form
    MEANING_RETRY = "meaning_retry"          # a meaning check an encoder failure deferred, run again: no other wording
    SETTLES_DISPUTE = "_settles_dispute"     # suffix: a reinforcement that settles a dispute
    REVIEWER = "reviewer"
    REVIEWER_UNSETTLED = "reviewer_unsettled"   # a reviewer's judgement kept, settling nothing (now)
    REDACTION = "redaction"                  # a value current again after a forget
    VALIDATOR = "validator"
    SESSION_VALIDATOR = "session_validator"


class Reason:
    """The reason a decision gives (an event's or an outcome's `reason`)."""

    NOTHING_TO_RETRACT = "nothing_to_retract"
    INSUFFICIENT_AUTHORITY = "insufficient_authority"
    OLDER_THAN_CURRENT = "older_than_current"
    RETRACTED = "retracted"
    RETRACTED_IN_THE_PAST = "retracted_in_the_past"
    NEW_READING = "new_reading"
    NEW_VALUE = "new_value"
    NEGATED_LATER = "negated_later"
    REINFORCED = "reinforced"
    ALREADY_COUNTED = "already_counted"
    DISPUTE_SETTLED = "dispute_settled"
    SETTLED_BY_AUTHORITY = "settled_by_authority"
    LOWER_AUTHORITY_THAN_CURRENT = "lower_authority_than_current"
    SUPERSEDED = "superseded"
    HELD_EARLIER = "held_earlier"
    BACKFILLED = "backfilled"
    SPLIT = "split"
    REDACTION = "redaction"
    UNKNOWN_PREDICATE = "unknown_predicate"
    PREFERENCE_NOT_USER_AUTHORED = "preference_not_user_authored"
