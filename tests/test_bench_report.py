"""README's benchmark tables are what benchmarks/report.py renders from the committed
benchmarks/results/*.json, so no figure in README is edited by hand."""

from __future__ import annotations

import re

from helpers import ROOT, load_example

README = ROOT / "README.md"


def test_readme_tables_are_rendered_from_the_results():
    report = load_example("benchmarks/report.py")
    text = README.read_text()
    assert text == report.render(text), "README's benchmark tables differ: run python benchmarks/report.py"


def test_every_results_table_has_its_markers():
    names = re.findall(r"<!-- bench:([\w-]+) -->", README.read_text())
    closed = re.findall(r"<!-- /bench:([\w-]+) -->", README.read_text())
    report = load_example("benchmarks/report.py")
    assert sorted(names) == sorted(closed) == sorted(report.SECTIONS)
