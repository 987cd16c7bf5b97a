"""Imports that cost nothing (docs/performance.md): what a bare import, `--version` and `--help` load.

Each check runs in a fresh interpreter, since this process has long since imported everything.
No timing is asserted here: the wall times are measured and written down in docs/performance.md.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import import_module

import click
import click.testing
import pytest

from factledger.cli.main import COMMANDS, cli, load_command

# What neither `--version` nor `--help` may import: the store, the models, the extractor's client,
# the semantic extra's runtime, the web view and google-adk.
HEAVY = ("factledger.ledger.store", "pydantic", "anthropic", "numpy", "onnxruntime", "datasette",
         "google.adk", "sqlite_utils", "psycopg")


def _modules_after(code: str) -> list[str]:
    """The names in `sys.modules` once `code` has run in a fresh interpreter."""
    probe = code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def _modules_after_cli(*args: str) -> list[str]:
    return _modules_after(
        "from factledger.cli.main import cli\n"
        "import contextlib, io\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        f"        cli({list(args)!r}, prog_name='factledger', standalone_mode=False)\n"
        "    except SystemExit:\n"
        "        pass\n")


def _heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]


def test_importing_factledger_loads_at_most_three_of_its_modules():
    loaded = [m for m in _modules_after("import factledger") if m.startswith("factledger")]
    assert len(loaded) <= 3, loaded


def test_the_public_names_still_load_on_first_use():
    probe = ("import factledger, factledger.ledger as fl\n"
             "from factledger import Candidate, ChainError, Ledger, LedgerError, Outcome, make_candidate\n"
             "from factledger.ledger.service import Ledger as L\n"
             "assert Ledger is L is fl.Ledger is factledger.Ledger\n"
             "assert issubclass(ChainError, LedgerError)\n"
             "assert set(factledger.__all__) <= set(dir(factledger))\n"
             "assert set(fl.__all__) <= set(dir(fl))\n"
             "try:\n    factledger.no_such_name\nexcept AttributeError:\n    pass\n"
             "else:\n    raise AssertionError('no AttributeError')\n")
    _modules_after(probe)


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_version_and_help_load_no_store_model_or_extra(flag):
    loaded = _modules_after_cli(flag)
    assert _heavy(loaded) == []
    # and no command's module: the group and what it shares are all of the CLI that loads
    assert {m for m in loaded if m.startswith("factledger.cli.")} <= {
        "factledger.cli.main", "factledger.cli.context", "factledger.cli.partition"}


def test_a_command_loads_only_its_own_module():
    loaded = _modules_after_cli("facts", "--help")
    assert "factledger.cli.core" in loaded
    assert not {"factledger.cli.serve", "factledger.cli.demo", "factledger.cli.ingest"} & set(loaded)


def test_a_read_of_a_sqlite_ledger_loads_no_postgres_driver(tmp_path):
    # the one engine factory names both engines; PostgreSQL's driver (about 0.1 s of imports)
    # loads only when a postgresql:// ledger is opened or one of its errors is translated
    db = tmp_path / "t.db"
    made = subprocess.run([sys.executable, "-c", "from factledger.cli.main import cli; cli()", "--db",
                           str(db), "init"], capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    loaded = _modules_after_cli("--db", str(db), "facts", "--app", "a", "--user", "u")
    assert "factledger.ledger.store.sqlite.engine" in loaded
    assert not [m for m in loaded if m == "psycopg" or m.startswith("psycopg.")]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_in_the_table_resolves_to_a_click_command_of_its_name(name):
    command = load_command(name)
    assert isinstance(command, click.Command)
    assert command.name == name
    assert cli.get_command(click.Context(cli), name) is command
    assert not command.hidden and not command.deprecated
    # the table's short help is the command's own, shortened to any width by the same rule
    stand_in = click.Command(name, help=COMMANDS[name][1])
    assert COMMANDS[name][1] == command.get_short_help_str(10_000)
    for limit in range(10, 130):
        assert stand_in.get_short_help_str(limit) == command.get_short_help_str(limit), limit


def test_the_table_names_every_command_of_every_command_module():
    modules = {spec.split(":")[0] for spec, _ in COMMANDS.values()}
    declared = {c.name for m in modules for c in import_module(f"factledger.cli.{m}").COMMANDS}
    assert declared == set(COMMANDS)


def test_help_lists_every_command_as_click_itself_would():
    runner = click.testing.CliRunner()
    shown = runner.invoke(cli, ["--help"], terminal_width=80)
    assert shown.exit_code == 0
    listed = shown.output.split("Commands:\n", 1)[1]
    names = [line.split()[0] for line in listed.splitlines() if line.startswith("  ") and line[2] != " "]
    assert names == sorted(COMMANDS)
    # the same listing click writes from the loaded commands themselves
    eager = click.Group("factledger", commands={n: load_command(n) for n in COMMANDS})
    formatter = click.HelpFormatter(width=80)
    eager.format_commands(click.Context(eager), formatter)
    assert formatter.getvalue() in shown.output


def test_a_misspelt_command_is_answered_as_before():
    # in a fresh process, where no command is loaded yet: click (8.4 on) suggests a close name
    probe = "from factledger.cli.main import cli\ncli(['fact'], prog_name='factledger')\n"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "Error: No such command 'fact'." in done.stderr
    if hasattr(click.exceptions, "NoSuchCommand"):
        assert "Did you mean 'facts'?" in done.stderr
