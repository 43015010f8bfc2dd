"""Duplicate-aware clustering: the default clusters distinct QI tuples, each standing for its
rows (QIData.multiplicity), and the rows take their tuple's class by a join in the engine.

The kernels are held to an independent check of every class (the rows it stands for, the
tuples kept whole); the pipeline to the rows of the release (every row of a tuple in one
class, every class of k rows or more, every row released), and to the run's statements (a
GROUP BY of the tuples, no row pulled, nothing left behind)."""

from __future__ import annotations

import dataclasses
import re

import duckdb
import numpy as np
import pandas as pd
import pytest
import sqlglot
from helpers import connected, load_example, make_table

import sbc_sql
from sbc_sql.cluster.model import QIData
from sbc_sql.cluster.registry import run_clustering
from sbc_sql.cluster.sbca_plus.algorithm import sbca_plus

ADULT_QIS = ["age", "workclass", "education", "marital_status", "occupation", "race", "sex", "native_country"]


def tuple_data(n: int, seed: int, top: int = 30) -> QIData:
    """Distinct tuples of two numeric and two categorical QIs, each standing for 1 .. top rows."""
    rng = np.random.default_rng(seed)
    age = rng.integers(17, 90, n).astype(np.float64)
    hours = rng.integers(1, 60, n).astype(np.float64)
    hours[rng.random(n) < 0.05] = np.nan
    sex = rng.integers(0, 3, n).astype(np.int32)
    job = rng.integers(0, 12, n).astype(np.int32)
    count = np.minimum(rng.geometric(0.25, n), top).astype(np.int64)
    return QIData(
        names=("age", "hours", "sex", "job"),
        numeric=(True, True, False, False),
        columns=(age, hours, sex, job),
        lo=(17.0, 1.0, float("nan"), float("nan")),
        hi=(89.0, 59.0, float("nan"), float("nan")),
        cardinality=(0, 0, 3, 12),
        weights=(1.0, 1.0, 1.0, 1.0),
        multiplicity=count,
    )


def expanded(data: QIData) -> QIData:
    """The same data with every tuple repeated as many times as the rows it stands for."""
    assert data.multiplicity is not None
    rows = np.repeat(np.arange(data.n_rows), data.multiplicity)
    return dataclasses.replace(data.take(rows), position=np.arange(len(rows)), multiplicity=None)


def pulled_rows(result: sbc_sql.Result) -> bool:
    """Whether the run pulled the source's rows: the pull converts the QIs as q_0 ..., and
    reads each tuple's row count (sbc_count) where it pulls the distinct tuples instead."""
    return any(
        re.search(r"\bAS [`\"]?q_0\b", sql) is not None and "sbc_count" not in sql
        for sql in result.statements
    )


def run(database, *args, **kwargs) -> sbc_sql.Result:
    """A run whose connection (if it opened one) is closed again, and its working views with it."""
    with sbc_sql.anonymize(database, *args, **kwargs) as result:
        return result


#: the engines that cluster no tuples, for the tests of how a run uses them
TUPLES = pytest.mark.notimpl(
    ["postgres", "spark"],
    reason="only an engine that joins rows to their QI tuple as a hash join clusters tuples "
    "(Capabilities.tuples)",
)


def total_ncp(data: QIData, labels: np.ndarray) -> float:
    """Total NCP of the rows the labels' classes stand for, computed here from the arrays."""
    weight = data.weights_of_rows()
    loss = 0.0
    for c in np.unique(labels[labels >= 0]):
        members = labels == c
        s = 0.0
        for q in range(data.n_qis):
            col = data.columns[q][members]
            if data.numeric[q]:
                nulls = np.isnan(col)
                if nulls.all():
                    continue
                s += 1.0 if nulls.any() else (col.max() - col.min()) / data.span(q)
            else:
                d = len(np.unique(col))
                s += d / data.cardinality[q] if d > 1 else 0.0
        loss += weight[members].sum() * s
    return loss / (data.n_represented * data.n_qis)


@pytest.mark.parametrize("k", [2, 5, 10, 40])
@pytest.mark.parametrize("seed", [1, 2])
def test_every_class_stands_for_k_rows_and_heavy_tuples_stand_alone(k: int, seed: int) -> None:
    data = tuple_data(1500, seed)
    labels = sbca_plus(data, k)
    weight = data.weights_of_rows()
    assert (labels >= 0).all()
    sizes = np.bincount(labels, weights=weight)
    assert sizes.min() >= k
    # a tuple of k rows or more starts as a class of its own, at no loss for its rows (the
    # leftovers and the refinement may then join others to it where that costs less)
    greedy = sbca_plus(data, k, refine=False, leftover="suppress")
    heavy = np.flatnonzero(weight >= k)
    assert (np.bincount(greedy[greedy >= 0])[greedy[heavy]] == 1).all()


def test_ones_give_the_labels_of_rows() -> None:
    """Multiplicities of 1 are rows: the same labels as without multiplicities."""
    data = tuple_data(800, 3)
    ones = dataclasses.replace(data, multiplicity=np.ones(data.n_rows, dtype=np.int64))
    plain = dataclasses.replace(data, multiplicity=None)
    for k in (2, 7):
        assert np.array_equal(sbca_plus(ones, k), sbca_plus(plain, k))


@pytest.mark.parametrize("k", [5, 20])
def test_tuples_lose_no_more_than_their_rows(k: int) -> None:
    """Clustering the tuples costs no more information than clustering the rows they stand
    for, on data heavy in duplicates (and far less time)."""
    data = tuple_data(1200, 4)
    by_tuples = total_ncp(data, run_clustering(data, k).labels)
    rows = expanded(data)
    by_rows = total_ncp(rows, run_clustering(rows, k).labels)
    assert by_tuples <= by_rows


def test_the_blocks_keep_tuples_whole() -> None:
    data = tuple_data(6000, 5)
    run = run_clustering(data, 10, mode="blocks", block_rows=1536)
    assert run.mode == "blocks"
    sizes = np.bincount(run.labels, weights=data.weights_of_rows())
    assert (run.labels >= 0).all() and sizes.min() >= 10


@TUPLES
def test_a_release_of_tuples_is_complete_and_leaves_nothing_behind(engine) -> None:
    rng = np.random.default_rng(7)
    n = 4000
    df = pd.DataFrame(
        {
            "age": rng.integers(20, 30, n),
            "sex": rng.choice(["F", "M", None], n),
            "zip": rng.choice([f"z{i}" for i in range(15)], n),
            "dx": rng.choice(["a", "b", "c"], n),
        }
    )
    con = engine.frame(df, {"age": "INTEGER"})
    with sbc_sql.anonymize(con, "t", 5, qi="age,sex,zip", keep="dx", output="rel") as result:
        assert result.verdict is not None and result.verdict.ok
    assert "sbc_tuples_" in "\n".join(result.statements)
    assert not pulled_rows(result)
    with connected(con) as eng:
        release = eng.fetch_arrow(sqlglot.parse_one("SELECT * FROM rel")).to_pandas()
    assert len(release) == n
    assert release.groupby("eq_class").size().min() >= 5
    # the released verbatim values are the source's, row for row
    assert sorted(release["dx"]) == sorted(df["dx"])
    # nothing of the run is left behind
    assert [name for _, name in engine.catalog(con) if name.startswith("sbc_")] == []


def test_rows_are_pulled_when_criteria_are_asked_or_tuples_are_off(engine) -> None:
    rng = np.random.default_rng(8)
    n = 3000
    df = pd.DataFrame(
        {"age": rng.integers(20, 25, n), "sex": rng.choice(["F", "M"], n), "dx": rng.choice(["a", "b"], n)}
    )
    con = engine.frame(df, {"age": "INTEGER"})
    with_l = run(con, "t", 5, qi="age,sex", sensitive="dx", l_diversity=2, output="r1")
    off = run(con, "t", 5, qi="age,sex", keep="dx", output="r2", tuples=False)
    for result in (with_l, off):
        assert result.verdict is not None and result.verdict.ok
        assert "sbc_tuples_" not in "\n".join(result.statements) and pulled_rows(result)
    assert [name for _, name in engine.catalog(con) if name.startswith("sbc_")] == []


@TUPLES
def test_a_table_of_nearly_distinct_tuples_is_estimated_then_its_rows_pulled(engine) -> None:
    con = engine.frame(pd.DataFrame({"x": np.arange(500), "y": np.arange(500) % 7}), {"x": "INTEGER"})
    distinct = run(con, "t", 5, qi="x,y", output="r")
    assert distinct.verdict is not None and distinct.verdict.ok
    text = "\n".join(distinct.statements)
    assert "APPROX_COUNT_DISTINCT" in text and "sbc_tuples_" not in text and pulled_rows(distinct)
    assert [name for _, name in engine.catalog(con) if name.startswith("sbc_")] == []


@TUPLES
def test_a_dry_run_shows_the_tuples_statements(engine) -> None:
    con = engine.frame(pd.DataFrame({"age": [30, 30, 31, 31, 32] * 4, "sex": ["F", "M"] * 10}))
    result = run(con, "t", 2, qi="age,sex", output="r", sql_only=True)
    text = "\n".join(result.statements)
    assert "CREATE TEMPORARY TABLE" in text and "GROUP BY" in text and "IS NOT DISTINCT FROM" in text
    assert engine.catalog(con) == [("table", "t")]


@TUPLES
@pytest.mark.parametrize("k", [10, 50])
def test_adult_loses_no_more_by_tuples(engine, k: int) -> None:
    """On Adult (18,109 distinct tuples of 30,162 rows) clustering tuples loses less than
    clustering rows (the utility benchmark measures every k)."""
    database = engine.fresh()
    with engine.building(database) as con:
        assert (
            load_example("benchmarks/datasets.py").load_adult(con, "adult", columns=[*ADULT_QIS, "income"])
            == 30162
        )
    ncp = {}
    for tuples in (True, False):
        result = run(
            database, "adult", k, qi=ADULT_QIS, keep="income", output=f"a{int(tuples)}", tuples=tuples
        )
        assert result.verdict is not None and result.verdict.ok and result.measures is not None
        ncp[tuples] = result.measures.total_ncp
    assert ncp[True] <= ncp[False]


def test_the_command_line_says_how_many_tuples_and_rows_turns_it_off(tmp_path, cli) -> None:
    import json

    db = tmp_path / "d.duckdb"
    with duckdb.connect(str(db)) as con:
        make_table(con, "t", pd.DataFrame({"age": [30, 31, 32, 33] * 50, "sex": ["F", "M"] * 100}))
    base = ["anonymize", "--db", str(db), "--table", "t", "--k", "5", "--qi", "age,sex", "--json"]
    by_tuples = cli([*base, "--output", "a"])
    assert by_tuples.exit_code == 0, by_tuples.stderr
    doc = json.loads(by_tuples.stdout)
    assert doc["ok"] and doc["tuples"] == 4 and doc["rows"] == 200 and doc["smallest_class"] >= 5
    by_rows = cli([*base, "--output", "b", "--rows"])
    assert by_rows.exit_code == 0, by_rows.stderr
    assert json.loads(by_rows.stdout)["tuples"] is None
    told = cli([*base[:-1], "--output", "c"])
    assert "; 4 distinct QI tuples standing for 200 rows" in told.stderr
