"""A seeded, deterministic stream of candidates with a realistic mix of outcomes.

The generator keeps a small model of what each user has said, so it can aim each candidate at a
decision: about 60% reinforce an open value from a new session, 20% supersede it with a newer
value, 10% state a new fact, and the rest are disputes (a lower-authority agent claim), retractions
(a negated statement of the open value), series readings (a dated blood pressure or weight) and
rejections (a late, older value or a session that already counted).  The ledger decides for itself;
the bench reports the decisions it actually took.

Same seed, same stream: the candidates depend on nothing but the seed and their index.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from factledger.ledger.registry.predicates import Registry, load_registry

APP = "bench"
USERS = 10_000
HEAVY_USER = "u00000"          # one user with a long history (as-of queries)
HEAVY_SHARE = 0.004            # ... who gets this share of the traffic
MIX = (("reinforce", 0.60), ("supersede", 0.20), ("new", 0.10), ("dispute", 0.03),
       ("retract", 0.02), ("series", 0.03), ("reject", 0.02))
START = datetime(2024, 1, 1, tzinfo=UTC)
STEP = timedelta(seconds=20)   # simulated time between two candidates

_WORDS = {
    "diet": ["vegetarian", "vegan", "pescatarian", "omnivore", "flexitarian"],
    "home_city": ["Bengaluru", "Pune", "Lisbon", "Berlin", "Austin", "Nairobi", "Osaka", "Lima",
                  "Toronto", "Dublin", "Hanoi", "Quito"],
    "likes_spicy": ["yes", "no", "a little"],
    "preferred_language": ["english", "hindi", "portuguese", "german", "japanese", "spanish"],
    "deploy.region": ["us-central1", "europe-west4", "asia-south1", "us-east1"],
    "deploy.cloud": ["gcp", "aws", "azure"],
    "plan": ["free", "pro", "team", "enterprise"],
}


@dataclass
class _Key:
    value: str
    said_at: str
    session: str
    disputed: bool = False


@dataclass
class _User:
    one: dict[str, _Key] = field(default_factory=dict)          # predicate -> open value
    many: dict[str, dict[str, _Key]] = field(default_factory=dict)  # predicate -> value -> key
    readings: int = 0


class Generator:
    """`batch(n)` returns the next n candidates as keyword dicts for `make_candidate`."""

    def __init__(self, seed: int = 42, users: int = USERS, registry: Registry | None = None):
        self.rng = random.Random(seed)
        self.users = users
        registry = registry or load_registry()
        specs = list(registry.predicates.values())
        self.one = [s.name for s in specs if s.cardinality == "one"]
        self.many = [s.name for s in specs if s.cardinality == "many"]
        self.series = [s.name for s in specs if s.cardinality == "series"]
        self.lower = {s.name for s in specs if s.normalise == "lower"}
        self.state: dict[str, _User] = {}
        self.index = 0
        self._ops = [op for op, _ in MIX]
        self._weights = [w for _, w in MIX]

    # --- the stream ------------------------------------------------------------------------

    def batch(self, n: int) -> list[dict]:
        return [self.next() for _ in range(n)]

    def next(self) -> dict:
        rng = self.rng
        i = self.index
        self.index += 1
        user = HEAVY_USER if rng.random() < HEAVY_SHARE else f"u{rng.randrange(1, self.users):05d}"
        state = self.state.setdefault(user, _User())
        said_at = _iso(START + STEP * i)
        session = f"s{i}"
        op = rng.choices(self._ops, self._weights)[0]
        made = getattr(self, "_" + op)(rng, user, state, said_at, session)
        return made or self._new(rng, user, state, said_at, session)

    # --- one method per aimed decision (None when the user has nothing to aim at) ----------

    def _new(self, rng, user, state, said_at, session):
        free = [p for p in self.one if p not in state.one]
        if free and (not self.many or rng.random() < 0.6):
            predicate = rng.choice(free)
            value = self._value(rng, predicate)
            state.one[predicate] = _Key(value, said_at, session)
        else:
            predicate = rng.choice(self.many)
            value = self._value(rng, predicate, unique=True)
            state.many.setdefault(predicate, {})[value] = _Key(value, said_at, session)
        return self._cand(user, predicate, value, said_at, session, f"I have {value}")

    def _reinforce(self, rng, user, state, said_at, session):
        key = self._pick_open(rng, state)
        if key is None:
            return None
        predicate, k = key
        k.session, k.said_at = session, max(k.said_at, said_at)
        return self._cand(user, predicate, k.value, said_at, session, f"still {k.value}")

    def _supersede(self, rng, user, state, said_at, session):
        if not state.one:
            return None
        predicate = rng.choice(sorted(state.one))
        old = state.one[predicate]
        value = self._value(rng, predicate, avoid=old.value)
        state.one[predicate] = _Key(value, said_at, session)
        return self._cand(user, predicate, value, said_at, session, f"now {value}")

    def _dispute(self, rng, user, state, said_at, session):
        if not state.one:
            return None
        predicate = rng.choice(sorted(state.one))
        value = self._value(rng, predicate, avoid=state.one[predicate].value)
        return self._cand(user, predicate, value, said_at, session, f"agent thinks {value}",
                          author="agent", basis="inferred")

    def _retract(self, rng, user, state, said_at, session):
        if state.one and rng.random() < 0.5:
            predicate = rng.choice(sorted(state.one))
            value = state.one.pop(predicate).value
        else:
            filled = sorted(p for p, vs in state.many.items() if vs)
            if not filled:
                return None
            predicate = rng.choice(filled)
            value = rng.choice(sorted(state.many[predicate]))
            del state.many[predicate][value]
        return self._cand(user, predicate, value, said_at, session, f"no longer {value}",
                          negated=True)

    def _series(self, rng, user, state, said_at, session):
        predicate = rng.choice(self.series)
        state.readings += 1
        value = (f"{rng.randrange(100, 160)}/{rng.randrange(60, 100)}" if "pressure" in predicate
                 else f"{rng.randrange(50, 110)} kg")
        return self._cand(user, predicate, value, said_at, session, f"reading {value}",
                          effective_date=said_at[:10])

    def _reject(self, rng, user, state, said_at, session):
        if not state.one:
            return None
        predicate = rng.choice(sorted(state.one))
        k = state.one[predicate]
        if rng.random() < 0.5:     # the same session again: already counted
            return self._cand(user, predicate, k.value, said_at, k.session, f"again {k.value}")
        late = _iso(datetime.fromisoformat(k.said_at.replace("Z", "+00:00")) - timedelta(days=3))
        value = self._value(rng, predicate, avoid=k.value)
        return self._cand(user, predicate, value, late, session, f"back then {value}")

    # --- helpers ---------------------------------------------------------------------------

    def _pick_open(self, rng, state):
        total = len(state.one) + sum(len(v) for v in state.many.values())
        if not total:
            return None
        n = rng.randrange(total)
        if n < len(state.one):
            predicate = sorted(state.one)[n]
            return predicate, state.one[predicate]
        n -= len(state.one)
        for predicate in sorted(state.many):
            values = state.many[predicate]
            if n < len(values):
                value = sorted(values)[n]
                return predicate, values[value]
            n -= len(values)
        return None

    def _value(self, rng, predicate, avoid: str | None = None, unique: bool = False) -> str:
        words = _WORDS.get(predicate)
        if words and not unique:
            choices = [w for w in words if w != avoid]
            return rng.choice(choices)
        value = f"{predicate.rsplit('.', 1)[-1]} {rng.randrange(1_000_000)}"
        return value.lower() if predicate in self.lower else value

    def _cand(self, user, predicate, value, said_at, session, quote, **extra) -> dict:
        return dict(app=APP, user=user, predicate=predicate, value=value, quote=quote,
                    session=session, evidence_event=f"e{self.index}", said_at=said_at, **extra)


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
