"""The benchmark tables of docs/metrics.md and benchmarks/README.md are what benchmarks/report.py
renders from the committed benchmarks/results/*.json, so no figure is edited by hand."""

from __future__ import annotations

import re

from helpers import ROOT, load_example

PAGES = (ROOT / "docs" / "metrics.md", ROOT / "benchmarks" / "README.md")


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
    # the metrics page keeps the headline table and evaluate's; the rest live with the benchmarks
    assert "<!-- bench:paper-B -->" in PAGES[0].read_text()
    assert "<!-- bench:evaluate -->" in PAGES[0].read_text()
    # the user's page has none: report.py renders only the pages it lists
    assert "<!-- bench:" not in (ROOT / "README.md").read_text()
