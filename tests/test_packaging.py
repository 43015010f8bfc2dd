"""The wheel ships the SQL and the kernels compiled at build: sql/ at the repository's root
is mapped to the package sbc_sql.sql.text, templates.sql_root() finds it in an installed
copy (not only in the checkout), and the installed copy runs the default without numba.

The wheel is built once per session (conftest.py's ``wheel``).
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from helpers import ROOT

#: every SQL file of the checkout's sql/, as the wheel holds it (sbc_sql/sql/text/...)
SHIPPED = "sbc_sql/sql/text/"
SQL_FILES = sorted(SHIPPED + p.relative_to(ROOT / "sql").as_posix() for p in (ROOT / "sql").rglob("*.sql"))


@pytest.mark.slow
def test_the_wheel_contains_every_template(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert SQL_FILES, "the checkout has no sql/**/*.sql"
    assert SHIPPED + "functions/install.sql" in SQL_FILES  # install-sql's functions
    assert SHIPPED + "templates/row_count.sql" in SQL_FILES
    shipped = sorted(n for n in names if n.endswith(".sql"))
    assert shipped == SQL_FILES
    assert "sbc_sql/sql/templates.py" in names and "sbc_sql/cluster/sbca_paper.py" in names
    schemas = {f"sbc_sql/schemas/{p.name}" for p in (ROOT / "sbc_sql" / "schemas").glob("*.json")}
    assert schemas and schemas <= names  # the --json documents' JSON Schemas (docs/json.md)
    assert "sbc_sql/engines/spark/log4j2.properties" in names  # a Spark session's quiet start
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "sbc-sql = sbc_sql.__main__:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


@pytest.mark.slow
def test_the_wheel_contains_the_report_page(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    folder = ROOT / "sbc_sql" / "quality" / "templates"
    templates = {f"sbc_sql/quality/templates/{p.name}" for p in folder.iterdir()}
    assert "sbc_sql/quality/templates/report.html" in templates and templates <= names
    modules = ("html_report", "report_figures", "report_render")
    assert {f"sbc_sql/quality/{m}.py" for m in modules} <= names


@pytest.mark.slow
def test_the_wheel_says_it_is_typed_and_carries_its_license(wheel):
    """py.typed tells a type checker the package's annotations are its API; the licence the
    metadata names is the LICENSE file's, shipped in the wheel."""
    archive = zipfile.ZipFile(wheel)
    names = set(archive.namelist())
    assert "sbc_sql/py.typed" in names
    assert any(n.endswith((".dist-info/licenses/LICENSE", ".dist-info/LICENSE")) for n in names)
    metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License :: OSI Approved :: MIT License" in metadata and "Typing :: Typed" in metadata
    assert "MIT License" in (ROOT / "LICENSE").read_text()


def _installed(wheel: Path, tmp_path: Path) -> Path:
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    return site


def _run_installed(site: Path, tmp_path: Path, probe: str) -> subprocess.CompletedProcess:
    # run outside the checkout so only the installed copy can be imported
    return subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
    )


@pytest.mark.slow
def test_the_wheel_carries_the_kernels_compiled_ahead_of_time(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert [n for n in names if n.startswith("sbc_sql/cluster/sbca_plus/_aot.") and n.endswith(".so")]
    assert "-py3-none-any" not in wheel.name  # a native module: a platform wheel


@pytest.mark.slow
def test_installed_copy_runs_the_default_without_numba(wheel, tmp_path):
    site = _installed(wheel, tmp_path)
    probe = (
        "import sys, duckdb, sbc_sql\n"
        "from sbc_sql.cluster.sbca_plus import compiled\n"
        "con = duckdb.connect()\n"
        "con.execute('CREATE TABLE t AS SELECT i % 70 AS age, (i * 7) % 300 AS income, '\n"
        "            \"'c' || (i % 5) AS city, 'z' || (i * 13 % 400) AS zip FROM range(3000) r(i)\")\n"
        "r = sbc_sql.anonymize(con, 't', 5)\n"
        "print(compiled.engine(), 'numba' in sys.modules, r.verdict.ok)\n"
    )
    res = _run_installed(site, tmp_path, probe)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["ahead-of-time", "False", "True"]


@pytest.mark.slow
def test_installed_copy_finds_its_templates(wheel, tmp_path):
    site = _installed(wheel, tmp_path)
    probe = (
        "import sys; from sbc_sql.sql import templates\n"
        "d = templates.sql_root()\n"
        "print(d)\n"
        "print(templates.render_sql('row_count', source='t'))\n"
    )
    res = _run_installed(site, tmp_path, probe)
    assert res.returncode == 0, res.stderr
    found, sql = res.stdout.splitlines()[:2]
    assert Path(found).resolve() == (site / "sbc_sql" / "sql" / "text").resolve()
    shipped = sorted(SHIPPED + p.relative_to(found).as_posix() for p in Path(found).rglob("*.sql"))
    assert shipped == SQL_FILES
    assert sql == 'SELECT COUNT(*) AS n_rows FROM "t"'


@pytest.mark.slow
def test_installed_copy_renders_the_report_from_its_templates(wheel, tmp_path):
    site = _installed(wheel, tmp_path)
    probe = (
        "import duckdb, sbc_sql\n"
        "from sbc_sql.quality import report_render\n"
        "con = duckdb.connect()\n"
        "con.execute(\"CREATE TABLE t AS SELECT i % 40 AS age, 'z' || (i % 6) AS zip \"\n"
        '            "FROM range(200) r(i)")\n'
        "sbc_sql.anonymize(con, 't', 4, output='r')\n"
        "page = sbc_sql.report(con, 't', 'r', curve_k=None).html\n"
        "env = report_render.environment()\n"
        "print(env.loader.get_source(env, 'report.html')[1])\n"
        "print(page.startswith('<!DOCTYPE html>'), page.count('data-chart='))\n"
    )
    res = _run_installed(site, tmp_path, probe)
    assert res.returncode == 0, res.stderr
    where, shown = res.stdout.splitlines()[-2:]
    assert Path(where).resolve() == (site / "sbc_sql" / "quality" / "templates" / "report.html").resolve()
    assert shown == "True 3"  # risk, NCP, class sizes: no curve asked, no sensitive column


def test_checkout_finds_its_templates():
    from sbc_sql.sql import templates

    assert (templates.sql_dir() / "row_count.sql").is_file()
    found = templates.sql_root()
    assert found.resolve() == (ROOT / "sql").resolve()
    assert sorted(SHIPPED + p.relative_to(found).as_posix() for p in found.rglob("*.sql")) == SQL_FILES
