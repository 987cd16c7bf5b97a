"""The web view's settings, held on the Datasette instance that `factledger serve` builds.

They are kept off Datasette's metadata on purpose: metadata is published at `/-/metadata.json`,
and this holds password hashes.  A Datasette started some other way (plain `datasette`, with
this plugin merely installed) has no settings, and the plugin then stays out of its way.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from factledger.ledger import Ledger
from factledger.ledger.registry.predicates import Registry
from factledger.ledger.vocabulary.clock import Clock, system_clock
from factledger.web.actors import Actor

ATTRIBUTE = "_factledger_web"


@dataclass
class WebConfig:
    ledger_path: Path
    registry: Registry
    actors: dict[str, Actor] = field(default_factory=dict)
    public: bool = False                      # anonymous visitors may look (a demo), never act
    clock: Clock = system_clock
    busy_timeout: float = 5.0

    @property
    def database(self) -> str:
        """The name Datasette gives the ledger file (its stem)."""
        return self.ledger_path.stem

    @contextmanager
    def ledger(self):
        """A ledger opened for one request and closed after it: nothing read from the file
        outlives the request, so a page rendered after an erasure cannot show what it scrubbed."""
        ledger = Ledger(self.ledger_path, registry=self.registry, clock=self.clock,
                        busy_timeout=self.busy_timeout, create=False)
        try:
            yield ledger
        finally:
            ledger.close()


def attach(datasette, config: WebConfig) -> None:
    setattr(datasette, ATTRIBUTE, config)


def config_of(datasette) -> WebConfig | None:
    return getattr(datasette, ATTRIBUTE, None)
