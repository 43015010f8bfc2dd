"""PostgreSQL's dialect with the project's nodes and fixes (see :mod:`sbc_sql.sql.dialects`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from sqlglot import exp
from sqlglot.dialects.postgres import Postgres as _Postgres
from sqlglot.generator import Generator

from . import ListHasNull, SameKey, ValueSet, hashable_same_key, transform_parts


def _postgres_has_null(self: Generator, e: ListHasNull) -> str:
    # array_position compares with IS NOT DISTINCT FROM, so it finds a NULL element
    return f"ARRAY_POSITION({self.sql(e, 'this')}, NULL) IS NOT NULL"


def _postgres_value_set(self: Generator, e: ValueSet) -> str:
    # PostgreSQL keeps NULL in ARRAY_AGG and sorts it last in ascending order
    values = self.sql(e, "this")
    return f"ARRAY_AGG(DISTINCT {values} ORDER BY {values} NULLS LAST)"


def _postgres_unix_micros(self: Generator, e: exp.UnixMicros) -> str:
    # EXTRACT is exact (numeric) from PostgreSQL 14; sqlglot's UNIX_MICROS does not exist there.
    # A timestamp of 'infinity' or '-infinity' has no number: NULL, as DuckDB gives it, so the
    # statistics count it apart (casting its infinite epoch to BIGINT failed with 0A000)
    value = self.sql(e, "this")
    return f"CASE WHEN ISFINITE({value}) THEN CAST(EXTRACT(EPOCH FROM {value}) * 1000000 AS BIGINT) END"


_DATE_DIFF = _Postgres.Generator.TRANSFORMS[exp.DateDiff]


def _postgres_date_diff(self: Generator, e: exp.DateDiff) -> str:
    # a date of 'infinity' or '-infinity' has no number of days: NULL, as in DuckDB (the
    # subtraction of infinite timestamps failed with 22008)
    diff = _DATE_DIFF(self, e)
    finite = f"ISFINITE({self.sql(e, 'this')}) AND ISFINITE({self.sql(e, 'expression')})"
    return f"CASE WHEN {finite} THEN {diff} END"


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
    parts = transform_parts(self, e)
    if parts is None:
        return self.func("TRANSFORM", e.this, e.expression)
    var, body = parts
    return (
        f"ARRAY(SELECT {body} FROM UNNEST({self.sql(e, 'this')}) "
        f"WITH ORDINALITY AS sbc_u({var}, sbc_n) ORDER BY sbc_n)"
    )


def _postgres_array_distinct(self: Generator, e: exp.ArrayDistinct) -> str:
    # the distinct values without NULL, as DuckDB's LIST_DISTINCT gives them (a caller that
    # keeps NULL appends it once): a kept NULL beside an appended one counts a value twice
    return (
        f"ARRAY(SELECT DISTINCT sbc_v FROM UNNEST({self.sql(e, 'this')}) AS sbc_u(sbc_v) "
        "WHERE NOT sbc_v IS NULL)"
    )


def _postgres_array_intersect(self: Generator, e: exp.ArrayIntersect) -> str:
    first, *rest = e.expressions
    sets = " INTERSECT ".join(f"SELECT UNNEST({self.sql(x)})" for x in (first, *rest))
    return f"ARRAY({sets})"


def _postgres_null_safe_eq(self: Generator, e: exp.NullSafeEQ) -> str:
    # MIN(x) IS NOT DISTINCT FROM MAX(x) (one value over a group) has no MIN for booleans in
    # PostgreSQL; COUNT(DISTINCT x) <= 1 says the same for every type (both ignore NULLs)
    low, high = e.this, e.expression
    if isinstance(low, exp.Min) and isinstance(high, exp.Max) and low.this == high.this:
        return f"COUNT(DISTINCT {self.sql(low, 'this')}) <= 1"
    return f"{self.sql(e, 'this')} IS NOT DISTINCT FROM {self.sql(e, 'expression')}"


def _postgres_round(self: Generator, e: exp.Round) -> str:
    # PostgreSQL rounds to a number of places only a NUMERIC (ROUND(double, int) does not exist)
    places = e.args.get("decimals")
    if places is None:
        return self.func("ROUND", e.this)
    return self.func("ROUND", exp.cast(e.this.copy(), "DECIMAL"), places)


def _postgres_array(self: Generator, e: exp.Array) -> str:
    # an empty ARRAY[] has no type in PostgreSQL; the untyped literal '{}' takes the type of
    # what it meets (the other argument of a COALESCE, the column it is compared with)
    if not e.expressions:
        return "'{}'"
    return f"ARRAY[{self.expressions(e, flat=True)}]"


_EXPLODE = _Postgres.Generator.TRANSFORMS[exp.Explode]


def _postgres_explode(self: Generator, e: exp.Explode) -> str:
    # GENERATE_SERIES returns rows on PostgreSQL, a list elsewhere: the list's rows unnested
    # elsewhere are the series itself here
    if isinstance(e.this, exp.GenerateSeries) and not e.expressions:
        return str(self.sql(e.this))
    return str(_EXPLODE(self, e))


# The Generator class below ignores mypy's misc and valid-type: recent sqlglot assigns each
# dialect's Generator as a class attribute (Generator = PostgresGenerator), which mypy does not
# take as a base class; importing the generator modules instead would lose sqlglot < 30.
class SbcPostgres(_Postgres):
    class Generator(_Postgres.Generator):  # type: ignore[misc,valid-type]
        TRANSFORMS: ClassVar[dict[type[exp.Expr], Callable[..., str]]] = {
            **_Postgres.Generator.TRANSFORMS,
            SameKey: hashable_same_key,
            ListHasNull: _postgres_has_null,
            ValueSet: _postgres_value_set,
            exp.UnixMicros: _postgres_unix_micros,
            exp.DateDiff: _postgres_date_diff,
            exp.ArraySize: _postgres_array_size,
            exp.ArraySort: _postgres_array_sort,
            exp.Transform: _postgres_transform,
            exp.ArrayDistinct: _postgres_array_distinct,
            exp.ArrayIntersect: _postgres_array_intersect,
            exp.NullSafeEQ: _postgres_null_safe_eq,
            exp.Round: _postgres_round,
            exp.Array: _postgres_array,
            exp.Explode: _postgres_explode,
        }

        def select_sql(self, expression: exp.Select) -> str:
            # SELECT DISTINCT a, NULL AS k types the NULL as text at once, so a UNION with an
            # integer k fails; grouping by the other columns keeps the same rows and leaves
            # the NULL's type to the UNION
            distinct = expression.args.get("distinct")
            if distinct is not None and not distinct.args.get("on") and not expression.args.get("group"):
                nulls = [isinstance(p.unalias(), exp.Null) for p in expression.expressions]
                rest = [
                    p.unalias() for p, null in zip(expression.expressions, nulls, strict=True) if not null
                ]
                if any(nulls) and rest and not any(p.find(exp.AggFunc) for p in expression.expressions):
                    grouped = expression.copy()
                    grouped.set("distinct", None)
                    grouped.set("group", exp.Group(expressions=[r.copy() for r in rest]))
                    expression = grouped
            return str(super().select_sql(expression))

        def subquery_sql(self, expression: exp.Subquery, sep: str = " AS ") -> str:
            # PostgreSQL before 16 rejects a subquery in FROM without an alias
            if not expression.alias and isinstance(expression.parent, (exp.From, exp.Join)):
                self._sbc_subqueries = getattr(self, "_sbc_subqueries", 0) + 1
                expression = expression.copy()
                alias = exp.TableAlias(this=exp.to_identifier(f"sbc_subquery_{self._sbc_subqueries}"))
                expression.set("alias", alias)
            return str(super().subquery_sql(expression, sep))
