"""The commands that judge a table or a release: ``evaluate``, ``profile``, ``report``,
``compare`` and ``suggest-k``, each a thin wrapper over its function in
:mod:`sbc_sql.quality` (or :mod:`sbc_sql.compare`)."""

import dataclasses
from types import SimpleNamespace
from typing import TYPE_CHECKING

import typer

from .. import documents
from ..errors import INTERRUPTED
from .app import reported
from .database import check_engine, connected
from .options import command, criteria, roles
from .progress import StepBars

if TYPE_CHECKING:
    from ..quality.suggest import Step


@command("evaluate")
def evaluate_cmd(o: SimpleNamespace) -> None:
    """Information loss (NCP, GCP, RGCP, DM, C_AVG), record linkage, query error, on the
    sensitive column (--sensitive, else the first the release's provenance declares)
    l-diversity, t-closeness and beta-likeness, and with --target CM, class purity and
    (--model) model utility of a release; suppressed rows per reason when the run recorded
    them.

    Example: sbc-sql evaluate --db clinic.duckdb --original patients --release patients_k5
    --sensitive diagnosis
    """
    conf = check_engine(o.engine, o.db, o.spark_master, o.spark_conf)
    quiet = o.quiet or o.as_json
    with (
        reported(),
        connected(o.engine, o.db, o.spark_master, conf) as database,
        StepBars("evaluate", enabled=False if quiet else None) as bars,
    ):
        from ..plan import parse_weights
        from ..quality import report
        from ..quality.evaluate import evaluate, evaluation_sql

        w = parse_weights(o.weights) if o.weights else None
        if o.sql:
            statements = evaluation_sql(
                database,
                o.original,
                o.release,
                sensitive=o.sensitive,
                weights=w,
                target=o.target,
                model=o.model,
            )
            typer.echo("\n".join(statements))
            return
        result = evaluate(
            database,
            o.original,
            o.release,
            sensitive=o.sensitive,
            k_r=o.k_r,
            n_r=o.n_r,
            queries=o.queries,
            selectivities=tuple(o.selectivity or (0.01, 0.05, 0.1)),
            seed=o.seed,
            weights=w,
            k=o.k,
            log=None if o.quiet else (lambda line: typer.echo(line, err=True)),
            attach=o.attach or (),
            beta_likeness=o.beta_likeness,
            beta_basic=o.beta_basic,
            target=o.target,
            model=o.model,
            classifier=o.classifier,
            progress=bars,
            sampling_fraction=o.sampling_fraction,
            sample_weights=o.sample_weights,
        )
    if o.as_json:
        typer.echo(documents.dumps(documents.document("evaluate", report.grouped(result))))
        return
    typer.echo(report.text(result))


@command("profile")
def profile_cmd(o: SimpleNamespace) -> None:
    """The re-identification risk of TABLE before release: per column its distinct values,
    NULLs, unique rows and a suggested role with the reason; on the QIs the equivalence
    classes, unique records, prosecutor and marketer risk; and the QI combinations that
    make most records unique. Reads only.

    Example: sbc-sql profile --db clinic.duckdb -t patients --drop ssn
    """
    conf = check_engine(o.engine, o.db, o.spark_master, o.spark_conf)
    with reported(), connected(o.engine, o.db, o.spark_master, conf, needs_db=False) as database:
        from ..quality.profile import profile
        from ..quality.profile import text as profile_text

        result = profile(
            database,
            o.table,
            **roles(o),
            sampling_fraction=o.sampling_fraction,
            sample_weights=o.sample_weights,
            attach=o.attach or (),
            log=None if o.quiet else (lambda line: typer.echo(line, err=True)),
        )
    if o.as_json:
        typer.echo(documents.dumps(documents.document("profile", result.as_dict())))
        return
    typer.echo(profile_text(result))


@command("report")
def report_cmd(o: SimpleNamespace) -> None:
    """One self-contained HTML page on a release: a verdict (the guarantees asked, whether
    they hold, and warnings against stated thresholds), how it was made (its provenance),
    the prosecutor risk before and after, NCP per QI, class sizes, total NCP against k, the
    sensitive column's diversity per class, suppressed rows and every figure of evaluate
    with its meaning.
    Names, counts and figures only: no value of any row. No script, nothing loaded.

    Example: sbc-sql report --db clinic.duckdb --original patients --release patients_k5 -o report.html
    """
    conf = check_engine(o.engine, o.db, o.spark_master, o.spark_conf)
    with reported():
        from ..quality import html_report

        # the page's path and curve, checked before a Spark session starts
        html_report.check_path(o.output, replace=o.replace, protected=[o.db])
        curve_k = html_report.parse_curve_k(o.curve_k)
    with (
        reported(),
        connected(o.engine, o.db, o.spark_master, conf) as database,
        StepBars("report", enabled=False if o.quiet else None) as bars,
    ):
        found = html_report.report(
            database,
            o.original,
            o.release,
            o.output,
            curve_k=curve_k,
            sensitive=o.sensitive,
            replace=o.replace,
            attach=o.attach or (),
            log=None if o.quiet else (lambda line: typer.echo(line, err=True)),
            progress=bars,
            sampling_fraction=o.sampling_fraction,
            sample_weights=o.sample_weights,
        )
    typer.echo(f"wrote the report of '{o.release}' to {found.path}")


@command("compare")
def compare_cmd(o: SimpleNamespace) -> None:
    """One row per (algorithm, k): NCP, utility, classes, distinct tuples, suppressed, time.

    Example: sbc-sql compare --db clinic.duckdb --table patients --k 2,5,10 --plot ncp.png
    """
    kept = "Interrupted; the releases finished before it are kept, the one under way was rolled back."
    with reported(kept if o.keep_releases else INTERRUPTED):
        from .. import compare as cmp
        from ..hierarchies import parse_hierarchy_options
        from ..privacy.criteria import Criteria

        ks = cmp.parse_ks(o.k)
        # the outputs are checked before any work, so that none is lost for the want of one
        cmp.check_outputs(o.csv_path, o.plot)
        if not o.as_json:
            typer.echo(cmp.table_text([]).splitlines()[0])
        rows = cmp.compare(
            o.db,
            o.table,
            ks,
            None if o.algorithms is None else [a.strip() for a in o.algorithms.split(",") if a.strip()],
            keep_releases=o.keep_releases,
            criteria=Criteria(**criteria(o)),
            **roles(o),
            hierarchies=parse_hierarchy_options(o.hierarchy),
            max_suppression=o.max_suppression,
            on_row=None if o.as_json else (lambda r: typer.echo(cmp.table_text([r]).splitlines()[1])),
            # a first run's compiling, said as anonymize says it, rather than seconds of silence
            log=lambda line: typer.echo(line, err=True),
        )
        if o.csv_path:
            cmp.write_csv(rows, o.csv_path)
        if o.plot:
            cmp.plot(rows, o.plot, title=f"{o.table}: total NCP against k")
    if o.as_json:
        found = [dataclasses.asdict(r) for r in rows]
        typer.echo(documents.dumps(documents.document("compare", {"table": o.table, "rows": found})))


@command("suggest-k")
def suggest_k_cmd(o: SimpleNamespace) -> None:
    """The largest k whose verified release keeps its total NCP under a threshold: --max-loss,
    or one derived from the data's --domain, the release's --purpose and its --criticality.
    k is doubled from --k-min until over the threshold, then bisected; each k is clustered,
    verified and measured, and nothing is written without --apply.

    Example: sbc-sql suggest-k --db clinic.duckdb -t patients --max-loss 0.05

    With Apache Spark: sbc-sql suggest-k --engine spark -t data/visits.parquet --max-loss 0.1
    """
    conf = check_engine(o.engine, o.db, o.spark_master, o.spark_conf)

    def step(s: "Step") -> None:
        if not o.quiet:
            typer.echo(
                f"k={s.k}: NCP {s.ncp:.4f} ({'under' if s.under else 'over'}), {s.seconds:.2f} s"
                if s.ncp is not None
                else f"k={s.k}: no release ({s.failed}), counted as over",
                err=True,
            )

    with reported(), connected(o.engine, o.db, o.spark_master, conf) as database:
        from ..quality import suggest

        found = suggest.suggest_k(
            database,
            o.table,
            max_loss=o.max_loss,
            domain=o.domain,
            purpose=o.purpose,
            criticality=o.criticality,
            k_min=o.k_min,
            k_max=o.k_max,
            apply=o.apply,
            output=o.output,
            **roles(o),
            algorithm=o.algorithm,
            max_suppression=o.max_suppression,
            **criteria(o),
            max_width=o.max_width,
            max_values=o.max_values,
            on_step=step,
            log=lambda line: typer.echo(line, err=True) if line.startswith("warning: ") else None,
        )
    if o.as_json:
        typer.echo(documents.dumps(documents.document("suggest-k", found.as_dict())))
        return
    typer.echo(suggest.text(found))
