"""Edge cases of the anonymize run: hostile names, NULLs (a value of its own), temporal, constant,
BOOLEAN and ENUM QIs, roles from comments, file input and export, --sql, and runs that fail.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import duckdb
import pytest
import sqlglot
from helpers import catalog, connected, file_catalog, q, rows, snapshot
from sqlglot import exp

import sbc_sql
from sbc_sql.engines.duckdb import DuckDBEngine
from sbc_sql.errors import InputError, OutputExistsError, VerificationError
from sbc_sql.run import publish as pipeline
from sbc_sql.stages import verify as verification
from sbc_sql.stages.verify import Verdict

HOSTILE = 'we"ird; drop table x'
RELEASE_VIEWS = pytest.mark.notimpl(
    ["spark"],
    reason="Spark writes a release as its rows and its class table: no views over them, no text view",
)
COMMENTS = pytest.mark.notimpl(
    ["spark"], reason="a temporary view over Parquet files keeps no column comments"
)


def run(database, *args, **kwargs) -> sbc_sql.Result:
    """A run whose connection (if it opened one) is closed again."""
    with sbc_sql.anonymize(database, *args, **kwargs) as result:
        return result


def columns(con, table: str) -> list[tuple[str, str]]:
    return [
        (r[0], r[1])
        for r in con.execute(
            "SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = ? ORDER BY column_index",
            [table],
        ).fetchall()
    ]


def types_of(database, table: str) -> dict[str, str]:
    """Each column's type as the engine names it."""
    with connected(database) as engine:
        return {c.name: c.type for c in engine.describe(table).columns}


def list_of(database, element: str) -> str:
    """The type of a list of ``element`` (a column type as the engine names it), as the engine
    names it."""
    with connected(database) as engine:
        made = exp.select(exp.cast(exp.Null(), engine.list_type(element)).as_("v"))
        engine.execute(exp.Create(this=exp.to_table("sbc_test_lists"), kind="TABLE", expression=made))
        named = engine.describe("sbc_test_lists").columns[0].type
        engine.execute(exp.Drop(tables=[exp.to_table("sbc_test_lists")], kind="TABLE"))
    return named


# ------------------------------------------------------------------------- hostile names


@RELEASE_VIEWS
def test_hostile_table_and_column_names(engine):
    con = engine.built(
        "CREATE TABLE x (keep INTEGER)",
        "INSERT INTO x VALUES (7)",
        f'CREATE TABLE {q(HOSTILE)} ("select" INTEGER, {q("a b" + chr(34) + "c")} VARCHAR, dis VARCHAR)',
        f"INSERT INTO {q(HOSTILE)} VALUES (1, 'p', 'u'), (2, 'p', 'v'), (8, 'o', 'w'), "
        "(9, 'o', 'y'), (5, NULL, 'z')",
    )
    result = run(con, HOSTILE, 2, qi=["select", 'a b"c'], sensitive=["dis"])
    assert result.release == HOSTILE + "_k2"
    assert result.view == HOSTILE + "_k2_view"
    assert engine.column_names(con, result.release) == [
        "eq_class",
        "select_min",
        "select_max",
        "select_has_null",
        'a b"c',
        "dis",
    ]
    assert engine.one(con, f"SELECT count(*) FROM {q(result.release)}") == (5,)
    assert engine.one(con, f"SELECT count(*) FROM {q(result.view)}") == (5,)
    assert sbc_sql.verify(con, HOSTILE, result.release, 2).ok
    assert engine.sql(con, "SELECT keep FROM x") == [(7,)]
    # every statement of the run parses as one statement, and drops only the view and the
    # run's own working tables (its distinct tuples, row labels and labelled source)
    for statement in result.statements:
        trees = sqlglot.parse(statement, read=engine.name)
        assert len(trees) == 1 and trees[0] is not None
        for drop in trees[0].find_all(exp.Drop):
            names = [t.name for t in drop.args.get("tables") or [drop.this]]
            assert names == [result.view] or (
                len(names) == 1
                and (
                    names[0].startswith(("sbc_tuples_", "sbc_labels_"))
                    or (names[0].startswith("sbc_tmp_") and names[0].endswith("_labelled"))
                )
            )


def test_hostile_names_through_the_cli(tmp_path, cli):
    path = tmp_path / "h.duckdb"
    with duckdb.connect(str(path)) as c:
        c.execute("CREATE TABLE x (keep INTEGER)")
        c.execute(f'CREATE TABLE {q(HOSTILE)} ("select" INTEGER, {q("sp ace")} VARCHAR, dis VARCHAR)')
        c.execute(f"INSERT INTO {q(HOSTILE)} VALUES (1, 'a', 'u'), (2, 'a', 'v'), (3, 'b', 'w')")
    res = cli(
        [
            "anonymize",
            "--db",
            path,
            "--table",
            HOSTILE,
            "--k",
            "3",
            "--qi",
            "select",
            "--qi",
            "sp ace",
            "--sensitive",
            "dis",
        ]
    )
    assert res.exit_code == 0, res.stderr
    names = {name for _, name in file_catalog(path)}
    assert {"x", HOSTILE, HOSTILE + "_k3", HOSTILE + "_k3_view"} <= names


def test_a_column_named_like_a_template_slot(engine):
    con = engine.built(
        'CREATE TABLE t ("__source" INTEGER, "__release" VARCHAR, dis VARCHAR)',
        "INSERT INTO t VALUES (1, 'a', 'p'), (1, 'b', 'q'), (3, 'a', 'r'), (4, 'b', 's')",
    )
    result = run(con, "t", 2, qi=["__source", "__release"], sensitive=["dis"])
    assert result.verdict is not None and result.verdict.ok
    assert engine.column_names(con, "t_k2") == [
        "eq_class",
        "__source_min",
        "__source_max",
        "__source_has_null",
        "__release",
        "dis",
    ]


def test_a_column_named_rowid_is_refused(con):
    con.execute("CREATE TABLE t (rowid INTEGER, g VARCHAR, dis VARCHAR)")
    con.execute("INSERT INTO t VALUES (1, 'a', 'p'), (1, 'b', 'q'), (3, 'a', 'r')")
    with pytest.raises(sbc_sql.SbcError, match=r"column 'rowid'.*rename"):
        sbc_sql.anonymize(con, "t", 2, qi=["g"], drop=["rowid"], sensitive=["dis"])
    assert catalog(con) == [("table", "t")]


@pytest.mark.parametrize("name", ["s", "g", "r"])
@pytest.mark.parametrize("sql_type", ["STRUCT(a INTEGER)", "MAP(VARCHAR, INTEGER)"])
def test_nested_released_columns_named_like_sql_aliases(con, name, sql_type):
    # s."age" inside a subquery would bind to a STRUCT or MAP column named s
    con.execute(f"CREATE TABLE t (age INTEGER, {q(name)} {sql_type})")
    value = "{'a': 1}" if sql_type.startswith("STRUCT") else "MAP {'a': 1}"
    con.execute(f"INSERT INTO t VALUES (1, {value}), (2, NULL), (3, {value}), (4, NULL)")
    result = sbc_sql.anonymize(con, "t", 2, qi=["age"], sensitive=[name])
    assert result.verdict is not None and result.verdict.ok
    verdict = sbc_sql.verify(con, "t", "t_k2", 2)
    assert verdict.ok, verdict.problems
    assert verdict.facts["uncovered"] == 0
    # ages 1..4 in classes {1, 2} and {3, 4}: each spans 1 of 3
    assert sbc_sql.measure(con, "t", "t_k2").total_ncp == pytest.approx(1 / 3)


# ------------------------------------------------------------------------------- NULLs


@RELEASE_VIEWS
def test_null_is_a_category_in_the_value_list(engine):
    con = engine.built(
        "CREATE TABLE t (g VARCHAR, h VARCHAR, dis VARCHAR)",
        "INSERT INTO t VALUES ('a', 'x', 'p'), (NULL, 'x', 'q'), ('a', 'y', 'r'), (NULL, 'y', 's')",
    )
    result = run(con, "t", 4, qi=["g", "h"], sensitive=["dis"])
    assert [list(r[0]) for r in engine.sql(con, "SELECT g FROM t_k4")] == [["a", None]] * 4
    assert engine.sql(con, "SELECT DISTINCT g FROM t_k4_view") == [("a|NULL",)]
    assert result.measures is not None
    assert result.measures.ncp["g"] == pytest.approx(1.0)  # 2 of the 2 categories


def test_null_counts_in_the_cardinality(engine):
    con = engine.built(
        "CREATE TABLE t (g VARCHAR, n INTEGER, dis VARCHAR)",
        "INSERT INTO t VALUES ('a', 1, 'p'), ('a', 1, 'q'), ('b', 5, 'r'), (NULL, 5, 's')",
    )
    result = run(con, "t", 2, qi=["g", "n"], sensitive=["dis"])
    lists = sorted({tuple(r[0]) for r in engine.sql(con, "SELECT g FROM t_k2")})
    assert lists == [("a",), ("b", None)]
    # class {b, NULL} holds 2 of 3 categories (a, b, NULL): (2 * 0 + 2 * 2/3) / 4
    assert result.measures is not None
    assert result.measures.ncp["g"] == pytest.approx(1 / 3)


@RELEASE_VIEWS
def test_numeric_class_mixing_null_and_numbers(engine):
    con = engine.built(
        "CREATE TABLE t (x INTEGER, dis VARCHAR)", "INSERT INTO t VALUES (NULL, 'p'), (2, 'q'), (8, 'r')"
    )
    result = run(con, "t", 3, qi=["x"], sensitive=["dis"])
    assert engine.sql(con, "SELECT DISTINCT x_min, x_max, x_has_null FROM t_k3") == [(2, 8, True)]
    assert engine.sql(con, "SELECT DISTINCT x FROM t_k3_view") == [("2-8|NULL",)]
    assert result.measures is not None
    assert result.measures.ncp["x"] == 1.0
    # has_null is queryable: the rows that may be NULL
    assert engine.one(con, "SELECT count(*) FROM t_k3 WHERE x_has_null") == (3,)


@RELEASE_VIEWS
def test_all_null_class_costs_nothing(engine):
    con = engine.built(
        "CREATE TABLE t (x INTEGER, g VARCHAR, dis VARCHAR)",
        "INSERT INTO t VALUES (NULL, 'a', 'p'), (NULL, 'a', 'q'), (1, 'b', 'r'), (2, 'b', 's')",
    )
    result = run(con, "t", 2, qi=["x", "g"], sensitive=["dis"])
    got = sorted(
        {(tuple(g), *rest) for g, *rest in engine.sql(con, "SELECT g, x_min, x_max, x_has_null FROM t_k2")}
    )
    assert got == [(("a",), None, None, True), (("b",), 1, 2, False)]
    assert engine.sql(con, "SELECT x FROM t_k2_view WHERE g = 'a' LIMIT 1") == [("NULL",)]
    assert result.measures is not None
    # the NULL class costs 0, the {1, 2} class spans the whole range: (0 + 0 + 1 + 1) / 4
    assert result.measures.ncp["x"] == pytest.approx(0.5)


def test_an_all_null_numeric_column(engine):
    con = engine.built(
        "CREATE TABLE t (x DOUBLE, g VARCHAR, dis VARCHAR)",
        "INSERT INTO t VALUES (NULL, 'a', 'p'), (NULL, 'b', 'q'), (NULL, 'a', 'r')",
    )
    result = run(con, "t", 2, qi=["x", "g"], sensitive=["dis"])
    assert result.measures is not None and result.measures.ncp["x"] == 0.0
    assert engine.sql(con, "SELECT DISTINCT x_min, x_has_null FROM t_k2") == [(None, True)]


# ------------------------------------------------------------------- types of QIs


@RELEASE_VIEWS
def test_date_qi_keeps_its_type_and_measures_in_days(engine):
    con = engine.built(
        "CREATE TABLE t (d DATE, dis VARCHAR)",
        "INSERT INTO t VALUES ('2020-01-01', 'p'), ('2020-01-02', 'q'), "
        "('2020-01-11', 'r'), ('2020-01-13', 's')",
        "CREATE TABLE flag AS SELECT TRUE AS b",
    )
    result = run(con, "t", 2, qi=["d"], sensitive=["dis"])
    source, boolean = types_of(con, "t"), types_of(con, "flag")
    assert list(types_of(con, "t_k2").items())[1:4] == [
        ("d_min", source["d"]),
        ("d_max", source["d"]),
        ("d_has_null", boolean["b"]),
    ]
    got = sorted(set(engine.sql(con, "SELECT d_min, d_max FROM t_k2")))
    assert got == [(dt.date(2020, 1, 1), dt.date(2020, 1, 2)), (dt.date(2020, 1, 11), dt.date(2020, 1, 13))]
    # (2 * 1/12 + 2 * 2/12) / 4
    assert result.measures is not None and result.measures.total_ncp == pytest.approx(0.125)
    assert engine.sql(con, "SELECT d FROM t_k2_view ORDER BY eq_class LIMIT 1") == [
        ("2020-01-01..2020-01-02",)
    ]


def test_timestamp_qi_keeps_its_type(engine):
    con = engine.built(
        "CREATE TABLE t (ts TIMESTAMP, dis VARCHAR)",
        "INSERT INTO t VALUES ('2020-01-01 00:00', 'p'), ('2020-01-01 01:00', 'q'), "
        "('2020-01-01 10:00', 'r'), ('2020-01-01 12:00', 's')",
    )
    result = run(con, "t", 2, qi=["ts"], sensitive=["dis"])
    source = types_of(con, "t")["ts"]
    assert list(types_of(con, "t_k2").items())[1:3] == [("ts_min", source), ("ts_max", source)]
    got = sorted(set(engine.sql(con, "SELECT ts_min, ts_max FROM t_k2")))
    assert got[0] == (dt.datetime(2020, 1, 1, 0), dt.datetime(2020, 1, 1, 1))
    assert result.measures is not None and result.measures.total_ncp == pytest.approx(0.125)


@RELEASE_VIEWS
def test_constant_qi_has_zero_range_and_costs_nothing(engine):
    con = engine.built(
        "CREATE TABLE t (c INTEGER, one VARCHAR, g VARCHAR, dis VARCHAR)",
        "INSERT INTO t VALUES (5, 'x', 'a', 'p'), (5, 'x', 'b', 'q'), (5, 'x', 'a', 'r'), (5, 'x', 'c', 's')",
    )
    result = run(con, "t", 2, qi=["c", "one", "g"], sensitive=["dis"])
    got = {
        (*rest, tuple(one))
        for *rest, one in engine.sql(con, "SELECT c_min, c_max, c_has_null, one FROM t_k2")
    }
    assert got == {(5, 5, False, ("x",))}
    m = result.measures
    assert m is not None
    assert (m.ncp["c"], m.ncp["one"]) == (0.0, 0.0)
    assert m.ncp["g"] > 0
    assert engine.sql(con, "SELECT DISTINCT c, one FROM t_k2_view") == [("5", "x")]


def test_boolean_and_enum_categoricals(con):
    con.execute("CREATE TYPE level AS ENUM ('low', 'mid', 'high')")
    con.execute("CREATE TABLE t (b BOOLEAN, e level, dis VARCHAR)")
    con.execute(
        "INSERT INTO t VALUES (true, 'high', 'p'), (false, 'low', 'q'), (true, 'low', 'r'), "
        "(NULL, 'mid', 's'), (false, NULL, 'u'), (true, 'high', 'v')"
    )
    result = sbc_sql.anonymize(con, "t", 3, qi=["b", "e"], sensitive=["dis"])
    types = dict(columns(con, "t_k3"))
    assert types["b"] == "BOOLEAN[]"
    assert types["e"] == "ENUM('low', 'mid', 'high')[]"
    assert result.verdict is not None and result.verdict.ok
    assert sbc_sql.verify(con, "t", "t_k3", 3).ok
    # every row's own values lie in its class's lists
    joined = rows(
        con,
        "SELECT s.b AS sb, s.e::VARCHAR AS se, r.b AS rb, "
        "list_transform(r.e, lambda v: v::VARCHAR) AS re "
        "FROM t AS s JOIN t_k3 AS r USING (dis)",
    )
    assert len(joined) == 6
    for r in joined:
        assert r["sb"] in r["rb"] and r["se"] in r["re"]
    # enum lists follow the enum's order, NULL last
    for r in joined:
        present = [v for v in r["re"] if v is not None]
        assert present == sorted(present, key=["low", "mid", "high"].index)


def test_a_view_as_input(engine):
    con = engine.built(
        "CREATE TABLE base (x INTEGER, g VARCHAR, dis VARCHAR)",
        "INSERT INTO base VALUES (1, 'a', 'p'), (2, 'a', 'q'), (3, 'b', 'r'), (4, 'b', 's')",
    )
    engine.sql(con, "CREATE VIEW v AS SELECT * FROM base WHERE x > 0")
    result = run(con, "v", 2, qi=["x", "g"], sensitive=["dis"])
    assert result.release == "v_k2"
    assert engine.one(con, "SELECT count(*) FROM v_k2") == (4,)


def test_memory_limit_caps_the_connection_sbc_sql_opens(tmp_path, con):
    path = tmp_path / "m.duckdb"
    with duckdb.connect(str(path)) as own:
        own.execute(
            "CREATE TABLE m AS SELECT i % 50 AS x, 'g' || (i % 7) AS g, "
            "'d' || (i % 3) AS dis FROM range(400) AS r(i)"
        )
    result = sbc_sql.anonymize(str(path), "m", 4, qi=["x", "g"], sensitive=["dis"], memory_limit="256MB")
    assert result.verdict.ok
    assert result.con.execute("SELECT current_setting('memory_limit')").fetchone()[0] == "244.1 MiB"
    # a caller's own connection keeps its own settings
    with pytest.raises(InputError, match="SET memory_limit = '256MB'"):
        sbc_sql.anonymize(con, "t", 2, memory_limit="256MB")


# ------------------------------------------------------------------------------ roles


@COMMENTS
def test_roles_from_column_comments(engine):
    con = engine.built(
        "CREATE TABLE t (name VARCHAR, age INTEGER, zip VARCHAR, dis VARCHAR, note VARCHAR)",
        "INSERT INTO t VALUES ('Ann', 30, '111', 'flu', 'n1'), ('Bob', 31, '111', 'flu', 'n2'), "
        "('Cy', 40, '222', 'hiv', 'n3'), ('Di', 41, '222', 'flu', 'n4')",
        *(
            f"COMMENT ON COLUMN t.{column} IS 'sbc:{role}'"
            for column, role in (
                ("name", "identifier"),
                ("age", "qi"),
                ("zip", "QI"),
                ("dis", "sensitive"),
                ("note", "insensitive"),
            )
        ),
    )
    result = run(con, "t", 2)
    roles = {c.name: (c.role, c.origin) for c in result.plan.columns}
    assert roles == {
        "name": ("identifier", "comment"),
        "age": ("qi", "comment"),
        "zip": ("qi", "comment"),
        "dis": ("sensitive", "comment"),
        "note": ("insensitive", "comment"),
    }
    assert engine.column_names(con, "t_k2") == [
        "eq_class",
        "age_min",
        "age_max",
        "age_has_null",
        "zip",
        "dis",
        "note",
    ]
    # identifiers are dropped: no release row carries a name
    assert "Ann" not in str(engine.sql(con, "SELECT * FROM t_k2"))


@COMMENTS
def test_flags_win_over_comments(engine):
    con = engine.built(
        "CREATE TABLE t (name VARCHAR, age INTEGER, zip VARCHAR, dis VARCHAR)",
        # zip, kept, gives no QI's value (each zip goes with both names): the run is not
        # refused for a kept column that determines a QI
        "INSERT INTO t VALUES ('Ann', 30, '111', 'flu'), ('Ann', 31, '222', 'flu'), "
        "('Cy', 40, '111', 'hiv'), ('Cy', 41, '222', 'flu')",
        "COMMENT ON COLUMN t.name IS 'sbc:identifier'",
        "COMMENT ON COLUMN t.age IS 'sbc:qi'",
        "COMMENT ON COLUMN t.zip IS 'sbc:qi'",
        "COMMENT ON COLUMN t.dis IS 'sbc:sensitive'",
    )
    result = run(con, "t", 2, qi=["name"], keep=["zip"])
    roles = {c.name: (c.role, c.origin) for c in result.plan.columns}
    assert roles["name"] == ("qi", "flag")
    assert roles["zip"] == ("insensitive", "flag")
    assert roles["age"] == ("qi", "comment")
    assert engine.column_names(con, "t_k2") == [
        "eq_class",
        "name",
        "age_min",
        "age_max",
        "age_has_null",
        "zip",
        "dis",
    ]
    source, release = types_of(con, "t"), types_of(con, "t_k2")
    assert release["name"] == list_of(con, source["name"])
    assert release["zip"] == source["zip"]


@COMMENTS
def test_comments_without_the_prefix_are_ignored(engine):
    con = engine.built(
        "CREATE TABLE t (a INTEGER, b VARCHAR)",
        "INSERT INTO t VALUES (1, 'x'), (1, 'y'), (2, 'x')",
        "COMMENT ON COLUMN t.a IS 'identifier'",
    )
    result = run(con, "t", 2)
    assert {c.name: c.role for c in result.plan.columns} == {"a": "qi", "b": "qi"}


# -------------------------------------------------------------- files in, files out


@pytest.fixture
def small_file(tmp_path: Path):
    def write(suffix: str) -> Path:
        path = tmp_path / f"people{suffix}"
        fmt = "PARQUET" if suffix == ".parquet" else "CSV, HEADER"
        with duckdb.connect() as c:
            c.execute(
                f"COPY (SELECT * FROM (VALUES (30, 'F', 'flu'), (31, 'F', 'hiv'), "
                "(45, 'M', 'flu'), (47, 'M', NULL), (52, NULL, 'flu')) "
                f"AS v(age, sex, dis)) TO '{path}' (FORMAT {fmt})"
            )
        return path

    return write


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_file_input_is_written_into_the_database(tmp_path, small_file, cli, suffix):
    src = small_file(suffix)
    path = tmp_path / "out.duckdb"
    res = cli(
        ["anonymize", "--db", path, "--table", src, "--k", "2", "--qi", "age,sex", "--sensitive", "dis"]
    )
    assert res.exit_code == 0, res.stderr
    assert "verified 2-anonymous" in res.stdout
    assert file_catalog(path) == [
        ("table", "people_k2_classes"),
        ("table", "people_k2_rows"),
        ("view", "people_k2"),
        ("view", "people_k2_view"),
    ]
    with duckdb.connect(str(path)) as c:
        assert c.execute("SELECT count(*), min(age_min), max(age_max) FROM people_k2").fetchone() == (
            5,
            30,
            52,
        )


@pytest.mark.parametrize("export", ["release.parquet", "release.csv", "release.json", "release.ndjson"])
def test_out_file_export(tmp_path, small_file, cli, export):
    src = small_file(".csv")
    path = tmp_path / "out.duckdb"
    out = tmp_path / export
    res = cli(
        [
            "anonymize",
            "--db",
            path,
            "--table",
            src,
            "--k",
            "2",
            "--qi",
            "age,sex",
            "--sensitive",
            "dis",
            "--out-file",
            out,
        ]
    )
    assert res.exit_code == 0, res.stderr
    assert out.is_file()
    assert not Path(f"{out}.sbc-partial").exists()
    with duckdb.connect() as c:
        got = c.execute(f"SELECT count(*), count(DISTINCT eq_class) FROM '{out}'").fetchone()
        names = [d[0] for d in c.execute(f"SELECT * FROM '{out}' LIMIT 0").description]
    assert got == (5, 2)
    if export.endswith(".csv"):
        # CSV has no lists: it holds the readable text view
        assert names == ["eq_class", "age", "sex", "dis"]
    else:
        assert names == ["eq_class", "age_min", "age_max", "age_has_null", "sex", "dis"]
    assert f"exported 5 rows to {out} ({sbc_sql.plan.export_format(out)})" in res.stdout
    if export.endswith(".parquet"):
        # the file says how it was made: the provenance as key-value metadata 'sbc_sql'
        with duckdb.connect() as c:
            ((value,),) = c.execute(
                f"SELECT value FROM parquet_kv_metadata('{out}') WHERE key = 'sbc_sql'"
            ).fetchall()
        doc = json.loads(value)
        assert doc["schema"] == "sbc-sql/provenance" and doc["k"] == 2 and doc["rows"]["input"] == 5


def test_out_file_of_another_kind_is_refused_before_any_work(tmp_path, small_file, cli):
    src = small_file(".csv")
    res = cli(["anonymize", "--table", src, "--k", "2", "--out-file", tmp_path / "release.txt"])
    assert res.exit_code == 1
    assert res.stderr.strip().splitlines() == [
        f"Error: --out-file '{tmp_path / 'release.txt'}' ends in '.txt'; give a file ending in "
        ".parquet, .pq, .csv, .json, .ndjson, .jsonl (the ending picks the format)"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([src.name])


def test_out_file_without_a_database(tmp_path, small_file):
    src = small_file(".parquet")
    out = tmp_path / "r.parquet"
    result = sbc_sql.anonymize(None, str(src), 2, qi=["age", "sex"], sensitive=["dis"], out_file=out)
    assert result.verdict is not None and result.verdict.ok
    with duckdb.connect() as c:
        assert c.execute(f"SELECT count(*) FROM '{out}'").fetchone() == (5,)


def test_without_a_database_the_summary_points_to_the_export(tmp_path, small_file, cli):
    """Without --db the release is made in an in-memory database, gone once the command
    ends: the summary names the export as where it is kept, and no view or evaluate command
    that would find nothing."""
    src = small_file(".csv")
    out = tmp_path / "people_k2.csv"
    res = cli(["anonymize", "-t", src, "-k", "2", "--qi", "age,sex", "--sensitive", "dis", "--out-file", out])
    assert res.exit_code == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == f"release 'people_k2' (kept in {out} alone): verified 2-anonymous and complete"
    (hint,) = [line for line in lines if line.startswith("next: ")]
    assert hint.startswith(
        f"next: read the release in {out}; without --db it was made in an in-memory database"
    )
    assert "run again with --db FILE" in hint
    assert "people_k2_view" not in res.stdout and "sbc-sql evaluate --original" not in res.stdout
    assert out.is_file()
    # with a database the hints name what it keeps
    res = cli(
        [
            "anonymize",
            "--db",
            tmp_path / "kept.duckdb",
            "-t",
            src,
            "-k",
            "2",
            "--qi",
            "age,sex",
            "--keep",
            "dis",
        ]
    )
    assert res.exit_code == 0, res.stderr
    assert "SELECT * FROM people_k2_view" in res.stdout and "sbc-sql evaluate --db" in res.stdout


def test_sql_prints_the_statements_and_writes_nothing(tmp_path, cli):
    path = tmp_path / "s.duckdb"
    with duckdb.connect(str(path)) as c:
        c.execute("CREATE TABLE t (age INTEGER, sex VARCHAR, dis VARCHAR)")
        c.execute("INSERT INTO t VALUES (30, 'F', 'flu'), (31, 'F', 'hiv'), (45, 'M', 'flu')")
    before = file_catalog(path)
    out = tmp_path / "never.parquet"
    res = cli(
        [
            "anonymize",
            "--db",
            path,
            "--table",
            "t",
            "--k",
            "2",
            "--qi",
            "age,sex",
            "--sensitive",
            "dis",
            "--sql",
            "--out-file",
            out,
        ]
    )
    assert res.exit_code == 0, res.stderr
    assert 'CREATE TABLE "sbc_tmp_t_k2_' in res.stdout
    assert 'CREATE VIEW "t_k2_view"' in res.stdout
    assert "COPY" in res.stdout
    lines = res.stdout.strip().splitlines()
    header = [line for line in lines if line.startswith("-- ")]
    assert lines[: len(header)] == header  # the comment first, then the statements alone
    assert all(line.endswith(";") for line in lines[len(header) :])
    assert file_catalog(path) == before
    assert not out.exists()


def test_the_printed_sql_names_what_it_leaves_to_the_run(tmp_path, cli):
    """--sql prints the run's own statements: a header says what a real run binds to each
    parameter they leave as one, and that the class-id table they read is made in memory by
    the clustering."""
    path = tmp_path / "s.duckdb"
    with duckdb.connect(str(path)) as c:
        c.execute("CREATE TABLE t (age INTEGER, sex VARCHAR, dis VARCHAR)")
        c.execute("INSERT INTO t VALUES (30, 'F', 'flu'), (31, 'F', 'hiv'), (45, 'M', 'flu'), (52, 'M', 'x')")
    args = ["anonymize", "--db", path, "-t", "t", "-k", "2", "--qi", "age,sex", "--sensitive", "dis"]
    res = cli([*args, "--l-diversity", "2", "--max-width", "age=30", "--sql", "-q"])
    assert res.exit_code == 0, res.stderr
    lines = res.stdout.splitlines()
    header = "\n".join(line for line in lines if line.startswith("-- "))
    body = "\n".join(line for line in lines if not line.startswith("-- "))
    assert "not a script to run as printed" in header
    placeholders = set(re.findall(r"\$[a-z_0-9]+", body))
    assert placeholders >= {"$k", "$span_0", "$limit_0"}
    for name in placeholders:
        assert re.search(rf"\{name} = [0-9.]+[,;]", header), name
    assert "$k = 2," in header and "$limit_0 = 30.0" in header
    (labels,) = set(re.findall(r'"(sbc_labels_[0-9a-f]{8})"', body))
    assert f'"{labels}" (row_id, eq_class; eq_class < 0 marks a suppressed row)' in header
    assert "'sbc-sql cluster'" in header and "'sbc-sql sql'" in header


def test_a_dry_run_goes_on_over_an_existing_release(tmp_path, cli):
    """A dry run writes nothing: an existing release of its name is a warning that a real run
    would stop, not an error."""
    path = tmp_path / "s.duckdb"
    with duckdb.connect(str(path)) as c:
        c.execute("CREATE TABLE t (age INTEGER, sex VARCHAR, dis VARCHAR)")
        c.execute("INSERT INTO t VALUES (30, 'F', 'flu'), (31, 'F', 'hiv'), (45, 'M', 'flu'), (52, 'M', 'x')")
    args = ["anonymize", "--db", path, "-t", "t", "-k", "2", "--qi", "age,sex", "--sensitive", "dis"]
    made = cli([*args, "-q"])
    assert made.exit_code == 0, made.stderr
    before = file_catalog(path)
    res = cli([*args, "--sql", "-q"])
    assert res.exit_code == 0, res.stderr
    assert res.stderr == (
        "warning: a real run would stop here: 't_k2' already exists; pass --replace to overwrite "
        "the release or --output to choose another name; a dry run writes nothing and goes on\n"
    )
    assert 'CREATE VIEW "t_k2"' in res.stdout
    assert file_catalog(path) == before
    # a real run still refuses
    res = cli(args)
    assert res.exit_code == 1 and "Error: 't_k2' already exists" in res.stderr


def test_sql_only_from_python_returns_statements_and_no_result(con):
    con.execute("CREATE TABLE t (age INTEGER, dis VARCHAR)")
    con.execute("INSERT INTO t VALUES (30, 'flu'), (31, 'hiv')")
    result = sbc_sql.anonymize(con, "t", 2, qi=["age"], sensitive=["dis"], sql_only=True)
    assert not result.written and result.measures is None
    assert any(s.startswith("CREATE TABLE") for s in result.statements)
    assert catalog(con) == [("table", "t")]


# ---------------------------------------------------------------- the source is safe


def test_the_source_table_is_never_modified(file_con):
    con = file_con
    con.execute("CREATE TABLE t (name VARCHAR, age INTEGER, zip VARCHAR, dis VARCHAR)")
    con.execute(
        "INSERT INTO t VALUES ('Ann', 30, '111', 'flu'), ('Bob', NULL, '111', 'flu'), "
        "('Cy', 40, NULL, 'hiv'), ('Di', 41, '222', NULL), ('Ed', 44, '222', 'flu')"
    )
    con.execute("COMMENT ON COLUMN t.name IS 'sbc:identifier'")
    con.execute("COMMENT ON COLUMN t.dis IS 'sbc:sensitive'")
    before = snapshot(con, "t")
    sbc_sql.anonymize(con, "t", 2)
    sbc_sql.anonymize(con, "t", 2, replace=True, leftover="suppress")
    sbc_sql.anonymize(con, "t", 3, output="other", leftover="last")
    assert snapshot(con, "t") == before


# ------------------------------------------------------------------- failed runs


PEOPLE = (
    "CREATE TABLE t (age INTEGER, sex VARCHAR, dis VARCHAR)",
    "INSERT INTO t VALUES (30, 'F', 'flu'), (31, 'F', 'hiv'), (45, 'M', 'flu'), (47, 'M', 'cold')",
)


@pytest.fixture
def prepared(engine):
    return engine.built(*PEOPLE)


def leftovers(engine, con) -> list[tuple[str, str]]:
    return [entry for entry in engine.catalog(con) if entry[1].startswith(("sbc_", "t_k2"))]


def release_rows(engine, con, name: str) -> tuple[list[str], list[tuple]]:
    """A release's column names and its rows, in a stable order."""
    return engine.column_names(con, name), sorted(engine.sql(con, f"SELECT * FROM {q(name)}"), key=repr)


@RELEASE_VIEWS
def test_failed_verification_writes_nothing(engine, prepared, monkeypatch):
    con = prepared
    monkeypatch.setattr(verification, "verify_with_labels", lambda *a, **kw: Verdict(2, ("planted problem",)))
    with pytest.raises(VerificationError, match="nothing was written: planted problem"):
        run(con, "t", 2, qi=["age", "sex"], sensitive=["dis"])
    assert leftovers(engine, con) == []
    assert engine.catalog(con) == [("table", "t")]


@RELEASE_VIEWS
def test_interrupted_run_writes_nothing(engine, prepared, monkeypatch):
    con = prepared

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline.measure, "measure_tables", interrupt)
    with pytest.raises(KeyboardInterrupt):
        run(con, "t", 2, qi=["age", "sex"], sensitive=["dis"])
    assert engine.catalog(con) == [("table", "t")]
    # the connection is usable and a clean run works afterwards
    monkeypatch.undo()
    run(con, "t", 2, qi=["age", "sex"], sensitive=["dis"])
    assert engine.catalog(con) == [
        ("table", "t"),
        ("table", "t_k2_classes"),
        ("table", "t_k2_rows"),
        ("view", "t_k2"),
        ("view", "t_k2_view"),
    ]


@RELEASE_VIEWS
def test_failed_replace_keeps_the_old_release(engine, prepared, monkeypatch):
    con = prepared
    run(con, "t", 2, qi=["age", "sex"], sensitive=["dis"])
    old = release_rows(engine, con, "t_k2")
    monkeypatch.setattr(verification, "verify_with_labels", lambda *a, **kw: Verdict(2, ("planted problem",)))
    with pytest.raises(VerificationError):
        run(con, "t", 2, qi=["age", "sex"], sensitive=["dis"], replace=True, leftover="suppress")
    assert release_rows(engine, con, "t_k2") == old
    assert engine.catalog(con) == [
        ("table", "t"),
        ("table", "t_k2_classes"),
        ("table", "t_k2_rows"),
        ("view", "t_k2"),
        ("view", "t_k2_view"),
    ]


def test_failed_export_leaves_no_partial_file(con, monkeypatch, tmp_path):
    for statement in PEOPLE:
        con.execute(statement)
    out = tmp_path / "r.parquet"

    def fail(*args, **kwargs):
        raise VerificationError("planted")

    # fail after the COPY statement ran, just before COMMIT
    monkeypatch.setattr(DuckDBEngine, "commit", fail)
    with pytest.raises(VerificationError):
        sbc_sql.anonymize(con, "t", 2, qi=["age", "sex"], sensitive=["dis"], out_file=out)
    monkeypatch.undo()
    assert not out.exists()
    assert not Path(f"{out}.sbc-partial").exists()
    assert catalog(con) == [("table", "t")]


@RELEASE_VIEWS
def test_replace_takes_over_a_release_kept_as_one_table(engine):
    # a release written as one table (an earlier layout, or a copy) under the release's name
    con = engine.built(*PEOPLE, "CREATE TABLE t_k2 AS SELECT 0 AS eq_class, 1 AS x")
    with pytest.raises(OutputExistsError, match="'t_k2' already exists"):
        run(con, "t", 2, qi=["age", "sex"], sensitive=["dis"])
    run(con, "t", 2, qi=["age", "sex"], sensitive=["dis"], replace=True)
    assert engine.catalog(con) == [
        ("table", "t"),
        ("table", "t_k2_classes"),
        ("table", "t_k2_rows"),
        ("view", "t_k2"),
        ("view", "t_k2_view"),
    ]
    assert sbc_sql.verify(con, "t", "t_k2", 2).ok


def test_an_existing_class_table_name_is_refused_without_replace(engine):
    con = engine.built(*PEOPLE, "CREATE TABLE t_k2_classes (x INTEGER)")
    with pytest.raises(OutputExistsError, match=r"'t_k2_classes' already exists.*replace=True"):
        run(con, "t", 2, qi=["age", "sex"], sensitive=["dis"])
    assert engine.catalog(con) == [("table", "t"), ("table", "t_k2_classes")]


@pytest.mark.parametrize(
    "name", ["sbc_size", "sbc_eq_class", "sbc_rows", "sbc_tuple", "sbc_key", "sbc_key2", "sbc_count"]
)
def test_a_column_named_like_a_working_name_is_refused(engine, name):
    # the class table's aggregate and the checks use these names inside their SQL
    con = engine.built(
        f"CREATE TABLE t AS SELECT i % 7 AS a, 'x' || (i % 3) AS {name} FROM range(20) AS r(i)"
    )
    with pytest.raises(InputError, match=f"column '{name}' is reserved"):
        run(con, "t", 5)
    assert engine.catalog(con) == [("table", "t")]


def write_semicolons(path: Path, header: bool) -> Path:
    lines = ["age;zip;dx"] if header else []
    lines += [f"{20 + i % 30};{100 + i % 3};d{i % 4}" for i in range(60)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_csv_delimiter_and_header_are_passed_to_the_reader(tmp_path, cli):
    semi = write_semicolons(tmp_path / "semi.csv", header=True)
    out = tmp_path / "a.parquet"
    res = cli(
        ["anonymize", "--table", semi, "--k", "3", "--sensitive", "dx", "--csv-delimiter", ";"]
        + ["--out-file", out]
    )
    assert res.exit_code == 0, res.stderr
    with duckdb.connect() as c:
        names = [d[0] for d in c.execute(f"SELECT * FROM '{out}' LIMIT 0").description]
    assert names == [
        "eq_class",
        "age_min",
        "age_max",
        "age_has_null",
        "zip_min",
        "zip_max",
        "zip_has_null",
        "dx",
    ]
    bare = write_semicolons(tmp_path / "bare.csv", header=False)
    result = sbc_sql.anonymize(
        None, str(bare), 3, csv_delimiter=";", csv_header=False, out_file=tmp_path / "b.parquet"
    )
    assert result.measures is not None and result.measures.n_rows == 60
    assert [c.name for c in result.plan.columns] == ["column0", "column1", "column2"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--csv-delimiter", ";;"], "--csv-delimiter ';;' is not one character"),
        (["--csv-header"], "--csv-header reads a CSV file, and 'people.parquet' is not one"),
    ],
)
def test_csv_options_are_checked(tmp_path, small_file, cli, extra, message):
    src = small_file(".parquet" if "--csv-header" in extra else ".csv")
    res = cli(["anonymize", "--table", src, "--k", "2", "--out-file", tmp_path / "x.parquet", *extra])
    assert res.exit_code == 1
    assert message.replace("people.parquet", str(src)) in res.stderr


# ------------------------------------------------------------------------- hints


def test_the_next_hint_is_one_command_for_the_shell_and_its_sql_names_the_release(tmp_path):
    """A table named like shell code: the hint's command, pasted into a shell, evaluates the
    release (and runs nothing else); its SQL reads the release's view."""
    import shlex
    import subprocess
    import sys

    from helpers import checkout_env, run_cli

    table = "t$(touch X) Q"
    db = tmp_path / "p q.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute(
            f"CREATE TABLE {q(table)} AS SELECT 20 + i % 9 AS age, 'z' || (i % 4) AS zip, "
            "'d' || (i % 3) AS dis FROM range(60) r(i)"
        )
    res = run_cli(["anonymize", "--db", db, "--table", table, "--k", "3", "--sensitive", "dis"])
    assert res.exit_code == 0, res.stderr
    hint = next(line for line in res.stdout.splitlines() if line.startswith("next: "))
    sql, command = hint.removeprefix("next: ").split("; sbc-sql ", 1)
    select = sql.split(" (readable)")[0]
    with duckdb.connect(str(db), read_only=True) as con:
        assert len(con.execute(select).fetchall()) == 60
    command = command.removesuffix(" for risk and loss")
    python = shlex.quote(sys.executable)
    done = subprocess.run(
        ["bash", "-c", f"{python} -m sbc_sql {command}"],
        cwd=tmp_path,
        env=checkout_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "X").exists()


# ------------------------------------------------------------------------- wide inputs


def test_a_csv_of_a_thousand_columns_three_of_them_qis(tmp_path):
    """The profile of the kept columns is one subquery per column: a statement for them all
    was nested deeper than DuckDB binds (max_expression_depth, 1,000). Verified again by
    the verify command."""
    from helpers import run_cli

    kept = [f"k{j}" for j in range(997)]
    csv = tmp_path / "wide.csv"
    columns = ", ".join(
        [
            "i % 20 AS q0",
            "i * 7 % 13 AS q1",
            "'c' || i % 5 AS q2",
            *(f"i * {j} % 97 AS {c}" for j, c in enumerate(kept)),
        ]
    )
    duckdb.sql(f"COPY (SELECT {columns} FROM range(100) r(i)) TO '{csv}'")
    db = tmp_path / "w.duckdb"
    res = run_cli(
        ["anonymize", "--db", db, "--table", csv, "--k", "5", "--qi", "q0,q1,q2", "--keep", ",".join(kept)]
    )
    assert res.exit_code == 0, res.stderr
    assert "verified 5-anonymous and complete" in res.stdout
    with duckdb.connect(str(db)) as con:
        assert len(con.execute("SELECT * FROM wide_k5_view").description) == 1 + 1000  # eq_class
        assert con.execute("SELECT count(*) FROM wide_k5_view").fetchone() == (100,)
        con.execute(f"CREATE TABLE people AS SELECT * FROM read_csv('{csv}')")
    # an auditor's check of a release of the table: its match of 1,000 columns was one AND
    # nested in parentheses per column, deeper than sqlglot renders
    res = run_cli(
        [
            "anonymize",
            "--db",
            db,
            "--table",
            "people",
            "--k",
            "5",
            "--qi",
            "q0,q1,q2",
            "--keep",
            ",".join(kept),
        ]
    )
    assert res.exit_code == 0, res.stderr
    res = run_cli(["verify", "--db", db, "--original", "people", "--release", "people_k5", "--k", "5"])
    assert res.exit_code == 0, res.stderr
    assert res.stdout.startswith("ok: 'people_k5' is 5-anonymous and complete")
