"""Every relative link of README.md and docs/*.md (and of the other pages of the repository:
ARCHITECTURE.md, CHANGELOG.md, the benchmarks' READMEs) resolves: the file (or folder)
exists, and an ``#anchor`` names a heading of the page it points to, by GitHub's rules for
heading ids. README's sections live in docs/ and link to one another, so a page renamed or a
heading reworded cannot leave a dead link behind."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import ROOT

PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "ARCHITECTURE.md",
    ROOT / "CHANGELOG.md",
    *sorted((ROOT / "benchmarks").rglob("README.md")),
]

FENCE = re.compile(r"^(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
LINK = re.compile(r"!?\[([^\]]*)\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)


def prose(text: str) -> list[str]:
    """The page's lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    """GitHub's id of a heading: its text (links and code marks dropped), lower case, every
    character but letters, digits, ``_``, ``-`` and spaces removed, each space a ``-``."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[`*]|(?<!\w)_|_(?!\w)", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The ids of a page's headings; a repeated one takes ``-1``, ``-2`` ... as on GitHub."""
    seen: dict[str, int] = {}
    ids = set()
    for line in prose(page.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if match is None:
            continue
        base = slug(match.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        ids.add(base if n == 0 else f"{base}-{n}")
    return ids


def links(page: Path) -> list[tuple[int, str]]:
    """(line, target) of every link and image of a page, outside code."""
    found = []
    text = page.read_text(encoding="utf-8")
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        found.extend((number, match.group(2)) for match in LINK.finditer(CODE_SPAN.sub("", line)))
    return found


def dead(page: Path) -> list[str]:
    """The page's relative links that do not resolve, each with its line."""
    problems = []
    for number, target in links(page):
        if EXTERNAL.match(target):
            continue
        path, _, anchor = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        if not where.exists():
            problems.append(f"{page.name}:{number}: {target}: no such file")
            continue
        if not anchor:
            continue
        if where.suffix != ".md":
            problems.append(f"{page.name}:{number}: {target}: an anchor into a page that is not markdown")
        elif anchor not in anchors(where):
            problems.append(f"{page.name}:{number}: {target}: no heading of {where.name} has that id")
    return problems


def test_the_slug_follows_githubs_rules() -> None:
    assert slug("Quick start (fresh machine, Python >= 3.11)") == "quick-start-fresh-machine-python--311"
    assert slug("Releases for machine learning: --target") == "releases-for-machine-learning---target"
    assert slug("Sensitive values: l-diversity, t-closeness, beta-likeness, recursive (c,l)-diversity") == (
        "sensitive-values-l-diversity-t-closeness-beta-likeness-recursive-cl-diversity"
    )
    assert slug("The release report: `report`") == "the-release-report-report"
    assert slug("Protect a sensitive column: l, t, β") == "protect-a-sensitive-column-l-t-β"
    assert slug("sbc_sql's layout") == "sbc_sqls-layout"


def test_a_dead_link_is_found(tmp_path: Path) -> None:
    (tmp_path / "b.md").write_text("# B\n\n## Two words\n\n## Two words\n")
    page = tmp_path / "a.md"
    page.write_text(
        "# A\n\n[ok](b.md#two-words) [ok](b.md#two-words-1) [ok](#a) `[not a link](nowhere.md)`\n"
        "[gone](c.md) [no id](b.md#three) [no id](#b)\n\n```\n[in code](nowhere.md)\n```\n"
    )
    assert dead(page) == [
        "a.md:4: c.md: no such file",
        "a.md:4: b.md#three: no heading of b.md has that id",
        "a.md:4: #b: no heading of a.md has that id",
    ]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page: Path) -> None:
    assert dead(page) == []


def test_readme_links_every_reference_page() -> None:
    """README's documentation list names every page of docs/."""
    linked = {Path(target.partition("#")[0]).name for _, target in links(ROOT / "README.md")}
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"README.md"}
    assert pages <= linked, sorted(pages - linked)
