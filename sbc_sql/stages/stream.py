"""The streamed run: the default's block mode with this process's memory bounded by a run of
blocks (``--held-rows``), not by the table.

In one process, block mode pulls every row, sorts the rows in the coarse order and cuts them
into blocks. A table of more rows than a run may hold is clustered the same way with the
database doing the holding and the sorting:

1. the pull's rows stream through this process a batch at a time; each batch is decoded as
   one process decodes it (codes against the statistics' domains: :mod:`..cluster.decode`),
   given its sort keys in the coarse order (:func:`..cluster.distributed.keys`: from the row
   and the table's ranges and cardinalities alone) and appended to a working table of a second
   connection to the database (:meth:`Engine.companion`: one connection cannot read a query
   while it writes another's rows);
2. that connection sorts the keyed rows (the engine spills to disk beyond its memory limit,
   ``--memory-limit`` on DuckDB) and streams them back in the coarse order, where the blocks
   are cut at :func:`..cluster.blocks.block_bounds` of the table's rows: one process's own
   blocks;
3. a run of consecutive blocks of at most ``held`` rows at a time is clustered
   (:func:`..cluster.streamed.cluster_run`, on the run's threads) and its rows' classes are
   appended to the run's labels table on the first connection (row_id, eq_class; -1 a row no
   class took), which the publish step joins to the source as it joins the labels Spark's
   workers make.

The write and the checks stay in SQL over the engine's tables. Both working tables are
temporary tables: the keyed rows go with the second connection, the labels with the run, and
an interrupted run leaves neither.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator, Mapping

import numpy as np
import pyarrow as pa
from sqlglot import exp

from ..arrays import to_numpy
from ..cluster import distributed, spread, streamed
from ..cluster.blocks import block_bounds
from ..cluster.decode import Decoder
from ..cluster.distributed import BlockJob, Clustered, Cuts
from ..cluster.sensitive import REASONS
from ..engines.base import Engine
from ..plan import Plan
from ..sql.templates import render
from .pull import BATCH_ROWS, pull_sql
from .write import value_sets

#: the top bit of a 64-bit key: flipping it turns an unsigned key into a signed one of the
#: same order (a database may have no unsigned 64-bit type)
_TOP = np.uint64(1 << 63)

Progress = Callable[[int, int], None]


def key_columns(data_keys: list[np.ndarray]) -> list[np.ndarray]:
    """The coarse order's keys (np.lexsort's convention, the last primary) as columns every
    engine stores and orders as numpy does: unsigned keys made signed in the same order."""
    out = []
    for key in data_keys:
        if key.dtype == np.uint64:
            key = (key ^ _TOP).view(np.int64)
        out.append(key)
    return out


class Keying:
    """What keys the pull's rows, batch by batch: the coarse order's keys, and where the
    blocks may be cut from the spread order (t-closeness, beta-likeness:
    :func:`..cluster.distributed.spreads`), the spread order's keys of ``plan`` too, with the
    rows counted per block of the coarse order (cut at ``cut``, from the sample) and
    sensitive value, from which :func:`..cluster.distributed.coarse_keeps` decides the order
    as Spark's workers decide it."""

    def __init__(self, decoder: Decoder, plan: spread.Plan | None = None, cut: Cuts | None = None) -> None:
        self.decoder = decoder
        self.plan = plan
        self.cut = cut
        n_blocks = cut.n_blocks if cut is not None else 1
        #: rows per coarse block, and per (coarse block, value) of each sensitive column
        self.sizes = np.zeros(n_blocks, dtype=np.int64)
        self.counts = [np.zeros((n_blocks, len(c.counts)), dtype=np.int64) for c in decoder.sensitive]
        self.n_keys = 0
        self.n_spread = 0

    def batch(self, batch: pa.RecordBatch) -> pa.Table:
        """A batch of the pull's rows decoded and keyed: k0 .. (the coarse order's keys, the
        primary last), p0 .. (the spread order's, with a plan), row_id, q0 .. (the QIs:
        numbers, or category codes), s0 .. (the codes of the decoder's coded columns)."""
        data = self.decoder.frame(batch)
        keys = key_columns(distributed.keys(data)[1:])
        spread_keys: list[np.ndarray] = []
        if self.plan is not None and self.cut is not None:
            spread_keys = key_columns(spread.keys(data, self.plan)[1:])
            block = distributed.block_ids(data, self.cut).astype(np.int64)
            self.sizes += np.bincount(block, minlength=len(self.sizes))
            assert data.sensitive is not None
            for counts, values in zip(self.counts, data.sensitive.codes, strict=True):
                m = counts.shape[1]
                counts += np.bincount(block * m + values, minlength=counts.size).reshape(counts.shape)
        self.n_keys, self.n_spread = len(keys), len(spread_keys)
        codes = self.decoder.codes(batch)
        names = [f"k{i}" for i in range(len(keys))] + [f"p{i}" for i in range(len(spread_keys))]
        names += ["row_id"] + [f"q{i}" for i in range(len(data.columns))]
        names += [f"s{j}" for j in range(len(codes))]
        arrays = [*keys, *spread_keys, data.position.astype(np.int64, copy=False), *data.columns, *codes]
        return pa.table([pa.array(a) for a in arrays], names=names)

    def spreads(self, job: BlockJob) -> bool:
        """Whether the blocks are cut from the spread order: a plan, and the coarse order's
        blocks mostly fail the criteria as a whole."""
        if self.plan is None:
            return False
        held = self.sizes > 0  # every block holds its sampled first row; none is weighed empty
        counts = [c[held] for c in self.counts]
        return not distributed.coarse_keeps(job, self.sizes[held], counts, self.decoder.facts())

    def order(self, job: BlockJob) -> list[str]:
        """The key columns the rows are sorted by, the primary first."""
        if self.spreads(job):
            return [f"p{i}" for i in reversed(range(self.n_spread))]
        return [f"k{i}" for i in reversed(range(self.n_keys))]


def sorted_sql(keyed: str, order: list[str], decoder: Decoder) -> exp.Expression:
    """The keyed rows back in the order the blocks are cut from (``order``: key columns, the
    primary first): row_id, the QIs, the codes."""
    columns = ["row_id"] + [f"q{i}" for i in range(len(decoder.qis))]
    columns += [f"s{j}" for j in range(len(decoder.extra))]
    return render("stream_sorted", keyed=keyed, column=columns, key=order)


#: the most rows of the sample the spread order is planned from (t-closeness,
#: beta-likeness): :data:`..cluster.distributed.SAMPLE_PER_BLOCK` a block up to this many
SAMPLE_ROWS = 1_000_000


def sample_sql(plan: Plan, row_id: exp.Expression, decoder: Decoder) -> exp.Expression:
    """Every ``$every``-th row of the pull by row id: its row id, QIs and sensitive columns."""
    sensitive = tuple(c.column for c in decoder.sensitive)
    return render("pull_sample", rows=pull_sql(plan, row_id, sensitive))


def sampled(engine: Engine, plan: Plan, decoder: Decoder, job: BlockJob, n_rows: int) -> Keying:
    """The keying of a run whose blocks may be cut from the spread order: a sample of the
    rows (every few by row id, the engine filtering) plans the spread order and cuts the
    coarse order's blocks for counting (as Spark's driver plans them); else the coarse order
    alone."""
    if not (distributed.spreads(job) and decoder.sensitive and job.n_blocks(n_rows) > 1):
        return Keying(decoder)
    want = min(SAMPLE_ROWS, distributed.SAMPLE_PER_BLOCK * job.n_blocks(n_rows))
    every = max(1, n_rows // max(want, 1))
    with_sensitive = decoder.qis_only(sensitive=True)
    query = sample_sql(plan, engine.row_id("s"), decoder)
    batches = list(engine.stream(query, BATCH_ROWS, {"every": every}))
    if not batches or not sum(b.num_rows for b in batches):
        return Keying(decoder)
    sample = with_sensitive.frame(pa.Table.from_batches(batches))
    found = distributed.spread_plan(job, sample, n_rows)
    if found is None:
        return Keying(decoder)
    return Keying(decoder, found, distributed.cuts(job, sample, n_rows))


def sets_name(labels: str) -> str:
    """The table of the classes' value sets a streamed run keeps beside its labels."""
    return f"{labels}_sets"


def cluster(
    engine: Engine,
    plan: Plan,
    decoder: Decoder,
    job: BlockJob,
    n_rows: int,
    name: str,
    *,
    held: int,
    workers: int = 1,
    domains: Mapping[str, pa.Array] | None = None,
    timings: dict[str, float] | None = None,
    progress: Progress | None = None,
) -> Clustered:
    """Cluster the plan's rows in the default's blocks, a run of blocks of at most ``held``
    rows at a time, and keep each row's class as the temporary table ``name`` (row_id,
    eq_class) of ``engine``'s connection (dropped with :meth:`Engine.discard`). With the
    categorical QIs' ``domains`` (where :func:`.write.sets_beside` says so), each run's
    classes' value sets too, made from its value codes as :func:`.write.value_sets` makes
    them, as the table :func:`sets_name` (a class never spans two runs). Returns the run's
    detail line and the rows suppressed per reason; ``timings`` gets the seconds of the pull
    (reading and keying the rows) and of the clustering (the sort, and the runs; the value
    sets are the write's)."""
    timings = timings if timings is not None else {}
    bounds = block_bounds(n_rows, job.k, job.size)
    plan_runs = streamed.runs(bounds, held)
    keyed = f"sbc_keyed_{secrets.token_hex(4)}"
    # a batch read holds no more rows than a run of blocks
    batch_rows = max(1, min(BATCH_ROWS, held))
    reasons: dict[int, int] = {}
    made = False
    try:
        with engine.companion() as side:
            t = time.perf_counter()
            keying = sampled(engine, plan, decoder, job, n_rows)
            rows = pull_sql(plan, engine.row_id("s"), decoder.extra_columns)
            for batch in engine.stream(rows, batch_rows):
                if batch.num_rows:
                    side.append(keyed, keying.batch(batch))
            order = keying.order(job)
            timings["pull"] = timings.get("pull", 0.0) + time.perf_counter() - t
            t = time.perf_counter()
            offset = 0
            done = 0
            back = side.stream(sorted_sql(keyed, order, decoder), batch_rows)
            for (first, last), part in zip(plan_runs, _runs_of(back, bounds, plan_runs), strict=True):
                starts = [int(bounds[b] - bounds[first]) for b in range(first, last)]
                rows_of = _rows(decoder, part)
                got = streamed.cluster_run(job, decoder, rows_of, starts, workers)
                ids = np.where(got.labels >= 0, got.labels + offset, -1)
                offset += got.n_classes
                left = got.labels < 0
                if left.any() and (job.across or job.rare):
                    for code, count in zip(*np.unique(got.reasons[left], return_counts=True), strict=True):
                        reasons[int(code)] = reasons.get(int(code), 0) + int(count)
                engine.append(name, pa.table({"row_id": rows_of.row_id, "eq_class": ids}))
                made = True
                if domains is not None:
                    t_sets = time.perf_counter()
                    data = decoder.data(rows_of.columns, rows_of.row_id)
                    engine.append(sets_name(name), _plain(value_sets(data, ids, domains, plan)))
                    timings["write"] = timings.get("write", 0.0) + time.perf_counter() - t_sets
                    t += time.perf_counter() - t_sets
                done += len(ids)
                if progress is not None:
                    progress(done, n_rows)
            timings["cluster"] = timings.get("cluster", 0.0) + time.perf_counter() - t
    except BaseException:
        if made:
            engine.discard(name)
            if domains is not None:
                engine.discard(sets_name(name))
        raise
    sizes = np.diff(bounds)
    lo, hi = (int(sizes.min()), int(sizes.max())) if len(sizes) else (0, 0)
    size = f"{lo:,}" if lo == hi else f"{lo:,} to {hi:,}"
    detail = (
        f"cluster-aware SBCA in {len(sizes):,} block(s) of {size} rows of "
        f"{spread.order_name(order[0].startswith('p'))}, "
        f"streamed from the database in {len(plan_runs):,} run(s) of at most {held:,} rows, "
        f"{workers} worker(s)"
    )
    return Clustered(detail, {REASONS[c]: n for c, n in reasons.items()})


def _runs_of(
    batches: Iterator[pa.RecordBatch], bounds: np.ndarray, plan_runs: list[tuple[int, int]]
) -> Iterator[pa.Table]:
    """The sorted rows gathered into one table per run of blocks, one run at a time."""
    pending: list[pa.RecordBatch] = []
    have = 0
    it = iter(plan_runs)
    want = next(it, None)
    for batch in batches:
        while batch.num_rows:
            if want is None:
                raise RuntimeError("the source table grew while it was being read")
            size = int(bounds[want[1]] - bounds[want[0]])
            take = min(size - have, batch.num_rows)
            pending.append(batch.slice(0, take))
            have += take
            batch = batch.slice(take)
            if have == size:
                yield pa.Table.from_batches(pending).combine_chunks()
                pending, have = [], 0
                want = next(it, None)
    if want is not None:
        raise RuntimeError("the source table changed while it was being read")


def _plain(sets: pa.Table) -> pa.Table:
    """Value sets with their values decoded from the domain's codes: rows appended to a
    table keep the column's own type."""
    columns = []
    for column in sets.columns:
        array = column.combine_chunks()
        if pa.types.is_large_list(array.type) and pa.types.is_dictionary(array.type.value_type):
            array = pa.LargeListArray.from_arrays(array.offsets, array.values.dictionary_decode())
        columns.append(array)
    return pa.Table.from_arrays(columns, names=sets.column_names)


def _rows(decoder: Decoder, table: pa.Table) -> streamed.Rows:
    n = len(decoder.qis)
    columns = tuple(
        to_numpy(table.column(1 + i), np.float64 if c.kind == "numeric" else np.int32)
        for i, c in enumerate(decoder.qis)
    )
    codes = tuple(to_numpy(table.column(1 + n + j), np.int32) for j in range(len(decoder.extra)))
    return streamed.Rows(to_numpy(table.column(0), np.int64), columns, codes)
