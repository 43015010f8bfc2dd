"""The anonymize run end to end: plan -> stats -> pull -> cluster -> generalize + write ->
measure + verify, each stage in its own module; this one only sequences them.
"""

from __future__ import annotations

import math
import os
import secrets
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
from sqlglot import exp

from . import arrays, db
from . import plan as spec
from .cluster.registry import ClusterRun, run_clustering
from .db import Connection
from .errors import InputError, VerificationError
from .hierarchies import HierarchySpec
from .hierarchies import resolve as resolve_hierarchies
from .sql.templates import ident, render
from .stages import measure as metrics
from .stages import pull, stats
from .stages import verify as verification
from .stages import write as generalize

Log = Callable[[str], None]
Progress = Callable[[int, int], None]


@dataclass
class Result:
    """What an anonymize run produced; the release stays queryable through ``con``."""

    con: Connection
    release: str
    view: str
    plan: spec.Plan
    measures: metrics.Measures | None
    verdict: verification.Verdict | None
    mode: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    # the run's statements, as SQL text or as trees not yet rendered (see statements)
    log: list[exp.Expression | str] = field(default_factory=list, repr=False)
    written: bool = True

    @property
    def statements(self) -> list[str]:
        """Every statement of the run, in order, as SQL text."""
        return [(s if isinstance(s, str) else db.to_sql(s)) + ";" for s in self.log]

    def relation(self) -> duckdb.DuckDBPyRelation:
        return self.con.table(exp.Table(this=ident(self.release)).sql(dialect="duckdb"))

    def to_pandas(self):
        return self.relation().df()

    def to_arrow(self) -> pa.Table:
        return self.relation().to_arrow_table()


class _Run:
    """Timings and the log of SQL statements of one run.

    Statements only logged (the reads, run by the stages themselves) stay trees until
    Result.statements asks for their text: rendering SQL is a fifth of a 0.35 s run."""

    def __init__(self, con: Connection, sql_only: bool) -> None:
        self.con = con
        self.sql_only = sql_only
        self.timings: dict[str, float] = {}
        self.log: list[exp.Expression | str] = []

    def stage(self, name: str, started: float) -> None:
        self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - started

    def read(self, tree: exp.Expression) -> None:
        self.log.append(tree)

    def write(self, tree: exp.Expression) -> None:
        sql = db.to_sql(tree)
        self.log.append(sql)
        if not self.sql_only:
            db.execute(self.con, sql)


def anonymize(
    database: str | Path | Connection | None,
    table: str,
    k: int,
    *,
    qi: Iterable[str] = (),
    sensitive: Iterable[str] = (),
    drop: Iterable[str] = (),
    keep: Iterable[str] = (),
    output: str | None = None,
    replace: bool = False,
    leftover: str = "nearest",
    weights: Mapping[str, float] | str | None = None,
    out_file: str | Path | None = None,
    sql_only: bool = False,
    mode: str = "auto",
    workers: int | None = None,
    algorithm: str = "sbca",
    hierarchies: Mapping[str, HierarchySpec] | None = None,
    max_suppression: float = 0.01,
    memory_limit: str | None = None,
    block_rows: int | None = None,
    log: Log | None = None,
    progress: Progress | None = None,
) -> Result:
    """k-anonymize ``table`` and write the verified release into the same database.

    ``memory_limit`` (e.g. '2GB') caps DuckDB's memory on the connection sbc-sql opens, so
    that its joins and sorts spill to disk beyond it; on a connection of your own, SET
    memory_limit yourself. ``block_rows`` sizes the default's blocks (every row of a block
    is a candidate for each of its classes: larger blocks, lower NCP, time quadratic in the
    block size).

    >>> result = anonymize("clinic.duckdb", "patients", 5)            # doctest: +SKIP
    >>> result.measures.total_ncp, result.to_pandas().head()          # doctest: +SKIP
    """
    say = log or (lambda _: None)
    if isinstance(weights, str) or (weights is not None and not isinstance(weights, Mapping)):
        weights = spec.parse_weights(weights)
    options = spec.Options(
        k=int(k),
        qi=spec.split_names(qi),
        sensitive=spec.split_names(sensitive),
        drop=spec.split_names(drop),
        keep=spec.split_names(keep),
        output=output,
        replace=replace,
        leftover=leftover,
        weights=dict(weights or {}),
        mode=mode,
        workers=workers,
        algorithm=algorithm,
        max_suppression=max_suppression,
        block_rows=block_rows,
    )
    # checked before anything is opened, so a bad size writes nothing
    spec.check_memory_limit(memory_limit)
    if database is None and not out_file and not sql_only:
        raise InputError(
            "no --db given, so the release would not be kept; pass --db FILE "
            "(it is created if missing) or --out-file release.parquet"
        )
    if memory_limit and isinstance(database, duckdb.DuckDBPyConnection):
        raise InputError(
            f"memory_limit '{memory_limit}' applies to connections sbc-sql opens; "
            f"on your own connection run SET memory_limit = '{memory_limit}' first"
        )
    con = db.connect(database, must_exist=not (database and db.looks_like_file(table)))
    if memory_limit and not sql_only:
        db.limit_memory(con, memory_limit)
    return _anonymize(_Run(con, sql_only), table, options, hierarchies, out_file, say, progress)


def _anonymize(
    run: _Run,
    table: str,
    options: spec.Options,
    hierarchies: Mapping[str, HierarchySpec] | None,
    out_file: str | Path | None,
    say: Log,
    progress: Progress | None,
) -> Result:
    con = run.con
    sql_only = run.sql_only

    t = time.perf_counter()
    info = db.open_source(con, table)
    plan = spec.make_plan(info, options, display_name=table)
    taken = db.object_kinds(con, plan.release_objects)
    spec.check_output(plan, taken)
    run.stage("plan", t)

    t = time.perf_counter()
    run.read(stats.row_count_sql(plan))
    (n_rows,) = db.fetch_one(con, stats.row_count_sql(plan))
    spec.check_rows(plan, int(n_rows))
    st = stats.collect_stats(con, plan, int(n_rows))
    spec.check_identifiers(plan, st.n_rows, st.distinct)
    _check_finite(plan, st)
    run.stage("stats", t)
    for c in plan.columns:
        how = f"{c.kind} quasi-identifier" if c.role == "qi" else c.role
        say(f"column '{c.name}' ({c.type}): {how} [{c.origin}]")

    labels_name = f"sbc_labels_{secrets.token_hex(4)}"
    temp_name = f"sbc_tmp_{plan.output}_{secrets.token_hex(4)}"  # + _rows, _classes
    layout = metrics.Layout(plan.qis, plan.verbatim, plan.weights)
    if sql_only:
        for tree in (
            stats.distinct_counts_sql(plan, list(plan.qis)),
            stats.numeric_ranges_sql(plan),
            stats.categorical_counts_sql(plan, stats.categorical_order(plan, st.distinct, st.nulls)),
            pull.pull_sql(plan),
        ):
            run.read(tree)
        _write_release(run, plan, st, taken, layout, temp_name, labels_name, out_file)
        return Result(con, plan.output, plan.view, plan, None, None, "", run.timings, run.log, written=False)

    row_id, clustering = _pull_and_cluster(run, plan, st, hierarchies, progress)
    say(f"clustering: {clustering.algorithm}, {clustering.mode} mode ({clustering.detail})")

    labels = arrays.table(
        {
            "row_id": row_id.astype(np.int64, copy=False),
            "eq_class": clustering.labels.astype(np.int64, copy=False),
        }
    )
    con.register(labels_name, labels)
    try:
        measures, verdict = _write_release(run, plan, st, taken, layout, temp_name, labels_name, out_file)
    finally:
        con.unregister(labels_name)
    return Result(con, plan.output, plan.view, plan, measures, verdict, clustering.mode, run.timings, run.log)


def _pull_and_cluster(
    run: _Run,
    plan: spec.Plan,
    st: stats.Stats,
    hierarchies: Mapping[str, HierarchySpec] | None,
    progress: Progress | None,
) -> tuple[np.ndarray, ClusterRun]:
    """Pull the QIs and cluster them; the pulled arrays are freed on return, before the
    release is written (at 10,000,000 rows they are over a gigabyte)."""
    options = plan.options
    t = time.perf_counter()
    data, row_id = pull.pull(run.con, plan, st)
    run.stage("pull", t)
    t = time.perf_counter()
    clustering = run_clustering(
        data,
        plan.k,
        algorithm=options.algorithm,
        mode=options.mode,
        leftover=options.leftover,
        workers=options.workers,
        block_rows=options.block_rows,
        hierarchies=resolve_hierarchies(data, st, hierarchies),
        max_suppression=options.max_suppression,
        progress=progress,
    )
    run.stage("cluster", t)
    return row_id, clustering


def _check_finite(plan: spec.Plan, st: stats.Stats) -> None:
    for c in plan.numeric_qis:
        for bound in (st.lo[c.name], st.hi[c.name]):
            if bound in (float("inf"), float("-inf")) or (bound != bound and st.nulls[c.name] < st.n_rows):
                raise InputError(
                    f"numeric quasi-identifier '{c.name}' holds NaN or infinite "
                    "values; clean them or declare the column with --keep/--drop"
                )


def _write_release(
    run: _Run,
    plan: spec.Plan,
    st: stats.Stats,
    taken: Mapping[str, str],
    layout: metrics.Layout,
    temp_name: str,
    labels_name: str,
    out_file: str | Path | None,
):
    """Build, verify and measure the release in one transaction, then publish it: the row
    and class tables are written under temporary names and renamed, and the views created,
    only once verification has passed. ``taken``: the release's names that exist already
    and their kind (as the plan stage found them), dropped first under --replace."""
    con = run.con
    export_tmp = None
    rows_tmp, classes_tmp = f"{temp_name}_rows", f"{temp_name}_classes"
    if not run.sql_only:
        db.execute(con, "BEGIN TRANSACTION")
    try:
        t = time.perf_counter()
        if plan.options.replace:
            for tree in generalize.drop_release_sql(taken, plan.release_objects):
                run.write(tree)
        run.write(generalize.create_classes_sql(plan, classes_tmp, labels_name))
        run.write(generalize.create_rows_sql(plan, rows_tmp, labels_name))
        run.stage("write", t)

        t = time.perf_counter()
        verdict = None
        if not run.sql_only:
            verdict = verification.verify_with_labels(
                con, layout, plan.source.name, labels_name, rows_tmp, classes_tmp, plan.k
            )
            if not verdict.ok:
                raise VerificationError(
                    "release failed verification, nothing was written: " + "; ".join(verdict.problems)
                )
        else:
            run.read(render("label_coverage", source=plan.source.name, labels=labels_name))
            for model in verification.default_models(plan.k):
                run.read(model.violations_sql(rows_tmp, plan.source.name))
            run.read(
                verification.class_checks_sql(layout, plan.source.name, labels_name, rows_tmp, classes_tmp)
            )
            run.read(verification.rows_missing_sql(layout, plan.source.name, labels_name, rows_tmp))
        run.stage("verify", t)

        t = time.perf_counter()
        measures = None
        size = spec.CLASS_SIZE
        ranges, cards = _known_domains(plan, st)
        run.read(metrics.ncp_sql(layout, plan.source.name, classes_tmp, ranges, size, cards))
        if not run.sql_only:
            measures = metrics.measure_tables(con, layout, plan.source.name, classes_tmp, ranges, size, cards)
        run.stage("measure", t)

        t = time.perf_counter()
        for old, new in ((rows_tmp, plan.rows_table), (classes_tmp, plan.classes_table)):
            run.write(
                exp.Alter(
                    this=exp.Table(this=ident(old)),
                    kind="TABLE",
                    actions=[exp.AlterRename(this=exp.Table(this=ident(new)))],
                )
            )
        run.write(generalize.create_release_view_sql(plan, plan.output, plan.rows_table, plan.classes_table))
        run.write(generalize.create_view_sql(plan, plan.view, plan.output))
        if out_file:
            export_tmp = f"{out_file}.sbc-partial"
            run.write(export_sql(plan.output, export_tmp, str(out_file)))
        if not run.sql_only:
            db.execute(con, "COMMIT")
            if export_tmp:
                os.replace(export_tmp, out_file)  # type: ignore[arg-type]
        run.stage("write", t)
        return measures, verdict
    except BaseException:
        if not run.sql_only:
            db.execute(con, "ROLLBACK")
            if export_tmp and os.path.exists(export_tmp):
                os.remove(export_tmp)
        raise


def _known_domains(plan: spec.Plan, st: stats.Stats) -> tuple[dict[str, tuple[float, float]], dict[str, int]]:
    """The input's numeric ranges and categorical cardinalities from the statistics stage, so
    that measuring does not aggregate the source again (a column without a finite range is
    left to SQL)."""
    ranges = {
        c.name: (st.lo[c.name], st.hi[c.name])
        for c in plan.numeric_qis
        if math.isfinite(st.lo[c.name]) and math.isfinite(st.hi[c.name])
    }
    cards = {c.name: st.cardinality(c.name) for c in plan.categorical_qis}
    return ranges, cards


def export_sql(table: str, path: str, final_name: str) -> exp.Expression:
    fmt = "PARQUET" if final_name.lower().endswith((".parquet", ".pq")) else "CSV"
    # in class order; within a class the row table's order (by released values)
    rows = exp.select(exp.Star()).from_(exp.Table(this=ident(table))).order_by(ident("eq_class"))
    return exp.Copy(
        this=exp.Subquery(this=rows),
        kind=False,
        files=[exp.Literal.string(path)],
        params=[exp.CopyParameter(this=exp.var("FORMAT"), expression=exp.var(fmt))],
    )
