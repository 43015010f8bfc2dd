"""PostgreSQL, the second engine: a database a libpq URL names (``postgresql://...``), reached
through the ADBC driver, which moves rows as Arrow both ways (binary COPY).

The source is only read. A run's working tables are temporary (gone with the connection);
the release is built under temporary names inside one transaction and renamed there, so an
interruption leaves nothing. Rows are keyed by their physical position (``ctid``), stable
while the table is not modified, which a run never does. Roles are read from column comments
(``COMMENT ON COLUMN t.c IS 'sbc:qi'``) as in DuckDB. A CSV or Parquet input is read on this
side with pyarrow, typed as DuckDB types it (:mod:`.files`), into a temporary table.

No other role's code runs in a run: the session's search_path is ``pg_catalog, pg_temp``
from the connection on (SEARCH_PATH), so every function and operator a statement calls is
one of PostgreSQL's built-ins, and each table a statement names is qualified with its
schema where it is run (:meth:`PostgresEngine.runnable`; the logged and ``--sql`` text keeps
the names as written, with the ``SET search_path`` that gives them the same meaning).

Errors are read by their SQLSTATE only: PostgreSQL's own text may quote a value (an invalid
input, a duplicate key), so none of it is shown. The password is libpq's business (the URL,
PGPASSWORD or ~/.pgpass) and is never printed: the URL is shown without it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shlex
import typing
import urllib.parse
from collections.abc import Hashable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import sqlglot
from sqlglot import exp

from .. import names
from .. import names as _names
from ..errors import EngineError, InputError
from ..model import ColumnInfo, CsvOptions, TableInfo
from ..sql.dialects.postgres import SbcPostgres
from ..sql.templates import ident
from . import files
from .base import Capabilities, Engine, Params, ServerError, Statement
from .paths import kind_of, looks_like_file
from .urls import shown_url

#: the temporary table a view or an input file is read into for the run
SOURCE_ALIAS = "sbc_source_file"
#: how else to load a file this engine cannot read
_LOAD_IT = "load it into a table yourself (e.g. with psql's \\copy) and pass that table with --table"
NO_EXPORT = (
    "--out-file: a PostgreSQL --db keeps the release in the database; export it from there "
    "(e.g. psql's \\copy), or anonymize a DuckDB copy for a file"
)
#: PostgreSQL cuts longer identifiers (NAMEDATALEN - 1 bytes) and only says so in a NOTICE
MAX_IDENTIFIER_BYTES = 63

#: the session's search_path for a whole run: PostgreSQL's own catalog, then the session's
#: temporary tables (explicitly last: never searched for functions or operators). No schema a
#: role may create in is on it, so every function and operator a statement calls is a
#: built-in (PostgreSQL picks among overloads of every schema on the path by argument types,
#: not by the path's order, so a public.array_agg(text) would otherwise win over
#: pg_catalog's), and every table is named with its schema (:meth:`PostgresEngine.runnable`)
SEARCH_PATH = "pg_catalog, pg_temp"
#: the temporary schema's name as statements qualify a temporary table
TEMP_SCHEMA = "pg_temp"

# the connection's temporary schema first, then the working one: as unqualified names resolve
_KINDS = (
    "SELECT c.relname, CASE WHEN c.relkind IN ('v', 'm') THEN 'VIEW' ELSE 'TABLE' END "
    "FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
    "WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND c.relname = ANY($1) AND n.oid = {where} "
    "ORDER BY c.relname"
)
_TEMP = "pg_catalog.pg_my_temp_schema()"
_IN_SCHEMA = "(SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = $2)"
_COMMENT = (
    "SELECT pg_catalog.obj_description(c.oid, 'pg_class') FROM pg_catalog.pg_class c "
    "WHERE c.relname = $1 AND c.relnamespace = {where}"
)
_COLUMNS = (
    "SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), "
    "pg_catalog.col_description(c.oid, a.attnum), t.typname, t.typcategory "
    "FROM pg_catalog.pg_class c JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid "
    "JOIN pg_catalog.pg_type t ON t.oid = a.atttypid "
    "WHERE c.relname = $1 AND c.relnamespace = {where} AND a.attnum > 0 AND NOT a.attisdropped "
    "ORDER BY a.attnum"
)
#: every table and view the relation $1 (an oid) selects from, transitively, as PostgreSQL
#: records a view's dependencies (its rewrite rule's)
_READS = (
    "WITH RECURSIVE r(oid) AS (SELECT $1::oid UNION "
    "SELECT d.refobjid FROM r JOIN pg_catalog.pg_rewrite w ON w.ev_class = r.oid "
    "JOIN pg_catalog.pg_depend d ON d.objid = w.oid AND d.classid = 'pg_catalog.pg_rewrite'::regclass "
    "AND d.refclassid = 'pg_catalog.pg_class'::regclass AND d.refobjid <> r.oid) "
    "SELECT n.nspname, c.relname FROM r JOIN pg_catalog.pg_class c ON c.oid = r.oid "
    "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
    "WHERE r.oid <> $1::oid AND c.relkind IN ('r', 'p', 'v', 'm', 'f') ORDER BY 1, 2"
)
#: the search_path the login role and the database set (ALTER ROLE/DATABASE ... SET), the
#: most specific first: as PostgreSQL applies them when a session starts
_PATH_SETTING = (
    "SELECT pg_catalog.substr(c.setting, 13) FROM pg_catalog.pg_db_role_setting s "
    "CROSS JOIN LATERAL pg_catalog.unnest(s.setconfig) AS c(setting) "
    "WHERE c.setting LIKE 'search\\_path=%' AND s.setdatabase IN (0, (SELECT d.oid FROM "
    "pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database())) "
    "AND s.setrole IN (0, (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = "
    "pg_catalog.session_user())) "
    "ORDER BY (s.setrole <> 0 AND s.setdatabase <> 0) DESC, s.setrole <> 0 DESC, "
    "s.setdatabase <> 0 DESC LIMIT 1"
)
#: the server's configuration files' search_path (the last applied wins)
_PATH_IN_FILES = (
    "SELECT f.setting FROM pg_catalog.pg_file_settings f "
    "WHERE f.name = 'search_path' AND f.applied ORDER BY f.seqno"
)
_PATH_BUILT_IN = "SELECT s.boot_val FROM pg_catalog.pg_settings s WHERE s.name = 'search_path'"
_TEMP_NAMES = (
    "SELECT c.relname FROM pg_catalog.pg_class c "
    "WHERE c.relnamespace = pg_catalog.pg_my_temp_schema() AND c.relname = ANY($1)"
)

# SQLSTATE classes and codes: what went wrong, in sbc-sql's words (never PostgreSQL's text)
_STATES: dict[str, tuple[str, str]] = {
    "42P01": ("a table or view it names does not exist", "missing"),
    "42703": ("a column it names does not exist", "missing"),
    "3F000": (
        "a schema it names does not exist, or the database user lacks USAGE on it; create the "
        "schema, or GRANT USAGE ON SCHEMA to the user",
        "missing",
    ),
    "42501": (
        "the database user lacks a privilege it needs; GRANT it, or connect as another user",
        "permission",
    ),
    "42P07": ("a table or view of that name exists already", "other"),
    "53100": ("the database server's disk is full; free space there", "disk-full"),
    "53200": ("the database server ran out of memory", "memory"),
    "40P01": ("a deadlock with another session; run it again", "locked"),
    "55P03": ("a table it needs is locked by another session; run it again later", "locked"),
    "25P02": ("an earlier statement of the transaction failed", "other"),
}
_CLASSES: dict[str, tuple[str, str]] = {
    "08": ("the connection to the database server failed; check the host, port and that it runs", "other"),
    "28": (
        "the server refused the login; check the user and the password (URL, PGPASSWORD or ~/.pgpass)",
        "permission",
    ),
    "3D": ("the database does not exist on that server; check the URL's database name", "missing"),
    "22": (
        "a value does not fit the type asked for (its text is not shown, as it quotes the data)",
        "conversion",
    ),
    "23": (
        "a value breaks a constraint of the table (its text is not shown, as it quotes the data)",
        "other",
    ),
    "53": ("the database server ran out of a resource (disk, memory or connections)", "memory"),
    "42": ("PostgreSQL rejected the statement; rerun with --sql to see it", "other"),
}

# a schema the connected user may not use (USAGE), found by name; and those of the search path
_NO_USAGE = (
    "SELECT n.nspname, current_user FROM pg_catalog.pg_namespace n "
    "WHERE n.nspname = $1 AND NOT pg_catalog.has_schema_privilege(n.oid, 'USAGE')"
)
_PATH_NO_USAGE = (
    "SELECT n.nspname, current_user FROM pg_catalog.pg_namespace n "
    "JOIN LATERAL pg_catalog.unnest(pg_catalog.string_to_array("
    "pg_catalog.current_setting('search_path'), ',')) WITH ORDINALITY AS p(entry, i) "
    "ON n.nspname = pg_catalog.btrim(pg_catalog.replace(p.entry, '$user', current_user), ' \"') "
    "WHERE NOT pg_catalog.has_schema_privilege(n.oid, 'USAGE') ORDER BY p.i LIMIT 1"
)


def _no_usage(what: str, schema: str, user: str) -> str:
    quoted = SbcPostgres().generate
    grant = f"GRANT USAGE ON SCHEMA {quoted(ident(schema))} TO {quoted(ident(user))}"
    return (
        f"{what}: the database user '{user}' has no USAGE privilege on schema '{schema}', so "
        f"nothing in it can be read or written; have its owner run {grant}, or connect as "
        "another user"
    )


_NUMERIC = {"int2", "int4", "int8", "float4", "float8", "numeric", "oid"}
_TEMPORAL = {"date": "date", "timestamp": "timestamp", "timestamptz": "timestamp"}
_UNSUPPORTED = {"bytea", "interval", "json", "jsonb", "xml", "tsvector", "tsquery", "bit", "varbit"}
#: types without an equality operator (the geometric ones, json, xml): no value of one can be
#: grouped into classes, nor released verbatim and checked against its source
_NO_EQUALITY = {"point", "line", "lseg", "box", "path", "polygon", "circle", "json", "xml"}


#: PostgreSQL's type names as the release's checks name them (DuckDB's spelling), modifiers
#: dropped: an aggregate or a CREATE TABLE AS keeps the type but not always its length
_DISPLAY = {
    "boolean": "BOOLEAN",
    "smallint": "SMALLINT",
    "integer": "INTEGER",
    "bigint": "BIGINT",
    "real": "FLOAT",
    "double precision": "DOUBLE",
    "numeric": "DECIMAL",
    "text": "VARCHAR",
    "character varying": "VARCHAR",
    "character": "VARCHAR",
    "date": "DATE",
    "timestamp without time zone": "TIMESTAMP",
    "timestamp with time zone": "TIMESTAMP WITH TIME ZONE",
}


def display_type(pg_type: str) -> str:
    """A type as format_type() prints it, in the spelling the release's checks compare:
    ``character varying(20)[]`` is ``VARCHAR[]``."""
    dims = pg_type.count("[]")
    base = re.sub(r"\([^)]*\)", "", pg_type.replace("[]", "")).strip()
    return _DISPLAY.get(base, base.upper()) + "[]" * dims


def type_kind(typname: str, category: str) -> tuple[str | None, str | None]:
    """(kind, temporal) of a PostgreSQL column type, read from pg_type: numbers, dates and
    timestamps are numeric, other scalars categorical; kind None for arrays, composites,
    binary, JSON, intervals and geometric types (point, box, ...)."""
    if category in ("A", "C", "G") or typname in _UNSUPPORTED:
        return None, None
    if typname in _TEMPORAL:
        return "numeric", _TEMPORAL[typname]
    if typname in _NUMERIC:
        return "numeric", None
    return "categorical", None


def has_equality(typname: str, category: str) -> bool:
    """Whether PostgreSQL compares values of the type for equality: not a geometric type,
    json or xml, nor an array of one (``_json``), so a column of one is refused, as QI,
    sensitive or kept, before any work."""
    return category != "G" and typname.removeprefix("_") not in _NO_EQUALITY


class PostgresEngine(Engine):
    """A connection to a PostgreSQL database."""

    name = "postgres"
    dialect = SbcPostgres
    capabilities = Capabilities(exports=False, streams=True)

    def __init__(self, connection: Any, url: str) -> None:
        super().__init__()
        self.connection = connection
        self.url = shown_url(url)
        #: what a second connection opens (:meth:`companion`; None: this one was not opened
        #: from a URL here, and no other is opened)
        self._reopen: str | None = None
        #: the temporary tables :meth:`append` made
        self._appended: set[str] = set()
        #: the working schema: where unqualified names are read and written (the session's
        #: own search_path never holds it: see SEARCH_PATH)
        self.schema: str | None = None
        #: when no schema of the login's search_path is usable: the first one the user has
        #: no USAGE on, and the user (current_schema() skips such schemas)
        self._unusable: tuple[str, str] | None = None

    @classmethod
    def connect(cls, url: str) -> PostgresEngine:
        try:
            import adbc_driver_postgresql.dbapi as adbc
        except ImportError:
            raise InputError(
                "--db names a PostgreSQL database, and its driver is not installed; "
                "pip install 'sbc-sql[postgres]'"
            ) from None
        engine: PostgresEngine | None = None
        try:
            # SEARCH_PATH from the session's start: the driver's own catalog queries when it
            # connects compare with operators too (pg_type.typreceive != 0)
            engine = cls(adbc.connect(safe_url(url), autocommit=True), url)
        except Exception as err:
            raise _refused(err, f"connecting to '{shown_url(url)}'") from None
        engine._reopen = url
        engine.schema = engine._default_schema(_asked_path(url))
        engine._fetch("SET client_min_messages = warning", None)
        # no JIT compilation for this session: a run's statements are each run once, and
        # compiling one with its many sub-selects costs more than it saves (verifying Adult's
        # 30,162 rows: 1.37 s with it, 0.28 s without; 1,000,000 rows: 8.9 s, 8.2 s)
        engine._fetch("SET jit = off", None)
        return engine

    def sql(self, statement: Statement) -> str:
        """As the base renders it; a name longer than PostgreSQL's 63 bytes is refused here,
        before it runs: PostgreSQL would cut it, and two names could become one."""
        if not isinstance(statement, str):
            for name in statement.find_all(exp.Identifier):
                if len(name.name.encode()) > MAX_IDENTIFIER_BYTES:
                    raise InputError(
                        f"the name '{name.name[:24]}...' ({len(name.name.encode())} bytes) is longer "
                        f"than PostgreSQL's {MAX_IDENTIFIER_BYTES} bytes, which would cut it; choose "
                        "shorter names (a release's tables add up to 25 bytes to --output)"
                    )
        return super().sql(statement)

    def _default_schema(self, asked: str | None) -> str | None:
        """The working schema: the one current under the search_path the session would have
        had without SEARCH_PATH (``asked``, the connection's own options' search_path, or
        else the role's and the database's setting, the server's, PostgreSQL's default).
        Only a call of pg_catalog's current_schema() runs under that path."""
        path = asked
        if path is None:
            rows = self._fetch(_PATH_SETTING, None)
            path = rows[0][0] if rows else None
        if path is None:
            with contextlib.suppress(EngineError):  # readable by superusers only
                rows = self._fetch(_PATH_IN_FILES, None)
                path = rows[-1][0] if rows else None
        if path is None:
            path = self._fetch(_PATH_BUILT_IN, None)[0][0]
        self._fetch("SELECT pg_catalog.set_config('search_path', $1, false)", {"path": path})
        try:
            (schema,) = self._fetch("SELECT pg_catalog.current_schema()", None)[0]
            if schema is None:
                rows = self._fetch(_PATH_NO_USAGE, None)
                self._unusable = (str(rows[0][0]), str(rows[0][1])) if rows else None
        finally:
            self._fetch(f"SET search_path = {SEARCH_PATH}", None)
        return None if schema is None else str(schema)

    def runnable(self, statement: Statement) -> str:
        """The statement with every table it names in its schema: a table the session holds
        as temporary in pg_temp (as PostgreSQL resolves an unqualified name: the temporary
        table first), any other in the working schema. The session searches no other schema
        than the catalog's (SEARCH_PATH), so nothing a statement runs is resolved elsewhere."""
        if isinstance(statement, str):  # a caller's own SQL text: qualified as a tree is
            try:
                tree = typing.cast(exp.Expression, sqlglot.parse_one(statement, dialect=SbcPostgres))
            except sqlglot.errors.SqlglotError:
                return statement  # PostgreSQL reads it under SEARCH_PATH alone
            return self.sql(self.qualified(tree)) if _unqualified(tree) else statement
        return self.sql(self.qualified(statement))

    def qualified(self, statement: exp.Expression) -> exp.Expression:
        """``statement`` (a copy) with its unqualified tables qualified (see :meth:`runnable`)."""
        statement = statement.copy()
        tables = _unqualified(statement)
        if not tables:
            return statement
        created = _created_temporary(statement)
        asked = sorted({t.name for t in tables if t is not created})
        temporary = {r[0] for r in self._fetch(_TEMP_NAMES, {"names": asked})} if asked else set()
        for table in tables:
            temp = table is created or (table.name in temporary and not _created_here(table))
            table.set("db", ident(TEMP_SCHEMA if temp else self._working_schema()))
        return statement

    def _working_schema(self) -> str:
        if self.schema is None:
            if self._unusable is not None:
                raise InputError(_no_usage("the connection's search_path", *self._unusable))
            raise InputError(
                "the connection has no current schema (no schema of its search_path exists); "
                "name one with --output schema.name or create the schema"
            )
        return self.schema

    # ---- running: every driver call inside the boundary ----

    def translate(self, err: Exception, doing: str) -> BaseException | None:
        return _translate(err, doing)

    def _cursor(self, sql: str, params: Params) -> Any:
        text, values = _positional(sql, params)
        cursor = self.connection.cursor()
        try:
            cursor.execute(text, values) if values else cursor.execute(text)
        except BaseException:
            cursor.close()
            raise
        return cursor

    def _fetch(self, sql: str, params: Params) -> list[tuple[Any, ...]]:
        with self.driver_call(lambda: self.operation(sql)):
            cursor = self._cursor(sql, params)
            try:
                if cursor.description is None:
                    return []
                return _rows(_plain(cursor.fetch_arrow_table()))
            finally:
                cursor.close()

    def _arrow(self, sql: str) -> pa.Table:
        with self.driver_call(lambda: self.operation(sql)):
            cursor = self._cursor(sql, None)
            try:
                return _plain(cursor.fetch_arrow_table())
            finally:
                cursor.close()

    def _stream(self, sql: str, batch_rows: int, params: Params = None) -> Iterator[pa.RecordBatch]:
        with self.driver_call(lambda: self.operation(sql)):
            cursor = self._cursor(sql, params)
        try:
            with self.driver_call(lambda: self.operation(sql)):
                reader = cursor.fetch_record_batch()
            while True:
                with self.driver_call(lambda: self.operation(sql)):
                    batch = next(reader, None)
                if batch is None:
                    return
                batch = _plain_batch(batch)
                for start in range(0, batch.num_rows, batch_rows):
                    yield batch.slice(start, batch_rows)
        finally:
            with contextlib.suppress(Exception):
                cursor.close()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.connection.close()

    # ---- catalog (not part of a run's log) ----

    def object_kinds(self, names: Sequence[str]) -> dict[str, str]:
        kinds: dict[str, str] = {}
        for where, extra in self._places():
            for found, kind in self._fetch(_KINDS.format(where=where), {"names": list(names), **extra}):
                kinds.setdefault(found, kind)
        return {n: kinds[n] for n in names if n in kinds}

    def identities(self, names: Sequence[str], *, output: bool = False) -> dict[str, Hashable]:
        found: dict[str, Hashable] = {}
        database = None
        for n in names:
            if output:
                table = exp.Table(this=ident(n))
            else:
                if looks_like_file(n):
                    continue
                name = _names.parse(n)
                database = database or self.working()[0]
                if name.catalog is not None and name.catalog != database:
                    continue  # another database: never this connection's object
                schema = ident(name.schema) if name.schema is not None else None
                table = exp.Table(this=ident(name.name), db=schema)
            # the relation's oid, the name resolved as the run's statements resolve it (an
            # unqualified name: a temporary table, else the working schema's)
            text = self.sql(self.qualified(table))
            rows = self._fetch("SELECT pg_catalog.to_regclass($1)::oid", {"name": text})
            if rows and rows[0][0] is not None:
                found[n] = int(rows[0][0])
        return found

    def _reads(self, table: str) -> tuple[str, ...]:
        """``table`` and, for a view, every table and view it selects from, transitively
        (each with its schema): the objects no output may replace while it is the input."""
        oid = self.identities([table]).get(table)
        if oid is None:
            return (table,)
        rows = self._fetch(_READS, {"oid": oid})
        return (table, *(str(_names.Name(r[1], r[0])) for r in rows))

    def comment(self, name: str) -> str | None:
        for where, extra in self._places():
            rows = self._fetch(_COMMENT.format(where=where), {"name": name, **extra})
            if rows:
                return rows[0][0]  # type: ignore[no-any-return]
        return None

    def describe(self, name: str, *, temporary: bool = False) -> TableInfo:
        for where, extra in self._places()[:1] if temporary else self._places():
            info = self._describe_at(name, where, extra)
            if info.columns:
                break
        return info

    def _places(self) -> list[tuple[str, dict[str, Any]]]:
        """Where an unqualified name is looked up, in order (the session's temporary tables,
        then the working schema), each as a catalog query's condition and its parameter."""
        return [(_TEMP, {}), (_IN_SCHEMA, {"schema": self.schema})]

    def _describe_at(self, name: str, where: str, extra: dict[str, Any]) -> TableInfo:
        rows = self._fetch(_COLUMNS.format(where=where), {"name": name, **extra})
        return TableInfo(
            name,
            tuple(
                ColumnInfo(r[0], display_type(r[1]), r[2], *type_kind(r[3], r[4]), has_equality(r[3], r[4]))
                for r in rows
            ),
        )

    def database_files(self) -> list[Path]:
        return []

    def open_source(self, table: str, csv: CsvOptions | None = None) -> TableInfo:
        if looks_like_file(table):
            path = Path(table)
            self._read_file(path, csv or CsvOptions())
            info = self.describe(SOURCE_ALIAS, temporary=True)
            return TableInfo(info.name, info.columns, from_file=str(path))
        _check_name(table, "--table")
        kinds = self.object_kinds([table])
        if kinds.get(table) == "TABLE":
            return dataclasses.replace(self.describe(table), reads=(table,))
        if kinds.get(table) == "VIEW":
            reads = self._reads(table)
            # a view has no row positions: read it once into a temporary table
            with self.driver_call(f"reading view '{table}'"):
                self._temp_copy(SOURCE_ALIAS, self.sql(self.qualified(exp.Table(this=ident(table)))))
            info = self.describe(SOURCE_ALIAS, temporary=True)
            return TableInfo(info.name, info.columns, from_file=table, reads=reads)
        name = names.parse(table)
        if name.qualified:
            self._copy_elsewhere(table, name, SOURCE_ALIAS)
            info = self.describe(SOURCE_ALIAS, temporary=True)
            # the outputs may land in its schema (--output schema.name), or take its name
            return TableInfo(info.name, info.columns, from_file=table, reads=self._reads(table))
        raise InputError(self._missing(table))

    def copy_in(self, table: str) -> None:
        name = names.parse(table)
        if not name.qualified:
            raise InputError(self._missing(table))
        self._copy_elsewhere(table, name, table)

    def _copy_elsewhere(self, table: str, name: names.Name, into: str) -> None:
        """Read the table or view ``name`` of another schema into the temporary table
        ``into``, its columns' comments (the roles) kept."""
        database = self.working()[0]
        if name.catalog is not None and name.catalog != database:
            raise InputError(
                f"table '{table}' is in database '{name.catalog}', and this connection is to "
                f"'{database}'; PostgreSQL reads one database per connection: name it in --db"
            )
        where = {"schema": name.schema}
        self._check_usage(name.schema or "", f"table '{table}'")
        if not self._fetch(_KINDS.format(where=_IN_SCHEMA), {"names": [name.name], **where}):
            raise InputError(
                f"table '{table}' does not exist: no table or view '{name.name}' in schema "
                f"'{name.schema}'; pass an existing one"
            )
        source = self.sql(exp.Table(this=ident(name.name), db=ident(name.schema or "")))
        with self.driver_call(f"reading '{table}'"):
            self._temp_copy(into, source)
            for column in self._describe_at(name.name, _IN_SCHEMA, where).columns:
                if column.comment is not None:
                    target = exp.Column(this=ident(column.name), table=ident(into), db=ident(TEMP_SCHEMA))
                    text = self.sql(exp.Literal.string(column.comment))
                    self._fetch(f"COMMENT ON COLUMN {self.sql(target)} IS {text}", None)

    def _read_file(self, path: Path, csv: CsvOptions) -> None:
        """A CSV or Parquet file read with pyarrow (:mod:`.files`: typed as DuckDB types it)
        into the temporary table SOURCE_ALIAS, in order, a part of bounded size at a time."""
        target = f"pg_temp.{self.sql(ident(SOURCE_ALIAS))}"
        part = f"{SOURCE_ALIAS}_part"
        with self.driver_call(f"reading {kind_of(path)} file '{path}'"):
            self._fetch(f"DROP TABLE IF EXISTS {target}", None)
            for i, rows in enumerate(files.parts(path, csv, _LOAD_IT)):
                if i == 0:
                    self._ingest(SOURCE_ALIAS, rows)
                    continue
                self._ingest(part, rows)
                self._fetch(f"INSERT INTO {target} SELECT * FROM pg_temp.{self.sql(ident(part))}", None)
                self._fetch(f"DROP TABLE pg_temp.{self.sql(ident(part))}", None)

    def _temp_copy(self, into: str, source: str) -> None:
        target = self.sql(ident(into))
        self._fetch(f"DROP TABLE IF EXISTS pg_temp.{target}", None)
        self._fetch(f"CREATE TEMPORARY TABLE {target} AS SELECT * FROM {source}", None)

    def _missing(self, table: str) -> str:
        """Why ``table`` is not found: absent, in another schema, or spelt in another case
        (PostgreSQL folds unquoted names to lower case, and sbc-sql quotes every name)."""
        bare = table.rsplit(".", 1)[-1]
        rows = self._fetch(
            "SELECT n.nspname, c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
            "ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') "
            "AND pg_catalog.lower(c.relname) = pg_catalog.lower($1) "
            "AND n.nspname NOT LIKE 'pg_temp%' ORDER BY 1, 2",
            {"name": bare},
        )
        here = self._working_schema()
        cased = [r[1] for r in rows if r[0] == here and r[1] != bare]
        if cased:
            return (
                f"table '{table}' does not exist, but '{cased[0]}' does: names are case-sensitive "
                "(PostgreSQL folds unquoted names to lower case when they are created); "
                f"pass --table {shlex.quote(cased[0])}"
            )
        elsewhere = [f"{r[0]}.{r[1]}" for r in rows if r[0] != here]
        if elsewhere:
            return (
                f"table '{table}' is not in schema '{here}' (found: {', '.join(elsewhere)}); "
                "name it with its schema, e.g. --table schema.t"
            )
        return f"table '{table}' does not exist in the database; pass an existing table or view with --table"

    def attach(self, path: Path, alias: str) -> None:
        raise InputError(
            f"--attach '{path}': a PostgreSQL --db cannot attach DuckDB files; name tables of "
            "other schemas of the same database as schema.table instead"
        )

    def _check_usage(self, schema: str, what: str) -> None:
        """Refuse ``schema`` (``what`` is in it) when it exists and the database user has no
        USAGE on it: PostgreSQL then says its tables do not exist, or denies them, without
        naming the schema."""
        rows = self._fetch(_NO_USAGE, {"schema": schema})
        if rows:
            raise InputError(_no_usage(what, rows[0][0], str(rows[0][1])))

    def working(self) -> tuple[str, str]:
        (database,) = self._fetch("SELECT pg_catalog.current_database()", None)[0]
        return str(database), str(self.schema)

    def use(self, database: str | None, schema: str | None) -> None:
        here_db = self.working()[0]
        if database is not None and database != here_db:
            raise InputError(
                f"database '{database}' is not the one --db connects to ('{here_db}'); "
                "PostgreSQL reads one database per connection: name it in --db"
            )
        schema = schema or self._working_schema()
        if not self._fetch("SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1", {"schema": schema}):
            raise InputError(
                f"schema '{schema}' does not exist in database '{here_db}'; create it first "
                f"(CREATE SCHEMA {self.sql(ident(schema))}) or name another"
            )
        self._check_usage(schema, f"schema '{schema}'")
        # the session's search_path stays SEARCH_PATH: the statements are run with their
        # tables qualified (runnable); the log says what the same statements mean in a
        # session of its own
        self.schema = schema
        self.show(f"SET search_path TO {self.sql(ident(schema))}")

    def write_into(self, path: Path, alias: str) -> None:
        raise InputError(
            f"--target-db '{path}': a PostgreSQL --db writes the release into the same database; "
            "name another schema with --output schema.name instead"
        )

    # ---- rows, labels, transactions ----

    def row_id(self, table_alias: str) -> exp.Expression:
        # the row's physical position (block, offset) as one BIGINT, block * 65536 + offset:
        # stable while the table is not modified, which a run never does. TIDSEND gives the
        # ctid's 6 bytes (a 4-byte block and a 2-byte offset, big-endian), read as a 48-bit
        # number; that costs a third of printing the ctid as text and parsing it back (0.13
        # against 0.42 s a scan of 1,000,000 rows), and every join of the labels pays it
        position = f"TIDSEND({self.sql(ident(table_alias))}.ctid)"
        tree = sqlglot.parse_one(
            f"CAST(CAST('x' || ENCODE({position}, 'hex') AS BIT(48)) AS BIGINT)", read=SbcPostgres
        )
        return typing.cast(exp.Expression, tree)

    def _ingest(self, name: str, table: pa.Table) -> None:
        """Create the temporary table ``name`` holding ``table``, by the driver's bulk ingest
        (binary COPY): the one place Arrow goes into the database (the class labels, an
        input file)."""
        cursor = self.connection.cursor()
        try:
            cursor.adbc_ingest(name, table, mode="create", temporary=True)
        finally:
            cursor.close()

    # ---- statistics of the tables a run makes ----

    def execute(self, statement: Statement, params: Params = None) -> None:
        super().execute(statement, params)
        if not self.dry:
            self._analyze_made(statement)

    def scratch(self, statement: Statement) -> None:
        super().scratch(statement)
        self._analyze_made(statement)

    def _analyze_made(self, statement: Statement) -> None:
        """ANALYZE the table a CREATE TABLE ... AS just made. Autovacuum never analyzes a
        temporary table and reaches a new one only after its nap, so the planner of the next
        statements guessed: a labelled source of 1,000,000 rows taken for 171,154 and its
        100,000 classes for 200 groups gave the class checks merge joins sorted on disk,
        3.2 s where they take 1.4 s on the table's statistics (ANALYZE samples 30,000 rows:
        about 0.1 s)."""
        if isinstance(statement, exp.Create) and statement.kind == "TABLE" and statement.expression:
            target = self.qualified(statement).this
            if isinstance(target, exp.Schema):
                target = target.this
            self._fetch(f"ANALYZE {self.sql(target)}", None)

    @contextlib.contextmanager
    def hashed_joins(self) -> Iterator[None]:
        """Merge joins off inside (the session's setting restored after). PostgreSQL takes a
        GENERATE_SERIES of non-constant bounds for 1,000 rows: the classes' values of a
        numeric QI (value_pairs_range) were estimated at 1e15 rows where there were 442,750,
        and the planner sorted them on disk for a merge join (a 100,000-row release's class
        values 3.4 s; hash joins 1.5 s)."""
        (was,) = self._fetch("SELECT pg_catalog.current_setting('enable_mergejoin')", None)[0]
        restore = "SELECT pg_catalog.set_config('enable_mergejoin', $1, false)"
        self._fetch("SELECT pg_catalog.set_config('enable_mergejoin', 'off', false)", None)
        try:
            yield
        except BaseException:
            # in a transaction the failure aborted, the rollback restores the setting
            with contextlib.suppress(EngineError):
                self._fetch(restore, {"was": was})
            raise
        self._fetch(restore, {"was": was})

    @contextlib.contextmanager
    def upload(self, name: str, table: pa.Table) -> Iterator[None]:
        with self.driver_call(f"uploading '{name}'"):
            self._ingest(name, table)
            self._fetch(f"ANALYZE pg_temp.{self.sql(ident(name))}", None)
        try:
            yield
        finally:
            with self.driver_call(f"dropping '{name}'"):
                self._fetch(f"DROP TABLE IF EXISTS pg_temp.{self.sql(ident(name))}", None)

    def can_stream(self) -> bool:
        return super().can_stream() and self._reopen is not None

    @contextlib.contextmanager
    def companion(self) -> Iterator[Engine]:
        if self._reopen is None:
            raise NotImplementedError("this PostgreSQL connection was not opened from a URL")
        other = PostgresEngine.connect(self._reopen)
        other._reopen = None
        other.trace = self.trace
        try:
            yield other
        finally:
            other.close()

    def append(self, name: str, table: pa.Table) -> None:
        with self.driver_call(f"appending to '{name}'"):
            cursor = self.connection.cursor()
            try:
                cursor.adbc_ingest(name, table, mode="create_append", temporary=True)
            finally:
                cursor.close()
        if name not in self._appended:
            self._appended.add(name)

    def discard(self, name: str) -> None:
        if name in self._appended:
            with self.driver_call(f"dropping '{name}'"):
                self._fetch(f"DROP TABLE IF EXISTS pg_temp.{self.sql(ident(name))}", None)
            self._appended.discard(name)
            return
        super().discard(name)

    def export_sql(self, table: str, path: str, fmt: str, provenance: str | None = None) -> exp.Expression:
        raise InputError(NO_EXPORT)

    def begin(self) -> None:
        self._fetch("BEGIN", None)

    def commit(self) -> None:
        self._fetch("COMMIT", None)

    def rollback(self) -> None:
        self._fetch("ROLLBACK", None)

    def server_value(self, sql: str) -> Any:
        import adbc_driver_manager

        try:
            cursor = self.connection.cursor()
            try:
                cursor.execute(sql)
                return cursor.fetchone()[0]
            finally:
                cursor.close()
        except adbc_driver_manager.Error as err:
            raise ServerError(str(err.sqlstate or ""), str(err)) from None

    def limit_memory(self, size: str) -> None:
        raise InputError(
            f"--memory-limit {size.strip()}: PostgreSQL's memory is the server's setting "
            "(work_mem, shared_buffers); leave the option out with a PostgreSQL --db"
        )


def _unqualified(statement: exp.Expression) -> list[exp.Table]:
    """The tables ``statement`` names without a schema (not its WITH queries)."""
    return [
        t
        for t in statement.find_all(exp.Table)
        if isinstance(t.this, exp.Identifier)
        and not t.args.get("db")
        and not isinstance(t.parent, exp.AlterRename)  # RENAME TO takes no schema
        and not _names_cte(t)
    ]


def _cte_names(ctes: Sequence[exp.Expression]) -> set[str]:
    return {c.alias_or_name for c in ctes}


def _names_cte(table: exp.Table) -> bool:
    """The table reference names a WITH query in scope rather than a table: one of an
    enclosing query's WITH, or an earlier one of the WITH it is defined in (a query of a
    WITH that is not RECURSIVE does not see itself: ``rel AS (SELECT ... FROM rel)`` reads
    the table rel)."""
    node: Any = table
    while node is not None and node.parent is not None:
        parent = node.parent
        if isinstance(parent, exp.With):
            ctes = parent.expressions
            at = next((i for i, c in enumerate(ctes) if c is node), len(ctes))
            seen = ctes[: at + 1] if parent.args.get("recursive") else ctes[:at]
            if table.name in _cte_names(seen):
                return True
            node = parent.parent  # the query owning this WITH: its own names are done
            continue
        with_ = parent.args.get("with_") or parent.args.get("with")
        if isinstance(with_, exp.With) and table.name in _cte_names(with_.expressions):
            return True
        node = parent
    return False


def _created_temporary(statement: exp.Expression) -> exp.Table | None:
    """The table a CREATE TEMPORARY TABLE or VIEW makes; None for any other statement."""
    if not isinstance(statement, exp.Create):
        return None
    properties = statement.args.get("properties")
    if properties is None or not any(isinstance(p, exp.TemporaryProperty) for p in properties.expressions):
        return None
    target = statement.this
    if isinstance(target, exp.Schema):  # CREATE TABLE t (columns)
        target = target.this
    return target if isinstance(target, exp.Table) else None


def _created_here(table: exp.Table) -> bool:
    """The table is the one a CREATE (not temporary) makes: it goes to the working schema
    even when a temporary table has its name."""
    create = table.find_ancestor(exp.Create)
    if create is None:
        return False
    target = create.this.this if isinstance(create.this, exp.Schema) else create.this
    return target is table


def safe_url(url: str) -> str:
    """The URL with SEARCH_PATH added to its ``options`` (after any the URL, or else
    PGOPTIONS, gives, so that it wins): the session has it from its start."""
    parts = urllib.parse.urlsplit(url)
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    ours = "-c search_path=" + SEARCH_PATH.replace(" ", "")
    options = [v for k, v in query if k == "options"] or [os.environ.get("PGOPTIONS", "")]
    query = [(k, v) for k, v in query if k != "options"]
    query.append(("options", " ".join([o for o in options if o] + [ours])))
    text = urllib.parse.urlencode(query, quote_via=urllib.parse.quote)
    return urllib.parse.urlunsplit(parts._replace(query=text))


_OPTION_PATH = re.compile(r"(?:-c\s*|--)search_path=((?:\\.|\S)+)")


def _asked_path(url: str) -> str | None:
    """The search_path the connection's own options ask for (the URL's ``options``, then
    PGOPTIONS), None when they ask none: libpq's escapes (a backslash) undone."""
    query = urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query, keep_blank_values=True)
    given = [v for k, v in query if k == "options"] or [os.environ.get("PGOPTIONS", "")]
    found = _OPTION_PATH.findall(" ".join(given))
    return re.sub(r"\\(.)", r"\1", found[-1]) if found else None


def _rows(table: pa.Table) -> list[tuple[Any, ...]]:
    return list(zip(*(c.to_pylist() for c in table.columns), strict=True))


def _check_name(name: str, flag: str) -> None:
    parsed = names.parse(name)
    for part in (parsed.catalog, parsed.schema, parsed.name):
        if part is not None and len(part.encode()) > MAX_IDENTIFIER_BYTES:
            raise InputError(
                f"{flag} names '{part[:20]}...', longer than PostgreSQL's {MAX_IDENTIFIER_BYTES} "
                "bytes; PostgreSQL would cut it to another name: rename it"
            )


_PLACEHOLDER = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|%\((\w+)\)s")


def _positional(sql: str, params: Params) -> tuple[str, tuple[Any, ...]]:
    """The SQL with its named parameters (``%(name)s`` as the dialect prints them, or ``$1``
    already) as libpq's positional ``$n``, and their values in that order. Quoted text is
    left alone."""
    if not params:
        return sql, ()
    order: list[str] = []

    def number(m: re.Match[str]) -> str:
        key = m.group(1)
        if key is None:
            return m.group(0)
        if key not in order:
            order.append(key)
        return f"${order.index(key) + 1}"

    text = _PLACEHOLDER.sub(number, sql)
    if not order:  # the catalog's own queries number their parameters in the mapping's order
        return text, tuple(params.values())
    return text, tuple(params[k] for k in order)


def _plain(table: pa.Table) -> pa.Table:
    """NUMERIC columns (which the driver hands over as text) as float64; an integral SUM is
    compared as a number everywhere it is read."""
    return pa.Table.from_batches([_plain_batch(b) for b in table.to_batches()], _plain_schema(table.schema))


def _plain_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema(
        [pa.field(f.name, pa.float64()) if _is_numeric(f) else f.remove_metadata() for f in schema]
    )


def _is_numeric(field: pa.Field) -> bool:
    return isinstance(field.type, pa.BaseExtensionType) and "numeric" in str(field.type)


def _plain_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    import pyarrow.compute as pc

    if not any(_is_numeric(f) for f in batch.schema):
        return batch
    columns = [
        pc.cast(c.storage, pa.float64()) if _is_numeric(f) else c
        for f, c in zip(batch.schema, batch.columns, strict=True)
    ]
    return pa.RecordBatch.from_arrays(columns, schema=_plain_schema(batch.schema))


#: libpq's reasons a connection fails (it gives no SQLSTATE then): its fixed words only
_REFUSED = (
    (r"FATAL:\s+database \S+ does not exist", "3D000"),
    (r"FATAL:\s+role \S+ does not exist", "28000"),
    (r"password authentication failed|no password supplied|no pg_hba.conf entry", "28P01"),
)


def _refused(err: BaseException, doing: str) -> BaseException:
    """Why a connection failed, in sbc-sql's words: libpq's text names the host, the user and
    the database (never the password) and is matched, not shown."""
    text = str(err)
    for pattern, state in _REFUSED:
        if re.search(pattern, text):
            said, kind = _STATES.get(state) or _CLASSES[state[:2]]
            return EngineError(f"{doing}: {said}", kind)
    translated = _translate(err, doing)
    if translated is None or "SQLSTATE" not in str(translated):
        said, kind = _CLASSES["08"]
        return EngineError(f"{doing}: {said}", kind)
    return translated


def _translate(err: BaseException, doing: str) -> BaseException | None:
    """An ADBC/PostgreSQL error as sbc-sql's EngineError, read by its SQLSTATE alone; a query
    cancelled (Ctrl-C) as KeyboardInterrupt."""
    try:
        import adbc_driver_manager
    except ImportError:  # pragma: no cover - the engine needs the driver
        return None
    if not isinstance(err, adbc_driver_manager.Error):
        return None
    state = str(getattr(err, "sqlstate", None) or "")
    cancelled = isinstance(err, adbc_driver_manager.OperationalError) and "cancel" in str(err).lower()
    if state == "57014" or cancelled:
        return KeyboardInterrupt()
    return by_state(state, doing)


def by_state(state: str, doing: str) -> EngineError:
    """The EngineError for a PostgreSQL error of SQLSTATE ``state`` (empty: unknown) met
    while ``doing``, in sbc-sql's words."""
    unknown = (
        "a PostgreSQL error (its text is not shown, as it may quote the data); "
        "rerun with --debug to see where",
        "other",
    )
    said, kind = _STATES.get(state) or _CLASSES.get(state[:2]) or unknown
    code = f" (SQLSTATE {state})" if state else ""
    return EngineError(f"{doing}: {said}{code}", kind)
