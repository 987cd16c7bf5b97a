"""A key's open facts indexed by value, kept current by the fold: the decision table's read of a key.

`decide` asks one question of a `many` or `series` key per candidate: which open facts have this
value?  Scanning the key to answer it (and building every open fact anew for each candidate) made
a session that states N values of one key cost O(N^2) inside one write transaction: 4,000 values
held the write lock for about a minute.  The index is built once per key per transaction (from
the stored open facts, in stored order, then the facts the transaction opened) and updated as the
fold changes facts, so a candidate costs the same whatever the key holds.  A `one` key still hands
`decide` all of its open facts (it has few: a current value and its challengers).

The order is the one `decide` always saw: stored facts in `facts_current` rowid order, then the
facts this transaction opened, in the order it opened them; a fact closed and opened again keeps
its place.  Each fact's `OpenFact` is built once and reused until the fold changes the fact, so
`decide` can compare them by identity.
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Callable, Iterable, Iterator

from factledger.ledger.domain.candidate import value_key
from factledger.ledger.domain.decide import OpenFact
from factledger.projections.factstate import OPEN_STATES, Snapshot, said_times, session_names


class KeyIndex:
    """One key's open facts: by place in the key and by value key."""

    def __init__(self, snaps: dict[str, Snapshot]) -> None:
        self._snaps = snaps                                # the batch's latest snapshot of each fact
        self._place: dict[str, int] = {}
        self._open: dict[str, str] = {}                    # open fact id -> its value key
        self._by_value: dict[str, list[tuple[int, str]]] = {}
        self._facts: dict[str, OpenFact] = {}

    def place(self, fact_id: str) -> None:
        """Give a fact its place in the key (the first time the key is seen to hold it)."""
        if fact_id not in self._place:
            self._place[fact_id] = len(self._place)

    def update(self, snap: Snapshot) -> None:
        """The fold changed this fact: re-file it (open or not, under its value)."""
        fact_id = snap["fact_id"]
        self.place(fact_id)
        self._facts.pop(fact_id, None)
        filed = self._open.get(fact_id)
        wanted = value_key(snap["value"]) if snap["status"] in OPEN_STATES else None
        if filed == wanted:
            return
        entry = (self._place[fact_id], fact_id)
        if filed is not None:
            same = self._by_value[filed]
            same.remove(entry)
            if not same:
                del self._by_value[filed]
            del self._open[fact_id]
        if wanted is not None:
            insort(self._by_value.setdefault(wanted, []), entry)
            self._open[fact_id] = wanted

    def fact(self, fact_id: str) -> OpenFact:
        found = self._facts.get(fact_id)
        if found is None:
            s = self._snaps[fact_id]
            found = self._facts[fact_id] = OpenFact(
                s["fact_id"], s["value"], s["basis"], s["status"], s["said_at"],
                frozenset(session_names(s["sessions"])), s["effective_date"],
                confirmed_at=s["confirmed_at"], said=said_times(s["sessions"]))
        return found

    def view(self) -> KeyView:
        return KeyView(self)


class KeyView:
    """What `decide` reads of one key: every open fact in order, or only those of one value."""

    def __init__(self, index: KeyIndex) -> None:
        self._index = index

    def same(self, wanted: str) -> list[OpenFact]:
        """The open facts whose value key is `wanted`, in key order."""
        fact = self._index.fact
        return [fact(fact_id) for _, fact_id in self._index._by_value.get(wanted, ())]

    def holds(self, fact_id: str) -> bool:
        """Whether the fact is open in this key."""
        return fact_id in self._index._open

    def place(self, fact_id: str) -> int:
        return self._index._place[fact_id]

    def fact(self, fact_id: str) -> OpenFact:
        return self._index.fact(fact_id)

    def same_form(self, form: Callable[[str], str], wanted: str) -> list[OpenFact]:
        """The open facts whose value's `form` is `wanted`, in key order (dedup's same-form rule;
        `form` is remembered per value for the transaction, so this is a pass over the key's
        values without building a fact for each)."""
        index, snaps = self._index, self._index._snaps
        found = [f for f in index._open if form(snaps[f]["value"]) == wanted]
        return [index.fact(f) for f in sorted(found, key=index._place.__getitem__)]

    def __iter__(self) -> Iterator[OpenFact]:
        index = self._index
        ordered = sorted(index._open, key=index._place.__getitem__)
        return iter([index.fact(fact_id) for fact_id in ordered])

    def __len__(self) -> int:
        return len(self._index._open)

    def __bool__(self) -> bool:
        return bool(self._index._open)


def past_fact(snap: Snapshot) -> OpenFact:
    """A closed fact as the decision table sees the key's past: with the end of its valid time."""
    return OpenFact(snap["fact_id"], snap["value"], snap["basis"], snap["status"], snap["said_at"],
                    frozenset(session_names(snap["sessions"])), snap["effective_date"], snap["valid_to"],
                    snap["confirmed_at"], said_times(snap["sessions"]))


def said_order(snap: Snapshot) -> tuple:
    """A key's past in the order it was said; facts said at one instant in the order they were
    observed (a log seq; re-decision's facts, folded before they are appended, have negative
    seqs in the order it folds them, after every stored one), so the live ledger and re-decision
    break ties alike."""
    seq = snap["observed_seq"]
    return (snap["said_at"], (0, seq) if seq > 0 else (1, -seq))


class LazyPast:
    """A key's past facts, read the first time `decide` iterates them (never, for most statements)."""

    def __init__(self, read: Callable[[], Iterable[OpenFact]]) -> None:
        self._read = read
        self._facts: list[OpenFact] | None = None

    def __iter__(self) -> Iterator[OpenFact]:
        if self._facts is None:
            self._facts = list(self._read())
        return iter(self._facts)
