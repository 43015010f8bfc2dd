"""The Spark engine itself: what it is to the stages (its name, dialect and capabilities), how
it is made (from a session or a DataFrame), the statements it runs and keeps (a table the
stages create is a cached temporary view, see :mod:`.ddl`; a COMMENT is the release's
provenance, kept for the commit), the names a user gives, and the input read into a cached
view with a row id."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from sqlglot import exp

from ... import names
from ...errors import EngineError, InputError
from ...model import ColumnInfo, CsvOptions, TableInfo
from ...sql.dialects.spark import SbcSpark
from ...sql.templates import ident
from ..base import Capabilities, Params, Statement
from ..paths import looks_like_path
from .catalog import ROW_ID
from .columns import typed
from .connection import JOB_GROUP, quoted
from .ddl import renamed, rewritten, target
from .session import start
from .transaction import SparkTransaction

if TYPE_CHECKING:
    from ...cluster.decode import Decoder
    from ...cluster.distributed import BlockJob, Clustered

#: Spark's error classes for two columns whose names differ only in case
CASE_CONDITIONS = ("COLUMN_ALREADY_EXISTS", "AMBIGUOUS_REFERENCE")


class SparkEngine(SparkTransaction):
    """A SparkSession: one sbc-sql built (``owned``: stopped on close) or the caller's."""

    name = "spark"
    dialect = SbcSpark
    capabilities = Capabilities(
        exports=False,
        release_views=False,
        cluster_blocks=True,
        microaggregates=False,
    )

    @classmethod
    def connect(
        cls, session: Any = None, *, master: str | None = None, conf: Mapping[str, str] | None = None
    ) -> SparkEngine:
        """An engine over ``session``, or over a session built here on ``master`` (default
        local[*]) with ``conf`` (Spark properties) on top of sbc-sql's own settings."""
        if session is not None:
            return cls(session)
        running, owned = start(master, conf)
        return cls(running, owned=owned)

    @classmethod
    def from_frame(cls, frame: Any, name: str) -> SparkEngine:
        """An engine over the DataFrame's session, the DataFrame the input ``name``."""
        engine = cls(frame.sparkSession)
        engine._frames[name] = frame
        return engine

    def sql(self, statement: Statement) -> str:
        if isinstance(statement, str):
            return statement
        return rewritten(statement).sql(dialect=self.dialect)

    def execute(self, statement: Statement, params: Params = None) -> None:
        if isinstance(statement, exp.Comment):
            # the release's provenance: kept, and written with the release at the commit
            self._record(statement)
            if not self.dry:
                kind = str(statement.args.get("kind") or "TABLE").upper()
                text = statement.expression.name
                release = statement.this.name
                if self._txn is not None:
                    self._txn.comments[release] = (kind, text)
            return
        super().execute(statement, params)
        if not self.dry and not isinstance(statement, str):
            self._track(statement)

    def _track(self, tree: exp.Expression) -> None:
        """The views a statement made, renamed or dropped."""
        if isinstance(tree, exp.Create):
            name = target(tree).name
            kind = "VIEW" if str(tree.args.get("kind")).upper() == "VIEW" else "TABLE"
            self._views[name] = kind
            if self._txn is not None:
                self._txn.views.add(name)
        elif renamed(tree) is not None:
            old, new = renamed(tree)  # type: ignore[misc]
            # the new name is a view over the old one, which stays until the run's end
            self._views[new] = self._views.get(old, "TABLE")
            if self._txn is not None:
                self._txn.views.add(new)
        elif isinstance(tree, exp.Drop):
            for table in tree.expressions:
                self._views.pop(table.name, None)
                self._registered.discard(table.name)
                if self._txn is not None:
                    self._txn.views.discard(table.name)

    def parse_name(self, text: str, *, output: bool = False) -> names.Name:
        if looks_like_path(text):
            path = self._qualified_path(text)
            if output:
                self._outputs.append(path)
            return names.Name(path, path=True)
        name = names.parse(text)
        if output and self.owned and self._catalog_in_memory():
            raise InputError(
                f"--output '{text}' names a table of the Spark catalog, which this session keeps in "
                "memory: the table would be forgotten when the run ends, its files left in the "
                "warehouse folder; give a folder path for the Parquet release (e.g. --output "
                f"./{name.name}), or a persistent catalog with --spark-conf"
            )
        return name

    def open_source(self, table: str, csv: CsvOptions | None = None) -> TableInfo:
        frame, reads, folder = self._input(table, csv or CsvOptions())
        fields = frame.schema.fields
        seen: dict[str, str] = {}
        for f in fields:
            if f.name.lower() in seen:
                raise InputError(
                    f"columns '{seen[f.name.lower()]}' and '{f.name}' of '{table}' differ only in case, "
                    "and Spark takes them as one name; rename one of them"
                )
            seen[f.name.lower()] = f.name
            if f.name.lower() == ROW_ID:
                raise InputError(
                    f"column '{f.name}' of '{table}' is the name the Spark engine keys rows by; "
                    "rename it in the source"
                )
        from pyspark.sql import functions

        with self._driver(f"reading '{table}'"):
            # the row id is computed once, in the input's order, and kept in the cache
            keyed = frame.withColumn(ROW_ID, functions.monotonically_increasing_id())
            self._drop_view(self._source)
            keyed.createOrReplaceTempView(quoted(self._source))
            self._registered.add(self._source)
            self.session.sql(f"CACHE TABLE {quoted(self._source)}")
        columns = tuple(ColumnInfo(f.name, *typed(f)) for f in fields)
        return TableInfo(self._source, columns, from_file=table, reads=reads, output_folder=folder)

    def _input(self, table: str, csv: CsvOptions) -> tuple[Any, tuple[str, ...], str | None]:
        """The input as a DataFrame, the names no output may take, and the folder a release
        goes to by default (a path input's folder)."""
        if table in self._frames:
            return self._frames[table], (table,), None
        if looks_like_path(table):
            path = self._qualified_path(table)
            with self._driver(f"reading '{table}'"):
                exists = self._exists(path)
            if not exists:
                raise InputError(
                    f"input '{table}' does not exist; pass an existing Parquet or CSV file or folder, "
                    "or a table of the Spark catalog, with --table"
                )
            fmt = self._format(path, table)
            if fmt != "csv" and (csv.delimiter is not None or csv.header is not None):
                raise InputError(
                    f"--csv-delimiter and --csv-header read a CSV input, and '{table}' is not one"
                )
            try:
                frame = self._load(fmt, csv, path, table)
            except EngineError as err:
                if getattr(err, "condition", "") in CASE_CONDITIONS:
                    raise InputError(
                        f"'{table}' has two columns whose names differ only in case, which Spark "
                        "takes as one name; rename one of them"
                    ) from None
                raise
            self._inputs.append(path)
            for output in self._outputs:
                self._check_place(output)
            return frame, (table, path), path.rstrip("/").rsplit("/", 1)[0]
        parsed = names.parse(table)
        full = ".".join(quoted(p) for p in (parsed.catalog, parsed.schema, parsed.name) if p is not None)
        with self._driver(f"reading '{table}'"):
            exists = self.session.catalog.tableExists(full)
            frame = self.session.table(full) if exists else None
        if frame is None:
            raise InputError(
                f"table '{table}' does not exist in the Spark catalog; pass an existing table, or a "
                "Parquet or CSV path (with a slash, e.g. ./data.parquet), with --table"
            )
        return frame, (table, parsed.name), None

    def row_id(self, table_alias: str) -> exp.Expression:
        return exp.Column(this=ident(ROW_ID), table=exp.Identifier(this=table_alias))

    @contextlib.contextmanager
    def upload(self, name: str, table: pa.Table) -> Iterator[None]:
        with self._driver(f"uploading '{name}'"):
            frame = self.session.createDataFrame(table)
            frame.createOrReplaceTempView(quoted(name))
            self._registered.add(name)
            self.session.sql(f"CACHE TABLE {quoted(name)}")
        try:
            yield
        finally:
            self._drop_view(name)

    def collect_limit(self) -> tuple[int, str] | None:
        """spark.driver.maxResultSize (default 1g; 0: none): Spark refuses a collect above
        it, after its workers did the work."""
        given = self.session.sparkContext.getConf().get("spark.driver.maxResultSize", "1g")
        size = byte_size(given)
        return None if size <= 0 else (size, f"spark.driver.maxResultSize ({given})")

    def cluster_blocks(
        self, rows: Statement, decoder: Decoder, job: BlockJob, n_rows: int, name: str
    ) -> Clustered:
        from . import blocks

        self._record(rows)
        sql = self.sql(rows)
        with self._driver("clustering the rows in Spark's workers"):
            try:
                clustered = blocks.cluster(self.session, self._run(sql), decoder, job, n_rows, name)
            finally:
                self._registered.add(name)
        return clustered

    def discard(self, name: str) -> None:
        self._drop_view(name)

    def export_sql(self, table: str, path: str, fmt: str, provenance: str | None = None) -> exp.Expression:
        raise InputError(
            "--out-file: with the Spark engine the release is written to --output (a Parquet "
            "folder, or a table of the Spark catalog); read it from there"
        )

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.owned:
            with contextlib.suppress(Exception):
                self.session.stop()
            return
        for name in [*self._views, *self._registered]:
            with contextlib.suppress(Exception):
                self._drop_view(name)
        # the caller's thread starts its jobs in no group of the engine's
        with contextlib.suppress(Exception):
            self.session.sparkContext.setLocalProperty(JOB_GROUP, None)

    def limit_memory(self, size: str) -> None:
        raise InputError(
            f"--memory-limit {size.strip()}: Spark's memory is its own setting; give it with "
            "--spark-conf spark.driver.memory=4g (and spark.executor.memory on a cluster)"
        )


def byte_size(text: str) -> int:
    """A Spark size in bytes: a number with an optional unit (b, k, m, g, t, p; kb, mb ...;
    bytes without one)."""
    found = re.fullmatch(r"\s*(\d+)\s*([kmgtp]?)(?:i?b)?\s*", text.lower())
    if found is None:
        return 0
    return int(found.group(1)) * int(1024 ** "bkmgtp".index(found.group(2) or "b"))
