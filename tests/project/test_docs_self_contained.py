"""The project documents itself: the README and docs/ never send a reader outside the repository
(no web links, no paths above the checkout), and every relative link they make resolves."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
WEB = re.compile(r"\b(?:https?|ftp)://(?!localhost|127\.0\.0\.1|\[::1\])[^\s)>\]`'\"]+")


def test_no_page_links_or_points_outside_the_repository():
    outside = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        outside += [(page.name, url) for url in WEB.findall(text)]
        outside += [(page.name, target) for target in LINK.findall(text) if "../" in target]
        outside += [(page.name, "../shared") for _ in re.findall(r"\.\./shared", text)]
    assert outside == []


def test_every_relative_link_resolves_inside_the_repository():
    broken = []
    for page in PAGES:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            path = target.split("#", 1)[0]
            if not path or "://" in path or path.startswith("mailto:"):
                continue
            resolved = (page.parent / path).resolve()
            if not resolved.is_relative_to(ROOT) or not resolved.exists():
                broken.append((page.name, target))
    assert broken == []


def test_the_readme_is_short_and_docs_hold_no_data_files():
    """A newcomer finishes the README (at most 250 lines); bench results live in bench/results/,
    not among the pages of docs/."""
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 250
    assert sorted(p.name for p in (ROOT / "docs").rglob("*.json")) == []
