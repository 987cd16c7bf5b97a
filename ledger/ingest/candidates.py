"""The `candidates` extractor: proposals produced elsewhere, read from a JSONL file.

Nothing is trusted because it arrived pre-made: each proposal goes through the same validator
as the others.  A proposal is routed to a session by its `session` field, else by its evidence
event id, else (when the batch holds a single session) to that session.
"""

from __future__ import annotations

from .extractor import Context, Extraction
from .proposal import Proposal
from .session import Delta


class CandidatesExtractor:
    name = "candidates"
    model = None

    def __init__(self, proposals: list[Proposal], single_session: bool = False):
        self.proposals = proposals
        self.single_session = single_session
        self.used: set[int] = set()

    def extract(self, delta: Delta, context: Context) -> Extraction:
        session = delta.session
        mine = []
        for index, p in enumerate(self.proposals):
            if p.session is not None:
                match = p.session == session.id
            else:
                match = self.single_session or session.event(p.evidence_event) is not None
            if match:
                mine.append(p)
                self.used.add(index)
        return Extraction(proposals=mine)

    @property
    def unmatched(self) -> int:
        return len(self.proposals) - len(self.used)
