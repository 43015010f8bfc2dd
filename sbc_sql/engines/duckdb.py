"""DuckDB, the embedded default engine: the only module that touches raw DuckDB result
objects (an unfinished result holds its connection). Its errors are read for what may be
shown in :mod:`.duckdb_messages`."""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import Hashable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import sqlglot
from sqlglot import exp

from .. import names
from .. import names as _names
from ..errors import InputError
from ..model import ColumnInfo, CsvOptions, TableInfo
from ..sql.dialects import SbcDuckDB
from ..sql.templates import ident
from .base import Capabilities, Engine, Params
from .duckdb_messages import display_type, explain
from .files import ragged_line
from .paths import is_parquet, looks_like_file

#: the temporary table a file or view is read into for the run
SOURCE_ALIAS = "sbc_source_file"

# DuckDB's catalog is case-insensitive ("Patients" and "patients" are one table, quoted or
# not), so every look-up compares lower-cased names
_WHERE = (
    "schema_name = COALESCE($schema, current_schema()) "
    "AND database_name = COALESCE($database, current_database())"
)
_KINDS = (
    "SELECT table_name, 'TABLE' FROM duckdb_tables() WHERE list_contains($names, lower(table_name)) "
    f"AND {_WHERE} UNION ALL "
    "SELECT view_name, 'VIEW' FROM duckdb_views() WHERE NOT internal AND "
    f"list_contains($names, lower(view_name)) AND {_WHERE}"
)
_COMMENT = (
    f"SELECT comment FROM duckdb_tables() WHERE lower(table_name) = lower($name) AND {_WHERE} "
    "UNION ALL SELECT comment FROM duckdb_views() WHERE NOT internal AND "
    f"lower(view_name) = lower($name) AND {_WHERE}"
)
_COLUMNS = (
    "SELECT column_name, data_type, comment FROM duckdb_columns() WHERE lower(table_name) = lower($name) "
    f"AND {_WHERE} ORDER BY column_index"
)
_VIEW_SQL = (
    f"SELECT sql FROM duckdb_views() WHERE NOT internal AND lower(view_name) = lower($name) AND {_WHERE}"
)
#: the object a name resolves to, as the catalog spells its database, schema and name
_IDENTITY_WHERE = (
    "lower(schema_name) = lower(COALESCE($schema, current_schema())) "
    "AND lower(database_name) = lower(COALESCE($database, current_database()))"
)
_IDENTITY = (
    "SELECT database_name, schema_name, table_name FROM duckdb_tables() "
    f"WHERE lower(table_name) = lower($name) AND {_IDENTITY_WHERE} UNION ALL "
    "SELECT database_name, schema_name, view_name FROM duckdb_views() WHERE NOT internal "
    f"AND lower(view_name) = lower($name) AND {_IDENTITY_WHERE}"
)
#: the look-ups of several names in both places an unqualified name resolves to at once
#: (``$schema`` and ``$database`` None): the temporary objects, then the working schema. Each
#: row says whether it is a temporary object; the rows of those come first
_TEMPORARY = "(database_name = 'temp' AND schema_name = 'main')"
_EITHER = f"({_TEMPORARY} OR ({_WHERE}))"
_KINDS_EITHER = (
    f"SELECT table_name, 'TABLE', {_TEMPORARY} AS temporary FROM duckdb_tables() "
    f"WHERE list_contains($names, lower(table_name)) AND {_EITHER} UNION ALL "
    f"SELECT view_name, 'VIEW', {_TEMPORARY} FROM duckdb_views() WHERE NOT internal AND "
    f"list_contains($names, lower(view_name)) AND {_EITHER} ORDER BY temporary DESC"
)
#: the comments of several names, each row with the name as it was given
_COMMENTS_EITHER = (
    f"SELECT q.name, t.comment, {_TEMPORARY} AS temporary FROM (SELECT unnest($names) AS name) AS q "
    f"JOIN duckdb_tables() AS t ON lower(t.table_name) = lower(q.name) WHERE {_EITHER} UNION ALL "
    f"SELECT q.name, v.comment, {_TEMPORARY} FROM (SELECT unnest($names) AS name) AS q "
    f"JOIN duckdb_views() AS v ON lower(v.view_name) = lower(q.name) WHERE NOT v.internal AND {_EITHER} "
    "ORDER BY temporary DESC"
)
#: _IDENTITY of several names, each row with the name as it was given
_IDENTITY_EITHER = f"({_TEMPORARY} OR ({_IDENTITY_WHERE}))"
_IDENTITIES_EITHER = (
    f"SELECT q.name, t.database_name, t.schema_name, t.table_name, {_TEMPORARY} AS temporary "
    "FROM (SELECT unnest($names) AS name) AS q JOIN duckdb_tables() AS t "
    f"ON lower(t.table_name) = lower(q.name) WHERE {_IDENTITY_EITHER} UNION ALL "
    f"SELECT q.name, v.database_name, v.schema_name, v.view_name, {_TEMPORARY} "
    "FROM (SELECT unnest($names) AS name) AS q JOIN duckdb_views() AS v "
    f"ON lower(v.view_name) = lower(q.name) WHERE NOT v.internal AND {_IDENTITY_EITHER} "
    "ORDER BY temporary DESC"
)
#: the catalog queries' place: where unqualified names are read and written
_HERE: dict[str, str | None] = {"database": None, "schema": None}
#: the connection's temporary objects
_TEMP: dict[str, str | None] = {"database": "temp", "schema": "main"}


_INTEGER = {
    "TINYINT",
    "SMALLINT",
    "INTEGER",
    "BIGINT",
    "HUGEINT",
    "UTINYINT",
    "USMALLINT",
    "UINTEGER",
    "UBIGINT",
    "UHUGEINT",
    "INT",
    "INT4",
    "INT8",
    "INT2",
    "INT1",
}
_FLOAT = {"FLOAT", "DOUBLE", "REAL", "FLOAT4", "FLOAT8"}
_UNSUPPORTED = {"BLOB", "BIT", "INTERVAL", "BYTEA", "VARBINARY", "VARINT", "BIGNUM", "NULL"}


def type_kind(sql_type: str) -> tuple[str | None, str | None]:
    """(kind, temporal) of a DuckDB column type: numbers, dates and timestamps are numeric,
    other scalars categorical; kind None for nested, binary and interval types."""
    t = sql_type.upper().strip()
    base = re.split(r"[(\s]", t, maxsplit=1)[0]
    if t.endswith("]") or base in ("STRUCT", "MAP", "UNION", "LIST") or base in _UNSUPPORTED:
        return None, None
    if base == "DATE":
        return "numeric", "date"
    if base.startswith("TIMESTAMP") or base == "DATETIME":
        return "numeric", "timestamp"
    if base in _INTEGER or base in _FLOAT or base in ("DECIMAL", "NUMERIC"):
        return "numeric", None
    return "categorical", None


class DuckDBEngine(Engine):
    """A DuckDB connection: a database file, in memory, or one the caller opened."""

    name = "duckdb"
    dialect = SbcDuckDB
    capabilities = Capabilities(tuples=True, value_sets=True, streams=True)

    def __init__(self, connection: duckdb.DuckDBPyConnection, *, owned: bool = False) -> None:
        super().__init__()
        self.connection = connection
        self._undo_target: tuple[tuple[str, str], str] | None = None
        #: the connection was opened here (not passed in), so closing it is ours to do
        self.owned = owned
        #: the temporary tables :meth:`append` made
        self._appended: set[str] = set()

    @classmethod
    def connect(
        cls,
        db: str | Path | duckdb.DuckDBPyConnection | None,
        *,
        must_exist: bool = True,
        read_only: bool = False,
    ) -> DuckDBEngine:
        """An engine over the database file (or the connection given; None: in memory).
        ``read_only`` opens the file read-only: it may be a file the user cannot write, or
        one another process reads."""
        if isinstance(db, duckdb.DuckDBPyConnection):
            return cls(db)
        if db is None or str(db) == ":memory:":
            return cls(_quiet(duckdb.connect()), owned=True)
        path = Path(db)
        if must_exist and not path.exists():
            raise InputError(
                f"database file '{path}' does not exist; pass an existing DuckDB file "
                "with --db (examples/make_clinic_db.py makes one)"
            )
        # the files this connect makes: the database, and its log unless one is there
        wal = path.with_name(path.name + ".wal")
        created: list[Path] = []
        if not path.exists():
            created = [path] if wal.exists() or wal.is_symlink() else [path, wal]
        try:
            connection = _quiet(_open(path, read_only))
        except BaseException as err:
            for made in created:  # a file half made by a failed open goes too
                made.unlink(missing_ok=True)
            translated = _translate(err, f"opening --db '{path}'")
            if translated is None:
                raise
            raise translated from None
        engine = cls(connection, owned=True)
        engine.created = created
        return engine

    # ---- running: every driver call inside the boundary ----

    def translate(self, err: Exception, doing: str) -> BaseException | None:
        return _translate(err, doing)

    def _fetch(self, sql: str, params: Params) -> list[tuple[Any, ...]]:
        with self.driver_call(lambda: self.operation(sql)):
            return self.connection.execute(sql, dict(params) if params else None).fetchall()

    def _arrow(self, sql: str) -> pa.Table:
        with self.driver_call(lambda: self.operation(sql)):
            return self.connection.sql(sql).to_arrow_table()

    def _stream(self, sql: str, batch_rows: int, params: Params = None) -> Iterator[pa.RecordBatch]:
        with self.driver_call(lambda: self.operation(sql)):
            reader = self.connection.sql(sql, params=dict(params) if params else None).to_arrow_reader(
                batch_rows
            )
        try:
            while True:
                with self.driver_call(lambda: self.operation(sql)):
                    batch = next(reader, None)
                if batch is None:
                    return
                yield batch
        finally:
            reader.close()

    def close(self) -> None:
        if self.owned:
            self.connection.close()

    def discard_created(self) -> None:
        undo = self._undo_target
        if undo is not None and not self.owned:
            # a caller's connection stays open: it goes back where it was, without the target
            (database, schema), alias = undo
            self._fetch(self._use_sql(database, schema), None)
            self._fetch(f"DETACH {self.sql(ident(alias))}", None)
            self._undo_target = None
        super().discard_created()

    # ---- catalog (not part of a run's log) ----

    # An unqualified name is looked up as SQL resolves it: a temporary object first (such as
    # a table of another schema read in by copy_in), then the working schema.

    def object_kinds(self, names: Sequence[str]) -> dict[str, str]:
        kinds: dict[str, str] = {}
        for found, kind, _ in self._fetch(_KINDS_EITHER, {"names": [n.lower() for n in names], **_HERE}):
            kinds.setdefault(found.lower(), kind)  # a temporary object first
        return {n: kinds[n.lower()] for n in names if n.lower() in kinds}

    def identities(self, names: Sequence[str], *, output: bool = False) -> dict[str, Hashable]:
        found: dict[str, tuple[str, str, str]] = {}
        parsed = {
            n: _names.Name(n) if output else _names.parse(n)
            for n in names
            if output or not looks_like_file(n)
        }
        # the bare names in one catalog query (a release's four names: one look-up rather
        # than eight), the qualified ones each as _resolve finds it
        bare = {n: name.name for n, name in parsed.items() if name.schema is None}
        by_name: dict[str, tuple[str, str, str]] = {}
        for row in self._fetch(_IDENTITIES_EITHER, {"names": list(bare.values()), **_HERE}) if bare else []:
            by_name.setdefault(
                str(row[0]), (str(row[1]), str(row[2]), str(row[3]))
            )  # a temporary object first
        found.update({n: by_name[b] for n, b in bare.items() if b in by_name})
        for n, name in parsed.items():
            full = self._resolve(name) if n not in bare else None
            if full is not None:
                found[n] = full
        # DuckDB's catalog is case-insensitive: one object, however its name is spelt
        return {n: tuple(p.lower() for p in found[n]) for n in names if n in found}

    def _resolve(self, name: _names.Name) -> tuple[str, str, str] | None:
        """The database, schema and name (as the catalog spells them) of the table or view
        ``name`` resolves to as SQL resolves it here, or None: a bare name in the temporary
        objects, then the working schema; ``a.b`` in schema ``a`` of the working database,
        then in database ``a``'s main schema; ``a.b.c`` exactly."""
        if name.schema is None:
            places = [_TEMP, _HERE]
        elif name.catalog is None:
            places = [{"database": None, "schema": name.schema}, {"database": name.schema, "schema": "main"}]
        else:
            places = [{"database": name.catalog, "schema": name.schema}]
        for where in places:
            rows = self._fetch(_IDENTITY, {"name": name.name, **where})
            if rows:
                database, schema, table = rows[0]
                return str(database), str(schema), str(table)
        return None

    def comment(self, name: str) -> str | None:
        for where in (_TEMP, _HERE):
            rows = self._fetch(_COMMENT, {"name": name, **where})
            if rows:
                return rows[0][0]  # type: ignore[no-any-return]
        return None

    def comments(self, names: Sequence[str]) -> dict[str, str | None]:
        # one catalog query for all the names, rather than one per name and place
        found: dict[str, str | None] = {}
        for name, text, _ in (
            self._fetch(_COMMENTS_EITHER, {"names": list(dict.fromkeys(names)), **_HERE}) if names else []
        ):
            found.setdefault(str(name), text)  # a temporary object first
        return {n: found.get(n) for n in names}

    def describe(self, name: str, *, temporary: bool = False) -> TableInfo:
        for where in (_TEMP,) if temporary else (_TEMP, _HERE):
            info = self._describe_at(name, where)
            if info.columns:
                break
        return info

    def copy_in(self, table: str) -> None:
        name = names.parse(table)
        if not name.qualified:
            raise InputError(f"table or view '{table}' does not exist in the database")
        self._copy_elsewhere(table, name, table, "pass an existing one with --original")

    def _copy_elsewhere(self, table: str, name: names.Name, into: str, fix: str) -> None:
        """Read the table or view ``name`` of another schema or attached database into the
        temporary table ``into``, its columns' comments (the roles) kept; ``fix`` ends the
        message when it does not exist."""
        where = {"database": name.catalog, "schema": name.schema}
        if not self._fetch(_KINDS, {"names": [name.name.lower()], **where}):
            raise InputError(
                f"table '{table}' does not exist: no table or view '{name.name}' in schema "
                f"'{name.schema}'{f' of database {name.catalog!r}' if name.catalog else ''}; {fix}"
            )
        source = self._qualified(name)
        with self.driver_call(f"reading '{table}'"):
            self._temp_copy(into, source)
            for column in self._describe_at(name.name, where).columns:
                if column.comment is not None:
                    target = exp.Column(
                        this=ident(column.name), table=ident(into), db=ident("main"), catalog=ident("temp")
                    )
                    text = self.sql(exp.Literal.string(column.comment))
                    self._fetch(f"COMMENT ON COLUMN {self.sql(target)} IS {text}", None)

    def _qualified(self, name: names.Name) -> str:
        parts: dict[str, Any] = {"this": ident(name.name), "db": ident(name.schema or "")}
        if name.catalog:
            parts["catalog"] = ident(name.catalog)
        return self.sql(exp.Table(**parts))

    def _describe_at(self, name: str, where: Mapping[str, str | None]) -> TableInfo:
        rows = self._fetch(_COLUMNS, {"name": name, **where})
        return TableInfo(
            name, tuple(ColumnInfo(r[0], display_type(r[1]), r[2], *type_kind(r[1])) for r in rows)
        )

    def database_files(self) -> list[Path]:
        rows = self._fetch("SELECT path FROM duckdb_databases() WHERE path IS NOT NULL", None)
        files = [Path(r[0]) for r in rows]
        return files + [f.with_name(f.name + ".wal") for f in files]

    def open_source(self, table: str, csv: CsvOptions | None = None) -> TableInfo:
        info = self._open_source(table, csv or CsvOptions())
        for c in info.columns:
            # rows are keyed by DuckDB's rowid, which a column of that name hides
            if c.name.lower() == "rowid":
                raise InputError(
                    f"column '{c.name}' of '{table}' hides DuckDB's row position; rename "
                    "it in the source (e.g. ALTER TABLE ... RENAME COLUMN)"
                )
        return info

    def _open_source(self, table: str, csv: CsvOptions) -> TableInfo:
        if looks_like_file(table):
            path = Path(table)
            if not path.exists():
                raise InputError(
                    f"input file '{table}' does not exist; pass an existing CSV or "
                    "Parquet file, or a table name, with --table"
                )
            parquet = is_parquet(table)
            with self.driver_call(f"reading {'Parquet' if parquet else 'CSV'} file '{table}'"):
                if parquet:
                    self._read_file(path, "read_parquet($path)")
                else:
                    given: dict[str, Any] = {"delim": csv.delimiter, "header": csv.header}
                    options = {k: v for k, v in given.items() if v is not None}
                    reader = ", ".join(["$path", *(f"{k} = ${k}" for k in options)])
                    self._read_file(path, f"read_csv({reader})", **options)
            info = self.describe(SOURCE_ALIAS, temporary=True)
            if not parquet and len(info.columns) == 1 and csv.delimiter is None:
                header = info.columns[0].name
                delimiter = next((d for d in (",", ";", "\t", "|") if d in header), None)
                ragged = ragged_line(path, delimiter) if delimiter is not None else None
                if ragged is not None:
                    # the sniffer found no delimiter that every row agrees on, and read each
                    # line as one value
                    line, fields, expected = ragged
                    raise InputError(
                        f"CSV file '{path}': line {line:,} has {fields} field(s) where the header "
                        f"has {expected} (delimiter '{delimiter}'), so its columns cannot be read; "
                        "fix or remove that line, or pass --csv-delimiter if another character "
                        "separates the fields"
                    )
            return TableInfo(info.name, info.columns, from_file=str(path))
        kinds = self.object_kinds([table])
        if kinds.get(table) == "TABLE":
            return dataclasses.replace(self.describe(table), reads=(table,))
        if kinds.get(table) == "VIEW":
            reads = self._reads(table)
            # a view has no row positions: read it once into a temporary table
            view = self.sql(exp.Table(this=ident(table)))
            with self.driver_call(f"reading view '{table}'"):
                self._temp_copy(SOURCE_ALIAS, view)
            info = self.describe(SOURCE_ALIAS, temporary=True)
            return TableInfo(info.name, info.columns, from_file=table, reads=reads)
        name = names.parse(table)
        if name.qualified:
            return self._open_elsewhere(table, name)
        raise InputError(self._missing(table))

    def _open_elsewhere(self, table: str, name: names.Name) -> TableInfo:
        """A table or view of another schema or attached database, read once into a temporary
        table for the run, its columns' comments (the roles) kept."""
        fix = "pass an existing one with --table (attach another database file with --attach FILE)"
        self._copy_elsewhere(table, name, SOURCE_ALIAS, fix)
        info = self.describe(SOURCE_ALIAS, temporary=True)
        # a qualified name may still be of the working schema, where the outputs go (and
        # --output schema.name writes elsewhere): what it reads is kept like any input's
        return TableInfo(info.name, info.columns, from_file=table, reads=self._reads(table))

    def working(self) -> tuple[str, str]:
        database, schema = self._fetch("SELECT current_database(), current_schema()", None)[0]
        return str(database), str(schema)

    def use(self, database: str | None, schema: str | None) -> None:
        here_db, here_schema = self.working()
        database, schema = database or here_db, schema or here_schema
        known = self._fetch(
            "SELECT 1 FROM duckdb_schemas() WHERE lower(database_name) = lower($database) "
            "AND lower(schema_name) = lower($schema)",
            {"database": database, "schema": schema},
        )
        if not known:
            raise InputError(
                f"schema '{schema}' does not exist in database '{database}'; create it first "
                f"(CREATE SCHEMA {self.sql(ident(schema))}) or name another"
            )
        use = self._use_sql(database, schema)
        with self.driver_call(f"using schema '{database}.{schema}'"):
            self._fetch(use, None)
        self.show(use)

    def write_into(self, path: Path, alias: str) -> None:
        file, name = self.sql(exp.Literal.string(str(path))), self.sql(ident(alias))
        attach, use = f"ATTACH {file} AS {name} (READ_WRITE)", f"USE {name}"
        wal = path.with_name(path.name + ".wal")
        made = [] if path.exists() else [path] if wal.exists() else [path, wal]
        planned = attach if not (self.dry and made) else f"ATTACH ':memory:' AS {name} (READ_WRITE)"
        before = self.working()
        with self.driver_call(f"opening --target-db '{path}'"):
            self._fetch(planned, None)
            self._fetch(use, None)
        # on a caller's connection, what a failed run undoes before it removes a file it made
        self._undo_target = (before, alias)
        if not self.dry:
            self.created += made
        # the statements a replay of the run needs first
        self.show(attach)
        self.show(use)

    def attach(self, path: Path, alias: str) -> None:
        if not path.exists():
            raise InputError(f"--attach '{path}' does not exist; give an existing DuckDB database file")
        statement = (
            f"ATTACH {self.sql(exp.Literal.string(str(path)))} AS {self.sql(ident(alias))} (READ_ONLY)"
        )
        with self.driver_call(f"attaching '{path}' as '{alias}'"):
            self._fetch(statement, None)

    def _read_file(self, path: Path, reader: str, **params: Any) -> None:
        self._temp_copy(SOURCE_ALIAS, reader, {"path": str(path), **params})

    def _temp_copy(self, into: str, source: str, params: Params = None) -> None:
        """The temporary table ``into`` made of everything ``source`` (SQL text) holds."""
        self._fetch(f"CREATE OR REPLACE TEMP TABLE {self.sql(ident(into))} AS SELECT * FROM {source}", params)

    def _use_sql(self, database: str, schema: str) -> str:
        return f"USE {self.sql(ident(database))}.{self.sql(ident(schema))}"

    def _missing(self, table: str) -> str:
        """Why ``table`` is not found: absent, or in a schema or database other than main."""
        where = self._fetch(
            "SELECT database_name || '.' || schema_name || '.' || table_name FROM duckdb_tables() "
            "WHERE lower(table_name) = lower($name) UNION ALL "
            "SELECT database_name || '.' || schema_name || '.' || view_name FROM duckdb_views() "
            "WHERE NOT internal AND lower(view_name) = lower($name)",
            {"name": table.rsplit(".", 1)[-1]},
        )
        if where:
            return (
                f"table '{table}' is not in the main schema of the database (found: "
                f"{', '.join(sorted(r[0] for r in where))}); name it with its schema, e.g. "
                "--table schema.t (or database.schema.t)"
            )
        return f"table '{table}' does not exist in the database; pass an existing table or view with --table"

    def _reads(self, table: str) -> tuple[str, ...]:
        """``table`` and, for a view, every table and view it selects from, transitively
        (each named with its database and schema): the objects no output may replace while
        ``table`` is the input."""
        found: list[str] = [table]
        seen: set[tuple[str, ...]] = set()
        pending = [_names.parse(table)]
        while pending:
            full = self._resolve(pending.pop())
            if full is None or tuple(p.lower() for p in full) in seen:
                continue
            seen.add(tuple(p.lower() for p in full))
            if len(seen) > 1:
                found.append(str(_names.Name(full[2], full[1], full[0])))
            database, schema, name = full
            rows = self._fetch(_VIEW_SQL, {"name": name, "database": database, "schema": schema})
            for ref in _selected_tables(rows[0][0], name) if rows else []:
                # a view's names are bound in its own database and schema first
                placed = _names.Name(ref.name, ref.schema or schema, ref.catalog or database)
                pending.append(placed if self._resolve(placed) is not None else ref)
        return tuple(found)

    # ---- rows, labels, transactions ----

    def row_id(self, table_alias: str) -> exp.Expression:
        # DuckDB's row position: stable while the table is not modified, which a run never does
        return exp.column("rowid", table=table_alias)

    @contextlib.contextmanager
    def upload(self, name: str, table: pa.Table) -> Iterator[None]:
        with self.driver_call(f"uploading '{name}'"):
            self.connection.register(name, table)
        try:
            yield
        finally:
            with self.driver_call(f"dropping '{name}'"):
                self.connection.unregister(name)

    @contextlib.contextmanager
    def companion(self) -> Iterator[Engine]:
        # a cursor: another connection to the same database, which shares its memory limit
        # and spill folder; its temporary tables are its own
        with self.driver_call("opening a second connection"):
            cursor = self.connection.cursor()
        other = DuckDBEngine(cursor, owned=True)
        other.trace = self.trace
        try:
            yield other
        finally:
            with contextlib.suppress(Exception):
                cursor.close()

    def append(self, name: str, table: pa.Table) -> None:
        view = f"{name}_rows"
        target = self.sql(ident(name))
        with self.driver_call(f"appending to '{name}'"):
            self.connection.register(view, table)
            try:
                if name in self._appended:
                    self.connection.execute(f"INSERT INTO {target} SELECT * FROM {self.sql(ident(view))}")
                else:
                    self.connection.execute(
                        f"CREATE TEMPORARY TABLE {target} AS SELECT * FROM {self.sql(ident(view))}"
                    )
                    self._appended.add(name)
            finally:
                self.connection.unregister(view)

    def discard(self, name: str) -> None:
        super().discard(name)
        self._appended.discard(name)

    def export_sql(self, table: str, path: str, fmt: str, provenance: str | None = None) -> exp.Expression:
        options = {
            "parquet": [("FORMAT", "PARQUET")],
            "csv": [("FORMAT", "CSV"), ("HEADER", "TRUE")],
            "json": [("FORMAT", "JSON"), ("ARRAY", "TRUE")],
            "ndjson": [("FORMAT", "JSON")],
        }[fmt]
        params = [exp.CopyParameter(this=exp.var(k), expression=exp.var(v)) for k, v in options]
        if fmt == "parquet" and provenance is not None:
            # the file says how it was made, as key-value metadata 'sbc_sql'
            metadata = exp.Struct(
                expressions=[
                    exp.PropertyEQ(
                        this=exp.Literal.string("sbc_sql"), expression=exp.Literal.string(provenance)
                    )
                ]
            )
            params.append(exp.CopyParameter(this=exp.var("KV_METADATA"), expression=metadata))
        # in class order; within a class the row table's order (by released values)
        rows = exp.select(exp.Star()).from_(exp.Table(this=ident(table))).order_by(ident("eq_class"))
        return exp.Copy(
            this=exp.Subquery(this=rows), kind=False, files=[exp.Literal.string(path)], params=params
        )

    def begin(self) -> None:
        self._fetch("BEGIN TRANSACTION", None)

    def commit(self) -> None:
        self._fetch("COMMIT", None)

    def rollback(self) -> None:
        self._fetch("ROLLBACK", None)

    def load_frame(self, name: str, frame: object) -> None:
        """Copy a DataFrame or Arrow table into the table ``name`` (a new one)."""
        scan = f"sbc_frame_{id(frame):x}"
        self.connection.register(scan, frame)
        try:
            table = self.sql(exp.Table(this=ident(name)))
            self._fetch(f'CREATE TABLE {table} AS SELECT * FROM "{scan}"', None)
        finally:
            self.connection.unregister(scan)

    def limit_memory(self, size: str) -> None:
        with self.driver_call(f"setting --memory-limit {size.strip()}"):
            self._fetch(f"SET memory_limit = {self.sql(exp.Literal.string(size.strip()))}", None)


def _open(path: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    """A connection to the file, read-only if asked; but a file this process holds open for
    writing already (a Python session that has just anonymized into it) can only be shared
    as it is open, and reading it through that is as good."""
    try:
        return duckdb.connect(str(path), read_only=read_only)
    except duckdb.ConnectionException as err:
        if read_only and "different configuration" in str(err):
            return duckdb.connect(str(path))
        raise


def _translate(err: BaseException, doing: str) -> BaseException | None:
    """A DuckDB error as sbc-sql's EngineError (see :mod:`.duckdb_messages`); a query DuckDB
    stopped on Ctrl-C (or on a signal whose handler raised) as KeyboardInterrupt."""
    if isinstance(err, RuntimeError) and str(err) == "Query interrupted":
        return KeyboardInterrupt()
    if isinstance(err, duckdb.Error):
        return explain(str(err), doing)
    return None


def _selected_tables(create_view: str, view: str) -> list[_names.Name]:
    """The tables and views a CREATE VIEW statement selects from, as it names them (its own
    common table expressions excluded)."""
    try:
        tree = sqlglot.parse_one(create_view, read="duckdb")
    except sqlglot.errors.ParseError:
        raise InputError(
            f"cannot tell which tables view '{view}' reads; anonymize a table instead, "
            f"e.g. CREATE TABLE {view}_copy AS SELECT * FROM {view}"
        ) from None
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    created = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    found = []
    for table in tree.find_all(exp.Table):
        if table is created or not table.name:
            continue
        if table.db or table.name.lower() not in ctes:
            found.append(_names.Name(table.name, table.db or None, table.catalog or None))
    return found


def _quiet(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """Our own progress bar speaks for the run; DuckDB's would interleave with it."""
    con.execute("SET enable_progress_bar = false").fetchall()
    return con
