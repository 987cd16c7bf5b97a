"""The reviewer's web view: a Datasette plugin (`pip install 'factledger[ui]'`, `factledger serve`).

Datasette loads this package through its `datasette` entry point; the hooks live in `hooks.py`.
"""

from factledger.web.hooks import asgi_wrapper, permission_allowed, permission_resources_sql, register_routes

__all__ = ["asgi_wrapper", "permission_allowed", "permission_resources_sql", "register_routes"]
