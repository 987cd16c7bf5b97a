"""The `candidates` extractor: proposals produced elsewhere, read from a JSONL file.

Nothing is trusted because it arrived pre-made: each proposal goes through the same validator
as the others.  A proposal is routed to a session by its `session` field, else by its evidence
event id, else (when the batch holds a single session) to that session.

Event ids are only unique within a session, and session ids only within a partition, so a line
that matches more than one session of the batch (two users' transcripts both with event `e1`, or
two partitions with a session `s1`) cannot say whose record it belongs to.  Such a line is
refused before anything is ingested: it goes to no session, and `ambiguous` names it with the
sessions it matched, so the summary can say so and the command can exit 1.
"""

from __future__ import annotations

from collections.abc import Iterable

from factledger.ledger.ingest.extractor import Context, Extraction
from factledger.ledger.ingest.proposal import Proposal
from factledger.ledger.ingest.session import Delta, Session


class CandidatesExtractor:
    name = "candidates"
    model = None

    def __init__(self, proposals: list[Proposal], single_session: bool = False,
                 wheres: list[str] | None = None):
        self.proposals = proposals
        self.single_session = single_session
        self.wheres = wheres or [f"candidate {i + 1}" for i in range(len(proposals))]
        self.used: set[int] = set()
        self.refused: dict[int, list[str]] = {}

    def route(self, sessions: Iterable[Session], app: str | None, user: str | None) -> None:
        """Refuse every proposal that matches sessions of more than one partition or session."""
        sessions = list(sessions)
        self.single_session = len(sessions) == 1
        if self.single_session:
            return
        for index, p in enumerate(self.proposals):
            owners = {}
            for s in sessions:
                if self._matches(p, s):
                    key = (app or s.app, user or s.user, s.id)
                    owners.setdefault(key, f"{s.source} (app {key[0]}, user {key[1]}, session {s.id})")
            if len(owners) > 1:
                self.refused[index] = sorted(owners.values())

    def _matches(self, p: Proposal, session: Session) -> bool:
        if p.session is not None:
            return p.session == session.id
        return self.single_session or session.event(p.evidence_event) is not None

    def extract(self, delta: Delta, context: Context) -> Extraction:
        mine = []
        for index, p in enumerate(self.proposals):
            if index not in self.refused and self._matches(p, delta.session):
                mine.append(p)
                self.used.add(index)
        return Extraction(proposals=mine)

    @property
    def ambiguous(self) -> list[dict]:
        """The refused lines: where each is, the event it cites, and every session it matched."""
        return [{"candidate": self.wheres[i], "evidence_event": self.proposals[i].evidence_event,
                 "session": self.proposals[i].session, "matches": matched}
                for i, matched in sorted(self.refused.items())]

    @property
    def unmatched(self) -> int:
        return len(self.proposals) - len(self.used) - len(self.refused)
