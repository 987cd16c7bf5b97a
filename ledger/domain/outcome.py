"""What recording one candidate did: the answer every write path gives its caller."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Outcome:
    """What happened to one candidate: the decision and the seqs of the events that record it."""

    decision: str
    fact_id: str | None
    reason: str
    rule: str
    seqs: list[int] = field(default_factory=list)
    # a reviewer's decision says what it did in one sentence (predicate, value, user, seqs), the
    # same words in the CLI and the web view; empty for the other write paths
    summary: str = ""

    def as_dict(self) -> dict:
        out = {"decision": self.decision, "fact_id": self.fact_id, "reason": self.reason,
               "rule": self.rule, "seqs": self.seqs}
        if self.summary:
            out["summary"] = self.summary
        return out
