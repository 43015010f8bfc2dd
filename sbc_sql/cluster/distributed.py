"""Block mode cut apart, for an engine that clusters in workers of its own (Spark).

In one process, :func:`.blocks.blocked` sorts the whole table in the cluster-aware SBCA's
coarse order and cuts it into consecutive blocks of near-equal size. Spread over workers the
table is never in one place, so the same blocks are found in three steps:

1. every row gets its sort keys where it is (:func:`keys`): the coarse order's keys, which
   depend only on the row and the table's ranges and cardinalities, and its position last;
2. the driver sorts a seeded sample of the rows and takes the keys of the rows where the
   blocks would start (:func:`cuts`): with the whole table as the sample (small tables),
   exactly the rows where :func:`.blocks.make_blocks` starts them;
3. every row's block is the number of block starts at or before it (:func:`block_ids`).

The workers then gather each block's rows and cluster them (:func:`cluster_block`) with the
same algorithm, on the same rows and in the same order as block mode gives it, so the same
blocks give the same classes. Blocks that sampling leaves below k rows are joined to a
neighbour first (:func:`joined`). Only (row id, block, class in the block) leave a block;
class ids are made unique over the table from each block's count of classes, in block order,
as :func:`.blocks.blocked` numbers them.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .blocks import block_bounds, coarse_keys, default_block_rows, lexsort
from .model import QIData
from .sbca_plus.run import block_algorithm

#: rows sampled per block for the blocks' boundaries: block sizes then vary by about a
#: tenth (one over the square root), far from k at the default sizes (at least 160 k rows)
SAMPLE_PER_BLOCK = 100
#: the sample's seed: the same input and options give the same blocks
SEED = 20_240_601


@dataclass(frozen=True)
class BlockJob:
    """What a worker needs to cluster its blocks (it pickles): k, the blocks' size, where a
    block's leftover rows go."""

    k: int
    block_rows: int | None = None
    leftover: str = "nearest"

    @property
    def size(self) -> int:
        """Rows per block."""
        return self.block_rows or default_block_rows(self.k)

    def n_blocks(self, n_rows: int) -> int:
        return len(block_bounds(n_rows, self.k, self.size)) - 1


def sample_fraction(job: BlockJob, n_rows: int) -> float:
    """The share of rows to sample: :data:`SAMPLE_PER_BLOCK` rows per block, or every row
    (1.0) for a table of one block or small enough to take whole."""
    n_blocks = job.n_blocks(n_rows)
    if n_blocks <= 1:
        return 1.0
    return min(1.0, SAMPLE_PER_BLOCK * n_blocks / max(n_rows, 1))


def keys(data: QIData) -> list[np.ndarray]:
    """Each row's sort keys in the coarse order (np.lexsort's convention, the last
    primary), its position breaking ties: no two rows have equal keys."""
    return [data.position.astype(np.int64, copy=False), *coarse_keys(data, workers=1)]


@dataclass(frozen=True)
class Cuts:
    """Where blocks 1 .. n - 1 start: the keys of each one's first row (one array per
    key, in :func:`keys`'s order)."""

    keys: tuple[np.ndarray, ...]

    @property
    def n_blocks(self) -> int:
        return 1 + (len(self.keys[0]) if self.keys else 0)


def cuts(job: BlockJob, sample: QIData, n_rows: int) -> Cuts:
    """The blocks' starts from a sample of the table's rows: the sample sorted, each block's
    start taken at its share of the sample (the whole table as the sample gives block
    mode's own starts)."""
    bounds = block_bounds(n_rows, job.k, job.size)
    m = sample.n_rows
    if len(bounds) <= 2 or m == 0:
        return Cuts(())
    ks = keys(sample)
    order = lexsort(ks)
    at = np.rint(bounds[1:-1] * (m / n_rows)).astype(np.int64)
    # a start at the sample's first row, or one repeated, would leave a block empty
    at = np.unique(at[(at > 0) & (at < m)])
    rows = order[at]
    return Cuts(tuple(k[rows] for k in ks))


def block_ids(data: QIData, cut: Cuts) -> np.ndarray:
    """Each row's block: how many block starts come at or before it in the coarse order."""
    n = data.n_rows
    if not cut.keys or n == 0:
        return np.zeros(n, dtype=np.int32)
    ks = keys(data)
    c = len(cut.keys[0])
    merged = [np.concatenate([k, s.astype(k.dtype, copy=False)]) for k, s in zip(ks, cut.keys, strict=True)]
    # a start sorts before the row it is (equal keys): that row opens the block
    is_start = np.concatenate([np.zeros(n, dtype=np.int8), np.ones(c, dtype=np.int8)])
    order = lexsort([1 - is_start, *merged])
    starts_before = np.cumsum(is_start[order], dtype=np.int64)
    out = np.empty(n + c, dtype=np.int64)
    out[order] = starts_before
    return out[:n].astype(np.int32)


def joined(counts: Mapping[int, int], k: int) -> dict[int, int]:
    """Blocks of fewer than k rows joined with their neighbours: a block short of k takes in
    the blocks after it until the group holds k rows, and a last group short of k joins the
    group before it. Returns {block: the group's first block} for the blocks that move,
    empty when every block holds k rows."""
    if all(n >= k for n in counts.values()):
        return {}
    out: dict[int, int] = {}
    ordered = sorted(counts)
    groups: list[list[int]] = []
    size = 0
    for b in ordered:
        if groups and size < k:
            groups[-1].append(b)
            size += counts[b]
        else:
            groups.append([b])
            size = counts[b]
    if len(groups) > 1 and size < k:
        groups[-2].extend(groups.pop())
    for group in groups:
        for b in group[1:]:
            out[b] = group[0]
    return out


def cluster_block(job: BlockJob, data: QIData) -> np.ndarray:
    """One block's classes (ids 0 ..), its rows in position order as block mode gives
    them: the block's own coarse order is the table's, restricted to its rows."""
    rank = np.empty(data.n_rows, dtype=np.int64)
    rank[lexsort(keys(data))] = np.arange(data.n_rows, dtype=np.int64)
    block = dataclasses.replace(data, coarse_rank=rank)
    algorithm = block_algorithm(job.k, job.leftover, job.block_rows)
    return np.asarray(algorithm(block, job.k), dtype=np.int64)


def offsets(classes: Mapping[int, int]) -> dict[int, int]:
    """Each block's first class id: the classes of the blocks before it, in block order
    (block mode's numbering)."""
    ordered = sorted(classes)
    starts = itertools.accumulate((classes[b] for b in ordered), initial=0)
    return dict(zip(ordered, starts, strict=False))
