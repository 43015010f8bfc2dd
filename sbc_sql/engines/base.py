"""The engine seam: what the stages ask of the database that holds the data.

A stage never touches a driver. It builds a sqlglot tree (from a template in ``sql/``) and
hands it to its :class:`Engine`, which renders it in the engine's dialect, runs it, logs it,
and returns Python rows or Arrow. Each engine is a small module in this package implementing
the abstract methods below; the pipeline never branches on an engine's name.

The log: every statement a stage issues goes through :meth:`Engine.execute`,
:meth:`Engine.fetch_one`, :meth:`Engine.fetch_all`, :meth:`Engine.fetch_arrow`,
:meth:`Engine.stream` or :meth:`Engine.show`, and is kept in :attr:`Engine.log` in order, so
that a real run and its ``--sql`` print list the same statements. Catalog look-ups made by
the engine itself (does a name exist, what are its columns) are not part of a run and are
not logged. A dry run (``dry=True``) still runs the reads that planning needs, and only logs
what would write or read the release (:meth:`Engine.show`).

The boundary: the driver's exceptions never leave an engine. Its running methods run the
driver inside :meth:`Engine.driver_call`, which turns a driver error into an
:class:`~sbc_sql.errors.EngineError` naming the operation, the cause and the fix, never a
value (each engine reads its driver's messages in :meth:`Engine.translate`), and a query
the driver gave up because of Ctrl-C back into KeyboardInterrupt.
"""

from __future__ import annotations

import contextlib
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa
import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect

from ..errors import SbcError
from ..model import CsvOptions, TableInfo
from ..names import Name, parse
from ..sql.templates import ident

if TYPE_CHECKING:
    from ..cluster.decode import Decoder
    from ..cluster.distributed import BlockJob, Clustered

Statement = exp.Expression | str
Params = Mapping[str, Any] | None


@dataclass(frozen=True)
class Capabilities:
    """What an engine can do, for the stages that have a choice. (Every engine stores a
    categorical QI's value set as one list value, and writes a release all or nothing: in a
    transaction, or as Spark's own one (:meth:`Engine.transaction`). Whether it takes
    ``--memory-limit`` is its :meth:`Engine.limit_memory`'s to say, with the fix.)"""

    #: writes a release to a local file (``--out-file``)
    exports: bool = True
    #: keeps a release as the stages build it: the release view over its row and class
    #: tables, and the text view. False: the engine writes the release's rows (what the
    #: release view shows) and its class table, each as one table or folder of files
    release_views: bool = True
    #: clusters the default's blocks in workers of its own (:meth:`Engine.cluster_blocks`):
    #: the rows are not pulled into this process
    cluster_blocks: bool = False
    #: joins rows to their distinct QI tuple on every QI with NULL equal to NULL as a hash
    #: join, so a run may cluster tuples and label the rows in the engine (stages.pull)
    tuples: bool = False
    #: takes an uploaded Arrow table without copying it (a registered table), so the class
    #: table's value sets are made in this process from the pulled value codes and uploaded
    #: (stages.write.value_sets), cheaper than the engine's LIST aggregates over many small
    #: classes
    value_sets: bool = False
    #: opens a second connection to the same database (:meth:`Engine.companion`), so a run
    #: reads one query's rows while it writes another's: the streamed run
    #: (:mod:`sbc_sql.stages.stream`) holds a run of blocks at a time, never the table
    streams: bool = False
    #: writes a microaggregated release (``--recode microaggregate``): its class table's
    #: means, medians and modes, and verification's recomputation of them
    microaggregates: bool = True


class ServerError(Exception):
    """A statement's failure as the server reports it: its SQLSTATE and its message, for a
    caller that reads a message sbc-sql's own code raised inside the server (install-sql's
    check that the server's Python imports sbc-sql). Never shown as it is."""

    def __init__(self, sqlstate: str, message: str) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate
        self.message = message


def drop_table_sql(name: str) -> exp.Expression:
    """DROP TABLE IF EXISTS of a working table (a run's labels, its distinct tuples)."""
    return exp.Drop(tables=[exp.Table(this=ident(name))], kind="TABLE", exists=True)


class Engine(ABC):
    """One database connection, seen by the stages."""

    #: the engine's name as users give it
    name: ClassVar[str]
    #: the sqlglot dialect every tree is rendered in
    dialect: ClassVar[type[Dialect]]
    capabilities: ClassVar[Capabilities]

    def __init__(self) -> None:
        self.log: list[Statement] = []
        self.dry = False
        #: called with each statement's SQL as it is logged (``--verbose``)
        self.trace: Callable[[str], None] | None = None
        #: database files this engine created when it connected: a run that fails or
        #: writes nothing removes them (:meth:`discard_created`)
        self.created: list[Path] = []
        self._in_driver = False

    # ---- rendering and running; every statement of a run is logged ----

    def sql(self, statement: Statement) -> str:
        """The statement as this engine's SQL text."""
        return statement if isinstance(statement, str) else statement.sql(dialect=self.dialect)

    def runnable(self, statement: Statement) -> str:
        """The statement as it is run: its SQL text (:meth:`sql`), which an engine may make
        more explicit than the text it logs (PostgreSQL: every table with its schema)."""
        return self.sql(statement)

    def statements(self) -> list[str]:
        """The log as SQL text, one statement each, in order."""
        return [self.sql(s) + ";" for s in self.log]

    def _record(self, statement: Statement) -> None:
        self.log.append(statement)
        if self.trace is not None:
            self.trace(self.sql(statement) + ";")

    def show(self, statement: Statement) -> None:
        """Log a statement without running it (a dry run's writes, and what reads them)."""
        self._record(statement)

    # ---- the boundary: driver errors become EngineError, never a driver's text ----

    @contextlib.contextmanager
    def driver_call(self, doing: str | Callable[[], str]) -> Iterator[None]:
        """Run driver calls inside; a driver error becomes the EngineError of
        :meth:`translate` for ``doing`` (what is being done, e.g. "reading CSV file 'x'"; a
        callable is asked only on failure). Nested, the outermost names the operation."""
        if self._in_driver:
            yield
            return
        self._in_driver = True
        try:
            yield
        except SbcError:
            raise
        except Exception as err:
            translated = self.translate(err, doing() if callable(doing) else doing)
            if translated is None:
                raise
            raise translated from None
        finally:
            self._in_driver = False

    def operation(self, sql: str) -> str:
        """What a statement does, in words, for an error message: its kind and the names
        of the tables it creates or reads (identifiers only; values are bound parameters)."""
        # a statement sqlglot cannot parse (CREATE EXTENSION, GRANT) falls back to a Command
        # with a warning that would be printed beside the Error line, quoting the statement
        quiet = logging.getLogger("sqlglot")
        was = quiet.disabled
        quiet.disabled = True
        try:
            tree = sqlglot.parse_one(sql, dialect=self.dialect)
        except sqlglot.errors.SqlglotError:
            return "running a statement"
        finally:
            quiet.disabled = was
        if isinstance(tree, (exp.Create, exp.Drop)):
            verb = "creating" if isinstance(tree, exp.Create) else "dropping"
            target = tree.find(exp.Table)
            kind = str(tree.args.get("kind") or "table").lower()
            return f"{verb} {kind} '{target.name}'" if target is not None else f"{verb} a {kind}"
        if isinstance(tree, exp.Alter):
            return f"renaming table '{tree.this.name}'"
        if isinstance(tree, exp.Copy):
            files = [f.name for f in tree.args.get("files") or [] if isinstance(f, exp.Literal)]
            return f"exporting to '{files[0]}'" if files else "exporting"
        if isinstance(tree, exp.Transaction):
            return "starting the transaction"
        if isinstance(tree, exp.Commit):
            return "committing the release"
        if isinstance(tree, exp.Rollback):
            return "rolling back"
        names = sorted({t.name for t in tree.find_all(exp.Table) if t.name})
        return "reading " + ", ".join(f"'{n}'" for n in names) if names else "running a query"

    @abstractmethod
    def translate(self, err: Exception, doing: str) -> BaseException | None:
        """The driver's exception as an EngineError naming ``doing``, the cause and the fix
        and never a value (KeyboardInterrupt for a query Ctrl-C stopped); None for an
        exception that is not the driver's."""

    # ---- running, logged ----

    def execute(self, statement: Statement, params: Params = None) -> None:
        """Run a statement for its effect; in a dry run it is only logged."""
        self._record(statement)
        if not self.dry:
            self._fetch(self.runnable(statement), params)

    def scratch(self, statement: Statement) -> None:
        """Run a statement that makes or drops a temporary working table of the session,
        in a dry run too: it writes nothing to the database, and the statements after it
        read it (the distinct tuples that the statistics of a dry run read as a real run's
        do)."""
        self._record(statement)
        self._fetch(self.runnable(statement), None)

    def fetch_all(self, statement: Statement, params: Params = None) -> list[tuple[Any, ...]]:
        self._record(statement)
        return self._fetch(self.runnable(statement), params)

    def fetch_one(self, statement: Statement, params: Params = None) -> tuple[Any, ...]:
        rows = self.fetch_all(statement, params)
        if len(rows) != 1:
            raise RuntimeError(f"expected one row, got {len(rows)}")
        return rows[0]

    def fetch_arrow(self, statement: Statement) -> pa.Table:
        self._record(statement)
        return self._arrow(self.runnable(statement))

    def stream(
        self, statement: Statement, batch_rows: int, params: Params = None
    ) -> Iterator[pa.RecordBatch]:
        """Arrow record batches of a query with bound parameters; the result is drained or
        closed on return."""
        self._record(statement)
        return self._stream(self.runnable(statement), batch_rows, params)

    # ---- what every engine implements ----

    @abstractmethod
    def _fetch(self, sql: str, params: Params) -> list[tuple[Any, ...]]:
        """Run SQL text with bound parameters and return every row."""

    @abstractmethod
    def _arrow(self, sql: str) -> pa.Table:
        """Run a query and return its result as one Arrow table."""

    @abstractmethod
    def _stream(self, sql: str, batch_rows: int, params: Params = None) -> Iterator[pa.RecordBatch]:
        """Run a query and yield its result in Arrow batches of about ``batch_rows`` rows."""

    def column_type(self, name: str) -> exp.DataType:
        """A column type as this engine names it (:attr:`ColumnInfo.type`), as sqlglot's
        type: what a microaggregated class's value is cast to."""
        return exp.DataType.build(name, dialect=self.dialect)

    def list_type(self, element: str) -> exp.DataType:
        """The type of a list of ``element``, a column type as this engine names it
        (:attr:`ColumnInfo.type`): the type of an uploaded value set of such a column."""
        item = exp.DataType.build(element, dialect=self.dialect)
        return exp.DataType(this=exp.DataType.Type.ARRAY, expressions=[item], nested=True)

    def parse_name(self, text: str, *, output: bool = False) -> Name:
        """A table name as the user gave it (``name``, ``schema.name``, ``catalog.schema.name``;
        see :mod:`sbc_sql.names`), for reading or, with ``output``, for writing a release.
        An engine that also reads and writes files takes a path as one name (``path`` set),
        in one spelling for every spelling of it; it may refuse, as an InputError, a place it
        cannot keep a release in."""
        return parse(text)

    @abstractmethod
    def object_kinds(self, names: Sequence[str]) -> dict[str, str]:
        """Which of these names are taken in the working schema, and by what: 'TABLE' or
        'VIEW' (one catalog query for all of them)."""

    def identities(self, names: Sequence[str], *, output: bool = False) -> dict[str, Hashable]:
        """For each of ``names`` that exists, the identity of the object it resolves to in the
        catalog: two names are one object exactly when their identities are equal, however
        they are spelt or qualified. ``output``: the names are a release's own (one
        identifier each, written in the working schema); otherwise names as a user gives
        them (``parse_name``). This default, for an engine without such a catalog, takes
        each name, lower-cased, as its identity."""
        return {n: n.lower() for n in names}

    @abstractmethod
    def comment(self, name: str) -> str | None:
        """The comment on a table or view of the working schema (None: none, or no such
        name); a release's provenance is kept there."""

    def comments(self, names: Sequence[str]) -> dict[str, str | None]:
        """:meth:`comment` of each of ``names``; an engine may read them all at once."""
        return {n: self.comment(n) for n in names}

    @abstractmethod
    def describe(self, name: str, *, temporary: bool = False) -> TableInfo:
        """Columns, types, comments and type kinds of a table or view, in column order."""

    @abstractmethod
    def database_files(self) -> list[Path]:
        """The files the engine's databases live in (with their journals), which no output
        file may replace; empty for an engine whose data is not in local files."""

    @abstractmethod
    def open_source(self, table: str, csv: CsvOptions | None = None) -> TableInfo:
        """The input as a table with stable row ids: a base table as it is; a view or a
        CSV/Parquet path copied into a temporary table for this run first (a CSV read as
        ``csv`` says)."""

    @abstractmethod
    def attach(self, path: Path, alias: str) -> None:
        """Make the database in the file ``path`` readable, read-only, as ``alias``: its
        tables are then ``alias.schema.table`` to ``open_source``."""

    @abstractmethod
    def working(self) -> tuple[str, str]:
        """Where unqualified names are written: (database, schema)."""

    @abstractmethod
    def use(self, database: str | None, schema: str | None) -> None:
        """Make ``database.schema`` (either part None: the current one) where unqualified names
        are read and written; a schema that does not exist is an InputError."""

    @abstractmethod
    def write_into(self, path: Path, alias: str) -> None:
        """Attach the database file ``path`` read-write as ``alias`` (created if missing; in a
        dry run, one that does not exist yet is planned in memory and not made) and make it
        where the release is written: its main schema becomes the working schema. A file
        created here is removed if the run fails."""

    @abstractmethod
    def copy_in(self, table: str) -> None:
        """Make a table or view of another schema or attached database (``schema.t``,
        ``db.schema.t``) readable under that name for this connection: a temporary copy
        with its columns' comments, for the commands that only read."""

    @abstractmethod
    def row_id(self, table_alias: str) -> exp.Expression:
        """A source row's stable id inside a statement, for the table aliased so: the key
        the class labels are joined back on. Stable for the run, unique per row."""

    @contextlib.contextmanager
    def hashed_joins(self) -> Iterator[None]:
        """Statements inside planned with hash joins where the engine's planner would
        otherwise choose by row estimates it cannot make (the rows a series expands to):
        by default the engine's own choice."""
        yield

    @abstractmethod
    def upload(self, name: str, table: pa.Table) -> contextlib.AbstractContextManager[None]:
        """Make an Arrow table queryable under ``name`` for the block (the class labels)."""

    @abstractmethod
    def export_sql(self, table: str, path: str, fmt: str, provenance: str | None = None) -> Statement:
        """The statement that writes ``table`` (in class order) to the file ``path`` as
        ``fmt``: 'parquet', 'csv' (with a header), 'json' (an array) or 'ndjson'; a Parquet
        file carries ``provenance`` as its key-value metadata 'sbc_sql'."""

    @abstractmethod
    def close(self) -> None:
        """Release the connection (one the caller opened and passed in is left open)."""

    @abstractmethod
    def begin(self) -> None:
        """Start the transaction the release is written in."""

    @abstractmethod
    def commit(self) -> None: ...

    @abstractmethod
    def rollback(self) -> None: ...

    @abstractmethod
    def limit_memory(self, size: str) -> None:
        """Cap the engine's memory at ``size`` (already validated, e.g. '2GB')."""

    def collect_limit(self) -> tuple[int, str] | None:
        """The most bytes a run may bring from the engine's workers into this process, and
        the setting that says so, for an engine that clusters in workers of its own (a run
        clustered in this process pulls every row here); None: no limit."""
        return None

    def cluster_blocks(
        self, rows: Statement, decoder: Decoder, job: BlockJob, n_rows: int, name: str
    ) -> Clustered:
        """Cluster the rows of the query ``rows`` (the pull's: row id, the QIs, then the
        decoder's coded columns) in the default's blocks, in the engine's own workers, with
        the job's criteria and limits, and keep each row's class as the table ``name``
        (row_id, eq_class; dropped with :meth:`discard`). Returns a line that says how and
        the rows suppressed per reason. Only an engine whose ``capabilities.cluster_blocks``
        says so has it."""
        raise NotImplementedError(f"the {self.name} engine clusters in this process")

    @contextlib.contextmanager
    def borrowed(self) -> Iterator[None]:
        """Run inside: an engine that runs in a caller's own session (a function inside
        PostgreSQL) puts the session's settings a run changes, and the temporary tables it
        makes, back as they were on the way out. Any other engine's connection is its own,
        and this does nothing."""
        yield

    def server_value(self, sql: str) -> Any:
        """The first value of the query ``sql`` (which binds no values), run outside
        :meth:`driver_call`: a failure is a :class:`ServerError` with the server's own
        message. Only an engine that runs sbc-sql's SQL functions in its server (PostgreSQL,
        where install-sql puts them) has it."""
        raise NotImplementedError(f"the {self.name} engine runs no sbc-sql functions in a server")

    @contextlib.contextmanager
    def companion(self) -> Iterator[Engine]:
        """A second connection to the same database, for the streamed run
        (:mod:`sbc_sql.stages.stream`), which reads one query's rows on one connection while it
        writes rows on the other. Its temporary tables are its own, and go with it when the
        block ends. Only an engine whose :meth:`can_stream` says so has it."""
        raise NotImplementedError(f"the {self.name} engine opens no second connection")
        yield self  # pragma: no cover

    def can_stream(self) -> bool:
        """Whether this connection can open its :meth:`companion` (``capabilities.streams``,
        and what it was opened from allows a second connection)."""
        return self.capabilities.streams and not self.dry

    def append(self, name: str, table: pa.Table) -> None:
        """Add ``table``'s rows to the temporary table ``name``, made with their columns by
        the first call (a working table of the streamed run; dropped with :meth:`discard`).
        Only an engine whose ``capabilities.streams`` says so has it."""
        raise NotImplementedError(f"the {self.name} engine appends no rows from this process")

    def discard(self, name: str) -> None:
        """Drop a working table the run made (the class labels)."""
        self.execute(drop_table_sql(name))

    # ---- shared, in terms of the above ----

    def discard_created(self) -> None:
        """Close, and remove the database files this engine created: a run that failed or
        wrote nothing leaves no file behind."""
        if not self.created:
            return
        self.close()
        for path in self.created:
            path.unlink(missing_ok=True)
        self.created = []

    def table_exists(self, name: str) -> bool:
        """A table or view of that name exists in the working schema."""
        return bool(self.object_kinds([name]))

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Everything inside is committed together, or rolled back on any failure or
        interruption. In a dry run nothing is begun."""
        if self.dry:
            yield
            return
        self.begin()
        try:
            yield
            self.commit()
        except BaseException:
            # the first failure is the one to report: a rollback that fails too (the
            # transaction already gone with a failed commit) must not replace it, and the
            # engine drops an unfinished transaction with its connection anyway
            with contextlib.suppress(Exception):
                self.rollback()
            raise

    @staticmethod
    def rename_table(old: str, new: str) -> exp.Expression:
        """ALTER TABLE old RENAME TO new, as a tree."""
        return exp.Alter(
            this=exp.Table(this=ident(old)),
            kind="TABLE",
            actions=[exp.AlterRename(this=exp.Table(this=ident(new)))],
        )
