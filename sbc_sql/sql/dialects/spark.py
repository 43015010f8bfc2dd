"""Spark's dialect with the project's nodes and fixes (see :mod:`sbc_sql.sql.dialects`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from sqlglot import exp
from sqlglot.dialects.spark import Spark as _Spark
from sqlglot.generator import Generator

from . import ListHasNull, SameKey, ValueSet, null_safe_same_key


def _spark_has_null(self: Generator, e: ListHasNull) -> str:
    return f"EXISTS({self.sql(e, 'this')}, sbc_v -> sbc_v IS NULL)"


def _spark_value_set(self: Generator, e: ValueSet) -> str:
    # COLLECT_SET drops NULLs and keeps no order: the sorted set, plus one NULL when any
    # value was NULL
    values = self.sql(e, "this")
    sorted_set = f"ARRAY_SORT(COLLECT_SET({values}))"
    return f"CASE WHEN COUNT(*) > COUNT({values}) THEN ARRAY_APPEND({sorted_set}, NULL) ELSE {sorted_set} END"


def _spark_array_distinct(self: Generator, e: exp.ArrayDistinct) -> str:
    # the distinct values without NULL, as DuckDB's LIST_DISTINCT gives them (ARRAY_DISTINCT
    # keeps one NULL; a caller that keeps NULL appends it once)
    return f"FILTER(ARRAY_DISTINCT({self.sql(e, 'this')}), sbc_v -> sbc_v IS NOT NULL)"


def _spark_array_agg(self: Generator, e: exp.ArrayAgg) -> str:
    # COLLECT_LIST drops NULLs and keeps no order: an ordered list has no Spark form here
    # (a sorted value set is the ValueSet node)
    arg = e.this
    if isinstance(arg, exp.Order):
        self.unsupported("an ordered list aggregate")
    return self.func("COLLECT_LIST", arg)


def _spark_cte(self: Generator, e: exp.CTE) -> str:
    # Spark has no MATERIALIZED hint on a common table expression
    if e.args.get("materialized") is not None:
        e = e.copy()
        e.set("materialized", None)
    return _Spark.Generator.cte_sql(self, e)


def _spark_window(self: Generator, e: exp.Window) -> str:
    # Spark numbers rows only in an order (ROW_NUMBER() OVER () is WINDOW_FUNCTION_FRAME_NOT_
    # ORDERED); a number per group of a GROUP BY (a tuple's id) is ordered by the group's keys,
    # which are distinct, so the numbers are too, and the same on every run
    if isinstance(e.this, exp.RowNumber) and not e.args.get("partition_by") and not e.args.get("order"):
        select = e.find_ancestor(exp.Select)
        group = select.args.get("group") if select is not None else None
        keys = list(group.expressions) if group is not None else []
        if not keys:
            self.unsupported("ROW_NUMBER() without an order, outside a GROUP BY")
        else:
            e = e.copy()
            e.set(
                "order", exp.Order(expressions=[exp.Ordered(this=k.copy(), nulls_first=True) for k in keys])
            )
    return str(self.window_sql(e))


# The Generator class below ignores mypy's misc and valid-type: recent sqlglot assigns each
# dialect's Generator as a class attribute (Generator = SparkGenerator), which mypy does not
# take as a base class; importing the generator modules instead would lose sqlglot < 30.
class SbcSpark(_Spark):
    class Generator(_Spark.Generator):  # type: ignore[misc,valid-type]
        TRANSFORMS: ClassVar[dict[type[exp.Expr], Callable[..., str]]] = {
            **_Spark.Generator.TRANSFORMS,
            SameKey: null_safe_same_key,
            ListHasNull: _spark_has_null,
            ValueSet: _spark_value_set,
            exp.ArrayAgg: _spark_array_agg,
            exp.ArrayDistinct: _spark_array_distinct,
            exp.CTE: _spark_cte,
            exp.Window: _spark_window,
        }
