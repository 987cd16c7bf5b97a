"""The Datasette that `factledger serve` runs: the ledger file, read-only, and this plugin's settings.

A ledger on a database server is no file Datasette can open: Datasette then holds no database,
and the plugin's pages (which read through the `Ledger`) are the whole view.

Datasette opens the file with `mode=ro` (its mutable mode), not `immutable`: immutable would
skip the WAL, where the ledger's latest commits are, and would cache counts of tables the
ledger keeps changing.  Every write is the `Ledger`'s, from this plugin's action routes.
"""

from __future__ import annotations

import secrets

from datasette.app import Datasette

from factledger.web.config import WebConfig, attach


class LedgerDatasette(Datasette):
    """Datasette with the plugin's settings attached before it builds its routes."""

    def __init__(self, config: WebConfig, secret: str | None = None, **options):
        attach(self, config)
        settings = {"default_cache_ttl": 0, "allow_download": False, "allow_csv_stream": False,
                    **options.pop("settings", {})}
        files = [str(config.ledger_path)] if config.database else []
        super().__init__(files=files, secret=secret or secrets.token_hex(32),
                         settings=settings, **options)


def build(config: WebConfig, secret: str | None = None) -> LedgerDatasette:
    return LedgerDatasette(config, secret=secret)
