"""Generalize stage: the SQL that turns class ids into the release (SPEC section 3 step 4).

Each class is recoded locally by ``GROUP BY eq_class``: numeric QIs to [min, max] of
their own type plus a has-NULL flag, categorical QIs to the sorted list of distinct values.
"""

from __future__ import annotations

from sqlglot import exp

from .expressions import alias, ref
from .spec import Plan
from .templates import ident, render


def release_projection(plan: Plan) -> list[exp.Expression]:
    """eq_class, then the source's columns in order, identifiers dropped."""
    out: list[exp.Expression] = [alias(ref("sbc_eq_class", "u"), "eq_class")]
    for c in plan.columns:
        if c.role == "identifier":
            continue
        if c.role != "qi":
            field = exp.Anonymous(this="struct_extract",
                                  expressions=[ref("sbc_row", "u"), exp.Literal.string(c.name)])
            out.append(alias(field, c.name))
            continue
        names = [c.name + s for s in ("_min", "_max", "_has_null")] \
            if c.kind == "numeric" else [c.name]
        out += [alias(ref(name, "u"), name) for name in names]
    return out


def row_struct(plan: Plan) -> exp.Expression:
    """STRUCT of a constant and the row's released verbatim columns, in source order."""
    fields = [exp.PropertyEQ(this=exp.Identifier(this="sbc_row"), expression=exp.Literal.number(1))]
    fields += [exp.PropertyEQ(this=ident(c.name), expression=ref(c.name, "r"))
               for c in plan.verbatim]
    return exp.Struct(expressions=fields)


def create_release_sql(plan: Plan, table: str, labels: str) -> exp.Expression:
    return render("create_release", release=table, source=plan.source.name, labels=labels,
                  num=[c.name for c in plan.numeric_qis],
                  cat=[c.name for c in plan.categorical_qis],
                  row=row_struct(plan), projection=release_projection(plan))


def create_view_sql(plan: Plan, view: str, release: str) -> exp.Expression:
    projection: list[exp.Expression] = [ref("eq_class", "t")]
    for c in plan.columns:
        if c.role == "identifier":
            continue
        if c.role == "qi":
            projection.append(alias(ref(c.name + "_sbc_text", "t"), c.name))
        else:
            projection.append(ref(c.name, "t"))
    return render("create_view", view=view, release=release,
                  num=[c.name for c in plan.numeric_qis if not c.temporal],
                  tnum=[c.name for c in plan.numeric_qis if c.temporal],
                  cat=[c.name for c in plan.categorical_qis], projection=projection)
