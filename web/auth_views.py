"""Signing in and out.

The signed cookie (Datasette's `ds_actor`, signed with the server's secret) carries the actor's
name and a session id only; clearance and role are read from the actors file on every request,
the session must be on the server's list of live sessions (web/sessions.py: signing out takes it
off, so a copy of the cookie reads nothing after), and the cookie expires after `SESSION_HOURS`.
A wrong name and a wrong password get the same answer.
"""

from __future__ import annotations

import time

from datasette.utils import baseconv
from datasette.utils.asgi import Response

from factledger.web.access import PREFIX, back_to, current_actor, render
from factledger.web.actors import check_password, hash_password
from factledger.web.config import config_of

SESSION_HOURS = 12
# Compared against when the name is unknown, so both failures take the same time.
_NOBODY = hash_password("nobody", "0" * 16)


async def login(datasette, request):
    config = config_of(datasette)
    actor = current_actor(datasette, request)
    if request.method == "GET":
        return await render(datasette, request, actor, "factledger_login.html")
    if request.method != "POST":
        return Response.text("method not allowed", status=405)
    form = await request.post_vars()
    name = (form.get("username") or "").strip()
    known = config.known_actors().get(name)
    if not check_password(form.get("password") or "", known.password if known else _NOBODY) or not known:
        return await render(datasette, request, actor, "factledger_login.html", 403,
                            message="Wrong name or password.", username=name, next=back_to(form.get("next")))
    response = Response.redirect(back_to(form.get("next")))
    session = config.sessions.open(known, SESSION_HOURS * 3600)
    expires = baseconv.base62.encode(int(time.time()) + SESSION_HOURS * 3600)
    response.set_cookie("ds_actor", datasette.sign({"a": {"id": known.name, "sid": session}, "e": expires},
                                                   "actor"),
                        httponly=True, samesite="lax", max_age=SESSION_HOURS * 3600)
    return response


async def logout(datasette, request):
    if request.method != "POST":
        return Response.text("sign out with the button (a POST)", status=405)
    config = config_of(datasette)
    if config is not None and isinstance(request.actor, dict):
        config.sessions.close(request.actor.get("sid"))        # ended here, for every copy
    response = Response.redirect(PREFIX + "/login")
    response.set_cookie("ds_actor", "", expires=0, max_age=0)
    return response


ROUTES = [(rf"^{PREFIX}/login$", login), (rf"^{PREFIX}/logout$", logout)]
