"""The DuckDB engine with a source's rows named by a declared integer key column instead of
DuckDB's row position: what ``sbc-sql cluster`` and ``sbc-sql sql`` (:mod:`sbc_sql.warehouse`)
run on, so that the class ids they write join to a warehouse's copy of the rows."""

from __future__ import annotations

import dataclasses

from sqlglot import exp

from ..errors import InputError
from ..model import CsvOptions, TableInfo
from ..sql.templates import col
from .duckdb import DuckDBEngine

#: the column types a row key may have
_INTEGER_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER")


class KeyedDuckDB(DuckDBEngine):
    """The DuckDB engine with the source's rows named by a declared key column (when
    ``row_key`` is set) instead of DuckDB's row position. Its runs label rows one by one:
    the SQL printed for a warehouse joins the labels to the rows by their ids, not by their
    tuples (a join on every QI with NULL equal to NULL is no hash join in every dialect),
    and its class table aggregates the value sets (the warehouse has no uploaded sets)."""

    capabilities = dataclasses.replace(DuckDBEngine.capabilities, tuples=False, value_sets=False)
    row_key: str | None = None

    def open_source(self, table: str, csv: CsvOptions | None = None) -> TableInfo:
        info = super().open_source(table, csv)
        if self.row_key is not None:
            found = [c for c in info.columns if c.name == self.row_key]
            if not found:
                raise InputError(f"--row-id: '{table}' has no column '{self.row_key}'")
            if found[0].type.upper() not in _INTEGER_TYPES:
                raise InputError(
                    f"--row-id: column '{self.row_key}' is {found[0].type}; the row id must be an "
                    "integer key column (unique, never NULL)"
                )
        return info

    def row_id(self, table_alias: str) -> exp.Expression:
        if self.row_key is None:
            return super().row_id(table_alias)
        return col(self.row_key, table_alias)
