"""The guard on Datasette's own pages gives one decision through both hooks: `permission_allowed`
(Datasette 0.65) and `permission_resources_sql` (Datasette 1.0).

Both functions are called directly over a table of actor/action/resource cases.  The 1.0 hook's
SQL is decided here the way Datasette 1.0 decides it (the most specific matching row, a deny
before an allow at the same depth, no row a deny, then the `restriction_sql` allowlist), alone
and next to another plugin that allows everything at every depth.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("datasette", reason="the web view is the optional `ui` extra")

from datasette.plugins import pm  # noqa: E402

from factledger import web  # noqa: E402
from factledger.ledger.registry.predicates import load_registry  # noqa: E402
from factledger.web import hooks  # noqa: E402
from factledger.web.config import WebConfig, attach  # noqa: E402
from tests.web.helpers import actors  # noqa: E402

# A signed-in actor is a name and a live session (web/sessions.py); the fixture opens `live-NAME`.
ACTORS = [None, {}, {"id": None}, {"id": "nobody"}, {"id": "nobody", "sid": "live-rao"},
          *({"id": name, "sid": f"live-{name}"} for name in ("vic", "pat", "hal", "rao")),
          {"id": "rao"}, {"id": "rao", "sid": "signed-out"}, {"id": "rao", "sid": "live-hal"},
          {"id": "rao", "token": "dstok"}, {"id": 7}, {"name": "rao"}, "rao"]
DATABASES = ["ledger", "_internal", "other", "Ledger"]
RESOURCES = {  # action: the resources Datasette 0.65 passes for it
    "view-instance": [None],
    "view-database": DATABASES, "view-database-download": DATABASES, "execute-sql": DATABASES,
    "view-table": [(db, table) for db in DATABASES for table in ("events", "catalog_tables")],
    "view-query": [(db, "q") for db in DATABASES],
    "permissions-debug": [None], "debug-menu": [None],
    "insert-row": [("ledger", "events")], "view-table-typo": [("ledger", "events")]}
EVERYWHERE = [(None, None), ("ledger", None), ("_internal", None), ("other", None), ("Ledger", None),
              *[(db, child) for db in DATABASES for child in ("events", "catalog_tables", "q")]]


@pytest.fixture(scope="module")
def datasette():
    stand_in = SimpleNamespace()
    config = WebConfig(Path("ledger.db"), load_registry(None), actors(iterations=1))
    for actor in config.actors.values():
        config.sessions.open(actor, 3600, token=f"live-{actor.name}")
    attach(stand_in, config)
    return stand_in


def parent_child(resource) -> tuple[str | None, str | None]:
    """Datasette 0.65's resource (None, a database, or a (database, table or query) pair) as
    1.0's (parent, child)."""
    if resource is None:
        return None, None
    if isinstance(resource, tuple):
        return resource
    return resource, None


def decide_1_0(results, actor, action, parent, child) -> bool:
    """Datasette 1.0's verdict on one resource from the PermissionSQL its plugins returned."""
    params = {"actor": json.dumps(actor) if actor is not None else None,
              "actor_id": actor.get("id") if isinstance(actor, dict) else None, "action": action,
              "check_parent": parent, "check_child": child}
    for result in results:
        params.update(result.params or {})
    rows = [r.sql for r in results if r.sql is not None]
    restrictions = [r.restriction_sql for r in results if r.restriction_sql is not None]
    if not rows:
        return False
    conn = sqlite3.connect(":memory:")
    try:
        winner = conn.execute(
            "WITH rules AS (" + " UNION ALL ".join(f"SELECT parent, child, allow FROM ({sql})"
                                                   for sql in rows) + ") "
            "SELECT allow FROM rules WHERE (parent IS NULL OR parent = :check_parent) "
            "AND (child IS NULL OR child = :check_child) "
            "ORDER BY (child IS NOT NULL) + (parent IS NOT NULL) DESC, allow = 0 DESC LIMIT 1",
            params).fetchone()
        allowed = bool(winner and winner[0])
        if allowed and restrictions:
            allowed = bool(conn.execute(
                "WITH allowlist AS (" + " INTERSECT ".join(f"SELECT * FROM ({sql})"
                                                            for sql in restrictions) + ") "
                "SELECT EXISTS (SELECT 1 FROM allowlist WHERE (parent IS NULL OR parent = :check_parent) "
                "AND (child IS NULL OR child = :check_child))", params).fetchone()[0])
        return allowed
    finally:
        conn.close()


def as_list(result) -> list:
    return [] if result is None else result if isinstance(result, list) else [result]


def allow_everything():
    """Another plugin's allow rows for every resource, at every depth."""
    return hooks.PermissionSQL(sql=" UNION ALL ".join(
        f"SELECT {'NULL' if p is None else repr(p)} AS parent, "
        f"{'NULL' if c is None else repr(c)} AS child, 1 AS allow, 'other plugin' AS reason"
        for p, c in EVERYWHERE))


CASES = [(actor, action, resource) for actor, (action, resources)
         in itertools.product(ACTORS, RESOURCES.items()) for resource in resources]


def test_the_1_0_hook_decides_as_the_0_65_hook(datasette):
    disagreements = []
    for actor, action, resource in CASES:
        old = hooks.permission_allowed(datasette, actor, action, resource)
        new = as_list(hooks.permission_resources_sql(datasette, actor, action))
        if old is None:
            if new:                             # neither hook is to have a say on this action
                disagreements.append((actor, action, resource, None, new))
            continue
        parent, child = parent_child(resource)
        alone = decide_1_0(new, actor, action, parent, child)
        # 0.65 lets the trylast hook overrule every other answer; 1.0 has no last word, so a
        # denial must hold against another plugin's more specific allow (restriction_sql)
        crowded = decide_1_0([*new, allow_everything()], actor, action, parent, child)
        if (alone, crowded) != (old, old):
            disagreements.append((actor, action, resource, old, (alone, crowded)))
    assert disagreements == []


def test_the_table_of_cases_has_both_answers(datasette):
    answers = {hooks.permission_allowed(datasette, *case) for case in CASES}
    assert answers == {True, False, None}
    assert hooks.permission_allowed(datasette, {"id": "rao", "sid": "live-rao"}, "view-table",
                                    ("ledger", "events")) is True
    assert hooks.permission_allowed(datasette, {"id": "rao"}, "view-table", ("ledger", "events")) is False
    assert hooks.permission_allowed(datasette, {"id": "hal"}, "execute-sql", "_internal") is False


def test_neither_hook_has_a_say_without_factledger_settings():
    plain = SimpleNamespace()
    for actor, action, resource in CASES:
        assert hooks.permission_allowed(plain, actor, action, resource) is None
        assert hooks.permission_resources_sql(plain, actor, action) is None


def test_the_plugin_registers_on_the_installed_datasette_with_both_hooks():
    """A hookimpl for a hook the installed Datasette does not define registers (pluggy keeps it
    unverified); optionalhook keeps `check_pending` quiet about it as well."""
    plugin = pm.get_plugin("factledger")            # loaded through the `datasette` entry point
    assert plugin is web
    names = {caller.name for caller in pm.get_hookcallers(plugin)}
    assert {"permission_allowed", "permission_resources_sql"} <= names
    for caller in pm.get_hookcallers(plugin):
        if not caller.has_spec():
            assert all(impl.optionalhook for impl in caller.get_hookimpls() if impl.plugin is plugin), \
                caller.name
