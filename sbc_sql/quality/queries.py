"""The aggregate query error of a release (its definition: the docstring of
:mod:`sbc_sql.quality.evaluate`): the random COUNT range queries over every QI, drawn from
the input's values by a seeded generator, the expressions that match an input row and share
out a class, and the statement that scores the queries on input and release.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from sqlglot import exp

from ..engines.base import Engine
from ..model import Column
from ..sql.nodes import as_number, conj, list_contains, list_has_null, list_size, or_false, ref, text_list
from ..sql.templates import render
from ..stages.measure import Layout
from .scratch import Names


@dataclass(frozen=True)
class QueryError:
    """Aggregate query error at one target selectivity."""

    selectivity: float
    queries: int
    used: int
    relative_error: float | None
    true_share: float | None


# ---------------------------------------------------------------------------------------
# expressions


def match_expression(layout: Layout, row: str = "s", query: str = "q") -> exp.Expr:
    """The input row lies inside the query on every QI."""
    parts: list[exp.Expression] = []
    for c in layout.qis:
        value = ref(c.name, row)
        if c.kind == "numeric":
            parts.append(
                exp.Between(
                    this=as_number(value, c), low=ref(c.name + "_lo", query), high=ref(c.name + "_hi", query)
                )
            )
        else:
            contains = list_contains(ref(c.name + "_vals", query), exp.cast(value, "VARCHAR"))
            parts.append(
                exp.Case(
                    ifs=[
                        exp.If(
                            this=exp.Is(this=value, expression=exp.Null()), true=ref(c.name + "_null", query)
                        )
                    ],
                    default=contains,
                )
            )
    return conj(parts)


def share_expression(layout: Layout, cls: str = "g", query: str = "q") -> exp.Expression:
    """Expected share of a class's rows that the query counts (uniform spread, QIs
    independent): the product over QIs of the overlap of range or set with the query."""
    one, zero = exp.Literal.number(1.0), exp.Literal.number(0.0)
    out: exp.Expression | None = None
    for c in layout.qis:
        if c.kind == "numeric":
            lo = as_number(ref(c.name + "_min", cls), c)
            hi = as_number(ref(c.name + "_max", cls), c)
            qlo, qhi = ref(c.name + "_lo", query), ref(c.name + "_hi", query)
            overlap = exp.Sub(
                this=exp.Least(this=qhi, expressions=[hi.copy()]),
                expression=exp.Greatest(this=qlo, expressions=[lo.copy()]),
            )
            part: exp.Expression = exp.Case(
                ifs=[
                    exp.If(this=exp.Is(this=ref(c.name + "_min", cls), expression=exp.Null()), true=zero),
                    exp.If(
                        this=exp.EQ(this=hi.copy(), expression=lo.copy()),
                        true=exp.Case(
                            ifs=[
                                exp.If(
                                    this=exp.Between(this=lo.copy(), low=qlo.copy(), high=qhi.copy()),
                                    true=one,
                                )
                            ],
                            default=zero,
                        ),
                    ),
                ],
                default=exp.Div(
                    this=exp.Greatest(this=exp.Paren(this=overlap), expressions=[zero.copy()]),
                    expression=exp.Nullif(
                        this=exp.Sub(this=hi.copy(), expression=lo.copy()), expression=exp.Literal.number(0)
                    ),
                ),
            )
        else:
            values = ref(c.name, cls)
            common = list_size(
                exp.ArrayIntersect(
                    expressions=[
                        exp.cast(values, text_list()),
                        ref(c.name + "_vals", query),
                    ]
                )
            )
            null_hit = exp.Case(
                ifs=[
                    exp.If(
                        this=exp.and_(or_false(ref(c.name + "_null", query)), list_has_null(values.copy())),
                        true=exp.Literal.number(1),
                    )
                ],
                default=exp.Literal.number(0),
            )
            part = exp.Div(
                this=exp.cast(exp.Paren(this=exp.Add(this=common, expression=null_hit)), "DOUBLE"),
                expression=exp.Nullif(
                    this=list_size(values.copy()),
                    expression=exp.Literal.number(0),
                ),
            )
        part = exp.Coalesce(this=part, expressions=[zero.copy()])
        out = part if out is None else exp.Mul(this=exp.Paren(this=out), expression=part)
    return out if out is not None else one


# ---------------------------------------------------------------------------------------
# statements


def value_counts_sql(c: Column, original: str) -> exp.Expression:
    value = as_number(ref(c.name), c) if c.kind == "numeric" else exp.cast(ref(c.name), "VARCHAR")
    return render("eval_value_counts", original=original, value=value)


def queries_sql(layout: Layout, original: str, names: Names) -> exp.Expression:
    return render(
        "eval_queries",
        original=original,
        classes=names.classes,
        queries=names.queries,
        match=match_expression(layout),
        share=share_expression(layout),
    )


# ---------------------------------------------------------------------------------------
# the queries, drawn and scored


@dataclass(frozen=True)
class Domain:
    """A QI's input values: numeric ones sorted with their counts; categorical ones as text
    (None for NULL)."""

    column: Column
    values: list[Any]
    counts: np.ndarray


def make_queries(
    domains: Sequence[Domain], selectivities: Sequence[float], queries: int, seed: int
) -> pa.Table:
    """The random COUNT queries as an Arrow table: sbc_qid, sbc_sel, then per numeric QI
    ``<name>_lo``/``<name>_hi`` (DOUBLE) and per categorical QI ``<name>_vals`` (list of
    text) and ``<name>_null`` (whether NULL is selected)."""
    rng = np.random.default_rng(seed)
    d = max(len(domains), 1)
    cols: dict[str, list[Any]] = {"sbc_qid": [], "sbc_sel": []}
    for dom in domains:
        if dom.column.kind == "numeric":
            cols[dom.column.name + "_lo"], cols[dom.column.name + "_hi"] = [], []
        else:
            cols[dom.column.name + "_vals"], cols[dom.column.name + "_null"] = [], []
    prepared: list[tuple[Any, np.ndarray | None]] = []
    for dom in domains:
        if dom.column.kind == "numeric":
            keep = [i for i, v in enumerate(dom.values) if v is not None]
            vals = np.asarray([dom.values[i] for i in keep], dtype=np.float64)
            cum = np.cumsum(dom.counts[keep]) if keep else np.zeros(0)
            prepared.append((vals, cum / cum[-1] if len(cum) else cum))
        else:
            prepared.append((dom.values, None))
    qid = 0
    for sel in selectivities:
        f = min(max(float(sel), 0.0), 1.0) ** (1.0 / d)
        for _ in range(queries):
            cols["sbc_qid"].append(qid)
            cols["sbc_sel"].append(float(sel))
            qid += 1
            for dom, (vals, cdf) in zip(domains, prepared, strict=True):
                name = dom.column.name
                if dom.column.kind == "numeric":
                    u = float(rng.uniform(0.0, 1.0 - f)) if f < 1.0 else 0.0
                    if len(vals) == 0:
                        lo = hi = None
                    else:
                        # the values holding the input's quantiles u and u + f
                        assert cdf is not None  # a numeric domain has its CDF (prepared above)
                        last = len(vals) - 1
                        i = min(int(np.searchsorted(cdf, u, side="right")), last)
                        j = min(int(np.searchsorted(cdf, min(u + f, 1.0) - 1e-12)), last)
                        lo, hi = float(vals[i]), float(vals[max(i, j)])
                    cols[name + "_lo"].append(lo)
                    cols[name + "_hi"].append(hi)
                else:
                    card = len(vals)
                    size = max(1, round(f * card)) if card else 0
                    picked: np.ndarray | list[int] = (
                        rng.choice(card, size=size, replace=False) if card else []
                    )
                    chosen = [vals[int(i)] for i in sorted(picked)]
                    cols[name + "_vals"].append([v for v in chosen if v is not None])
                    cols[name + "_null"].append(any(v is None for v in chosen))
    types: dict[str, pa.DataType] = {"sbc_qid": pa.int64(), "sbc_sel": pa.float64()}
    for dom in domains:
        if dom.column.kind == "numeric":
            types[dom.column.name + "_lo"] = types[dom.column.name + "_hi"] = pa.float64()
        else:
            types[dom.column.name + "_vals"] = pa.list_(pa.string())
            types[dom.column.name + "_null"] = pa.bool_()
    return pa.table({name: pa.array(values, type=types[name]) for name, values in cols.items()})


def domains(engine: Engine, layout: Layout, original: str) -> list[Domain]:
    out = []
    for c in layout.qis:
        rows = engine.fetch_all(value_counts_sql(c, original))
        out.append(Domain(c, [r[0] for r in rows], np.asarray([int(r[1]) for r in rows], dtype=np.int64)))
    return out


def query_error(
    engine: Engine, layout: Layout, original: str, names: Names, table: pa.Table
) -> tuple[QueryError, ...]:
    """Run the queries in ``table`` (see :func:`make_queries`) against input and release;
    needs the classes table of the run."""
    with engine.upload(names.queries, table):
        rows = engine.fetch_all(queries_sql(layout, original, names))
    return tuple(
        QueryError(float(s), int(n), int(u), None if e is None else float(e), None if t is None else float(t))
        for s, n, u, e, t in rows
    )
