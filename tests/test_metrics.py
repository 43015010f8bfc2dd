"""NCP in SQL: the thesis' Table 2-13 by hand, and the SQL measure against the
numpy twin and a pandas reference on pipeline releases.

Table 2-13: four patients, QIs age (domain 10..100), gender and zip. T1..T3 form one class
(age 25~40, gender {Male, Female}, zip {2370}); T4 is suppressed. Per tuple:
T1..T3: 15/90 + 2/2 + 0 = 1.167 and T4: 3, so total NCP = (3 * 1.167 + 3) / (4 * 3) = 6.5/12.
"""

from __future__ import annotations

from unittest import mock

import duckdb
import numpy as np
import pandas as pd
import pytest
from helpers import frame, make_table
from sqlglot import exp

import sbc_sql
from sbc_sql import engines
from sbc_sql.cluster.ncp import total_ncp
from sbc_sql.run import cluster as pipeline
from sbc_sql.sql.nodes import ref
from sbc_sql.sql.templates import DIALECT
from sbc_sql.stages import measure as metrics

AGE_DOMAIN = {"age": (10, 100)}


@pytest.fixture
def thesis(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    con.execute("CREATE TABLE patients (age INTEGER, gender VARCHAR, zip VARCHAR, disease VARCHAR)")
    con.execute(
        "INSERT INTO patients VALUES (25, 'M', '2370', 'flu'), (35, 'M', '2370', 'hiv'), "
        "(40, 'F', '2370', 'flu'), (65, 'F', '5300', 'cancer')"
    )
    con.execute(
        "CREATE TABLE release (eq_class BIGINT, age_min INTEGER, age_max INTEGER, "
        "age_has_null BOOLEAN, gender VARCHAR[], zip VARCHAR[], disease VARCHAR)"
    )
    con.execute(
        "INSERT INTO release VALUES "
        "(0, 25, 40, false, ['Male', 'Female'], ['2370'], 'flu'), "
        "(0, 25, 40, false, ['Male', 'Female'], ['2370'], 'hiv'), "
        "(0, 25, 40, false, ['Male', 'Female'], ['2370'], 'flu')"
    )
    return con


def test_thesis_total_ncp(thesis):
    m = sbc_sql.measure(thesis, "patients", "release", ranges=AGE_DOMAIN)
    assert (m.n_rows, m.released, m.suppressed) == (4, 3, 1)
    assert m.total_ncp == pytest.approx(6.5 / 12)
    assert m.utility == pytest.approx(1 - 6.5 / 12)
    # per QI: (3 * class cost + 1 for T4) / 4
    assert m.ncp == pytest.approx({"age": (3 * 15 / 90 + 1) / 4, "gender": 1.0, "zip": 0.25})
    assert (m.classes, m.smallest, m.largest) == (1, 3, 3)


def test_thesis_ncp_per_tuple(thesis):
    layout = metrics.infer_layout(engines.connect(thesis), "patients", "release")
    assert [c.name for c in layout.qis] == ["age", "gender", "zip"]
    assert [c.kind for c in layout.qis] == ["numeric", "categorical", "categorical"]
    assert [c.name for c in layout.verbatim] == ["disease"]
    cost = exp.Add(
        this=exp.Add(
            this=metrics.cost_expression(layout.qis[0], AGE_DOMAIN),
            expression=metrics.cost_expression(layout.qis[1], AGE_DOMAIN),
        ),
        expression=metrics.cost_expression(layout.qis[2], AGE_DOMAIN),
    )
    select = (
        exp.select(exp.alias_(cost, "ncp"), ref("disease", "r"))
        .from_("release AS r")
        .join("(SELECT 2 AS gender_card, 2 AS zip_card) AS src", join_type="CROSS")
    )
    # the known range's width is a bound parameter
    span = AGE_DOMAIN["age"][1] - AGE_DOMAIN["age"][0]
    per_tuple = thesis.execute(select.sql(dialect=DIALECT), {"span": span}).fetchall()
    assert [round(v, 3) for v, _ in per_tuple] == [1.167, 1.167, 1.167]
    # T4 is suppressed: 3 (one per QI); the total over 4 tuples and 3 QIs is 6.5 / 12
    assert (sum(v for v, _ in per_tuple) + 3) / 12 == pytest.approx(6.5 / 12)


def test_thesis_without_a_declared_domain_uses_the_data_range(thesis):
    # age range of the data is 65 - 25 = 40, so the class costs 15/40 on age
    m = sbc_sql.measure(thesis, "patients", "release")
    assert m.ncp["age"] == pytest.approx((3 * 15 / 40 + 1) / 4)
    assert m.total_ncp == pytest.approx(((3 * 15 / 40 + 1) / 4 + 1.0 + 0.25) / 3)


def test_weights_make_a_weighted_mean(thesis):
    m = sbc_sql.measure(
        thesis, "patients", "release", ranges=AGE_DOMAIN, weights={"age": 2.0, "gender": 0.0, "zip": 1.0}
    )
    assert m.total_ncp == pytest.approx((2 * (3 * 15 / 90 + 1) / 4 + 0.25) / 3)


def test_a_single_value_class_costs_nothing_and_nulls_cost_as_specified(con):
    con.execute("CREATE TABLE o (x INTEGER, g VARCHAR)")
    con.execute("INSERT INTO o VALUES (1, 'a'), (NULL, 'b'), (5, NULL), (NULL, 'a'), (3, 'b'), (9, 'c')")
    con.execute(
        "CREATE TABLE r (eq_class BIGINT, x_min INTEGER, x_max INTEGER, x_has_null BOOLEAN, g VARCHAR[])"
    )
    con.execute(
        "INSERT INTO r VALUES "
        "(0, 1, 5, true, ['a', NULL]), (0, 1, 5, true, ['a', NULL]), "  # mixed: 1; 2/4
        "(1, NULL, NULL, true, ['b']), (1, NULL, NULL, true, ['b']), "  # all NULL: 0; 0
        "(2, 3, 9, false, ['b', 'c']), (2, 3, 9, false, ['b', 'c'])"
    )  # 6/8; 2/4
    m = sbc_sql.measure(con, "o", "r")
    assert m.ncp["x"] == pytest.approx((2 * 1 + 0 + 2 * 6 / 8) / 6)
    assert m.ncp["g"] == pytest.approx((2 * 0.5 + 0 + 2 * 0.5) / 6)


def pandas_ncp(
    orig: pd.DataFrame,
    rel: pd.DataFrame,
    numeric: list[str],
    categorical: list[str],
) -> float:
    """Total NCP from the release table and the input alone, in pandas."""
    n, d = len(orig), len(numeric) + len(categorical)
    total = (n - len(rel)) * d
    for c in numeric:
        span = orig[c].max() - orig[c].min()
        lo, hi = rel[f"{c}_min"].astype(float), rel[f"{c}_max"].astype(float)
        cost = np.where(
            rel[f"{c}_min"].isna(),
            0.0,
            np.where(rel[f"{c}_has_null"].astype(bool), 1.0, (hi - lo) / span if span > 0 else 0.0),
        )
        total += float(cost.sum())
    for c in categorical:
        card = orig[c].nunique(dropna=True) + int(orig[c].isna().any())
        sizes = rel[c].map(len)
        total += float(np.where(sizes > 1, sizes / card, 0.0).sum())
    return total / (n * d)


@pytest.mark.parametrize("seed", range(6))
def test_sql_ncp_equals_the_numpy_twin_and_pandas(con, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(12, 80))
    k = int(rng.integers(2, 7))
    df = pd.DataFrame(
        {
            "age": pd.Series(
                [None if rng.random() < 0.1 else int(v) for v in rng.integers(0, 90, n)], dtype=object
            ),
            "score": rng.normal(0, 3, n).round(1),
            "sex": pd.Series(rng.choice(["F", "M"], n), dtype=object),
            "city": pd.Series(
                [
                    None if rng.random() < 0.15 else str(v)
                    for v in rng.choice(["Oslo", "Rome", "Lima", "Pune", "Kobe"], n)
                ],
                dtype=object,
            ),
            "dis": pd.Series(rng.choice(["flu", "cold", "hiv"], n), dtype=object),
        }
    )
    make_table(
        con,
        "t",
        df,
        {"age": "INTEGER", "score": "DOUBLE", "sex": "VARCHAR", "city": "VARCHAR", "dis": "VARCHAR"},
    )
    leftover = ["nearest", "last", "suppress"][seed % 3]
    seen = []
    real = pipeline.run_clustering

    def spy(data, *args, **kwargs):
        run = real(data, *args, **kwargs)
        seen.append((data, run.labels))
        return run

    with mock.patch.object(pipeline, "run_clustering", spy):
        result = sbc_sql.anonymize(
            con, "t", k, qi=["age", "score", "sex", "city"], sensitive=["dis"], leftover=leftover
        )
    ((data, labels),) = seen
    m = result.measures
    assert m is not None
    assert m.total_ncp == pytest.approx(total_ncp(data, labels), abs=1e-12)
    rel = frame(con, f"SELECT * FROM t_k{k}")
    orig = con.execute("SELECT * FROM t").df()
    assert m.total_ncp == pytest.approx(pandas_ncp(orig, rel, ["age", "score"], ["sex", "city"]), abs=1e-12)
    assert 0.0 < m.total_ncp < 1.0


def test_measure_of_a_release_without_generalized_columns_is_refused(con):
    con.execute("CREATE TABLE o AS SELECT 1 AS x, 'a' AS g")
    con.execute("CREATE TABLE r AS SELECT 0 AS eq_class, 'a' AS g")
    with pytest.raises(sbc_sql.SbcError, match="has no generalized column of 'o'"):
        sbc_sql.measure(con, "o", "r")


def test_weights_given_to_anonymize_weight_the_total(con):
    con.execute("CREATE TABLE t (age INTEGER, sex VARCHAR, city VARCHAR, dis VARCHAR)")
    con.execute(
        "INSERT INTO t SELECT (i * 37) % 90, ['F', 'M'][1 + i % 2], "
        "['Oslo', 'Rome', 'Lima'][1 + (i * 7) % 3], 'flu' FROM range(30) AS r(i)"
    )
    seen = []
    real = pipeline.run_clustering

    def spy(data, *args, **kwargs):
        run = real(data, *args, **kwargs)
        seen.append((data, run.labels))
        return run

    with mock.patch.object(pipeline, "run_clustering", spy):
        result = sbc_sql.anonymize(
            con, "t", 4, qi=["age", "sex", "city"], sensitive=["dis"], weights="age=2,sex=0"
        )
    m = result.measures
    assert m is not None
    assert m.total_ncp == pytest.approx((2 * m.ncp["age"] + m.ncp["city"]) / 3, abs=1e-12)
    ((data, labels),) = seen
    # only the ratios matter: the weights reach the clustering scaled so the largest is 1
    assert data.weights == (1.0, 0.0, 0.5)
    assert m.total_ncp == pytest.approx(total_ncp(data, labels), abs=1e-12)
    # measure takes the run's weights from the release's provenance; weights given win
    assert sbc_sql.measure(con, "t", "t_k4").total_ncp == pytest.approx(m.total_ncp, abs=1e-12)
    unweighted = sbc_sql.measure(con, "t", "t_k4", weights={"age": 1, "sex": 1, "city": 1})
    assert unweighted.total_ncp != pytest.approx(m.total_ncp)
    assert unweighted.ncp == pytest.approx(m.ncp, abs=1e-12)


def test_the_runs_measures_equal_a_measure_from_scratch():
    # anonymize measures its class table with the input's ranges and cardinalities from the
    # statistics stage; measure() aggregates them again over the input and the release view
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE t AS SELECT i AS id, (i * 7) % 50 AS age, "
        "DATE '2020-01-01' + INTERVAL (i % 40) DAY AS seen, "
        "TIMESTAMP '2021-01-01' + INTERVAL (i * 13 % 97) HOUR AS at, "
        "CAST(NULL AS INTEGER) AS empty, "
        "CASE WHEN i % 9 = 0 THEN NULL ELSE 'z' || (i % 6) END AS zip, "
        "'d' || (i % 4) AS dis FROM range(120) AS r(i)"
    )
    result = sbc_sql.anonymize(
        con, "t", 4, qi=["age", "seen", "at", "empty", "zip"], sensitive=["dis"], drop=["id"]
    )
    again = sbc_sql.measure(con, "t", "t_k4")
    assert result.measures is not None
    assert result.measures.ncp == pytest.approx(again.ncp, rel=1e-12, abs=1e-15)
    assert result.measures.total_ncp == pytest.approx(again.total_ncp, rel=1e-12)
    assert (result.measures.released, result.measures.classes) == (again.released, again.classes)
