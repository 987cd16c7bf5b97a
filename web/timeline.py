"""A key's history drawn as SVG on the server: no script, no external font, nothing to fetch.

Two pictures of the same `fact_history` rows.  Valid time: one lane per value, a bar from
valid_from to valid_to (open bars run to now), coloured by basis; how the value ended is marked
at the bar's end (superseded, retracted, rejected), a disputed value is hatched, and a value an
erasure brought back carries a mark where it was reinstated.  Transaction time ("what we
believed when"): the same lanes, each interval of the ledger's belief from recorded_from to
recorded_to, coloured by the state the value had then; erasures are dashed vertical lines.
"""

from __future__ import annotations

from datetime import datetime
from html import escape

from factledger.ledger.vocabulary.clock import parse_time
from factledger.ledger.vocabulary.wrapping import greedy_wrap

BASIS_COLOURS = {"verified": "#1b7f3b", "stated": "#1f5fbf", "inferred": "#c77700"}
STATE_COLOURS = {"current": "#1f5fbf", "disputed": "#c77700", "superseded": "#8a8f98",
                 "retracted": "#b3261e", "rejected": "#5b5f66"}
# The plot is PLOT wide; the lane labels' column is as wide as the longest value needs (a value
# too long for LABEL_MAX wraps over more lines, its lane growing with it); the title sits above
# the marks row, which sits above the plot; the ticks below carry the date (and the time when the
# span is a few days or less).  Text is measured at CHAR pixels a character (11px system-ui).
PLOT, LABEL_MIN, LABEL_MAX, LANE, LINE, RIGHT, CHAR = 380, 90, 300, 30, 12, 100, 6.6
TITLE_Y, TOP = 16, 50          # title baseline; top of the first lane (marks at TOP - 12)
BOTTOM = 40                    # two lines of tick labels under the plot


def _text_width(text: str) -> float:
    return sum(CHAR * (2 if ord(ch) > 0x2E80 else 1) for ch in text)


def _wrap(text: str, width: float) -> list[str]:
    """A value's label in lines that fit `width` pixels: at spaces, or inside a long word."""
    return greedy_wrap(text, width, _text_width, list)


class _Layout:
    """Where everything goes: the label column, each lane's top and height, the whole size."""

    def __init__(self, labels: list[str]):
        widest = max((_text_width(t) for t in labels), default=0)
        self.label = min(max(LABEL_MIN, widest + 16), LABEL_MAX)
        self.lines = [_wrap(t, self.label - 16) for t in labels]
        self.tops, y = [], TOP
        for lines in self.lines or [[""]]:
            self.tops.append(y)
            y += max(LANE, LINE * len(lines) + 10)
        self.plot_bottom = y
        self.height = y + BOTTOM
        self.width = self.label + PLOT + RIGHT

    def bar_y(self, i: int) -> float:
        return self.tops[i] + 4

    def scale(self, start: datetime, end: datetime):
        span = max((end - start).total_seconds(), 1.0)

        def x(moment: datetime) -> float:
            return self.label + PLOT * (moment - start).total_seconds() / span
        return x

    def fit(self, x: float, text: str) -> float:
        """x for a text starting at x, moved left if it would leave the picture."""
        return min(x, self.width - 4 - _text_width(text))


def _lanes(rows: list[dict]) -> list[str]:
    lanes: list[str] = []
    for row in rows:
        if row["fact_id"] not in lanes:
            lanes.append(row["fact_id"])
    return lanes


def _bounds(rows: list[dict], now: datetime, *fields: str) -> tuple[datetime, datetime]:
    moments = [parse_time(row[f]) for row in rows for f in fields if row.get(f)]
    start = min(moments, default=now)
    end = max([*moments, now])
    pad = (end - start) * 0.04
    return start - pad, end + pad


def _axis(layout: _Layout, x, start: datetime, end: datetime, title: str) -> list[str]:
    """The title above everything, the axis line, and five ticks each labelled with its date
    (and, on a span of four days or less, its time on a second line)."""
    out = [f'<text x="{layout.label}" y="{TITLE_Y}" class="axis-title">{escape(title)}</text>',
           f'<line x1="{layout.label}" y1="{TOP - 8}" x2="{layout.label + PLOT}" y2="{TOP - 8}" class="axis"/>']
    with_time = (end - start).total_seconds() <= 4 * 86400
    for i in range(5):
        moment = start + (end - start) * (i / 4)
        px = x(moment)
        out.append(f'<line x1="{px:.1f}" y1="{TOP - 8}" x2="{px:.1f}" y2="{layout.plot_bottom}" class="grid"/>')
        time = (f'<tspan x="{px:.1f}" dy="{LINE}">{moment.strftime("%H:%M UTC")}</tspan>' if with_time else "")
        out.append(f'<text x="{px:.1f}" y="{layout.plot_bottom + 14}" class="tick">'
                   f'{moment.strftime("%Y-%m-%d")}{time}</text>')
    return out


def _label(layout: _Layout, index: int) -> str:
    lines = layout.lines[index]
    y = layout.tops[index] + 17
    spans = "".join(f'<tspan x="{layout.label - 8}" dy="{0 if k == 0 else LINE}">{escape(line)}</tspan>'
                    for k, line in enumerate(lines))
    return f'<text x="{layout.label - 8}" y="{y:.0f}" class="lane-label">{spans}</text>'


def _svg(layout: _Layout, title: str, parts: list[str]) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" viewBox="0 0 {layout.width:.0f} {layout.height}" '
            f'width="{layout.width:.0f}" height="{layout.height}"><title>{escape(title)}</title>'
            '<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
            'patternTransform="rotate(45)"><rect width="3" height="6" fill="#ffffff" opacity="0.55"/>'
            '</pattern></defs>' + "".join(parts) + "</svg>")


def valid_time_svg(rows: list[dict], reinstated: list[dict], now: datetime) -> str:
    """What was true when, by today's knowledge: the open interval of each fact."""
    latest = {row["fact_id"]: row for row in rows if row["recorded_to"] is None}
    lanes = [f for f in _lanes(rows) if f in latest]
    layout = _Layout([str(latest[f]["value"]) for f in lanes])
    start, end = _bounds(list(latest.values()), now, "valid_from", "valid_to")
    x = layout.scale(start, end)
    parts = _axis(layout, x, start, end, "valid time: what was true when")
    back = {mark["fact_id"]: mark for mark in reinstated}
    for i, fact_id in enumerate(lanes):
        row = latest[fact_id]
        y = layout.bar_y(i)
        x0 = x(parse_time(row["valid_from"]))
        x1 = x(parse_time(row["valid_to"])) if row["valid_to"] else x(now)
        colour = BASIS_COLOURS.get(row["basis"], "#555")
        state = row["state"]
        label = f'{row["value"]}: {state}, {row["basis"]}'
        parts.append(_label(layout, i))
        parts.append(f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 2):.1f}" height="18" rx="3" '
                     f'fill="{colour}" class="bar state-{escape(state)}"><title>{escape(label)}</title></rect>')
        if state == "disputed":
            parts.append(f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 2):.1f}" height="18" '
                         'fill="url(#hatch)"/>')
        if state in ("superseded", "retracted", "rejected"):
            glyph = {"superseded": "▶", "retracted": "✕", "rejected": "⊘"}[state]
            text = f"{glyph} {state}"
            parts.append(f'<text x="{layout.fit(x1 + 3, text):.1f}" y="{y + 14}" class="mark mark-{state}">'
                         f'{text}</text>')
        elif not row["valid_to"]:
            parts.append(f'<text x="{layout.fit(x1 + 3, state):.1f}" y="{y + 14}" class="mark">{escape(state)}</text>')
        if fact_id in back:
            text = f'↺ reinstated after erasure (seq {back[fact_id]["cause"]})'
            on_bar = x1 - x0 >= _text_width(text) + 6
            parts.append(f'<text x="{layout.fit(x0 + 3, text):.1f}" y="{y + 14}" class="mark'
                         f'{" on-bar" if on_bar else " reinstated"}">{escape(text)}</text>')
    return _svg(layout, "valid-time history", parts)


def transaction_time_svg(rows: list[dict], reinstated: list[dict], now: datetime) -> str:
    """What the ledger believed when: every interval of every fact, coloured by its state then."""
    lanes = _lanes(rows)
    values = {}
    for row in rows:
        values.setdefault(row["fact_id"], row["value"])
    layout = _Layout([str(values[f]) for f in lanes])
    marks = [parse_time(m["recorded_at"]) for m in reinstated]
    start, end = _bounds(rows, now, "recorded_from", "recorded_to")
    start, end = min([start, *marks]), max([end, *marks])
    x = layout.scale(start, end)
    parts = _axis(layout, x, start, end, "transaction time: what we believed when")
    for i, fact_id in enumerate(lanes):
        parts.append(_label(layout, i))
        y = layout.bar_y(i)
        for row in (r for r in rows if r["fact_id"] == fact_id):
            x0 = x(parse_time(row["recorded_from"]))
            x1 = x(parse_time(row["recorded_to"])) if row["recorded_to"] else x(now)
            state = row["state"]
            colour = STATE_COLOURS.get(state, "#555")
            label = f'{row["value"]}: {state} from {row["recorded_from"]} to {row["recorded_to"] or "now"}'
            parts.append(f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 2):.1f}" height="18" rx="2" '
                         f'fill="{colour}" class="bar state-{escape(state)}"><title>{escape(label)}</title></rect>')
    for mark, moment in zip(reinstated, marks, strict=True):
        px = x(moment)
        text = f'erasure {mark["cause"]}'
        parts.append(f'<line x1="{px:.1f}" y1="{TOP - 6}" x2="{px:.1f}" y2="{layout.plot_bottom}" class="erasure"/>')
        parts.append(f'<text x="{layout.fit(px + 3, text):.1f}" y="{TOP - 12}" class="mark mark-erasure">'
                     f'{escape(text)}</text>')
    return _svg(layout, "transaction-time history", parts)


STYLE = """
svg .axis, svg .grid { stroke: #c9ccd1; } svg .grid { stroke-dasharray: 2 3; }
svg text { font: 11px system-ui, sans-serif; fill: #222; }
svg .axis-title { font-weight: 600; } svg .tick { text-anchor: middle; fill: #555; }
svg .lane-label { text-anchor: end; } svg .mark-retracted { fill: #b3261e; }
svg .mark-erasure { fill: #6a1b9a; font-weight: 600; } svg .on-bar { fill: #fff; font-weight: 600; }
svg .erasure { stroke: #6a1b9a; stroke-dasharray: 4 3; } svg .reinstated { fill: #6a1b9a; }
"""
