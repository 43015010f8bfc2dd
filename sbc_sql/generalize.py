"""Generalize stage: the SQL that turns class ids into the release (SPEC section 3 step 4).

Each class is recoded locally by ``GROUP BY eq_class``: numeric QIs to [min, max] of
their own type plus a has-NULL flag, categorical QIs to the sorted list of distinct values.
"""

from __future__ import annotations

from sqlglot import exp

from .expressions import alias, ref
from .spec import Plan
from .templates import render


def release_projection(plan: Plan) -> list[exp.Expression]:
    """eq_class, then the source's columns in order, identifiers dropped."""
    out: list[exp.Expression] = [alias(ref("sbc_eq_class", "r"), "eq_class")]
    for c in plan.columns:
        if c.role == "identifier":
            continue
        if c.role == "qi" and c.kind == "numeric":
            for suffix in ("_min", "_max", "_has_null"):
                out.append(alias(ref(c.name + suffix, "c"), c.name + suffix))
        elif c.role == "qi":
            out.append(alias(ref(c.name, "c"), c.name))
        else:
            out.append(alias(ref(c.name, "r"), c.name))
    return out


def create_release_sql(plan: Plan, table: str, labels: str) -> exp.Expression:
    order = [ref("sbc_eq_class", "r")] + [ref(c.name, "r") for c in plan.verbatim]
    return render("create_release", release=table, source=plan.source.name, labels=labels,
                  num=[c.name for c in plan.numeric_qis],
                  cat=[c.name for c in plan.categorical_qis],
                  projection=release_projection(plan), order=order)


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
