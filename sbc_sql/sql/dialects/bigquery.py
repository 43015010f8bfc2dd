"""BigQuery's dialect with the project's nodes and fixes (see :mod:`sbc_sql.sql.dialects`).

A BigQuery array cannot hold NULL: a categorical QI's value set is the sorted non-NULL
values, and no array has a NULL element. The printed SQL is therefore only made for tables
whose categorical QIs hold no NULL (:mod:`sbc_sql.warehouse` refuses the others), where
the value sets are the same as on any other engine.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from sqlglot import exp
from sqlglot.dialects.bigquery import BigQuery as _BigQuery
from sqlglot.generator import Generator

from . import ListHasNull, SameKey, ValueSet, hashable_same_key, transform_parts


def _bigquery_has_null(self: Generator, e: ListHasNull) -> str:
    # no BigQuery array has a NULL element
    return "FALSE"


def _bigquery_value_set(self: Generator, e: ValueSet) -> str:
    values = self.sql(e, "this")
    return f"ARRAY_AGG(DISTINCT {values} IGNORE NULLS ORDER BY {values} ASC)"


def _bigquery_transform(self: Generator, e: exp.Transform) -> str:
    # a lambda over an array's elements, in order: BigQuery has no TRANSFORM (sqlglot keeps it)
    parts = transform_parts(self, e)
    if parts is None:
        return self.func("TRANSFORM", e.this, e.expression)
    var, body = parts
    return (
        f"ARRAY(SELECT {body} FROM UNNEST({self.sql(e, 'this')}) AS {var} "
        "WITH OFFSET AS sbc_n ORDER BY sbc_n)"
    )


def _bigquery_cte(self: Generator, e: exp.CTE) -> str:
    # BigQuery has no MATERIALIZED hint on a common table expression
    if e.args.get("materialized") is not None:
        e = e.copy()
        e.set("materialized", None)
    return _BigQuery.Generator.cte_sql(self, e)


# The Generator class below ignores mypy's misc and valid-type: recent sqlglot assigns each
# dialect's Generator as a class attribute, which mypy does not take as a base class.
class SbcBigQuery(_BigQuery):
    class Generator(_BigQuery.Generator):  # type: ignore[misc,valid-type]
        TRANSFORMS: ClassVar[dict[type[exp.Expr], Callable[..., str]]] = {
            **_BigQuery.Generator.TRANSFORMS,
            SameKey: hashable_same_key,
            ListHasNull: _bigquery_has_null,
            ValueSet: _bigquery_value_set,
            exp.CTE: _bigquery_cte,
            exp.Transform: _bigquery_transform,
        }
