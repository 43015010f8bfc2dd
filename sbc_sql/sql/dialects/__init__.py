"""The SQL dialects sbc-sql renders its trees in: sqlglot's, with the project's own nodes and
the fixes where sqlglot's output would be wrong for the project's SQL.

Templates are written in DuckDB's SQL (the embedded default) in a portable subset, parsed
once, and rendered per engine. sqlglot almost never raises while transpiling; where it gets
the meaning wrong it does so silently, so every node here says what it must mean and each
dialect renders it so. A function that sqlglot does not know would stay an ``Anonymous``
node and pass through untranslated: the stages build none (a test checks every statement
of a run). The classes are named Sbc* because sqlglot registers every dialect class by its
name, and ours must not replace its own.

This module holds the project's nodes and the DuckDB dialect; the PostgreSQL and Spark
dialects are modules of their own (``dialects.postgres``, ``dialects.spark``), imported by
whoever renders for them, so a DuckDB run does not load theirs.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import ClassVar

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.dialects.duckdb import DuckDB as _DuckDB
from sqlglot.generator import Generator


class ListHasNull(exp.Expression, exp.Func):
    """TRUE when the list holds a NULL element (a value set that contains NULL)."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True}


def _duckdb_has_null(self: Generator, e: ListHasNull) -> str:
    values = self.sql(e, "this")
    return f"LEN({values}) > LIST_COUNT({values})"


class ValueSet(exp.Expression, exp.AggFunc):
    """Aggregate: the group's distinct values in ascending order, then one NULL element when
    the group holds a NULL (a categorical QI's value set in the class table). ``sets`` is
    how many value sets the same grouping computes, which decides DuckDB's form."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "sets": True}


def transform_parts(self: Generator, e: exp.Transform) -> tuple[str, str] | None:
    """(variable, body) of a TRANSFORM over a list with a one-argument lambda, as SQL, for a
    dialect that rewrites TRANSFORM as a subquery over the list's elements; None (reported
    unsupported) for any other lambda."""
    fn = e.expression
    if not isinstance(fn, exp.Lambda) or len(fn.expressions) != 1:
        self.unsupported("TRANSFORM needs a one-argument lambda")
        return None
    return self.sql(fn.expressions[0]), self.sql(fn, "this")


class SameKey(exp.Expression, exp.Func):
    """A join key's two sides equal, NULL equal to NULL (``this IS NOT DISTINCT FROM
    expression``), in a form the dialect's planner can hash. ``sentinel`` is a constant of the
    key's type (of VARCHAR when ``text`` is set: both sides are compared as their text).

    DuckDB and Spark hash IS NOT DISTINCT FROM itself and keep it. PostgreSQL can neither
    hash nor merge it: a join whose only key it is becomes a nested loop, quadratic in the
    rows (verifying 20,000 rows: 50 s; 40,000: over 300 s). There, and in the warehouses'
    SQL, it is an equality on a key that is never NULL and one on the NULL flags:
    ``COALESCE(a, s) = COALESCE(b, s) AND (a IS NULL) = (b IS NULL)``, which holds exactly
    when a IS NOT DISTINCT FROM b whatever the sentinel's value (see :func:`hashable_same_key`)."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "expression": True, "sentinel": True, "text": False}


def null_safe_same_key(self: Generator, e: SameKey) -> str:
    """IS NOT DISTINCT FROM, for a dialect whose planner hashes it."""
    return self.sql(exp.NullSafeEQ(this=e.this.copy(), expression=e.expression.copy()))


def hashable_same_key(self: Generator, e: SameKey) -> str:
    """Two equalities a planner hashes: the sides with NULL replaced by the sentinel, and
    their NULL flags. A NULL meets only a NULL (the flags), and two values meet when they are
    equal (the sentinel is never compared with a value, as a value's flag is FALSE)."""
    sentinel = e.args["sentinel"]

    def key(side: exp.Expr) -> exp.Expr:
        value = exp.cast(side.copy(), "VARCHAR") if e.args.get("text") else side.copy()
        return exp.Coalesce(this=value, expressions=[sentinel.copy()])

    def null_flag(side: exp.Expr) -> exp.Expr:
        return exp.Paren(this=exp.Is(this=side.copy(), expression=exp.Null()))

    values = exp.EQ(this=key(e.this), expression=key(e.expression))
    flags = exp.EQ(this=null_flag(e.this), expression=null_flag(e.expression))
    return self.sql(exp.Paren(this=exp.and_(values, flags)))


#: value sets per grouping up to which DuckDB takes them as DISTINCT aggregates
DISTINCT_VALUE_SETS = 32


def _duckdb_value_set(self: Generator, e: ValueSet) -> str:
    # DuckDB plans each DISTINCT aggregate of a grouping as a pass of its own, deduplicating
    # the (group, value) pairs, and joins the passes back on the group. With a few that is
    # the cheapest form, as each list is built from distinct values only (1,000,000 rows,
    # five value sets, classes of about 100 rows: 1.2 s against 2.3 s for the form below).
    # But planning and joining the passes grows with the square of their number and more
    # (2,000 rows: 1.8 s at 100 value sets, 28 s at 200, 202 s at 300), so beyond a few the
    # sets are made in one pass: a plain LIST per value set, made distinct and sorted per
    # group (LIST_DISTINCT drops NULL, which is appended when there was one). Both forms give
    # the same lists. They cost the same at a number of value sets that grows with the rows:
    # between 16 and 32 at 200,000 rows, above 48 at 1,000,000 (where the DISTINCT form is 13 %
    # cheaper at 48); at 2,000 rows the DISTINCT form costs 0.1 s at 32.
    values = self.sql(e, "this")
    if int(e.args["sets"].name) <= DISTINCT_VALUE_SETS:
        return f"LIST(DISTINCT {values} ORDER BY {values} ASC NULLS LAST)"
    sorted_set = f"LIST_SORT(LIST_DISTINCT(LIST({values})), 'ASC')"
    return f"CASE WHEN COUNT({values}) < COUNT(*) THEN LIST_APPEND({sorted_set}, NULL) ELSE {sorted_set} END"


# The Generator class below ignores mypy's misc and valid-type: recent sqlglot assigns each
# dialect's Generator as a class attribute (Generator = DuckDBGenerator), which mypy does not
# take as a base class; importing the generator modules instead would lose sqlglot < 30.
class SbcDuckDB(_DuckDB):
    class Generator(_DuckDB.Generator):  # type: ignore[misc,valid-type]
        TRANSFORMS: ClassVar[dict[type[exp.Expr], Callable[..., str]]] = {
            **_DuckDB.Generator.TRANSFORMS,
            ListHasNull: _duckdb_has_null,
            ValueSet: _duckdb_value_set,
            SameKey: null_safe_same_key,
        }


#: the module (under this package) and class of each dialect, by the name a caller gives:
#: each is imported only when asked for
_BY_NAME = {
    "postgres": ("postgres", "SbcPostgres"),
    "snowflake": ("snowflake", "SbcSnowflake"),
    "bigquery": ("bigquery", "SbcBigQuery"),
    "trino": ("trino", "SbcTrino"),
    "spark": ("spark", "SbcSpark"),
}


def by_name(name: str) -> type[Dialect] | None:
    """The project's dialect called ``name`` (duckdb, or a module of this package), None for
    a name it has none of."""
    if name == "duckdb":
        return SbcDuckDB
    if name not in _BY_NAME:
        return None
    module, cls = _BY_NAME[name]
    found: type[Dialect] = getattr(importlib.import_module(f"{__name__}.{module}"), cls)
    return found
