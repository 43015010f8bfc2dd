"""Pull stage: stream the QIs from the database as Arrow batches into columnar arrays.

Rows, or, for an algorithm that clusters tuples whole, the distinct QI tuples with their row
counts (a GROUP BY in the engine: :func:`create_tuples_sql`, :func:`pull_tuples`), whose
classes reach the rows by a join on the tuple (:func:`tuple_labels_sql`).

Numerics arrive as DOUBLE (NULL -> NaN); categoricals are turned into integer codes by
Arrow's vectorized lookup against the domains from the statistics stage. When privacy
criteria are asked, the sensitive columns come in the same stream and become value codes
in value order, NULL last (:class:`..cluster.sensitive.Sensitive`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
from sqlglot import exp

from ..arrays import to_numpy
from ..cluster.decode import Coded, Decoder
from ..cluster.model import QIData
from ..cluster.sensitive import Sensitive
from ..engines.base import Engine
from ..model import Column
from ..plan import Plan
from ..sql.nodes import as_category, as_number, ref, same_key
from ..sql.templates import render
from .stats import Stats

BATCH_ROWS = 1 << 17


def pull_sql(plan: Plan, row_id: exp.Expression, sensitive: Sequence[Column] = ()) -> exp.Expression:
    exprs = [
        as_number(ref(c.name), c) if c.kind == "numeric" else as_category(ref(c.name), c)
        for c in (*plan.qis, *sensitive)
    ]
    return render("pull_rows", source=plan.source.name, row_id=row_id, qi=exprs)


def create_tuples_sql(plan: Plan, tuples: str) -> exp.Expression:
    return render("create_tuples", tuples=tuples, source=plan.source.name, qi=[c.name for c in plan.qis])


def tuple_estimate_sql(plan: Plan) -> exp.Expression:
    row = exp.Tuple(expressions=[ref(c.name, "s") for c in plan.qis])
    return render("tuple_estimate", source=plan.source.name, row=row)


def tuple_count(engine: Engine, tuples: str) -> int:
    """How many distinct QI tuples the table ``tuples`` (create_tuples) stored."""
    (n,) = engine.fetch_one(render("row_count", source=tuples))
    return int(n)


def pull_tuples_sql(plan: Plan, tuples: str, row_id: exp.Expression) -> exp.Expression:
    exprs = [
        as_number(ref(c.name, "s"), c) if c.kind == "numeric" else as_category(ref(c.name, "s"), c)
        for c in plan.qis
    ]
    return render(
        "pull_tuples", tuples=tuples, row_id=row_id, qi=exprs, order=[ref(c.name, "s") for c in plan.qis]
    )


def tuple_labels_sql(
    plan: Plan,
    labels: str,
    tuples: str,
    tuple_labels: str,
    row_id: exp.Expression,
    tuple_id: exp.Expression,
) -> exp.Expression:
    """The row labels (row_id, eq_class) of a run that clustered tuples: each source row
    (aliased s) takes its tuple's class, joined on every QI with NULL equal to NULL."""
    on = exp.and_(*(same_key(ref(c.name, "s"), ref(c.name, "t"), c) for c in plan.qis))
    return render(
        "tuple_labels",
        labels=labels,
        source=plan.source.name,
        row_id=row_id,
        tuples=tuples,
        tuple_id=tuple_id,
        tuple_labels=tuple_labels,
        on=on,
    )


def decoder_of(plan: Plan, stats: Stats) -> Decoder:
    """The decoder of a run's pull: its QIs, their domains, the table's ranges,
    cardinalities and weights."""
    qis = tuple(plan.qis)
    return Decoder(
        qis,
        tuple(stats.domains.get(c.name) if c.kind != "numeric" else None for c in qis),
        tuple(stats.lo.get(c.name, float("nan")) for c in qis),
        tuple(stats.hi.get(c.name, float("nan")) for c in qis),
        tuple(0 if c.kind == "numeric" else stats.cardinality(c.name) for c in qis),
        plan.weights,
    )


def coded(engine: Engine, plan: Plan, column: Column) -> Coded:
    """The whole table's values of ``column``, as the pull reads them, sorted (NULL last)
    with their counts: one aggregate in the engine, whose few rows (one per value) are all
    that reach this process. The codes are those :func:`pull` gives the column
    (:func:`_sensitive`): the same values in the same order."""
    import pyarrow.compute as pc

    value = (
        as_number(ref(column.name), column)
        if column.kind == "numeric"
        else as_category(ref(column.name), column)
    )
    table = engine.fetch_arrow(render("eval_value_counts", original=plan.source.name, value=value))
    values = table.column(0).combine_chunks()
    if pa.types.is_dictionary(values.type):
        values = values.cast(values.type.value_type)
    counts = to_numpy(table.column(1), np.int64)
    valid = values.is_valid()
    kept = values.filter(valid)
    order = pc.sort_indices(kept)
    sorted_counts = to_numpy(pa.array(counts).filter(valid).take(order), np.int64)
    nulls = int(counts[~np.asarray(valid.to_numpy(zero_copy_only=False), dtype=bool)].sum())
    if nulls:
        sorted_counts = np.append(sorted_counts, nulls)
    return Coded(column, kept.take(order), sorted_counts.astype(np.int64))


def coded_decoder(
    engine: Engine, plan: Plan, stats: Stats, sensitive: Sequence[Column] = (), target: Column | None = None
) -> Decoder:
    """:func:`decoder_of` with the sensitive columns and the target coded against the whole
    table's values (:func:`coded`), for rows decoded apart (Spark's workers): the pull
    (:func:`pull_sql`) then reads them after the QIs, in :attr:`Decoder.extra`'s order."""
    codes = {c.name: coded(engine, plan, c) for c in (*sensitive, *([target] if target else []))}
    return dataclasses.replace(
        decoder_of(plan, stats),
        sensitive=tuple(codes[c.name] for c in sensitive),
        target=None if target is None else codes[target.name],
    )


def pull(
    engine: Engine,
    plan: Plan,
    stats: Stats,
    progress: Callable[[int, int], None] | None = None,
    sensitive: Sequence[Column] = (),
    target: Column | None = None,
) -> tuple[QIData, np.ndarray]:
    """The QIs of every row as a QIData, and each row's row_id in the source; with
    ``sensitive`` columns, their value codes as ``QIData.sensitive``; with a ``target``,
    its label codes (value order, NULL last) as ``QIData.target``."""
    extra = list(sensitive)
    if target is not None and target not in extra:
        extra.append(target)
    n = stats.n_rows
    qis = plan.qis
    decoder = decoder_of(plan, stats)
    row_id = np.empty(n, dtype=np.int64)
    columns = [np.empty(n, dtype=np.float64 if c.kind == "numeric" else np.int32) for c in qis]
    raw: list[list[pa.Array]] = [[] for _ in extra]
    at = 0
    for batch in engine.stream(pull_sql(plan, engine.row_id("s"), extra), BATCH_ROWS):
        m = batch.num_rows
        if at + m > n:
            raise RuntimeError("the source table grew while it was being read")
        row_id[at : at + m] = to_numpy(batch.column(0), np.int64)
        for i in range(len(qis)):
            columns[i][at : at + m] = decoder.column(batch, i)
        for j in range(len(extra)):
            raw[j].append(batch.column(1 + len(qis) + j))
        at += m
        if progress is not None:
            progress(at, n)
    if at != n:
        raise RuntimeError("the source table changed while it was being read")
    data = decoder.data(tuple(columns), row_id)
    if sensitive:
        data = dataclasses.replace(data, sensitive=_sensitive(sensitive, raw[: len(sensitive)]))
    if target is not None:
        j = extra.index(target)
        data = dataclasses.replace(data, target=_sensitive([target], [raw[j]]).codes[0])
    return data, row_id


def pull_tuples(
    engine: Engine, plan: Plan, stats: Stats, tuples: str, progress: Callable[[int, int], None] | None = None
) -> tuple[QIData, np.ndarray]:
    """The distinct QI tuples of ``tuples`` (create_tuples) as a QIData whose rows stand
    for their row counts (``QIData.multiplicity``), positioned in the QIs' order, and each
    tuple's row id in that table."""
    decoder = decoder_of(plan, stats)
    qis = plan.qis
    ids: list[np.ndarray] = []
    counts: list[np.ndarray] = []
    parts: list[list[np.ndarray]] = [[] for _ in qis]
    done = 0
    for batch in engine.stream(pull_tuples_sql(plan, tuples, engine.row_id("s")), BATCH_ROWS):
        ids.append(to_numpy(batch.column(0), np.int64))
        counts.append(to_numpy(batch.column(1 + len(qis)), np.int64))
        for i in range(len(qis)):
            parts[i].append(decoder.column(batch, i))
        done += int(counts[-1].sum())
        if progress is not None:
            progress(done, stats.n_rows)
    if done != stats.n_rows:
        raise RuntimeError("the source table changed while it was being read")

    def joined(chunks: list[np.ndarray], dtype: type) -> np.ndarray:
        return np.concatenate(chunks) if chunks else np.zeros(0, dtype=dtype)

    columns = tuple(
        joined(parts[i], np.float64 if c.kind == "numeric" else np.int32) for i, c in enumerate(qis)
    )
    tuple_id = joined(ids, np.int64)
    data = decoder.data(columns, np.arange(len(tuple_id), dtype=np.int64))
    return dataclasses.replace(data, multiplicity=joined(counts, np.int64)), tuple_id


def _sensitive(columns: Sequence[Column], raw: list[list[pa.Array]]) -> Sensitive:
    """Each sensitive column as value codes 0 .. m - 1 in the values' order, NULL last (the
    order t-closeness ranks numeric values in), with each value's count."""
    import pyarrow.compute as pc

    codes, counts = [], []
    for parts in raw:
        values = pa.chunked_array(parts) if parts else pa.chunked_array([], pa.null())
        if pa.types.is_dictionary(values.type):
            values = values.cast(values.type.value_type)
        domain = pc.unique(values.drop_null())
        domain = domain.take(pc.sort_indices(domain)) if len(domain) else domain
        code = pc.index_in(values, value_set=domain).fill_null(len(domain))
        c = np.asarray(code.to_numpy(), dtype=np.int32) if code.num_chunks else np.zeros(0, dtype=np.int32)
        codes.append(c)
        counts.append(
            np.bincount(c, minlength=len(domain) + (1 if values.null_count else 0)).astype(np.int64)
        )
    return Sensitive(
        tuple(c.name for c in columns),
        tuple(codes),
        tuple(counts),
        tuple(c.kind == "numeric" for c in columns),
    )
