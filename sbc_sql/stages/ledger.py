"""The ledger of an incremental release: which of the source's rows it has released, which
wait, and a digest of the release as it stood at each version.

A release made with ``--incremental`` keeps two tables beside it, neither of them
published: ``<output>_seen`` counts the released rows by fingerprint, ``<output>_pending``
the source's rows not released yet (and why). A row's fingerprint is the MD5 of its values
on the columns the release holds (the QIs and the columns released verbatim), each written
as its length and its text, so that no two different rows share one by the way their
values were joined; rows alike on all those columns are interchangeable to the release,
which is why they are counted rather than told apart. Dates and timestamps are written as
their number (days, microseconds since 1970-01-01), so that the fingerprint does not hang
on the session's time zone or date style.

A refresh reads the source's rows beyond the ledger's counts (:func:`unseen_sql`), refuses
if the source lacks rows the ledger counts (:func:`gone_sql`), and adds what it releases.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from ..engines.base import Engine
from ..model import Column
from ..sql.nodes import as_number, ref
from ..sql.templates import render

#: the row table's column numbering each released row's version (1: the first release)
VERSION = "release_version"
#: what the pending rows of a first release wait for
SUPPRESSED = "suppressed by the first release (no class of k rows could take them)"


def fingerprinted(columns: Sequence[Column]) -> list[Column]:
    """The columns a fingerprint covers: those the release holds, in the source's order."""
    return [c for c in columns if c.role in ("qi", "sensitive", "insensitive")]


def _text(value: exp.Expression, column: Column | None) -> exp.Expression:
    if column is not None and column.temporal:
        value = as_number(value, column)
    return exp.cast(value, "VARCHAR")


def _part(value: exp.Expression, column: Column | None) -> exp.Expression:
    """One value as self-delimiting text: its length, a colon, the text; 'N' for NULL."""
    text = _text(value, column)
    length = exp.cast(exp.Length(this=text.copy()), "VARCHAR")
    joined = exp.DPipe(this=exp.DPipe(this=length, expression=exp.Literal.string(":")), expression=text)
    return exp.Coalesce(this=joined, expressions=[exp.Literal.string("N")])


def fingerprint(values: Sequence[tuple[exp.Expression, Column | None]]) -> exp.Expression:
    """MD5 of the values (each with its column, for its kind), self-delimiting, in order."""
    parts = [_part(v, c) for v, c in values]
    out = parts[0]
    for p in parts[1:]:
        out = exp.DPipe(this=out, expression=p)
    return exp.MD5(this=out)


def row_fingerprint(columns: Sequence[Column], table: str = "s") -> exp.Expression:
    """The fingerprint of a source row (aliased ``table``) over the columns the release holds."""
    return fingerprint([(ref(c.name, table), c) for c in fingerprinted(columns)])


def seen_sql(seen: str, rows: exp.Query, columns: Sequence[Column]) -> exp.Expression:
    """The ledger ``seen`` made from the released rows ``rows`` (each with the source's
    columns the release holds)."""
    return render("ledger_seen", seen=seen, rows=rows, fingerprint=row_fingerprint(columns))


def pending_table_sql(pending: str) -> exp.Expression:
    return render("ledger_pending_table", pending=pending)


def pending_sql(pending: str, source: str, seen: str, columns: Sequence[Column]) -> exp.Expression:
    """The source's rows beyond the ledger ``seen``, added to ``pending`` ($reason bound)."""
    return render(
        "ledger_pending", pending=pending, source=source, seen=seen, fingerprint=row_fingerprint(columns)
    )


def unseen_sql(unseen: str, source: str, seen: str, columns: Sequence[Column]) -> exp.Expression:
    """The table ``unseen`` of the source's rows beyond the ledger's counts, numbered
    ``sbc_row`` from 0 in fingerprint order, with their fingerprint ``sbc_fingerprint``."""
    return render(
        "ledger_unseen", unseen=unseen, source=source, seen=seen, fingerprint=row_fingerprint(columns)
    )


def gone_sql(source: str, seen: str, columns: Sequence[Column]) -> exp.Expression:
    """One row: how many released rows the source no longer holds."""
    return render("ledger_gone", source=source, seen=seen, fingerprint=row_fingerprint(columns))


def add_sql(seen: str, unseen: str, placed: str) -> exp.Expression:
    """The unseen rows numbered in ``placed`` added to the ledger ``seen``."""
    return render("ledger_add", seen=seen, unseen=unseen, placed=placed)


def waiting_sql(pending: str, unseen: str, waiting: str) -> exp.Expression:
    """The unseen rows listed in ``waiting`` (sbc_row, reason) added to ``pending``."""
    return render("ledger_waiting", pending=pending, unseen=unseen, waiting=waiting)


def digests(
    engine: Engine, rows: str, classes: str, columns: Sequence[Column], earlier: int, later: int
) -> tuple[str, str]:
    """The digests of the release over ``rows`` and ``classes`` as it stood at versions
    ``earlier`` and ``later``, from one pass over its rows."""
    one, two = engine.fetch_one(digest_sql(rows, classes, columns), {"earlier": earlier, "later": later})
    return str(one), str(two)


def digest_sql(rows: str, classes: str, columns: Sequence[Column]) -> exp.Expression:
    """One row: the digests of the release over ``rows`` and ``classes`` as it stood at
    versions $earlier and $later (see sql/templates/release_digest.sql): a class's QIs'
    generalization fingerprinted from the class table, a row's other released columns from
    the row table."""
    held = fingerprinted(columns)
    generalized = [(ref(name, "c"), None) for c in held if c.role == "qi" for name in c.release_columns]
    verbatim = [(ref(c.name, "r"), c) for c in held if c.role != "qi"]
    row = fingerprint(verbatim) if verbatim else exp.MD5(this=exp.Literal.string(""))
    return render(
        "release_digest", rows=rows, classes=classes, row=row, **{"class": fingerprint(generalized)}
    )


def delta_sql(delta: str, rows: str, classes: str, projection: Sequence[exp.Expression]) -> exp.Expression:
    """The temporary table ``delta`` of the rows version $version added, as a release of
    their own (``projection``: the release's columns after eq_class, over r and c)."""
    return render("refresh_delta", delta=delta, rows=rows, classes=classes, projection=list(projection))


def touched_sql(
    touched: str, rows: str, classes: str, projection: Sequence[exp.Expression]
) -> exp.Expression:
    """The temporary table ``touched`` of every row of the classes version $version added
    rows to, as a release of their own (``projection``: as for :func:`delta_sql`)."""
    return render("refresh_touched", touched=touched, rows=rows, classes=classes, projection=list(projection))


def totals_sql(seen: str, pending: str, rows: str) -> exp.Expression:
    """One row: the rows the ledger counts released, those pending, the last version."""
    return render("ledger_totals", seen=seen, pending=pending, rows=rows)


def add_version_sql(rows: str) -> exp.Expression:
    """The row table's version column, every row of it version 1."""
    return render("add_release_version", rows=rows)
