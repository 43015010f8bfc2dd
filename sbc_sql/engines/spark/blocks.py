"""The default's block mode in Spark's workers: the rows never reach the driver.

The driver takes a seeded sample of the rows (:data:`..cluster.distributed.SAMPLE_PER_BLOCK`
per block) and cuts it into the blocks' starts. Then, in the workers, with ``mapInArrow``:

1. each batch of the pull's rows is decoded (category codes against the statistics'
   domains), keyed in the coarse order and given its block (:func:`key_batches`); the keyed
   rows are kept (memory, then disk) and counted per block, and blocks that sampling left
   below k rows are joined to a neighbour;
2. the rows are shuffled by block, sorted by block and row id, and each block is gathered
   from the stream and clustered (:func:`cluster_batches`): memory in a worker is one
   block's, whatever the table's size;
3. only (row id, block, class in the block) come back; each block's first class id comes
   from the blocks' counts of classes, and the labels are kept as a cached view the
   release's statements join.

The functions the workers run are this module's, imported there (sbc-sql must be installed
in the workers' Python, which also keeps the compiled kernels' cache), and take the
:class:`..cluster.decode.Decoder` and :class:`..cluster.distributed.BlockJob` as arguments.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ...arrays import to_numpy
from ...cluster import distributed
from ...cluster.distributed import BlockJob, Cuts

if TYPE_CHECKING:
    from ...cluster.decode import Decoder

#: rows per partition of the clustering's shuffle (a partition holds whole blocks, which
#: its task clusters one at a time)
PARTITION_ROWS = 100_000


def keyed_schema(decoder: Decoder) -> pa.Schema:
    """The keyed rows: block, row id, then each QI decoded (numbers, or category codes)."""
    qis = [
        pa.field(f"q{i}", pa.float64() if c.kind == "numeric" else pa.int32())
        for i, c in enumerate(decoder.qis)
    ]
    return pa.schema([pa.field("block", pa.int32()), pa.field("row_id", pa.int64()), *qis])


LABELS = pa.schema(
    [pa.field("row_id", pa.int64()), pa.field("block", pa.int32()), pa.field("label", pa.int64())]
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
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def cluster_batches(
    decoder: Decoder, job: BlockJob, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Each block of a partition sorted by block and row id, gathered from the stream and
    clustered (run in the workers)."""
    pending: list[pa.RecordBatch] = []
    current: int | None = None
    for batch in batches:
        if batch.num_rows == 0:
            continue
        block = to_numpy(batch.column(0), np.int32)
        changes = np.flatnonzero(np.diff(block)) + 1
        for start, end in zip([0, *changes], [*changes, len(block)], strict=True):
            b = int(block[start])
            if current is not None and b != current:
                yield _cluster(decoder, job, current, pending)
                pending = []
            current = b
            pending.append(batch.slice(start, end - start))
    if current is not None and pending:
        yield _cluster(decoder, job, current, pending)


def _cluster(decoder: Decoder, job: BlockJob, block: int, parts: list[pa.RecordBatch]) -> pa.RecordBatch:
    rows = pa.Table.from_batches(parts).combine_chunks()
    row_id = to_numpy(rows.column(1), np.int64)
    columns = tuple(
        to_numpy(rows.column(2 + i), np.float64 if c.kind == "numeric" else np.int32)
        for i, c in enumerate(decoder.qis)
    )
    labels = distributed.cluster_block(job, decoder.data(columns, row_id))
    return pa.RecordBatch.from_arrays(
        [
            pa.array(row_id, pa.int64()),
            pa.array(np.full(len(row_id), block, np.int32)),
            pa.array(labels, pa.int64()),
        ],
        schema=LABELS,
    )


def cluster(session: Any, frame: Any, decoder: Decoder, job: BlockJob, n_rows: int, name: str) -> str:
    """Cluster the rows of ``frame`` (the pull's query: row id, then the QIs) in blocks in the
    workers, and keep each row's class as the cached view ``name`` (row_id, eq_class).
    Returns the run's detail line."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    fraction = distributed.sample_fraction(job, n_rows)
    sampled = (
        frame
        if fraction >= 1.0
        else frame.sample(withReplacement=False, fraction=fraction, seed=distributed.SEED)
    )
    sample = decoder.frame(sampled.toArrow())
    cut = distributed.cuts(job, sample, n_rows)

    keyed_type = keyed_schema(decoder)
    keyed = frame.mapInArrow(functools.partial(key_batches, decoder, cut), spark_schema(keyed_type))
    keyed = keyed.persist(StorageLevel.MEMORY_AND_DISK)
    kept = [keyed]
    try:
        counts = {int(b): int(n) for b, n in keyed.groupBy("block").count().collect()}
        moved = distributed.joined(counts, job.k)
        if moved:
            remap = session.createDataFrame(list(moved.items()), "block int, joined int")
            keyed = keyed.join(F.broadcast(remap), "block", "left").select(
                F.coalesce("joined", "block").cast("int").alias("block"), *keyed_type.names[1:]
            )
        n_blocks = len(counts) - len(moved)
        parts = max(
            session.sparkContext.defaultParallelism, min(n_blocks, math.ceil(n_rows / PARTITION_ROWS))
        )
        labelled = (
            keyed.repartition(parts, "block")
            .sortWithinPartitions("block", "row_id")
            .mapInArrow(functools.partial(cluster_batches, decoder, job), spark_schema(LABELS))
            .persist(StorageLevel.MEMORY_AND_DISK)
        )
        kept.append(labelled)
        found = labelled.groupBy("block").agg(F.max(F.when(F.col("label") >= 0, F.col("label"))).alias("top"))
        classes = {int(b): (-1 if top is None else int(top)) + 1 for b, top in found.collect()}
        first = distributed.offsets(classes)
        starts = session.createDataFrame(list(first.items()), "block int, first long")
        labels = labelled.join(F.broadcast(starts), "block").select(
            "row_id",
            F.when(F.col("label") < 0, F.lit(-1))
            .otherwise(F.col("label") + F.col("first"))
            .cast("long")
            .alias("eq_class"),
        )
        labels.createOrReplaceTempView(f"`{name}`")
        session.sql(f"CACHE TABLE `{name}`")
    finally:
        for frame_kept in kept:
            frame_kept.unpersist()
    sizes = _sizes(counts, moved)
    sampled_how = "every row" if fraction >= 1.0 else f"a seeded sample of {sample.n_rows:,} rows"
    return (
        f"cluster-aware SBCA in {n_blocks:,} block(s) of {sizes} rows of the coarse order "
        f"(cut from {sampled_how}), {parts:,} Spark partition(s)"
    )


def _sizes(counts: dict[int, int], moved: dict[int, int]) -> str:
    merged: dict[int, int] = {}
    for b, n in counts.items():
        to = moved.get(b, b)
        merged[to] = merged.get(to, 0) + n
    lo, hi = min(merged.values(), default=0), max(merged.values(), default=0)
    return f"{lo:,}" if lo == hi else f"{lo:,} to {hi:,}"
