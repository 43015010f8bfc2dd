"""Pull stage: stream the QIs from the database as Arrow batches into columnar arrays.

Numerics arrive as DOUBLE (NULL -> NaN); categoricals are turned into integer codes by
Arrow's vectorized lookup against the domains from the statistics stage.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from sqlglot import exp

from ..arrays import to_numpy
from ..cluster.model import QIData
from ..engines.base import Engine
from ..plan import Plan
from ..sql.nodes import as_category, as_number, ref
from ..sql.templates import render
from .stats import Stats, encode_column

BATCH_ROWS = 1 << 17


def pull_sql(plan: Plan, row_id: exp.Expression) -> exp.Expression:
    exprs = [
        as_number(ref(c.name), c) if c.kind == "numeric" else as_category(ref(c.name), c) for c in plan.qis
    ]
    return render("pull_rows", source=plan.source.name, row_id=row_id, qi=exprs)


def pull(
    engine: Engine, plan: Plan, stats: Stats, progress: Callable[[int, int], None] | None = None
) -> tuple[QIData, np.ndarray]:
    """The QIs of every row as a QIData, and each row's row_id in the source."""
    n = stats.n_rows
    qis = plan.qis
    row_id = np.empty(n, dtype=np.int64)
    columns = [np.empty(n, dtype=np.float64 if c.kind == "numeric" else np.int32) for c in qis]
    at = 0
    for batch in engine.stream(pull_sql(plan, engine.row_id("s")), BATCH_ROWS):
        m = batch.num_rows
        if at + m > n:
            raise RuntimeError("the source table grew while it was being read")
        row_id[at : at + m] = to_numpy(batch.column(0), np.int64)
        for i, c in enumerate(qis):
            arr = batch.column(1 + i)
            if c.kind == "numeric":
                columns[i][at : at + m] = to_numpy(arr, np.float64)
            else:
                columns[i][at : at + m] = encode_column(arr, stats.domains[c.name], c)
        at += m
        if progress is not None:
            progress(at, n)
    if at != n:
        raise RuntimeError("the source table changed while it was being read")
    data = QIData(
        names=tuple(c.name for c in qis),
        numeric=tuple(c.kind == "numeric" for c in qis),
        columns=tuple(columns),
        lo=tuple(stats.lo.get(c.name, float("nan")) for c in qis),
        hi=tuple(stats.hi.get(c.name, float("nan")) for c in qis),
        cardinality=tuple(0 if c.kind == "numeric" else stats.cardinality(c.name) for c in qis),
        weights=plan.weights,
        position=row_id,
    )
    return data, row_id
