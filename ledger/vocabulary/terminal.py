"""Stored text on its way to a terminal or a log line: one line, nothing the terminal obeys.

Values, quotes, session ids, file names, JSON keys and a model's words all end up in error
messages, tables and `why` / `review` lines.  A terminal obeys some of their characters: CR
returns the cursor and lets later text overwrite a provenance line, LF and the Unicode line
separators start a fake line, ESC starts a control sequence (colours, cursor moves, window
titles), bidirectional overrides make a line read in another order than it is stored.  So every
piece of such text passes through `escape`, which writes each of those characters as Python's
`ascii()` would (`\\r`, `\\n`, `\\x1b`, `\\u202e`) and leaves every other character as it is, so
names in any script still read naturally.

`escape` is for people.  What a model receives is built by `render.literal`, which also quotes;
JSON output escapes the same characters as `\\uXXXX` (`json_safe`), which any JSON reader turns
back into the stored text.
"""

from __future__ import annotations

import unicodedata

# Control (Cc), format (Cf: bidi overrides, zero-width joiners, tag characters), surrogates (Cs),
# private use (Co), unassigned (Cn) and the line and paragraph separators (Zl, Zp).
UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})

# Every character str.splitlines() (and so most line-oriented readers) breaks a line at.
LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")


def unsafe(ch: str) -> bool:
    """True for a character a terminal may act on instead of showing."""
    return unicodedata.category(ch) in UNSAFE_CATEGORIES


def escape(text) -> str:
    """`text` as one terminal line: unsafe characters written as `ascii()` writes them."""
    text = "" if text is None else str(text)
    if not any(unsafe(ch) for ch in text):
        return text
    return "".join(ascii(ch)[1:-1] if unsafe(ch) else ch for ch in text)


def json_safe(document: str) -> str:
    """A JSON document with every unsafe character inside its strings written as `\\uXXXX`.

    Outside strings a JSON document holds only ASCII structure and whitespace, and the
    serialisers used here never emit raw control characters there, so replacing each unsafe
    character is exact: any JSON reader reads back the same values.
    """
    if not any(unsafe(ch) for ch in document if ch not in "\n "):
        return document
    return "".join(json_escape(ch) if ch not in "\n " and unsafe(ch) else ch for ch in document)


def json_escape(ch: str) -> str:
    """One character as a JSON `\\uXXXX` escape (a surrogate pair past U+FFFF), which any JSON
    reader turns back into the character."""
    code = ord(ch)
    if code > 0xFFFF:
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def line_safe(text: str, lines: int | None = None) -> bool:
    """True when `text` holds no character a terminal acts on except its own line feeds
    (exactly `lines - 1` of them when `lines` is given): what the property tests assert."""
    if any(unsafe(ch) or ch in LINE_BREAKS for ch in text if ch != "\n"):
        return False
    return lines is None or text.count("\n") == lines - 1
