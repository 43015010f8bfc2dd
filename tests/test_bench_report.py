"""The benchmark tables of README.md and benchmarks/README.md are what benchmarks/report.py
renders from the committed benchmarks/results/*.json, so no figure is edited by hand."""

from __future__ import annotations

import re

from helpers import ROOT, load_example

PAGES = (ROOT / "README.md", ROOT / "benchmarks" / "README.md")


def test_the_tables_are_rendered_from_the_results():
    report = load_example("benchmarks/report.py")
    for page in PAGES:
        text = page.read_text()
        assert text == report.render(text), (
            f"{page}'s benchmark tables differ: run python benchmarks/report.py"
        )


def test_every_results_table_has_its_markers_once():
    text = "\n".join(page.read_text() for page in PAGES)
    names = re.findall(r"<!-- bench:([\w-]+) -->", text)
    closed = re.findall(r"<!-- /bench:([\w-]+) -->", text)
    report = load_example("benchmarks/report.py")
    assert sorted(names) == sorted(closed) == sorted(report.SECTIONS)
    # the user's page keeps the headline table; the rest live with the benchmarks
    assert "<!-- bench:paper-B -->" in PAGES[0].read_text()
