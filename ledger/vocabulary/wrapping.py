"""Greedy word wrap under any measure: a terminal's columns or an SVG label's pixels.

The command line's tables and the web timeline's value labels wrap the same way (words join
with spaces; a word too wide for a line is broken into pieces, and a piece still too wide where
it must be); only what "wide" means differs, so both pass their own `measure` and, for where a
long word may break, their own `pieces`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

Measure = Callable[[str], float]


def split_to(text: str, width: float, measure: Measure) -> tuple[str, str]:
    """The longest head of `text` that fits `width` (at least one character), and the rest."""
    for i in range(1, len(text) + 1):
        if measure(text[:i]) > width:
            return (text[:i - 1], text[i - 1:]) if i > 1 else (text[:1], text[1:])
    return text, ""


def greedy_wrap(text: str, width: float, measure: Measure,
                pieces: Callable[[str], Iterable[str]] = lambda word: [word]) -> list[str]:
    """`text` in lines of at most `width` by `measure` (a single character wider than that still
    stands on a line of its own); a word that does not fit breaks between its `pieces`."""
    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        candidate = f"{line} {word}" if line else word
        if measure(candidate) <= width:
            line = candidate
            continue
        if line:
            lines.append(line)
            line = ""
        for piece in list(pieces(word)) or [""]:
            if measure(line + piece) <= width:
                line += piece
                continue
            if line:
                lines.append(line)
            while measure(piece) > width:
                head, piece = split_to(piece, width, measure)
                lines.append(head)
            line = piece
    lines.append(line)
    return lines
