"""What every command shares: the global options, the open ledger, and error handling.

No rule lives here: commands parse, call `ledger.Ledger`, and format.  `LedgerError` becomes
`Error: ...` (one line, escaped for the terminal) and exit 1; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

from factledger.cli.partition import partition_options, require_partition  # noqa: F401  (the partition rule)
from factledger.ledger import LedgerError
from factledger.ledger.errors import LedgerNotFound
from factledger.ledger.vocabulary.clock import clock_from_env
from factledger.ledger.vocabulary.terminal import escape

# The group (`cli.main`) is built from this module, and `factledger --version` or `--help` must not
# pay for the facade, the store or PostgreSQL's driver: those load where they are used, below
# (docs/performance.md, "Imports that cost nothing").
if TYPE_CHECKING:
    from factledger.ledger import Ledger


class LedgerGroup(click.Group):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # argv bytes that are not UTF-8 reach Python as lone surrogates (surrogateescape); no
        # command can store or even look them up, so refuse them before anything runs.
        for arg in args:
            if isinstance(arg, str) and any("\ud800" <= ch <= "\udfff" for ch in arg):
                raise click.ClickException(
                    f"argument {ascii(arg)[:80]} is not valid UTF-8 text (lone surrogate)")
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context):
        try:
            return self._invoke(ctx)
        except click.ClickException as exc:
            # Error text quotes file names, JSON keys, ids and a model's words: one line, always.
            exc.message = escape(exc.message)
            raise

    def _invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except LedgerError as exc:
            raise click.ClickException(str(exc)) from None
        except UnicodeEncodeError as exc:      # e.g. an environment variable with invalid UTF-8
            raise click.ClickException(f"input is not valid UTF-8 text ({exc.reason})") from None


class State:
    def __init__(self, db: str, registry: str | None, busy_timeout: float = 5.0,
                 future_tolerance: str | None = None, read_db: str | None = None):
        self.db = db
        self.read_db = read_db or None       # a replica the read commands read from (--read-db)
        self.future_tolerance = future_tolerance
        self.registry = registry
        self.busy_timeout = busy_timeout
        self._ledger: Ledger | None = None
        self._reader: Ledger | None = None

    def ledger(self, create: bool = False, read_only: bool = False, repair: bool = False,
               leave_schema: bool = False, primary: bool = False) -> Ledger:
        """The ledger, opened once per command.  A read command asks for `read_only`: the file (or
        the PostgreSQL session) is opened so that it cannot write, and a schema that differs is
        said on stderr, not repaired; a write command repairs what is missing, `repair` also what
        is altered (docs/decisions.md, "Read-only opens"); a dry run asks to `leave_schema` as a
        read finds it.  With a read URL (`--read-db`) a read-only open is of the replica there,
        unless the command asks for the `primary` (what only the primary can tell:
        docs/decisions.md, "Readers on a replica")."""
        if read_only and self.read_db and not primary:
            if self._reader is None:
                self._reader = self._open(self.read_db, create=False, read_only=True, repair=False)
            return self._reader
        if self._ledger is None:
            self._ledger = self._open(self.db, create, read_only, repair, leave_schema)
        return self._ledger

    def _open(self, location: str, create: bool, read_only: bool, repair: bool,
              leave_schema: bool = False) -> Ledger:
        from factledger.ledger import Ledger
        from factledger.ledger.service import is_server_location

        if not create and location != ":memory:" and not is_server_location(location) and not os.path.exists(location):
            raise LedgerNotFound(f"no ledger at {location}: run `factledger init` first (write "
                                 "commands also take --create); nothing was created")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)   # said below, in the CLI's words
            ledger = Ledger(location, registry=self.registry, clock=clock_from_env(),
                            busy_timeout=self.busy_timeout, create=create,
                            future_tolerance=self.future_tolerance, read_only=read_only, repair=repair,
                            leave_schema=leave_schema)
        if not repair:                                 # `factledger repair` says it in its own words
            for line in ledger.schema_report:
                click.echo(f"Warning: {line}", err=True)
        return ledger

    @contextmanager
    def ledger_undone_on_error(self, create: bool) -> Iterator[Ledger]:
        """The ledger of a write that may create it (`--create`, `import`): when the write fails, a
        ledger it created is removed, file or schema, so a refused write leaves nothing behind."""
        from factledger.ledger.service import holds_location, remove_location

        created = create and not holds_location(self.db)
        try:
            yield self.ledger(create=create)
        except LedgerError:
            if created:
                self.close()
                remove_location(self.db)
            raise

    def close(self) -> None:
        for ledger in (self._ledger, self._reader):
            if ledger is not None:
                ledger.close()
        self._ledger = self._reader = None


pass_state = click.make_pass_decorator(State)


def require_file(state: State, command: str) -> None:
    """A command that reads the SQLite file itself (query, serve) refuses a PostgreSQL ledger."""
    from factledger.ledger.service import is_server_location

    if is_server_location(state.db):
        raise LedgerError(f"{command} reads a SQLite ledger file; this ledger is on PostgreSQL "
                          "(read it with psql under a read-only role: docs/scale.md)")


def create_option(func):
    """--create: a write command makes a new ledger only when asked (or after `init`)."""
    return click.option("--create", is_flag=True,
                        help="Create the ledger file if it does not exist (as `init` does)")(func)
