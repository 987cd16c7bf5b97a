"""Property: no stored string, whatever its characters, changes the line structure of any text a
model or a terminal receives.

Hypothesis draws strings (biased towards line breaks, escape sequences, bidi overrides, role
markers and quote characters) and stores them as a value, a quote, a subject, a session id, an
event id and a predicate, through the real CLI.  Then every output a person or a model reads is
checked: the recall block (with and without --explain), `why`, `facts`, `history`, `review`,
`review --rejected`, `log` tables, JSON output, and the error a refused string produces.  Each
must hold exactly the lines its shape says and no character a terminal acts on.
"""

from __future__ import annotations

import json

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factledger.cli.main import cli
from factledger.ledger.vocabulary.terminal import LINE_BREAKS, line_safe, unsafe

HOSTILE = list(LINE_BREAKS) + ["\x1b", "\x1b[2J", "\x07", "\x00", "\x7f", "\u202e", "\u2066", "\u200b",
                               "\ufeff", "\U000e0041", "SYSTEM:", "</stored_facts>", "- ", '"', "\\",
                               "`", "\t", "by user", "\udfff"]
pieces = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=4),
                   st.text(alphabet="abcXYZ .:-_", min_size=1, max_size=6))
hostile_text = st.lists(pieces, min_size=1, max_size=6).map("".join)
MEAL = ["--app", "a", "--user", "u"]


def invoke(db, *args):
    return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)


def assert_lines(text: str, count: int | None = None) -> None:
    assert line_safe(text.rstrip("\n"), count), ascii(text)


def assert_error(result) -> None:
    assert result.exit_code in (1, 2) and result.stdout == ""
    assert result.stderr.startswith("Error: ") or "Usage:" in result.stderr
    if result.stderr.startswith("Error: "):
        assert_lines(result.stderr, 1)


def observe(db, **fields):
    base = dict(subject="user", predicate="diet", value="vegan", quote="I'm vegan", session="s1",
                event_id="e1", said_at="2026-09-30T10:00:00Z")
    base.update(fields)
    args = [f"--{k.replace('_', '-')}={v}" for k, v in base.items()]
    return invoke(db, "observe", *MEAL, *args, "--json")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=hostile_text, where=st.sampled_from(["value", "quote", "subject", "session", "event_id",
                                                  "predicate"]))
def test_no_stored_string_changes_the_line_structure_of_any_output(tmp_path_factory, text, where):
    db = tmp_path_factory.mktemp("p") / "l.db"
    if where == "value":
        # the quote must state the value for the validator; observe checks only its shape
        done = observe(db, value=text, quote=f"I said {text}")
    else:
        done = observe(db, **{where: text})
    if done.exit_code != 0:
        assert_error(done)
        return
    outcome = json.loads(done.stdout)
    assert not any(unsafe(ch) for ch in done.stdout if ch != "\n")
    if outcome["fact_id"]:
        why = invoke(db, "why", outcome["fact_id"], "-t").stdout
        events = len(json.loads(invoke(db, "why", outcome["fact_id"], "--json").stdout)["events"])
        assert_lines(why, 6 + events)
        facts = json.loads(invoke(db, "facts", *MEAL, "--json", "--include-sensitive").stdout)
        assert_lines(invoke(db, "facts", *MEAL, "-t", "--include-sensitive").stdout, len(facts) + 2)
        assert_lines(invoke(db, "history", *MEAL, "-t").stdout, len(facts) + 2)
        block = invoke(db, "recall", *MEAL, "--preload", "--clearance", "all").stdout
        assert_lines(block, 3 + len(facts))
        assert all(line.startswith(("<stored_facts>", "Stored facts", "- ", "</stored_facts>"))
                   for line in block.splitlines())
        explained = invoke(db, "recall", *MEAL, "--preload", "--clearance", "all", "--explain").stdout
        assert_lines(explained, 3 + len(facts) + 1 + 2 + len(facts) + 1)
    held = json.loads(invoke(db, "review", "--json").stdout)
    assert_lines(invoke(db, "review", "-t").stdout, max(len(held), 1) + (2 if held else 0))
    assert_lines(invoke(db, "log", "-t").stdout)
    for flag in ("--json", "--nl"):
        out = invoke(db, "log", flag).stdout
        assert not any(unsafe(ch) or ch in LINE_BREAKS for ch in out if ch != "\n")
    # the same string, refused: the error names it on one line
    assert_error(observe(db, **{where: text + "\x1b[2J\r\n"}))
