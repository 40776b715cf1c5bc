"""Every relative link of README.md, docs/*.md and bench/README.md resolves: the file
exists and, where the link names an #anchor, the page has a heading with that
GitHub-style slug."""

from __future__ import annotations

import itertools
import unicodedata
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

ROOT = Path(__file__).resolve().parents[2]
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench" / "README.md")
_PARSER = MarkdownIt("commonmark").enable("table")


def _tokens(page: Path) -> list[Token]:
    return _PARSER.parse(page.read_text(encoding="utf-8"))


def _inline_text(token: Token) -> str:
    """A heading's text as GitHub renders it: markup gone, code spans kept as text."""
    return "".join(
        child.content for child in token.children or () if child.type in ("text", "code_inline")
    )


def slug_of(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    kept = (
        ch
        for ch in heading.strip().lower()
        if ch.isalnum() or ch in "-_ " or unicodedata.category(ch).startswith("M")
    )
    return "".join(kept).replace(" ", "-")


@cache
def anchors_of(page: Path) -> frozenset[str]:
    """The anchors of a page's headings; a repeated slug gets -1, -2, ... as on GitHub."""
    tokens = _tokens(page)
    seen: dict[str, int] = {}
    anchors = set()
    for opening, inline in itertools.pairwise(tokens):
        if opening.type != "heading_open":
            continue
        slug = slug_of(_inline_text(inline))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return frozenset(anchors)


def links_of(page: Path) -> Iterator[str]:
    """Every link and image target of a page (code spans and blocks hold none)."""
    for token in _tokens(page):
        for child in token.children or ():
            if child.type == "link_open":
                yield str(child.attrs["href"])
            elif child.type == "image":
                yield str(child.attrs["src"])


def broken_links(page: Path) -> list[str]:
    """The relative links of `page` that name a missing file or anchor, each with why."""
    broken = []
    for href in links_of(page):
        parts = urlsplit(href)
        if parts.scheme or parts.netloc:  # http(s), mailto: not ours to check
            continue
        target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
        if not target.exists():
            broken.append(f"{href}: no such file")
        elif target.suffix == ".md" and parts.fragment:
            anchor = unquote(parts.fragment)
            if anchor not in anchors_of(target):
                broken.append(f"{href}: no heading with that anchor")
    return broken


def test_the_slugs_are_githubs() -> None:
    assert slug_of("Nightly runs: a long-running Prefect server") == (
        "nightly-runs-a-long-running-prefect-server"
    )
    assert slug_of("4. Audio contract") == "4-audio-contract"
    assert slug_of("The UI on another host or port; no telemetry") == (
        "the-ui-on-another-host-or-port-no-telemetry"
    )
    assert slug_of("`medasr review`") == "medasr-review"


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    # Guards the walker itself: a missing file and a missing anchor are both reported.
    (tmp_path / "other.md").write_text("# Present heading\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#present-heading) [gone](missing.md) [bad](other.md#absent)\n"
        "`[in code](nowhere.md)` [web](https://example.org/x.md) [self](#top)\n\n# Top\n",
        encoding="utf-8",
    )
    assert broken_links(page) == [
        "missing.md: no such file",
        "other.md#absent: no heading with that anchor",
    ]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page: Path) -> None:
    assert page.exists(), f"{page.relative_to(ROOT)} is missing"
    assert not broken_links(page), f"{page.relative_to(ROOT)}: {broken_links(page)}"
