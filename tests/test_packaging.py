"""The wheel ships the SQL templates: sql/ is mapped to the package sbc_sql.sql, and
templates.sql_dir() finds them in an installed copy (not only in the checkout).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from helpers import ROOT

SQL_FILES = sorted(p.name for p in (ROOT / "sql").glob("*.sql"))


def _backend_ready() -> bool:
    """setuptools >= 68 and wheel in this interpreter, as pyproject's build-system asks."""
    try:
        major = int(importlib.metadata.version("setuptools").split(".")[0])
    except importlib.metadata.PackageNotFoundError:
        return False
    return major >= 68 and importlib.util.find_spec("wheel") is not None


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel built from a copy of the checkout (so no build/ or egg-info lands in it)."""
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", ".venv", ".hypothesis", ".pytest_cache", ".ruff_cache", "__pycache__", "results",
        "*.duckdb", "*.duckdb.wal", "build", "dist", "*.egg-info"))
    out = base / "dist"
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(src)]
    if _backend_ready():
        # offline: build with this interpreter's setuptools and wheel
        cmd.insert(4, "--no-build-isolation")
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    (path,) = out.glob("sbc_sql-*.whl")
    return path


def test_the_wheel_contains_every_template(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert SQL_FILES, "the checkout has no sql/*.sql"
    shipped = sorted(n.split("/")[-1] for n in names if n.startswith("sbc_sql/sql/"))
    assert shipped == SQL_FILES
    assert "sbc_sql/templates.py" in names and "sbc_sql/cluster/sbca.py" in names
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "sbc-sql = sbc_sql.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_installed_copy_finds_its_templates(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    probe = (
        "import sys; from sbc_sql import templates\n"
        "d = templates.sql_dir()\n"
        "print(d)\n"
        "print(templates.render_sql('row_count', source='t'))\n"
    )
    # run outside the checkout so only the installed copy can be imported
    res = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120, check=False,
                         env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr
    found, sql = res.stdout.splitlines()[:2]
    assert Path(found).resolve() == (site / "sbc_sql" / "sql").resolve()
    assert sorted(p.name for p in Path(found).glob("*.sql")) == SQL_FILES
    assert sql == 'SELECT COUNT(*) AS n_rows FROM "t"'


def test_checkout_finds_its_templates():
    from sbc_sql import templates

    assert (templates.sql_dir() / "row_count.sql").is_file()
    assert sorted(p.name for p in templates.sql_dir().glob("*.sql")) == SQL_FILES
