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
import sys
import unicodedata

import click
import orjson

from factledger.ledger.errors import LedgerError
from factledger.ledger.vocabulary.terminal import escape, json_safe

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


def cut(text: str, width: int) -> str:
    if display_width(text) <= width:
        return text
    out, used = "", 0
    for ch in text:
        w = display_width(ch)
        if used + w > width - 1:
            break
        out, used = out + ch, used + w
    return out + "…"


def resolve_format(fmt: str | None) -> str:
    if fmt:
        return fmt
    return "table" if sys.stdout.isatty() else "json"


def dumps(value, pretty: bool = True) -> str:
    """JSON with control, format and separator characters escaped: the same data, safe to print."""
    option = orjson.OPT_INDENT_2 if pretty else 0
    return json_safe(orjson.dumps(value, option=option | orjson.OPT_NON_STR_KEYS).decode())


def emit(rows: list[dict], fmt: str | None, columns: tuple[str, ...] | None = None) -> None:
    """Print rows; `columns` picks what a table shows (JSON, NL and CSV always carry every field)."""
    fmt = resolve_format(fmt)
    if fmt == "json":
        click.echo(dumps(rows))
    elif fmt == "nl":
        for row in rows:
            click.echo(dumps(row, pretty=False))
    elif fmt == "csv":
        click.echo(to_csv(rows), nl=False)
    else:
        click.echo(to_table(rows, columns))


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
        text = render(obj) if render else "\n".join(f"{escape(k)}: {cell(v)}" for k, v in obj.items())
        click.echo("\n".join(escape(line) for line in text.split("\n")))


# A stored time in a table cell is shown to the second: `2026-09-30T18:00:00Z`, not
# `...:00.000000Z` (the JSON, CSV and NL outputs keep the microseconds the log holds).
_STORED_TIME = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.\d+Z")


def cell(value, width: int | None = None) -> str:
    if value is None:
        text = ""
    elif isinstance(value, str) and len(value) == 27 and value.endswith("Z"):
        text = _STORED_TIME.sub(r"\1Z", value)
    elif isinstance(value, (list, dict)):
        text = dumps(value, pretty=False)
    elif isinstance(value, float):
        text = f"{value:.3g}" if value < 1 else f"{value:g}"
    else:
        text = str(value)
    text = escape(text)
    return cut(text, width) if width else text


def to_table(rows: list[dict], columns: tuple[str, ...] | None = None, width: int | None = -1) -> str:
    """Aligned columns; long values are cut to `width` only on a terminal (piped, nothing is cut)."""
    if not rows:
        return "(no rows)"
    if width == -1:
        width = 40 if sys.stdout.isatty() else None
    columns = columns or tuple(rows[0].keys())
    cells = [[cell(row.get(c), width) for c in columns] for row in rows]
    widths = [max(display_width(escape(c)), *(display_width(r[i]) for r in cells))
              for i, c in enumerate(columns)]
    lines = ["  ".join(pad(escape(c), w) for c, w in zip(columns, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(pad(v, w) for v, w in zip(r, widths)).rstrip() for r in cells]
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
