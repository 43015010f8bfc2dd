"""Snowflake's dialect with the project's nodes and fixes (see :mod:`sbc_sql.sql.dialects`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from sqlglot import exp
from sqlglot.dialects.snowflake import Snowflake as _Snowflake
from sqlglot.generator import Generator

from . import ListHasNull, SameKey, ValueSet, hashable_same_key


def _snowflake_has_null(self: Generator, e: ListHasNull) -> str:
    # ARRAY_COMPACT removes the NULL elements: a shorter array had one
    values = self.sql(e, "this")
    return f"ARRAY_SIZE({values}) > ARRAY_SIZE(ARRAY_COMPACT({values}))"


def _snowflake_value_set(self: Generator, e: ValueSet) -> str:
    # ARRAY_AGG omits NULLs: the sorted set, plus one NULL when any value was NULL
    values = self.sql(e, "this")
    sorted_set = f"ARRAY_AGG(DISTINCT {values}) WITHIN GROUP (ORDER BY {values} ASC)"
    return f"CASE WHEN COUNT(*) > COUNT({values}) THEN ARRAY_APPEND({sorted_set}, NULL) ELSE {sorted_set} END"


def _snowflake_unix_micros(self: Generator, e: exp.UnixMicros) -> str:
    # sqlglot keeps BigQuery's UNIX_MICROS, which Snowflake does not have
    return f"DATE_PART(EPOCH_MICROSECOND, {self.sql(e, 'this')})"


def _snowflake_cte(self: Generator, e: exp.CTE) -> str:
    # Snowflake has no MATERIALIZED hint on a common table expression
    if e.args.get("materialized") is not None:
        e = e.copy()
        e.set("materialized", None)
    return _Snowflake.Generator.cte_sql(self, e)


# The Generator class below ignores mypy's misc and valid-type: recent sqlglot assigns each
# dialect's Generator as a class attribute, which mypy does not take as a base class.
class SbcSnowflake(_Snowflake):
    class Generator(_Snowflake.Generator):  # type: ignore[misc,valid-type]
        TRANSFORMS: ClassVar[dict[type[exp.Expr], Callable[..., str]]] = {
            **_Snowflake.Generator.TRANSFORMS,
            SameKey: hashable_same_key,
            ListHasNull: _snowflake_has_null,
            ValueSet: _snowflake_value_set,
            exp.UnixMicros: _snowflake_unix_micros,
            exp.CTE: _snowflake_cte,
        }
