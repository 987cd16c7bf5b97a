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

BASIS_COLOURS = {"verified": "#1b7f3b", "stated": "#1f5fbf", "inferred": "#c77700"}
STATE_COLOURS = {"current": "#1f5fbf", "disputed": "#c77700", "superseded": "#8a8f98",
                 "retracted": "#b3261e", "rejected": "#5b5f66"}
WIDTH, LABEL, LANE, TOP, RIGHT = 610, 150, 30, 34, 96


def _scale(start: datetime, end: datetime):
    span = max((end - start).total_seconds(), 1.0)
    usable = WIDTH - LABEL - RIGHT

    def x(moment: datetime) -> float:
        return LABEL + usable * (moment - start).total_seconds() / span
    return x


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


def _axis(x, start: datetime, end: datetime, height: int, title: str) -> list[str]:
    out = [f'<text x="{LABEL}" y="14" class="axis-title">{escape(title)}</text>',
           f'<line x1="{LABEL}" y1="{TOP - 8}" x2="{WIDTH - RIGHT}" y2="{TOP - 8}" class="axis"/>']
    span = (end - start).total_seconds()
    pattern = "%Y-%m-%d" if span > 4 * 86400 else "%m-%d %H:%M" if span > 3600 else "%H:%M:%S"
    for i in range(5):
        moment = start + (end - start) * (i / 4)
        px = x(moment)
        out.append(f'<line x1="{px:.1f}" y1="{TOP - 12}" x2="{px:.1f}" y2="{height - 20}" class="grid"/>')
        out.append(f'<text x="{px:.1f}" y="{height - 6}" class="tick">{moment.strftime(pattern)}</text>')
    return out


def _label(index: int, text: str) -> str:
    y = TOP + index * LANE + 17
    short = text if len(text) <= 24 else text[:23] + "…"
    return f'<text x="{LABEL - 8}" y="{y}" class="lane-label">{escape(short)}</text>'


def _svg(height: int, title: str, parts: list[str]) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" viewBox="0 0 {WIDTH} {height}" '
            f'width="{WIDTH}" height="{height}"><title>{escape(title)}</title>'
            '<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
            'patternTransform="rotate(45)"><rect width="3" height="6" fill="#ffffff" opacity="0.55"/>'
            '</pattern></defs>' + "".join(parts) + "</svg>")


def valid_time_svg(rows: list[dict], reinstated: list[dict], now: datetime) -> str:
    """What was true when, by today's knowledge: the open interval of each fact."""
    latest = {row["fact_id"]: row for row in rows if row["recorded_to"] is None}
    lanes = [f for f in _lanes(rows) if f in latest]
    height = TOP + LANE * max(len(lanes), 1) + 26
    start, end = _bounds(list(latest.values()), now, "valid_from", "valid_to")
    x = _scale(start, end)
    parts = _axis(x, start, end, height, "valid time: what was true when")
    back = {mark["fact_id"]: mark for mark in reinstated}
    for i, fact_id in enumerate(lanes):
        row = latest[fact_id]
        y = TOP + i * LANE + 4
        x0 = x(parse_time(row["valid_from"]))
        x1 = x(parse_time(row["valid_to"])) if row["valid_to"] else x(now)
        colour = BASIS_COLOURS.get(row["basis"], "#555")
        state = row["state"]
        label = f'{row["value"]}: {state}, {row["basis"]}'
        parts.append(_label(i, row["value"]))
        parts.append(f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 2):.1f}" height="18" rx="3" '
                     f'fill="{colour}" class="bar state-{escape(state)}"><title>{escape(label)}</title></rect>')
        if state == "disputed":
            parts.append(f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 2):.1f}" height="18" '
                         'fill="url(#hatch)"/>')
        if state in ("superseded", "retracted", "rejected"):
            glyph = {"superseded": "▶", "retracted": "✕", "rejected": "⊘"}[state]
            parts.append(f'<text x="{x1 + 3:.1f}" y="{y + 14}" class="mark mark-{state}">{glyph} {state}</text>')
        elif not row["valid_to"]:
            parts.append(f'<text x="{x1 + 3:.1f}" y="{y + 14}" class="mark">{escape(state)}</text>')
        if fact_id in back:
            parts.append(f'<text x="{x0 + 3:.1f}" y="{y + 14}" class="mark on-bar">↺ reinstated '
                         f'after erasure (seq {back[fact_id]["cause"]})</text>')
    return _svg(height, "valid-time history", parts)


def transaction_time_svg(rows: list[dict], reinstated: list[dict], now: datetime) -> str:
    """What the ledger believed when: every interval of every fact, coloured by its state then."""
    lanes = _lanes(rows)
    height = TOP + LANE * max(len(lanes), 1) + 26
    marks = [parse_time(m["recorded_at"]) for m in reinstated]
    start, end = _bounds(rows, now, "recorded_from", "recorded_to")
    start, end = min([start, *marks]), max([end, *marks])
    x = _scale(start, end)
    parts = _axis(x, start, end, height, "transaction time: what we believed when")
    values = {}
    for row in rows:
        values.setdefault(row["fact_id"], row["value"])
    for i, fact_id in enumerate(lanes):
        parts.append(_label(i, values[fact_id]))
        y = TOP + i * LANE + 4
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
        parts.append(f'<line x1="{px:.1f}" y1="{TOP - 6}" x2="{px:.1f}" y2="{height - 22}" class="erasure"/>')
        parts.append(f'<text x="{px + 3:.1f}" y="{TOP - 12}" class="mark mark-erasure">erasure '
                     f'{mark["cause"]}</text>')
    return _svg(height, "transaction-time history", parts)


STYLE = """
svg .axis, svg .grid { stroke: #c9ccd1; } svg .grid { stroke-dasharray: 2 3; }
svg text { font: 11px system-ui, sans-serif; fill: #222; }
svg .axis-title { font-weight: 600; } svg .tick { text-anchor: middle; fill: #555; }
svg .lane-label { text-anchor: end; } svg .mark-retracted { fill: #b3261e; }
svg .mark-erasure { fill: #6a1b9a; font-weight: 600; } svg .on-bar { fill: #fff; font-weight: 600; }
svg .erasure { stroke: #6a1b9a; stroke-dasharray: 4 3; }
"""
