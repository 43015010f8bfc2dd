"""The streamed run (``--mode streamed``, or a table of more rows than ``--held-rows``): the
database sorts and holds the rows, this process holds a run of blocks at a time. On k alone
it makes the release block mode makes holding the table (one block, many blocks), on DuckDB
and PostgreSQL; with criteria it verifies; it never holds more than its runs' rows; and it
leaves nothing behind, whether it ends or is interrupted."""

from __future__ import annotations

import tracemalloc
from typing import Any

import duckdb
import numpy as np
import pytest
from helpers import assert_one_error

import sbc_sql
from sbc_sql.cluster import streamed

#: the engine tests: Spark clusters in its own workers, never streamed from the database
not_spark = pytest.mark.notimpl(["spark"], reason="Spark clusters in its own workers, never streamed here")

# a population whose rows are almost all distinct: three numerics (one with NULLs), a coarse
# and two finer categoricals, and a sensitive column that goes with the age
POPULATION = """
CREATE TABLE t AS
SELECT i AS person_id,
       CAST(18 + hash(i, 1) % 70 AS INTEGER) AS age,
       CASE WHEN hash(i, 2) % 50 = 0 THEN NULL ELSE CAST(hash(i, 3) % 90000 AS INTEGER) END AS income,
       DATE '2020-01-01' + CAST(hash(i, 4) % 1000 AS INTEGER) AS visit,
       CASE WHEN hash(i, 5) % 2 = 0 THEN 'F' ELSE 'M' END AS sex,
       'r' || CAST(hash(i, 6) % 12 AS VARCHAR) AS region,
       'z' || CAST(hash(i, 7) % 150 AS VARCHAR) AS zip,
       'd' || CAST((hash(i, 8) % 5 + (18 + hash(i, 1) % 70) / 30) AS VARCHAR) AS diagnosis
FROM range({n}) AS r(i)
"""
ROLES: dict[str, Any] = {"drop": "person_id", "sensitive": "diagnosis"}


def population(engine, n: int) -> Any:
    return engine.built(POPULATION.format(n=n))


def release(engine, database: Any, name: str) -> list[str]:
    """The release's rows as text, sorted (every engine's values compare so)."""
    return sorted(repr(row) for row in engine.sql(database, f'SELECT * FROM "{name}"'))


def run(database: Any, output: str, **options: Any) -> sbc_sql.Result:
    result = sbc_sql.anonymize(database, "t", 5, output=output, tuples=False, **ROLES, **options)
    assert result.verdict is not None and result.verdict.ok
    return result


@not_spark
@pytest.mark.parametrize(
    ("rows", "held"),
    [(1_200, None), (12_000, 4_000)],
    ids=["one block", "blocks in runs of two"],
)
def test_a_streamed_release_on_k_alone_is_the_one_made_holding_the_table(engine, rows, held) -> None:
    database = population(engine, rows)
    with run(database, "held", mode="blocks") as held_run:
        ncp = held_run.measures.total_ncp
        assert held_run.mode == "blocks"
    with run(database, "streamed", mode="streamed", held_rows=held) as streamed_run:
        assert streamed_run.mode == "streamed"
        if engine.name == "duckdb":
            # the value sets made beside the clustering, a run at a time, as held runs make them
            assert any("_sets" in s for s in streamed_run.statements)
        assert streamed_run.measures.total_ncp == pytest.approx(ncp, abs=1e-12)
    assert release(engine, database, "streamed") == release(engine, database, "held")


@not_spark
def test_a_table_larger_than_held_rows_streams_by_default(engine) -> None:
    database = population(engine, 9_000)
    lines: list[str] = []
    with run(database, "out", held_rows=3_200, log=lines.append) as result:
        assert result.mode == "streamed"
    assert any("in 3 run(s) of at most 3,200 rows" in line for line in lines), lines
    with run(database, "whole") as result:
        assert result.mode == "blocks"


@not_spark
@pytest.mark.parametrize(
    "criteria",
    [{"l_diversity": 2}, {"t_closeness": 0.3}, {"beta_likeness": 6.0}],
    ids=["l-diversity", "t-closeness", "beta-likeness"],
)
def test_a_streamed_release_keeps_every_criterion_asked(engine, criteria) -> None:
    database = population(engine, 8_000)
    with run(database, "out", mode="streamed", held_rows=3_200, max_suppression=0.05, **criteria) as result:
        assert result.verdict.ok and result.mode == "streamed"


def test_the_run_never_holds_more_rows_than_it_may(monkeypatch) -> None:
    """Every run of blocks holds at most --held-rows rows, and the arrays this process makes
    (numpy's, traced) peak far below those of the same release made holding the table: a
    run that pulled every row would fail both."""
    con = duckdb.connect()
    con.execute(POPULATION.format(n=200_000))
    given: list[int] = []
    real = streamed.cluster_run

    def spy(job, decoder, rows, starts, workers=1):
        given.append(len(rows.row_id))
        return real(job, decoder, rows, starts, workers)

    monkeypatch.setattr(streamed, "cluster_run", spy)

    def peak(**options: Any) -> int:
        # once untraced first: what a first run imports and caches is not the run's arrays
        run(con, "out", replace=True, **options).close()
        tracemalloc.start()
        try:
            run(con, "out", replace=True, **options).close()
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    whole = peak(mode="blocks")
    assert not given
    held = peak(held_rows=4_000)
    assert given and max(given) <= 4_000 and sum(given) == 2 * 200_000
    assert held < whole / 4, (held, whole)


def test_nothing_is_left_behind_by_a_streamed_run_or_an_interrupted_one(monkeypatch) -> None:
    con = duckdb.connect()
    con.execute(POPULATION.format(n=6_000))
    before = con.execute("SELECT count(*), sum(hash(age, income, zip)) FROM t").fetchall()

    def temporary() -> list[tuple[str]]:
        return con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()

    run(con, "out", mode="streamed", held_rows=3_200).close()
    assert temporary() == []
    calls = []
    real = streamed.cluster_run

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(streamed, "cluster_run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sbc_sql.anonymize(con, "t", 5, output="gone", mode="streamed", held_rows=3_200, tuples=False, **ROLES)
    assert temporary() == []
    tables = {name for (name,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert not any(name.startswith("gone") for name in tables)
    assert con.execute("SELECT count(*), sum(hash(age, income, zip)) FROM t").fetchall() == before


def test_the_command_line_streams_and_refuses_a_run_too_small_for_a_block(cli, tmp_path) -> None:
    db = tmp_path / "p.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute(POPULATION.format(n=7_000))
    args = ["anonymize", "--db", db, "-t", "t", "--k", "5", "--drop", "person_id", "--rows"]
    res = cli([*args, "--held-rows", "3200", "--sensitive", "diagnosis"])
    assert res.exit_code == 0, res.stderr
    assert "streamed from the database, at most 3,200 held at a time" in res.stderr + res.stdout
    res = cli([*args, "--held-rows", "1000", "--output", "small"])
    assert_one_error(
        res, "--held-rows 1,000 is below the 1,400 rows of a block at k = 5; give at least 1,400"
    )
    res = cli([*args, "--held-rows", "5000", "--exact", "--output", "exact"])
    assert_one_error(res, "--held-rows 5000 bounds the rows the default sbca holds")
    with duckdb.connect(str(db)) as con:
        names = {n for (n,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert not any(n.startswith(("small", "exact")) for n in names)


def test_runs_of_blocks_hold_whole_blocks_within_the_rows_asked() -> None:
    bounds = np.array([0, 10, 20, 31, 40, 52])
    assert streamed.runs(bounds, 20) == [(0, 2), (2, 4), (4, 5)]
    assert streamed.runs(bounds, 5) == [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)]
    assert streamed.runs(bounds, 100) == [(0, 5)]


def test_the_cluster_command_writes_the_class_ids_a_streamed_run_keeps_in_the_database(tmp_path) -> None:
    """``sbc-sql cluster`` (class ids for another warehouse) streams too, and writes the ids
    from the database a batch at a time: the same ids as held in memory, by row id or by a
    key column (--row-id), whose repeats are refused as in memory."""
    import pyarrow.csv as pa_csv
    import pyarrow.parquet as pq

    from sbc_sql import warehouse

    db = tmp_path / "p.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute(POPULATION.format(n=7_000))
        con.execute(
            "CREATE TABLE twice AS SELECT person_id % 3500 AS person_id, * EXCLUDE (person_id) FROM t"
        )
    options: dict[str, Any] = {**ROLES, "tuples": False}

    def ids(out: str, **more: Any) -> list[tuple[int, int]]:
        path = tmp_path / out
        warehouse.cluster_ids(str(db), "t", 5, path, **options, **more)
        table = pq.read_table(path) if out.endswith(".parquet") else pa_csv.read_csv(path)
        return sorted(zip(table["row_id"].to_pylist(), table["eq_class"].to_pylist(), strict=True))

    held = ids("held.parquet", mode="blocks")
    assert ids("streamed.parquet", mode="streamed", held_rows=3_200) == held
    assert ids("streamed.csv", mode="streamed", held_rows=3_200) == held
    by_key = ids("key.parquet", mode="streamed", held_rows=3_200, row_id="person_id")
    assert sorted(c for _, c in by_key) == sorted(c for _, c in held)
    with pytest.raises(sbc_sql.InputError, match="--row-id: column 'person_id' is not unique"):
        warehouse.cluster_ids(
            str(db), "twice", 5, tmp_path / "no.parquet", mode="streamed", row_id="person_id", **options
        )
    assert not (tmp_path / "no.parquet").exists()
    assert not (tmp_path / "no.parquet.sbc-partial").exists()


@pytest.mark.parametrize(("tuples", "mode"), [(420, "blocks"), (4_200, "streamed")])
def test_a_table_that_repeats_its_tuples_holds_them_or_streams_its_rows_when_they_are_more(
    tuples, mode
) -> None:
    """A table of more rows than --held-rows whose distinct QI tuples fit clusters the tuples
    in memory; one with more tuples than that streams its rows (the stored tuples dropped)."""
    con = duckdb.connect()
    con.execute(
        f"CREATE TABLE t AS SELECT i AS person_id, 18 + (i % {tuples}) % 60 AS age, "
        f"'z' || CAST((i % {tuples}) // 60 AS VARCHAR) AS zip, 'd' || CAST(i % 5 AS VARCHAR) AS diagnosis "
        "FROM range(9000) AS r(i)"
    )
    with sbc_sql.anonymize(con, "t", 5, output="out", held_rows=3_200, **ROLES) as result:
        assert result.verdict is not None and result.verdict.ok
        assert result.mode == mode
        assert result.tuples == (tuples if mode == "blocks" else None)
    names = {n for (n,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()}
    assert names == set()
