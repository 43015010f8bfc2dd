"""Every benchmark script imports: a script left behind by a change to the package (a module
moved, a name renamed) fails here rather than on the day its figures are wanted."""

from __future__ import annotations

import pytest
from helpers import ROOT, load_example

SCRIPTS = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS)
def test_the_script_imports(script: str) -> None:
    # importing runs the script's imports and definitions; its main() is not called
    assert load_example(script).__file__ == str(ROOT / script)
