"""Microaggregated releases (--recode microaggregate): each class's QIs released as one
value (mean, median or mode; a categorical QI's mode or value set), verified in SQL against
the class's source rows, audited without labels, and measured by SSE and IL1s."""

from __future__ import annotations

import datetime as dt
import math
import statistics

import numpy as np
import pandas as pd
import pytest
import sqlglot
from helpers import assert_one_error, connected, run_cli

import sbc_sql
from sbc_sql.errors import InputError, VerificationError
from sbc_sql.stages import write


def adult_like(n: int = 1200, seed: int = 3) -> pd.DataFrame:
    """An Adult-like table: integer age and hours, a date, categorical education and sex,
    a sensitive occupation; a few NULLs in age and education."""
    rng = np.random.default_rng(seed)
    age = rng.integers(17, 90, n).astype(object)
    age[rng.random(n) < 0.03] = None
    education = rng.choice(["Bachelors", "HS-grad", "Masters", "Some-college", "Doctorate"], n).astype(object)
    education[rng.random(n) < 0.03] = None
    return pd.DataFrame(
        {
            "age": age,
            "hours": rng.integers(1, 99, n),
            "hired": [dt.date(2000, 1, 1) + dt.timedelta(days=int(d)) for d in rng.integers(0, 4000, n)],
            "education": education,
            "sex": rng.choice(["Female", "Male"], n),
            "occupation": rng.choice(["Sales", "Tech", "Craft", "Admin", "Service"], n),
        }
    )


TYPES = {"age": "INTEGER", "hours": "INTEGER", "hired": "DATE", "education": "VARCHAR", "sex": "VARCHAR"}
ROLES = {"qi": "age,hours,hired,education,sex", "sensitive": "occupation"}


@pytest.mark.notimpl(["spark"], reason="Spark refuses --recode microaggregate (test_spark_refuses)")
@pytest.mark.parametrize("aggregate", ["mean", "median", "mode"])
def test_an_adult_like_release_at_k_10_verifies(engine, aggregate: str) -> None:
    """Verified in the run (each class's value recomputed from its rows) and by an auditor;
    every released value the class's own aggregate, recomputed here in Python."""
    df = adult_like()
    database = engine.frame(df, TYPES)
    with sbc_sql.anonymize(
        database, "t", 10, **ROLES, recode="microaggregate", aggregate=aggregate, output="r"
    ) as result:
        assert result.verdict is not None and result.verdict.ok
        assert result.verdict.facts["wrong_aggregates"] == 0
        m = result.measures
        assert m is not None and m.sse is not None and m.il1s is not None and m.sse > 0 and m.il1s > 0
        assert 0 < m.total_ncp < 1
    audit = sbc_sql.verify(database, "t", "r", 10)
    assert audit.ok, audit.problems
    assert engine.column_names(database, "r") == [
        "eq_class",
        "age",
        "hours",
        "hired",
        "education",
        "sex",
        "occupation",
    ]
    # each class's values: one tuple, and the aggregate of the rows it holds (the rows are
    # matched back through their sensitive value and the class's size only in aggregate:
    # the one tuple per class and its range are checked here, the recomputation in SQL)
    classes = engine.sql(
        database, "SELECT eq_class, class_size, age, hours, hired, education, sex FROM r_classes"
    )
    assert min(c[1] for c in classes) >= 10
    assert sum(c[1] for c in classes) == len(df)
    assert all(c[5] is None or c[5] in set(df["education"].dropna()) for c in classes)


def _hand_table() -> pd.DataFrame:
    """Two classes of three rows at k = 3, set apart on x: x 1, 2, 2 and 10, 11, NULL."""
    return pd.DataFrame(
        {
            "x": [1, 2, 2, 10, 11, None],
            "d": [dt.date(2020, 1, 1), dt.date(2020, 1, 2), dt.date(2020, 1, 4)] * 2,
            "c": ["b", "a", "b", "z", "y", None],
            "s": ["p", "q", "r", "p", "q", "r"],
        }
    )


HAND_TYPES = {"x": "INTEGER", "d": "DATE", "c": "VARCHAR", "s": "VARCHAR"}


def _classes(database, engine) -> list[tuple]:
    return sorted(engine.sql(database, "SELECT x, d, c FROM h_classes"), key=lambda r: (r[0] is None, r[0]))


@pytest.mark.notimpl(["spark"], reason="Spark refuses --recode microaggregate")
@pytest.mark.parametrize(
    ("aggregate", "expected"),
    [
        # mean of 1, 2, 2 is 5/3 -> 2; of 10, 11 (NULL left out) 10.5 -> 11 (half away from 0);
        # the dates' mean day 2020-01-02.33 -> 2020-01-02
        ("mean", [(2, dt.date(2020, 1, 2), "b"), (11, dt.date(2020, 1, 2), "y")]),
        # the lower median: 2 of (1, 2, 2), 10 of (10, 11); dates 2020-01-02
        ("median", [(2, dt.date(2020, 1, 2), "b"), (10, dt.date(2020, 1, 2), "y")]),
        # the mode: 2; a tie of 10 and 11 goes to the smaller; the dates' tie to the first
        ("mode", [(2, dt.date(2020, 1, 1), "b"), (10, dt.date(2020, 1, 1), "y")]),
    ],
)
def test_each_aggregate_against_a_hand_computed_class(engine, aggregate: str, expected) -> None:
    """The categorical QI takes its mode: 'b' of (b, a, b); 'y' of the tie (z, y), NULL left out."""
    database = engine.frame(_hand_table(), HAND_TYPES)
    with sbc_sql.anonymize(
        database, "t", 3, qi="x,d,c", sensitive="s", recode="microaggregate", aggregate=aggregate, output="h"
    ) as result:
        assert result.verdict is not None and result.verdict.ok
    assert _classes(database, engine) == expected
    text = engine.sql(database, "SELECT DISTINCT x, c FROM h_view")
    assert sorted(text) == sorted({(str(x), c) for x, _, c in expected})


@pytest.mark.notimpl(["spark"], reason="Spark refuses --recode microaggregate")
def test_a_categorical_set_and_an_all_null_class(engine) -> None:
    """--aggregate-categorical values keeps the value set; a class whose values are all NULL
    releases NULL, and its text NULL."""
    df = pd.DataFrame(
        {"x": [None] * 3 + [5, 6, 7], "c": ["a", "b", None, "c", "c", "d"], "s": list("pqrpqr")}
    )
    database = engine.frame(df, {"x": "INTEGER", "c": "VARCHAR", "s": "VARCHAR"})
    with sbc_sql.anonymize(
        database,
        "t",
        3,
        qi="x,c",
        sensitive="s",
        recode="microaggregate",
        aggregate_categorical="values",
        output="h",
    ) as result:
        assert result.verdict is not None and result.verdict.ok
    rows = sorted(engine.sql(database, "SELECT x, c FROM h_classes"), key=lambda r: (r[0] is not None, r[0]))
    assert rows[0][0] is None and list(rows[0][1]) == ["a", "b", None]
    assert rows[1][0] == 6 and list(rows[1][1]) == ["c", "d"]
    assert ("NULL", "a|b|NULL") in engine.sql(database, "SELECT x, c FROM h_view")
    assert sbc_sql.verify(database, "t", "h", 3).ok


def test_a_class_value_off_by_one_fails_the_run(monkeypatch) -> None:
    """The run recomputes each class's aggregate from its rows: a class table whose value is
    off by one (as if one class's rows were released another value) fails, nothing written."""
    made = write.create_classes_micro_sql

    def tampered(plan, table, *args, **kwargs):
        statements = made(plan, table, *args, **kwargs)
        off = sqlglot.parse_one(f'UPDATE "{table}" SET x = x + 1 WHERE eq_class = 0', read="duckdb")
        return [*statements, off]

    monkeypatch.setattr(write, "create_classes_micro_sql", tampered)
    import duckdb

    con = duckdb.connect()
    con.register("df", _hand_table())
    con.execute("CREATE TABLE t AS SELECT CAST(x AS INTEGER) AS x, d, c, s FROM df")
    for aggregate in ("mean", "median", "mode"):
        with pytest.raises(VerificationError, match="not their class's aggregate"):
            sbc_sql.anonymize(
                con,
                "t",
                3,
                qi="x,d,c",
                sensitive="s",
                recode="microaggregate",
                aggregate=aggregate,
                output="h",
            )
        assert not con.execute("SELECT * FROM duckdb_tables() WHERE table_name LIKE 'h%'").fetchall()


@pytest.mark.notimpl(["spark"], reason="Spark refuses --recode microaggregate")
def test_a_tampered_release_fails_the_audit(engine) -> None:
    """Without labels, a class's value outside the range of the source rows that could be
    its rows, or a mode no source row holds, fails verify."""
    database = engine.frame(_hand_table(), HAND_TYPES)
    sbc_sql.anonymize(
        database, "t", 3, qi="x,d,c", sensitive="s", recode="microaggregate", output="h"
    ).close()
    assert sbc_sql.verify(database, "t", "h", 3).ok
    with connected(database) as eng:
        eng.execute(sqlglot.parse_one("UPDATE h_classes SET x = 12 WHERE x = 11"))
    verdict = sbc_sql.verify(database, "t", "h", 3)
    assert not verdict.ok and verdict.facts["outside"] == 1
    with connected(database) as eng:
        eng.execute(sqlglot.parse_one("UPDATE h_classes SET x = 11, c = 'w' WHERE x = 12"))
    verdict = sbc_sql.verify(database, "t", "h", 3)
    assert not verdict.ok and verdict.facts["unknown_modes"] == 1


def test_sse_and_il1s_against_hand_computed_values() -> None:
    """SSE: sum of squared differences on values standardized by the source's sample
    deviation; IL1s: sum of |x - x'| / (sqrt(2) S), NULLs left out (sdcMicro's dUtility)."""
    import duckdb

    con = duckdb.connect()
    con.register("df", _hand_table())
    con.execute("CREATE TABLE t AS SELECT CAST(x AS INTEGER) AS x, c, s FROM df")
    with sbc_sql.anonymize(
        con, "t", 3, qi="x,c", sensitive="s", recode="microaggregate", output="h"
    ) as result:
        m = result.measures
    values = [1, 2, 2, 10, 11]
    sd = statistics.stdev(values)
    released = [2, 2, 2, 11, 11]  # means 5/3 -> 2 and 10.5 -> 11
    sse = sum(((x - y) / sd) ** 2 for x, y in zip(values, released, strict=True))
    il1s = sum(abs(x - y) / (math.sqrt(2) * sd) for x, y in zip(values, released, strict=True))
    assert m is not None and m.sse == pytest.approx(sse) and m.il1s == pytest.approx(il1s)
    assert m.loss == {"x": {"sse": pytest.approx(sse), "il1s": pytest.approx(il1s)}}
    assert m.as_dict()["sse"] == pytest.approx(sse)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--aggregate", "median"], "--aggregate median applies to a microaggregated release only"),
        (
            ["--aggregate-categorical", "values"],
            "--aggregate-categorical values applies to a microaggregated",
        ),
        (["--recode", "microaggregate", "--incremental"], "cannot be --incremental"),
        (["--recode", "microaggregate", "--max-width", "x=5"], "--max-width limits the ranges"),
    ],
)
def test_bad_combinations_give_one_error(tmp_path, args, message) -> None:
    import duckdb

    db = tmp_path / "h.duckdb"
    with duckdb.connect(str(db)) as con:
        con.register("df", _hand_table())
        con.execute("CREATE TABLE t AS SELECT CAST(x AS INTEGER) AS x, d, c, s FROM df")
    res = run_cli(["anonymize", "--db", db, "-t", "t", "-k", "3", "--qi", "x,d,c", "--sensitive", "s", *args])
    assert_one_error(res, message)


def test_a_timestamp_mean_is_refused() -> None:
    frame = pd.DataFrame({"ts": pd.to_datetime(["2020-01-01"] * 4), "s": list("pqrs")})
    with pytest.raises(InputError, match="mean cannot release timestamp column 'ts'"):
        sbc_sql.anonymize(frame, k=2, qi="ts", sensitive="s", recode="microaggregate", sql_only=True)


@pytest.mark.slow
def test_spark_refuses(spark) -> None:
    frame = spark.createDataFrame(_hand_table().drop(columns=["d"]))
    frame.createOrReplaceTempView("t")
    # in a Python caller's terms, as the API speaks
    with pytest.raises(InputError, match=r"^recode='microaggregate' is not available with the spark engine"):
        sbc_sql.anonymize(spark, "t", 3, qi="x,c", sensitive="s", recode="microaggregate")


def test_measure_of_a_microaggregated_release_says_where_its_figures_are(tmp_path) -> None:
    """measure and evaluate read ranges and sets: on a microaggregated release, one Error
    line pointing to the run's own figures."""
    import duckdb

    db = tmp_path / "h.duckdb"
    with duckdb.connect(str(db)) as con:
        con.register("df", _hand_table())
        con.execute("CREATE TABLE t AS SELECT CAST(x AS INTEGER) AS x, d, c, s FROM df")
    args = [
        "--db",
        db,
        "-t",
        "t",
        "-k",
        "3",
        "--qi",
        "x,d,c",
        "--sensitive",
        "s",
        "--recode",
        "microaggregate",
    ]
    res = run_cli(["anonymize", *args, "-o", "h"])
    assert res.exit_code == 0, res.stderr
    assert "microaggregated: x mean, d mean, c mode" in res.stdout and "SSE " in res.stdout
    assert "(one value per QI)" in res.stdout
    for command in ("measure", "evaluate"):
        res = run_cli([command, "--db", db, "--original", "t", "--release", "h"])
        assert_one_error(res, "'h' is microaggregated")
    res = run_cli(["verify", "--db", db, "--original", "t", "--release", "h", "-k", "3"])
    assert res.exit_code == 0, res.stderr


def test_a_dry_run_shows_the_aggregates_and_their_checks() -> None:
    """--sql shows the class table's aggregate and mode statements, their recomputation,
    and the SSE and IL1s query; nothing is written."""
    import duckdb

    con = duckdb.connect()
    con.register("df", _hand_table())
    con.execute("CREATE TABLE t AS SELECT CAST(x AS INTEGER) AS x, d, c, s FROM df")
    with sbc_sql.anonymize(
        con, "t", 3, qi="x,d,c", sensitive="s", recode="microaggregate", aggregate="median", sql_only=True
    ) as result:
        text = "\n".join(result.statements)
    assert "QUANTILE_DISC" in text and "ROW_NUMBER() OVER" in text and "UPDATE" in text
    assert "STDDEV_SAMP" in text and "SQRT(2)" in text
    assert con.execute("SELECT COUNT(*) FROM duckdb_tables()").fetchone() == (1,)
