"""The sbc-sql command line (typer only: no SQL and no algorithm here)."""

from __future__ import annotations

import json
import sys
import time
from typing import Annotated

import typer

from . import __version__, api
from .cluster import registry
from .errors import SbcError
from .hierarchies import parse_hierarchy_options
from .plan import parse_weights
from .quality.evaluate import Evaluation, evaluate, evaluation_sql
from .session import Result, anonymize

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="k-anonymize DuckDB tables with Similarity-Based Clustering (SBCA).",
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"sbc-sql {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    pass


Names = Annotated[list[str] | None, typer.Option(show_default=False)]


class ProgressBar:
    """A one-line bar with ETA on stderr, drawn only on a terminal."""

    def __init__(self, label: str, enabled: bool | None = None) -> None:
        self.label = label
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.start = time.perf_counter()
        self.last = 0.0

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total <= 0:
            return
        now = time.perf_counter()
        if done < total and now - self.last < 0.1:
            return
        self.last = now
        frac = done / total
        elapsed = now - self.start
        eta = elapsed * (1 - frac) / frac if frac > 0 else 0.0
        bar = "#" * int(frac * 30)
        sys.stderr.write(f"\r{self.label} [{bar:<30}] {frac:6.1%} {done}/{total} eta {eta:5.1f}s")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _fail(err: SbcError) -> None:
    typer.echo(f"Error: {err}", err=True)
    raise typer.Exit(1)


@app.command("anonymize")
def anonymize_cmd(
    table: Annotated[str, typer.Option(help="Table (or view) to anonymize, or a CSV/Parquet path.")],
    k: Annotated[int, typer.Option(help="Minimum class size (k >= 2).")],
    db: Annotated[str | None, typer.Option(help="DuckDB database file.")] = None,
    qi: Names = None,
    sensitive: Names = None,
    drop: Names = None,
    keep: Names = None,
    output: Annotated[
        str | None,
        typer.Option(
            help=(
                "Release name (default <table>_k<k>): the view <output> over the tables <output>_rows "
                "and <output>_classes, and the text view <output>_view."
            )
        ),
    ] = None,
    replace: Annotated[bool, typer.Option(help="Overwrite an existing release.")] = False,
    leftover: Annotated[
        str, typer.Option(help="Rows left when fewer than k remain: nearest, last or suppress.")
    ] = "nearest",
    weights: Annotated[str | None, typer.Option(help="Per-QI weights, e.g. age=2,zip=0.5.")] = None,
    out_file: Annotated[str | None, typer.Option(help="Also export the release (.parquet/.csv).")] = None,
    sql: Annotated[bool, typer.Option("--sql", help="Print the run's SQL; write nothing.")] = False,
    mode: Annotated[
        str,
        typer.Option(
            help="auto (sbca: blocks at every size; sbca-paper: "
            "blocks above a size threshold), exact (one block) "
            "or blocks."
        ),
    ] = "auto",
    exact: Annotated[
        bool, typer.Option("--exact", help="Cluster the whole table as one block (same as --mode exact).")
    ] = False,
    workers: Annotated[int | None, typer.Option(help="Threads for block mode (default: all cores).")] = None,
    block_rows: Annotated[
        int | None,
        typer.Option(
            help="Rows per block of the default sbca (default: max(1536, 160 k)). Every row of a "
            "block is a candidate for each class: larger blocks lower NCP, at a cost "
            "quadratic in the block size."
        ),
    ] = None,
    algorithm: Annotated[
        str,
        typer.Option(help=registry.choices_help()),
    ] = registry.DEFAULT,
    paper: Annotated[
        bool, typer.Option("--paper", help="The paper's SBCA exactly (same as --algorithm sbca-paper).")
    ] = False,
    hierarchy: Annotated[
        list[str] | None,
        typer.Option(help="col=path.csv: ARX-layout hierarchy for datafly/incognito (repeatable)."),
    ] = None,
    max_suppression: Annotated[
        float, typer.Option(help="Share of rows datafly/incognito may suppress.")
    ] = 0.01,
    memory_limit: Annotated[
        str | None,
        typer.Option(help="Cap DuckDB's memory for the run, e.g. 2GB (it spills to disk beyond)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Write a verified k-anonymous release of TABLE into the database.

    Roles: --qi, --sensitive, --drop (identifiers), --keep (insensitive), repeatable or
    comma-separated, or column comments 'sbc:qi', 'sbc:sensitive', 'sbc:identifier',
    'sbc:insensitive'.

    Example: sbc-sql anonymize --db clinic.duckdb --table patients --k 5
    """

    def log(line: str) -> None:
        typer.echo(line, err=True)

    try:
        result = anonymize(
            db,
            table,
            k,
            qi=qi or (),
            sensitive=sensitive or (),
            drop=drop or (),
            keep=keep or (),
            output=output,
            replace=replace,
            leftover=leftover,
            weights=weights,
            out_file=out_file,
            sql_only=sql,
            mode="exact" if exact else mode,
            workers=workers,
            algorithm="sbca-paper" if paper else algorithm,
            hierarchies=parse_hierarchy_options(hierarchy),
            max_suppression=max_suppression,
            memory_limit=memory_limit,
            block_rows=block_rows,
            log=log,
            progress=ProgressBar("clustering"),
        )
    except SbcError as err:
        _fail(err)
        return
    if sql:
        typer.echo("\n".join(result.statements))
        return
    if as_json:
        typer.echo(json.dumps(summary_dict(result), indent=2))
    else:
        typer.echo(summary_text(result))


def summary_dict(result: Result) -> dict[str, object]:
    m = result.measures
    assert m is not None
    return {
        "release": result.release,
        "view": result.view,
        "k": result.plan.k,
        "mode": result.mode,
        **m.as_dict(),
        "seconds": {s: round(t, 4) for s, t in result.timings.items()},
    }


def summary_text(result: Result) -> str:
    m = result.measures
    assert m is not None
    stages = ("plan", "stats", "pull", "cluster", "write", "measure", "verify")
    lines = [
        f"release '{result.release}' (view '{result.view}'): verified {result.plan.k}-anonymous and complete",
        f"  rows in {m.n_rows}, rows out {m.released}, suppressed {m.suppressed}",
        f"  classes {m.classes}: smallest {m.smallest}, mean {m.mean:.2f}, largest {m.largest}",
        f"  total NCP {m.total_ncp:.4f}, utility {m.utility:.4f}  (mode: {result.mode})",
        "  NCP per QI: " + ", ".join(f"{q} {v:.4f}" for q, v in m.ncp.items()),
        "  seconds: " + ", ".join(f"{s} {result.timings.get(s, 0.0):.3f}" for s in stages),
    ]
    return "\n".join(lines)


@app.command("measure")
def measure_cmd(
    db: Annotated[str, typer.Option(help="DuckDB database file.")],
    original: Annotated[str, typer.Option(help="The input table.")],
    release: Annotated[str, typer.Option(help="The release (view or table).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """NCP per QI and total, utility, classes and smallest class of a release.

    Example: sbc-sql measure --db clinic.duckdb --original patients --release patients_k5
    """
    try:
        m = api.measure(db, original, release)
    except SbcError as err:
        _fail(err)
        return
    if as_json:
        typer.echo(json.dumps(m.as_dict(), indent=2))
        return
    typer.echo(f"rows {m.n_rows}, released {m.released}, suppressed {m.suppressed}")
    typer.echo(f"classes {m.classes}, smallest {m.smallest}, mean {m.mean:.2f}, largest {m.largest}")
    typer.echo(f"total NCP {m.total_ncp:.4f}, utility {m.utility:.4f}")
    for q, v in m.ncp.items():
        typer.echo(f"  NCP {q}: {v:.4f}")


#: exit code of a release that fails verification (1 is bad input, 2 typer's usage errors)
VERIFY_FAILED = 3


@app.command("verify")
def verify_cmd(
    db: Annotated[str, typer.Option(help="DuckDB database file.")],
    original: Annotated[str, typer.Option(help="The input table.")],
    release: Annotated[str, typer.Option(help="The release (view or table).")],
    k: Annotated[int, typer.Option(help="The k to check.")],
) -> None:
    """Check RELEASE against ORIGINAL as an auditor: exit 0 if it passes, 3 if it fails
    (one Error line per problem), 1 on bad input (a missing database, table or view), 2 on a
    usage error.

    It reads the roles from the release's provenance and the source's column comments, and
    refuses identifiers and QIs published raw; checks k-anonymity, each class's released
    values against the source, the class table against the rows, the release view against
    its tables and the text view against the text they give. A release without provenance
    is checked on roles read off its columns, and the output says so.

    Example: sbc-sql verify --db clinic.duckdb --original patients --release patients_k5 --k 5
    """
    try:
        verdict = api.verify(db, original, release, k)
    except SbcError as err:
        _fail(err)
        return
    notes = "".join(f"; {note}" for note in verdict.notes)
    if verdict.ok:
        facts = ", ".join(f"{key} {value}" for key, value in verdict.facts.items())
        typer.echo(f"ok: '{release}' is {k}-anonymous and complete{notes} ({facts})")
        return
    for note in verdict.notes:
        typer.echo(f"note: {note}", err=True)
    for problem in verdict.problems:
        typer.echo(f"Error: {problem}", err=True)
    raise typer.Exit(VERIFY_FAILED)


@app.command("evaluate")
def evaluate_cmd(
    db: Annotated[str, typer.Option(help="DuckDB database file.")],
    original: Annotated[str, typer.Option(help="The input table.")],
    release: Annotated[str, typer.Option(help="The release (view or table).")],
    sensitive: Annotated[
        str | None, typer.Option(help="Sensitive column: adds l-diversity, t-closeness and beta-likeness.")
    ] = None,
    k_r: Annotated[float, typer.Option("--k-r", help="RGCP weight of virtual classes.")] = 2.0,
    n_r: Annotated[float, typer.Option("--n-r", help="RGCP weight when no class exists.")] = 4.0,
    queries: Annotated[
        int, typer.Option(help="Random COUNT queries per selectivity (0: no query error).")
    ] = 200,
    selectivity: Annotated[
        list[float] | None,
        typer.Option(help="Target query selectivity, repeatable (default 0.01, 0.05, 0.1)."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the random queries.")] = 0,
    k: Annotated[int | None, typer.Option(help="k of C_AVG (default: smallest class).")] = None,
    weights: Annotated[str | None, typer.Option(help="Per-QI weights, e.g. age=2,zip=0.5.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    sql: Annotated[bool, typer.Option("--sql", help="Print the SQL; run nothing.")] = False,
) -> None:
    """Information loss (NCP, GCP, RGCP, DM, C_AVG), record linkage, query error and, with
    --sensitive, l-diversity, t-closeness and beta-likeness of a release.

    Example: sbc-sql evaluate --db clinic.duckdb --original patients --release patients_k5
    --sensitive diagnosis
    """
    try:
        w = parse_weights(weights) if weights else None
        if sql:
            typer.echo("\n".join(evaluation_sql(db, original, release, sensitive=sensitive, weights=w)))
            return
        result = evaluate(
            db,
            original,
            release,
            sensitive=sensitive,
            k_r=k_r,
            n_r=n_r,
            queries=queries,
            selectivities=tuple(selectivity or (0.01, 0.05, 0.1)),
            seed=seed,
            weights=w,
            k=k,
        )
    except SbcError as err:
        _fail(err)
        return
    if as_json:
        typer.echo(json.dumps(result.as_dict(), indent=2))
        return
    typer.echo(evaluation_text(result))


def evaluation_text(result: Evaluation) -> str:
    """One metric a line, numbers to 4 decimals."""
    width = max(len(name) for name, _ in result.rows())
    lines = []
    for name, value in result.rows():
        shown = f"{value:.4f}" if isinstance(value, float) else str(value)
        lines.append(f"{name:<{width}}  {shown}")
    return "\n".join(lines)


@app.command("compare")
def compare_cmd(
    db: Annotated[str, typer.Option(help="DuckDB database file.")],
    table: Annotated[str, typer.Option(help="Table to anonymize.")],
    k: Annotated[str, typer.Option(help="Comma-separated k values, e.g. 2,5,10.")],
    algorithms: Annotated[str, typer.Option(help="Comma-separated algorithms.")] = ",".join(registry.names()),
    qi: Names = None,
    sensitive: Names = None,
    drop: Names = None,
    keep: Names = None,
    hierarchy: Annotated[
        list[str] | None, typer.Option(help="col=path.csv hierarchy for datafly/incognito (repeatable).")
    ] = None,
    max_suppression: Annotated[
        float, typer.Option(help="Share of rows datafly/incognito may suppress.")
    ] = 0.01,
    plot: Annotated[str | None, typer.Option(help="Write NCP against k as a PNG.")] = None,
    csv_path: Annotated[str | None, typer.Option("--csv", help="Write the rows as CSV.")] = None,
    keep_releases: Annotated[bool, typer.Option(help="Keep every release.")] = False,
) -> None:
    """One row per (algorithm, k): NCP, utility, classes, distinct tuples, suppressed, time.

    Example: sbc-sql compare --db clinic.duckdb --table patients --k 2,5,10 --plot ncp.png
    """
    from . import compare as cmp

    try:
        ks = cmp.parse_ks(k)
        header = cmp.table_text([]).splitlines()[0]
        typer.echo(header)
        rows = cmp.compare(
            db,
            table,
            ks,
            [a.strip() for a in algorithms.split(",") if a.strip()],
            keep_releases=keep_releases,
            qi=qi or (),
            sensitive=sensitive or (),
            drop=drop or (),
            keep=keep or (),
            hierarchies=parse_hierarchy_options(hierarchy),
            max_suppression=max_suppression,
            on_row=lambda r: typer.echo(cmp.table_text([r]).splitlines()[1]),
        )
    except ValueError as err:
        _fail(SbcError(f"--k '{k}' is not a comma-separated list of integers ({err})"))
        return
    except SbcError as err:
        _fail(err)
        return
    if csv_path:
        cmp.write_csv(rows, csv_path)
    if plot:
        cmp.plot(rows, plot, title=f"{table}: total NCP against k")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
