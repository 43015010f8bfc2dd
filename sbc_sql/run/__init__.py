"""A run, as a package of steps: ``prepare`` (plan -> stats -> tuples -> pull: everything
that does not depend on k or the algorithm, done once per table), ``cluster`` (the
prepared arrays -> a class id per row, with no database in sight) and ``publish``
(write -> verify -> measure -> names -> provenance -> export, in one transaction), one
module each; what one step hands the next is a frozen state (``Prepared``, ``Clustering``,
then the ``Result``), and the order is :data:`~sbc_sql.run.steps.STEPS`, which a run walks.

:func:`anonymize` opens its inputs (:mod:`~sbc_sql.run.inputs`) and walks the steps once.
Choosing k or comparing algorithms prepares once, then makes the prepared table ready for
each plan (:func:`~sbc_sql.run.prepare.ready`), clusters and publishes as often as it
needs. Every statement goes through the run's engine, whose log is the run's SQL
(``--sql`` prints the same list a real run executes).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .. import engines
from .. import plan as planning
from ..errors import InputError
from ..hierarchies import HierarchySpec
from ..privacy.criteria import Criteria, takes_criteria
from .inputs import _input, _qualified_input
from .lines import Log, Progress, warnings_only
from .result import Result
from .steps import STEPS, Request, walk

__all__ = ["STEPS", "Result", "anonymize", "make_options"]


@takes_criteria
def anonymize(
    database: Any,
    table: str | None = None,
    k: int | None = None,
    *,
    qi: Iterable[str] = (),
    sensitive: Iterable[str] = (),
    drop: Iterable[str] = (),
    keep: Iterable[str] = (),
    allow_determinant: Iterable[str] = (),
    output: str | None = None,
    replace: bool = False,
    leftover: str = "nearest",
    recode: str = "generalize",
    aggregate: str | None = None,
    aggregate_categorical: str | None = None,
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
    held_rows: int | None = None,
    csv_delimiter: str | None = None,
    csv_header: bool | None = None,
    attach: Iterable[str] = (),
    target_db: str | Path | None = None,
    bk_threshold: float | None = None,
    bk_estimator: str | None = None,
    bk: str | None = None,
    seed: int | None = None,
    max_width: Mapping[str, float] | str | Iterable[str] | None = None,
    max_values: Mapping[str, int] | str | Iterable[str] | None = None,
    population: str | None = None,
    k_map: int | None = None,
    delta_min: float | None = None,
    delta_max: float | None = None,
    target: str | None = None,
    target_weight: float | None = None,
    tuples: bool = True,
    incremental: bool = False,
    engine: str | None = None,
    log: Log | None = None,
    progress: Progress | None = None,
    trace: Log | None = None,
    **criteria: Any,
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
    becomes a QI. A kept column whose value gives a QI's on 99 % of the rows or more (a code
    beside the label it codes) is refused before anything is written, as it would publish
    that QI as it is (see :mod:`sbc_sql.plan.determinants`); ``allow_determinant`` names
    the kept columns let to, each released with a warning. ``output`` names the release
    (default ``<table>_k<k>``); ``replace`` overwrites an existing release of that name.
    ``leftover`` (nearest, last, suppress) places rows left when fewer than k remain.
    ``recode`` 'microaggregate' releases each class's QIs as one value rather than a range
    or a value set: the numeric QIs' ``aggregate`` (mean, median or mode; default mean)
    and the categorical QIs' ``aggregate_categorical`` (mode, or values: the value set; default mode).
    ``weights`` ({'age': 2} or 'age=2') weighs QIs in the distance and the total NCP.
    ``out_file`` also exports the release: .parquet (value sets as lists), .csv (the
    readable text view), .json (an array) or .ndjson (a line a row).
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

    ``population`` (a table, or a CSV or Parquet file, holding the QIs under the same
    names: the people the table was drawn from) with ``k_map`` (every class matches at
    least that many of its rows, inside the class's ranges and sets) and ``delta_min`` /
    ``delta_max`` (every class's rows over the population rows it matches within those
    bounds, default 0 and 1): the clustering merges the classes that match too few rows or
    whose share is above ``delta_max``, and SQL verifies both before the release is written.

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

    ``incremental`` keeps the release open to :func:`~sbc_sql.run.refresh.refresh`: the run
    also writes ``<output>_seen`` and ``<output>_pending`` (fingerprints of the rows released
    and of those not released yet, never published) and numbers the released rows version
    1 (``release_version`` in the row table).

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
    block size). ``held_rows`` (default 1,000,000) is the most rows the default algorithm
    holds in this process at once: a larger table is clustered in block mode streamed from
    the database, a run of blocks at a time, while the database sorts and holds the rows
    (the same blocks and classes as held in memory, on k alone); ``mode='streamed'`` streams
    a table of any size. ``csv_delimiter`` (one character, '\\t' for a tab) and
    ``csv_header`` (True/False) tell DuckDB how to read a CSV input instead of sniffing it.
    ``table`` may name a schema or an attached database (``schema.t``, ``db.schema.t``); ``attach`` lists
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
        allow_determinant=allow_determinant,
        output=output,
        replace=replace,
        leftover=leftover,
        recode=recode,
        aggregate=aggregate,
        aggregate_categorical=aggregate_categorical,
        weights=weights,
        mode=mode,
        workers=workers,
        algorithm=algorithm,
        max_suppression=max_suppression,
        block_rows=block_rows,
        held_rows=held_rows,
        csv_delimiter=planning.check_csv_options(table, csv_delimiter, csv_header),
        csv_header=csv_header,
        criteria=Criteria(**criteria),
        background=planning.Background(bk_threshold, bk_estimator, bk, seed),
        max_width=max_width,
        max_values=max_values,
        population=planning.Population(population, k_map, delta_min, delta_max),
        target=target,
        target_weight=target_weight,
        tuples=tuples,
        incremental=incremental,
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
    from ..engines.paths import looks_like_file
    from ..engines.urls import looks_like_url

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
        if options.recode == "microaggregate" and not run.capabilities.microaggregates:
            raise InputError(
                f"--recode 'microaggregate' is not available with the {run.name} engine; "
                "release ranges and value sets there (--recode 'generalize')"
            )
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
        say = log or warnings_only
        result = walk(Request(run, table, options, hierarchies, out_file, say, progress))
        result.borrowed = run is database and not made_here
        return result
    except BaseException:
        # a failed run keeps nothing open, and a database file it created (which would
        # hold nothing) goes
        run.discard_created()
        if run is not database or made_here:
            run.close()
        raise


def make_options(
    k: int, *, weights: Mapping[str, float] | str | None = None, **given: Any
) -> planning.Options:
    """The run's options from keyword arguments, names given as lists or comma-separated."""
    if isinstance(weights, str) or (weights is not None and not isinstance(weights, Mapping)):
        weights = planning.parse_weights(weights)
    for role in ("qi", "sensitive", "drop", "keep", "allow_determinant"):
        given[role] = planning.split_names(given.get(role, ()))
    for key, flag in (("max_width", "--max-width"), ("max_values", "--max-values")):
        if given.get(key) is not None:
            given[key] = planning.parse_limits(given[key], flag)
        else:
            given.pop(key, None)
    return planning.Options(k=planning.whole_k(k), weights=dict(weights or {}), **given)
