"""The query helpers an analyst loads (sql/helpers/, ``sbc_sql.query_helpers``): on a real
release, in DuckDB and in PostgreSQL, the rows surely inside a query are at most its true
count, the rows that may be at least it, and the estimate is the uniform spread over each
class's range and set (what ``evaluate``'s query error measures), computed here apart."""

from __future__ import annotations

import adbc_driver_postgresql.dbapi as adbc
import duckdb
import numpy as np
import pandas as pd
import pytest
from helpers import to_postgres

import sbc_sql
from sbc_sql import querying
from sbc_sql.errors import InputError

AGES = (30, 40)
ZIPS = ["1001", "1002", "1003"]
QUERY = f"""
SELECT diagnosis,
  COUNT(*) FILTER (WHERE sbc_range_inside(age_min, age_max, age_has_null, {AGES[0]}, {AGES[1]})
                   AND sbc_set_inside(zip, {{zips}})) AS at_least,
  COUNT(*) FILTER (WHERE sbc_range_overlaps(age_min, age_max, {AGES[0]}, {AGES[1]})
                   AND sbc_set_overlaps(zip, {{zips}})) AS at_most,
  SUM(sbc_range_share(age_min, age_max, {AGES[0]}, {AGES[1]}) * sbc_set_share(zip, {{zips}})) AS estimate
FROM r GROUP BY diagnosis ORDER BY diagnosis
"""


def patients() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    n = 600
    age = rng.integers(18, 90, n).astype(object)
    age[rng.choice(n, 8, replace=False)] = None  # a few NULL ages: a class of NULLs or beside a range
    return pd.DataFrame(
        {
            "age": age,
            "zip": rng.choice(np.array(["1001", "1002", "1003", "1004", "2001", "2002"]), n),
            "diagnosis": rng.choice(np.array(["flu", "asthma", "gout", "ulcer"]), n),
        }
    )


def truth(df: pd.DataFrame) -> dict[str, int]:
    inside = df["age"].notna() & df["age"].between(*AGES) & df["zip"].isin(ZIPS)
    return {str(d): int(n) for d, n in df[inside].groupby("diagnosis").size().items()}


def expected_estimate(release: pd.DataFrame) -> dict[str, float]:
    """Uniform spread, computed apart from the SQL: the share of each row's age range inside
    the query (1 or 0 for a single value, 0 for a class of NULLs) times its zip set's."""
    out: dict[str, float] = {}
    for _, row in release.iterrows():
        lo, hi = row["age_min"], row["age_max"]
        if lo is None or pd.isna(lo):
            age = 0.0
        elif hi == lo:
            age = float(AGES[0] <= lo <= AGES[1])
        else:
            age = max(min(AGES[1], hi) - max(AGES[0], lo), 0) / (hi - lo)
        values = list(row["zip"])
        zips = sum(v in ZIPS for v in values) / len(values)
        out[row["diagnosis"]] = out.get(row["diagnosis"], 0.0) + age * zips
    return out


def check(answers: list[tuple], df: pd.DataFrame, release: pd.DataFrame) -> None:
    true, estimate = truth(df), expected_estimate(release)
    assert [a[0] for a in answers] == sorted(estimate)
    for diagnosis, at_least, at_most, got in answers:
        assert at_least <= true.get(diagnosis, 0) <= at_most, diagnosis
        assert float(got) == pytest.approx(estimate[diagnosis], rel=1e-9, abs=1e-12), diagnosis
    # the bounds are not trivial on this release: some rows sit across the query's edges
    assert sum(a[2] - a[1] for a in answers) > 0


def test_duckdb_macros_bound_and_estimate_a_count() -> None:
    df = patients()
    con = duckdb.connect()
    con.register("df", df)
    con.execute("CREATE TABLE t AS SELECT CAST(age AS INTEGER) AS age, zip, diagnosis FROM df")
    sbc_sql.anonymize(con, "t", 5, qi="age,zip", sensitive="diagnosis", output="r").close()
    con.execute(sbc_sql.query_helpers("duckdb"))
    zips = "[" + ", ".join(f"'{z}'" for z in ZIPS) + "]"
    answers = con.execute(QUERY.format(zips=zips)).fetchall()
    check(answers, df, con.execute("SELECT age_min, age_max, zip, diagnosis FROM r").df())


@pytest.mark.postgres
def test_postgres_functions_bound_and_estimate_a_count(postgres_url: str) -> None:
    df = patients()
    con = duckdb.connect()
    con.register("df", df)
    con.execute("CREATE TABLE t AS SELECT CAST(age AS INTEGER) AS age, zip, diagnosis FROM df")
    to_postgres(con, "t", postgres_url)
    sbc_sql.anonymize(postgres_url, "t", 5, qi="age,zip", sensitive="diagnosis", output="r").close()
    with adbc.connect(postgres_url, autocommit=True) as pg, pg.cursor() as cur:
        for statement in querying.statements("postgres"):
            cur.execute(statement)
        zips = "ARRAY[" + ", ".join(f"'{z}'" for z in ZIPS) + "]::text[]"
        cur.execute(QUERY.format(zips=zips))
        answers = [tuple(r) for r in cur.fetchall()]
        cur.execute("SELECT age_min, age_max, zip, diagnosis FROM r")
        release = cur.fetch_arrow_table().to_pandas()
    check(answers, df, release)


def test_another_dialect_is_one_error_line() -> None:
    with pytest.raises(
        InputError, match=r"^dialect='spark' has no query helpers; give one of duckdb, postgres"
    ):
        sbc_sql.query_helpers("spark")
