"""The write stage's class table: each categorical QI's value set as the release defines it
(sorted distinct values, NULL last) in either of DuckDB's forms, and, beyond a few QIs, in
one grouping pass however many QIs there are."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from helpers import q

from sbc_sql import engines
from sbc_sql import plan as spec
from sbc_sql.cluster.decode import encode as stats_encode
from sbc_sql.cluster.model import QIData
from sbc_sql.sql.dialects import DISTINCT_VALUE_SETS
from sbc_sql.stages import write as generalize

ROWS = 60


def wide(con: duckdb.DuckDBPyConnection, qis: int) -> tuple[spec.Plan, str]:
    """A table of one numeric and ``qis`` categorical QIs (an ENUM, a BOOLEAN, VARCHARs, each
    with duplicates and NULLs in some classes), labelled in classes of 6; the plan (for
    Mondrian: the default caps categorical QIs at 64) and the class table's CREATE
    statement as the DuckDB engine runs it."""
    con.execute("CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')")
    cats = [
        "CASE WHEN i % 7 = 0 THEN NULL ELSE (['happy', 'sad', 'ok'][i % 3 + 1])::mood END AS c0",
        "CASE WHEN i % 11 = 0 THEN NULL ELSE i % 4 = 0 END AS c1",
    ] + [
        f"CASE WHEN (i + {j}) % 9 = 0 THEN NULL ELSE 'v' || ((i * {j + 3}) % {j + 2}) END AS c{j}"
        for j in range(2, qis)
    ]
    con.execute(f"CREATE TABLE t AS SELECT i % 40 AS age, {', '.join(cats[:qis])} FROM range({ROWS}) r(i)")
    engine = engines.connect(con)
    plan = spec.make_plan(engine.open_source("t"), spec.Options(k=2, algorithm="mondrian"))
    row_id = con.execute("SELECT rowid FROM t").fetchnumpy()["rowid"]
    con.register("labs", pa.table({"row_id": row_id, "eq_class": np.arange(ROWS) // 6}))
    return plan, engine.sql(generalize.create_classes_sql(plan, "cls", "labs", engine.row_id("s")))


def operators(con: duckdb.DuckDBPyConnection, statement: str) -> list[str]:
    """The names of the operators of the statement's physical plan."""
    (_, text), *_ = con.execute("EXPLAIN (FORMAT JSON) " + statement).fetchall()
    names: list[str] = []
    todo = json.loads(text)
    while todo:
        node = todo.pop()
        names.append(node["name"])
        todo.extend(node.get("children", []))
    return names


# both of DuckDB's forms: DISTINCT aggregates up to DISTINCT_VALUE_SETS, one pass beyond
WIDTHS = [1, 2, DISTINCT_VALUE_SETS, DISTINCT_VALUE_SETS + 1, 2 * DISTINCT_VALUE_SETS]


@pytest.mark.parametrize("qis", WIDTHS)
def test_value_sets_are_the_sorted_distinct_values_with_null_last(con, qis) -> None:
    plan, statement = wide(con, qis)
    con.execute(statement)
    cats = [c.name for c in plan.categorical_qis]
    assert len(cats) == qis
    expected = ", ".join(f"LIST(DISTINCT s.{q(c)} ORDER BY s.{q(c)} ASC NULLS LAST) AS {q(c)}" for c in cats)
    want = con.execute(
        f"SELECT l.eq_class, {expected} FROM t AS s JOIN labs AS l ON s.rowid = l.row_id "
        "GROUP BY l.eq_class ORDER BY l.eq_class"
    )
    want_types, want_rows = [str(d[1]) for d in want.description], want.fetchall()
    got = con.execute(f"SELECT eq_class, {', '.join(q(c) for c in cats)} FROM cls")
    assert [str(d[1]) for d in got.description] == want_types
    rows = got.fetchall()
    assert rows == want_rows
    # the cases the value set must get right are all there: a NULL kept last, duplicates
    assert any(v[-1] is None for r in rows for v in r[1:])
    assert any(len(v) < 6 for r in rows for v in r[1:] if None not in v)


@pytest.mark.parametrize("qis", [DISTINCT_VALUE_SETS + 1, 4 * DISTINCT_VALUE_SETS])
def test_many_value_sets_are_one_grouping_of_one_join(con, qis) -> None:
    # DuckDB plans a grouping and a join for each DISTINCT aggregate, which costs time
    # growing with the square of the QIs; beyond a few, the value sets add no operator.
    _, statement = wide(con, qis)
    names = operators(con, statement)
    assert sum("GROUP_BY" in n for n in names) == 1, names
    assert sum("JOIN" in n for n in names) == 1, names


def codes_of(con: duckdb.DuckDBPyConnection, column: str) -> tuple[np.ndarray, pa.Array]:
    """A column's value codes against its sorted non-NULL domain (NULL the last code), as
    the pull makes them, and that domain."""
    domain = con.sql(
        f"SELECT DISTINCT {q(column)} AS v FROM t WHERE v IS NOT NULL ORDER BY v"
    ).to_arrow_table()
    domain = domain.column(0).combine_chunks()
    values = con.sql(f"SELECT {q(column)} FROM t ORDER BY rowid").to_arrow_table().column(0)
    return stats_encode(values, domain), domain


@pytest.mark.parametrize("qis", [2, 5])
def test_value_sets_made_beside_the_clustering_are_the_engines(con, qis) -> None:
    # value_sets makes from the value codes, in this process, what the class table's
    # LIST aggregates make in the engine: the same lists, of the same types, suppressed
    # rows left out; on any other type of categorical the engine aggregates them
    plan, statement = wide(con, qis)
    assert not generalize.sets_beside(plan, True)  # c0 is an ENUM
    con.execute(statement)
    cats = [c for c in plan.categorical_qis if c.name != "c0"]
    plain = spec.make_plan(
        engines.connect(con).open_source("t"),
        spec.Options(k=2, algorithm="mondrian", qi=["age", *(c.name for c in cats)], drop=["c0"]),
    )
    assert generalize.sets_beside(plain, True) and not generalize.sets_beside(plain, False)
    encoded = {c.name: codes_of(con, c.name) for c in cats}
    labels = np.arange(ROWS) // 6
    labels[[0, 7, 8, 59]] = -1  # suppressed rows
    con.register("labs2", pa.table({"row_id": np.arange(ROWS), "eq_class": labels}))
    data = QIData(
        tuple(c.name for c in cats),
        tuple(False for _ in cats),
        tuple(encoded[c.name][0] for c in cats),
        tuple(float("nan") for _ in cats),
        tuple(float("nan") for _ in cats),
        tuple(len(encoded[c.name][1]) + 1 for c in cats),
        tuple(1.0 for _ in cats),
    )
    sets = generalize.value_sets(data, labels, {c.name: encoded[c.name][1] for c in cats}, plain)
    con.register("sets", sets)
    engine = engines.connect(con)
    for name, uploaded in (("by_sql", None), ("beside", "sets")):
        con.execute(
            engine.sql(
                generalize.create_classes_sql(
                    plain, name, "labs2", engine.row_id("s"), sets=uploaded, list_type=engine.list_type
                )
            )
        )
    got = {}
    for name in ("by_sql", "beside"):
        result = con.execute(f"SELECT * FROM {name} ORDER BY eq_class")
        got[name] = ([str(d[1]) for d in result.description], result.fetchall())
    assert got["beside"] == got["by_sql"]
    assert con.execute("SELECT COUNT(*) FROM beside").fetchone() == (ROWS // 6,)
    assert any(
        None in v for r in con.execute("SELECT * FROM beside").fetchall() for v in r if isinstance(v, list)
    )
