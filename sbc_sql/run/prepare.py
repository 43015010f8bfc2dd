"""The prepare step: plan -> stats -> tuples -> pull, everything of a run that the
clustering reads from the database, done once per table.

:func:`prepare` plans the run, checks it (its output names, its rows), collects the
statistics and pulls the QIs (the distinct QI tuples where they pay). :func:`ready` makes
the prepared table ready for one plan (the prepared plan, or another k or algorithm of the
same table, :meth:`Prepared.plan_for`): it pulls again what that plan clusters when the
prepared arrays do not fit it, reads the hierarchy files and the user's background
knowledge, or, where the engine clusters in its own workers, has it cluster there. What
comes out is a :class:`Prepared`, which the cluster step reads without touching the
database.
"""

from __future__ import annotations

import dataclasses
import math
import os
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .. import plan as planning
from ..cluster import distributed, registry
from ..cluster.background.options import BackgroundOptions
from ..cluster.baselines.fulldomain import Hierarchy
from ..cluster.blocks import block_bounds
from ..cluster.distributed import BlockJob
from ..cluster.limits import Limits
from ..cluster.model import QIData
from ..cluster.population import Matcher, Population
from ..cluster.registry import ClusterRun
from ..cluster.runs import DEFAULT_TARGET_WEIGHT, check_counted, suppression_budget
from ..cluster.sbca_plus.algorithm import MAX_LABELS
from ..cluster.sensitive import Sensitive
from ..engines.base import Engine, drop_table_sql
from ..errors import InputError, OutputExistsError
from ..hierarchies import HierarchySpec
from ..hierarchies import resolve as resolve_hierarchies
from ..knowledge import background_options
from ..model import CsvOptions
from ..plan import determinants
from ..privacy.criteria import check_sensitive
from ..stages import ledger, pull, stats, stream, write
from ..stages import population as population_stage
from ..stages.verify import MICROS_PER_DAY
from .inputs import release_owners
from .lines import Log, warnings_only


class Arrays:
    """The pulled QI arrays of a :class:`Prepared`, held apart from it so that a run lets
    them go (:meth:`release`) once its last clustering is made, before it writes: at
    10,000,000 rows they take over a gigabyte."""

    __slots__ = ("data",)

    def __init__(self, data: QIData | None = None) -> None:
        self.data = data

    def release(self) -> None:
        self.data = None


@dataclass(frozen=True, eq=False)
class Prepared:
    """A table planned, profiled and pulled: what every (algorithm, k) of it shares, and
    what :func:`ready` read for the plan it was made ready for (``plan``)."""

    engine: Engine
    plan: planning.Plan
    stats: stats.Stats
    #: each pulled row's (or tuple's) id in the source; None in a dry run
    row_id: np.ndarray | None = None
    hierarchies: Mapping[str, HierarchySpec] | None = None
    timings: dict[str, float] = field(default_factory=dict)
    #: the QIs as arrays (``data``); empty in a dry run, and once released
    arrays: Arrays = field(default_factory=Arrays)
    #: the rows were pulled (False: a run that clusters in the engine's workers pulls nothing)
    pulled: bool = True
    #: the engine's table of the distinct QI tuples when those were pulled instead of the
    #: rows (``data`` then holds one row per tuple, and ``row_id`` the tuples' row ids)
    tuples: str | None = None
    #: how many distinct tuples were pulled (with ``tuples``)
    n_tuples: int | None = None
    #: whether the table's distinct tuples were estimated (a run that may cluster tuples
    #: asks once whether they pay)
    estimated: bool = False
    #: read by :func:`ready` for ``plan``: the hierarchies resolved from their files, and the
    #: background-knowledge options with the user's knowledge (None: not asked)
    resolved: Mapping[str, Hierarchy] = field(default_factory=dict)
    background: BackgroundOptions | None = None
    #: read by :func:`ready` for ``plan``: the population's distinct QI tuples, coded as the
    #: pulled rows (None: no --population)
    population: Population | None = None
    #: made by :func:`ready` where the engine clusters ``plan`` in its own workers: the
    #: labels, kept in the engine
    workers: ClusterRun | None = None
    #: the run writes its release into the engine (False: the class ids go to a file, or the
    #: SQL is printed for another warehouse), so its output names are checked there
    writes: bool = True

    @property
    def data(self) -> QIData | None:
        return self.arrays.data

    @property
    def dry(self) -> bool:
        """A dry run: the statements are logged, nothing is pulled or clustered."""
        return self.engine.dry

    def stage(self, name: str, started: float) -> None:
        self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - started

    def close(self) -> None:
        """Drop the working table of distinct tuples, if one was made."""
        if self.tuples is not None:
            self.engine.scratch(drop_table_sql(self.tuples))

    def release_arrays(self) -> None:
        """Free the pulled arrays (at 10,000,000 rows over a gigabyte) before writing."""
        self.arrays.release()

    def plan_for(self, k: int, algorithm: str | None = None, output: str | None = None) -> planning.Plan:
        """The plan of another run over the same table: another k, algorithm or output,
        checked as :func:`prepare` checks its own (its rows, its output names)."""
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
        if self.writes:
            _check_output(self.engine, plan)
        return plan


def _check_output(engine: Engine, plan: planning.Plan, log: Log | None = None) -> None:
    """The release's names overwrite nothing they may not (:func:`planning.check_output`).
    A dry run writes nothing: a name a real run would refuse as taken is a warning on
    ``log``, and the run goes on."""
    taken = engine.object_kinds(plan.release_objects)
    try:
        planning.check_output(plan, taken, release_owners(engine, taken), engine.identities)
    except OutputExistsError as refused:
        if not engine.dry:
            raise
        say = log or warnings_only
        say(f"warning: a real run would stop here: {refused}; a dry run writes nothing and goes on")


def prepare(
    engine: Engine,
    table: str,
    options: planning.Options,
    *,
    hierarchies: Mapping[str, HierarchySpec] | None = None,
    log: Log | None = None,
    writes: bool = True,
) -> Prepared:
    """Plan the run, collect the statistics and pull the QIs (a dry run pulls nothing).
    ``writes``: the run writes its release into the engine, whose names are then checked
    (False: it writes the class ids to a file or prints SQL for another warehouse, and
    names nothing in the engine)."""
    say = log or (lambda _: None)
    timings: dict[str, float] = {}
    t = time.perf_counter()
    csv = CsvOptions(options.csv_delimiter, options.csv_header)
    info = engine.open_source(table, csv)
    plan = planning.make_plan(info, options, display_name=table, parse_name=engine.parse_name)
    if options.incremental and not engine.capabilities.release_views:
        raise InputError(
            f"--incremental keeps a ledger of released rows beside the release's tables, which the "
            f"{engine.name} engine does not keep; anonymize on DuckDB or PostgreSQL, or drop --incremental"
        )
    taken = [c.name for c in plan.verbatim if c.name.lower() == ledger.VERSION]
    if options.incremental and taken:
        raise InputError(
            f"column '{taken[0]}' is released as it is, and an incremental release numbers its rows in a "
            f"column '{ledger.VERSION}' of its row table; rename the column, or drop it with --drop"
        )
    if writes:
        _check_output(engine, plan, say)
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
        prepared = _prepared(engine, plan, int(n_rows), tuples, estimated, hierarchies, timings, t, say)
        return prepared if writes else dataclasses.replace(prepared, writes=False)
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
    _check_determinants(engine, plan, st, say)
    if plan.options.population.table is not None:
        population_stage.check_table(engine, plan.options.population.table, plan.qis)
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
    sensitive = _pulled_sensitive(plan)
    if sensitive:
        distinct, nulls = stats.distinct_and_nulls(engine, plan.source.name, sensitive)
        check_sensitive(criteria, sensitive, {c: d + (1 if nulls[c] else 0) for c, d in distinct.items()})

    if tuples is not None and streams(engine, plan, pull.tuple_count(engine, tuples)):
        # more distinct tuples than the run may hold (or --mode streamed): the rows stream
        engine.scratch(drop_table_sql(tuples))
        tuples = None
    prepared = Prepared(
        engine, plan, st, hierarchies=hierarchies, timings=timings, tuples=tuples, estimated=estimated
    )
    if not_pulled(engine, plan, tuples, n_rows):
        # the engine's workers read the rows where they are, or the run streams them a run
        # of blocks at a time (see ready())
        return dataclasses.replace(prepared, pulled=False)
    return _pull(prepared, sensitive)


def _pulled_sensitive(plan: planning.Plan) -> tuple[planning.Column, ...]:
    """The sensitive columns pulled beside the QIs: those the criteria or the background
    knowledge weigh (none without either)."""
    options = plan.options
    return tuple(plan.sensitive) if options.criteria.asked or options.background.asked else ()


def ready(prepared: Prepared, plan: planning.Plan | None = None, *, log: Log | None = None) -> Prepared:
    """The prepared table ready to cluster ``plan`` (default: the prepared plan), as a
    Prepared of that plan: the rows pulled again when the prepared arrays do not fit it
    (not pulled yet, or pulled as tuples for an algorithm that takes rows), the hierarchy
    files and the user's background knowledge read; or, where the engine clusters the
    plan in its own workers, the labels made there. A dry run reads nothing more."""
    plan = plan or prepared.plan
    prepared = dataclasses.replace(
        prepared, plan=plan, resolved={}, background=None, workers=None, population=None
    )
    if prepared.dry:
        return prepared
    engine = prepared.engine
    # a run that clusters the distinct tuples holds them (prepare streams the rows where
    # they are more than it may hold)
    if not_pulled(engine, plan, prepared.tuples, prepared.stats.n_rows):
        return _cluster_in_engine(prepared, log)
    if not prepared.pulled or (prepared.tuples is not None and not by_tuples(engine, plan)):
        prepared = _pull(prepared, _pulled_sensitive(plan))
    data = prepared.data
    if data is None:
        raise RuntimeError("the prepared arrays were released; prepare the table again")
    # reading the files and the knowledge is reading the input: its seconds are the pull's
    t = time.perf_counter()
    resolved = resolve_hierarchies(data, prepared.stats, prepared.hierarchies)
    background = background_options(engine, plan, data)
    population = _population(engine, plan, prepared.stats, data)
    prepared.stage("pull", t)
    return dataclasses.replace(prepared, resolved=resolved, background=background, population=population)


def _population(engine: Engine, plan: planning.Plan, st: stats.Stats, data: QIData) -> Population | None:
    """The population's distinct QI tuples, coded as ``data`` (--population; None without
    it), once the whole input is shown to match enough of it: one class of every row is the
    most any clustering can match, so a population it matches too few of, or too few of for
    delta-max, has no release."""
    asked = plan.options.population
    if asked.table is None:
        return None
    tuples = population_stage.pull(engine, asked.table, pull.decoder_of(plan, st))
    whole = Matcher(data, tuples).whole()
    rows = data.n_represented
    if asked.k_map is not None and whole < asked.k_map:
        raise InputError(
            f"--k-map {asked.k_map}: the whole table, as one class, matches {whole:,} rows of the "
            f"population '{asked.table}', so no release can keep it; give --k-map {max(whole, 2):,} "
            "or less, or a population that holds the people the table was drawn from"
        )
    high = asked.bounds[1]
    if asked.delta_max is not None and rows > high * whole:
        fit = rows / whole if whole else float("inf")
        raise InputError(
            f"--delta-max {high:g}: the whole table's {rows:,} rows are {fit:.4g} of the {whole:,} "
            f"population rows it matches as one class, so no release can keep it; give a "
            f"--delta-max above {fit:.4g}, or a population that holds the people the table was "
            "drawn from"
        )
    return tuples


#: tuples are clustered while there are at most this share of the rows: above it, most
#: tuples stand for one row, and pulling the rows costs less than the GROUP BY and the join
TUPLE_SHARE = 0.8


def by_tuples(engine: Engine, plan: planning.Plan) -> bool:
    """Whether this run may cluster the distinct QI tuples rather than the rows: asked
    (``Options.tuples``), an algorithm that clusters tuples whole on k alone
    (``Clusterer.tuples``; criteria, background knowledge, per-column limits and a target
    count or place rows one by one; a microaggregated release's means and medians weigh
    rows), and an engine that labels rows by their tuple."""
    options = plan.options
    return (
        options.tuples
        and engine.capabilities.tuples
        and registry.get(options.algorithm).tuples
        and not options.criteria.asked
        and not options.background.asked
        and not (options.max_width or options.max_values)
        and options.target is None
        and options.recode == "generalize"
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


def _pull_tuples(prepared: Prepared) -> Prepared:
    """Pull the stored distinct QI tuples with their row counts."""
    engine, plan, name = prepared.engine, prepared.plan, prepared.tuples
    assert name is not None
    if engine.dry:
        engine.show(pull.pull_tuples_sql(plan, name, engine.row_id("s")))
        return prepared
    data, row_id = pull.pull_tuples(engine, plan, prepared.stats, name)
    return dataclasses.replace(prepared, arrays=Arrays(data), row_id=row_id, n_tuples=len(row_id))


def _pull(prepared: Prepared, sensitive: Sequence[planning.Column]) -> Prepared:
    """Pull what the prepared plan clusters: the distinct tuples where it may
    (:func:`by_tuples`), else the rows; the arrays pulled before are let go first."""
    engine, plan, criteria = prepared.engine, prepared.plan, prepared.plan.options.criteria
    t = time.perf_counter()
    prepared.release_arrays()
    if by_tuples(engine, plan):
        if prepared.tuples is None and not prepared.estimated:
            tuples = _store_tuples(engine, plan, prepared.stats.n_rows)
            prepared = dataclasses.replace(prepared, tuples=tuples, estimated=True)
        if prepared.tuples is not None:
            prepared = dataclasses.replace(_pull_tuples(prepared), pulled=True)
            prepared.stage("pull", t)
            return prepared
    prepared.close()
    prepared = dataclasses.replace(prepared, tuples=None)
    if engine.dry:
        engine.show(pull.pull_sql(plan, engine.row_id("s"), sensitive))
    else:
        extra = len(sensitive) + (1 if plan.target is not None and plan.target not in sensitive else 0)
        _check_collect(engine, plan, prepared.stats.n_rows, len(plan.qis) + extra)
        data, row_id = pull.pull(engine, plan, prepared.stats, sensitive=sensitive, target=plan.target)
        prepared = dataclasses.replace(prepared, arrays=Arrays(data), row_id=row_id)
        labels = data.n_labels
        if plan.target is not None and labels > MAX_LABELS:
            raise InputError(
                f"--target '{plan.target.name}' has {labels:,} distinct values, above the "
                f"{MAX_LABELS} labels a class is kept pure on; a target is a label to predict: "
                "give a column of classes (e.g. an income band rather than the income)"
            )
        if data.sensitive is not None:
            problems = criteria.rule().check_feasible(data.sensitive)
            if problems:
                raise InputError(problems[0])
    prepared = dataclasses.replace(prepared, pulled=True)
    prepared.stage("pull", t)
    return prepared


def not_pulled(engine: Engine, plan: planning.Plan, tuples: str | None, n_rows: int) -> bool:
    """Whether the run's rows are clustered without being pulled here: in the engine's own
    workers, or streamed from it a run of blocks at a time (a run that clusters its
    distinct ``tuples`` holds them)."""
    return in_workers(engine, plan) or (tuples is None and streams(engine, plan, n_rows))


def in_workers(engine: Engine, plan: planning.Plan) -> bool:
    """Whether the engine clusters this run's rows in its own workers: the default's block
    mode, with the criteria, the per-column limits and the target too (their whole-table
    facts ship with the job). Background knowledge, exact mode and the other algorithms
    cluster the whole table at once, so those run here, on rows pulled here
    (:func:`_check_collect` bounds them)."""
    options = plan.options
    return (
        engine.capabilities.cluster_blocks
        and not engine.dry
        and options.algorithm == registry.DEFAULT
        and options.mode in ("auto", "blocks", "streamed")
        and not options.background.asked
        and not options.population.asked
    )


#: the most rows the default's block mode holds in this process by default (``--held-rows``):
#: a table of more is streamed from the database a run of blocks at a time. The 10,000,000
#: synthetic rows of benchmarks/bench_scale.py, DuckDB capped at 1 GB, streamed in the same
#: seconds (68-70 s) at 2,000,000, 1,000,000 and 500,000 held rows, with the process's peak
#: RSS at 2.12, 1.70 and 1.48 GB; held in memory, 2.08 GB
HELD_ROWS = 1_000_000


def held_rows(plan: planning.Plan) -> int:
    """The most rows the run holds in this process at once (``--held-rows``, or the default)."""
    return plan.options.held_rows or HELD_ROWS


def streams(engine: Engine, plan: planning.Plan, n_rows: int) -> bool:
    """Whether this run clusters its rows streamed from the database, a run of blocks at a
    time (:mod:`sbc_sql.stages.stream`): the default's block mode on a table of more rows
    than it may hold, on an engine that opens a second connection. With t-closeness or
    beta-likeness only when ``--held-rows`` asks: their blocks are cut from the spread order
    where the table is held, from the coarse order where it streams. Refused, with the
    reason, where ``--held-rows`` asks for it and the run cannot stream."""
    options = plan.options
    forced = options.mode == "streamed"
    if in_workers(engine, plan) or engine.dry or (n_rows <= held_rows(plan) and not forced):
        return False
    asked = options.held_rows is not None or forced
    if options.population.asked:
        if asked:
            raise InputError(
                f"--population '{options.population.table}' merges whole classes once they are "
                "formed, which a run of blocks streamed from the database cannot; drop "
                "--mode streamed and --held-rows (the rows are then held in this process)"
            )
        return False
    if not engine.can_stream():
        if asked:
            why = (
                "--mode streamed"
                if forced
                else f"--held-rows {options.held_rows:,} (fewer than its {n_rows:,} rows)"
            )
            raise InputError(
                f"{why}: this {engine.name} connection cannot open the second connection a "
                "streamed run reads through (a run inside PostgreSQL has none); run the command "
                "line or the Python API on a database URL or file, or drop the option"
            )
        return False
    if options.mode not in ("auto", "blocks", "streamed") or options.algorithm != registry.DEFAULT:
        return False
    if options.background.asked:
        return False
    rule = options.criteria.rule() if options.criteria.asked else None
    return asked or rule is None or not rule.reads_input


#: bytes a pulled value takes at least (a row id, a number, a category's code or a short
#: string), what the estimate of a collect counts per value
PULLED_VALUE_BYTES = 8


def _check_collect(engine: Engine, plan: planning.Plan, n_rows: int, columns: int) -> None:
    """A run that clusters in this process on an engine that clusters in workers of its own
    (Spark) pulls every row through the engine's driver: refused, with one line that says
    why it runs here, what it would bring and the fix, when its rows would exceed what the
    engine lets a collect bring (:meth:`Engine.collect_limit`; Spark would fail it itself,
    after the work, with a message of its own)."""
    limit = engine.collect_limit() if engine.capabilities.cluster_blocks else None
    if limit is None:
        return
    size, setting = limit
    need = n_rows * (1 + columns) * PULLED_VALUE_BYTES
    if need <= size:
        return
    options = plan.options
    if options.background.asked:
        why = "background knowledge"
    elif options.algorithm != registry.DEFAULT:
        why = f"--algorithm {options.algorithm}"
    else:
        why = f"--mode {options.mode}"
    raise InputError(
        f"{why} clusters the whole table in the {engine.name} engine's driver: its {n_rows:,} rows "
        f"would bring at least {need / 2**20:,.0f} MiB there, above {setting}; run the default "
        f"algorithm in block mode (--mode auto or blocks), which clusters in the workers, or "
        f"raise the limit (--spark-conf spark.driver.maxResultSize=...) on a driver with the memory"
    )


def _cluster_in_engine(prepared: Prepared, log: Log | None) -> Prepared:
    """The default's blocks clustered in the engine's workers, or streamed from the database
    a run of blocks at a time (:func:`streams`), with the criteria, the per-column limits and
    the target: the sensitive columns' and the target's values are counted over the whole
    table here (one aggregate each) and ship with the job; the rows stay in the engine (but
    the run of blocks in hand), and so do the labels."""
    engine, plan = prepared.engine, prepared.plan
    options = plan.options
    n_rows = prepared.stats.n_rows
    criteria = options.criteria
    rule = criteria.rule() if criteria.asked else None
    rule = rule if rule is not None and rule.active else None
    limits: Limits | None = cluster_limits(plan)
    limits = limits if limits is not None and limits.active else None
    sensitive = tuple(plan.sensitive) if rule is not None else ()
    target = plan.target
    t = time.perf_counter()
    decoder = pull.coded_decoder(engine, plan, prepared.stats, sensitive, target)
    if target is not None and decoder.target is not None:
        labels = len(decoder.target.counts)
        if labels > MAX_LABELS:
            raise InputError(
                f"--target '{target.name}' has {labels:,} distinct values, above the "
                f"{MAX_LABELS} labels a class is kept pure on; a target is a label to predict: "
                "give a column of classes (e.g. an income band rather than the income)"
            )
    rare: list[tuple[int, int, int]] = []
    budget = suppression_budget(options.max_suppression, n_rows)
    if rule is not None:
        counts = tuple(c.counts for c in decoder.sensitive)
        facts = Sensitive(
            tuple(c.column.name for c in decoder.sensitive),
            tuple(np.zeros(0, dtype=np.int32) for _ in counts),
            counts,
            tuple(c.column.kind == "numeric" for c in decoder.sensitive),
        )
        problems = rule.check_feasible(facts)
        if problems:
            raise InputError(problems[0])
        if registry.get(registry.DEFAULT).presuppress:
            rare = distributed.rare_codes(rule, counts, plan.k, budget)
    prepared.stage("stats", t)
    weight = DEFAULT_TARGET_WEIGHT if options.target_weight is None else options.target_weight
    job = BlockJob(
        plan.k,
        options.block_rows,
        options.leftover,
        rule,
        limits,
        weight if target is not None else 0.0,
        tuple((s, v) for s, v, _ in rare),
    )
    name = f"sbc_labels_{secrets.token_hex(4)}"
    if in_workers(engine, plan):
        rows = pull.pull_sql(plan, engine.row_id("s"), decoder.extra_columns)
        if log is not None:
            log(f"clustering {n_rows:,} rows in blocks in the {engine.name} engine's workers")
        t = time.perf_counter()
        clustered = engine.cluster_blocks(rows, decoder, job, n_rows, name)
        prepared.stage("cluster", t)
    else:
        sets = write.sets_beside(plan, engine.capabilities.value_sets)
        held = held_rows(plan)
        largest = int(np.diff(block_bounds(n_rows, plan.k, job.size)).max(initial=0))
        if held < largest:
            raise InputError(
                f"--held-rows {held:,} is below the {largest:,} rows of a block at k = {plan.k}; "
                f"give at least {largest:,} (or a smaller --block-rows)"
            )
        if log is not None:
            log(
                f"clustering {n_rows:,} rows in blocks streamed from the database, at most "
                f"{held:,} held at a time (--held-rows)"
            )
        clustered = stream.cluster(
            engine,
            plan,
            decoder,
            job,
            n_rows,
            name,
            held=held,
            workers=options.workers or os.cpu_count() or 1,
            domains=prepared.stats.domains if sets else None,
            timings=prepared.timings,
        )
    chosen = tuple((decoder.sensitive[s].column.name, v, forced) for s, v, forced in rare)
    run = ClusterRun(
        np.zeros(0, dtype=np.int64),
        registry.DEFAULT,
        "blocks" if in_workers(engine, plan) else "streamed",
        clustered.detail,
        sets=not in_workers(engine, plan) and write.sets_beside(plan, engine.capabilities.value_sets),
        rare=chosen,
        table=name,
        suppressed=dict(clustered.suppressed),
    )
    if log is not None:
        log(f"clustering: {run.algorithm}, {run.mode} mode ({run.detail})")
        for column, _, forced in chosen:
            log(
                f"a value of '{column}' forces classes of at least {forced:,} rows under "
                "beta-likeness: its rows are suppressed"
            )
    prepared = dataclasses.replace(prepared, workers=run)
    try:
        check_counted(sum(run.suppressed.values()), n_rows, plan.k, rule, limits, options.max_suppression)
    except BaseException:
        engine.discard(name)
        raise
    return prepared


def cluster_limits(plan: planning.Plan) -> Limits:
    """The plan's per-column limits in the clustering's units (a timestamp's width, given in
    days, in microseconds; a date's stays in days, a number's in its own units)."""
    temporal = {c.name: c.temporal for c in plan.columns}
    scale = {n: float(MICROS_PER_DAY) for n in plan.options.max_width if temporal.get(n) == "timestamp"}
    return Limits(
        {n: w * scale.get(n, 1.0) for n, w in plan.options.max_width.items()},
        dict(plan.options.max_values),
        scale,
    )


def _check_determinants(engine: Engine, plan: planning.Plan, st: stats.Stats, say: Log) -> None:
    """No kept column determines a QI unless --allow-determinant lets it
    (:mod:`sbc_sql.plan.determinants`): one scan of the source over the kept columns the
    rule weighs (the statistics counted their values), none without one."""
    kept = [
        c
        for c in determinants.kept_columns(plan.columns)
        if determinants.may_determine(st.cardinality(c.name), st.n_rows)
    ]
    if not kept:
        return
    found = stats.kept_determinants(
        engine, plan.source.name, kept, plan.qis, [c.name for c in plan.source.columns]
    )
    determinants.check_determinants(plan.columns, found, plan.options.allow_determinant, say)


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
