"""What a name is to the Spark engine: a view the run made, a path or a table of the Spark
catalog registered as a temporary view for the stages to read; their comments and columns;
the catalog and database outputs go to."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ... import names
from ...errors import EngineError, InputError
from ...model import ColumnInfo, CsvOptions, TableInfo
from ..paths import looks_like_path
from .columns import typed
from .connection import quoted
from .files import SparkFiles

#: the cached temporary view the input is read into for the run, and a token of its own
#: (another run may share the session)
SOURCE_PREFIX = "sbc_source_"
#: the input's row id column in that view (a source column may not take the name)
ROW_ID = "sbc_row_id"


class SparkCatalog(SparkFiles):
    """The Spark engine's names and catalog look-ups (not part of a run's log)."""

    def __init__(self, session: Any, *, owned: bool = False) -> None:
        super().__init__(session, owned=owned)
        #: temporary views the run's statements made, and their kind ('TABLE': cached)
        self._views: dict[str, str] = {}
        #: temporary views the engine registered: the input, paths and tables it reads
        self._registered: set[str] = set()
        #: a registered path's view name -> the path, qualified
        self._paths: dict[str, str] = {}
        #: DataFrames given as input, by the name they are read under
        self._frames: dict[str, Any] = {}
        #: the catalog and database outputs are written to (use()); None: the session's
        self._catalog: str | None = None
        self._database: str | None = None
        self._source = f"{SOURCE_PREFIX}{secrets.token_hex(4)}"

    def _catalog_in_memory(self) -> bool:
        with self._driver("reading the session's settings"):
            implementation = self.session.conf.get("spark.sql.catalogImplementation", "in-memory")
        return str(implementation) == "in-memory"

    def _catalog_name(self, name: str) -> str:
        """A table of the working database as Spark names it in full."""
        catalog, database = self.working()
        return ".".join(quoted(p) for p in (catalog, database, name))

    def _kind(self, name: str) -> str | None:
        """'VIEW' for a view the run made by CREATE VIEW, 'TABLE' for anything else that
        exists under the name (a path or a catalog table is registered for the stages to
        read), None when nothing does."""
        if name in self._views:
            return self._views[name]
        if name in self._registered or name in self._frames:
            return "TABLE"
        if looks_like_path(name):
            path = self._qualified_path(name)
            with self._driver(f"reading the path '{name}'"):
                if not self._exists(path):
                    return None
            # registered for the stages to read; a folder that is no table (an output to
            # replace, say) exists all the same, and says what it is when it is read
            with contextlib.suppress(EngineError):
                self._register_path(name, path)
            return "TABLE"
        with self._driver(f"looking up '{name}'"):
            catalog = self.session.catalog
            if self._database is not None:
                full = self._catalog_name(name)
                if not catalog.tableExists(full):
                    return None
                self._register(name, f"SELECT * FROM {full}")
                return "TABLE"
            return "TABLE" if catalog.tableExists(quoted(name)) else None

    def _register(self, name: str, query: str) -> None:
        with self._driver(f"reading '{name}'"):
            self.session.sql(f"CREATE OR REPLACE TEMPORARY VIEW {quoted(name)} AS {query}")
        self._registered.add(name)

    def _register_path(self, name: str, path: str) -> None:
        fmt = self._format(path, name)
        frame = self._load(fmt, CsvOptions(), path, name)
        with self._driver(f"reading '{name}'"):
            frame.createOrReplaceTempView(quoted(name))
        self._registered.add(name)
        self._paths[name] = path

    def object_kinds(self, names: Sequence[str]) -> dict[str, str]:
        kinds: dict[str, str] = {}
        for n in names:
            kind = self._kind(n)
            if kind is not None:
                kinds[n] = kind
        return kinds

    def describe(self, name: str, *, temporary: bool = False) -> TableInfo:
        if not temporary and self._kind(name) is None:
            return TableInfo(name, ())
        with self._driver(f"reading the columns of '{name}'"):
            schema = self.session.table(quoted(name)).schema
        columns = tuple(
            ColumnInfo(f.name, *typed(f))
            for f in schema.fields
            if not (name == self._source and f.name == ROW_ID)
        )
        return TableInfo(name, columns)

    def database_files(self) -> list[Path]:
        return []

    def copy_in(self, table: str) -> None:
        parsed = names.parse(table)
        full = ".".join(quoted(p) for p in (parsed.catalog, parsed.schema, parsed.name) if p is not None)
        with self._driver(f"reading '{table}'"):
            exists = self.session.catalog.tableExists(full)
        if not exists:
            raise InputError(f"table or view '{table}' does not exist in the Spark catalog")
        self._register(table, f"SELECT * FROM {full}")

    def attach(self, path: Path, alias: str) -> None:
        raise InputError(
            f"--attach '{path}': the Spark engine reads no DuckDB files; give the table as a "
            "Parquet or CSV path, or a table of the Spark catalog"
        )

    def working(self) -> tuple[str, str]:
        if self._catalog is not None and self._database is not None:
            return self._catalog, self._database
        with self._driver("reading the current database"):
            catalog = self.session.catalog
            return str(self._catalog or catalog.currentCatalog()), str(
                self._database or catalog.currentDatabase()
            )

    def use(self, database: str | None, schema: str | None) -> None:
        here_catalog, here_database = self.working()
        catalog, database_name = database or here_catalog, schema or here_database
        with self._driver(f"looking up database '{catalog}.{database_name}'"):
            known = self.session.catalog.databaseExists(f"{quoted(catalog)}.{quoted(database_name)}")
        if not known:
            raise InputError(
                f"database '{database_name}' does not exist in the Spark catalog '{catalog}'; create "
                f"it first (CREATE DATABASE {quoted(database_name)}) or name another"
            )
        self._catalog, self._database = catalog, database_name

    def write_into(self, path: Path, alias: str) -> None:
        raise InputError(
            f"--target-db '{path}' is a DuckDB file; with the Spark engine the release goes to "
            "--output (a folder path or a table of the Spark catalog)"
        )

    def _drop_view(self, name: str) -> None:
        with self._driver(f"dropping '{name}'"):
            # a view of the session's own (the catalog's dropTempView takes the name as it
            # is, unquoted); its cached rows go with it
            self.session.sql(f"DROP VIEW IF EXISTS {quoted(name)}")
        self._registered.discard(name)
        self._views.pop(name, None)
        self._paths.pop(name, None)
