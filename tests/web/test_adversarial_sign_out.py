"""Signing out ends the session on the server (issue 32, class 10).

The web view's `ds_actor` cookie is signed and self-contained, so after sign-out a copy of it
still read the ledger for 12 hours, Datasette's own pages (raw event bodies) included; an actor
removed from the actors file stayed signed in until the server restarted.  The cookie now names
a session the server keeps on its list of live sessions (web/sessions.py): sign-out, a removal
from the actors file or a changed password takes it off, and a copy of the cookie reads nothing.
"""

from __future__ import annotations

import tomllib

import pytest

pytest.importorskip("datasette", reason="the web view is the optional `ui` extra")

from factledger.ledger.registry.predicates import load_registry  # noqa: E402
from factledger.web.actors import hash_password  # noqa: E402
from factledger.web.config import WebConfig  # noqa: E402
from factledger.web.server import build  # noqa: E402
from factledger.web.sessions import Sessions  # noqa: E402
from tests.web.helpers import HEALTH_VALUE, PASSWORDS, Client, actors_toml, fill, web  # noqa: E402

READS = ["/-/factledger/", "/-/factledger/user?app=clinic&user=arun", "/ledger/events.json",
         "/ledger.json?sql=select+body+from+events"]
SECRET = "s" * 64


@pytest.fixture
def ledger_file(tmp_path, clock):
    path = tmp_path / "ledger.db"
    fill(path, clock)
    return path


def reads(client: Client, cookie: str) -> list[int]:
    return [client.get(path, cookies={"ds_actor": cookie}).status_code for path in READS]


def test_a_copy_of_the_cookie_reads_nothing_after_sign_out(ledger_file, clock):
    client = Client(web(ledger_file, clock))
    try:
        assert client.sign_in("rao").status_code == 302
        copy = client.cookies["ds_actor"]
        assert reads(client, copy) == [200] * len(READS)
        assert HEALTH_VALUE in client.get("/-/factledger/user?app=clinic&user=arun").text
        other = Client(client.ds)                         # the same actor, signed in elsewhere
        other.sign_in("rao")
        assert client.post("/-/factledger/logout", {}).status_code == 302
        assert reads(client, copy) == [401, 401, 403, 403]     # the sign-in form on our pages, 403 on Datasette's
        assert HEALTH_VALUE not in client.get("/-/factledger/user?app=clinic&user=arun",
                                              cookies={"ds_actor": copy}).text
        assert other.get("/-/factledger/").status_code == 200      # only that session ended
    finally:
        client.close()


def served(ledger_file, folder, clock):
    """A server as `factledger serve --actors FILE` builds it: the sessions beside the file."""
    path = folder / "actors.toml"
    config = WebConfig(ledger_file, load_registry(None), {}, clock=clock, actors_path=path,
                       sessions=Sessions(folder / "actors.toml.sessions"))
    return build(config, secret=SECRET)


def test_an_actor_removed_from_the_actors_file_is_signed_out_at_once(ledger_file, tmp_path, clock):
    actors = tmp_path / "actors.toml"
    actors.write_text(actors_toml())
    client = Client(served(ledger_file, tmp_path, clock))
    try:
        client.sign_in("vic")
        copy = client.cookies["ds_actor"]
        assert client.get("/-/factledger/").status_code == 200
        text = actors.read_text()
        start = text.index("[actors.vic]")
        without = text[:start] + text[text.index("[actors.", start + 1):]
        actors.write_text(without)                                  # no restart
        assert client.get("/-/factledger/", cookies={"ds_actor": copy}).status_code == 401
        actors.write_text(text)                                     # back, same password hash
        assert client.get("/-/factledger/", cookies={"ds_actor": copy}).status_code == 401
        client.sign_in("vic")
        assert client.get("/-/factledger/").status_code == 200      # a new sign-in works
        old = tomllib.loads(text)["actors"]["vic"]["password"]
        new = hash_password(PASSWORDS["vic"], iterations=1000)      # a new password (a new salt)
        actors.write_text(text.replace(old, new))
        assert client.get("/-/factledger/").status_code == 401
    finally:
        client.close()


def test_sessions_beside_the_actors_file_are_one_list_for_every_process(ledger_file, tmp_path, clock):
    (tmp_path / "actors.toml").write_text(actors_toml())
    first, second = Client(served(ledger_file, tmp_path, clock)), Client(served(ledger_file, tmp_path, clock))
    try:
        first.sign_in("rao")
        copy = first.cookies["ds_actor"]
        assert second.get("/-/factledger/", cookies={"ds_actor": copy}).status_code == 200
        sid = first.ds.unsign(copy, "actor")["a"]["sid"]
        assert sid not in (tmp_path / "actors.toml.sessions").read_text()     # a hash, never the id
        first.post("/-/factledger/logout", {})
        assert second.get("/-/factledger/", cookies={"ds_actor": copy}).status_code == 401
    finally:
        first.close()
        second.close()
