"""PostgreSQL from inside the server: the engine the SQL functions of ``sbc-sql install-sql``
(``sbc.anonymize(...)``) run the pipeline on, through PL/Python's ``plpy`` (the server
programming interface) in the caller's own session and transaction.

It is the PostgreSQL engine with another way to reach the database: the same dialect, the
same catalog queries, the same row ids and the same release; only running a statement,
reading rows and writing the class labels differ. Rows arrive as PL/Python values (one per
cell, as the server hands them over) and are turned into Arrow columns batch by batch; the
class labels go in as arrays, a chunk per statement.

The caller's transaction is the run's: the release is written in a subtransaction that a
failure rolls back, and it is committed with whatever the caller commits. The session's
settings a run changes (the search_path, ``pg_catalog, pg_temp`` as for the PostgreSQL
engine's own sessions, messages, date style, and JIT compilation, off as there too) are
restored and its temporary tables dropped before the function returns. An unqualified name
is read and written in the schema the session's default search_path makes current: the
functions run with their own search_path (install.sql), which hides the caller's.
"""

from __future__ import annotations

import contextlib
import datetime
import decimal
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

from ..errors import InputError
from ..model import CsvOptions, TableInfo
from .base import Capabilities, Engine, Params
from .postgres import SEARCH_PATH, PostgresEngine, _positional, _rows, by_state

#: rows fetched from the server per batch
BATCH_ROWS = 65_536
#: labels written per INSERT
CHUNK_ROWS = 200_000

#: a result column's type (its pg_type oid) as Arrow: the scalar types a QI, a sensitive
#: column or a figure can have; any other type is read as its text
_SCALARS: dict[int, pa.DataType] = {
    16: pa.bool_(),
    20: pa.int64(),
    21: pa.int16(),
    23: pa.int32(),
    26: pa.int64(),
    700: pa.float32(),
    701: pa.float64(),
    1700: pa.float64(),
    1082: pa.date32(),
    1114: pa.timestamp("us"),
    1184: pa.timestamp("us", tz="UTC"),
    17: pa.binary(),
}
#: array types (oid) and the oid of their element
_ARRAYS = {
    1000: 16,
    1016: 20,
    1005: 21,
    1007: 23,
    1021: 700,
    1022: 701,
    1231: 1700,
    1182: 1082,
    1115: 1114,
    1185: 1184,
}
#: PL/Python hands these over as their text: Arrow reads the ISO text (DateStyle ISO)
_TEXTUAL = {1082, 1114, 1184}

#: the session settings a run changes, restored when it returns
SETTINGS = ("search_path", "client_min_messages", "DateStyle", "jit")

#: a Python parameter's PostgreSQL type, for a prepared statement
_PARAM_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),
    (int, "bigint"),
    (float, "double precision"),
    (decimal.Decimal, "numeric"),
    (datetime.datetime, "timestamp"),
    (datetime.date, "date"),
    (str, "text"),
)
#: Arrow types of an uploaded column and their PostgreSQL types
_UPLOAD_TYPES = (
    (pa.types.is_boolean, "boolean"),
    (pa.types.is_integer, "bigint"),
    (pa.types.is_floating, "double precision"),
    (pa.types.is_string, "text"),
    (pa.types.is_large_string, "text"),
)


def arrow_type(oid: int) -> pa.DataType:
    """The Arrow type a result column of pg_type ``oid`` is read as."""
    if oid in _ARRAYS:
        return pa.list_(_SCALARS[_ARRAYS[oid]])
    return _SCALARS.get(oid, pa.string())


def param_type(value: Any) -> str:
    """The PostgreSQL type a bound value is declared as (a list: an array of its first
    non-null element's type; NULL and an empty list: text)."""
    if isinstance(value, (list, tuple)):
        first = next((v for v in value if v is not None), "")
        return param_type(first) + "[]"
    for kind, name in _PARAM_TYPES:
        if isinstance(value, kind):
            return name
    return "text"


def column(values: list[Any], oid: int) -> pa.Array:
    """One result column, as PL/Python gave its values, as an Arrow array."""
    kind = arrow_type(oid)
    element = _ARRAYS.get(oid, oid)
    if element == 1700:  # numeric arrives as Decimal, and is read as a float as by ADBC
        values = [_floats(v) for v in values]
    if element in _TEXTUAL:
        text = pa.array(values, pa.list_(pa.string()) if oid in _ARRAYS else pa.string())
        return text.cast(kind)
    if kind == pa.string():
        values = [v if v is None or isinstance(v, str) else str(v) for v in values]
    return pa.array(values, kind)


def _floats(value: Any) -> Any:
    if isinstance(value, list):
        return [None if v is None else float(v) for v in value]
    return None if value is None else float(value)


class PlpyEngine(PostgresEngine):
    """The database the calling session is connected to, reached through ``plpy``."""

    # a file on the server's disk is not the caller's to read: no file input, no export
    capabilities = Capabilities(exports=False)

    def __init__(self, plpy: Any) -> None:
        Engine.__init__(self)
        self.plpy = plpy
        self.connection = None
        self.url = "the calling session"
        self.schema = None  # the caller's, read when the run begins (borrowed)
        self._unusable = None
        self._subtransactions: list[Any] = []
        # no second connection inside the server: a run there holds its rows in memory
        self._reopen = None
        self._appended = set()

    # ---- running: every server call inside the boundary ----

    def translate(self, err: Exception, doing: str) -> BaseException | None:
        if not isinstance(err, self.plpy.SPIError):
            return None
        state = str(getattr(err, "sqlstate", None) or "")
        if state == "57014":
            return KeyboardInterrupt()
        return by_state(state, doing)

    def _execute(self, text: str, values: Sequence[Any]) -> Any:
        if not values:
            return self.plpy.execute(text)
        plan = self.plpy.prepare(text, [param_type(v) for v in values])
        return self.plpy.execute(plan, list(values))

    def _fetch(self, sql: str, params: Params) -> list[tuple[Any, ...]]:
        text, values = _positional(sql, params)
        with self.driver_call(lambda: self.operation(sql)):
            result = self._execute(text, values)
            try:
                names = list(result.colnames())
            except self.plpy.Error:  # a statement that returns no rows
                return []
            if len(set(names)) < len(names):  # rows are dicts: name every column apart
                result = self._execute(_positional_names(text, len(names)), values)
                names = list(result.colnames())
            types = result.coltypes()
            arrays = [column([r[n] for r in result], t) for n, t in zip(names, types, strict=True)]
            return _rows(pa.Table.from_arrays(arrays, names=names))

    def _arrow(self, sql: str) -> pa.Table:
        schema, batches = self._read(sql, BATCH_ROWS)
        return pa.Table.from_batches(list(batches), schema)

    def _stream(self, sql: str, batch_rows: int, params: Params = None) -> Iterator[pa.RecordBatch]:
        return self._read(sql, batch_rows, params)[1]

    def _read(
        self, sql: str, batch_rows: int, params: Params = None
    ) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
        """A query's schema and its rows in batches, through a cursor: the schema comes from
        the query run for no rows, as a cursor's batches do not carry it."""
        sql, values = _positional(sql, params)
        with self.driver_call(lambda: self.operation(sql)):
            probe = self._execute(f"SELECT * FROM ({sql}) AS sbc_q LIMIT 0", values)
            names, types = list(probe.colnames()), list(probe.coltypes())
        keys = names if len(set(names)) == len(names) else [f"c{i}" for i in range(len(names))]
        text = sql if keys is names else _positional_names(sql, len(names))
        schema = pa.schema([pa.field(n, arrow_type(t)) for n, t in zip(names, types, strict=True)])

        def batches() -> Iterator[pa.RecordBatch]:
            with self.driver_call(lambda: self.operation(sql)):
                cursor = (
                    self.plpy.cursor(self.plpy.prepare(text, [param_type(v) for v in values]), list(values))
                    if values
                    else self.plpy.cursor(text)
                )
            try:
                while True:
                    with self.driver_call(lambda: self.operation(sql)):
                        rows = list(cursor.fetch(batch_rows))
                    if not rows:
                        return
                    arrays = [column([r[k] for r in rows], t) for k, t in zip(keys, types, strict=True)]
                    yield pa.RecordBatch.from_arrays(arrays, schema=schema)
            finally:
                with contextlib.suppress(Exception):
                    cursor.close()

        return schema, batches()

    def close(self) -> None:
        """The session is the caller's: nothing to close."""

    # ---- what a server-side run cannot do ----

    def open_source(self, table: str, csv: CsvOptions | None = None) -> TableInfo:
        if table.lower().endswith((".csv", ".tsv", ".csv.gz", ".tsv.gz", ".parquet", ".pq")):
            raise InputError(
                f"source '{table}': inside the server the input is a table or view of the "
                "database, never a file on the server's disk; load the file into a table first"
            )
        return super().open_source(table, csv)

    # ---- labels and transactions ----

    def _ingest(self, name: str, table: pa.Table) -> None:
        """The temporary table ``name`` holding ``table`` (the class labels): created, then
        filled from arrays, a chunk per INSERT."""
        target = self.sql(_ident(name))
        types = [_upload_type(f) for f in table.schema]
        columns = ", ".join(
            f"{self.sql(_ident(f.name))} {t}" for f, t in zip(table.schema, types, strict=True)
        )
        unnest = ", ".join(f"${i + 1}::{t}[]" for i, t in enumerate(types))
        self.plpy.execute(f"CREATE TEMPORARY TABLE {target} ({columns})")
        plan = self.plpy.prepare(
            f"INSERT INTO pg_temp.{target} SELECT * FROM unnest({unnest})", [t + "[]" for t in types]
        )
        for start in range(0, table.num_rows, CHUNK_ROWS):
            chunk = table.slice(start, CHUNK_ROWS)
            self.plpy.execute(plan, [c.to_pylist() for c in chunk.columns])

    def begin(self) -> None:
        subtransaction = self.plpy.subtransaction()
        subtransaction.__enter__()
        self._subtransactions.append(subtransaction)

    def commit(self) -> None:
        with self.driver_call("committing the release"):
            self._subtransactions.pop().__exit__(None, None, None)

    def rollback(self) -> None:
        if self._subtransactions:
            failed = RuntimeError("rolled back")
            self._subtransactions.pop().__exit__(RuntimeError, failed, None)

    # ---- the caller's session, as it was ----

    def _callers_schema(self, path: str) -> str | None:
        """The schema an unqualified name of the caller's is read and written in: the one
        current under the caller's search_path. A function installed with its own SET
        search_path (install.sql: SEARCH_PATH) does not see the caller's, and takes the
        one the session starts with (the server's, the database's or the role's setting)."""
        execute = self.plpy.execute
        if path == SEARCH_PATH:
            execute(
                "SELECT pg_catalog.set_config('search_path', s.reset_val, true) "
                "FROM pg_catalog.pg_settings s WHERE s.name = 'search_path'"
            )
        # only this catalog call runs under that path; borrowed() sets SEARCH_PATH next
        schema = execute("SELECT pg_catalog.current_schema() AS v")[0]["v"]
        return None if schema is None else str(schema)

    @contextlib.contextmanager
    def borrowed(self) -> Iterator[None]:
        """Run inside: the session's settings a run changes and the temporary tables it
        makes are put back as they were on the way out. (On a failure the caller's
        transaction is aborted, which undoes both anyway.)"""
        execute = self.plpy.execute
        saved = {s: execute(f"SELECT pg_catalog.current_setting('{s}') AS v")[0]["v"] for s in SETTINGS}
        self.schema = self._callers_schema(saved["search_path"])
        # the function's own SET search_path puts the caller's back on return, unless a
        # session-wide set_config overrides it: set for the function only then
        own = saved["search_path"] == SEARCH_PATH
        if own:
            del saved["search_path"]
        execute(
            f"SELECT pg_catalog.set_config('search_path', '{SEARCH_PATH}', {str(own).lower()}), "
            "pg_catalog.set_config('client_min_messages', 'warning', false), "
            "pg_catalog.set_config('DateStyle', 'ISO', false), pg_catalog.set_config('jit', 'off', false)"
        )
        before = {r["relname"] for r in execute(_TEMP_TABLES)}
        yield
        for r in execute(_TEMP_TABLES):  # views first: they read the tables
            if r["relname"] not in before:
                kind = "VIEW" if r["relkind"] == "v" else "TABLE"
                execute(f"DROP {kind} IF EXISTS pg_temp.{self.sql(_ident(r['relname']))} CASCADE")
        plan = self.plpy.prepare("SELECT pg_catalog.set_config($1, $2, false)", ["text", "text"])
        for setting, value in saved.items():
            self.plpy.execute(plan, [setting, value])


_TEMP_TABLES = (
    "SELECT c.relname, c.relkind FROM pg_catalog.pg_class c "
    "WHERE c.relnamespace = pg_catalog.pg_my_temp_schema() AND c.relkind IN ('r', 'p', 'v') "
    "ORDER BY c.relkind = 'v' DESC, c.relname"
)


def _ident(name: str) -> Any:
    from ..sql.templates import ident

    return ident(name)


def _upload_type(field: pa.Field) -> str:
    for test, name in _UPLOAD_TYPES:
        if test(field.type):
            return name
    raise TypeError(f"cannot upload a column of type {field.type} from inside the server")


def _positional_names(sql: str, width: int) -> str:
    """The query with its columns renamed c0, c1, ... by position (PL/Python hands rows over
    as dicts, in which two columns of one name would be one)."""
    aliases = ", ".join(f"c{i}" for i in range(width))
    return f"SELECT * FROM ({sql}) AS sbc_q({aliases})"
