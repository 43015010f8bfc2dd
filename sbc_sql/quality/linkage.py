"""Coverage, record linkage and RGCP of a release (their definitions: the docstring of
:mod:`sbc_sql.quality.evaluate`).

The expressions cost a class and grow its generalized tuple by a record or by the records
that join it; the statements make the run's temporary tables (the input's statistics, the
release's classes, the input's distinct rows, the classes covering each) and read record
linkage and RGCP from them. The classes table is read by the query error too
(:mod:`sbc_sql.quality.queries`).
"""

from __future__ import annotations

from sqlglot import exp

from ..sql.nodes import alias, conj, list_has_null, or_false, ref, same_key
from ..sql.templates import render
from ..stages.measure import Layout, cost_expression
from ..stages.verify import inside
from .scratch import Names

# ---------------------------------------------------------------------------------------
# expressions


def weighted_cost(layout: Layout) -> exp.Expression:
    """Sum over QIs of weight * NCP of one class (over alias r and src)."""
    out: exp.Expression | None = None
    for c, w in zip(layout.qis, layout.weights, strict=True):
        term: exp.Expression = exp.Mul(
            this=exp.Literal.number(w), expression=exp.Paren(this=cost_expression(c))
        )
        out = term if out is None else exp.Add(this=out, expression=term)
    return out if out is not None else exp.Literal.number(0.0)


def _lesser(a: exp.Expression, b: exp.Expression, *, greater: bool = False) -> exp.Expression:
    """The smaller (or greater) of two values, either of which may be NULL."""
    cmp = exp.GT if greater else exp.LT
    return exp.Case(
        ifs=[
            exp.If(this=exp.Is(this=a, expression=exp.Null()), true=b),
            exp.If(this=exp.Is(this=b, expression=exp.Null()), true=a),
            exp.If(this=cmp(this=a, expression=b), true=a),
        ],
        default=b,
    )


def extend_columns(layout: Layout, rec: str = "l", cls: str = "g") -> list[exp.Expression]:
    """Class cls's generalized tuple with the input record rec added, named like the release."""
    out: list[exp.Expression] = []
    for c in layout.qis:
        if c.kind == "numeric":
            v = ref(c.name, rec)
            out += [
                alias(_lesser(ref(c.name + "_min", cls), v), c.name + "_min"),
                alias(_lesser(ref(c.name + "_max", cls), v, greater=True), c.name + "_max"),
                alias(
                    exp.or_(or_false(ref(c.name + "_has_null", cls)), exp.Is(this=v, expression=exp.Null())),
                    c.name + "_has_null",
                ),
            ]
        else:
            grown = exp.ArrayAppend(this=ref(c.name, cls), expression=ref(c.name, rec))
            out.append(
                alias(
                    exp.Case(
                        ifs=[exp.If(this=or_false(inside(c, rec, cls)), true=ref(c.name, cls))],
                        default=grown,
                    ),
                    c.name,
                )
            )
    return out


def union_columns(layout: Layout, cls: str = "g", add: str = "a") -> list[exp.Expression]:
    """Class cls's tuple with the records aggregated in add (``_lo``/``_hi``/``_null``,
    ``_vals``/``_null``) added: the virtual class's generalized tuple."""
    out: list[exp.Expression] = []
    for c in layout.qis:
        if c.kind == "numeric":
            out += [
                alias(_lesser(ref(c.name + "_min", cls), ref(c.name + "_lo", add)), c.name + "_min"),
                alias(
                    _lesser(ref(c.name + "_max", cls), ref(c.name + "_hi", add), greater=True),
                    c.name + "_max",
                ),
                alias(
                    exp.or_(or_false(ref(c.name + "_has_null", cls)), or_false(ref(c.name + "_null", add))),
                    c.name + "_has_null",
                ),
            ]
        else:
            values = ref(c.name, cls)
            added = exp.Coalesce(this=ref(c.name + "_vals", add), expressions=[exp.Array(expressions=[])])
            merged = exp.ArrayDistinct(this=exp.ArrayConcat(this=values, expressions=[added]))
            with_null = exp.ArrayAppend(this=merged.copy(), expression=exp.Null())
            out.append(
                alias(
                    exp.Case(
                        ifs=[
                            exp.If(
                                this=exp.or_(list_has_null(values), or_false(ref(c.name + "_null", add))),
                                true=with_null,
                            )
                        ],
                        default=merged,
                    ),
                    c.name,
                )
            )
    return out


def _uid(layout: Layout) -> exp.Expression:
    keys = [ref(c.name) for c in (*layout.qis, *layout.verbatim)]
    order = exp.Order(expressions=[exp.Ordered(this=k, nulls_first=False) for k in keys])
    return exp.Window(this=exp.RowNumber(), order=order)


# ---------------------------------------------------------------------------------------
# statements


def source_stats_sql(layout: Layout, original: str, target: str) -> exp.Expression:
    return render(
        "eval_source_stats",
        target=target,
        original=original,
        num=[c.name for c in layout.qis if c.kind == "numeric"],
        cat=[c.name for c in layout.qis if c.kind == "categorical"],
    )


def classes_sql(layout: Layout, release: str, names: Names) -> exp.Expression:
    return render(
        "eval_classes",
        target=names.classes,
        release=release,
        src=names.src,
        qicol=layout.qi_columns(),
        cost=weighted_cost(layout),
    )


def tuples_sql(layout: Layout, original: str, names: Names) -> exp.Expression:
    return render(
        "eval_tuples",
        target=names.tuples,
        original=original,
        col=[c.name for c in (*layout.qis, *layout.verbatim)],
        uid=_uid(layout),
    )


def coverage_sql(layout: Layout, release: str, names: Names) -> exp.Expression:
    covers = conj([inside(c, "t", "g") for c in layout.qis])
    same = conj([same_key(ref(c.name, "t"), ref(c.name, "cv"), c) for c in layout.verbatim])
    return render(
        "eval_coverage",
        target=names.cov,
        tuples=names.tuples,
        classes=names.classes,
        release=release,
        verb=[c.name for c in layout.verbatim],
        inside=covers,
        same=same,
    )


def linkage_sql(names: Names) -> exp.Expression:
    return render("eval_linkage", cov=names.cov)


def rgcp_sql(layout: Layout, names: Names) -> exp.Expression:
    return render(
        "eval_rgcp",
        tuples=names.tuples,
        cov=names.cov,
        classes=names.classes,
        src=names.src,
        num=[c.name for c in layout.qis if c.kind == "numeric"],
        cat=[c.name for c in layout.qis if c.kind == "categorical"],
        extend=extend_columns(layout),
        union=union_columns(layout),
        cost=weighted_cost(layout),
    )


def whole_sql(layout: Layout, original: str, names: Names) -> exp.Expression:
    return render(
        "eval_whole",
        original=original,
        src=names.src,
        num=[c.name for c in layout.qis if c.kind == "numeric"],
        cat=[c.name for c in layout.qis if c.kind == "categorical"],
        cost=weighted_cost(layout),
    )
