"""``sbc-sql refresh``: a thin wrapper over :func:`sbc_sql.refresh`, which adds the source's
new rows to an incremental release without changing what it has published."""

from types import SimpleNamespace

import typer

from .. import documents
from .app import loading, reported
from .options import command


@command("refresh")
def refresh_cmd(o: SimpleNamespace) -> None:
    """Add the source's new rows to an incremental release (made with anonymize --incremental).

    Every published class keeps its generalization and its rows; the rows added form classes
    of at least k that keep the release's criteria on their own; rows that cannot be placed
    yet wait, pending and unpublished, for a later refresh. Verified before it commits.

    Example: sbc-sql refresh --db clinic.duckdb --release patients_k5
    """
    with reported(), loading():
        from ..run.refresh import refresh
    if o.db is None:
        raise typer.BadParameter("pass the DuckDB file (or a postgresql:// URL) with --db", param_hint="--db")
    with reported():
        done = refresh(
            # the summary below says what the run's own lines say; its warnings still show
            o.db,
            o.release,
            log=lambda line: typer.echo(line, err=True) if line.startswith("warning: ") else None,
        )
    if o.as_json:
        typer.echo(documents.dumps(documents.refresh_dict(done)))
        return
    if done.parent is None and not done.pending:
        typer.echo(f"'{done.release}' has released every row of its source; version {done.version} stands")
    elif done.parent is None:
        typer.echo(f"no new row could be added to '{done.release}' yet; version {done.version} stands")
    else:
        typer.echo(
            f"version {done.version} of '{done.release}' (parent {done.parent}): {done.rows_added:,} rows "
            f"added, {done.placed_in_existing:,} into published classes and the rest in "
            f"{done.classes_added:,} new classes"
        )
    if done.pending:
        why = "; ".join(f"{n:,} {reason}" for reason, n in done.pending_by.items())
        typer.echo(f"pending, not published, waiting for a later refresh: {done.pending:,} rows ({why})")
