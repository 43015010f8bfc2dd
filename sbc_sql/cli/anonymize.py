"""``sbc-sql anonymize``: a thin wrapper over :func:`sbc_sql.anonymize`, and the summary it
prints."""

import functools
import json
import re
import shlex
from collections.abc import Mapping
from types import SimpleNamespace
from typing import TYPE_CHECKING

import typer

from .. import choices, documents
from .app import loading, reported
from .database import check_engine, connected
from .options import command, criteria, roles
from .progress import ProgressBar

if TYPE_CHECKING:
    from ..engines.base import Engine
    from ..run import Result


@command("anonymize")
def anonymize_cmd(o: SimpleNamespace) -> None:
    """Write a verified k-anonymous release of TABLE into the database.

    Roles: --qi, --sensitive, --drop (identifiers), --keep (insensitive), repeatable or
    comma-separated, or column comments 'sbc:qi', 'sbc:sensitive', 'sbc:identifier',
    'sbc:insensitive'.

    Example: sbc-sql anonymize --db clinic.duckdb -t patients -k 5

    With Apache Spark: sbc-sql anonymize --engine spark -t data/visits.parquet -o out/visits_k10 -k 10
    """
    conf = check_engine(o.engine, o.db, o.spark_master, o.spark_conf)
    with reported(), loading():  # what the run needs loads here: Ctrl-C meanwhile is one line too
        from .. import engines
        from ..cluster import registry
        from ..hierarchies import parse_hierarchy_options
        from ..run import anonymize
    if o.hierarchy and not registry.get(o.algorithm).hierarchies:
        raise typer.BadParameter(
            f"--hierarchy is read by {', '.join(c.name for c in registry.CLUSTERERS if c.hierarchies)}; "
            f"{o.algorithm} builds its own generalization: drop --hierarchy",
            param_hint="--hierarchy",
        )

    def log(line: str) -> None:
        if not o.quiet or line.startswith("warning: "):
            typer.echo(line, err=True)

    def trace(statement: str) -> None:
        typer.echo(statement, err=True)

    if o.paper and o.algorithm not in (choices.DEFAULT_ALGORITHM, "sbca-paper"):
        raise typer.BadParameter(
            f"--paper runs sbca-paper; it cannot be combined with --algorithm {o.algorithm}",
            param_hint="--paper",
        )
    if o.exact and o.mode not in ("auto", "exact"):
        raise typer.BadParameter(
            f"--exact is --mode exact; it cannot be combined with --mode {o.mode}", param_hint="--exact"
        )
    with (
        reported(),
        ProgressBar("clustering", enabled=False if o.quiet else None) as bar,
        connected(o.engine, o.db, o.spark_master, conf, needs_db=False) as database,
    ):
        if o.report_file is not None and not o.sql:  # checked before the run, written after it
            from ..quality import html_report

            html_report.check_path(
                o.report_file, replace=o.replace, flag="--report", protected=[o.db, o.target_db]
            )
        result = anonymize(
            database,
            o.table,
            o.k,
            **roles(o),
            output=o.output,
            replace=o.replace,
            leftover=o.leftover,
            recode=o.recode,
            aggregate=o.aggregate,
            aggregate_categorical=o.aggregate_categorical,
            weights=o.weights,
            out_file=o.out_file,
            sql_only=o.sql,
            mode="exact" if o.exact else o.mode,
            workers=o.workers,
            algorithm="sbca-paper" if o.paper else o.algorithm,
            hierarchies=parse_hierarchy_options(o.hierarchy),
            max_suppression=o.max_suppression,
            memory_limit=o.memory_limit,
            block_rows=o.block_rows,
            held_rows=o.held_rows,
            csv_delimiter=o.csv_delimiter,
            csv_header=o.csv_header,
            attach=o.attach or (),
            target_db=o.target_db,
            **criteria(o),
            bk_threshold=o.bk_threshold,
            bk_estimator=o.bk_estimator,
            bk=o.bk,
            seed=o.seed,
            max_width=o.max_width,
            max_values=o.max_values,
            population=o.population,
            k_map=o.k_map,
            delta_min=o.delta_min,
            delta_max=o.delta_max,
            target=o.target,
            target_weight=o.target_weight,
            tuples=not o.rows,
            incremental=o.incremental,
            log=log,
            progress=bar,
            trace=trace if o.verbose else None,
        )
        # the connection is closed once the summary is out (a server's, too, not left to exit)
        with result:
            if o.sql:
                typer.echo("\n".join([*dry_run_header(result), *result.statements]))
                return
            if o.as_json:
                typer.echo(json.dumps(documents.summary_dict(result), indent=2))
            else:
                # where the evaluate hint finds the release and its source
                where = {"db": o.target_db or o.db, "attach": o.db if o.target_db else None}
                if engines.builds_session(o.engine):
                    where = {"engine": o.engine, "spark-master": o.spark_master}
                # without a database file the release lived in memory, gone when this ends
                kept = bool(o.db or o.target_db) or engines.builds_session(o.engine)
                typer.echo(summary_text(result, {flag: str(v) for flag, v in where.items() if v}, kept=kept))
            if o.report_file is not None:
                page = html_report.report(
                    result.engine, result.plan.source.name, result.release, o.report_file, replace=o.replace
                )
                typer.echo(f"wrote the report of '{result.release}' to {page.path}", err=o.as_json)


def dry_run_header(result: "Result") -> list[str]:
    """The comment ``--sql`` prints above a dry run's statements: what they are, and why they
    are not a script to run as printed (the bound parameters, with the values a run gives
    them, and the class ids only a real run's clustering makes)."""
    from sqlglot import exp

    from ..version import __version__

    plan, engine = result.plan, result.engine
    lines = [
        f"-- sbc-sql {__version__}: the statements a run of '{plan.display_name}' (k = {plan.k}) runs "
        f"on {engine.name}, in order.",
        "-- --sql ran the reads at the top (the statistics and the rows the clustering reads) and",
        "-- wrote nothing. The statements are the run's own, not a script to run as printed:",
    ]
    if result.bound:
        values = ", ".join(
            f"{engine.sql(exp.Placeholder(this=name))} = {value!r}" for name, value in result.bound.items()
        )
        lines.append(f"--   a parameter is bound to its value as the statement runs: {values};")
    if result.labels is not None:
        labels = engine.sql(exp.to_identifier(result.labels, quoted=True))
        lines += [
            f"--   {labels} (row_id, eq_class; eq_class < 0 marks a suppressed row) holds each",
            "--   row's class: the clustering makes it in memory between the reads and the writes",
            "--   (a dry run does not cluster) and hands it to the engine, with each class's value",
            "--   sets where a statement reads them.",
        ]
    lines += [
        "-- For SQL to run elsewhere: 'sbc-sql cluster' writes the class ids to a file, and",
        "-- 'sbc-sql sql' prints the run's statements for a warehouse with every parameter a",
        "-- literal, reading the class ids from the table that file is loaded into.",
    ]
    return lines


def _micro_lines(result: "Result") -> list[str]:
    """A microaggregated release's lines: what each QI shows, that its NCP is its
    clustering's (the ranges are not published), and its SSE and IL1s."""
    plan, m = result.plan, result.measures
    if plan.options.recode == "generalize" or m is None:
        return []
    lines = [
        "  microaggregated: "
        + ", ".join(f"{c.name} {c.aggregate}" for c in plan.qis)
        + "; NCP above is the clustering's, as if generalized"
    ]
    if m.sse is not None and m.il1s is not None:
        lines.append(f"  SSE {m.sse:.4f}, IL1s {m.il1s:.4f} (numeric QIs, standardized)")
    return lines


def _criteria_lines(result: "Result") -> list[str]:
    """The criteria held and what the release achieves, worst over the sensitive columns."""
    a = result.achieved
    lines = []
    o = result.plan.options
    if o.max_width or o.max_values:
        limits = [f"{n}={w:g}" for n, w in o.max_width.items()] + [
            f"{n}={v}" for n, v in o.max_values.items()
        ]
        lines.append(f"  verified the per-column limits: {', '.join(limits)}")
    if "js_diameter" in a:
        lines.append(
            f"  verified the background-knowledge bound: beliefs in a class at most "
            f"{a['js_diameter']:.4f} bits apart"
        )
    population = o.population
    if population.table is not None:
        found = []
        if "fewest_population_matches" in a:
            found.append(f"each class matches at least {a['fewest_population_matches']:,.0f} population rows")
        if "smallest_delta" in a:
            found.append(f"delta from {a['smallest_delta']:.4g} to {a['largest_delta']:.4g}")
        lines.append(
            f"  verified {population.describe()} against the population '{population.table}': "
            + ", ".join(found)
        )
    if result.criteria is None:
        return lines
    shown = []
    for key, label, fmt in (
        ("l_diversity", "distinct l", "{:.0f}"),
        ("entropy_l_diversity", "entropy l", "{:.2f}"),
        ("t_closeness", "t", "{:.4f}"),
        ("beta_likeness", "beta", "{:.4f}"),
    ):
        if key in a:
            shown.append(f"{label} {fmt.format(a[key])}")
    columns = ", ".join(f"'{c.name}'" for c in result.plan.sensitive)
    return [f"  verified {result.criteria.describe()} on {columns}: achieved " + ", ".join(shown), *lines]


def _shown(database: str) -> str:
    """A database as messages name it: a URL without its password."""
    from ..engines.urls import looks_like_url, shown_url

    return shown_url(database) if looks_like_url(database) else database


#: a name SQL reads as it is written, unquoted (any dialect folds other names or rejects them)
_PLAIN_NAME = re.compile(r"[a-z_][a-z0-9_]*")


def _sql_name(engine: "Engine", schema: str, name: str) -> str:
    """``schema.name`` (``name`` alone when no schema) as the engine's SQL reads it: each part
    an identifier, quoted unless it is a plain lower-case word (or the dialect reserves it),
    so a hint copied into SQL names that object and nothing else."""
    from sqlglot import exp

    parts = [schema, name] if schema else [name]
    return ".".join(
        exp.Identifier(this=part, quoted=not _PLAIN_NAME.fullmatch(part)).sql(dialect=engine.dialect)
        for part in parts
    )


def summary_text(result: "Result", where: Mapping[str, str] | None = None, *, kept: bool = True) -> str:
    """The summary anonymize prints. ``where``: the flags that find the release's database
    again, for the evaluate hint; ``kept``: False when that database was in memory (no
    --db), gone once the command ends, so that the release is kept in its export alone."""
    m = result.measures
    assert m is not None
    stages = ("plan", "stats", "pull", "cluster", "upload", "write", "measure", "verify")
    plan = result.plan
    db = "".join(f" --{flag} {shlex.quote(_shown(value))}" for flag, value in (where or {}).items())
    exported = []
    if result.exported is not None:
        from ..plan import export_format

        fmt = export_format(result.exported)
        exported.append(f"exported {m.released:,} rows to {result.exported} ({fmt})")
    schema = result.engine.working()[1]
    # a release of another schema is named with it, as it is queried (a path as it is)
    path = result.engine.parse_name(result.release).path
    prefix = f"{schema}." if schema != "main" and not path else ""
    release, view = prefix + result.release, prefix + result.view
    # an engine that writes the release's rows and its class table, without views
    views = result.engine.capabilities.release_views
    beside = f"view '{view}'" if views else f"classes '{prefix}{plan.classes_table}'"
    # the hint's SQL names each object as an identifier, however it is spelt
    # (a path, as it is)
    in_sql = functools.partial(_sql_name, result.engine, schema if prefix else "") if not path else str
    shows = "one value per QI" if plan.options.recode == "microaggregate" else "ranges and sets"
    read = (
        f"SELECT * FROM {in_sql(result.view)} (readable) or {in_sql(result.release)} ({shows})"
        if views
        else f"read {in_sql(result.release)} ({shows}) and {in_sql(plan.classes_table)} (a row per class)"
    )
    lines = [
        f"release '{release}' ({beside}): verified {plan.k}-anonymous and complete",
        *_criteria_lines(result),
        f"  rows in {m.n_rows:,}, rows out {m.released:,}, suppressed {m.suppressed:,}"
        + (
            " (" + ", ".join(f"{why} {n:,}" for why, n in result.suppressed_by.items()) + ")"
            if result.suppressed_by
            else ""
        ),
        f"  classes {m.classes:,}: smallest {m.smallest:,}, mean {m.mean:,.2f}, largest {m.largest:,}",
        f"  total NCP {m.total_ncp:.4f}, utility {m.utility:.4f}  (mode: {result.mode})",
        "  NCP per QI: " + ", ".join(f"{q} {v:.4f}" for q, v in m.ncp.items()),
        *_micro_lines(result),
        "  seconds: " + ", ".join(f"{s} {result.timings.get(s, 0.0):.3f}" for s in stages),
        *exported,
        f"next: {read}; "
        f"sbc-sql evaluate{db} --original {shlex.quote(plan.display_name)} --release {shlex.quote(release)}"
        " for risk and loss",
    ]
    if not kept:
        # written to an in-memory database, gone with the command: neither its names nor
        # evaluate can find the release again, only its export can
        lines[0] = (
            f"release '{release}' (kept in {result.exported} alone): verified {plan.k}-anonymous and complete"
        )
        lines[-1] = (
            f"next: read the release in {result.exported}; without --db it was made in an in-memory "
            "database, gone now: run again with --db FILE to keep it in a database, where "
            "sbc-sql evaluate measures its risk and loss"
            if result.exported is not None
            else "next: nothing is kept without --db or --out-file: run again with --db FILE"
        )
    dropped = [c.name for c in plan.columns if c.role == "identifier"]
    held = f"identifiers ({', '.join(dropped)})" if dropped else "every original value"
    lines.append(f"note: '{plan.display_name}' still holds {held}; publish the release, not the source")
    return "\n".join(lines)
