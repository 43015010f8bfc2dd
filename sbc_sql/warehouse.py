"""A run split between sbc-sql and another warehouse: ``sbc-sql cluster`` computes the
statistics and the clustering on DuckDB and writes each row's class id; ``sbc-sql sql``
prints every other statement of the run (the release tables built from those class ids,
their verification and NCP) in the warehouse's SQL, for a dbt or Airflow job to run there.

The two agree on how a source row is named. With ``row_id`` (``--row-id COL``) it is a
declared integer key column of the source, unique and never NULL: the robust choice, as a
warehouse keeps no row order. Without it, it is the row's 0-based position in the source as
DuckDB reads it, and the printed SQL expects that number in a column ``sbc_row_id`` of the
warehouse's copy of the table.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ErrorLevel

from . import choices, engines
from . import plan as planning
from .engines.base import Engine
from .engines.paths import looks_like_file
from .errors import InputError
from .run import make_options
from .run.cluster import cluster
from .run.prepare import prepare, ready
from .run.publish import publish
from .sql.templates import col, render
from .stages import stream
from .stages.pull import BATCH_ROWS
from .version import __version__

#: the warehouses ``sbc-sql sql`` prints for
DIALECTS = choices.DIALECTS
#: the column the printed SQL joins on when no key column is declared
POSITION_COLUMN = "sbc_row_id"
#: the default name of the class-id table in the warehouse
LABELS = "sbc_labels"


def dialect(name: str) -> type[Dialect]:
    """The project's sqlglot dialect for the warehouse ``name`` (one of :data:`DIALECTS`, or
    duckdb: the embedded engine's own, which lets the printed SQL be run and checked here)."""
    from .sql.dialects import by_name

    found = by_name(name)
    if found is not None:
        return found
    raise InputError(f"unknown dialect '{name}'; pick one of {', '.join(DIALECTS)}")


def _options(k: int, row_id: str | None, options: dict[str, Any]) -> planning.Options:
    """The run's options; a key column in no role is dropped (it names rows, it is not data)."""
    roles: dict[str, tuple[str, ...]] = {
        r: planning.split_names(options.get(r, ())) for r in ("qi", "sensitive", "drop", "keep")
    }
    if row_id is not None and not any(row_id in names for names in roles.values()):
        roles["drop"] = (*roles["drop"], row_id)
    return make_options(k, **{**options, **roles})


def _engine(database: Any, row_id: str | None) -> Engine:
    # both commands only read: an input file without --db is read in memory
    return engines.keyed(database, row_id, read_only=database is not None)


def cluster_ids(
    database: Any,
    table: str,
    k: int,
    out: str | Path,
    *,
    row_id: str | None = None,
    log: Callable[[str], None] | None = None,
    progress: Any = None,
    **options: Any,
) -> tuple[int, int]:
    """Cluster ``table`` as ``sbc-sql anonymize`` would and write (row_id, eq_class) for each
    of its rows to ``out`` (.parquet or .csv); eq_class < 0 marks a suppressed row. Returns
    the rows written and the rows suppressed. Nothing is written to the database."""
    path = Path(out)
    if path.suffix.lower() not in (".parquet", ".csv"):
        raise InputError(f"--out '{out}': the ending picks the format, .parquet or .csv")
    engine = _engine(database, row_id)
    try:
        # nothing is written to the database: no name of it is checked
        prepared = prepare(engine, table, _options(k, row_id, options), log=log, writes=False)
        if prepared.plan.options.background.asked:
            raise InputError("background knowledge is not available when clustering for another warehouse")
        prepared = ready(prepared, log=log)
        clustering = cluster(prepared, progress=progress, log=log)
        run = clustering.run
        if run is not None and run.table is not None:
            # clustered streamed from the database: the labels are there, written out in batches
            try:
                return _write_kept_labels(engine, run.table, path, row_id)
            finally:
                engine.discard(run.table)
                if run.sets:
                    engine.discard(stream.sets_name(run.table))
        ids = prepared.row_id
        if ids is None or run is None:  # pragma: no cover - a real run has both
            raise RuntimeError("the run produced no class ids")
        if row_id is not None and np.unique(ids).size != ids.size:
            raise InputError(f"--row-id: column '{row_id}' is not unique; the row id must be a key")
        labels = pa.table(
            {
                "row_id": pa.array(ids.astype(np.int64, copy=False)),
                "eq_class": pa.array(run.labels.astype(np.int64, copy=False)),
            }
        )
        with _written(path) as scratch:
            if path.suffix.lower() == ".parquet":
                pq.write_table(labels, scratch)
            else:
                pa_csv.write_csv(labels, scratch)
        return labels.num_rows, int(np.count_nonzero(run.labels < 0))
    finally:
        engine.close()


@contextlib.contextmanager
def _written(path: Path) -> Iterator[Path]:
    """A scratch file beside ``path`` to write, which becomes ``path`` once written whole
    (nothing is left of it otherwise)."""
    scratch = path.with_name(f"{path.name}.sbc-partial")
    try:
        yield scratch
        os.replace(scratch, path)
    finally:
        scratch.unlink(missing_ok=True)


def _write_kept_labels(engine: Engine, labels: str, path: Path, row_id: str | None) -> tuple[int, int]:
    """The labels a run kept in the engine written to ``path`` a batch at a time (memory one
    batch's, whatever the table's size); returns the rows written and those suppressed."""
    if row_id is not None:
        (repeated,) = engine.fetch_one(render("labels_repeated", labels=labels))
        if int(repeated or 0):
            raise InputError(f"--row-id: column '{row_id}' is not unique; the row id must be a key")
    rows = suppressed = 0
    schema = pa.schema([pa.field("row_id", pa.int64()), pa.field("eq_class", pa.int64())])
    with _written(path) as scratch:
        parquet = path.suffix.lower() == ".parquet"
        writer: Any = pq.ParquetWriter(scratch, schema) if parquet else pa_csv.CSVWriter(scratch, schema)
        try:
            for batch in engine.stream(render("labels_out", labels=labels), BATCH_ROWS):
                batch = pa.RecordBatch.from_arrays(
                    [batch.column(0).cast(pa.int64()), batch.column(1).cast(pa.int64())], schema=schema
                )
                writer.write_batch(batch)
                rows += batch.num_rows
                suppressed += int(np.count_nonzero(batch.column(1).to_numpy(zero_copy_only=False) < 0))
        finally:
            writer.close()
    return rows, suppressed


def print_sql(
    database: Any,
    table: str,
    k: int,
    dialect_name: str,
    *,
    row_id: str | None = None,
    labels: str = LABELS,
    source: str | None = None,
    log: Callable[[str], None] | None = None,
    **options: Any,
) -> str:
    """Every statement of a run of ``table`` in the SQL of ``dialect_name``, with a header
    saying where the class ids come from and where the statements expect them. The
    statistics are computed here on DuckDB (the clustering needs them); their statements
    are printed too, for reference. Bound parameters are written as literals. ``source``: the
    source table's name in the warehouse (default: ``table`` as it is, or a file's name
    without its ending)."""
    target = dialect(dialect_name)
    engine = _engine(database, row_id)
    try:
        engine.dry = True
        # the release's names are the warehouse's, never checked against this database
        prepared = prepare(engine, table, _options(k, row_id, options), log=log, writes=False)
        plan, st = prepared.plan, prepared.stats
        if plan.options.background.asked:
            raise InputError("background knowledge is not available in the SQL for another warehouse")
        if dialect_name == "bigquery":
            nullable = [c.name for c in plan.categorical_qis if st.nulls.get(c.name, 0) > 0]
            if nullable:
                raise InputError(
                    f"categorical quasi-identifier '{nullable[0]}' holds NULL, which a BigQuery array "
                    "cannot; replace NULL by a value of its own first"
                )
        prepared = ready(prepared)
        params = publish(prepared, cluster(prepared)).bound
        trees = [t for t in engine.log if isinstance(t, exp.Expression) and not isinstance(t, exp.Comment)]
        # a file is read under a working name; a table keeps its own unless renamed
        sources = {}
        if source is not None or looks_like_file(table):
            sources[plan.source.name] = source or Path(table).stem
        body = [render_statement(t, target, plan.output, labels, params, sources) for t in trees]
    finally:
        engine.close()
    key = f"its column '{row_id}'" if row_id else f"the column '{POSITION_COLUMN}'"
    how = (
        f"--row-id {row_id}"
        if row_id
        else f"no --row-id: each row's 0-based position in the source as DuckDB reads it, which the "
        f"warehouse's copy of the table must hold in a column '{POSITION_COLUMN}'"
    )
    header = [
        f"-- sbc-sql {__version__}: the SQL of a run on '{table}' (k = {plan.k}) for {dialect_name}.",
        "-- The class ids come from `sbc-sql cluster` with the same table, k and options and",
        f"-- --out ids.parquet ({how}). Load that file into the table '{labels}'",
        "-- (row_id BIGINT, eq_class BIGINT; eq_class < 0 marks a suppressed row) before running",
        f"-- these statements; they join it to the source on {key} = row_id.",
        "-- In order: the statistics and the rows the clustering reads (computed by sbc-sql cluster;",
        "-- shown for reference), the release tables built from the class ids, the verification",
        "-- (each check must report no violation and no missing row before the release is",
        "-- published), NCP, and the release's names and views.",
    ]
    if params:
        shown = ", ".join(f"{name} = {value!r}" for name, value in params.items())
        header.append(f"-- Bound parameters, written as literals: {shown}.")
    return "\n".join(header) + "\n\n" + "\n\n".join(body) + "\n"


_WORKING = re.compile(r"^sbc_(labels|tmp_.+?)_[0-9a-f]{8}(_rows|_classes|_labelled|_beliefs)?$")


def render_statement(
    tree: exp.Expression,
    target: type[Dialect],
    output: str,
    labels: str,
    params: Mapping[str, Any],
    sources: Mapping[str, str] | None = None,
) -> str:
    """One statement of a dry run for ``target``: the run's random working names made fixed
    (the class-id table is ``labels``), the tables named in ``sources`` renamed (a dotted
    name is [catalog.]schema.table), DuckDB's row position made the column
    :data:`POSITION_COLUMN`, the bound parameters literals. Raises where the dialect cannot
    say what the statement means."""

    sources = sources or {}

    def portable(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Create) and isinstance(node.this, exp.Table):
            hit = _WORKING.match(node.this.name)
            properties = node.args.get("properties")
            if hit and hit.group(2) == "_labelled" and properties is not None:
                # the run's labelled source as a plain table, dropped by the last statement:
                # not every warehouse has temporary tables (Trino, Spark SQL); the tree is a copy
                kept = [p for p in properties.expressions if not isinstance(p, exp.TemporaryProperty)]
                node.set("properties", exp.Properties(expressions=kept) if kept else None)
        if isinstance(node, exp.Table) and not node.args.get("db"):
            hit = _WORKING.match(node.name)
            dotted = labels if hit and hit.group(1) == "labels" else sources.get(node.name)
            if dotted is not None:
                # a dotted name is the warehouse's [catalog.]schema.table
                parts = dotted.split(".")
                db, catalog = (parts[-2] if len(parts) > 1 else None), (parts[-3] if len(parts) > 2 else None)
                renamed = exp.table_(parts[-1], db, catalog, quoted=True)
                renamed.set("alias", node.args.get("alias"))
                return renamed
        if isinstance(node, exp.Identifier):
            hit = _WORKING.match(node.name)
            if hit and hit.group(1) != "labels":
                return exp.Identifier(this=f"sbc_tmp_{output}{hit.group(2) or ''}", quoted=True)
        if isinstance(node, exp.Column) and node.name == "rowid" and not node.this.quoted:
            return col(POSITION_COLUMN, node.table or None)
        if isinstance(node, exp.Placeholder) and node.name in params:
            return _literal(params[node.name])
        return node

    moved = tree.copy().transform(portable)
    left = sorted({p.name for p in moved.find_all(exp.Placeholder)})
    if left:
        raise RuntimeError(f"parameters without a value: {left}")
    return moved.sql(dialect=target, unsupported_level=ErrorLevel.RAISE, pretty=True) + ";"


def _literal(value: Any) -> exp.Expression:
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, (int, float)):
        return exp.Literal.number(repr(value) if isinstance(value, float) else str(value))
    return exp.Literal.string(str(value))
