"""Fixtures: a fresh DuckDB, a table builder from pandas, a CLI runner and the wheel.

The helpers themselves live in helpers.py so hypothesis tests can call them inside @given;
the strategies in strategies.py. Tests that build the wheel, spawn processes or run for more
than a few seconds are marked ``slow``: ``pytest -m "not slow"`` is the development loop.
"""

from __future__ import annotations

import fcntl
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import helpers
import pg_cluster
import pytest
from helpers import ROOT


@pytest.fixture(autouse=True)
def _no_option_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads an option from the shell that runs the suite: every SBC_SQL_<OPTION>
    variable is unset (SBC_SQL_KERNELS and the suite's own variables are kept)."""
    from sbc_sql.plan import catalogue

    for option in catalogue.OPTIONS:
        if not option.no_cli:
            monkeypatch.delenv(option.env, raising=False)


@pytest.fixture
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    """A fresh in-memory database."""
    connection = duckdb.connect()
    yield connection
    connection.close()


@pytest.fixture
def released(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """A release 'rel' (k = 3) of 't', the banded patients, whose source comments declare pid
    an identifier and dis sensitive (age and zip are QIs by default)."""
    import sbc_sql

    helpers.make_table(con, "t", helpers.banded_patients(), helpers.BANDED_TYPES)
    con.execute("COMMENT ON COLUMN t.pid IS 'sbc:identifier'")
    con.execute("COMMENT ON COLUMN t.dis IS 'sbc:sensitive'")
    sbc_sql.anonymize(con, "t", 3, output="rel")
    return con


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """Where a test's database file goes (not created)."""
    return tmp_path / "test.duckdb"


@pytest.fixture
def file_con(db_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """A fresh database file, opened."""
    connection = duckdb.connect(str(db_path))
    yield connection
    connection.close()


@pytest.fixture
def make_table():
    """make_table(con, name, df, types) -> CREATE TABLE name from a DataFrame."""
    return helpers.make_table


@pytest.fixture
def cli():
    """cli(args) -> exit_code, stdout, stderr of the typer app run in-process."""
    return helpers.run_cli


#: the engines the ``engine`` fixture runs a test on: DuckDB and PostgreSQL in the main suite,
#: Spark under its marker (``pytest -m spark``)
ENGINES = [
    "duckdb",
    pytest.param("postgres", marks=pytest.mark.postgres),
    pytest.param("spark", marks=[pytest.mark.spark, pytest.mark.slow]),
]


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[helpers.EngineUnderTest]:
    """The engine a test runs on, one test per engine (a test marks what an engine cannot do
    with ``@pytest.mark.notimpl([names], reason=...)``, and is not run on it): its name,
    ``engine(case)``, which puts a generated table 't' into a fresh database of the engine and
    returns what anonymize, verify and measure take for it, and the tables and SQL of
    helpers.EngineUnderTest. Spark's session is shared by every Spark test: the views and
    tables a test made are dropped when it ends, so the next one finds the session empty."""
    name = request.param
    if name == "postgres":
        yield helpers.postgres_engine(request.getfixturevalue("postgres_url"))
    elif name == "spark":
        under = helpers.spark_engine(request.getfixturevalue("spark"), tmp_path)
        yield under
        under.fresh()
    else:
        yield helpers.duckdb_engine()


def _not_implemented(item: pytest.Item) -> bool:
    """The test runs on an engine its ``notimpl`` marker names."""
    marker = item.get_closest_marker("notimpl")
    callspec = getattr(item, "callspec", None)
    if marker is None or callspec is None or "engine" not in callspec.params:
        return False
    if not marker.kwargs.get("reason"):
        raise pytest.UsageError(f"{item.nodeid}: notimpl needs a reason")
    return callspec.params["engine"] in marker.args[0]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test that needs the session's wheel is marked slow, so the fast tier never
    builds it (a forgotten marker would cost the fast tier a minute). Every test that needs
    the PostgreSQL cluster is marked postgres (``-m "not postgres"`` runs without it), every
    test that loads a page in Chromium chromium; every
    test that needs Spark is marked spark, and slow (it starts a JVM)."""
    left_out = [item for item in items if _not_implemented(item)]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if item not in left_out]
    for item in items:
        if "postgres_url" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.postgres)
        if "chromium" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.chromium)
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)
            item.add_marker(pytest.mark.slow)
    unmarked = [
        item.nodeid
        for item in items
        if "wheel" in getattr(item, "fixturenames", ()) and item.get_closest_marker("slow") is None
    ]
    if unmarked:
        raise pytest.UsageError("tests that build the wheel must be marked slow: " + ", ".join(unmarked))


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[pg_cluster.Cluster]:
    """The session's throwaway PostgreSQL cluster (see pg_cluster.py). Without one the tests
    that need it are skipped with the reason, unless SBC_SQL_REQUIRE_POSTGRES=1 (CI) fails them."""
    started = pg_cluster.start()
    if isinstance(started, str):
        if os.environ.get("SBC_SQL_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"no PostgreSQL for the tests: {started}")
        pytest.skip(f"no PostgreSQL for the tests: {started}")
    yield started
    started.stop()


@pytest.fixture
def postgres_url(postgres_cluster: pg_cluster.Cluster) -> Iterator[str]:
    """The URL of a fresh, empty database of the session's cluster, dropped afterwards."""
    name = f"sbc_test_{uuid.uuid4().hex[:12]}"
    postgres_cluster.sql(f"CREATE DATABASE {name}")
    yield postgres_cluster.url_of(name)
    postgres_cluster.sql(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture(scope="session")
def chromium() -> str:
    """The headless Chromium the HTML report is loaded in (tests/browser.py). Without one the
    tests that need it are skipped, unless SBC_SQL_REQUIRE_CHROMIUM=1 (CI) fails them."""
    import browser

    found = browser.find()
    if found is None:
        reason = "no Chromium for the tests: install it (apt-get install chromium)"
        if os.environ.get(browser.ENV_REQUIRE) == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return found


#: the variable that names the Spark tests' master (default :data:`SPARK_MASTER`), e.g.
#: ``local-cluster[2,1,1024]``: two executor JVMs of one core and 1 GB each, whose Python
#: workers import sbc_sql as a cluster's would (see :func:`spark_master`)
SPARK_MASTER_ENV = "SBC_SQL_TEST_SPARK_MASTER"
SPARK_MASTER = "local[2]"


def spark_master() -> str:
    """The Spark tests' master: $SBC_SQL_TEST_SPARK_MASTER, or local[2]. On local-cluster
    the executors run their Python workers with $PYSPARK_PYTHON, which is set to this
    interpreter (whose sbc_sql they import) when it is not set."""
    master = os.environ.get(SPARK_MASTER_ENV) or SPARK_MASTER
    if master.startswith("local-cluster"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return master


@pytest.fixture(scope="session")
def spark(tmp_path_factory) -> Iterator[Any]:
    """The session's one SparkSession (local[2], or the master $SBC_SQL_TEST_SPARK_MASTER
    names, :func:`spark_master`; two shuffle partitions, 1 GB of driver memory, its
    warehouse in a temporary folder), built as sbc-sql builds its own. Without pyspark or
    Java the tests that need it are skipped with the reason, unless SBC_SQL_REQUIRE_SPARK=1
    (CI) fails them."""

    def unavailable(reason: str) -> None:
        if os.environ.get("SBC_SQL_REQUIRE_SPARK") == "1":
            pytest.fail(f"no Spark for the tests: {reason}")
        pytest.skip(f"no Spark for the tests: {reason}")

    if importlib.util.find_spec("pyspark") is None:
        unavailable("pyspark is not installed (pip install '.[spark]')")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        unavailable("no Java (Spark needs Java 17 or later)")
    from sbc_sql.engines.spark import SparkEngine

    base = tmp_path_factory.mktemp("spark")
    engine = SparkEngine.connect(
        master=spark_master(),
        conf={
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.driver.memory": "1g",
            "spark.sql.warehouse.dir": str(base / "warehouse"),
            "spark.driver.extraJavaOptions": f"-Dderby.system.home={base}",
        },
    )
    yield engine.session
    engine.close()


def _backend_ready() -> bool:
    """setuptools >= 68 and wheel in this interpreter, as pyproject's build-system asks."""
    try:
        major = int(importlib.metadata.version("setuptools").split(".")[0])
    except importlib.metadata.PackageNotFoundError:
        return False
    return major >= 68 and importlib.util.find_spec("wheel") is not None


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """A wheel built from a copy of the checkout (so no build/ or egg-info lands in it), its
    kernels compiled ahead of time by setup.py. Under pytest -n the workers share one: the
    first to ask builds it in the run's own temporary folder (the parent of each worker's)
    while the others wait on a lock, since a build takes minutes of both cores."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return _built_wheel(tmp_path_factory.mktemp("wheel"))
    shared = tmp_path_factory.getbasetemp().parent / "wheel"
    shared.mkdir(exist_ok=True)
    with (shared / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        built = sorted((shared / "dist").glob("sbc_sql-*.whl"))
        return built[0] if built else _built_wheel(shared)


def _built_wheel(base: Path) -> Path:
    src = base / "src"
    shutil.copytree(
        ROOT,
        src,
        ignore=shutil.ignore_patterns(
            ".git",
            ".venv",
            ".venv-dbt",
            ".hypothesis",
            ".pytest_cache",
            ".ruff_cache",
            "__pycache__",
            "results",
            "*.duckdb",
            "*.duckdb.wal",
            "build",
            "dist",
            "*.egg-info",
            "_aot*.so",
        ),
    )
    out = base / "dist"
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(src)]
    if _backend_ready():
        # offline: build with this interpreter's setuptools and wheel
        cmd.insert(4, "--no-build-isolation")
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    (path,) = out.glob("sbc_sql-*.whl")
    return path
