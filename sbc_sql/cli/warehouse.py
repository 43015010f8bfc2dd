"""A run split with another warehouse (:mod:`sbc_sql.warehouse`): ``sbc-sql cluster`` writes
each row's class id, ``sbc-sql sql`` prints the SQL that builds, verifies and measures the
release from them."""

from types import SimpleNamespace
from typing import Any

import typer

from .. import documents
from .app import reported
from .options import command, criteria
from .progress import ProgressBar

#: the role options, as the run's options take them
_ROLES = ("qi", "sensitive", "drop", "keep", "allow_determinant")


def _run_options(o: SimpleNamespace, *names: str) -> dict[str, Any]:
    """The run options of the warehouse commands, as :func:`sbc_sql.run.make_options`
    takes them: the roles, the criteria and the options ``names``."""
    from ..privacy.criteria import Criteria

    asked = Criteria(**criteria(o))
    return {
        **{name: getattr(o, name) or () for name in _ROLES},
        **{name: getattr(o, name) for name in names},
        "criteria": asked,
    }


@command("sql")
def sql_cmd(o: SimpleNamespace) -> None:
    """Print a run's SQL for another warehouse: the release built from the class ids that
    'sbc-sql cluster' writes, its verification and NCP. The statistics are computed here.

    Example: sbc-sql sql --dialect snowflake --db clinic.duckdb -t patients -k 5 --row-id id
    """

    def warn(line: str) -> None:  # stdout holds the SQL alone
        if line.startswith("warning: "):
            typer.echo(line, err=True)

    with reported():
        from .. import warehouse

        text = warehouse.print_sql(
            o.db,
            o.table,
            o.k,
            o.dialect,
            row_id=o.row_id,
            labels=o.labels,
            source=o.source,
            log=warn,
            **_run_options(
                o,
                "output",
                "algorithm",
                "mode",
                "leftover",
                "weights",
                "max_suppression",
            ),
        )
    typer.echo(text, nl=False)


@command("cluster")
def cluster_cmd(o: SimpleNamespace) -> None:
    """Cluster TABLE and write each row's class id (row_id, eq_class; eq_class < 0: suppressed)
    for the SQL that 'sbc-sql sql' prints; nothing is written to the database.

    Example: sbc-sql cluster --db clinic.duckdb -t patients -k 5 --row-id id --out ids.parquet
    """

    def log(line: str) -> None:
        if not o.quiet or line.startswith("warning: "):
            typer.echo(line, err=True)

    with reported(), ProgressBar("clustering", enabled=False if o.quiet else None) as bar:
        from .. import warehouse

        rows, suppressed = warehouse.cluster_ids(
            o.db,
            o.table,
            o.k,
            o.out,
            row_id=o.row_id,
            log=log,
            progress=bar,
            **_run_options(
                o,
                "algorithm",
                "mode",
                "leftover",
                "weights",
                "max_suppression",
                "workers",
            ),
        )
    if o.as_json:
        summary = {"out": o.out, "rows": rows, "suppressed": suppressed}
        typer.echo(documents.dumps(documents.document("cluster", summary)))
        return
    typer.echo(f"wrote {rows:,} class ids ({suppressed:,} rows suppressed) to {o.out}")
