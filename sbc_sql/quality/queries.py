"""The aggregate query error of a release (its definition: the docstring of
:mod:`sbc_sql.quality.evaluate`): the random COUNT range queries over every QI, drawn from
the input's values by a seeded generator, and their scoring: the input's distinct QI tuples
and the release's classes are read once (two statements), then numpy counts each query's
rows and sums its estimate, one pass over them per batch of queries. (A join of queries x
rows in SQL took minutes at 200,000 rows, on every engine.)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from sqlglot import exp

from ..engines.base import Engine
from ..model import Column
from ..sql.nodes import alias, as_number, ref, text_list
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
# statements


def value_counts_sql(c: Column, original: str) -> exp.Expression:
    return render("eval_value_counts", original=original, value=_value(c, ref(c.name)))


def _value(c: Column, expr: exp.Expression) -> exp.Expression:
    return as_number(expr, c) if c.kind == "numeric" else exp.cast(expr, "VARCHAR")


def query_rows_sql(layout: Layout, original: str) -> exp.Expression:
    """The input's distinct QI tuples, as the queries read them, with their counts."""
    names = [f"sbc_q_{i}" for i in range(len(layout.qis))]
    values = [alias(_value(c, ref(c.name)), n) for c, n in zip(layout.qis, names, strict=True)]
    return render("eval_query_rows", original=original, value=values, v=names)


def query_classes_sql(layout: Layout, names: Names) -> exp.Expression:
    """The release's classes (their generalized tuples) with their sizes, ranges as numbers
    and sets as lists of text."""
    values: list[exp.Expression] = []
    for i, c in enumerate(layout.qis):
        if c.kind == "numeric":
            values += [
                alias(as_number(ref(c.name + "_min", "g"), c), f"sbc_lo_{i}"),
                alias(as_number(ref(c.name + "_max", "g"), c), f"sbc_hi_{i}"),
            ]
        else:
            values.append(alias(exp.cast(ref(c.name, "g"), text_list()), f"sbc_set_{i}"))
    return render("eval_query_classes", classes=names.classes, value=values)


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


#: queries scored per pass over the tuples and the classes (the step's progress is said per
#: batch; an interruption lands between two)
BATCH = 25


class _Tuples:
    """The input's distinct QI tuples: numeric values (NaN for NULL), categorical codes into
    the query domains' values (-1 for NULL, -2 for a value no domain holds), counts; in the
    order of the first numeric QI's values (NULL last), so that a query's range on it is
    one slice of the tuples (``sorted_by``: that QI, None without a numeric QI)."""

    def __init__(self, layout: Layout, table: pa.Table, codes: list[dict[Any, int]]) -> None:
        self.counts = np.asarray(table.column("sbc_m").to_numpy(zero_copy_only=False), dtype=np.int64)
        self.values: list[np.ndarray] = []
        for i, c in enumerate(layout.qis):
            col = table.column(f"sbc_q_{i}")
            if c.kind == "numeric":
                self.values.append(_floats(col))
            else:
                self.values.append(_arrow_codes(col, codes[i]))
        del table
        self.sorted_by = next((i for i, c in enumerate(layout.qis) if c.kind == "numeric"), None)
        if self.sorted_by is not None:
            order = np.argsort(self.values[self.sorted_by], kind="stable")  # NaN last
            self.counts = self.counts[order]
            self.values = [v[order] for v in self.values]

    def span(self, lo: float, hi: float) -> slice:
        """The tuples whose value on ``sorted_by`` lies in [lo, hi] (NULL never does)."""
        assert self.sorted_by is not None
        v = self.values[self.sorted_by]
        return slice(int(np.searchsorted(v, lo, side="left")), int(np.searchsorted(v, hi, side="right")))


class _Classes:
    """The release's classes: sizes; per numeric QI bounds (NaN for NULL); per categorical QI
    the set's codes flattened, each class's start in them, its size and whether it holds NULL."""

    def __init__(self, layout: Layout, table: pa.Table, codes: list[dict[Any, int]]) -> None:
        import pyarrow.compute as pc

        self.sizes = np.asarray(table.column("sbc_size").to_numpy(zero_copy_only=False), dtype=np.float64)
        self.parts: list[Any] = []
        for i, c in enumerate(layout.qis):
            if c.kind == "numeric":
                self.parts.append(
                    (_floats(table.column(f"sbc_lo_{i}")), _floats(table.column(f"sbc_hi_{i}")))
                )
                continue
            sets = table.column(f"sbc_set_{i}").combine_chunks()
            lengths = np.asarray(
                pc.fill_null(pc.list_value_length(sets), 0).to_numpy(zero_copy_only=False), dtype=np.int64
            )
            flat = pc.list_flatten(sets)
            absent = np.asarray(flat.is_null().to_numpy(zero_copy_only=False), dtype=bool)
            owner = np.repeat(np.arange(len(sets)), lengths)
            has_null = np.bincount(owner[absent], minlength=len(sets)) > 0
            known = _arrow_codes(flat.filter(pc.invert(flat.is_null())), codes[i])
            self.parts.append((known, owner[~absent], lengths.astype(np.float64), has_null))


def _floats(col: pa.ChunkedArray) -> np.ndarray:
    return np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.float64)


def _arrow_codes(values: pa.Array | pa.ChunkedArray, codes: dict[Any, int]) -> np.ndarray:
    """Each value's code (its place in ``codes``' order), -1 for NULL, -2 for a value ``codes``
    lacks: by Arrow's compute kernels, no Python object per value."""
    import pyarrow.compute as pc

    found = pc.index_in(values, value_set=pa.array(list(codes), type=pa.string()))
    marked = pc.if_else(pc.is_null(values), -1, pc.fill_null(found, -2))
    return np.asarray(marked.to_numpy(zero_copy_only=False), dtype=np.int64)


def _score(
    layout: Layout, rows: _Tuples, classes: _Classes, query: dict[str, Any], codes: list[dict[Any, int]]
) -> tuple[int, float]:
    """One query's true count (rows inside it on every QI) and estimate (sum over classes of
    size * the product over QIs of the overlap share), in the operations' SQL order."""
    # the rows inside the query on the tuples' sorted QI are one slice; the rest is tested
    # on that slice only
    first = rows.sorted_by
    if first is None:
        span = slice(0, len(rows.counts))
    else:
        flo, fhi = query[layout.qis[first].name + "_lo"], query[layout.qis[first].name + "_hi"]
        span = slice(0, 0) if flo is None or fhi is None else rows.span(flo, fhi)
    hit = np.ones(span.stop - span.start, dtype=bool)
    share: np.ndarray | None = None
    for i, c in enumerate(layout.qis):
        name = c.name
        if c.kind == "numeric":
            qlo, qhi = query[name + "_lo"], query[name + "_hi"]
            v = rows.values[i][span]
            lo, hi = classes.parts[i]
            if qlo is None or qhi is None:
                hit[:] = False
                part = np.zeros(len(lo))
            else:
                if i != first:
                    hit &= (v >= qlo) & (v <= qhi)
                with np.errstate(invalid="ignore", divide="ignore"):
                    overlap = np.maximum(np.minimum(qhi, hi) - np.maximum(qlo, lo), 0.0) / (hi - lo)
                point = np.where((lo >= qlo) & (lo <= qhi), 1.0, 0.0)
                part = np.where(np.isnan(lo), 0.0, np.where(hi == lo, point, overlap))
                part = np.where(np.isnan(part), 0.0, part)
        else:
            chosen = np.zeros(len(codes[i]) + 2, dtype=bool)  # the codes, then -2 and -1 at the end
            for value in query[name + "_vals"] or []:
                code = codes[i].get(value)
                if code is not None:
                    chosen[code] = True
            chosen[-1] = bool(query[name + "_null"])
            hit &= chosen[rows.values[i][span]]
            known, owner, lengths, has_null = classes.parts[i]
            common = np.bincount(owner, weights=chosen[known].astype(np.float64), minlength=len(lengths))
            common = common + np.where(has_null & bool(query[name + "_null"]), 1.0, 0.0)
            with np.errstate(invalid="ignore", divide="ignore"):
                part = np.where(lengths > 0, common / lengths, 0.0)
        share = part if share is None else share * part
    true = int(rows.counts[span][hit].sum())
    if share is None:
        share = np.ones(len(classes.sizes))
    terms = classes.sizes * share
    # the exactly rounded sum; its zero terms (classes outside the query) change nothing
    return true, math.fsum(terms[terms != 0.0].tolist())


def query_error(
    engine: Engine,
    layout: Layout,
    original: str,
    names: Names,
    table: pa.Table,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[QueryError, ...]:
    """Score the queries in ``table`` (see :func:`make_queries`) on input and release: the
    input's distinct QI tuples and the run's classes table are read once, then each batch of
    queries is one pass over them (numpy); ``progress(done, total)`` after each batch."""
    codes: list[dict[Any, int]] = []
    for c in layout.qis:
        seen: dict[Any, int] = {}
        if c.kind != "numeric":
            for vals in table.column(c.name + "_vals").to_pylist():
                for v in vals or []:
                    seen.setdefault(v, len(seen))
        codes.append(seen)
    rows = _Tuples(layout, engine.fetch_arrow(query_rows_sql(layout, original)), codes)
    classes = _Classes(layout, engine.fetch_arrow(query_classes_sql(layout, names)), codes)
    n = int(rows.counts.sum())
    queries = table.to_pylist()
    by_sel: dict[float, list[tuple[int, float]]] = {}
    for start in range(0, len(queries), BATCH):
        for query in queries[start : start + BATCH]:
            by_sel.setdefault(float(query["sbc_sel"]), []).append(_score(layout, rows, classes, query, codes))
        if progress is not None:
            progress(min(start + BATCH, len(queries)), len(queries))
    out = []
    for sel in sorted(by_sel):
        answers = by_sel[sel]
        errors = [abs(est - true) / true for true, est in answers if true > 0]
        out.append(
            QueryError(
                sel,
                len(answers),
                len(errors),
                math.fsum(errors) / len(errors) if errors else None,
                math.fsum(t for t, _ in answers) / len(answers) / n if n else None,
            )
        )
    return tuple(out)
