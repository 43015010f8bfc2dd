"""The dbt package (dbt/sbc_sql) and its example project (dbt/example), built by dbt itself:
``dbt build`` makes the patients table, its release by the sbc_release materialization and
runs the sbc_verified test, on dbt-duckdb (a DuckDB file) and on dbt-postgres (a database of
the throwaway cluster, with sbc-sql's SQL functions installed). The release is the one
sbc-sql writes, verified by sbc-sql from outside dbt too; a release broken after its build,
or by its model's own hook, fails the test and the build.

The dbt they run is $SBC_SQL_TEST_DBT, else the one beside this interpreter, else dbt on
the PATH, with its duckdb and postgres adapters (``pip install 'sbc-sql[dbt]'``; CI installs
the dbt extra in a venv of its own, .ci/run). Without one the tests are skipped with the
reason, unless SBC_SQL_REQUIRE_DBT=1 (CI) fails them. Each runs dbt a few times, seconds
each: they are marked slow.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.parse
from collections.abc import Callable
from pathlib import Path

import duckdb
import pg_cluster
import pytest
from helpers import ROOT, pg_rows

import sbc_sql
from sbc_sql import install_sql

pytestmark = pytest.mark.slow

#: the example model's k and l, as dbt/example/models/patients_k5.sql asks them
K, L = 5, 3

#: a model whose post-hook takes rows out of its release after sbc-sql wrote it: its
#: sbc_verified test must fail
ALTERED_MODEL = """
{{ config(
    materialized='sbc_release',
    sbc={'k': 5, 'qi': ['age', 'zip', 'sex'], 'sensitive': ['diagnosis'], 'drop': ['patient_id']},
    post_hook="delete from {{ api.Relation.create(database=this.database, schema=this.schema,
               identifier=this.identifier ~ '_rows') }} where eq_class = (select min(eq_class)
               from {{ api.Relation.create(database=this.database, schema=this.schema,
               identifier=this.identifier ~ '_rows') }})",
) }}

select * from {{ ref('patients') }}
"""

#: a model whose config's values would end their string literals and the call, were they not
#: written as literals: one ends with a quote, one with a backslash
HOSTILE_MODEL = r"""
{{ config(
    materialized='sbc_release',
    sbc={'k': 5, 'qi': ["age'); drop table patients; --", "zip\\"], 'sensitive': ['diagnosis']},
) }}

select * from {{ ref('patients') }}
"""

ALTERED_TESTS = """
version: 2

models:
  - name: patients_altered
    data_tests:
      - sbc_sql.sbc_verified
"""


#: the variable naming the dbt the tests run (.ci/run sets it)
DBT_ENV = "SBC_SQL_TEST_DBT"


def _dbt_executable() -> str:
    """$SBC_SQL_TEST_DBT, else dbt beside this interpreter, else on PATH, with both
    adapters; "" without one."""
    beside = Path(sys.executable).parent / "dbt"
    found = os.environ.get(DBT_ENV) or (str(beside) if beside.exists() else shutil.which("dbt"))
    if found is None or not Path(found).exists():
        return ""
    done = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=120, check=False)
    plugins = {line.split(":")[0].strip(" -") for line in done.stdout.splitlines() if line.startswith("  - ")}
    return found if {"duckdb", "postgres"} <= plugins else ""


@pytest.fixture(scope="module")
def dbt_executable() -> str:
    found = _dbt_executable()
    if not found:
        reason = (
            "no dbt with its duckdb and postgres adapters for the tests: pip install '.[dbt]', "
            f"or name one with {DBT_ENV}"
        )
        if os.environ.get("SBC_SQL_REQUIRE_DBT") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return found


Dbt = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def dbt(dbt_executable: str, tmp_path: Path) -> Callable[[dict[str, str]], Dbt]:
    """dbt_for(environment) -> dbt(*args): dbt run in a copy of the example project (its
    package beside it, installed by dbt deps), with the profile's variables given."""
    shutil.copytree(
        ROOT / "dbt",
        tmp_path / "dbt",
        ignore=shutil.ignore_patterns("target", "dbt_packages", "logs", "*.duckdb", "package-lock.yml"),
    )
    project = tmp_path / "dbt" / "example"

    def dbt_for(variables: dict[str, str]) -> Dbt:
        env = {**os.environ, **variables, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "NO_COLOR": "1"}

        def run(*args: str) -> subprocess.CompletedProcess[str]:
            argv = [dbt_executable, *args, "--project-dir", str(project), "--profiles-dir", str(project)]
            return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600, check=False)

        deps = run("deps")
        assert deps.returncode == 0, deps.stdout + deps.stderr
        return run

    return dbt_for


def _passed(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "Completed successfully" in done.stdout


def _failed_test(done: subprocess.CompletedProcess[str], name: str) -> None:
    """dbt failed, and on the sbc_verified test of ``name`` (FAIL: its query found
    problems), not with an error."""
    assert done.returncode == 1, done.stdout[-4000:]
    assert any(
        "FAIL" in line and f"sbc_verified_{name}_" in line and "START" not in line
        for line in done.stdout.splitlines()
    ), done.stdout[-4000:]


def _add_altered_model(project: Path) -> None:
    (project / "models" / "patients_altered.sql").write_text(ALTERED_MODEL)
    (project / "models" / "altered.yml").write_text(ALTERED_TESTS)


def test_dbt_duckdb_builds_a_verified_release_and_its_test_fails_a_broken_one(
    dbt: Callable[[dict[str, str]], Dbt], tmp_path: Path
) -> None:
    database = tmp_path / "example.duckdb"
    run = dbt({"SBC_SQL_DBT_DUCKDB": str(database)})
    _passed(run("build"))
    # a second build replaces the first's release
    _passed(run("build"))
    with duckdb.connect(str(database)) as con:
        kinds = dict(
            con.execute(
                "SELECT table_name, table_type FROM information_schema.tables "
                "WHERE table_name LIKE 'patients_k5%'"
            ).fetchall()
        )
        assert kinds == {
            "patients_k5": "VIEW",
            "patients_k5_classes": "BASE TABLE",
            "patients_k5_rows": "BASE TABLE",
            "patients_k5_view": "VIEW",
            "patients_k5__sbc_input": "BASE TABLE",
        }
        (comment,) = con.execute(
            "SELECT comment FROM duckdb_views() WHERE view_name = 'patients_k5'"
        ).fetchone()
        provenance = json.loads(comment)
        assert (provenance["k"], provenance["source"]) == (K, "example.main.patients_k5__sbc_input")
        # verified from outside dbt, against the model's input and against the patients
        # table itself (the same rows)
        assert sbc_sql.verify(con, "patients_k5__sbc_input", "patients_k5", K, l_diversity=L).ok
        assert sbc_sql.verify(con, "patients", "patients_k5", K, l_diversity=L).ok
        # a class tampered below k after the build
        (smallest,) = con.execute("SELECT min(eq_class) FROM patients_k5_classes").fetchone()
        con.execute(
            "DELETE FROM patients_k5_rows WHERE rowid IN "
            "(SELECT rowid FROM patients_k5_rows WHERE eq_class = $c LIMIT 3)",
            {"c": smallest},
        )
        con.execute(
            "UPDATE patients_k5_classes SET class_size = class_size - 3 WHERE eq_class = $c", {"c": smallest}
        )
    _failed_test(run("test"), "patients_k5")
    # the next build writes the release afresh; a model whose hook alters its release fails
    _add_altered_model(tmp_path / "dbt" / "example")
    built = run("build")
    _failed_test(built, "patients_altered")
    assert "PASS sbc_sql_sbc_verified_patients_k5_" in built.stdout


def test_dbt_duckdb_refuses_an_option_it_does_not_know(
    dbt: Callable[[dict[str, str]], Dbt], tmp_path: Path
) -> None:
    database = tmp_path / "example.duckdb"
    run = dbt({"SBC_SQL_DBT_DUCKDB": str(database)})
    model = tmp_path / "dbt" / "example" / "models" / "patients_k5.sql"
    model.write_text(model.read_text().replace("'l_diversity': 3", "'l_diversity': 3, 'out_file': 'x.csv'"))
    done = run("build")
    assert done.returncode == 1
    assert "'out_file' is not an option of its sbc config on dbt-duckdb" in done.stdout
    with duckdb.connect(str(database)) as con:
        assert con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE 'patients_k5%'"
        ).fetchone() == (0,)


@pytest.fixture(scope="module")
def server_path(postgres_cluster: pg_cluster.Cluster) -> list[str]:
    """Where the server's Python finds sbc-sql (as tests/test_plpython.py has it)."""
    reason = pg_cluster.plpython(postgres_cluster)
    if reason is not None:
        pytest.fail(f"no PL/Python for the server: {reason}")
    return pg_cluster.python_path(postgres_cluster, install_sql.default_path())


def _postgres_profile(postgres_url: str, server_path: list[str]) -> dict[str, str]:
    """The example profile's variables for the throwaway PostgreSQL at ``postgres_url``, once
    sbc-sql's SQL functions are installed there."""
    install_sql.install(postgres_url, python_path=server_path)
    url = urllib.parse.urlsplit(postgres_url)
    return {
        "SBC_SQL_DBT_PG_HOST": url.hostname or "",
        "SBC_SQL_DBT_PG_PORT": str(url.port),
        "SBC_SQL_DBT_PG_USER": url.username or "",
        "SBC_SQL_DBT_PG_DATABASE": url.path.lstrip("/"),
    }


def test_dbt_postgres_builds_a_verified_release_and_its_test_fails_a_broken_one(
    dbt: Callable[[dict[str, str]], Dbt], tmp_path: Path, postgres_url: str, server_path: list[str]
) -> None:
    run = dbt(_postgres_profile(postgres_url, server_path))
    _passed(run("build", "--target", "postgres"))
    _passed(run("build", "--target", "postgres"))
    kinds = pg_rows(
        postgres_url,
        "SELECT c.relname, c.relkind::text FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace "
        "AND c.relname LIKE 'patients_k5%' ORDER BY 1",
    )
    assert kinds == [
        ("patients_k5", "v"),
        ("patients_k5__sbc_input", "r"),
        ("patients_k5_classes", "r"),
        ("patients_k5_rows", "r"),
        ("patients_k5_view", "v"),
    ]
    ((comment,),) = pg_rows(
        postgres_url, "SELECT obj_description('public.patients_k5'::regclass, 'pg_class')"
    )
    assert json.loads(comment)["k"] == K
    assert sbc_sql.verify(postgres_url, "patients_k5__sbc_input", "patients_k5", K, l_diversity=L).ok
    pg_rows(
        postgres_url,
        "WITH c AS (SELECT min(eq_class) AS c FROM patients_k5_classes), "
        "gone AS (DELETE FROM patients_k5_rows WHERE ctid IN (SELECT ctid FROM patients_k5_rows "
        "WHERE eq_class = (SELECT c FROM c) LIMIT 3) RETURNING eq_class) "
        "UPDATE patients_k5_classes SET class_size = class_size - 3 WHERE eq_class = (SELECT c FROM c) "
        "RETURNING eq_class",
    )
    _failed_test(run("test", "--target", "postgres"), "patients_k5")
    _add_altered_model(tmp_path / "dbt" / "example")
    built = run("build", "--target", "postgres")
    _failed_test(built, "patients_altered")
    assert "PASS sbc_sql_sbc_verified_patients_k5_" in built.stdout
    # each value is one literal: the names are names sbc-sql does not find, and nothing else runs
    (tmp_path / "dbt" / "example" / "models" / "patients_hostile.sql").write_text(HOSTILE_MODEL)
    done = run("run", "--select", "patients_hostile", "--target", "postgres")
    assert done.returncode == 1
    assert "Error: column 'age'); drop table patients; --' given to qi => ... does not exist" in done.stdout
    assert "syntax error" not in done.stdout
    assert pg_rows(postgres_url, "SELECT count(*) FROM patients") == [(600,)]
    # the failed build's input went with its transaction
    assert pg_rows(postgres_url, "SELECT to_regclass('patients_hostile__sbc_input') IS NULL") == [(True,)]


def _grows(run: Dbt, target: list[str], versions: Callable[[], list[tuple[int, int]]]) -> None:
    """The example's incremental model across builds as the patients table grows: refreshed
    (version 2 adds the new rows, version 1 kept), a lost row refused, --full-refresh anew.
    ``versions()``: (release_version, rows) of patients_daily_rows."""
    select = ["--select", "patients", "patients_daily"]
    _passed(run("build", *select, *target))
    assert versions() == [(1, 600)]
    _passed(run("build", *select, *target, "--vars", "{patients: 700}"))
    grown = dict(versions())
    assert grown[1] == 600 and 0 < grown[2] <= 100
    # a build whose input lost rows the release holds stops, and the release stands
    lost = run("build", *select, *target, "--vars", "{patients: 650}")
    assert lost.returncode == 1 and "lacks 50 row(s) that release" in lost.stdout, lost.stdout[-3000:]
    assert dict(versions()) == grown
    _passed(run("build", *select, *target, "--vars", "{patients: 650}", "--full-refresh"))
    assert versions() == [(1, 650)]


def test_dbt_duckdb_refreshes_an_incremental_release_as_its_input_grows(
    dbt: Callable[[dict[str, str]], Dbt], tmp_path: Path
) -> None:
    database = tmp_path / "example.duckdb"
    run = dbt({"SBC_SQL_DBT_DUCKDB": str(database)})

    def versions() -> list[tuple[int, int]]:
        with duckdb.connect(str(database), read_only=True) as con:
            return con.execute(
                "SELECT release_version, count(*) FROM patients_daily_rows GROUP BY 1 ORDER BY 1"
            ).fetchall()

    _grows(run, [], versions)


def test_dbt_postgres_refreshes_an_incremental_release_as_its_input_grows(
    dbt: Callable[[dict[str, str]], Dbt], postgres_url: str, server_path: list[str]
) -> None:
    run = dbt(_postgres_profile(postgres_url, server_path))

    def versions() -> list[tuple[int, int]]:
        rows = pg_rows(
            postgres_url, "SELECT release_version, count(*) FROM patients_daily_rows GROUP BY 1 ORDER BY 1"
        )
        return [(int(v), int(n)) for v, n in rows]

    _grows(run, ["--target", "postgres"], versions)
