"""Generalize stage: the SQL that turns class ids into the release (each class generalized once).

Each class is recoded locally by ``GROUP BY eq_class``: numeric QIs to [min, max] of
their own type plus a has-NULL flag, categorical QIs to the sorted list of distinct values.
The release is two tables and two views: ``<output>_classes`` (one row per class: id, size,
generalization), ``<output>_rows`` (one row per released row: class id and the columns
released verbatim), the view ``<output>`` joining them (a row per released row, as analysts
query it) and the text view ``<output>_view``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlglot import exp

from ..plan import CLASS_SIZE, Column, Plan
from ..sql.nodes import alias, ref, value_set
from ..sql.templates import ident, render


def classes_projection(plan: Plan) -> list[exp.Expression]:
    """Class table columns: eq_class, class_size, then each QI's generalization in source order."""
    out: list[exp.Expression] = [
        alias(ref("sbc_eq_class", "g"), "eq_class"),
        alias(ref("sbc_size", "g"), CLASS_SIZE),
    ]
    return out + [alias(ref(name, "g"), name) for c in plan.qis for name in c.release_columns]


def release_projection(columns: Sequence[Column]) -> list[exp.Expression]:
    """The view's columns after eq_class: the source's columns in order, identifiers dropped."""
    return [
        alias(ref(name, "c" if c.role == "qi" else "r"), name)
        for c in columns
        if c.role != "identifier"
        for name in c.release_columns
    ]


#: the column of the distinct tuples' table (stages.pull) that counts each tuple's rows
TUPLE_COUNT = "sbc_count"


def create_classes_sql(
    plan: Plan, table: str, labels: str, row_id: exp.Expression, tuples: str | None = None
) -> exp.Expression:
    """The class table from the source's rows and their labels, or, with ``tuples``, from
    the distinct tuples' table and the tuples' labels (``labels`` and ``row_id`` then
    those of the tuples): a class's size is then the sum of its tuples' row counts."""
    size: exp.Expression = exp.Count(this=exp.Star())
    if tuples is not None:
        size = exp.cast(exp.Sum(this=ref(TUPLE_COUNT, "s")), exp.DataType.Type.BIGINT)
    return render(
        "create_classes",
        classes=table,
        source=tuples or plan.source.name,
        row_id=row_id,
        labels=labels,
        size=size,
        num=[c.name for c in plan.numeric_qis],
        cat=[c.name for c in plan.categorical_qis],
        sets=[value_set(ref(c.name, "s"), len(plan.categorical_qis)) for c in plan.categorical_qis],
        projection=classes_projection(plan),
    )


def create_rows_sql(plan: Plan, table: str, labels: str, row_id: exp.Expression) -> exp.Expression:
    return render(
        "create_rows",
        rows=table,
        source=plan.source.name,
        row_id=row_id,
        labels=labels,
        projection=[alias(ref(c.name, "s"), c.name) for c in plan.verbatim],
        order=[ref(c.name, "s") for c in plan.verbatim],
    )


def create_release_view_sql(plan: Plan, view: str, rows: str, classes: str) -> exp.Expression:
    return release_view_sql(plan.columns, view, rows, classes)


def release_view_sql(columns: Sequence[Column], view: str, rows: str, classes: str) -> exp.Expression:
    """The release view over a row and a class table, for a source of these columns (its
    query, ``.expression``, is what the view must show: verification compares the two)."""
    return render(
        "create_release_view",
        release=view,
        rows=rows,
        classes=classes,
        projection=release_projection(columns),
    )


def drop_release_sql(kinds: Mapping[str, str], names: Sequence[str]) -> list[exp.Expression]:
    """DROP statements for whichever of these names exist, each as the kind it is in
    ``kinds`` (db.object_kinds; a release written before the class table existed has its
    name as a table, not a view). Views go first, the last made first (a release's text view
    reads its release view, which reads its tables): PostgreSQL refuses to drop what a view
    still reads."""
    views = [name for name in reversed(names) if kinds.get(name) == "VIEW"]
    tables = [name for name in names if name in kinds and kinds[name] != "VIEW"]
    return [
        exp.Drop(tables=[exp.Table(this=ident(name))], kind=kinds[name], exists=True)
        for name in (*views, *tables)
    ]


def create_view_sql(plan: Plan, view: str, release: str) -> exp.Expression:
    return text_view_sql(plan.columns, view, release)


def text_view_sql(columns: Sequence[Column], view: str, release: exp.Query | str) -> exp.Expression:
    """The text view over ``release`` (the release view, or a query of its rows), for a
    source of these columns (see create_view.sql; verification renders its query over the
    row and class tables and compares it with the view)."""
    qis = [c for c in columns if c.role == "qi"]
    return render(
        "create_view",
        view=view,
        release=release,
        num=[c.name for c in qis if c.kind == "numeric" and not c.temporal],
        tnum=[c.name for c in qis if c.kind == "numeric" and c.temporal],
        cat=[c.name for c in qis if c.kind != "numeric"],
        verb=[c.name for c in columns if c.role in ("sensitive", "insensitive")],
        col=[c.name for c in columns if c.role != "identifier"],
    )


def comment_release_sql(plan: Plan, text: str) -> list[exp.Expression]:
    """COMMENT statements that store the run's provenance (``text``) on the release view
    and on its row and class tables."""
    return [
        exp.Comment(this=exp.Table(this=ident(name)), kind=kind, expression=exp.Literal.string(text))
        for name, kind in (
            (plan.output, "VIEW"),
            (plan.rows_table, "TABLE"),
            (plan.classes_table, "TABLE"),
        )
    ]
