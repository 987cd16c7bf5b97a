"""Output in the sqlite-utils manner: --json (array), --nl, --csv, -t/--table; a table on a terminal.

Commands hand rows (dicts) to `emit`; nothing else in the CLI decides how output looks.

A CSV cell holds a scalar, never encoded JSON: a nested object is flattened into one column per
leaf (`events_by_type.FactObserved`, `fact.value`), a list of scalars (ids, seqs) is one cell of
its items separated by spaces, and a list of records (`why`'s events) cannot be a cell at all, so
the CSV is refused (`Error: ...`, exit 1, nothing written) with the formats that can carry it.
"""

from __future__ import annotations

import csv
import functools
import io
import re
import shutil
import sys
import unicodedata

import click
import orjson

from factledger.ledger.errors import LedgerError
from factledger.ledger.vocabulary.terminal import escape, json_safe
from factledger.ledger.vocabulary.wrapping import greedy_wrap, split_to

FORMATS = ("json", "nl", "csv", "table")


FLAG_HELP = {"json": "Output as JSON", "nl": "Output newline-delimited JSON", "csv": "Output as CSV",
             "table": "Output as a table"}


def output_options(func=None, *, help: dict | None = None):
    """The four output flags, folded into one `fmt` argument; two at once is a usage error (exit 2)."""
    texts = {**FLAG_HELP, **(help or {})}

    def decorate(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            chosen = [name for name in FORMATS if kwargs.pop(f"fmt_{name}", False)]
            if len(chosen) > 1:
                raise click.UsageError("choose one output format, not "
                                       + " and ".join("--" + c for c in chosen))
            kwargs["fmt"] = chosen[0] if chosen else None
            return f(*args, **kwargs)

        wrapper = click.option("-t", "--table", "fmt_table", is_flag=True, help=texts["table"])(wrapper)
        wrapper = click.option("--csv", "fmt_csv", is_flag=True, help=texts["csv"])(wrapper)
        wrapper = click.option("--nl", "fmt_nl", is_flag=True, help=texts["nl"])(wrapper)
        wrapper = click.option("--json", "fmt_json", is_flag=True, help=texts["json"])(wrapper)
        return wrapper

    return decorate(func) if func is not None else decorate


def display_width(text: str) -> int:
    """Columns a string takes on a terminal: wide (CJK) characters take two, combining marks none."""
    return sum(0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1
               for ch in text)


def pad(text: str, width: int) -> str:
    return text + " " * (width - display_width(text))


def resolve_format(fmt: str | None) -> str:
    if fmt:
        return fmt
    return "table" if sys.stdout.isatty() else "json"


def dumps(value, pretty: bool = True) -> str:
    """JSON with control, format and separator characters escaped: the same data, safe to print."""
    option = orjson.OPT_INDENT_2 if pretty else 0
    return json_safe(orjson.dumps(value, option=option | orjson.OPT_NON_STR_KEYS).decode())


def emit(rows: list[dict], fmt: str | None, columns: tuple[str, ...] | None = None, *,
         heading=None, view=None) -> None:
    """Print rows; `columns` picks what a table shows (JSON, NL and CSV always carry every field),
    `view(row)` how a table words a row, `heading(row)` a line above each run of rows (to_table)."""
    fmt = resolve_format(fmt)
    if fmt == "json":
        click.echo(dumps(rows))
    elif fmt == "nl":
        for row in rows:
            click.echo(dumps(row, pretty=False))
    elif fmt == "csv":
        click.echo(to_csv(rows), nl=False)
    else:
        click.echo(to_table([view(r) for r in rows] if view else rows, columns, heading=heading))


def emit_one(obj: dict, fmt: str | None, render=None) -> None:
    """Print a single object: JSON for machines, `render(obj)` (or key: value lines) for people."""
    fmt = resolve_format(fmt)
    if fmt in ("json", "nl"):
        click.echo(dumps(obj, pretty=fmt == "json"))
    elif fmt == "csv":
        click.echo(to_csv([obj]), nl=False)
    else:
        # Each line escaped again: a render function that forgets a field still cannot print a
        # CR, an escape sequence or a line break of stored text.
        # A line wider than a table may be wraps at its spaces, its continuation indented.
        text = render(obj) if render else "\n".join(f"{escape(k)}: {cell(v)}" for k, v in obj.items())
        budget = table_width()
        click.echo("\n".join(part for line in text.split("\n") for part in hang(escape(line), budget)))


# A stored time in a table cell is shown to the second: `2026-09-30T18:00:00Z`, not
# `...:00.000000Z` (the JSON, CSV and NL outputs keep the microseconds the log holds).
_STORED_TIME = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.\d+Z")


def cell(value) -> str:
    if value is None:
        text = ""
    elif isinstance(value, str) and len(value) == 27 and value.endswith("Z"):
        text = _STORED_TIME.sub(r"\1Z", value)
    elif isinstance(value, (list, tuple)) and not any(isinstance(v, (list, dict)) for v in value):
        text = ", ".join("" if v is None else str(v) for v in value)      # a table reads a list as words
    elif isinstance(value, dict) and not any(isinstance(v, (list, dict)) for v in value.values()):
        text = ", ".join(f"{k}: {'' if v is None else v}" for k, v in value.items())
    elif isinstance(value, (list, dict)):
        text = dumps(value, pretty=False)
    elif isinstance(value, float):
        text = f"{value:.3g}" if value < 1 else f"{value:g}"
    else:
        text = str(value)
    return escape(text)


# A table fits this many columns when stdout is not a terminal (on one, the terminal's width;
# COLUMNS overrides both): long cells wrap inside their column, and a table that cannot fit even
# so prints one record per row.  Nothing is cut; --json, --nl and --csv are never wrapped.
TABLE_WIDTH = 120
GAP = "  "
# Kept whole on one line: an id, a time, a digest (to copy into the next command).  Any other
# word wraps after `_ . , / -` where it can, and anywhere when it must, but not below SHORTEST.
UNBROKEN = re.compile(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}|\d{4}-\d\d-\d\dT[\d:.]+Z|[0-9a-f]{16,}")
SOFT_BREAK = re.compile(r"[^_.,/-]*[_.,/-]|[^_.,/-]+")
SHORTEST = 8


def table_width() -> int:
    return max(40, shutil.get_terminal_size((TABLE_WIDTH, 24)).columns)


def wrap(text: str, width: int) -> list[str]:
    """Greedy word wrap by display width: a word too long for a line is broken after
    `_ . , / -`, else where it must be."""
    return greedy_wrap(text, width, display_width, SOFT_BREAK.findall)


def narrowest(text: str) -> int:
    """The fewest columns `text` may wrap into: its widest id, time or digest, else SHORTEST."""
    widths = [display_width(w) if UNBROKEN.fullmatch(w) else min(display_width(w), SHORTEST)
              for w in text.split(" ")]
    return max(widths, default=0)


def fit(natural: list[int], floors: list[list[int]], budget: int) -> list[int] | None:
    """Column widths summing (with gaps) to at most `budget`, or None.  Each floor is a stage
    (headers wrap, then cells at their spaces, then inside words): a stage is used only when the
    one before does not fit, and within it the widest column gives way first."""
    widths = list(natural)
    excess = sum(widths) + len(GAP) * (len(widths) - 1) - budget
    for least in floors:
        while excess > 0:
            shrinkable = [i for i, w in enumerate(widths) if w > least[i]]
            if not shrinkable:
                break
            i = max(shrinkable, key=lambda j: widths[j])
            others = [widths[j] for j in shrinkable if j != i]
            step = max(1, min(excess, widths[i] - least[i], widths[i] - max(others, default=0)))
            widths[i] -= step
            excess -= step
    return widths if excess <= 0 else None


def longest_word(text: str) -> int:
    return max(map(display_width, text.split(" ")), default=0)


def to_table(rows: list[dict], columns: tuple[str, ...] | None = None, width: int | None = None,
             heading=None) -> str:
    """Aligned columns within `width` (default: table_width()); long cells wrap inside their column,
    headers after their underscores; a table too wide even so prints one record per row.
    `heading(row)`, if given, is a line printed above each run of rows it gives the same text."""
    if not rows:
        return "(no rows)"
    budget = width or table_width()
    columns = columns or tuple(rows[0].keys())
    heads = [escape(c) for c in columns]
    cells = [[cell(row.get(c)) for c in columns] for row in rows]
    head_least = [max(map(display_width, SOFT_BREAK.findall(h) or [""])) for h in heads]
    floors = [[max(head_least[i], *(measure(r[i]) for r in cells)) for i in range(len(heads))]
              for measure in (display_width, longest_word, narrowest)]
    natural = [max(display_width(h), floors[0][i]) for i, h in enumerate(heads)]
    widths = fit(natural, floors, budget)
    if widths is None:
        return records(heads, cells, budget)
    lines = block([wrap(h, w) for h, w in zip(heads, widths)], widths)
    lines.append(GAP.join("-" * w for w in widths))
    shown = None
    for row, r in zip(rows, cells):
        if heading is not None and (title := escape(heading(row))) != shown:
            lines += ([""] if shown is not None else []) + hang(title, budget)
            shown = title
        lines += block([wrap(v, w) for v, w in zip(r, widths)], widths)
    return "\n".join(lines)


def hang(line: str, budget: int) -> list[str]:
    """A line of text within `budget` columns: wrapped at its spaces, continuations indented two
    more than the line."""
    if display_width(line) <= budget:
        return [line]
    indent = " " * (len(line) - len(line.lstrip(" ")))
    first, *rest = wrap(line.lstrip(" "), budget - len(indent))
    return [indent + first] + ([indent + "  " + part for part in wrap(" ".join(rest), budget - len(indent) - 2)]
                               if rest else [])


def block(wrapped: list[list[str]], widths: list[int]) -> list[str]:
    """One row's cells, each already wrapped to its column, as the lines they take."""
    height = max(len(w) for w in wrapped)
    return [GAP.join(pad(w[k] if k < len(w) else "", width) for w, width in zip(wrapped, widths)).rstrip()
            for k in range(height)]


def records(heads: list[str], cells: list[list[str]], budget: int) -> str:
    """One record per row (psql's expanded display): `column  value`, values wrapped to the width."""
    key = min(max(map(display_width, heads)), budget // 3)
    room = budget - key - len(GAP)
    lines: list[str] = []
    for n, r in enumerate(cells, 1):
        lines.append(f"-[ {n} ]" + "-" * (min(budget, 60) - len(f"-[ {n} ]")))
        for h, v in zip(heads, r):
            label = pad(split_to(h, key, display_width)[0], key)
            for k, part in enumerate(wrap(v, room)):
                lines.append(((label if k == 0 else " " * key) + GAP + part).rstrip())
    return "\n".join(lines)


def flat(row: dict, prefix: str = "") -> dict:
    """A row with scalar values only: nested objects become dotted columns, lists of scalars one
    space-separated cell; a list of records is refused (it has no cell)."""
    out: dict = {}
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flat(value, f"{name}.") if value else {name: None})
        elif isinstance(value, (list, tuple)):
            if any(isinstance(item, (dict, list, tuple)) for item in value):
                raise LedgerError(f"CSV holds one value a cell, and {name!r} is a list of records: "
                                  "use --json or --nl for this output")
            out[name] = " ".join("" if item is None else str(item) for item in value)
        else:
            out[name] = value
    return out


def to_csv(rows: list[dict]) -> str:
    buffer = io.StringIO()
    flattened = [flat(row) for row in rows]            # every refusal before the first byte
    if flattened:
        columns = list(dict.fromkeys(name for row in flattened for name in row))
        writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(flattened)
    return buffer.getvalue()


def emit_stream(rows, fmt: str | None, columns: tuple[str, ...] | None = None) -> int:
    """`emit` for an iterator, without holding it in memory (a table, which needs every width, and
    a CSV, which needs every column before the first row, are the exceptions: `--nl` streams any
    size).  Returns the number of rows."""
    fmt = resolve_format(fmt)
    if fmt in ("table", "csv"):      # a table needs every width, a CSV every column (bodies differ)
        rows = list(rows)
        emit(rows, fmt, columns)
        return len(rows)
    count = 0
    if fmt == "json":
        click.echo("[", nl=False)
    for row in rows:
        if fmt == "json":
            click.echo(("," if count else "") + "\n" + "\n".join(
                "  " + line for line in dumps(row).splitlines()), nl=False)
        else:
            click.echo(dumps(row, pretty=False))
        count += 1
    if fmt == "json":
        click.echo("\n]" if count else "]")
    return count
