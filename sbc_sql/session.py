"""A run in three steps, each a function of its own:

``prepare``  plan -> stats -> pull: everything that does not depend on k or the algorithm,
             done once per table;
``cluster``  one algorithm at one k over the prepared arrays: a class id per row;
``publish``  write -> verify -> measure, in one transaction, then the release's names.

:func:`anonymize` is the three in a row. Choosing k or comparing algorithms prepares once and
clusters and publishes as often as it needs. Each stage lives in its own module; this one
only sequences them, and every statement goes through the run's engine, whose log is the
run's SQL (``--sql`` prints the same list a real run executes).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import secrets
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from sqlglot import exp

from . import arrays, engines, provenance
from . import plan as planning
from .cluster import registry
from .cluster.distributed import BlockJob
from .cluster.limits import Limits
from .cluster.model import QIData
from .cluster.registry import ClusterRun, run_clustering
from .cluster.sbca_plus.algorithm import MAX_LABELS
from .cluster.sensitive import REASONS
from .engines.base import Engine, drop_table_sql
from .errors import InputError, VerificationError
from .hierarchies import HierarchySpec
from .hierarchies import resolve as resolve_hierarchies
from .knowledge import background_options
from .model import CsvOptions
from .privacy.base import PrivacyModel
from .privacy.criteria import Criteria, check_sensitive
from .privacy.criteria import models as criteria_models
from .sql.templates import ident, render
from .stages import measure, pull, stats, verify, write
from .version import __version__

Log = Callable[[str], None]
Progress = Callable[[int, int], None]


@dataclass(repr=False)
class Result:
    """What an anonymize run produced; the release stays queryable through ``engine``.

    ``measures`` holds the figures (NCP per QI and total, classes, suppressed rows),
    ``to_pandas()`` / ``to_arrow()`` / ``relation()`` read the release view, ``statements``
    lists the run's SQL. A Result is a context manager: leaving the ``with`` block (or
    ``close()``) closes the database connection if sbc-sql opened it, which releases the
    database file for other processes; a connection you passed in stays open.
    """

    engine: Engine
    release: str
    view: str
    plan: planning.Plan
    measures: measure.Measures | None
    verdict: verify.Verdict | None
    mode: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    written: bool = True
    #: the file the release was exported to (--out-file), once written
    exported: Path | None = None
    #: the criteria asked on top of k and, per figure (l_diversity, t_closeness, ...), what
    #: the release achieves on its sensitive columns (the worst over columns and classes)
    criteria: Criteria | None = None
    achieved: dict[str, float] = field(default_factory=dict)
    #: suppressed rows per reason (rare_value, unplaced, ...), when the algorithm gave reasons
    suppressed_by: dict[str, int] = field(default_factory=dict)
    #: the distinct QI tuples clustered, each standing for its rows (None: every row was)
    tuples: int | None = None

    @property
    def statements(self) -> list[str]:
        """Every statement of the run, in order, as SQL text."""
        return self.engine.statements()

    @property
    def con(self) -> Any:
        """The DuckDB connection the release was written through."""
        connection = getattr(self.engine, "connection", None)
        if connection is None:
            raise InputError(
                f"the release '{self.release}' was written by the {self.engine.name} engine, which "
                "keeps no DuckDB connection; read it where it was written (Spark: "
                "spark.read.parquet, or the catalog table)"
            )
        return connection

    def relation(self) -> Any:
        return self.con.table(self.engine.sql(exp.Table(this=ident(self.release))))

    def to_pandas(self) -> Any:
        return self.relation().df()

    def to_arrow(self) -> pa.Table:
        return self.relation().to_arrow_table()

    def close(self) -> None:
        """Close the connection if sbc-sql opened it (idempotent)."""
        self.engine.close()

    def __enter__(self) -> Result:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        m = self.measures
        if m is None:
            return f"<Result '{self.release}': k={self.plan.k}, not written (SQL only)>"
        return (
            f"<Result '{self.release}': k={self.plan.k}, {m.n_rows:,} rows -> {m.released:,} "
            f"in {m.classes:,} classes (smallest {m.smallest:,}), total NCP {m.total_ncp:.4f}>"
        )


@dataclass
class Prepared:
    """A table planned, profiled and pulled: what every (algorithm, k) of it shares."""

    engine: Engine
    plan: planning.Plan
    stats: stats.Stats
    #: the QIs as arrays and each row's id in the source; None in a dry run, and once released
    data: QIData | None
    row_id: np.ndarray | None
    hierarchies: Mapping[str, HierarchySpec] | None = None
    timings: dict[str, float] = field(default_factory=dict)
    #: the rows were pulled (None: a run that clusters in the engine's workers pulls nothing)
    pulled: bool = True
    #: the engine's table of the distinct QI tuples when those were pulled instead of the
    #: rows (``data`` then holds one row per tuple, and ``row_id`` the tuples' row ids)
    tuples: str | None = None
    #: how many distinct tuples were pulled (with ``tuples``)
    n_tuples: int | None = None
    #: whether the table's distinct tuples were estimated (a run that may cluster tuples
    #: asks once whether they pay)
    estimated: bool = False

    def stage(self, name: str, started: float) -> None:
        self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - started

    def close(self) -> None:
        """Drop the working table of distinct tuples, if one was made (idempotent)."""
        if self.tuples is not None:
            self.engine.scratch(drop_table_sql(self.tuples))
        self.tuples = None

    def release_arrays(self) -> None:
        """Free the pulled arrays (at 10,000,000 rows over a gigabyte) before writing."""
        self.data = None

    def plan_for(self, k: int, algorithm: str | None = None, output: str | None = None) -> planning.Plan:
        """The plan of another run over the same table: another k, algorithm or output."""
        options = dataclasses.replace(
            self.plan.options,
            k=planning.whole_k(k),
            algorithm=algorithm or self.plan.options.algorithm,
            output=output,
        )
        plan = planning.make_plan(
            self.plan.source, options, display_name=self.plan.display_name, parse_name=self.engine.parse_name
        )
        planning.check_rows(plan, self.stats.n_rows)
        return plan


@dataclass
class Clustering:
    """One algorithm's classes at one k: the plan they are for and a class id per row, and
    the classes' value sets when they are made beside the clustering (write.value_sets),
    which publish lets go once the class table holds them (at 10,000,000 rows several
    hundred megabytes)."""

    plan: planning.Plan
    run: ClusterRun | None
    sets: pa.Table | None = None


def anonymize(
    database: Any,
    table: str | None = None,
    k: int | None = None,
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
    csv_delimiter: str | None = None,
    csv_header: bool | None = None,
    attach: Iterable[str] = (),
    target_db: str | Path | None = None,
    l_diversity: int | None = None,
    l_model: str = "distinct",
    t_closeness: float | None = None,
    beta_likeness: float | None = None,
    beta_basic: bool = False,
    bk_threshold: float | None = None,
    bk_estimator: str | None = None,
    bk: str | None = None,
    seed: int | None = None,
    max_width: Mapping[str, float] | str | Iterable[str] | None = None,
    max_values: Mapping[str, int] | str | Iterable[str] | None = None,
    target: str | None = None,
    target_weight: float | None = None,
    tuples: bool = True,
    engine: str | None = None,
    log: Log | None = None,
    progress: Progress | None = None,
    trace: Log | None = None,
) -> Result:
    """k-anonymize ``table`` and write the verified release into the same database.

    ``database``: a DuckDB file path, a DuckDB connection, an :class:`~sbc_sql.engines.Engine`,
    or None (in memory, with ``out_file``); or the data itself, a pandas DataFrame, a pyarrow
    Table or a DuckDB relation, which is copied into an in-memory DuckDB as the table ``table``
    (default 'data') where the release is written too: ``anonymize(df, k=5, qi="age,sex",
    sensitive="dx")``. ``table`` may also be a CSV or Parquet path.

    Roles: ``qi``, ``sensitive``, ``drop`` (identifiers, never released) and ``keep`` (released
    as they are), each a list of column names or one comma-separated string; a column without
    one takes its role from its comment ('sbc:qi' ...) or, when no QI is named anywhere,
    becomes a QI. ``output`` names the release (default ``<table>_k<k>``); ``replace``
    overwrites an existing release of that name. ``leftover`` (nearest, last, suppress) places
    rows left when fewer than k remain. ``weights`` ({'age': 2} or 'age=2') weighs QIs in the
    distance and the total NCP. ``out_file`` also exports the release: .parquet (value sets
    as lists), .csv (the readable text view), .json (an array) or .ndjson (a line a row).
    ``sql_only`` plans and logs the SQL without writing. ``mode`` (auto, exact, blocks),
    ``workers`` and ``block_rows`` tune the default algorithm; ``algorithm`` picks another
    (sbca-paper, mondrian, kmember, datafly, incognito), ``hierarchies`` and
    ``max_suppression`` feed datafly and incognito.

    ``l_diversity`` (``l_model`` distinct or entropy), ``t_closeness`` (EMD to the whole
    input's distribution) and ``beta_likeness`` (enhanced unless ``beta_basic``) are kept on
    every sensitive column while clustering, each column on its own, and verified before the
    release is written; rows that cannot be placed are suppressed, at most
    ``max_suppression`` of them (default 1 %).

    ``bk_threshold`` (J in (0, 1], default 0.8), ``bk_estimator`` (nb, combo, kernel) or
    ``bk`` (the user's knowledge: a table, or a CSV or Parquet file keyed by QI values) and
    ``seed`` bound how far apart (Jensen-Shannon divergence in bits) the background
    knowledge of two members of a class may be: algorithm kinc, kagg or beta-ge (which need
    ``beta_likeness`` and one sensitive column), or the default, which then clusters each
    group of alike knowledge alone. Their rows not released count against
    ``max_suppression``.

    ``max_width`` ({'age': 10, 'birth_date': 365} or 'age=10,birth_date=365': the widest
    range a class may span on a numeric QI, in its units, days for a date or timestamp) and
    ``max_values`` ({'nationality': 3}: the most values of a class's set on a categorical
    QI) are kept by the default algorithm while it clusters and verified in SQL; rows that
    fit no class are suppressed, at most ``max_suppression`` of them.

    ``target`` (a column released verbatim, e.g. a label a model will be trained on) makes
    the clustering prefer classes whose rows share their majority label: it minimizes total
    NCP + ``target_weight`` x CM (the share of rows not of their class's majority label;
    default :data:`~sbc_sql.cluster.registry.DEFAULT_TARGET_WEIGHT`). Read by the default
    algorithm, kmember and mondrian.

    ``tuples`` (default True): where the algorithm and the engine can (the default
    algorithm on k alone, in DuckDB), the distinct QI tuples are clustered, each standing
    for its rows (a GROUP BY in the engine; a tuple held by k rows or more is a class of its
    own), and the rows take their tuple's class by a join in the engine; the work then
    follows the distinct tuples rather than the rows. False clusters every row.

    ``engine='spark'`` runs the SQL in Apache Spark: ``database`` is then a SparkSession
    (None: a local one is built, and stopped when the result is closed) or a Spark DataFrame,
    the input itself (then ``output`` is required). ``table`` is a Parquet or CSV path (a
    name with a slash in it, or a file's ending; a file or a folder) or a table of the Spark
    catalog, and ``output`` a folder path, where the release's Parquet files go (its class
    table beside it in ``<output>_classes``), or a table of the catalog; by default the
    release of a path goes beside it. A SparkSession is taken as Spark without ``engine``.

    ``log`` receives one line per role and step, ``progress(done, total)`` the clustering's
    progress, ``trace`` each statement's SQL as it runs.

    ``memory_limit`` (e.g. '2GB') caps DuckDB's memory on the connection sbc-sql opens, so
    that its joins and sorts spill to disk beyond it; on a connection of your own, SET
    memory_limit yourself. ``block_rows`` sizes the default's blocks (every row of a block is
    a candidate for each of its classes: larger blocks, lower NCP, time quadratic in the
    block size). ``csv_delimiter`` (one character, '\\t' for a tab) and ``csv_header``
    (True/False) tell DuckDB how to read a CSV input instead of sniffing it. ``table`` may
    name a schema or an attached database (``schema.t``, ``db.schema.t``); ``attach`` lists
    other DuckDB files to read from, each ``FILE`` or ``FILE:ALIAS`` (the alias defaults to
    the file's stem), opened read-only. ``target_db`` writes the release into another DuckDB
    file (created if missing), so that it can be shipped alone; the source database is then
    opened read-only when sbc-sql opens it; a connection of your own is used as it is, and
    its working database becomes the release's (where ``Result`` reads it).
    Errors are :class:`~sbc_sql.InputError` (bad input; its subclasses
    :class:`~sbc_sql.RoleError` and :class:`~sbc_sql.OutputExistsError`),
    :class:`~sbc_sql.VerificationError` and :class:`~sbc_sql.ResourceError`.

    >>> with anonymize(df, k=5, qi="age,sex", sensitive="dx") as result:   # doctest: +SKIP
    ...     result.measures.total_ncp, result.to_pandas().head()

    >>> result = anonymize("clinic.duckdb", "patients", 5)            # doctest: +SKIP
    >>> result.measures.total_ncp, result.to_pandas().head()          # doctest: +SKIP
    """
    given_database = database
    database, table, k = _input(database, table, k, engine=engine, output=output)
    # an engine made here for data given as a frame is closed by a failed run
    made_here = database is not given_database
    options = make_options(
        k,
        qi=qi,
        sensitive=sensitive,
        drop=drop,
        keep=keep,
        output=output,
        replace=replace,
        leftover=leftover,
        weights=weights,
        mode=mode,
        workers=workers,
        algorithm=algorithm,
        max_suppression=max_suppression,
        block_rows=block_rows,
        csv_delimiter=planning.check_csv_options(table, csv_delimiter, csv_header),
        csv_header=csv_header,
        criteria=Criteria(l_diversity, l_model, t_closeness, beta_likeness, beta_basic),
        background=planning.Background(bk_threshold, bk_estimator, bk, seed),
        max_width=max_width,
        max_values=max_values,
        target=target,
        target_weight=target_weight,
        tuples=tuples,
    )
    attachments = [engines.parse_attach(a) for a in attach]
    # checked before anything is opened, so a bad size writes nothing
    planning.check_memory_limit(memory_limit)
    if database is None and not out_file and not sql_only:
        raise InputError(
            "no --db given, so the release would not be kept; pass --db FILE "
            "(it is created if missing) or --out-file release.parquet"
        )
    if memory_limit and database is not None and not isinstance(database, (str, Path)):
        raise InputError(
            f"memory_limit '{memory_limit}' applies to connections sbc-sql opens; "
            f"on your own connection run SET memory_limit = '{memory_limit}' first"
        )
    from .engines.paths import looks_like_file
    from .engines.urls import looks_like_url

    # a database file named (a URL names a server's database, no file)
    given = [Path(database)] if isinstance(database, (str, Path)) and not looks_like_url(database) else []
    inputs = [Path(table)] if looks_like_file(table) else []
    into = None if target_db is None else planning.check_target_db(target_db, protected=[*given, *inputs])
    # a dry run writes nothing: an existing file is opened read-only, and a file that does
    # not exist yet (an input file into a new --db) is not made: the run plans in memory
    new_file = bool(given) and not given[0].exists() and looks_like_file(table)
    run = engines.connect(
        None if sql_only and new_file else database,
        must_exist=not (database and looks_like_file(table)),
        read_only=sql_only or into is not None,
        engine=engine,
    )
    try:
        run.dry = sql_only
        run.trace = trace
        # a release in another schema: written there once the input is read (see below)
        place = run.parse_name(output, output=True) if output else None
        if place is not None and (place.qualified or place.path):
            if place.qualified and into is not None:
                raise InputError(
                    f"--output '{output}' names a schema and --target-db a database; the release is "
                    f"written into the main schema of --target-db: give --output {place.name}"
                )
            options = dataclasses.replace(options, output=place.name)
        for path, alias in attachments:
            run.attach(path, alias)
        if into is not None:
            # the source named where it is, before the target becomes the working schema
            table = _qualified_input(run, table)
            run.write_into(into, planning.target_alias(into, run.working()[0]))
        elif place is not None and place.qualified:
            table = _qualified_input(run, table)
            run.use(place.catalog, place.schema)
        if out_file is not None and not run.capabilities.exports:
            # refused before any work, not after the clustering
            raise InputError(
                f"--out-file is not available with the {run.name} engine; the release is kept "
                "in the database, to be exported from there"
            )
        if out_file is not None:
            out_file = planning.check_out_file(
                out_file, protected=[*run.database_files(), *given, *inputs], replace=replace
            )
        if memory_limit and not sql_only:
            run.limit_memory(memory_limit)
        say = log or _warnings_only
        prepared = prepare(run, table, options, hierarchies=hierarchies, log=say)
        try:
            clustering = cluster(prepared, progress=progress, log=say)
            prepared.release_arrays()
            return publish(prepared, clustering, out_file=out_file)
        finally:
            prepared.close()
    except BaseException:
        # a failed run keeps nothing open, and a database file it created (which would
        # hold nothing) goes
        run.discard_created()
        if run is not database or made_here:
            run.close()
        raise


def _qualified_input(engine: Engine, table: str) -> str:
    """``table`` with its database and schema (a file input as it is)."""
    from .engines.paths import looks_like_file

    name = engine.parse_name(table)
    if looks_like_file(table) or name.path or (name.catalog is not None and name.schema is not None):
        return table
    return str(name.within(*engine.working()))


def _input(
    database: Any, table: Any, k: Any, *, engine: str | None = None, output: str | None = None
) -> tuple[Any, str, Any]:
    """(database, table, k) of a call: data given as a frame is copied into an in-memory
    DuckDB under ``table`` (default 'data'), and ``anonymize(df, 5)`` reads 5 as k. With
    ``engine='spark'`` the database is a SparkSession (None: a local one is built) or a
    Spark DataFrame, the input itself."""
    engines.check_engine(engine, database)
    if engines.is_spark_frame(database):
        if k is None and not isinstance(table, str) and table is not None:
            table, k = None, table
        if not output:
            raise InputError(
                "a Spark DataFrame has no place of its own for the release; name one with "
                "--output: a folder path for Parquet files, or a table of the Spark catalog"
            )
        table = table or "data"
        database = engines.spark_from_frame(database, table)
    frame = engines.as_frame(database)
    if frame is not None:
        if k is None and not isinstance(table, str) and table is not None:
            table, k = None, table
        name = table or "data"
        database = engines.duckdb_from_frame(frame, name)
        table = name
    if not isinstance(table, str) or not table:
        raise InputError("no table given; pass the table (or view, or CSV/Parquet path) to anonymize")
    if k is None:
        raise InputError("no k given; pass the minimum class size, e.g. k=5")
    return database, table, k


def release_owners(engine: Engine, names: Iterable[str]) -> dict[str, str]:
    """Which of these existing names belong to a release, and its name: a release's view and
    tables carry its provenance; its text view ``<release>_view`` belongs to the release
    whose provenance names it."""
    owners: dict[str, str] = {}
    for name in names:
        doc = _provenance_of(engine, name)
        if doc is not None:
            owners[name] = str(doc["release"]["view"])
            continue
        base, _, suffix = name.rpartition("_")
        if base and suffix == "view":
            doc = _provenance_of(engine, base)
            if doc is not None and str(doc["release"]["text_view"]).lower() == name.lower():
                owners[name] = str(doc["release"]["view"])
    return owners


def _provenance_of(engine: Engine, name: str) -> Mapping[str, Any] | None:
    try:
        found = provenance.parse(engine.comment(name))
    except provenance.ProvenanceError:
        return None
    return found.document if found is not None else None


def _warnings_only(line: str) -> None:
    """Without a log, warnings still reach a Python caller (as Python warnings)."""
    if line.startswith("warning: "):
        # attributed to the caller's line, the first frame outside this package
        frame, level = sys._getframe(1), 2
        while frame.f_back is not None and frame.f_globals.get("__name__", "").startswith("sbc_sql"):
            frame, level = frame.f_back, level + 1
        warnings.warn(line.removeprefix("warning: "), UserWarning, stacklevel=level)


def make_options(
    k: int, *, weights: Mapping[str, float] | str | None = None, **given: Any
) -> planning.Options:
    """The run's options from keyword arguments, names given as lists or comma-separated."""
    if isinstance(weights, str) or (weights is not None and not isinstance(weights, Mapping)):
        weights = planning.parse_weights(weights)
    for role in ("qi", "sensitive", "drop", "keep"):
        given[role] = planning.split_names(given.get(role, ()))
    for key, flag in (("max_width", "--max-width"), ("max_values", "--max-values")):
        if given.get(key) is not None:
            given[key] = planning.parse_limits(given[key], flag)
        else:
            given.pop(key, None)
    return planning.Options(k=planning.whole_k(k), weights=dict(weights or {}), **given)


def prepare(
    engine: Engine,
    table: str,
    options: planning.Options,
    *,
    hierarchies: Mapping[str, HierarchySpec] | None = None,
    log: Log | None = None,
) -> Prepared:
    """Plan the run, collect the statistics and pull the QIs (a dry run pulls nothing)."""
    say = log or (lambda _: None)
    timings: dict[str, float] = {}
    t = time.perf_counter()
    csv = CsvOptions(options.csv_delimiter, options.csv_header)
    info = engine.open_source(table, csv)
    plan = planning.make_plan(info, options, display_name=table, parse_name=engine.parse_name)
    taken = engine.object_kinds(plan.release_objects)
    planning.check_output(plan, taken, release_owners(engine, taken), engine.identities)
    timings["plan"] = time.perf_counter() - t

    t = time.perf_counter()
    (n_rows,) = engine.fetch_one(stats.row_count_sql(plan))
    planning.check_rows(plan, int(n_rows))
    timings["stats"] = time.perf_counter() - t
    # the distinct tuples first when they will be clustered: the QIs' statistics read them
    tuples = None
    estimated = by_tuples(engine, plan)
    if estimated:
        t = time.perf_counter()
        tuples = _store_tuples(engine, plan, int(n_rows))
        timings["tuples"] = time.perf_counter() - t
    t = time.perf_counter()
    try:
        return _prepared(engine, plan, int(n_rows), tuples, estimated, hierarchies, timings, t, say)
    except BaseException:
        if tuples is not None:
            engine.scratch(drop_table_sql(tuples))
        raise


def _prepared(
    engine: Engine,
    plan: planning.Plan,
    n_rows: int,
    tuples: str | None,
    estimated: bool,
    hierarchies: Mapping[str, HierarchySpec] | None,
    timings: dict[str, float],
    t: float,
    say: Log,
) -> Prepared:
    """prepare() once the rows are counted: ``tuples`` the distinct tuples' table (None:
    none) and ``estimated`` whether they were estimated (Prepared.tuples, .estimated)."""
    st = stats.collect_stats(engine, plan, n_rows, tuples)
    planning.check_identifiers(plan, st.n_rows, st.distinct, say)
    _check_finite(plan, st)
    timings["stats"] += time.perf_counter() - t
    for c in plan.columns:
        how = f"{c.kind} quasi-identifier" if c.role == "qi" else c.role
        say(f"column '{c.name}' ({c.type}): {how} [{c.origin}]")

    criteria = plan.options.criteria
    target = plan.target
    if target is not None and target.role == "sensitive" and not criteria.asked:
        say(
            f"warning: --target '{target.name}' is sensitive and no criterion bounds it: classes kept pure "
            "on it tell anyone who knows a person's class their value; add e.g. --l-diversity 2"
        )
    # background knowledge is about the sensitive column too, with or without criteria
    sensitive = plan.sensitive if criteria.asked or plan.options.background.asked else ()
    if sensitive:
        distinct, nulls = stats.distinct_and_nulls(engine, plan.source.name, sensitive)
        check_sensitive(criteria, sensitive, {c: d + (1 if nulls[c] else 0) for c, d in distinct.items()})

    prepared = Prepared(
        engine, plan, st, None, None, hierarchies, timings, tuples=tuples, estimated=estimated
    )
    if in_workers(engine, plan):
        # the engine's workers read the rows where they are (see cluster())
        prepared.pulled = False
        return prepared
    _pull(prepared, sensitive)
    return prepared


#: tuples are clustered while there are at most this share of the rows: above it, most
#: tuples stand for one row, and pulling the rows costs less than the GROUP BY and the join
TUPLE_SHARE = 0.8


def by_tuples(engine: Engine, plan: planning.Plan) -> bool:
    """Whether this run may cluster the distinct QI tuples rather than the rows: asked
    (``Options.tuples``), an algorithm that clusters tuples whole on k alone
    (``Clusterer.tuples``; criteria, background knowledge, per-column limits and a target
    count or place rows one by one), and an engine that labels rows by their tuple."""
    options = plan.options
    return (
        options.tuples
        and engine.capabilities.tuples
        and registry.get(options.algorithm).tuples
        and not options.criteria.asked
        and not options.background.asked
        and not (options.max_width or options.max_values)
        and options.target is None
    )


def _store_tuples(engine: Engine, plan: planning.Plan, n_rows: int) -> str | None:
    """For a run that may cluster tuples (:func:`by_tuples`), the name of a new temporary
    table of the source's distinct QI tuples and their row counts, when the table repeats
    its tuples enough for that to pay: an estimate of the distinct tuples (read, so a dry
    run decides as a real one does) at most :data:`TUPLE_SHARE` of the rows. None: rows."""
    (estimate,) = engine.fetch_one(pull.tuple_estimate_sql(plan))
    if int(estimate or 0) > TUPLE_SHARE * n_rows:
        return None
    name = f"sbc_tuples_{secrets.token_hex(4)}"
    engine.scratch(pull.create_tuples_sql(plan, name))
    return name


def _pull_tuples(prepared: Prepared) -> None:
    """Pull the stored distinct QI tuples with their row counts."""
    engine, plan, name = prepared.engine, prepared.plan, prepared.tuples
    assert name is not None
    if engine.dry:
        engine.show(pull.pull_tuples_sql(plan, name, engine.row_id("s")))
        return
    prepared.data, prepared.row_id = pull.pull_tuples(engine, plan, prepared.stats, name)
    prepared.n_tuples = len(prepared.row_id)


def _pull(
    prepared: Prepared, sensitive: Sequence[planning.Column], run_plan: planning.Plan | None = None
) -> None:
    """Pull what ``run_plan`` (default: the prepared plan) clusters: the distinct tuples
    where it may (:func:`by_tuples`), else the rows."""
    engine, plan, criteria = prepared.engine, prepared.plan, prepared.plan.options.criteria
    t = time.perf_counter()
    if by_tuples(engine, run_plan or plan):
        if prepared.tuples is None and not prepared.estimated:
            prepared.tuples = _store_tuples(engine, run_plan or plan, prepared.stats.n_rows)
            prepared.estimated = True
        if prepared.tuples is not None:
            _pull_tuples(prepared)
            prepared.pulled = True
            prepared.stage("pull", t)
            return
    prepared.close()
    if engine.dry:
        engine.show(pull.pull_sql(plan, engine.row_id("s"), sensitive))
    else:
        prepared.data, prepared.row_id = pull.pull(
            engine, plan, prepared.stats, sensitive=sensitive, target=plan.target
        )
        labels = prepared.data.n_labels
        if plan.target is not None and labels > MAX_LABELS:
            raise InputError(
                f"--target '{plan.target.name}' has {labels:,} distinct values, above the "
                f"{MAX_LABELS} labels a class is kept pure on; a target is a label to predict: "
                "give a column of classes (e.g. an income band rather than the income)"
            )
        if prepared.data.sensitive is not None:
            problems = criteria.rule().check_feasible(prepared.data.sensitive)
            if problems:
                raise InputError(problems[0])
    prepared.pulled = True
    prepared.stage("pull", t)


def in_workers(engine: Engine, plan: planning.Plan) -> bool:
    """Whether the engine clusters this run's rows in its own workers: the default's block
    mode on k alone (criteria and background knowledge weigh the whole table's
    distribution, and the other algorithms are not cut in blocks, so those run here)."""
    options = plan.options
    return (
        engine.capabilities.cluster_blocks
        and not engine.dry
        and options.algorithm == registry.DEFAULT
        and options.mode in ("auto", "blocks")
        and not options.criteria.asked
        and not options.background.asked
        and not (options.max_width or options.max_values)
        and options.target is None
    )


def cluster_limits(plan: planning.Plan) -> Limits:
    """The plan's per-column limits in the clustering's units (a timestamp's width, given in
    days, in microseconds; a date's stays in days, a number's in its own units)."""
    temporal = {c.name: c.temporal for c in plan.columns}
    scale = {
        n: float(verify.MICROS_PER_DAY) for n in plan.options.max_width if temporal.get(n) == "timestamp"
    }
    return Limits(
        {n: w * scale.get(n, 1.0) for n, w in plan.options.max_width.items()},
        dict(plan.options.max_values),
        scale,
    )


def cluster(
    prepared: Prepared,
    plan: planning.Plan | None = None,
    *,
    progress: Progress | None = None,
    log: Log | None = None,
) -> Clustering:
    """Cluster the prepared rows as ``plan`` asks (default: the prepared plan)."""
    plan = plan or prepared.plan
    if prepared.engine.dry:
        return Clustering(plan, None)
    options = plan.options
    if in_workers(prepared.engine, plan):
        return _cluster_in_workers(prepared, plan, log)
    if not prepared.pulled or (prepared.tuples is not None and not by_tuples(prepared.engine, plan)):
        # not pulled yet, or pulled as tuples for an algorithm that takes rows
        _pull(prepared, plan.sensitive if options.criteria.asked or options.background.asked else (), plan)
    if prepared.data is None:
        raise RuntimeError("the prepared arrays were released; prepare the table again")
    if log is not None and registry.compiles_first(options.algorithm):
        log("compiling the clustering kernels (first run only: 20 to 30 s, cached afterwards)")
    t = time.perf_counter()
    run = run_clustering(
        prepared.data,
        plan.k,
        algorithm=options.algorithm,
        mode=options.mode,
        leftover=options.leftover,
        workers=options.workers,
        block_rows=options.block_rows,
        hierarchies=resolve_hierarchies(prepared.data, prepared.stats, prepared.hierarchies),
        max_suppression=options.max_suppression,
        rule=options.criteria.rule(),
        background=background_options(prepared.engine, plan, prepared.data),
        progress=progress,
        limits=cluster_limits(plan),
        target_weight=(
            registry.DEFAULT_TARGET_WEIGHT if options.target_weight is None else options.target_weight
        ),
    )
    prepared.stage("cluster", t)
    if log is not None:
        units = ""
        if prepared.tuples is not None and prepared.n_tuples is not None:
            units = (
                f"; {prepared.n_tuples:,} distinct QI tuples standing for {prepared.stats.n_rows:,} "
                "rows (--rows clusters every row)"
            )
        log(f"clustering: {run.algorithm}, {run.mode} mode ({run.detail}){units}")
        for column, _, forced in run.rare:
            log(
                f"a value of '{column}' forces classes of at least {forced:,} rows under "
                "beta-likeness: its rows are suppressed"
            )
    sets = None
    if write.sets_beside(plan, prepared.engine.capabilities.value_sets):
        # generalizing is writing: its seconds are the write's
        t = time.perf_counter()
        sets = write.value_sets(prepared.data, run.labels, prepared.stats.domains, plan)
        prepared.stage("write", t)
    return Clustering(plan, run, sets)


def _cluster_in_workers(prepared: Prepared, plan: planning.Plan, log: Log | None) -> Clustering:
    """The default's blocks clustered in the engine's workers; the labels stay there."""
    engine, options = prepared.engine, plan.options
    job = BlockJob(plan.k, options.block_rows, options.leftover)
    name = f"sbc_labels_{secrets.token_hex(4)}"
    rows = pull.pull_sql(plan, engine.row_id("s"))
    n_rows = prepared.stats.n_rows
    if log is not None:
        log(f"clustering {n_rows:,} rows in blocks in the {engine.name} engine's workers")
    t = time.perf_counter()
    detail = engine.cluster_blocks(rows, pull.decoder_of(plan, prepared.stats), job, n_rows, name)
    prepared.stage("cluster", t)
    run = ClusterRun(np.zeros(0, dtype=np.int64), registry.DEFAULT, "blocks", detail, table=name)
    if log is not None:
        log(f"clustering: {run.algorithm}, {run.mode} mode ({run.detail})")
    return Clustering(plan, run)


def publish(
    prepared: Prepared, clustering: Clustering, *, out_file: str | Path | None = None, commit: bool = True
) -> Result:
    """Write, verify and measure the release of ``clustering`` in one transaction, then give
    it its names: the row and class tables are built under temporary names and renamed, and
    the views created, only once verification has passed; a failure or an interruption rolls
    everything back. Under --replace the release's existing names are dropped first.

    ``commit=False`` is a trial: written, verified and measured, then rolled back (its
    working tables dropped first, for an engine without transactional DDL); the Result
    holds the measures and ``written`` is False."""
    engine, plan, st = prepared.engine, clustering.plan, prepared.stats
    timings = prepared.timings
    taken = engine.object_kinds(plan.release_objects)
    planning.check_output(plan, taken, release_owners(engine, taken), engine.identities)
    in_engine = clustering.run.table if clustering.run is not None else None
    labels_name = in_engine or f"sbc_labels_{secrets.token_hex(4)}"
    temp_name = f"sbc_tmp_{plan.output}_{secrets.token_hex(4)}"  # + _rows, _classes
    layout = measure.Layout(plan.qis, plan.verbatim, plan.weights)
    source = plan.source.name
    rows_tmp, classes_tmp = f"{temp_name}_rows", f"{temp_name}_classes"
    row_id = engine.row_id("s")
    measures = verdict = None
    criteria = plan.options.criteria
    models = criteria_models(plan.k, criteria, plan.sensitive if criteria.asked else ())
    limits = verify.limits_of(plan.qis, plan.options.max_width, plan.options.max_values)
    achieved: dict[str, float] = {}
    export_tmp = f"{out_file}.sbc-partial" if out_file else None

    try:
        with _labels(prepared, clustering, labels_name), engine.transaction():
            t = time.perf_counter()
            if plan.options.replace:
                for tree in write.drop_release_sql(taken, plan.release_objects):
                    engine.execute(tree)
            # a run that clustered tuples builds its classes from the tuples and their labels
            tuples = (
                None if prepared.tuples is None else (prepared.tuples, uploaded_tuple_labels(labels_name))
            )
            classes_from, classes_labels = tuples or (None, labels_name)
            # the value sets cluster made, or, in a dry run, those a real run would make
            beside = clustering.sets is not None or (
                engine.dry and write.sets_beside(plan, engine.capabilities.value_sets)
            )
            sets = f"{labels_name}_sets" if beside else None
            with contextlib.ExitStack() as uploaded:
                if sets is not None and clustering.sets is not None:
                    uploaded.enter_context(engine.upload(sets, clustering.sets))
                engine.execute(
                    write.create_classes_sql(
                        plan, classes_tmp, classes_labels, row_id, classes_from, sets, engine.list_type
                    )
                )
            if clustering.sets is not None:
                clustering.sets = None
                # Arrow's allocator keeps what it freed for reuse: give the lists' memory
                # back before the statements that read the source again
                pa.default_memory_pool().release_unused()
            engine.execute(write.create_rows_sql(plan, rows_tmp, labels_name, row_id))
            prepared.stage("write", t)

            t = time.perf_counter()
            if engine.dry:
                for tree in verify.label_checks_sql(
                    layout, source, labels_name, rows_tmp, classes_tmp, row_id, models, tuples
                ):
                    engine.show(tree)
                if limits:
                    engine.show(verify.limits_sql(limits, classes_tmp))
            else:
                verdict = verify.verify_with_labels(
                    engine, layout, source, labels_name, rows_tmp, classes_tmp, plan.k, models, limits, tuples
                )
                if not verdict.ok:
                    raise VerificationError(
                        "release failed verification, nothing was written: " + "; ".join(verdict.problems)
                    )
                achieved = _achieved(engine, models[1:], rows_tmp, source)
                knowledge = clustering.run.knowledge if clustering.run else None
                if knowledge is not None:
                    problems, diameter = _js_problems(engine, labels_name, knowledge.threshold)
                    if problems:
                        raise VerificationError(
                            "release failed verification, nothing was written: " + "; ".join(problems)
                        )
                    achieved["js_diameter"] = diameter
            prepared.stage("verify", t)

            t = time.perf_counter()
            ranges, cards = _known_domains(plan, st)
            size = planning.CLASS_SIZE
            if engine.dry:
                for tree in measure.measure_sql(layout, source, classes_tmp, ranges, size, cards):
                    engine.show(tree)
            else:
                measures = measure.measure_tables(engine, layout, source, classes_tmp, ranges, size, cards)
            prepared.stage("measure", t)
            if not commit:
                trial = [rows_tmp, classes_tmp]
                for tree in write.drop_release_sql(engine.object_kinds(trial), trial):
                    engine.execute(tree)
                raise _Trial

            t = time.perf_counter()
            for old, new in ((rows_tmp, plan.rows_table), (classes_tmp, plan.classes_table)):
                engine.execute(engine.rename_table(old, new))
            engine.execute(
                write.create_release_view_sql(plan, plan.output, plan.rows_table, plan.classes_table)
            )
            engine.execute(write.create_view_sql(plan, plan.view, plan.output))
            text = provenance.to_json(_provenance(prepared, clustering, verdict, measures, models, achieved))
            for tree in write.comment_release_sql(plan, text):
                engine.execute(tree)
            if export_tmp:
                fmt = planning.export_format(str(out_file))
                # CSV has no lists: it holds the text view ('25-40', 'F|M'), the others the release
                exported = plan.view if fmt == "csv" else plan.output
                engine.execute(engine.export_sql(exported, export_tmp, fmt, provenance=text))
            prepared.stage("write", t)
            t = time.perf_counter()
        # the commit is part of the write: an engine without transactional DDL writes the
        # release's files or tables there
        prepared.stage("write", t)
        if export_tmp and not engine.dry:
            os.replace(export_tmp, out_file)  # type: ignore[arg-type]
    except _Trial:
        pass
    except BaseException:
        if export_tmp and os.path.exists(export_tmp):
            os.remove(export_tmp)
        raise
    mode = clustering.run.mode if clustering.run else ""
    return Result(
        engine,
        plan.output,
        plan.view,
        plan,
        measures,
        verdict,
        mode,
        dict(timings),
        written=commit and not engine.dry,
        exported=Path(out_file) if out_file and commit and not engine.dry else None,
        criteria=criteria if criteria.asked else None,
        achieved=achieved,
        suppressed_by=_suppressed_by(clustering.run),
        tuples=prepared.n_tuples if prepared.tuples is not None else None,
    )


class _Trial(Exception):
    """Raised inside a trial's transaction (publish with commit=False) to roll it back."""


def _achieved(engine: Engine, models: Sequence[PrivacyModel], rows: str, source: str) -> dict[str, float]:
    """What the release achieves of each criterion: each model's figures, the worst over
    the sensitive columns (the fewest values, the largest distance or gain)."""
    out: dict[str, float] = {}
    for m in models:
        for name, value in m.measure(engine, rows, source).items():
            v = float(value or 0)
            worse = min if name.endswith("l_diversity") else max
            out[name] = worse(out[name], v) if name in out else v
    return out


def _suppressed_by(run: ClusterRun | None) -> dict[str, int]:
    """Suppressed rows per reason, from the algorithm's reasons."""
    if run is None or run.reasons is None:
        return {}
    codes, counts = np.unique(run.reasons[run.labels < 0], return_counts=True)
    return {REASONS[int(c)]: int(n) for c, n in zip(codes, counts, strict=True)}


# counts the provenance takes from verification, not from the measures
_COUNTS = ("rows", "released", "suppressed", "classes")


def _provenance(
    prepared: Prepared,
    clustering: Clustering,
    verdict: verify.Verdict | None,
    measures: measure.Measures | None,
    models: Sequence[PrivacyModel] = (),
    achieved: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """How this release was made (see :mod:`sbc_sql.provenance`); a dry run has no counts
    or measures yet, and records none."""
    plan, run = clustering.plan, clustering.run
    recorded = [
        {
            "name": m.name,
            **m.params(),
            **({"column": m.sensitive.name} if m.sensitive else {}),
            # which form of the model: l-diversity's variant, beta-likeness's enhanced flag
            **{a: getattr(m, a) for a in ("variant", "enhanced") if hasattr(m, a)},
        }
        for m in (models or verify.default_models(plan.k))
    ]
    return provenance.document(
        plan,
        version=__version__,
        algorithm=run.algorithm if run else plan.options.algorithm,
        mode=run.mode if run else plan.options.mode,
        models=recorded,
        facts=verdict.facts if verdict else {},
        measures={k: v for k, v in measures.as_dict().items() if k not in _COUNTS} if measures else None,
        timings=prepared.timings,
        hierarchies=list(prepared.hierarchies or ()),
        achieved=achieved,
        suppressed_by=_suppressed_by(run),
        views=prepared.engine.capabilities.release_views,
    )


@contextlib.contextmanager
def _labels(prepared: Prepared, clustering: Clustering, name: str) -> Iterator[None]:
    """The class labels uploaded under ``name`` for the statements that join them; a dry run
    uploads nothing (its statements only name the labels). With background knowledge, each
    row's belief too, and the beliefs under ``<name>_beliefs`` (see :func:`_js_problems`).
    The uploads are the stage 'upload' of the run's seconds: with the pull, the rows moved
    between the database and Python."""
    run, row_id = clustering.run, prepared.row_id
    if run is not None and run.table is not None:
        # clustered in the engine's workers: the labels are there already, dropped after
        try:
            yield
        finally:
            prepared.engine.discard(run.table)
        return
    if prepared.tuples is not None:
        with _tuple_labels(prepared, clustering, name):
            yield
        return
    if run is None or row_id is None:
        yield
        return
    t = time.perf_counter()
    columns = {
        "row_id": row_id.astype(np.int64, copy=False),
        "eq_class": run.labels.astype(np.int64, copy=False),
    }
    with contextlib.ExitStack() as stack:
        if run.knowledge is not None:
            kn = run.knowledge
            columns["belief"] = kn.belief.astype(np.int64, copy=False)
            v, m = kn.beliefs.shape
            beliefs = arrays.table(
                {
                    "belief": np.repeat(np.arange(v, dtype=np.int64), m),
                    "value": np.tile(np.arange(m, dtype=np.int64), v),
                    "p": np.ascontiguousarray(kn.beliefs, dtype=np.float64).ravel(),
                }
            )
            stack.enter_context(prepared.engine.upload(f"{name}_beliefs", beliefs))
        stack.enter_context(prepared.engine.upload(name, arrays.table(columns)))
        prepared.stage("upload", t)
        yield


def uploaded_tuple_labels(labels: str) -> str:
    """The name the tuples' own labels are uploaded under, beside the row labels ``labels``
    of a run that clustered tuples (publish builds the class table from them)."""
    return f"{labels}_tuples"


@contextlib.contextmanager
def _tuple_labels(prepared: Prepared, clustering: Clustering, name: str) -> Iterator[None]:
    """The row labels under ``name`` of a run that clustered tuples: the tuples' labels
    uploaded, then joined to the rows on the tuple in the engine (a temporary table, dropped
    after)."""
    engine, run, plan = prepared.engine, clustering.run, clustering.plan
    assert prepared.tuples is not None
    uploaded = uploaded_tuple_labels(name)
    t = time.perf_counter()
    with contextlib.ExitStack() as stack:
        if run is not None and prepared.row_id is not None:
            columns = {
                "row_id": prepared.row_id.astype(np.int64, copy=False),
                "eq_class": run.labels.astype(np.int64, copy=False),
            }
            stack.enter_context(engine.upload(uploaded, arrays.table(columns)))
        try:
            engine.execute(
                pull.tuple_labels_sql(
                    plan, name, prepared.tuples, uploaded, engine.row_id("s"), engine.row_id("t")
                )
            )
            prepared.stage("upload", t)
            yield
        finally:
            engine.discard(name)  # a dry run lists it


def js_diameter_sql(labels: str) -> exp.Expression:
    """One row: pairs of beliefs in one class farther apart than $j, and the largest."""
    return render("js_diameter", labels=labels, beliefs=f"{labels}_beliefs")


def _js_problems(engine: Engine, labels: str, threshold: float) -> tuple[list[str], float]:
    """The background-knowledge bound checked on every class: (problems, the diameter)."""
    violations, diameter = engine.fetch_one(js_diameter_sql(labels), {"j": threshold})
    problems = []
    if violations:
        problems.append(
            f"{violations} pair(s) of background-knowledge beliefs in one class lie farther apart "
            f"than J={threshold:g} bits"
        )
    return problems, float(diameter or 0.0)


def _check_finite(plan: planning.Plan, st: stats.Stats) -> None:
    """Every numeric QI value is a finite number, and every range fits a double: a range is
    what each class's share of the whole is measured against."""
    for c in plan.numeric_qis:
        lo, hi = st.lo[c.name], st.hi[c.name]
        if st.unbounded.get(c.name, 0) > 0:
            raise InputError(
                f"numeric quasi-identifier '{c.name}' ({c.type}) holds {st.unbounded[c.name]:,} "
                "infinite value(s) ('infinity' or '-infinity'); replace them (e.g. by NULL) or "
                "declare the column with --keep/--drop"
            )
        if math.isinf(lo) or math.isinf(hi) or (math.isnan(lo + hi) and st.nulls[c.name] < st.n_rows):
            raise InputError(
                f"numeric quasi-identifier '{c.name}' holds NaN or infinite "
                "values; clean them or declare the column with --keep/--drop"
            )
        if math.isinf(hi - lo):
            raise InputError(
                f"numeric quasi-identifier '{c.name}' spans a range wider than the largest "
                "double (about 1.8e308), so no share of it can be measured; rescale the column "
                "(e.g. divide it by 1e10) or declare it with --keep/--drop"
            )


def _known_domains(
    plan: planning.Plan, st: stats.Stats
) -> tuple[dict[str, tuple[float, float]], dict[str, int]]:
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
