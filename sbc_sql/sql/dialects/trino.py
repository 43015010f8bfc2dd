"""Trino's dialect with the project's nodes and fixes (see :mod:`sbc_sql.sql.dialects`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from sqlglot import exp
from sqlglot.dialects.trino import Trino as _Trino
from sqlglot.generator import Generator

from . import ListHasNull, SameKey, ValueSet, hashable_same_key


def _trino_has_null(self: Generator, e: ListHasNull) -> str:
    # CONTAINS(x, NULL) is NULL, never TRUE: count the NULL elements instead
    return f"CARDINALITY(FILTER({self.sql(e, 'this')}, sbc_v -> sbc_v IS NULL)) > 0"


def _trino_value_set(self: Generator, e: ValueSet) -> str:
    # Trino's ARRAY_AGG keeps NULL elements and sorts inside the aggregate
    values = self.sql(e, "this")
    return f"ARRAY_AGG(DISTINCT {values} ORDER BY {values} ASC NULLS LAST)"


def _trino_unix_micros(self: Generator, e: exp.UnixMicros) -> str:
    # sqlglot keeps BigQuery's UNIX_MICROS, which Trino does not have; the difference in
    # microseconds is exact where TO_UNIXTIME's double is not
    return f"DATE_DIFF('microsecond', TIMESTAMP '1970-01-01 00:00:00', {self.sql(e, 'this')})"


def _trino_cte(self: Generator, e: exp.CTE) -> str:
    # Trino has no MATERIALIZED hint on a common table expression
    if e.args.get("materialized") is not None:
        e = e.copy()
        e.set("materialized", None)
    return _Trino.Generator.cte_sql(self, e)


# The Generator class below ignores mypy's misc and valid-type: recent sqlglot assigns each
# dialect's Generator as a class attribute, which mypy does not take as a base class.
class SbcTrino(_Trino):
    class Generator(_Trino.Generator):  # type: ignore[misc,valid-type]
        TRANSFORMS: ClassVar[dict[type[exp.Expr], Callable[..., str]]] = {
            **_Trino.Generator.TRANSFORMS,
            SameKey: hashable_same_key,
            ListHasNull: _trino_has_null,
            ValueSet: _trino_value_set,
            exp.UnixMicros: _trino_unix_micros,
            exp.CTE: _trino_cte,
        }
