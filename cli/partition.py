"""Which partition a command acts on: the one rule every command follows.

The rule (docs/cli.md, "Which partition a command acts on"): typed `--app` / `--user` win;
otherwise `FACTLEDGER_APP` / `FACTLEDGER_USER` stand in for them in every command that takes a
partition, exactly as if typed, and the command says so on stderr (a value left in a shell must
never act in silence; a notice, not a refusal, because scripts set them on purpose); a command on
the whole ledger (`retain`, the whole-log `export`) needs `--all`, refused while a partition is
set: "everything" and "this tenant" are never guessed from one another.
"""

from __future__ import annotations

import functools

import click
from click.core import ParameterSource

from factledger.ledger.vocabulary.ids import normalise_id, normalise_partition

ENV = {"app": "FACTLEDGER_APP", "user": "FACTLEDGER_USER"}


def from_environment(ctx: click.Context, name: str) -> bool:
    try:
        return ctx.get_parameter_source(name) == ParameterSource.ENVIRONMENT
    except KeyError:                         # not a parameter of this command
        return False


def announce(ctx: click.Context, app: str | None, user: str | None) -> None:
    """Say on stderr which parts of the partition came from the environment (nothing if none did)."""
    taken = [f"{name} {value!r} from {ENV[name]}" for name, value in (("app", app), ("user", user))
             if value is not None and from_environment(ctx, name)]
    if taken:
        click.echo(f"factledger: partition: {', '.join(taken)} "
                   f"(the environment stands in for --app/--user)", err=True)


def clean(value: str | None, what: str) -> str | None:
    """An id as the ledger stores it (ledger.ids.normalise_id); None stays None."""
    if value is None:
        return None
    return normalise_id(value, what)


def partition_options(func=None, *, required: bool = True, help_app: str | None = None,
                      help_user: str | None = None):
    """--app/--user honouring FACTLEDGER_APP/FACTLEDGER_USER, announced on stderr when used.

    `required`: both are needed (a missing one is a usage error naming it, exit 2); otherwise
    they are optional filters.  The command receives normalised ids.
    """
    def decorate(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            ctx = click.get_current_context()
            app, user = kwargs.get("app"), kwargs.get("user")
            if required:
                app, user = require_partition(app, user)
            else:
                app, user = clean(app, "app"), clean(user, "user")
            if not isinstance(ctx.command, click.Group) or ctx.invoked_subcommand is None:
                announce(ctx, app, user)
            kwargs["app"], kwargs["user"] = app, user
            return f(*args, **kwargs)

        wrapper = click.option("--user", envvar=ENV["user"],
                               help=help_user or "User of the partition (env FACTLEDGER_USER)")(wrapper)
        wrapper = click.option("--app", envvar=ENV["app"],
                               help=help_app or "App of the partition (env FACTLEDGER_APP)")(wrapper)
        return wrapper

    return decorate(func) if func is not None else decorate


def require_partition(app: str | None, user: str | None) -> tuple[str, str]:
    """Both ids, normalised; a missing (or blank) one is a usage error that names it."""
    missing = [f"--{name} (or {ENV[name]})" for name, value in (("app", app), ("user", user))
               if not value or not value.strip()]
    if missing:
        raise click.UsageError(f"this command acts on one partition: give {' and '.join(missing)}")
    return normalise_partition(app, user)      # the library's one spelling of ids


def all_option(func):
    return click.option("--all", "all_", is_flag=True,
                         help="Act on the whole ledger (refused while a partition is set)")(func)


def check_whole_ledger(ctx: click.Context, all_: bool, app: str | None, user: str | None,
                       command: str) -> bool:
    """True when the command acts on the whole ledger; a usage error when that is ambiguous."""
    if all_:
        if app is not None or user is not None:
            sources = [ENV[n] if from_environment(ctx, n) else f"--{n}"
                       for n, v in (("app", app), ("user", user)) if v is not None]
            raise click.UsageError(
                f"--all acts on the whole ledger, but a partition is set ({', '.join(sources)}); "
                "drop one of them" + (" (unset the environment variable)"
                                      if any(s.startswith("FACTLEDGER_") for s in sources) else ""))
        return True
    if app is None and user is None:
        raise click.UsageError(f"{command} acts on every partition: say --all, or name one with "
                               "--app (and --user)")
    return False
