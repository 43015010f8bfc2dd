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

from ..plan import CLASS_SIZE, Plan
from ..sql.nodes import alias, ref, value_set
from ..sql.templates import ident, render


def classes_projection(plan: Plan) -> list[exp.Expression]:
    """Class table columns: eq_class, class_size, then each QI's generalization in source order."""
    out: list[exp.Expression] = [
        alias(ref("sbc_eq_class", "g"), "eq_class"),
        alias(ref("sbc_size", "g"), CLASS_SIZE),
    ]
    return out + [alias(ref(name, "g"), name) for c in plan.qis for name in c.release_columns]


def release_projection(plan: Plan) -> list[exp.Expression]:
    """The view's columns after eq_class: the source's columns in order, identifiers dropped."""
    return [
        alias(ref(name, "c" if c.role == "qi" else "r"), name)
        for c in plan.columns
        if c.role != "identifier"
        for name in c.release_columns
    ]


def create_classes_sql(plan: Plan, table: str, labels: str, row_id: exp.Expression) -> exp.Expression:
    return render(
        "create_classes",
        classes=table,
        source=plan.source.name,
        row_id=row_id,
        labels=labels,
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
    return render(
        "create_release_view", release=view, rows=rows, classes=classes, projection=release_projection(plan)
    )


def drop_release_sql(kinds: Mapping[str, str], names: Sequence[str]) -> list[exp.Expression]:
    """DROP statements for whichever of these names exist, each as the kind it is in
    ``kinds`` (db.object_kinds; a release written before the class table existed has its
    name as a table, not a view)."""
    return [
        exp.Drop(tables=[exp.Table(this=ident(name))], kind=kinds[name], exists=True)
        for name in names
        if name in kinds
    ]


def create_view_sql(plan: Plan, view: str, release: str) -> exp.Expression:
    projection: list[exp.Expression] = [ref("eq_class", "t")]
    for c in plan.columns:
        if c.role == "identifier":
            continue
        if c.role == "qi":
            projection.append(alias(ref(c.name + "_sbc_text", "t"), c.name))
        else:
            projection.append(ref(c.name, "t"))
    return render(
        "create_view",
        view=view,
        release=release,
        num=[c.name for c in plan.numeric_qis if not c.temporal],
        tnum=[c.name for c in plan.numeric_qis if c.temporal],
        cat=[c.name for c in plan.categorical_qis],
        projection=projection,
    )
