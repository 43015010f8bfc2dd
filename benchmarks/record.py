"""Where the benchmarks keep their figures: one JSON file per script (or setting) under
benchmarks/results/, written beside what the script prints. ``benchmarks/report.py`` renders
the benchmark tables of docs/metrics.md and benchmarks/README.md from these files only, so a
figure on those pages always has a file
that a run of the script produced.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
PACKAGES = ("duckdb", "numpy", "numba", "pyarrow", "sqlglot")


def environment() -> dict[str, Any]:
    """What the figures depend on besides the code: cores, Python and the main libraries."""
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "date": dt.datetime.now(dt.UTC).date().isoformat(),
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        # the machine is shared: a load above the core count means the timings are inflated
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "packages": versions,
    }


def command() -> str:
    """The command line that produced a file, as a user would type it."""
    return " ".join(["python", f"benchmarks/{Path(sys.argv[0]).name}", *sys.argv[1:]])


def path(name: str) -> Path:
    return RESULTS / f"{name}.json"


def write(name: str, figures: dict[str, Any]) -> Path:
    """Write ``results/<name>.json``: the figures with the command and the environment."""
    RESULTS.mkdir(exist_ok=True)
    target = path(name)
    payload = {"command": command(), "environment": environment(), **figures}
    target.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n")
    return target


def read(name: str) -> dict[str, Any]:
    """The figures of ``results/<name>.json`` (FileNotFoundError when never produced)."""
    return json.loads(path(name).read_text())
