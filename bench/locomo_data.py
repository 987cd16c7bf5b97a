"""LoCoMo's JSON read into plain records: conversations, their sessions and turns, observations
and questions, each with its evidence turn ids (`bench/locomo.py` measures recall over them).

Why a module of its own: the dataset's file has quirks the harness should not see (a session's
`date_time` key without its session, an observation citing a list of turns, evidence written
`D8:6; D9:17` or `D:11:26`), and they are settled here once, with a test on a synthetic file.
The data is CC BY-NC (snap-research/LoCoMo): read from the path given, never copied into the
repository.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

DATE_FORMAT = "%I:%M %p on %d %B, %Y"        # "1:56 pm on 8 May, 2023"
_SESSION = re.compile(r"session_(\d+)")
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")


class LocomoError(ValueError):
    """The file is not LoCoMo-shaped; the message says where."""


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str


@dataclass(frozen=True)
class Session:
    number: int
    said_at: datetime
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Observation:
    speaker: str
    sentence: str
    evidence: tuple[str, ...]
    session: int


@dataclass(frozen=True)
class Question:
    question: str
    category: int
    evidence: frozenset[str]


@dataclass
class Conversation:
    index: int
    sample_id: str
    speakers: tuple[str, str]
    sessions: list[Session] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)

    @property
    def last_said(self) -> datetime:
        return max(s.said_at for s in self.sessions)

    def session_of(self, number: int) -> Session:
        return next(s for s in self.sessions if s.number == number)


def evidence_ids(raw) -> tuple[str, ...]:
    """Turn ids as `D<session>:<turn>` from a string or a list of them, in order, once each
    (`D8:6; D9:17` is two; `D:11:26` is `D11:26`; a bare `D` is none)."""
    items = raw if isinstance(raw, list) else [raw]
    found: list[str] = []
    for item in items:
        for session, turn in _EVIDENCE.findall(str(item)):
            ident = f"D{int(session)}:{int(turn)}"
            if ident not in found:
                found.append(ident)
    return tuple(found)


def parse_date(text: str, where: str) -> datetime:
    try:
        return datetime.strptime(" ".join(str(text).split()), DATE_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        raise LocomoError(f"{where}: date {text!r} is not like '1:56 pm on 8 May, 2023'") from None


def load(path: str | Path, indices: list[int] | None = None) -> list[Conversation]:
    """The conversations at `indices` (positions in the file; all when None)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise LocomoError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LocomoError(f"{path}: not JSON ({exc})") from None
    if not isinstance(data, list) or not data:
        raise LocomoError(f"{path}: expected a JSON list of conversations")
    chosen = range(len(data)) if indices is None else indices
    for i in chosen:
        if not 0 <= i < len(data):
            raise LocomoError(f"{path}: no conversation {i} (the file has 0-{len(data) - 1})")
    return [_conversation(i, data[i], f"{path}: conversation {i}") for i in chosen]


def _conversation(index: int, raw, where: str) -> Conversation:
    try:
        conv = raw["conversation"]
        speakers = (str(conv["speaker_a"]), str(conv["speaker_b"]))
        result = Conversation(index, str(raw.get("sample_id") or f"conv-{index}"), speakers)
        for key, turns in conv.items():
            match = _SESSION.fullmatch(key)
            if not match or not isinstance(turns, list):
                continue
            number = int(match.group(1))
            said_at = parse_date(conv[f"{key}_date_time"], f"{where}: {key}")
            result.sessions.append(Session(number, said_at, tuple(
                Turn(str(t["dia_id"]), str(t["speaker"]), str(t.get("text") or "")) for t in turns)))
        result.sessions.sort(key=lambda s: s.number)
        numbers = {s.number for s in result.sessions}
        for key, by_speaker in (raw.get("observation") or {}).items():
            number = int(re.search(r"\d+", key).group())
            if number not in numbers:
                continue
            for speaker, items in by_speaker.items():
                for sentence, cited in items:
                    result.observations.append(Observation(str(speaker), str(sentence), evidence_ids(cited), number))
        for q in raw.get("qa") or []:
            result.questions.append(Question(str(q["question"]), int(q["category"]),
                                             frozenset(evidence_ids(q.get("evidence") or []))))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        if isinstance(exc, LocomoError):
            raise
        raise LocomoError(f"{where}: not LoCoMo-shaped ({type(exc).__name__}: {exc})") from None
    if not result.sessions:
        raise LocomoError(f"{where}: no sessions")
    return result


def parse_indices(text: str) -> list[int]:
    """`0-4` -> [0, 1, 2, 3, 4]; `0,2` -> [0, 2]; `0-1,5` -> [0, 1, 5]; order kept, once each."""
    out: list[int] = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        bounds = part.split("-")
        if len(bounds) > 2 or not all(b.strip().isdigit() for b in bounds):
            raise LocomoError(f"conversations {text!r}: use ranges and lists like 0-4 or 0,2")
        low, high = int(bounds[0]), int(bounds[-1])
        if high < low:
            raise LocomoError(f"conversations {text!r}: range {part} runs backwards")
        out.extend(i for i in range(low, high + 1) if i not in out)
    if not out:
        raise LocomoError("conversations: none chosen")
    return out
