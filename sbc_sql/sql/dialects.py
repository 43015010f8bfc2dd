"""The SQL dialects sbc-sql renders its trees in: sqlglot's, with the project's own nodes and
the fixes where sqlglot's output would be wrong for the project's SQL.

Templates are written in DuckDB's SQL (the embedded default) in a portable subset, parsed
once, and rendered per engine. sqlglot almost never raises while transpiling; where it gets
the meaning wrong it does so silently, so every node here says what it must mean and each
dialect renders it so. A function that sqlglot does not know would stay an ``Anonymous``
node and pass through untranslated: the stages build none (a test checks every statement
of a run). The classes are named Sbc* because sqlglot registers every dialect class by its
name, and ours must not replace its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from sqlglot import exp
from sqlglot.dialects.duckdb import DuckDB as _DuckDB
from sqlglot.dialects.postgres import Postgres as _Postgres
from sqlglot.dialects.spark import Spark as _Spark
from sqlglot.generator import Generator


class ListHasNull(exp.Expression, exp.Func):
    """TRUE when the list holds a NULL element (a value set that contains NULL)."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True}


def _duckdb_has_null(self: Generator, e: ListHasNull) -> str:
    values = self.sql(e, "this")
    return f"LEN({values}) > LIST_COUNT({values})"


def _postgres_has_null(self: Generator, e: ListHasNull) -> str:
    # array_position compares with IS NOT DISTINCT FROM, so it finds a NULL element
    return f"ARRAY_POSITION({self.sql(e, 'this')}, NULL) IS NOT NULL"


def _spark_has_null(self: Generator, e: ListHasNull) -> str:
    return f"EXISTS({self.sql(e, 'this')}, sbc_v -> sbc_v IS NULL)"


def _postgres_unix_micros(self: Generator, e: exp.UnixMicros) -> str:
    # EXTRACT is exact (numeric) from PostgreSQL 14; sqlglot's UNIX_MICROS does not exist there
    return f"CAST(EXTRACT(EPOCH FROM {self.sql(e, 'this')}) * 1000000 AS BIGINT)"


def _postgres_array_size(self: Generator, e: exp.ArraySize) -> str:
    # ARRAY_LENGTH(x, 1) is NULL for an empty array; CARDINALITY counts its elements
    return f"CARDINALITY({self.sql(e, 'this')})"


def _postgres_array_sort(self: Generator, e: exp.ArraySort) -> str:
    # ARRAY_SORT arrives only in PostgreSQL 18: sort inside the aggregate instead
    # (ARRAY_SORT(ARRAY_AGG([DISTINCT] x) [FILTER (...)]) -> ARRAY_AGG([DISTINCT] x ORDER BY x))
    inner = e.this
    agg = inner.this if isinstance(inner, exp.Filter) else inner
    if isinstance(agg, exp.ArrayAgg) and not e.expression and not isinstance(agg.this, exp.Order):
        arg = agg.this
        key = arg.expressions[0] if isinstance(arg, exp.Distinct) else arg
        ordered = exp.Order(this=arg.copy(), expressions=[exp.Ordered(this=key.copy(), nulls_first=False)])
        sorted_agg = agg.copy()
        sorted_agg.set("this", ordered)
        if isinstance(inner, exp.Filter):
            return self.sql(exp.Filter(this=sorted_agg, expression=inner.expression.copy()))
        return self.sql(sorted_agg)
    return self.func("ARRAY_SORT", e.this, e.expression)


def _postgres_transform(self: Generator, e: exp.Transform) -> str:
    # a lambda over a list's elements, in order: PostgreSQL has no TRANSFORM
    fn = e.expression
    if not isinstance(fn, exp.Lambda) or len(fn.expressions) != 1:
        self.unsupported("TRANSFORM needs a one-argument lambda")
        return self.func("TRANSFORM", e.this, fn)
    var = self.sql(fn.expressions[0])
    return (
        f"ARRAY(SELECT {self.sql(fn, 'this')} FROM UNNEST({self.sql(e, 'this')}) "
        f"WITH ORDINALITY AS sbc_u({var}, sbc_n) ORDER BY sbc_n)"
    )


def _spark_array_agg(self: Generator, e: exp.ArrayAgg) -> str:
    # COLLECT_LIST drops NULLs and keeps no order: a sorted distinct list with NULL last, as
    # DuckDB's LIST(DISTINCT x ORDER BY x NULLS LAST) gives it, is the sorted set plus one
    # NULL when any value was NULL
    arg = e.this
    if isinstance(arg, exp.Order) and isinstance(arg.this, exp.Distinct):
        (key,) = arg.this.expressions
        ordered = arg.expressions
        if len(ordered) == 1 and ordered[0].this == key and not ordered[0].args.get("desc"):
            values = self.sql(key)
            sorted_set = f"ARRAY_SORT(COLLECT_SET({values}))"
            return (
                f"CASE WHEN COUNT(*) > COUNT({values}) THEN ARRAY_APPEND({sorted_set}, NULL) "
                f"ELSE {sorted_set} END"
            )
    if isinstance(arg, exp.Order):
        self.unsupported("an ordered list aggregate other than DISTINCT x ORDER BY x")
    return self.func("COLLECT_LIST", arg)


def _spark_cte(self: Generator, e: exp.CTE) -> str:
    # Spark has no MATERIALIZED hint on a common table expression
    if e.args.get("materialized") is not None:
        e = e.copy()
        e.set("materialized", None)
    return _Spark.Generator.cte_sql(self, e)


def _postgres_array_distinct(self: Generator, e: exp.ArrayDistinct) -> str:
    return f"ARRAY(SELECT DISTINCT sbc_v FROM UNNEST({self.sql(e, 'this')}) AS sbc_u(sbc_v))"


def _postgres_array_intersect(self: Generator, e: exp.ArrayIntersect) -> str:
    first, *rest = e.expressions
    sets = " INTERSECT ".join(f"SELECT UNNEST({self.sql(x)})" for x in (first, *rest))
    return f"ARRAY({sets})"


# The Generator classes below ignore mypy's misc and valid-type: recent sqlglot assigns each
# dialect's Generator as a class attribute (Generator = DuckDBGenerator), which mypy does not
# take as a base class; importing the generator modules instead would lose sqlglot < 30.
class SbcDuckDB(_DuckDB):
    class Generator(_DuckDB.Generator):  # type: ignore[misc,valid-type]
        TRANSFORMS: ClassVar[dict[type[exp.Expr], Callable[..., str]]] = {
            **_DuckDB.Generator.TRANSFORMS,
            ListHasNull: _duckdb_has_null,
        }


class SbcPostgres(_Postgres):
    class Generator(_Postgres.Generator):  # type: ignore[misc,valid-type]
        TRANSFORMS: ClassVar[dict[type[exp.Expr], Callable[..., str]]] = {
            **_Postgres.Generator.TRANSFORMS,
            ListHasNull: _postgres_has_null,
            exp.UnixMicros: _postgres_unix_micros,
            exp.ArraySize: _postgres_array_size,
            exp.ArraySort: _postgres_array_sort,
            exp.Transform: _postgres_transform,
            exp.ArrayDistinct: _postgres_array_distinct,
            exp.ArrayIntersect: _postgres_array_intersect,
        }


class SbcSpark(_Spark):
    class Generator(_Spark.Generator):  # type: ignore[misc,valid-type]
        TRANSFORMS: ClassVar[dict[type[exp.Expr], Callable[..., str]]] = {
            **_Spark.Generator.TRANSFORMS,
            ListHasNull: _spark_has_null,
            exp.ArrayAgg: _spark_array_agg,
            exp.CTE: _spark_cte,
        }
