"""Near-linear block mode: cluster bounded blocks of similar rows independently.

The exact greedy costs O(n^2 / k) distance evaluations: minutes at a million rows, hours at
ten million. Here the rows are ordered along a Hilbert curve over the normalized QIs, the
order is cut into consecutive blocks of at most ``block_size`` rows (each at least k), and
the exact algorithm runs inside each block, with the table's ranges and cardinalities but
the block's own contingency counts. Work is O(n * block_size / k), the blocks are
independent (threads, or later Spark partitions), and one block holding the whole table is
the exact algorithm.

Categorical axes of the curve follow the values' frequency rank by default (the two
orders compared in benchmarks/results/tuning.md).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed

import numpy as np

from ..errors import ResourceError
from .model import SUPPRESSED, QIData
from .sbca_plus import compiled

Algorithm = Callable[[QIData, int], np.ndarray]
Progress = Callable[[int, int], None]

DEFAULT_BLOCK_SIZE = 4096
#: rows the exact algorithm may take at k = 10 (choose_mode scales it with k): about half a
#: second of the paper's SBCA (benchmarks/results/tuning.md)
EXACT_THRESHOLD = 50_000
#: coarse_order: a categorical QI of at most this many values comes before the numerics (one
#: more value in a class costs at least 1/20 of the QI); the thresholds compared are in
#: benchmarks/results/tuning.md
COARSE_CARDINALITY = 20


# ---------------------------------------------------------------------------------------
# Ordering rows along a Hilbert curve
# ---------------------------------------------------------------------------------------


def _spread_table(d: int) -> np.ndarray:
    """For each byte, its bits moved to positions 0, d, 2d, ... (bit interleaving)."""
    out = np.zeros(256, dtype=np.uint64)
    for v in range(256):
        acc = 0
        for b in range(8):
            if v >> b & 1:
                acc |= 1 << (b * d)
        out[v] = acc if acc < (1 << 64) else 0
    return out


def _value_ranks(data: QIData, q: int, by: str) -> np.ndarray:
    """Each value's position on its curve axis.

    ``by="frequency"``: by descending count, ties by code (SBC's first categorical
    similarity: values with similar counts are similar). ``by="code"``: the code order.
    """
    card = max(int(data.cardinality[q]), 1)
    if by == "code":
        return np.arange(card, dtype=np.int64)
    if by != "frequency":
        raise ValueError(f"unknown categorical order {by!r}; use 'frequency' or 'code'")
    counts = np.bincount(np.asarray(data.columns[q], dtype=np.int64), minlength=card)
    rank = np.empty(card, dtype=np.int64)
    rank[np.lexsort((np.arange(card), -counts[:card]))] = np.arange(card)
    return rank


def _curve_dims(data: QIData) -> tuple[list[int], list[int]]:
    """Numeric and categorical QIs that can separate rows: weighted, and not constant."""
    nums = [q for q in range(data.n_qis) if data.numeric[q] and data.weights[q] != 0 and data.span(q) > 0]
    cats = [
        q
        for q in range(data.n_qis)
        if not data.numeric[q] and data.weights[q] != 0 and int(data.cardinality[q]) > 1
    ]
    return nums, cats


def curve_order(data: QIData, categorical_by: str = "frequency", workers: int | None = None) -> np.ndarray:
    """Row indices along a Hilbert curve over the QIs (ties by position: deterministic)."""
    num_q, cat_q = _curve_dims(data)
    if data.n_rows == 0 or not (num_q or cat_q):
        return _order_by(data, [])
    return _order_by(data, [curve_keys(data, num_q, cat_q, categorical_by, workers)])


def curve_keys(
    data: QIData,
    num_q: list[int],
    cat_q: list[int],
    categorical_by: str = "frequency",
    workers: int | None = None,
) -> np.ndarray:
    """Each row's Hilbert index over the given QIs (at most 64 axes; the first are kept)."""
    n = data.n_rows
    d = len(num_q) + len(cat_q)
    bits = _curve_bits(d)
    keep = 64 // bits
    num_q, cat_q = num_q[:keep], cat_q[: keep - len(num_q[:keep])]
    d = len(num_q) + len(cat_q)
    keys = np.empty(n, dtype=np.uint64)
    values = {**_curve_arrays(data, num_q, cat_q, categorical_by), "bits": bits, "spread": _spread_table(d)}
    values["keys"] = keys

    def chunk(bounds: tuple[int, int]) -> None:
        compiled.hilbert_keys({**values, "start": bounds[0], "end": bounds[1]})

    _parallel(chunk, _chunks(n, 1 << 16), workers)
    return keys


def _curve_bits(d: int) -> int:
    """Bits per axis of a curve over d axes (64 in all at most)."""
    return max(1, min(16, 64 // d))


def coarse_order(data: QIData, workers: int | None = None) -> np.ndarray:
    """Row indices in the cluster-aware SBCA's order: coarse categoricals, numerics, the rest.

    Categorical QIs of at most ``COARSE_CARDINALITY`` values come first, by ascending
    cardinality; then the numeric QIs, along a Hilbert curve when there are several; then
    the finer categoricals, by ascending cardinality; then position. The paper's sort order
    (``QIData.sort_order``) puts every categorical before the numerics, so the rows near a
    row in that order share even its 30- or 200-valued categories but not its numeric
    values; blocks cut from it, and partners taken from it, then pay wide numeric ranges
    to save categorical values that cost little each. With a ``coarse_rank`` (rows taken
    from a table whose order was computed) the order is read from it: the same order, as
    the keys are the table's.
    """
    if data.coarse_rank is not None:
        return np.argsort(data.coarse_rank, kind="stable")
    # np.lexsort's last key is the primary one
    return _order_by(data, coarse_keys(data, workers))


def coarse_keys(data: QIData, workers: int | None = None) -> list[np.ndarray]:
    """The sort keys of :func:`coarse_order`, np.lexsort's convention (the last primary),
    without the position that breaks ties. Every key is computed from the row's own values
    and the table's ranges and cardinalities, never from the other rows: rows keyed apart
    (in Spark's workers, say) compare as they would in one table."""
    cats = data.categorical_order()
    coarse_qs = [q for q in cats if data.cardinality[q] <= COARSE_CARDINALITY]
    coarse = _radix(coarse_qs, data)
    fine = _radix([q for q in cats if data.cardinality[q] > COARSE_CARDINALITY], data)
    num_q, _ = _curve_dims(data)
    numeric = [data.columns[q] for q in reversed(num_q)]
    if len(num_q) > 1:
        numeric = [curve_keys(data, num_q, [], workers=workers)]
        used = len(num_q) * _curve_bits(len(num_q))
        values = math.prod(max(int(data.cardinality[q]), 1) for q in coarse_qs)
        if len(coarse) == 1 and values <= (1 << (64 - used)):
            # one key: the coarse values above the curve's bits (the same order as the
            # coarse key before the curve's, in one comparison)
            numeric = [numeric[0] | (coarse.pop().astype(np.uint64) << np.uint64(used))]
    return fine + numeric + coarse


def _order_by(data: QIData, keys: list[np.ndarray]) -> np.ndarray:
    """Row indices sorted by ``keys`` (np.lexsort's convention), ties by position. The
    position is a key only where it is not already the row order."""
    if not keys:
        return np.argsort(data.position, kind="stable")
    if data.n_rows > 1 and not bool(np.all(data.position[1:] > data.position[:-1])):
        keys = [data.position] + keys
    return lexsort(keys)


def lexsort(keys: list[np.ndarray]) -> np.ndarray:
    """``np.lexsort(keys)`` (the last key primary), faster when that key has few ties.

    One stable argsort of the primary key, then a lexsort of only the rows in runs of an
    equal primary key, by the other keys within their run. At 10,000,000 rows whose
    primary key is the curve (few ties) that is about 2 s where np.lexsort's indirect
    passes take about 6 s; with ties on more than half the rows np.lexsort is used.
    """
    if len(keys) == 1:
        return np.argsort(keys[0], kind="stable")
    primary = keys[-1]
    order = np.argsort(primary, kind="stable")
    p = primary[order]
    tie = p[1:] == p[:-1]
    if p.dtype.kind == "f":
        # NULLs (NaN, sorted last) are equal to np.lexsort, though NaN != NaN: a run of them is tied
        tie |= np.isnan(p[1:]) & np.isnan(p[:-1])
    n_tied = int(np.count_nonzero(tie))
    if n_tied == 0:
        return order
    if 2 * n_tied > len(order):
        return np.lexsort(keys)
    in_run = np.zeros(len(order), dtype=np.bool_)
    in_run[1:] |= tie
    in_run[:-1] |= tie
    idx = np.flatnonzero(in_run)
    run = np.cumsum(np.concatenate(([True], ~tie)))[idx]
    rows = order[idx]
    order[idx] = rows[np.lexsort([k[rows] for k in keys[:-1]] + [run])]
    return order


def _radix(qs: list[int], data: QIData) -> list[np.ndarray]:
    """Keys ordering rows by the codes of ``qs`` (first QI first), for np.lexsort: one
    mixed-radix int64 when the cardinalities' product allows, else one key per QI."""
    if len(qs) < 2:
        return [data.columns[q] for q in qs]
    if math.prod(max(int(data.cardinality[q]), 1) for q in qs) >= 1 << 62:
        return [data.columns[q] for q in reversed(qs)]
    key = np.zeros(data.n_rows, dtype=np.int64)
    for q in qs:
        key *= max(int(data.cardinality[q]), 1)
        key += data.columns[q]
    return [key]


def stratified_order(order: np.ndarray, strata: np.ndarray) -> np.ndarray:
    """``order`` (row indices) interleaved by stratum, so that every stretch of it holds each
    stratum near its share of the rows: each row's place is its quantile among its own
    stratum's rows in ``order`` (ties: their place in ``order``). A stratum's rows keep their
    order, so a stretch still holds rows near each other in ``order`` within each stratum.

    Blocks cut from the coarse order sit far from the rows' distribution of a sensitive
    value that goes with the QIs; cut from this order, with the rows' sensitive values as
    the strata (:meth:`.sensitive.Sensitive.strata`), each block holds every value near its
    share in the rows, at the price of QI neighbours far apart (100,000 synthetic rows,
    t = 0.2: the first blocks cut so took the NCP from 14.85 % to 20.20 %), so they serve
    the rows the first blocks left (see :func:`.sbca_plus.run.pooled_strata`)."""
    n = len(order)
    if n == 0:
        return order
    s = np.asarray(strata)[order].astype(np.int64, copy=False)
    counts = np.bincount(s)
    grouped = np.argsort(s, kind="stable")
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    rank = np.empty(n, dtype=np.int64)
    rank[grouped] = np.arange(n, dtype=np.int64) - np.repeat(starts, counts)
    quantile = (rank + 0.5) / counts[s]
    return order[np.argsort(quantile, kind="stable")]


def with_coarse_rank(data: QIData, order: np.ndarray) -> QIData:
    """``data`` carrying each row's place in ``order``, its :func:`coarse_order` (see
    ``QIData.coarse_rank``)."""
    rank = np.empty(data.n_rows, dtype=np.int64)
    rank[order] = np.arange(data.n_rows, dtype=np.int64)
    return dataclasses.replace(data, coarse_rank=rank)


def _curve_arrays(data: QIData, num_q: list[int], cat_q: list[int], by: str) -> dict[str, np.ndarray]:
    """The curve's inputs as flat arrays, named as the kernel's arguments (:mod:`.sbca_plus.args`):
    numerics with their ranges (levels 0..2**bits-2 by value, NULL the top level of its
    own), codes with the ranks of their values (spread over all levels)."""
    n = data.n_rows
    nums = _stack([data.columns[q] for q in num_q], np.float64, n)
    lo = np.array([data.lo[q] for q in num_q], dtype=np.float64)
    span = np.array([data.span(q) for q in num_q], dtype=np.float64)
    cats = _stack([data.columns[q] for q in cat_q], np.int32, n)
    ranks = [_value_ranks(data, q, by) for q in cat_q]
    roff = np.concatenate([[0], np.cumsum([len(r) for r in ranks])]).astype(np.int64)
    rank = np.concatenate(ranks + [np.zeros(0, np.int64)]).astype(np.int64)
    card = np.array([max(int(data.cardinality[q]), 1) for q in cat_q], dtype=np.int64)
    return {"nums": nums, "lo": lo, "span": span, "cats": cats, "rank": rank, "roff": roff, "card": card}


def _stack(cols: list[np.ndarray], dtype: type, n: int) -> np.ndarray:
    out: np.ndarray = np.empty((len(cols), n), dtype=dtype)
    for j, c in enumerate(cols):
        out[j] = c
    return out


def _chunks(n: int, size: int) -> list[tuple[int, int]]:
    return [(a, min(a + size, n)) for a in range(0, n, size)]


def _parallel(fn: Callable, items: list, workers: int | None) -> None:
    """fn over items on threads (fn must release the GIL to gain anything)."""
    n_workers = max(1, workers if workers is not None else (os.cpu_count() or 1))
    if n_workers == 1 or len(items) <= 1:
        for it in items:
            fn(it)
        return
    with ThreadPoolExecutor(max_workers=n_workers) as pool:
        list(pool.map(fn, items))


# ---------------------------------------------------------------------------------------
# Blocks
# ---------------------------------------------------------------------------------------


def block_bounds(n_rows: int, k: int, block_size: int) -> np.ndarray:
    """Cut points of n_rows into near-equal consecutive blocks, each of at least k rows.

    Blocks hold at most max(block_size, 2k - 1) rows. Equal sizes rather than full blocks
    plus a remainder: no block is left small, and a table of at most block_size rows is a
    single block.
    """
    size = max(int(block_size), k, 1)
    n_blocks = max(1, -(-n_rows // size))
    n_blocks = min(n_blocks, max(1, n_rows // max(k, 1)))
    return np.linspace(0, n_rows, n_blocks + 1).round().astype(np.int64)


def make_blocks(
    data: QIData,
    k: int,
    block_size: int = DEFAULT_BLOCK_SIZE,
    categorical_by: str = "frequency",
    workers: int | None = None,
    order: np.ndarray | None = None,
) -> list[np.ndarray]:
    """Row indices of each block (ascending), consecutive stretches of the Hilbert order.

    ``categorical_by="sort"`` cuts SBCA's own sort order (categoricals by ascending
    cardinality, then numerics) instead of the curve, ``"coarse"`` the cluster-aware SBCA's
    order (:func:`coarse_order`); ``order``, when given, is that order already computed.
    """
    n = data.n_rows
    if n == 0:
        return []
    bounds = block_bounds(n, k, block_size)
    if len(bounds) == 2:
        return [np.arange(n, dtype=np.int64)]
    if order is None:
        order = block_order(data, categorical_by, workers)
    return [np.sort(order[a:b]) for a, b in itertools.pairwise(bounds)]


def block_order(data: QIData, categorical_by: str, workers: int | None = None) -> np.ndarray:
    """The row order blocks are cut from (see :func:`make_blocks`)."""
    if categorical_by == "sort":
        return data.sort_order()
    if categorical_by == "coarse":
        return coarse_order(data, workers)
    return curve_order(data, categorical_by, workers)


def blocked(
    data: QIData,
    k: int,
    algorithm: Algorithm,
    block_size: int = DEFAULT_BLOCK_SIZE,
    workers: int | None = None,
    progress: Progress | None = None,
    categorical_by: str = "frequency",
    stop: np.ndarray | None = None,
    strata: np.ndarray | None = None,
    cut_order: np.ndarray | None = None,
    coarse: np.ndarray | None = None,
) -> np.ndarray:
    """Cluster every block with ``algorithm(block_data, k)``; class ids unique over blocks.

    Class ids of block b are shifted by the number of ids used by blocks before it, so the
    labels depend only on the blocks, never on which thread finished first. The algorithm
    gets ``data.take(rows)`` (the table's ranges and cardinalities, the block's rows), which
    with ``categorical_by="coarse"`` carries each row's place in the table's order
    (``QIData.coarse_rank``), so a block's own coarse order is read rather than recomputed.
    Threads gain where the algorithm spends its time in code that releases the GIL (the
    SBCA+ kernels are ``nogil``).

    Ctrl-C (or a block that fails) cancels the blocks not yet started and sets ``stop``, the
    flag the kernels of an algorithm bound to it read (``sbca_plus(..., stop=stop)``), so
    the blocks running return at their next check instead of running on. With one worker
    the blocks run in this thread, where the kernels see Ctrl-C themselves (see
    :mod:`.sbca_plus.compiled`).

    With ``strata`` (one code per row; ``categorical_by="coarse"``) the blocks are cut from
    the coarse order interleaved by stratum (:func:`stratified_order`); each block still
    clusters its rows in the coarse order. ``cut_order`` (row indices; ``categorical_by="coarse"``)
    is the order to cut the blocks from instead, e.g. :func:`.spread.spread_order`'s;
    ``coarse`` the coarse order when already computed.
    """
    stop = np.zeros(1, dtype=np.bool_) if stop is None else stop
    order = None
    if categorical_by == "coarse" and data.n_rows > 0:
        order = coarse_order(data, workers) if coarse is None else coarse
        data = with_coarse_rank(data, order)
        if cut_order is not None:
            order = cut_order
        if strata is not None:
            order = stratified_order(order, strata)
    elif strata is not None or cut_order is not None:
        raise ValueError("strata and cut orders cut the coarse order only: give categorical_by='coarse'")
    blocks = make_blocks(data, k, block_size, categorical_by, workers, order)

    def run(rows: np.ndarray) -> np.ndarray:
        return np.asarray(algorithm(data.take(rows), k))

    n_workers = max(1, workers if workers is not None else (os.cpu_count() or 1))
    results: list[np.ndarray | None] = [None] * len(blocks)
    if n_workers == 1 or len(blocks) <= 1:
        for b, rows in enumerate(blocks):
            results[b] = run(rows)
            if progress is not None:
                progress(b + 1, len(blocks))
    else:
        with ThreadPoolExecutor(max_workers=n_workers) as pool:
            futures = {pool.submit(run, rows): b for b, rows in enumerate(blocks)}
            try:
                for done, fut in enumerate(as_completed(futures), start=1):
                    results[futures[fut]] = fut.result()
                    if progress is not None:
                        progress(done, len(blocks))
            except BaseException:
                stop[0] = True
                pool.shutdown(wait=True, cancel_futures=True)
                raise
    return _merge(data.n_rows, blocks, results)


def _merge(n: int, blocks: list[np.ndarray], results: list) -> np.ndarray:
    """One label array: block b's ids offset by the ids of blocks 0..b-1, in block order."""
    labels = np.full(n, SUPPRESSED, dtype=np.int64)
    offset = 0
    for rows, lab in zip(blocks, results, strict=True):
        lab = np.asarray(lab, dtype=np.int64)
        kept = lab != SUPPRESSED
        labels[rows[kept]] = lab[kept] + offset
        if kept.any():
            offset += int(lab[kept].max()) + 1
    return labels


# ---------------------------------------------------------------------------------------
# Choosing the mode, and what it will cost
# ---------------------------------------------------------------------------------------


def choose_mode(n_rows: int, k: int, exact_threshold: int = EXACT_THRESHOLD) -> str:
    """'exact' while the exact algorithm's work stays that of ``exact_threshold`` rows at
    k = 10, else 'blocks'.

    Exact work grows as n^2 / (2k) distance evaluations, so the row limit scales with
    sqrt(k / 10): 50,000 rows at k = 10 (about half a second here), 22,000 at k = 2,
    158,000 at k = 100. Above it, blocks bound the work per row.
    """
    limit = exact_threshold * math.sqrt(max(k, 1) / 10)
    return "exact" if n_rows <= limit else "blocks"


def estimate_memory(
    n_rows: int, n_qis: int, mode: str, block_size: int = DEFAULT_BLOCK_SIZE, workers: int | None = None
) -> int:
    """Bytes the clustering step needs on top of the input arrays, for refusing early.

    Exact: the prepared table, the sorted copy and the sparse pair counts (~24 bytes per
    row and QI) and per-row state (~64 bytes). Blocks: the prepared table and the curve
    keys over the whole table (~10 per row and QI, ~12 per row), plus one exact state per
    block in flight. Measured peaks above the input: 12.7 MB for 50,000 x 8 QIs exact
    (estimate 12.8), 93 MB for 1,000,000 x 8 in blocks on 2 threads (estimate 110).
    """
    if mode not in ("exact", "blocks"):
        raise ValueError(f"unknown mode {mode!r}; use 'exact' or 'blocks'")
    if mode == "exact":
        return _exact_bytes(n_rows, n_qis)
    n_workers = max(1, workers if workers is not None else (os.cpu_count() or 1))
    in_flight = min(n_rows, n_workers * max(block_size, 1))
    return n_rows * (10 * n_qis + 28) + _exact_bytes(in_flight, n_qis)


def _exact_bytes(n_rows: int, n_qis: int) -> int:
    return n_rows * (24 * n_qis + 64)


# ---------------------------------------------------------------------------------------
# Block sizing of the default (cluster-aware) SBCA, and the memory check before a run
# ---------------------------------------------------------------------------------------

#: block mode: rows per block of the default at small k, cut from SBCA+'s coarse order
#: (coarse_order); the sizes compared are in benchmarks/results/tuning.md
BLOCK_ROWS = 1536
#: refinement passes per block (further passes bought almost nothing: tuning.md)
BLOCK_PASSES = 1
#: ... and when the rows are distinct tuples standing for their rows: a class completed by a
#: tuple of several rows may stand for more than k, and a second pass moves such tuples out
#: where that pays (on Adult it turns a loss at k = 50 against clustering rows, 0.1218
#: against 0.1215, into a gain, 0.1204, and gains at every other k too)
TUPLE_BLOCK_PASSES = 2
#: ... and for the same reason more rounds of pairs of classes split anew than SBCA+'s
#: default (from k = 25 up, see sbca_plus.algorithm.RESPLIT_MIN_K): on Adult at k = 50, 8
#: rounds leave tuples at 11.28 % against 11.26 % for rows, 16 rounds take them to 11.22 %
#: (benchmarks/results/tuning.md)
TUPLE_BLOCK_ROUNDS = 16
#: larger k needs larger blocks (a block of b rows holds only b / k classes): at least this
#: many rows per unit of k
BLOCK_ROWS_PER_K = 160
#: in a block, a growing class chooses among up to this many rows: the whole block at
#: k <= 12, and at larger k a pool refilled from the whole block (SBCA+'s ``wide`` set)
BLOCK_POOL_ROWS = 2048


def default_block_rows(k: int) -> int:
    """Rows per block of the cluster-aware SBCA in block mode."""
    return max(BLOCK_ROWS, BLOCK_ROWS_PER_K * k)


def available_memory() -> int:
    """Bytes the system can still give this process (MemAvailable), or a large number."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 1 << 62


def check_memory(data: QIData, mode: str, workers: int | None) -> None:
    """Refuse, with a ResourceError that names the fix, a run that would not fit in memory."""
    need = estimate_memory(data.n_rows, data.n_qis, mode, workers=workers)
    have = available_memory()
    if need > have:
        hint = "use --mode blocks" if mode == "exact" else "use fewer --workers or fewer rows"
        raise ResourceError(
            f"clustering {data.n_rows} rows in {mode} mode needs about "
            f"{need / 2**30:.1f} GiB but {have / 2**30:.1f} GiB is available; "
            f"{hint}"
        )
