"""`factledger serve`: its refusals, the actors file, the password hashes, and a real server process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("datasette", reason="the web view is the optional `ui` extra")

from factledger.cli.main import cli  # noqa: E402
from factledger.ledger import Ledger, LedgerError  # noqa: E402
from factledger.web.actors import check_password, hash_password, load_actors, parse_actors  # noqa: E402
from tests.web.helpers import Client, actors_toml, web  # noqa: E402
from tests.web.test_web_browser import free_port  # noqa: E402


def run(*args, env=None, input=None):
    return CliRunner().invoke(cli, list(args), env=env, input=input)


def test_serve_refuses_without_a_ledger_or_anyone_to_sign_in(tmp_path):
    missing = run("--db", str(tmp_path / "none.db"), "serve", "--public")
    assert missing.exit_code == 1 and "no ledger" in missing.output
    assert not (tmp_path / "none.db").exists()
    Ledger(tmp_path / "l.db", create=True).close()
    nobody = run("--db", str(tmp_path / "l.db"), "serve", env={"FACTLEDGER_UI_ACTORS": ""})
    assert nobody.exit_code == 1 and "nobody could sign in" in nobody.output
    bad = tmp_path / "actors.toml"
    bad.write_text('[actors.eve]\npassword = "pbkdf2_sha256$1$s$x"\nclearance = "secret"\n')
    wrong = run("--db", str(tmp_path / "l.db"), "serve", "--actors", str(bad))
    assert wrong.exit_code == 1 and "Error: " in wrong.output and "'eve'" in wrong.output and "secret" in wrong.output


def test_hash_password_prints_a_hash_the_actors_file_accepts(tmp_path):
    result = run("serve", "--hash-password", input="correct horse\ncorrect horse\n")
    assert result.exit_code == 0
    stored = result.stdout.strip().splitlines()[-1]
    assert stored.startswith("pbkdf2_sha256$") and check_password("correct horse", stored)
    assert not check_password("wrong", stored)
    actors = parse_actors(f'[actors."dr rao"]\npassword = "{stored}"\nclearance = "health"\nrole = "reviewer"\n', "t")
    assert actors["dr rao"].full_clearance and actors["dr rao"].may_act


def test_hash_password_from_one_piped_line_prints_its_hash_and_an_empty_one_is_refused():
    """`echo "$PW" | factledger serve --hash-password`: one line, nobody to confirm it, no abort."""
    factledger = str(Path(sys.executable).with_name("factledger"))
    piped = subprocess.run([factledger, "serve", "--hash-password"], input="correct horse\n",
                           capture_output=True, text=True, timeout=120)
    assert piped.returncode == 0, piped.stderr
    assert check_password("correct horse", piped.stdout.strip().splitlines()[-1])
    empty = subprocess.run([factledger, "serve", "--hash-password"], input="", capture_output=True,
                           text=True, timeout=120)
    assert empty.returncode == 1 and "Error: an empty password" in empty.stderr


@pytest.mark.parametrize("text, problem", [
    ("not toml [", "not valid TOML"),
    ("[other]\n", "no [actors.NAME]"),
    ('[actors.a]\npassword = "plain"\n', "needs a password hash"),
    ('[actors.a]\npassword = "pbkdf2_sha256$1$s$h"\nrole = "admin"\n', "role 'admin'"),
    ('[actors.a]\npassword = "pbkdf2_sha256$1$s$h"\ncolour = "red"\n', "unknown keys"),
])
def test_a_bad_actors_file_loads_nothing(text, problem):
    with pytest.raises(LedgerError, match=problem.replace("[", r"\[")):
        parse_actors(text, "actors.toml")


def test_actors_from_the_environment_and_malformed_hashes():
    actors = load_actors(None, actors_toml())
    assert {a.name: (a.clearance, a.role) for a in actors.values()}["vic"] == ("normal", "viewer")
    assert load_actors(None, None) == {}
    for stored in ("", "md5$1$s$h", "pbkdf2_sha256$x$s$h", "pbkdf2_sha256$1$s"):
        assert not check_password("pw", stored)
    assert check_password("pw", hash_password("pw", iterations=1000))


def test_a_real_server_process_listens_on_localhost_and_asks_for_sign_in(tmp_path):
    db = tmp_path / "ledger.db"
    Ledger(db, create=True).close()
    port = free_port()
    env = dict(os.environ, FACTLEDGER_UI_ACTORS=actors_toml())
    process = subprocess.Popen([str(Path(sys.executable).parent / "factledger"), "--db", str(db), "serve",
                                "--port", str(port)], env=env, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(300):                      # readiness, not a timing assertion
            try:
                page = urllib.request.urlopen(f"http://127.0.0.1:{port}/-/factledger/login", timeout=2)
                break
            except OSError:
                assert process.poll() is None, process.stderr.read()
                time.sleep(0.1)
        assert page.status == 200 and page.headers["Cache-Control"] == "no-store"
        with pytest.raises(urllib.error.HTTPError) as denied:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/-/factledger/", timeout=5)
        assert denied.value.code == 401 and b'id="sign-in"' in denied.value.read()    # the sign-in form
        listening = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True)
        if listening.returncode == 0 and listening.stdout.strip():
            assert [line.split()[3] for line in listening.stdout.splitlines()] == [f"127.0.0.1:{port}"]
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_the_demo_says_how_to_open_the_web_view(tmp_path):
    result = run("demo", "--out", str(tmp_path / "demo.db"))
    assert result.exit_code == 0
    assert f"factledger --db {tmp_path / 'demo.db'} serve --public --public-clearance personal" in result.stdout


def test_the_demo_public_view_shows_the_moving_city_and_withholds_health(tmp_path):
    """Issue 29: `serve --public --public-clearance personal` on the demo ledger shows priya's city
    come back to Pune after the erasure of the move; the clinic's health values stay withheld.
    The default --public (normal) withholds the city, as it always did."""
    db = tmp_path / "demo.db"
    assert run("demo", "--out", str(db)).exit_code == 0
    demo = Client(web(db, public=True, public_clearance="personal"))
    plain = Client(web(db, public=True))
    try:
        priya = demo.get("/-/factledger/user?app=mealkit&user=priya")
        assert priya.status_code == 200 and "Pune" in priya.text and "Bengaluru" not in priya.text
        timeline = demo.get("/-/factledger/timeline?app=mealkit&user=priya&predicate=home_city")
        assert timeline.status_code == 200 and "reinstated after erasure" in timeline.text
        arun = demo.get("/-/factledger/user?app=clinic&user=arun")
        assert "metoprolol" not in arun.text and "health" in arun.text
        assert "Pune" not in plain.get("/-/factledger/user?app=mealkit&user=priya").text
        assert demo.post("/-/factledger/review/reject", {"hold_id": "x", "reason": "r"}).status_code == 403
    finally:
        demo.close()
        plain.close()


def test_a_public_clearance_needs_public(tmp_path):
    db = tmp_path / "l.db"
    Ledger(db, create=True).close()
    refused = run("--db", str(db), "serve", "--public-clearance", "personal")
    assert refused.exit_code == 1 and "give --public too" in refused.stderr


def test_risky_ways_to_start_a_server_print_a_warning_line(tmp_path):
    """`serve --public --public-clearance health --host 0.0.0.0` starts (a deployment may mean it)
    and says both risks on stderr; the same for `mcp --http --host 0.0.0.0` without TLS."""
    db = tmp_path / "ledger.db"
    Ledger(db, create=True).close()
    factledger = str(Path(sys.executable).parent / "factledger")
    tokens = tmp_path / "tokens.toml"
    made = subprocess.run([factledger, "--db", str(db), "mcp", "--new-token", "--tokens", str(tokens), "--app", "a",
                           "--user", "u"], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    for args, wanted in (
            (["serve", "--public", "--public-clearance", "health", "--host", "0.0.0.0"],
             ("listens on 0.0.0.0", "without TLS", "reads health values without signing in")),
            (["mcp", "--http", "--tokens", str(tokens), "--host", "0.0.0.0"], ("listens on 0.0.0.0", "without TLS"))):
        process = subprocess.Popen([factledger, "--db", str(db), *args, "--port", str(free_port())],
                                   stderr=subprocess.PIPE, text=True)
        try:
            said = ""
            while not all(w in said for w in wanted):     # the lines come before the server runs
                line = process.stderr.readline()
                assert line, said
                said += line
        finally:
            process.terminate()
            process.wait(timeout=30)
