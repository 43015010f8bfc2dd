"""The write stage's class table, on every engine: each categorical QI's value set as the
release defines it (its sorted distinct values in the engine's own order, NULL last) in
either of DuckDB's forms, and, beyond a few QIs, in one grouping of one join however many
QIs there are."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from helpers import EngineUnderTest, connected
from sqlglot import exp

from sbc_sql import engines
from sbc_sql import plan as spec
from sbc_sql.cluster.decode import encode as stats_encode
from sbc_sql.cluster.model import QIData
from sbc_sql.engines.base import Engine
from sbc_sql.sql.dialects import DISTINCT_VALUE_SETS
from sbc_sql.sql.nodes import ref
from sbc_sql.sql.templates import ident
from sbc_sql.stages import write as generalize

ROWS = 60


def wide_table(qis: int) -> list[str]:
    """DuckDB's statements for a table of one numeric and ``qis`` categorical QIs (an ENUM,
    a BOOLEAN, VARCHARs, each with duplicates and NULLs in some classes of 6 rows in the
    table's order; another engine takes the ENUM as text)."""
    cats = [
        "CASE WHEN i % 7 = 0 THEN NULL ELSE (['happy', 'sad', 'ok'][i % 3 + 1])::mood END AS c0",
        "CASE WHEN i % 11 = 0 THEN NULL ELSE i % 4 = 0 END AS c1",
    ] + [
        f"CASE WHEN (i + {j}) % 9 = 0 THEN NULL ELSE 'v' || ((i * {j + 3}) % {j + 2}) END AS c{j}"
        for j in range(2, qis)
    ]
    return [
        "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')",
        f"CREATE TABLE t AS SELECT i % 40 AS age, {', '.join(cats[:qis])} FROM range({ROWS}) r(i)",
    ]


def source_of(plan: spec.Plan) -> exp.Table:
    """The source as the engine opened it, aliased s (the alias its row id names)."""
    return exp.Table(this=ident(plan.source.name), alias=exp.TableAlias(this=exp.to_identifier("s")))


def in_order(engine: Engine, plan: spec.Plan, *columns: exp.Expression) -> exp.Select:
    """A query of the source's rows in the table's order (its row ids')."""
    return exp.select(*columns).from_(source_of(plan)).order_by(engine.row_id("s"))


@dataclass
class Wide:
    """The wide table open on an engine: the engine, the plan (Mondrian: the default caps
    categorical QIs at 64), the source's row ids in the table's order, and the class
    table's CREATE statement for the uploaded labels 'labs' (classes of 6 rows, in that
    order)."""

    engine: Engine
    plan: spec.Plan
    row_ids: list[int]
    statement: exp.Expression

    def in_order(self, *columns: exp.Expression) -> exp.Select:
        return in_order(self.engine, self.plan, *columns)

    def fetch(self, query: exp.Expression) -> pa.Table:
        return self.engine.fetch_arrow(query)


@contextlib.contextmanager
def wide(engine: EngineUnderTest, qis: int) -> Iterator[Wide]:
    """The wide table of ``qis`` categorical QIs on the engine, its labels uploaded; the
    engine stays open for the test (Spark's source view lives as long as it does)."""
    with connected(engine.built(*wide_table(qis))) as eng:
        plan = spec.make_plan(eng.open_source("t"), spec.Options(k=2, algorithm="mondrian"))
        row_id = eng.row_id("s")
        row_ids = [r[0] for r in eng.fetch_all(in_order(eng, plan, row_id))]
        labels = pa.table({"row_id": pa.array(row_ids, pa.int64()), "eq_class": np.arange(ROWS) // 6})
        with eng.upload("labs", labels):
            yield Wide(eng, plan, row_ids, generalize.create_classes_sql(plan, "cls", "labs", row_id))


def ranked(opened: Wide, names: list[str]) -> dict[int, list[list[Any]]]:
    """Each class's value sets as the engine orders the values, computed without the class
    table: every row's values with their dense rank in the column (NULL ranked last), in
    one query, and each class's distinct values sorted by rank here."""
    columns: list[exp.Expression] = []
    for i, name in enumerate(names):
        order = exp.Order(expressions=[exp.Ordered(this=ref(name, "s"), nulls_first=False)])
        rank = exp.Window(this=exp.DenseRank(), order=order)
        columns += [ref(name, "s"), exp.alias_(rank, f"sbc_test_rank_{i}")]
    rows = opened.fetch(opened.in_order(*columns)).to_pylist()
    sets: dict[int, list[list[Any]]] = {}
    for position, row in enumerate(rows):
        sets.setdefault(position // 6, [{} for _ in names])
        for i, name in enumerate(names):
            sets[position // 6][i][row[f"sbc_test_rank_{i}"]] = row[name]
    return {c: [[v for _, v in sorted(found.items())] for found in per] for c, per in sets.items()}


# both of DuckDB's forms: DISTINCT aggregates up to DISTINCT_VALUE_SETS, one pass beyond
WIDTHS = [1, 2, DISTINCT_VALUE_SETS, DISTINCT_VALUE_SETS + 1, 2 * DISTINCT_VALUE_SETS]


@pytest.mark.parametrize("qis", WIDTHS)
def test_value_sets_are_the_sorted_distinct_values_with_null_last(engine, qis) -> None:
    with wide(engine, qis) as opened:
        opened.engine.execute(opened.statement)
        cats = [c.name for c in opened.plan.categorical_qis]
        assert len(cats) == qis
        got = opened.fetch(exp.select("eq_class", *(ref(c) for c in cats)).from_("cls").order_by("eq_class"))
        # each set is a list of its column's own type (the ENUM's, on DuckDB)
        source = opened.fetch(opened.in_order(*(ref(c, "s") for c in cats)).limit(0)).schema
        assert [got.schema.field(c).type.value_type for c in cats] == [source.field(c).type for c in cats]
        want = ranked(opened, cats)
        rows = [(r["eq_class"], [r[c] for c in cats]) for r in got.to_pylist()]
        assert rows == sorted(want.items())
    # the cases the value set must get right are all there: a NULL kept last, duplicates
    assert any(v[-1] is None for _, sets in rows for v in sets)
    assert any(len(v) < 6 for _, sets in rows for v in sets if None not in v)


@pytest.mark.parametrize("qis", [DISTINCT_VALUE_SETS + 1, 4 * DISTINCT_VALUE_SETS])
def test_many_value_sets_are_one_grouping_of_one_join(engine, qis) -> None:
    # DuckDB plans a grouping and a join for each DISTINCT aggregate, which costs time
    # growing with the square of the QIs (and Spark would expand the rows once for each);
    # beyond a few, the value sets add no operator on any engine.
    with wide(engine, qis) as opened:
        names = engine.operators(opened.engine, opened.statement.expression)
    assert names.count("grouping") == 1, names
    assert names.count("join") == 1, names


def codes_of(opened: Wide, column: str) -> tuple[np.ndarray, pa.Array]:
    """A column's value codes against its sorted non-NULL domain (NULL the last code), as
    the pull makes them, in the table's order, and that domain."""
    value = ref(column, "s")
    domain = opened.fetch(
        exp.select(value)
        .distinct()
        .from_(source_of(opened.plan))
        .where(value.is_(exp.null()).not_())
        .order_by(value)
    )
    values = opened.fetch(opened.in_order(value)).column(0)
    return stats_encode(values, domain.column(0).combine_chunks()), domain.column(0).combine_chunks()


@pytest.mark.notimpl(
    ["postgres"],
    reason="PostgreSQL's driver uploads no dictionary-encoded BOOLEAN (a BOOLEAN QI's value set "
    "as codes); the engine aggregates its value sets in SQL (Capabilities.value_sets)",
)
@pytest.mark.parametrize("qis", [2, 5])
def test_value_sets_made_beside_the_clustering_are_the_engines(engine, qis) -> None:
    # value_sets makes from the value codes, in this process, what the class table's
    # LIST aggregates make in the engine: the same lists, of the same types, suppressed
    # rows left out
    with wide(engine, qis) as opened:
        eng = opened.engine
        cats = [c for c in opened.plan.categorical_qis if c.name != "c0"]
        plain = spec.make_plan(
            opened.plan.source,
            spec.Options(k=2, algorithm="mondrian", qi=["age", *(c.name for c in cats)], drop=["c0"]),
        )
        assert generalize.sets_beside(plain, True) and not generalize.sets_beside(plain, False)
        encoded = {c.name: codes_of(opened, c.name) for c in cats}
        labels = np.arange(ROWS) // 6
        labels[[0, 7, 8, 59]] = -1  # suppressed rows
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
        row_id = eng.row_id("s")
        with (
            eng.upload(
                "labs2", pa.table({"row_id": pa.array(opened.row_ids, pa.int64()), "eq_class": labels})
            ),
            eng.upload("sets", sets),
        ):
            for name, uploaded in (("by_sql", None), ("beside", "sets")):
                eng.execute(
                    generalize.create_classes_sql(
                        plain, name, "labs2", row_id, sets=uploaded, list_type=eng.list_type
                    )
                )
            got = {
                name: opened.fetch(exp.select("*").from_(name).order_by("eq_class"))
                for name in ("by_sql", "beside")
            }
    assert [(f.name, f.type) for f in got["beside"].schema] == [
        (f.name, f.type) for f in got["by_sql"].schema
    ]
    assert got["beside"].to_pylist() == got["by_sql"].to_pylist()
    assert got["beside"].num_rows == ROWS // 6
    assert any(None in v for r in got["beside"].to_pylist() for v in r.values() if isinstance(v, list))


def test_an_enums_value_sets_are_aggregated_by_the_engine(con) -> None:
    # an ENUM's values would come back from an upload as text, so its sets are made by the
    # class table's statement; on any other type of categorical they may be made beside the
    # clustering (DuckDB's ENUM: a copy of the table into another engine takes it as text)
    for statement in wide_table(3):
        con.execute(statement)
    plan = spec.make_plan(engines.connect(con).open_source("t"), spec.Options(k=2, algorithm="mondrian"))
    assert [c.type for c in plan.categorical_qis] == ["ENUM", "BOOLEAN", "VARCHAR"]
    assert not generalize.sets_beside(plan, True)
    plain = spec.make_plan(plan.source, spec.Options(k=2, algorithm="mondrian", drop=["c0"]))
    assert generalize.sets_beside(plain, True) and not generalize.sets_beside(plain, False)
