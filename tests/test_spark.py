"""Apache Spark as the engine: a Parquet input's release, written as Parquet folders, checked
independently with DuckDB (every class of at least k rows, every source row in exactly one
class, inside its class's ranges and sets); the same release and NCP as DuckDB's on the same
rows in the same order; nothing written when verification fails, the input is bad or the
run is interrupted; an existing output refused unless replaced; hostile names and NULLs;
the same input twice, the same release.

The tests that need Spark share one local session (conftest's ``spark`` fixture) and are
marked spark and slow; the dialect's rewrites are checked without it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlglot
from helpers import assert_same_measures, make_table, q, run_cli, run_module
from test_datasets import datasets
from test_engines import ROLES, TYPES, people

import sbc_sql
from sbc_sql.cluster import distributed
from sbc_sql.engines.paths import looks_like_path
from sbc_sql.engines.spark import PROVENANCE_FILE, SparkEngine, _local_cores, _rewritten
from sbc_sql.engines.spark import blocks as spark_blocks
from sbc_sql.engines.spark import messages as spark_messages
from sbc_sql.errors import EngineError, InputError, OutputExistsError, VerificationError
from sbc_sql.run import cluster as runs
from sbc_sql.sql.dialects.spark import SbcSpark

K = 3


# ---- without Spark: the statements as the engine runs them ----


def spark_sql(duckdb_sql: str) -> str:
    tree = sqlglot.parse_one(duckdb_sql, read="duckdb")
    return _rewritten(tree).sql(dialect=SbcSpark)


def test_the_stages_tables_are_cached_temporary_views() -> None:
    assert spark_sql('CREATE TABLE "t x" AS WITH g AS (SELECT 1 AS a) SELECT a FROM g') == (
        "CACHE TABLE `t x` AS WITH g AS (SELECT 1 AS a) SELECT a FROM g"
    )
    assert spark_sql("CREATE TEMPORARY TABLE s AS SELECT 1 AS a") == "CACHE TABLE s AS SELECT 1 AS a"
    assert spark_sql('CREATE VIEW "v" AS SELECT 1 AS a') == (
        "CREATE OR REPLACE TEMPORARY VIEW `v` AS SELECT 1 AS a"
    )
    # a rename is a view of the new name over the old one, which keeps the cached rows
    assert spark_sql('ALTER TABLE "a`b" RENAME TO "c"') == (
        "CREATE OR REPLACE TEMPORARY VIEW `c` AS SELECT * FROM `a``b`"
    )
    assert spark_sql('DROP TABLE "a"') == "DROP VIEW IF EXISTS `a`"


def test_a_tuple_id_is_numbered_in_the_order_of_its_group() -> None:
    # Spark has no ROW_NUMBER() without an order; the group's keys are distinct, so the
    # numbers are too, and the same on every run
    assert spark_sql("SELECT a, b, COUNT(*) AS n, ROW_NUMBER() OVER () AS i FROM t GROUP BY a, b") == (
        "SELECT a, b, COUNT(*) AS n, ROW_NUMBER() OVER (ORDER BY a, b) AS i FROM t GROUP BY a, b"
    )
    assert spark_sql("SELECT a, SUM(b) OVER () FROM t") == "SELECT a, SUM(b) OVER () FROM t"


def test_paths_and_tables_are_told_apart() -> None:
    assert looks_like_path("data/x") and looks_like_path("x.parquet") and looks_like_path("s3a://b/k")
    assert not looks_like_path("x") and not looks_like_path("db.x")
    assert [_local_cores(m) for m in ("local", "local[3]", "local[3,2]")] == [1, 3, 3]


class Raised(Exception):
    """A Spark error as pyspark raises it: its condition and its message's parameters."""

    def __init__(self, condition: str, parameters: dict[str, str]) -> None:
        super().__init__(f"[{condition}] {parameters}")
        self.condition, self.parameters = condition, parameters

    def getCondition(self) -> str:
        return self.condition

    def getMessageParameters(self) -> dict[str, str]:
        return self.parameters


def test_a_type_spark_cannot_read_is_shown_and_no_other_parameter_is_kept() -> None:
    # a catalog table's files: no path to read a footer from, so the type alone is named
    illegal = spark_messages.read(
        Raised("PARQUET_TYPE_ILLEGAL", {"parquetType": "FIXED_LEN_BYTE_ARRAY (UUID)"})
    )
    assert str(spark_messages.explain(illegal, "reading 'db.t'")) == (
        "reading 'db.t': a column has a Parquet type Spark cannot read; write it as a type Spark reads, "
        "or read the files with DuckDB (--engine duckdb) (PARQUET_TYPE_ILLEGAL: FIXED_LEN_BYTE_ARRAY (UUID))"
    )
    # the parameters of any other condition can quote a value: never kept, never shown
    cast = spark_messages.read(Raised("CAST_INVALID_INPUT", {"expression": "'secret42'", "parquetType": "x"}))
    said = spark_messages.explain(cast, "reading 'db.t'")
    assert cast.types == {} and "secret42" not in str(said) and said.named_type is None


@pytest.mark.slow
def test_spark_submit_is_given_the_command_as_a_file() -> None:
    import subprocess
    import sys

    from helpers import checkout_env

    shown = subprocess.run(
        [sys.executable, "-m", "sbc_sql.spark_submit"],
        env=checkout_env(),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    path = Path(shown.stdout.strip())
    assert path.is_file() and path.name == "spark_submit.py"
    assert "from sbc_sql.__main__ import main" in path.read_text()


def test_a_session_built_here_reads_the_log_configuration_beside_the_engine() -> None:
    from sbc_sql.engines.spark import session

    assert session.LOG4J.is_file() and "rootLogger.level = error" in session.LOG4J.read_text()
    ours = f"-Dlog4j2.configurationFile={session.LOG4J.resolve().as_uri()}"
    assert session._java_options(None) == ours
    # the caller's options come after ours, so that theirs win
    assert session._java_options("-Dderby.system.home=/x") == f"{ours} -Dderby.system.home=/x"


# ---- with Spark ----


@pytest.mark.slow
def test_a_spark_command_prints_no_line_of_the_jvm(spark, tmp_path: Path) -> None:
    """A command on a session sbc-sql builds (a fresh process, a fresh JVM): stderr holds
    sbc-sql's lines alone, none of Spark's start-up notices (log4j's default profile, the
    default log level and how to change it, the native-hadoop warning) nor the JVM's own
    (its incubator modules)."""
    source = write_parquet(tmp_path / "people.parquet")
    args = ["profile", "--engine", "spark", "--spark-master", "local[1]", "-t", source]
    done = run_module([*args, "-q"], timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.startswith("Table ") and "Columns" in done.stdout
    done = run_module([*args, "--qi", "nope"], timeout=600)  # an error: its one line, alone
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith("Error: column 'nope'")


def write_parquet(path: Path, frame=None, types=None) -> Path:
    """``frame`` (default: 60 people, NULLs among them) as one Parquet file, by DuckDB."""
    con = duckdb.connect()
    make_table(con, "t", people() if frame is None else frame, TYPES if types is None else types)
    con.execute(f"COPY t TO '{path}' (FORMAT PARQUET)")
    con.close()
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def leftovers(folder: Path) -> list[str]:
    """What a run left in the folder besides the inputs."""
    return sorted(p.name for p in folder.iterdir() if not p.name.endswith(".parquet"))


def temporary_views(session) -> list[str]:
    return sorted(t.name for t in session.catalog.listTables() if t.isTemporary)


def run(session, table: str, output: str, k: int = K, **options) -> sbc_sql.Result:
    """A run on the session, its engine's working views dropped again afterwards."""
    lines: list[str] = []
    options.setdefault("log", lines.append)
    with sbc_sql.anonymize(session, table, k, output=output, **options) as result:
        return result


def read(con: duckdb.DuckDBPyConnection, folder: Path | str, order: str = "ALL") -> list[tuple]:
    return con.execute(f"SELECT * FROM read_parquet('{folder}/*.parquet') ORDER BY {order}").fetchall()


#: names Spark and SQL would misread unquoted, and a folder name to match
HOSTILE = {"age": 'A"ge `x`', "zip": "Zip; Code", "sex": "sex;--"}
OUT = "rel `out`; x"


def hostile(name: str) -> str:
    return HOSTILE.get(name, name)


#: the roles of the hostile names; the id kept, so that each released row names its source row
KEPT_ID = {
    "qi": [hostile(c) for c in ROLES["qi"]],
    "sensitive": ROLES["sensitive"],
    "keep": ["id"],
}


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return write_parquet(tmp_path / "people.parquet")


@pytest.fixture(scope="module")
def released(spark, tmp_path_factory) -> tuple[Path, Path, sbc_sql.Result, str]:
    """One release of the 60 people (NULLs among their ages and zips) under hostile names,
    shared by the tests that only read it: (source, release folder, the run's result, the
    source's digest before the run)."""
    folder = tmp_path_factory.mktemp("released")
    types = {hostile(c): t for c, t in TYPES.items()}
    source = write_parquet(folder / "my people.parquet", people().rename(columns=HOSTILE), types)
    before = digest(source)
    return source, folder / OUT, run(spark, str(source), str(folder / OUT), **KEPT_ID), before


def test_a_release_of_a_parquet_input_verifies_independently(spark, released) -> None:
    source, out, result, before = released
    assert result.written and result.verdict.ok
    assert sorted(p.name for p in out.parent.iterdir()) == [source.name, OUT, f"{OUT}_classes"]
    assert digest(source) == before  # the input is never modified
    con = duckdb.connect()
    con.execute(f"CREATE VIEW rel AS SELECT * FROM read_parquet('{out}/*.parquet')")
    con.execute(f"CREATE VIEW cls AS SELECT * FROM read_parquet('{out}_classes/*.parquet')")
    con.execute(f"CREATE VIEW src AS SELECT * FROM read_parquet('{source}')")
    # every class of at least k rows, as its class table says
    assert (
        con.execute("SELECT MIN(n) FROM (SELECT COUNT(*) AS n FROM rel GROUP BY eq_class)").fetchone()[0] >= K
    )
    assert con.execute(
        "SELECT COUNT(*) FROM cls FULL JOIN (SELECT eq_class, COUNT(*) AS n FROM rel GROUP BY eq_class) AS r "
        "ON cls.eq_class = r.eq_class WHERE cls.class_size IS DISTINCT FROM r.n"
    ).fetchone() == (0,)
    # every source row in exactly one class, with its own values, inside its class
    assert con.execute("SELECT COUNT(*), COUNT(DISTINCT id) FROM rel").fetchone() == (60, 60)
    assert con.execute("SELECT COUNT(*) FROM src ANTI JOIN rel USING (id)").fetchone() == (0,)
    inside = " AND ".join(
        [
            f"(CASE WHEN s.{q(c)} IS NULL THEN r.{q(c + '_has_null')} "
            f"ELSE s.{q(c)} BETWEEN r.{q(c + '_min')} AND r.{q(c + '_max')} END)"
            for c in (hostile("age"), "born", "seen")
        ]
        + [
            f"(CASE WHEN s.{q(c)} IS NULL THEN list_count(r.{q(c)}) < len(r.{q(c)}) "
            f"ELSE list_contains(r.{q(c)}, s.{q(c)}) END)"
            for c in (hostile("sex"), hostile("zip"))
        ]
        + ["s.dis = r.dis", "s.pay = r.pay"]
    )
    assert con.execute(
        f"SELECT COUNT(*) FROM src AS s JOIN rel AS r USING (id) WHERE {inside}"
    ).fetchone() == (60,)
    # NULLs are released as such: a range's flag, a trailing NULL in a value set
    assert con.execute(f"SELECT COUNT(*) FROM rel WHERE {q(hostile('age') + '_has_null')}").fetchone()[0] > 0
    assert con.execute(f"SELECT COUNT(*) FROM rel WHERE {q(hostile('zip'))}[-1] IS NULL").fetchone()[0] > 0
    # its provenance beside the files: the run's roles, counts and measures
    recorded = json.loads((out / PROVENANCE_FILE).read_text())
    assert recorded["k"] == K and recorded["rows"]["released"] == 60
    # what was written: the release's rows and its class table, no row table or text view
    assert recorded["release"] == {
        "view": f"file:{out}",
        "rows": None,
        "classes": f"file:{out}_classes",
        "text_view": None,
    }
    assert (out / PROVENANCE_FILE).read_text() == (
        out.parent / f"{OUT}_classes" / PROVENANCE_FILE
    ).read_text()
    # nothing of the run is left in the session
    assert temporary_views(spark) == []


def test_the_release_and_its_ncp_equal_duckdbs_on_the_same_rows(released) -> None:
    source, out, on_spark, _ = released
    con = duckdb.connect()
    on_duck = sbc_sql.anonymize(con, str(source), K, output="rel", log=lambda _: None, **KEPT_ID)
    # the same clustering (one block: the same classes): equal but for the order a sum's
    # terms were added in
    assert_same_measures(on_spark.measures, on_duck.measures)
    assert on_spark.verdict.facts == on_duck.verdict.facts
    # row for row, class ids, NULL flags and value sets included
    assert read(con, out) == con.execute("SELECT * FROM rel ORDER BY ALL").fetchall()
    assert read(con, f"{out}_classes") == con.execute("SELECT * FROM rel_classes ORDER BY ALL").fetchall()


@pytest.mark.parametrize("where", ["workers", "driver"])
def test_a_failed_verification_writes_nothing(spark, source, tmp_path, monkeypatch, where) -> None:
    # the first row moved to a class of its own: Spark's verification must catch it, whether
    # the workers clustered the rows (the default) or the driver did (exact mode)
    if where == "driver":
        real = runs.run_clustering

        def one_short(*args, **kwargs):
            clustered = real(*args, **kwargs)
            labels = clustered.labels.copy()
            labels[0] = labels.max() + 1
            return dataclasses.replace(clustered, labels=labels)

        monkeypatch.setattr(runs, "run_clustering", one_short)
    else:
        real_cluster = spark_blocks.cluster

        def one_short_in_workers(session, *args):
            detail = real_cluster(session, *args)
            name = args[-1]
            moved = session.sql(
                f"SELECT row_id, CASE WHEN row_id = (SELECT MIN(row_id) FROM `{name}`) "
                f"THEN (SELECT MAX(eq_class) + 1 FROM `{name}`) ELSE eq_class END AS eq_class FROM `{name}`"
            ).toArrow()
            session.createDataFrame(moved).createOrReplaceTempView(name)
            return detail

        monkeypatch.setattr(spark_blocks, "cluster", one_short_in_workers)
    with pytest.raises(
        VerificationError, match="nothing was written: the smallest class has 1 rows, below k=3"
    ):
        run(spark, str(source), str(tmp_path / "out"), mode="exact" if where == "driver" else "auto", **ROLES)
    assert leftovers(tmp_path) == []
    assert temporary_views(spark) == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"k": 61}, "k=61 is larger than the 60 rows"),
        ({"qi": ["age", "nope"]}, r"column 'nope' given to qi=\.\.\. does not exist"),
        ({"table": "missing.parquet"}, "input 'missing.parquet' does not exist"),
        ({"table": "no_such_table"}, "table 'no_such_table' does not exist in the Spark catalog"),
        ({"output": "same"}, "would write over the input"),
    ],
)
def test_bad_input_writes_nothing(spark, source, tmp_path, change, message) -> None:
    options = {"table": str(source), "output": str(tmp_path / "out"), "k": K, **ROLES, **change}
    if options["output"] == "same":
        options["output"] = str(source)
    table, output, k = options.pop("table"), options.pop("output"), options.pop("k")
    before = digest(source)
    with pytest.raises(InputError, match=message) as caught:
        run(spark, table, output, k, **options)
    assert "\n" not in str(caught.value)
    assert leftovers(tmp_path) == [] and digest(source) == before
    assert temporary_views(spark) == []


def test_columns_spark_takes_as_one_and_its_row_id_are_refused(spark, tmp_path) -> None:
    frame = people()[["age", "sex", "dis"]].assign(Age=people()["pay"], sbc_row_id=people()["id"])
    cased = tmp_path / "cased.parquet"
    pq.write_table(pa.Table.from_pandas(frame.drop(columns="sbc_row_id"), preserve_index=False), cased)
    with pytest.raises(InputError, match=r"cased.parquet' has two columns whose names differ only in case"):
        run(spark, str(cased), str(tmp_path / "out"))
    keyed = tmp_path / "keyed.parquet"
    pq.write_table(pa.Table.from_pandas(frame.drop(columns="Age"), preserve_index=False), keyed)
    with pytest.raises(InputError, match=r"'sbc_row_id' .* is the name the Spark engine keys rows by"):
        run(spark, str(keyed), str(tmp_path / "out"))
    assert leftovers(tmp_path) == []


def test_an_existing_output_is_refused_unless_replaced(spark, source, tmp_path, monkeypatch) -> None:
    out = tmp_path / "out"
    run(spark, str(source), str(out), **ROLES)
    con = duckdb.connect()
    first, first_classes = read(con, out), read(con, f"{out}_classes")
    with pytest.raises(OutputExistsError, match="already exists; pass replace=True"):
        run(spark, str(source), str(out), 4, **ROLES)
    assert read(con, out) == first
    # Ctrl-C once the new release is in place, before its class table is: the release
    # that was there is put back, whole
    renames = []
    real = SparkEngine._rename

    def interrupted(self, old, new, path):
        renames.append(new)
        if len(renames) == 3:
            raise KeyboardInterrupt
        real(self, old, new, path)

    with monkeypatch.context() as patched:
        patched.setattr(SparkEngine, "_rename", interrupted)
        with pytest.raises(KeyboardInterrupt):
            run(spark, str(source), str(out), 4, replace=True, **ROLES)
    assert read(con, out) == first and read(con, f"{out}_classes") == first_classes
    assert json.loads((out / PROVENANCE_FILE).read_text())["k"] == K
    assert leftovers(tmp_path) == ["out", "out_classes"]
    replaced = run(spark, str(source), str(out), 4, replace=True, **ROLES)
    assert replaced.measures.smallest >= 4 and read(con, out) != first
    assert json.loads((out / PROVENANCE_FILE).read_text())["k"] == 4
    assert leftovers(tmp_path) == ["out", "out_classes"]
    assert temporary_views(spark) == []


def test_an_interrupted_run_writes_nothing(spark, source, tmp_path, monkeypatch) -> None:
    from sbc_sql.stages import measure

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(measure, "measure_tables", interrupt)
    with pytest.raises(KeyboardInterrupt):
        run(spark, str(source), str(tmp_path / "out"), **ROLES)
    assert leftovers(tmp_path) == [] and temporary_views(spark) == []


def test_the_same_input_twice_gives_the_same_release(spark, released, tmp_path) -> None:
    source, first, _, _ = released
    second = tmp_path / "b"
    run(spark, str(source), str(second), **KEPT_ID)
    con = duckdb.connect()
    # the same rows in the same order, file for file
    for suffix in ("", "_classes"):
        ordered = "SELECT * FROM read_parquet('{}/*.parquet')"
        assert (
            con.execute(ordered.format(f"{first}{suffix}")).fetchall()
            == con.execute(ordered.format(f"{second}{suffix}")).fetchall()
        )

    def without_seconds(folder: Path) -> dict:
        doc = json.loads((folder / PROVENANCE_FILE).read_text())
        doc.pop("seconds", None)
        doc.pop("release")
        doc["options"].pop("output")
        return doc

    assert without_seconds(first) == without_seconds(second)


def test_catalog_tables_in_and_out_with_roles_from_comments(spark, source) -> None:
    spark.read.parquet(str(source)).createOrReplaceTempView("sbc_test_people")
    spark.sql(
        "CREATE TABLE people_t (id BIGINT COMMENT 'sbc:identifier', age INT, born DATE, seen TIMESTAMP_NTZ, "
        "sex STRING, zip STRING, dis STRING COMMENT 'sbc:sensitive', pay INT COMMENT 'sbc:sensitive') "
        "USING parquet"
    )
    try:
        spark.sql("INSERT INTO people_t SELECT * FROM sbc_test_people")
        result = run(spark, "people_t", "people_rel")
        assert result.written
        assert spark.catalog.tableExists("people_rel") and spark.catalog.tableExists("people_rel_classes")
        recorded = json.loads(spark.catalog.getTable("people_rel").description)
        assert {c["name"]: c["origin"] for c in recorded["columns"]}["dis"] == "comment"
        assert "id" not in spark.table("people_rel").columns
        assert sbc_sql.measure(spark, "people_t", "people_rel").total_ncp == pytest.approx(
            result.measures.total_ncp
        )
    finally:
        for name in ("people_t", "people_rel", "people_rel_classes"):
            spark.sql(f"DROP TABLE IF EXISTS {name}")
        spark.catalog.dropTempView("sbc_test_people")
    assert temporary_views(spark) == []


def test_a_dataframe_is_the_input_and_the_criteria_hold_as_on_duckdb(spark, source, tmp_path) -> None:
    frame = spark.read.parquet(str(source))
    with pytest.raises(InputError, match="a Spark DataFrame has no place of its own"):
        sbc_sql.anonymize(frame, k=K, engine="spark", **ROLES)
    out = tmp_path / "out"
    criteria = {"l_diversity": 2, "t_closeness": 0.6, "beta_likeness": 3.0}
    with sbc_sql.anonymize(frame, k=K, engine="spark", output=str(out), **criteria, **ROLES) as result:
        on_spark = result
    recorded = json.loads((out / PROVENANCE_FILE).read_text())
    assert recorded["source"] == "data" and on_spark.measures.n_rows == 60
    # the criteria cluster in Spark's workers, in blocks: DuckDB's block mode on one block
    # and one group gives the same classes, so the same figures of every criterion, checked
    # in Spark's SQL
    on_duck = sbc_sql.anonymize(
        duckdb.connect(), str(source), K, output="rel", mode="blocks", **criteria, **ROLES
    )
    assert on_spark.achieved == pytest.approx(on_duck.achieved, rel=1e-9)
    assert on_spark.measures.total_ncp == pytest.approx(on_duck.measures.total_ncp, rel=1e-12)
    assert temporary_views(spark) == []


def test_spark_errors_never_show_a_value(spark, source, capfd) -> None:
    engine = SparkEngine(spark)
    try:
        info = engine.open_source(str(source))
        with pytest.raises(EngineError) as caught:
            engine.fetch_all(f"SELECT CAST(concat(dis, 'secret42') AS INT) FROM {info.name}")
    finally:
        engine.close()
    assert "secret42" not in str(caught.value) and "CAST_INVALID_INPUT" in str(caught.value)
    assert caught.value.kind == "conversion"
    out, err = capfd.readouterr()
    assert "secret42" not in out + err


def test_the_command_line_anonymizes_verifies_measures_and_evaluates(spark, source, tmp_path) -> None:
    out = tmp_path / "out"
    roles = ["--qi", "age,born,seen,sex,zip", "--sensitive", "dis,pay", "--drop", "id"]
    done = run_cli(["anonymize", "--engine", "spark", "-t", source, "-o", out, "-k", K, *roles, "--json"])
    assert done.exit_code == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["release"] == f"file:{out}" and summary["classes"] >= 1
    verified = run_cli(["verify", "--engine", "spark", "--original", source, "--release", out, "-k", K])
    assert verified.exit_code == 0, verified.stderr
    assert verified.stdout.startswith(f"ok: '{out}' is {K}-anonymous")
    measured = run_cli(["measure", "--engine", "spark", "--original", source, "--release", out, "--json"])
    assert json.loads(measured.stdout)["total_ncp"] == pytest.approx(summary["total_ncp"])
    evaluated = run_cli(
        ["evaluate", "--engine", "spark", "--original", source, "--release", out, "--queries", "0", "--json"]
    )
    assert evaluated.exit_code == 0, evaluated.stderr
    # the figures DuckDB gives for its release of the same rows (the same classes)
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t AS SELECT * FROM read_parquet('{source}')")
    sbc_sql.anonymize(con, "t", K, output="rel", **ROLES)
    want = sbc_sql.evaluate(con, "t", "rel", queries=0).as_dict()
    got = {
        m: v["value"]
        for group in json.loads(evaluated.stdout).values()
        if isinstance(group, dict)
        for m, v in group.items()
        if isinstance(v, dict) and "value" in v
    }
    for figure in ("rgcp", "discernibility", "record_linkage", "tuples", "classes", "c_avg"):
        assert got[figure] == pytest.approx(want[figure], rel=1e-12), figure
    # the sensitive column comes from the release's provenance, on Spark as on DuckDB
    assert got["sensitive"] == want["sensitive"] == "dis"
    for figure in ("l_diversity", "t_closeness"):
        assert got[figure] == pytest.approx(want[figure], rel=1e-12), figure
    page = tmp_path / "report.html"
    reported = run_cli(
        [
            "report",
            "--engine",
            "spark",
            "--original",
            source,
            "--release",
            out,
            "-o",
            page,
            "--curve-k",
            "none",
        ]
    )
    assert reported.exit_code == 0, reported.stderr
    assert reported.stdout.startswith(f"wrote the report of '{out}' to ") and "<html" in page.read_text()
    # the engines' options fit together, or it is a usage error
    assert (
        run_cli(
            [
                "verify",
                "--engine",
                "spark",
                "--db",
                "x.duckdb",
                "--original",
                source,
                "--release",
                out,
                "-k",
                K,
            ]
        ).exit_code
        == 2
    )
    assert (
        run_cli(
            ["measure", "--spark-conf", "a=b", "--db", "x.duckdb", "--original", "t", "--release", "r"]
        ).exit_code
        == 2
    )
    again = run_cli(["anonymize", "--engine", "spark", "-t", source, "-o", out, "-k", K, *roles])
    assert again.exit_code == 1 and again.stderr.startswith("Error: ") and "--replace" in again.stderr
    assert temporary_views(spark) == []


def test_a_csv_line_that_does_not_fit_is_named_not_shown(spark, source, tmp_path, capfd) -> None:
    csv = tmp_path / "people.csv"
    duckdb.sql(f"COPY (SELECT * FROM read_parquet('{source}')) TO '{csv}' (HEADER)")
    lines = csv.read_text().splitlines()
    lines[30] += ",secret42,more"
    csv.write_text("\n".join(lines) + "\n")
    with pytest.raises(EngineError, match="a line of the CSV file does not fit") as caught:
        run(spark, str(csv), str(tmp_path / "out"), **ROLES)
    assert caught.value.kind == "csv" and "secret42" not in str(caught.value)
    out, err = capfd.readouterr()
    assert "secret42" not in out + err
    assert leftovers(tmp_path) == ["people.csv"] and temporary_views(spark) == []


def test_rows_arrive_in_the_source_order(spark, source) -> None:
    engine = SparkEngine(spark)
    try:
        info = engine.open_source(str(source))
        ids = engine.fetch_arrow(f"SELECT sbc_row_id, id FROM {info.name}")
    finally:
        engine.close()
    keys, order = ids.column(0).to_numpy(), ids.column(1).to_numpy()
    assert np.all(np.diff(keys) > 0) and list(order) == list(range(60))


# ---- the clustering in Spark's workers ----


def clinic(path: Path, n: int = 20_000, seed: int = 5) -> Path:
    """``n`` synthetic patients as one Parquet file: two numerics with NULLs, a coarse and
    a fine categorical with NULLs, a sensitive column."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n).astype(float)
    age[rng.random(n) < 0.01] = np.nan
    table = pa.table(
        {
            "age": pa.array(age, from_pandas=True),
            "weight": np.round(rng.normal(75, 12, n), 1),
            "sex": rng.choice(["F", "M"], n),
            "zip": pa.array(
                [None if rng.random() < 0.01 else f"{z:05d}" for z in rng.integers(1000, 1120, n)],
                pa.string(),
            ),
            "dx": rng.choice(["flu", "asthma", "diabetes", "none"], n),
        }
    )
    pq.write_table(table, path)
    return path


BIG = {"qi": ["age", "weight", "sex", "zip"], "sensitive": ["dx"], "log": None}


@pytest.fixture(scope="module")
def patients(tmp_path_factory) -> Path:
    return clinic(tmp_path_factory.mktemp("patients") / "patients.parquet")


def test_with_the_same_blocks_the_workers_classes_are_duckdbs(spark, patients, tmp_path, monkeypatch) -> None:
    # every row in the sample: the blocks start where block mode starts them
    monkeypatch.setattr(distributed, "SAMPLE_PER_BLOCK", 10**9)
    lines: list[str] = []
    on_spark = run(spark, str(patients), str(tmp_path / "out"), 5, **{**BIG, "log": lines.append})
    said = next(line for line in lines if line.startswith("clustering: "))
    assert "14 block(s)" in said and "cut from every row" in said
    con = duckdb.connect()
    on_duck = sbc_sql.anonymize(con, str(patients), 5, output="rel", **BIG)
    assert on_duck.mode == "blocks"
    # the same classes, numbered alike: the same release row for row
    assert read(con, tmp_path / "out") == con.execute("SELECT * FROM rel ORDER BY ALL").fetchall()
    assert on_spark.measures.total_ncp == pytest.approx(on_duck.measures.total_ncp, rel=1e-12)
    assert temporary_views(spark) == []


def test_sampled_blocks_verify_within_five_percent_of_duckdbs_ncp(spark, patients, tmp_path) -> None:
    lines: list[str] = []
    first = run(spark, str(patients), str(tmp_path / "a"), 5, **{**BIG, "log": lines.append})
    said = next(line for line in lines if line.startswith("clustering: "))
    sizes = [int(s.replace(",", "")) for s in said.split("block(s) of ")[1].split(" rows")[0].split(" to ")]
    # 100 sampled rows a block: blocks near the 1,536 rows asked
    assert "a seeded sample of" in said and 1000 < sizes[0] <= sizes[-1] < 2100
    assert first.verdict.ok and first.measures.smallest >= 5 and first.measures.released == 20_000
    on_duck = sbc_sql.anonymize(duckdb.connect(), str(patients), 5, output="rel", **BIG)
    assert first.measures.total_ncp == pytest.approx(on_duck.measures.total_ncp, rel=0.05)
    # the same input and options, the same release (the sample is seeded)
    run(spark, str(patients), str(tmp_path / "b"), 5, **BIG)
    con = duckdb.connect()
    assert read(con, tmp_path / "a", "eq_class") == read(con, tmp_path / "b", "eq_class")


def test_adult_through_spark_is_k_anonymous_and_complete_by_an_independent_check(spark, tmp_path) -> None:
    # real data: UCI Adult's 30,162 clean rows, the eight QIs of the other Adult runs, a row
    # number kept so that each released row names its source row
    con = duckdb.connect()
    datasets.load_adult(con, columns=[*datasets.ADULT_QIS_8, "income"])
    source = tmp_path / "adult.parquet"
    con.execute(f"COPY (SELECT ROW_NUMBER() OVER () AS rid, * FROM adult) TO '{source}' (FORMAT PARQUET)")
    roles = {"qi": datasets.ADULT_QIS_8, "sensitive": ["income"], "keep": ["rid"], "log": lambda _: None}
    lines: list[str] = []
    on_spark = run(spark, str(source), str(tmp_path / "out"), 10, **{**roles, "log": lines.append})
    assert any("a seeded sample of" in line for line in lines)  # clustered in the workers
    con.execute(f"CREATE VIEW rel AS SELECT * FROM read_parquet('{tmp_path / 'out'}/*.parquet')")
    con.execute(f"CREATE VIEW src AS SELECT * FROM read_parquet('{source}')")
    # k-anonymous: every class, grouped on what the release shows, of at least 10 rows
    shown = ", ".join(["age_min", "age_max", *(q(c) for c in datasets.ADULT_QIS_8[1:])])
    smallest = con.execute(f"SELECT MIN(n) FROM (SELECT COUNT(*) AS n FROM rel GROUP BY {shown})").fetchone()
    assert smallest[0] >= 10
    # complete: every source row released once, each QI value in its row's set or range
    assert con.execute("SELECT COUNT(*), COUNT(DISTINCT rid) FROM rel").fetchone() == (30_162, 30_162)
    inside = " AND ".join(
        f"list_contains(r.{q(c)}, s.{q(c)})" if c != "age" else "s.age BETWEEN r.age_min AND r.age_max"
        for c in datasets.ADULT_QIS_8
    )
    assert con.execute(
        f"SELECT COUNT(*) FROM src AS s JOIN rel AS r USING (rid) WHERE {inside} AND s.income = r.income"
    ).fetchone() == (30_162,)
    # NCP within 5 % of DuckDB's on the same rows (its blocks are cut from the whole order)
    on_duck = sbc_sql.anonymize(duckdb.connect(), str(source), 10, output="rel", **roles)
    assert on_spark.measures.total_ncp == pytest.approx(on_duck.measures.total_ncp, rel=0.05)


def test_limits_and_a_target_run_in_the_workers_and_equal_duckdbs(spark, source, tmp_path) -> None:
    """--max-width, --max-values and --target cluster in Spark's workers (one block, one
    group): the release equals DuckDB's block mode, and Spark's SQL verifies the limits."""
    options = {
        "qi": ["age", "born", "seen", "sex", "zip"],
        "sensitive": ["dis"],
        "keep": ["id", "pay"],
        "max_width": "age=30",
        "max_values": "zip=3",
        "target": "pay",
        "max_suppression": 0.5,
    }
    out = tmp_path / "limited"
    on_spark = run(spark, str(source), str(out), **options)
    assert on_spark.verdict.ok and on_spark.verdict.facts["limits_broken"] == 0
    con = duckdb.connect()
    on_duck = sbc_sql.anonymize(con, str(source), K, output="rel", log=lambda _: None, **options)
    assert_same_measures(on_spark.measures, on_duck.measures)
    assert read(con, f"{out}_classes") == con.execute("SELECT * FROM rel_classes ORDER BY ALL").fetchall()
    (widest, largest) = con.execute(
        f"SELECT max(age_max - age_min), max(len(zip)) FROM read_parquet('{out}_classes/*.parquet')"
    ).fetchone()
    assert widest <= 30 and largest <= 3
    assert temporary_views(spark) == []


# ---- Parquet types Spark's reader refuses: nanosecond timestamps converted, the rest named ----


def nanos_frame(n: int = 90, seed: int = 7) -> pd.DataFrame:
    """``n`` visits whose times pandas keeps in nanoseconds (most with digits below the
    microsecond): 'seen' a local date-time, 'at' an instant (UTC); NULLs among them and one
    time 500 ns before 1970, which truncates to the microsecond before."""
    rng = np.random.default_rng(seed)
    seen = pd.Timestamp("2021-03-04 05:06:07") + pd.to_timedelta(
        rng.integers(0, 400 * 86_400 * 10**9, n), unit="ns"
    )
    frame = pd.DataFrame(
        {
            "id": range(n),
            "age": rng.integers(20, 70, n),
            "seen": seen,
            "at": (seen - pd.Timedelta(days=3, nanoseconds=7)).tz_localize("UTC"),
            "dis": rng.choice(["flu", "cold", "none"], n),
        }
    )
    frame.loc[[4, 40], "seen"] = pd.NaT
    frame.loc[9, "at"] = pd.NaT
    frame.loc[0, "seen"] = pd.Timestamp("1969-12-31 23:59:59.999999500")
    return frame


def micros(values: pd.Series) -> list[int | None]:
    """Each time as whole microseconds since 1970, truncated towards the past (None: NULL)."""
    return [None if pd.isna(v) else v.value // 1000 for v in values]


def parquet_types(path: Path) -> dict[str, str]:
    schema = pq.read_metadata(path).schema
    return {schema.column(i).path: str(schema.column(i).logical_type) for i in range(len(schema))}


def test_a_pandas_file_with_nanosecond_timestamps_is_released_and_verified(spark, cli, tmp_path) -> None:
    frame = nanos_frame()
    source = tmp_path / "visits.parquet"
    frame.to_parquet(source)  # pandas' own default: TIMESTAMP(NANOS) in the file
    assert "timeUnit=nanoseconds" in parquet_types(source)["seen"]
    assert "isAdjustedToUTC=true, timeUnit=nanoseconds" in parquet_types(source)["at"]
    assert any(v.value % 1000 for v in frame["seen"].dropna())  # digits below the microsecond
    before = digest(source)
    out = tmp_path / "out"
    done = cli(
        ["anonymize", "--engine", "spark", "-t", source, "-o", out, "-k", 5, "--qi", "age,seen,at",
         "--sensitive", "dis", "--keep", "id"]
    )  # fmt: skip
    assert done.exit_code == 0, done.stderr
    # the columns keep their names, as Spark's timestamps of a local date-time and an instant
    assert "column 'seen' (TIMESTAMP): numeric quasi-identifier" in done.stderr
    assert "column 'at' (TIMESTAMP WITH TIME ZONE): numeric quasi-identifier" in done.stderr
    con = duckdb.connect()
    released = con.execute(
        f"SELECT id, eq_class, epoch_us(seen_min), epoch_us(seen_max), seen_has_null, epoch_us(at_min), "
        f"epoch_us(at_max), at_has_null FROM read_parquet('{out}/*.parquet') ORDER BY id"
    ).fetchall()
    assert [r[0] for r in released] == list(range(len(frame)))
    for name, at in (("seen", 2), ("at", 5)):
        values = micros(frame[name])
        classes: dict[int, list[int]] = {}
        for row, value in zip(released, values, strict=True):
            low, high, has_null = row[at], row[at + 1], row[at + 2]
            if value is None:
                assert has_null, (name, row[0])
            else:
                # each source time, truncated to the microsecond, inside its class's range
                assert low <= value <= high, (name, row[0])
                classes.setdefault(row[1], []).append(value)
        # and the ranges are the classes' own: their least and greatest truncated times
        bounds = {row[1]: (row[at], row[at + 1]) for row in released}
        assert {c: (min(v), max(v)) for c, v in classes.items()} == {c: bounds[c] for c in classes}
    assert micros(frame["seen"])[0] == -1  # 500 ns before 1970: the microsecond before
    # the same file verifies against its release, read again through the same conversion
    verified = cli(["verify", "--engine", "spark", "--original", source, "--release", out, "-k", 5])
    assert verified.exit_code == 0, verified.stderr
    assert verified.stdout.startswith(f"ok: '{out}' is 5-anonymous")
    # the source as it was, the session's setting as it was, none of the run's views left
    assert digest(source) == before
    assert spark.conf.get("spark.sql.legacy.parquet.nanosAsLong", None) is None
    assert temporary_views(spark) == []


def test_nanoseconds_truncate_to_the_microsecond_in_any_folder_and_time_zone(spark, tmp_path) -> None:
    """The times of a partitioned folder (its first data file's footer read, Spark's own
    files skipped), each truncated towards the past whatever the session's time zone; an
    instant, or a local date-time read as an instant where the session says so."""
    nanos = [-1001, -1000, -1, 0, 999, 1_000, 1_614_834_367_123_456_789, None]
    folder = tmp_path / "visits"
    for part, values in (("a", nanos[:4]), ("b", nanos[4:])):
        (folder / f"part={part}").mkdir(parents=True)
        table = pa.table(
            {"id": pa.array(range(len(values)), pa.int64()), "seen": pa.array(values, pa.timestamp("ns"))}
        )
        pq.write_table(table, folder / f"part={part}" / "data.parquet")
    (folder / "_SUCCESS").write_text("")
    (folder / ".data.parquet.crc").write_text("not parquet")
    (folder / "empty.parquet").write_text("")
    want = sorted((n // 1000 if n is not None else None for n in nanos), key=lambda v: (v is None, v))
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        for infer_ntz, shown in (("true", "TIMESTAMP"), ("false", "TIMESTAMP WITH TIME ZONE")):
            spark.conf.set("spark.sql.parquet.inferTimestampNTZ.enabled", infer_ntz)
            engine = SparkEngine(spark)
            try:
                info = engine.open_source(str(folder))
                got = engine.fetch_arrow(f"SELECT seen FROM {info.name} ORDER BY seen NULLS LAST")
            finally:
                engine.close()
            assert {c.name: c.type for c in info.columns} == {
                "id": "BIGINT",
                "seen": shown,
                "part": "VARCHAR",
            }
            assert got.column(0).cast(pa.int64()).to_pylist() == want
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)
        spark.conf.unset("spark.sql.parquet.inferTimestampNTZ.enabled")
    assert spark.conf.get("spark.sql.legacy.parquet.nanosAsLong", None) is None


def uuids(n: int) -> pa.Array:
    return pa.array([bytes([i]) * 16 for i in range(n)], pa.uuid())


#: files with a column Spark cannot read -> what the error names (column, type, cause); Spark
#: refuses one type at a time, and every column of that type is named
UNREADABLE = {
    "uuid beside nanoseconds": (
        {"seen": pa.array(range(40), pa.timestamp("ns")), "c": uuids(40)},
        ["column 'c' (Parquet type FIXED_LEN_BYTE_ARRAY (UUID)) of", "(PARQUET_TYPE_ILLEGAL)"],
    ),
    "two of one type": (
        {"c": uuids(40), "d": uuids(40)},
        [
            "columns 'c' (Parquet type FIXED_LEN_BYTE_ARRAY (UUID)), 'd' (Parquet type FIXED_LEN_BYTE_ARRAY "
            "(UUID)) of",
            "are of types Spark cannot read",
            "write them as a type Spark reads",
        ],
    ),
    "half-precision float": (
        {"c": pa.array([1.5] * 40, pa.float16())},
        ["column 'c' (Parquet type FIXED_LEN_BYTE_ARRAY (FLOAT16)) of", "is of a type Spark cannot read"],
    ),
    "time of day": (
        {"c": pa.array(range(40), pa.time64("ns"))},
        ["column 'c' (Parquet type INT64 (TIME(NANOS,false))) of", "(UNSUPPORTED_TIME_TYPE)"],
    ),
    "uuid in a struct": (
        {"c": pa.StructArray.from_arrays([uuids(40)], names=["u"])},
        ["column 'c' (Parquet type FIXED_LEN_BYTE_ARRAY (UUID) in its field 'c.u') of"],
    ),
    "nanoseconds in a struct": (
        {"c": pa.array([{"t": i} for i in range(40)], pa.struct([("t", pa.timestamp("ns"))]))},
        [
            "column 'c' of",
            "holds nanosecond timestamps (Parquet type INT64 (TIMESTAMP(NANOS,false))) in its field 'c.t'",
            "coerce_timestamps='us'",
        ],
    ),
}


@pytest.mark.parametrize("case", list(UNREADABLE))
def test_a_column_spark_cannot_read_is_named_with_its_type_and_the_fix(spark, cli, tmp_path, case) -> None:
    columns, needles = UNREADABLE[case]
    source = tmp_path / "odd.parquet"
    pq.write_table(pa.table({"age": pa.array([20 + i % 9 for i in range(40)]), **columns}), source)
    others = ",".join(c for c in columns)
    done = cli(
        ["anonymize", "--engine", "spark", "-t", source, "-o", tmp_path / "out", "-k", 3, "--qi", "age",
         "--keep", others]
    )  # fmt: skip
    assert done.exit_code == 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and errors[0] == done.stderr.strip().splitlines()[-1], done.stderr
    assert errors[0].startswith("Error: column") and f"'{source}'" in errors[0]
    for needle in [*needles, "read the file with DuckDB (--engine duckdb)"]:
        assert needle in errors[0], (needle, errors[0])
    assert "not shown" not in errors[0]
    assert leftovers(tmp_path) == [] and temporary_views(spark) == []
    assert spark.conf.get("spark.sql.legacy.parquet.nanosAsLong", None) is None
    # the fix holds: DuckDB reads the file
    on_duckdb = cli(
        [
            "anonymize",
            "--db",
            tmp_path / "d.duckdb",
            "-t",
            source,
            "-o",
            "rel",
            "-k",
            3,
            "--qi",
            "age",
            "--keep",
            others,
        ]
    )
    assert on_duckdb.exit_code == 0, on_duckdb.stderr


@pytest.mark.parametrize(
    ("role", "needle"),
    [
        ("--qi", "cannot be a quasi-identifier"),
        ("--keep", "cannot be kept"),
        ("--sensitive", "cannot be released as sensitive"),
    ],
)
def test_a_map_column_is_refused_before_any_work(spark, cli, tmp_path, role, needle) -> None:
    """Spark neither compares nor orders a MAP: a kept or sensitive one failed when the rows
    were made (DATATYPE_MISMATCH, no word of the column), a QI of one was told to be kept."""
    from pyspark.sql import types as t

    from sbc_sql.engines.spark.columns import has_equality

    source = tmp_path / "tagged.parquet"
    tags = pa.array([[("a", i % 3)] for i in range(40)], pa.map_(pa.string(), pa.int64()))
    pq.write_table(pa.table({"age": pa.array([20 + i % 9 for i in range(40)]), "tags": tags}), source)
    roles = ["--qi", "age,tags"] if role == "--qi" else ["--qi", "age", role, "tags"]
    done = cli(["anonymize", "--engine", "spark", "-t", source, "-o", tmp_path / "out", "-k", 3, *roles])
    assert done.exit_code == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"Error: column 'tags' of type MAP {needle}: its values have no equality")
    assert "declare it with --drop," in lines[0] and "--keep" not in lines[0]
    assert leftovers(tmp_path) == [] and temporary_views(spark) == []
    # what holds a MAP, and a VARIANT, has no equality either; what holds neither has
    mapped = t.MapType(t.StringType(), t.LongType())
    assert not any(
        has_equality(x)
        for x in (t.ArrayType(mapped), t.StructType([t.StructField("m", mapped)]), t.VariantType())
    )
    assert has_equality(t.StructType([t.StructField("a", t.ArrayType(t.LongType()))]))
