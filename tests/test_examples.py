"""The runnable examples of examples/ run as written: the notebook's code cells in order, the
PostgreSQL walk-through against the suite's own server, the Spark job on a local session.
Each runs in a fresh interpreter, from a folder of its own, with this checkout importable."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pg_cluster
import pytest
from helpers import ROOT, checkout_env

from sbc_sql import install_sql

EXAMPLES = ROOT / "examples"
NOTEBOOK = EXAMPLES / "notebook.ipynb"

#: what looks like a direct identifier in a saved output: an SSN, an e-mail, a phone number
IDENTIFIER = re.compile(r"\b\d{3}-\d{2}-\d{4}\b|[\w.]+@[\w.]+\.\w+|\(\d{3}\) \d{3}-\d{4}")


def run(argv: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 600):
    done = subprocess.run(
        argv, cwd=cwd, env=env or checkout_env(), capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def cells() -> list[dict]:
    return json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]


def test_the_notebook_keeps_no_output_that_could_show_a_person() -> None:
    """Saved outputs are short and show nothing like a direct identifier (none are kept)."""
    for cell in cells():
        for output in cell.get("outputs", []):
            text = json.dumps(output)
            assert len(text) < 2000 and not IDENTIFIER.search(text)
    assert any(cell["cell_type"] == "markdown" for cell in cells())


@pytest.mark.slow
def test_the_notebook_runs_cell_by_cell(tmp_path: Path) -> None:
    """Its code cells, in order, in one fresh interpreter, as a kernel would run them."""
    code = ["".join(cell["source"]) for cell in cells() if cell["cell_type"] == "code"]
    script = tmp_path / "notebook.py"
    script.write_text("\n\n".join(code), encoding="utf-8")
    done = run([sys.executable, str(script)], tmp_path)
    assert "verified: True" in done.stdout
    assert not IDENTIFIER.search(done.stdout)


@pytest.mark.slow
def test_the_postgres_walkthrough_runs(
    postgres_cluster: pg_cluster.Cluster, postgres_url: str, tmp_path
) -> None:
    reason = pg_cluster.plpython(postgres_cluster)
    if reason is not None:
        pytest.fail(f"no PL/Python for the server: {reason}")
    server_path = pg_cluster.python_path(postgres_cluster, install_sql.default_path())
    env = checkout_env()
    env.update(SBC_SQL_DB=postgres_url, SBC_SQL_PYTHON_PATH=" ".join(server_path), PYTHON=sys.executable)
    done = run(["bash", str(EXAMPLES / "postgres_walkthrough.sh")], tmp_path, env)
    out = done.stdout
    assert "patients\n500\n" in out
    assert "release 'patients_k5'" in done.stderr + out or "patients_k5" in out
    assert "verified\ntrue\n" in out
    assert re.search(r"diagnosis \| at_least \| at_most \| estimate\n(.+\n){5}", out)
    assert not list(tmp_path.iterdir())  # its work folder is removed, nothing left behind


@pytest.mark.spark
@pytest.mark.slow
def test_the_spark_job_runs(tmp_path: Path) -> None:
    if os.environ.get("SBC_SQL_REQUIRE_SPARK") != "1":
        pytest.importorskip("pyspark")
    done = run([sys.executable, str(EXAMPLES / "spark_job.py"), "--work", str(tmp_path)], tmp_path)
    assert "verified 5-anonymous" in done.stdout + done.stderr
    assert list((tmp_path / "visits_k5").glob("*.parquet"))
