"""Apache Spark: a SparkSession (one sbc-sql builds, ``local[*]`` by default, or the caller's)
running the stages' SQL, rendered in the project's Spark dialect.

A run's working tables are the session's temporary views, materialized where the stages
create a table: the engine rewrites each statement tree before it runs (CREATE TABLE ... AS
becomes CACHE TABLE ... AS, a temporary view computed once; CREATE VIEW a temporary view;
ALTER TABLE ... RENAME a temporary view of the new name over the old one; DROP TABLE a DROP
VIEW). Nothing is written to the
catalog or to a file until the transaction commits: a COMMENT statement (the release's
provenance) is kept by the engine, and the commit writes each release whose provenance it
holds, with its class table, under temporary names, then renames them into place. A failure
or an interruption before the last rename removes what was written and leaves any output
that was there before as it was.

Names: a name with a slash in it, or one ending in .parquet, .pq, .csv or .tsv, is a path
(a file or a folder, on any file system Spark reads: ``file:``, ``hdfs:``, ``s3a:`` ...),
made absolute; any other is a table of the Spark catalog (``name``, ``db.name`` or
``catalog.db.name``). A path or a catalog table the stages read is registered as a
temporary view under the name they use for it.

The input is read once into a cached temporary view with a row id column (Spark's
``monotonically_increasing_id()``, computed once and kept in the cache): the clustering
reads the rows through it in the source's order and the class labels are joined back on it.
The default algorithm's block mode runs in Spark's workers (:mod:`.spark_blocks`): the rows
never reach the driver, which holds a sample of them only. Exact mode, the other
algorithms, privacy criteria and background knowledge cluster on the driver, where the rows
are collected and must fit.

Errors are read by their error class (condition) only (see :mod:`.spark_messages`); Spark's
text, which can quote a value, is never shown, and its log of failed queries is silenced
while the engine runs a statement.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import signal
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from sqlglot import exp

from .. import names
from ..errors import EngineError, InputError
from ..plan import release_objects_of
from ..sql.dialects.spark import SbcSpark
from ..sql.templates import ident
from . import spark_messages
from .base import Capabilities, ColumnInfo, CsvOptions, Engine, Params, Statement, TableInfo
from .paths import is_csv, is_parquet, looks_like_path

if TYPE_CHECKING:
    from ..cluster.distributed import BlockJob
    from ..stages.pull import Decoder

#: the cached temporary view the input is read into for the run, and a token of its own
#: (another run may share the session)
SOURCE_PREFIX = "sbc_source_"
#: the input's row id column in that view (a source column may not take the name)
ROW_ID = "sbc_row_id"
#: the provenance of a release written as a folder: a file beside its Parquet files (Spark
#: and other readers skip files whose names start with '_')
PROVENANCE_FILE = "_sbc_sql.json"
DEFAULT_MASTER = "local[*]"
#: what a session sbc-sql builds is set to (the caller's own session is used as it is)
SESSION_CONF = {
    "spark.api.mode": "classic",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
}
#: Spark's error classes for two columns whose names differ only in case
CASE_CONDITIONS = ("COLUMN_ALREADY_EXISTS", "AMBIGUOUS_REFERENCE")
#: pyspark's Python loggers that print a failed query's message (which can quote a value)
_QUERY_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


def _local_cores(master: str) -> int:
    """The cores a local master runs on: local (1), local[N], local[*] (all of them)."""
    every = os.cpu_count() or 1
    found = re.fullmatch(r"local(?:\[(\d+|\*)(?:,\s*\d+)?\])?", master.strip())
    if found is None:
        return every
    threads = found.group(1)
    if threads is None:
        return 1
    return every if threads == "*" else max(int(threads), 1)


def quoted(name: str) -> str:
    """A name as one Spark identifier."""
    return "`" + name.replace("`", "``") + "`"


def type_info(data_type: Any) -> tuple[str, str | None, str | None]:
    """(type as the release's checks name it, kind, temporal) of a Spark data type: numbers,
    dates and timestamps are numeric, strings and booleans categorical; kind None for
    binary, nested, interval and other types no QI can have."""
    from pyspark.sql import types as t

    simple: list[tuple[type, str, str | None, str | None]] = [
        (t.ByteType, "TINYINT", "numeric", None),
        (t.ShortType, "SMALLINT", "numeric", None),
        (t.IntegerType, "INTEGER", "numeric", None),
        (t.LongType, "BIGINT", "numeric", None),
        (t.FloatType, "FLOAT", "numeric", None),
        (t.DoubleType, "DOUBLE", "numeric", None),
        (t.DateType, "DATE", "numeric", "date"),
        (t.TimestampNTZType, "TIMESTAMP", "numeric", "timestamp"),
        (t.TimestampType, "TIMESTAMP WITH TIME ZONE", "numeric", "timestamp"),
        (t.BooleanType, "BOOLEAN", "categorical", None),
        (t.StringType, "VARCHAR", "categorical", None),
        (t.BinaryType, "BLOB", None, None),
        (t.NullType, "NULL", None, None),
    ]
    for cls, shown, kind, temporal in simple:
        if isinstance(data_type, cls):
            return shown, kind, temporal
    if isinstance(data_type, t.DecimalType):
        return f"DECIMAL({data_type.precision},{data_type.scale})", "numeric", None
    if isinstance(data_type, t.ArrayType):
        return type_info(data_type.elementType)[0] + "[]", None, None
    if isinstance(data_type, t.MapType):
        return "MAP", None, None
    if isinstance(data_type, t.StructType):
        return "STRUCT", None, None
    return str(data_type.typeName()).upper(), None, None


@dataclass
class _Transaction:
    """What a transaction made: its views (dropped by a rollback) and its comments (the
    provenance of each release it builds)."""

    views: set[str] = field(default_factory=set)
    comments: dict[str, tuple[str, str]] = field(default_factory=dict)


@dataclass
class _Write:
    """One object of a release being written: the view that holds it, where it goes, and
    the temporary place it is written to first."""

    view: str
    target: str
    path: bool
    partial: str
    old: str
    provenance: str
    #: an object was at the target before the commit (which --replace replaces)
    existed: bool = False


class SparkEngine(Engine):
    """A SparkSession: one sbc-sql built (``owned``: stopped on close) or the caller's."""

    name = "spark"
    dialect = SbcSpark
    capabilities = Capabilities(
        exports=False,
        release_views=False,
        cluster_blocks=True,
    )

    def __init__(self, session: Any, *, owned: bool = False) -> None:
        super().__init__()
        if not hasattr(session, "sparkContext") or getattr(session, "_jsc", None) is None:
            raise InputError(
                "the Spark session is a Spark Connect session, which sbc-sql cannot use yet; "
                "give a classic SparkSession (SparkSession.builder ... .getOrCreate())"
            )
        self.session = session
        self.owned = owned
        self._closed = False
        #: temporary views the run's statements made, and their kind ('TABLE': cached)
        self._views: dict[str, str] = {}
        #: temporary views the engine registered: the input, paths and tables it reads
        self._registered: set[str] = set()
        #: a registered path's view name -> the path, qualified
        self._paths: dict[str, str] = {}
        #: DataFrames given as input, by the name they are read under
        self._frames: dict[str, Any] = {}
        self._txn: _Transaction | None = None
        #: the catalog and database outputs are written to (use()); None: the session's
        self._catalog: str | None = None
        self._database: str | None = None
        #: the input's paths and the outputs named, qualified: no output may be an input,
        #: hold one or lie in one
        self._inputs: list[str] = []
        self._outputs: list[str] = []
        self._source = f"{SOURCE_PREFIX}{secrets.token_hex(4)}"

    @classmethod
    def connect(
        cls, session: Any = None, *, master: str | None = None, conf: Mapping[str, str] | None = None
    ) -> SparkEngine:
        """An engine over ``session``, or over a session built here on ``master`` (default
        local[*]) with ``conf`` (Spark properties) on top of sbc-sql's own settings."""
        if session is not None:
            return cls(session)
        try:
            from pyspark.sql import SparkSession
        except ImportError:
            raise InputError(
                "--engine spark needs pyspark, which is not installed; pip install 'sbc-sql[spark]'"
            ) from None
        running = SparkSession.getActiveSession()
        if running is not None:
            # one SparkContext per process: a session running already is used as it is
            if master is not None or conf:
                raise InputError(
                    "a Spark session runs in this process already, with its own master and "
                    "settings; drop --spark-master and --spark-conf"
                )
            return cls(running)
        # under spark-submit the driver's JVM runs already, with the master and settings
        # given to spark-submit (its --master, --conf), which a master set here would replace
        submitted = "PYSPARK_GATEWAY_PORT" in os.environ
        chosen = master or ("" if submitted else DEFAULT_MASTER)
        # workers must run this Python (the one with sbc-sql's packages); a local master
        # binds to the loopback interface only
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        if chosen.startswith("local"):
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        settings = dict(SESSION_CONF)
        if chosen.startswith("local"):
            settings.update({"spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1"})
            # Spark's 200 shuffle partitions are for a cluster; on one machine they cost more
            # than the work (200,000 rows: 128 s against 44 s for the whole run at 4)
            settings["spark.sql.shuffle.partitions"] = str(2 * _local_cores(chosen))
        settings.update(conf or {})
        builder = SparkSession.builder.appName("sbc-sql")
        if chosen:
            builder = builder.master(chosen)
        for key, value in settings.items():
            builder = builder.config(key, value)
        main = threading.current_thread() is threading.main_thread()
        previous = signal.getsignal(signal.SIGINT) if main else None
        try:
            session = builder.getOrCreate()
        except Exception as err:
            where = f"on master '{chosen}'" if chosen else "of spark-submit"
            raise InputError(
                f"--engine spark: the Spark session {where} could not start ({type(err).__name__}); "
                "check that Java 17 or later is installed (java -version) and the --spark-master "
                "and --spark-conf values"
            ) from None
        finally:
            # pyspark installs its own Ctrl-C handler; the caller's stays in charge (this
            # engine cancels Spark's jobs when a statement is interrupted)
            if main and previous is not None:
                signal.signal(signal.SIGINT, previous)
        # Spark's log at ERROR can quote a value (a task that failed on it); sbc-sql says
        # what went wrong itself
        session.sparkContext.setLogLevel("FATAL")
        return cls(session, owned=True)

    @classmethod
    def from_frame(cls, frame: Any, name: str) -> SparkEngine:
        """An engine over the DataFrame's session, the DataFrame the input ``name``."""
        engine = cls(frame.sparkSession)
        engine._frames[name] = frame
        return engine

    # ---- rendering: the stages' trees as Spark runs them ----

    def sql(self, statement: Statement) -> str:
        if isinstance(statement, str):
            return statement
        return _rewritten(statement).sql(dialect=self.dialect)

    # ---- the boundary ----

    def translate(self, err: Exception, doing: str) -> BaseException | None:
        try:
            from py4j.protocol import Py4JError
            from pyspark.errors import PySparkException
        except ImportError:  # pragma: no cover - the engine needs pyspark
            return None
        if not isinstance(err, (PySparkException, Py4JError)):
            return None
        if isinstance(err, Py4JError) and not hasattr(err, "java_exception"):
            return EngineError(f"{doing}: the Spark driver stopped answering (its JVM ended)", "other")
        return spark_messages.explain(spark_messages.read(err), doing)

    @contextlib.contextmanager
    def _driver(self, doing: str | Any) -> Iterator[None]:
        """Spark calls inside: their errors translated, the logs of pyspark and py4j
        silenced (see :func:`_quiet`), and Spark's jobs cancelled when Ctrl-C stops a call."""
        with _quiet():
            try:
                with self.driver_call(doing):
                    yield
            except KeyboardInterrupt:
                self._cancel()
                raise

    def _cancel(self) -> None:
        """Cancel the session's jobs and wait (a little) for them to end, so that nothing
        writes after the run has stopped."""
        with contextlib.suppress(Exception):
            context = self.session.sparkContext
            context.cancelAllJobs()
            tracker = context.statusTracker()
            for _ in range(100):
                if not tracker.getActiveJobsIds():
                    break
                threading.Event().wait(0.1)

    def _run(self, sql: str, params: Params = None) -> Any:
        """The DataFrame of a statement (run at once for a command, lazy for a query)."""
        return self.session.sql(sql, args=dict(params) if params else None)

    def _fetch(self, sql: str, params: Params) -> list[tuple[Any, ...]]:
        with self._driver(lambda: self.operation(sql)):
            return [tuple(row) for row in self._run(sql, params).collect()]

    def _arrow(self, sql: str) -> pa.Table:
        with self._driver(lambda: self.operation(sql)):
            return self._run(sql).toArrow()

    def _stream(self, sql: str, batch_rows: int) -> Iterator[pa.RecordBatch]:
        # the rows are collected on the driver, where the clustering runs
        with self._driver(lambda: self.operation(sql)):
            table = self._run(sql).toArrow()
        yield from table.to_batches(max_chunksize=batch_rows)

    def operation(self, sql: str) -> str:
        tree = _parsed(sql)
        if isinstance(tree, exp.Cache):
            return f"creating table '{tree.this.name}'"
        return super().operation(sql)

    # ---- running: statements the stages issue, as the engine keeps them ----

    def execute(self, statement: Statement, params: Params = None) -> None:
        if isinstance(statement, exp.Comment):
            # the release's provenance: kept, and written with the release at the commit
            self._record(statement)
            if not self.dry:
                kind = str(statement.args.get("kind") or "TABLE").upper()
                text = statement.expression.name
                target = statement.this.name
                if self._txn is not None:
                    self._txn.comments[target] = (kind, text)
            return
        super().execute(statement, params)
        if not self.dry and not isinstance(statement, str):
            self._track(statement)

    def _track(self, tree: exp.Expression) -> None:
        """The views a statement made, renamed or dropped."""
        if isinstance(tree, exp.Create):
            name = _target(tree).name
            kind = "VIEW" if str(tree.args.get("kind")).upper() == "VIEW" else "TABLE"
            self._views[name] = kind
            if self._txn is not None:
                self._txn.views.add(name)
        elif _rename(tree) is not None:
            old, new = _rename(tree)  # type: ignore[misc]
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

    # ---- names ----

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

    def _catalog_in_memory(self) -> bool:
        with self._driver("reading the session's settings"):
            implementation = self.session.conf.get("spark.sql.catalogImplementation", "in-memory")
        return str(implementation) == "in-memory"

    def _qualified_path(self, text: str) -> str:
        with self._driver(f"reading the path '{text}'"):
            fs, path = self._fs(text)
            return str(fs.makeQualified(path).toString())

    def _fs(self, text: str) -> tuple[Any, Any]:
        jvm = self.session.sparkContext._jvm
        path = jvm.org.apache.hadoop.fs.Path(text)
        return path.getFileSystem(self.session._jsc.hadoopConfiguration()), path

    def _exists(self, path: str) -> bool:
        fs, p = self._fs(path)
        return bool(fs.exists(p))

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
        with self._driver(f"reading '{name}'"):
            frame = self._reader(fmt, CsvOptions(), path).load(path)
            frame.createOrReplaceTempView(quoted(name))
        self._registered.add(name)
        self._paths[name] = path

    def _format(self, path: str, shown: str) -> str:
        """'parquet' or 'csv': by the file's ending, or for a folder by its files' endings."""
        if is_csv(path):
            return "csv"
        if is_parquet(path):
            return "parquet"
        with self._driver(f"reading the folder '{shown}'"):
            fs, p = self._fs(path)
            if not fs.getFileStatus(p).isDirectory():
                return "parquet"
            files = [str(s.getPath().getName()).lower() for s in fs.listStatus(p)]
        visible = [f for f in files if not f.startswith(("_", "."))]
        return "csv" if visible and all(is_csv(f) for f in visible) else "parquet"

    def _reader(self, fmt: str, csv: CsvOptions, path: str) -> Any:
        """Spark's reader of the file or folder ``path`` (a CSV file with a header and the
        types its values show, unless ``csv`` says otherwise; a line that does not fit fails
        the read)."""
        reader = self.session.read.format(fmt)
        if fmt == "csv":
            header = True if csv.header is None else csv.header
            reader = reader.option("header", header).option("inferSchema", True).option("mode", "FAILFAST")
            tab = path.lower().endswith((".tsv", ".tsv.gz"))
            delimiter = csv.delimiter if csv.delimiter is not None else "\t" if tab else None
            if delimiter is not None:
                reader = reader.option("sep", delimiter)
        return reader

    # ---- catalog (not part of a run's log) ----

    def object_kinds(self, names: Sequence[str]) -> dict[str, str]:
        kinds: dict[str, str] = {}
        for n in names:
            kind = self._kind(n)
            if kind is not None:
                kinds[n] = kind
        return kinds

    def comment(self, name: str) -> str | None:
        if self._txn is not None and name in self._txn.comments:
            return self._txn.comments[name][1]
        if name in self._views or name in self._frames or name == self._source:
            return None
        if looks_like_path(name):
            path = self._paths.get(name) or self._qualified_path(name)
            return self._read_text(f"{path}/{PROVENANCE_FILE}")
        with self._driver(f"reading the comment of '{name}'"):
            full = self._catalog_name(name) if self._database is not None else quoted(name)
            if not self.session.catalog.tableExists(full):
                return None
            description = self.session.catalog.getTable(full).description
        return str(description) if description else None

    def _read_text(self, path: str) -> str | None:
        with self._driver(f"reading '{path}'"):
            fs, p = self._fs(path)
            if not fs.exists(p) or fs.getFileStatus(p).isDirectory():
                return None
            stream = fs.open(p)
            try:
                data = self.session.sparkContext._jvm.org.apache.commons.io.IOUtils.toByteArray(stream)
            finally:
                stream.close()
        return bytes(data).decode("utf-8")

    def _write_text(self, path: str, text: str) -> None:
        fs, p = self._fs(path)
        stream = fs.create(p, False)
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()

    def describe(self, name: str, *, temporary: bool = False) -> TableInfo:
        if not temporary and self._kind(name) is None:
            return TableInfo(name, ())
        with self._driver(f"reading the columns of '{name}'"):
            schema = self.session.table(quoted(name)).schema
        columns = tuple(
            ColumnInfo(f.name, *_typed(f))
            for f in schema.fields
            if not (name == self._source and f.name == ROW_ID)
        )
        return TableInfo(name, columns)

    def database_files(self) -> list[Path]:
        return []

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
        columns = tuple(ColumnInfo(f.name, *_typed(f)) for f in fields)
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
                with self._driver(f"reading {'CSV' if fmt == 'csv' else 'Parquet'} '{table}'"):
                    frame = self._reader(fmt, csv, path).load(path)
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

    # ---- rows, labels, transactions ----

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

    def cluster_blocks(self, rows: Statement, decoder: Decoder, job: BlockJob, n_rows: int, name: str) -> str:
        from . import spark_blocks

        self._record(rows)
        sql = self.sql(rows)
        with self._driver("clustering the rows in Spark's workers"):
            try:
                detail = spark_blocks.cluster(self.session, self._run(sql), decoder, job, n_rows, name)
            finally:
                self._registered.add(name)
        return detail

    def discard(self, name: str) -> None:
        self._drop_view(name)

    def _drop_view(self, name: str) -> None:
        with self._driver(f"dropping '{name}'"):
            # a view of the session's own (the catalog's dropTempView takes the name as it
            # is, unquoted); its cached rows go with it
            self.session.sql(f"DROP VIEW IF EXISTS {quoted(name)}")
        self._registered.discard(name)
        self._views.pop(name, None)
        self._paths.pop(name, None)

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

    def begin(self) -> None:
        self._txn = _Transaction()

    def commit(self) -> None:
        txn = self._txn
        if txn is None:
            return
        writes = self._planned_writes(txn)
        try:
            for w in writes:
                with self._driver(lambda w=w: f"looking up '{w.target}'"):
                    w.existed = self._there(w.target, w.path)
            for w in writes:
                self._write(w)
            self._place(writes)
        except BaseException:
            self._cancel()
            self._undo(writes)
            raise
        self._txn = None
        for w in writes:
            with contextlib.suppress(Exception):
                self._remove(w.old, w.path)
        for name in txn.views:
            with contextlib.suppress(Exception):
                self._drop_view(name)

    def rollback(self) -> None:
        txn, self._txn = self._txn, None
        if txn is None:
            return
        for name in txn.views:
            with contextlib.suppress(Exception):
                self._drop_view(name)

    def limit_memory(self, size: str) -> None:
        raise InputError(
            f"--memory-limit {size.strip()}: Spark's memory is its own setting; give it with "
            "--spark-conf spark.driver.memory=4g (and spark.executor.memory on a cluster)"
        )

    # ---- the commit: each release with provenance, written, then moved into place ----

    def _planned_writes(self, txn: _Transaction) -> list[_Write]:
        token = secrets.token_hex(4)
        writes: list[_Write] = []
        for release, (kind, text) in txn.comments.items():
            if kind != "VIEW":
                continue
            classes = release_objects_of(release)[2]
            for view in (release, classes):
                target = self.parse_name(view)
                if target.path:
                    self._check_place(target.name)
                    folder, _, base = target.name.rstrip("/").rpartition("/")
                    partial, old = (
                        f"{folder}/.sbc-partial-{token}-{base}",
                        f"{folder}/.sbc-old-{token}-{base}",
                    )
                    writes.append(_Write(view, target.name, True, partial, old, text))
                else:
                    short = re.sub(r"\W", "_", view)[:40]
                    writes.append(
                        _Write(
                            view,
                            view,
                            False,
                            f"sbc_partial_{token}_{short}",
                            f"sbc_old_{token}_{short}",
                            text,
                        )
                    )
        return writes

    def _check_place(self, path: str) -> None:
        """No output may be an input, hold one or lie inside one (nor its class table)."""
        for source in self._inputs:
            for place in (path, release_objects_of(path)[2]):
                a, b = place.rstrip("/") + "/", source.rstrip("/") + "/"
                if a.startswith(b) or b.startswith(a):
                    raise InputError(
                        f"--output '{path}' would write over the input '{source}' or inside it; "
                        "choose another --output"
                    )

    def _write(self, w: _Write) -> None:
        with self._driver(lambda: f"writing '{w.target}'"):
            frame = self.session.table(quoted(w.view))
            orderable = [
                f.name
                for f in frame.schema.fields
                if type_info(f.dataType)[1] is not None or f.name == "eq_class"
            ]
            frame = frame.orderBy(*(frame[quoted(n)] for n in orderable))
            if w.path:
                frame.write.mode("errorifexists").parquet(w.partial)
                self._write_text(f"{w.partial}/{PROVENANCE_FILE}", w.provenance)
            else:
                frame.write.format("parquet").saveAsTable(self._catalog_name(w.partial))
                comment = exp.Literal.string(w.provenance).sql(dialect=self.dialect)
                self.session.sql(f"COMMENT ON TABLE {self._catalog_name(w.partial)} IS {comment}")

    def _place(self, writes: Sequence[_Write]) -> None:
        """Each written object renamed into place, any object there before moved aside
        first (and removed once all are in place)."""
        for w in writes:
            with self._driver(lambda w=w: f"moving '{w.target}' into place"):
                if w.existed:
                    self._rename(w.target, w.old, w.path)
                self._rename(w.partial, w.target, w.path)

    def _there(self, name: str, path: bool) -> bool:
        """A folder or file (``path``), or a table of the working database, of that name
        exists."""
        if path:
            return self._exists(name)
        return bool(self.session.catalog.tableExists(self._catalog_name(name)))

    def _rename(self, old: str, new: str, path: bool) -> None:
        if path:
            fs, p = self._fs(old)
            if not fs.rename(p, self._fs(new)[1]):
                raise OSError("rename failed")
        else:
            self.session.sql(f"ALTER TABLE {self._catalog_name(old)} RENAME TO {quoted(new)}")

    def _remove(self, target: str, path: bool) -> None:
        with self._driver(f"removing '{target}'"):
            if path:
                fs, p = self._fs(target)
                if fs.exists(p):
                    fs.delete(p, True)
            elif self.session.catalog.tableExists(self._catalog_name(target)):
                self.session.sql(f"DROP TABLE {self._catalog_name(target)}")

    def _undo(self, writes: Sequence[_Write]) -> None:
        """After a failure, from what is there (a call Ctrl-C interrupted may or may not
        have renamed): an object moved aside goes back to its place, one this commit
        placed where none was is removed, and the partial writes go."""
        for w in reversed(writes):
            with contextlib.suppress(Exception), self._driver(lambda w=w: f"restoring '{w.target}'"):
                if self._there(w.old, w.path):
                    if self._there(w.target, w.path):
                        self._remove(w.target, w.path)
                    self._rename(w.old, w.target, w.path)
                elif not w.existed and not self._there(w.partial, w.path) and self._there(w.target, w.path):
                    self._remove(w.target, w.path)
                self._remove(w.partial, w.path)


class _FromPy4j(logging.Filter):
    """Drops the records py4j logs on the root logger (a call Ctrl-C interrupted)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return f"{os.sep}py4j{os.sep}" not in record.pathname


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """pyspark's log of a failed query (its message, which can quote a value) and py4j's of
    a call Ctrl-C interrupted (a stack on stderr before sbc-sql's own line) are not shown
    while the engine runs a call; logging is left as it was afterwards."""
    from pyspark.logger import PySparkLogger

    # pyspark's own logger class (a plain logger of that name would fail its calls)
    loggers = [PySparkLogger.getLogger(n) for n in _QUERY_LOGGERS] + [logging.getLogger("py4j")]
    before = [lg.disabled for lg in loggers]
    root = logging.getLogger()
    dropping = _FromPy4j()
    # py4j logs through logging.exception(), which configures a root handler when there is
    # none; one that does nothing stands in meanwhile
    standin = logging.NullHandler() if not root.handlers else None
    for lg in loggers:
        lg.disabled = True
    root.addFilter(dropping)
    if standin is not None:
        root.addHandler(standin)
    try:
        yield
    finally:
        root.removeFilter(dropping)
        if standin is not None:
            root.removeHandler(standin)
        for lg, was in zip(loggers, before, strict=True):
            lg.disabled = was


def _typed(f: Any) -> tuple[str, str | None, str | None, str | None]:
    """(type, comment, kind, temporal) of a schema field, as ColumnInfo takes them after
    its name."""
    shown, kind, temporal = type_info(f.dataType)
    comment = (f.metadata or {}).get("comment")
    return shown, comment, kind, temporal


def _target(tree: exp.Create) -> exp.Table:
    target = tree.this
    table = target.this if isinstance(target, exp.Schema) else target
    if not isinstance(table, exp.Table):
        raise TypeError("expected CREATE of a table or view")
    return table


def _rename(tree: exp.Expression) -> tuple[str, str] | None:
    """(old, new) of an ALTER TABLE ... RENAME TO statement; None for any other."""
    if not isinstance(tree, exp.Alter):
        return None
    action = next((a for a in tree.args.get("actions") or [] if isinstance(a, exp.AlterRename)), None)
    return None if action is None else (tree.this.name, action.this.name)


def _parsed(sql: str) -> exp.Expression | None:
    import sqlglot

    try:
        tree = sqlglot.parse_one(sql, dialect=SbcSpark)
    except sqlglot.errors.SqlglotError:
        return None
    return tree if isinstance(tree, exp.Expression) else None


def _rewritten(tree: exp.Expression) -> exp.Expression:
    """A stage's statement as the Spark engine runs it: tables the stages create are cached
    temporary views, views are temporary views, their renames and drops the views'."""
    if isinstance(tree, exp.Create):
        kind = str(tree.args.get("kind") or "").upper()
        query = tree.args.get("expression")
        if kind == "TABLE" and isinstance(query, exp.Query):
            return exp.Cache(this=_target(tree).copy(), expression=query.copy())
        if kind == "VIEW":
            temporary = tree.copy()
            temporary.set("replace", True)
            temporary.set("properties", exp.Properties(expressions=[exp.TemporaryProperty()]))
            return temporary
        return tree
    rename = _rename(tree)
    if rename is not None:
        # a view of the new name over the old one (which keeps the cached rows): Spark's
        # ALTER VIEW ... RENAME of a temporary view leaves a view made over a view of the
        # renamed one unresolvable (TABLE_OR_VIEW_NOT_FOUND)
        old, new = rename
        return exp.Create(
            this=exp.Table(this=ident(new)),
            kind="VIEW",
            replace=True,
            properties=exp.Properties(expressions=[exp.TemporaryProperty()]),
            expression=exp.select(exp.Star()).from_(exp.Table(this=ident(old))),
        )
    if isinstance(tree, exp.Drop) and str(tree.args.get("kind") or "").upper() in ("TABLE", "VIEW"):
        dropped = tree.copy()
        dropped.set("kind", "VIEW")
        dropped.set("exists", True)
        return dropped
    return tree
