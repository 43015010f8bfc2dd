"""The default's block mode in Spark's workers: the rows never reach the driver.

The driver takes a seeded sample of the rows (:data:`..cluster.distributed.SAMPLE_PER_BLOCK`
per block) and cuts it into the blocks' starts. Then, in the workers, with ``mapInArrow``:

1. each batch of the pull's rows is decoded (category codes against the statistics'
   domains), keyed in the coarse order and given its block (:func:`key_batches`); the keyed
   rows are kept (memory, then disk) and counted per block, and blocks that sampling left
   below k rows are joined to a neighbour; with t-closeness or beta-likeness, where the
   blocks so cut mostly fail the criteria as a whole (counted per block and sensitive
   value), the keyed rows are given their blocks in the spread order instead
   (:func:`rekey_batches`, :mod:`..cluster.spread`), planned by the driver from the sample,
   which then carries the rows' sensitive codes;
2. the rows are shuffled by block, sorted by block and row id, and each block is gathered
   from the stream and clustered (:func:`cluster_batches`): memory in a worker is one
   block's, whatever the table's size;
3. with privacy criteria or per-column limits, the rows the blocks left are placed in rounds
   of groups of consecutive blocks (:func:`place_batches`,
   :func:`..cluster.distributed.place_group`): only the groups that hold such rows are
   shuffled, each gathered whole in one task, memory one group's (at most
   :data:`..cluster.distributed.GROUP_ROWS` rows); the rows still left after the last round
   are suppressed (``unplaced``);
4. each class's first id comes from the counts of classes of each block (and group), the
   labels are kept as a cached view the release's statements join, and the suppressed rows
   are counted per reason.

The sensitive columns and the target arrive as value codes against the whole table's sorted
values and counts, which the driver read with one aggregate per column and which ship in the
:class:`..cluster.decode.Decoder`: the driver holds the table's facts and a sample of its
QIs, never its rows.

The functions the workers run are this module's, imported there (sbc-sql must be installed
in the workers' Python, which also keeps the compiled kernels' cache), and take the
:class:`..cluster.decode.Decoder` and :class:`..cluster.distributed.BlockJob` as arguments.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ...arrays import to_numpy
from ...cluster import distributed
from ...cluster.distributed import BlockJob, Clustered, Cuts
from ...cluster.sensitive import REASON_CODES, REASONS
from ...cluster.spread import order_name

if TYPE_CHECKING:
    from ...cluster.decode import Decoder

#: rows per partition of the clustering's shuffle (a partition holds whole blocks, which
#: its task clusters one at a time)
PARTITION_ROWS = 100_000


def keyed_schema(decoder: Decoder) -> pa.Schema:
    """The keyed rows: block, row id, then each QI decoded (numbers, or category codes),
    then the codes of the sensitive columns and the target (:attr:`Decoder.extra`)."""
    qis = [
        pa.field(f"q{i}", pa.float64() if c.kind == "numeric" else pa.int32())
        for i, c in enumerate(decoder.qis)
    ]
    extra = [pa.field(f"s{j}", pa.int32()) for j in range(len(decoder.extra))]
    return pa.schema([pa.field("block", pa.int32()), pa.field("row_id", pa.int64()), *qis, *extra])


def labelled_schema(decoder: Decoder) -> pa.Schema:
    """The keyed rows with their class, (origin, label) (-1: none yet), and the reason code
    of a row without one."""
    return pa.schema(
        [
            *keyed_schema(decoder),
            pa.field("origin", pa.int64()),
            pa.field("label", pa.int64()),
            pa.field("reason", pa.int32()),
        ]
    )


def spark_schema(schema: pa.Schema) -> str:
    """A pyarrow schema as Spark's DDL string (the types used here)."""
    names = {pa.int32(): "int", pa.int64(): "long", pa.float64(): "double"}
    return ", ".join(f"`{f.name}` {names[f.type]}" for f in schema)


def key_batches(decoder: Decoder, cut: Cuts, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Each batch of the pull's rows decoded, with its rows' blocks (run in the workers)."""
    schema = keyed_schema(decoder)
    for batch in batches:
        if batch.num_rows == 0:
            continue
        data = decoder.frame(batch)
        block = distributed.block_ids(data, cut)
        arrays = [pa.array(block, pa.int32()), pa.array(data.position, pa.int64())]
        arrays += [pa.array(c) for c in data.columns]
        arrays += [pa.array(c, pa.int32()) for c in decoder.codes(batch)]
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def rekey_batches(decoder: Decoder, cut: Cuts, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Each batch of keyed rows given its block in the order of ``cut`` (the spread order:
    :func:`..cluster.distributed.block_ids` on the cut's plan; run in the workers)."""
    schema = keyed_schema(decoder)
    for batch in batches:
        if batch.num_rows == 0:
            continue
        row_id, columns, _ = _rows(decoder, batch)
        block = distributed.block_ids(decoder.data(columns, row_id), cut)
        arrays = [pa.array(block, pa.int32()), *batch.columns[1:]]
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def _units(
    key: Callable[[np.ndarray], np.ndarray], batches: Iterator[pa.RecordBatch]
) -> Iterator[tuple[int, pa.Table]]:
    """The rows of a partition sorted by unit (``key`` of the block column) gathered into one
    table per unit, one at a time."""
    pending: list[pa.RecordBatch] = []
    current: int | None = None
    for batch in batches:
        if batch.num_rows == 0:
            continue
        unit = key(to_numpy(batch.column(0), np.int32))
        changes = np.flatnonzero(np.diff(unit)) + 1
        for start, end in zip([0, *changes], [*changes, len(unit)], strict=True):
            u = int(unit[start])
            if current is not None and u != current:
                yield current, pa.Table.from_batches(pending).combine_chunks()
                pending = []
            current = u
            pending.append(batch.slice(start, end - start))
    if current is not None and pending:
        yield current, pa.Table.from_batches(pending).combine_chunks()


def _rows(
    decoder: Decoder, rows: pa.Table | pa.RecordBatch
) -> tuple[np.ndarray, tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """The row ids, the QI columns and the codes of keyed (or labelled) rows."""
    row_id = to_numpy(rows.column(1), np.int64)
    n = len(decoder.qis)
    columns = tuple(
        to_numpy(rows.column(2 + i), np.float64 if c.kind == "numeric" else np.int32)
        for i, c in enumerate(decoder.qis)
    )
    codes = tuple(to_numpy(rows.column(2 + n + j), np.int32) for j in range(len(decoder.extra)))
    return row_id, columns, codes


def _labelled(
    decoder: Decoder, rows: pa.Table, origin: np.ndarray, label: np.ndarray, reason: np.ndarray
) -> pa.RecordBatch:
    width = len(keyed_schema(decoder))
    arrays = [rows.column(i).combine_chunks() for i in range(width)]
    arrays += [pa.array(origin, pa.int64()), pa.array(label, pa.int64()), pa.array(reason, pa.int32())]
    return pa.RecordBatch.from_arrays(arrays, schema=labelled_schema(decoder))


def cluster_batches(
    decoder: Decoder, job: BlockJob, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Each block of a partition sorted by block and row id, gathered from the stream and
    clustered (run in the workers): its rows come back with their class in the block."""
    for block, rows in _units(lambda b: b, batches):
        row_id, columns, codes = _rows(decoder, rows)
        labels, reasons = distributed.cluster_block(job, decoder.data(columns, row_id, codes))
        origin = np.full(len(row_id), distributed.origin(0, block), np.int64)
        yield _labelled(decoder, rows, origin, labels, reasons)


def place_batches(
    decoder: Decoder, job: BlockJob, level: int, factor: int, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Each group of ``factor`` consecutive blocks of a partition sorted by group and row
    id, gathered from the stream, its left rows placed
    (:func:`..cluster.distributed.place_group`; run in the workers)."""
    n = len(keyed_schema(decoder))
    rare = REASON_CODES["rare_value"]
    for group, rows in _units(lambda b: b // factor, batches):
        row_id, columns, codes = _rows(decoder, rows)
        origin = to_numpy(rows.column(n), np.int64)
        label = to_numpy(rows.column(n + 1), np.int64)
        reason = to_numpy(rows.column(n + 2), np.int32).copy()
        active = np.flatnonzero(reason != rare)
        data = decoder.data(
            tuple(c[active] for c in columns), row_id[active], tuple(c[active] for c in codes)
        )
        new_origin, new_label, _, _ = distributed.place_group(
            job, level, group, data, origin[active], label[active]
        )
        origin, label = origin.copy(), label.copy()
        origin[active], label[active] = new_origin, new_label
        reason[label >= 0] = 0
        yield _labelled(decoder, rows, origin, label, reason)


def _parts(session: Any, units: int, n_rows: int) -> int:
    return max(
        1, min(units, max(int(session.sparkContext.defaultParallelism), math.ceil(n_rows / PARTITION_ROWS)))
    )


def cluster(session: Any, frame: Any, decoder: Decoder, job: BlockJob, n_rows: int, name: str) -> Clustered:
    """Cluster the rows of ``frame`` (the pull's query: row id, the QIs, then the coded
    columns of the decoder) in blocks in the workers, place the rows the blocks left with
    criteria or limits, and keep each row's class as the cached view ``name`` (row_id,
    eq_class). Returns the run's detail line and its suppressed rows per reason."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    fraction = distributed.sample_fraction(job, n_rows)
    # the sample's QIs alone reach the driver (at most SAMPLE_PER_BLOCK rows a block), with
    # their sensitive codes where the blocks may be cut from the spread order
    spreads = distributed.spreads(job) and bool(decoder.sensitive)
    width = 1 + len(decoder.qis) + (len(decoder.sensitive) if spreads else 0)
    columns = frame.select(*frame.columns[:width])
    sampled = (
        columns
        if fraction >= 1.0
        else columns.sample(withReplacement=False, fraction=fraction, seed=distributed.SEED)
    )
    sample = decoder.qis_only(sensitive=spreads).frame(sampled.toArrow())
    cut = distributed.cuts(job, sample, n_rows)

    keyed_type = keyed_schema(decoder)
    keyed = frame.mapInArrow(functools.partial(key_batches, decoder, cut), spark_schema(keyed_type))
    keyed = keyed.persist(StorageLevel.MEMORY_AND_DISK)
    kept = [keyed]
    done: list[str] = []
    try:
        counts = {int(b): int(n) for b, n in keyed.groupBy("block").count().collect()}
        plan = distributed.spread_plan(job, sample, n_rows) if spreads else None
        if plan is not None and not _coarse_keeps(keyed, decoder, job, counts):
            # the blocks of the coarse order fail the criteria: cut them from the spread
            # order instead (the keyed rows given their block there)
            cut = distributed.cuts(job, sample, n_rows, plan)
            coarse_keyed = keyed
            keyed = keyed.mapInArrow(
                functools.partial(rekey_batches, decoder, cut), spark_schema(keyed_type)
            ).persist(StorageLevel.MEMORY_AND_DISK)
            kept.append(keyed)
            counts = {int(b): int(n) for b, n in keyed.groupBy("block").count().collect()}
            coarse_keyed.unpersist()
        else:
            plan = None
        moved = distributed.joined(counts, job.k)
        if moved:
            remap = session.createDataFrame(list(moved.items()), "block int, joined int")
            keyed = keyed.join(F.broadcast(remap), "block", "left").select(
                F.coalesce("joined", "block").cast("int").alias("block"), *keyed_type.names[1:]
            )
        n_blocks = len(counts) - len(moved)
        parts = _parts(session, n_blocks, n_rows)
        labelled = (
            keyed.repartition(parts, "block")
            .sortWithinPartitions("block", "row_id")
            .mapInArrow(
                functools.partial(cluster_batches, decoder, job), spark_schema(labelled_schema(decoder))
            )
            .persist(StorageLevel.MEMORY_AND_DISK)
        )
        kept.append(labelled)
        merged = _merged(counts, moved)
        labelled, done = _place(session, labelled, decoder, job, merged, n_rows, kept)
        found = (
            labelled.where(F.col("label") >= 0).groupBy("origin").agg(F.max("label").alias("top")).collect()
        )
        first = distributed.offsets({int(o): int(top) + 1 for o, top in found})
        starts = session.createDataFrame(list(first.items()) or [(0, 0)], "origin long, first long")
        labels = labelled.join(F.broadcast(starts), "origin", "left").select(
            "row_id",
            F.when(F.col("label") < 0, F.lit(-1))
            .otherwise(F.col("label") + F.col("first"))
            .cast("long")
            .alias("eq_class"),
        )
        labels.createOrReplaceTempView(f"`{name}`")
        session.sql(f"CACHE TABLE `{name}`")
        suppressed = {
            REASONS[int(r)]: int(c)
            for r, c in labelled.where(F.col("label") < 0).groupBy("reason").count().collect()
            if job.across or job.rare
        }
    finally:
        for frame_kept in kept:
            frame_kept.unpersist()
    sizes = _sizes(merged)
    sampled_how = "every row" if fraction >= 1.0 else f"a seeded sample of {sample.n_rows:,} rows"
    detail = (
        f"cluster-aware SBCA in {n_blocks:,} block(s) of {sizes} rows of {order_name(plan is not None)} "
        f"(cut from {sampled_how}), {parts:,} Spark partition(s)"
    )
    return Clustered(detail + "".join(f"; {d}" for d in done), suppressed)


def _place(
    session: Any,
    labelled: Any,
    decoder: Decoder,
    job: BlockJob,
    merged: dict[int, int],
    n_rows: int,
    kept: list[Any],
) -> tuple[Any, list[str]]:
    """The rounds that place the rows the blocks left (:func:`place_batches`), in groups of
    :func:`..cluster.distributed.group_levels` blocks: only the groups that hold such rows
    are gathered, the others keep their rows as they are. Returns the labelled rows after
    the last round and what each round did."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    done: list[str] = []
    levels = distributed.group_levels(job, len(merged), max(merged.values(), default=0))
    rare = REASON_CODES["rare_value"]
    schema = spark_schema(labelled_schema(decoder))
    for level, factor in enumerate(levels, start=1):
        group = F.expr(f"block div {factor}").cast("int")
        left = labelled.where((F.col("label") < 0) & (F.col("reason") != rare))
        wanted = [int(g) for (g,) in left.select(group.alias("g")).distinct().collect()]
        if not wanted:
            break
        marks = session.createDataFrame([(g,) for g in wanted], "g int")
        marked = labelled.withColumn("g", group)
        inside = marked.join(F.broadcast(marks), "g", "left_semi").drop("g")
        outside = marked.join(F.broadcast(marks), "g", "left_anti").drop("g")
        placed = (
            inside.repartition(_parts(session, len(wanted), n_rows), group)
            .sortWithinPartitions(group, "row_id")
            .mapInArrow(functools.partial(place_batches, decoder, job, level, factor), schema)
        )
        before = left.count()
        previous = labelled
        labelled = outside.unionByName(placed).persist(StorageLevel.MEMORY_AND_DISK)
        kept.append(labelled)
        after = labelled.where((F.col("label") < 0) & (F.col("reason") != rare)).count()
        # the new rows are cached now: the last round's copy goes
        previous.unpersist()
        done.append(
            f"round {level}: {before - after:,} of {before:,} row(s) the blocks left placed in "
            f"{len(wanted):,} group(s) of {factor:,} block(s)"
        )
        if after == 0:
            break
    return labelled, done


def _coarse_keeps(keyed: Any, decoder: Decoder, job: BlockJob, counts: dict[int, int]) -> bool:
    """Whether the coarse order's blocks (``keyed``'s) keep the criteria well enough to cut
    from (:func:`..cluster.distributed.coarse_keeps`), from their rows counted per sensitive
    value in the workers: one aggregate per sensitive column, of (block, value) pairs."""
    index = {b: i for i, b in enumerate(sorted(counts))}
    sizes = np.array([counts[b] for b in sorted(counts)], dtype=np.int64)
    per_value = []
    for j, coded in enumerate(decoder.sensitive):
        table = np.zeros((len(index), len(coded.counts)), dtype=np.int64)
        for b, v, c in keyed.groupBy("block", f"s{j}").count().collect():
            table[index[int(b)], int(v)] = int(c)
        per_value.append(table)
    return distributed.coarse_keeps(job, sizes, per_value, decoder.facts())


def _merged(counts: dict[int, int], moved: dict[int, int]) -> dict[int, int]:
    merged: dict[int, int] = {}
    for b, n in counts.items():
        to = moved.get(b, b)
        merged[to] = merged.get(to, 0) + n
    return merged


def _sizes(merged: dict[int, int]) -> str:
    lo, hi = min(merged.values(), default=0), max(merged.values(), default=0)
    return f"{lo:,}" if lo == hi else f"{lo:,} to {hi:,}"
