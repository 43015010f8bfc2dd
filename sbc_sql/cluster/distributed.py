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

With privacy criteria or per-column limits (:class:`BlockJob` carries the :class:`.Rule` and
the :class:`.Limits`; the rows carry their sensitive codes and target labels against the
whole table's counts, :class:`.decode.Coded`), each block is clustered exactly as the block
mode of one process clusters it, and the rows its blocks leave are placed as one process's
:func:`.sbca_plus.run.across_blocks` places them, but per group of consecutive blocks
(:func:`place_group`): the rows of a group are gathered with their classes, the rows left
are pooled and clustered again, then each joins the cheapest class of the group that keeps
the criteria and limits with it. Rounds of groups :data:`GROUP_GROWTH` times larger follow
for the rows still left (:func:`group_levels`), up to :data:`GROUP_ROWS` rows a group; the
rows left after the last are suppressed (``unplaced``). A class is named by the unit it was
made in (its ``origin``: a block, or a group of a round, :func:`origin`) and its number
there, so that ids stay unique over the table without the groups knowing of each other.

With t-closeness or beta-likeness the blocks are cut from the spread order one process
cuts them from (:mod:`.spread`) where the coarse order's blocks mostly fail the criteria as
a whole (:func:`coarse_keeps`, from the real blocks' counts per sensitive value): the
driver makes the order's :class:`.spread.Plan` from the sample, which then carries the rows'
sensitive codes (:func:`spread_plan`), the plan ships in the :class:`Cuts`, and every row's
keys in steps 1 to 3 are its keys in that order (:func:`.spread.keys`, from the row and the
plan alone); with the whole table as the sample, exactly one process's order. Each block
still clusters its rows in its own coarse order (:func:`cluster_block`).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from . import spread
from .blocks import block_bounds, coarse_keys, default_block_rows, lexsort
from .limits import Limits
from .model import SUPPRESSED, QIData
from .sbca_plus.run import across_blocks, block_algorithm
from .sensitive import REASON_CODES, Rule, Sensitive

#: rows sampled per block for the blocks' boundaries: block sizes then vary by about a
#: tenth (one over the square root), far from k at the default sizes (at least 160 k rows)
SAMPLE_PER_BLOCK = 100
#: the sample's seed: the same input and options give the same blocks
SEED = 20_240_601
#: blocks in a group of the first round that places the rows the blocks left: a group of
#: 8 blocks of the default 1,536 rows offers a left row about 60 classes (k = 3) near it in
#: the coarse order, where the cheapest ones are
GROUP_BLOCKS = 8
#: how many times more blocks each later round's groups hold than the last round's
GROUP_GROWTH = 8
#: the most rows a worker gathers for one group (a round whose groups would hold more is
#: not run): 262,144 rows of a dozen columns are some 30 MB of arrays, and placing their
#: left rows (compiled, one row against the classes near it) takes seconds, so a worker's
#: memory stays one group's whatever the table's size, and a left row is still offered the
#: classes of some 170 blocks around it before it is suppressed
GROUP_ROWS = 262_144


@dataclass(frozen=True)
class BlockJob:
    """What a worker needs to cluster its blocks (it pickles): k, the blocks' size, where a
    block's leftover rows go."""

    k: int
    block_rows: int | None = None
    leftover: str = "nearest"
    #: the criteria every class keeps, against the whole table's counts (None: k alone)
    rule: Rule | None = None
    #: the per-column limits every class keeps (None: none)
    limits: Limits | None = None
    #: W of the target (--target-weight), with the rows' target labels
    target_weight: float = 0.0
    #: (sensitive column, value code) whose rows are suppressed before clustering, their
    #: value forcing huge classes (:func:`rare_codes`)
    rare: tuple[tuple[int, int], ...] = ()

    @property
    def across(self) -> bool:
        """Whether the rows the blocks leave are placed across blocks (criteria or limits)."""
        return self.rule is not None or self.limits is not None

    @property
    def unplaced(self) -> int:
        """The reason code of a row no class takes (``unplaced``; ``limits`` for limits alone)."""
        return REASON_CODES["unplaced" if self.rule is not None else "limits"]

    @property
    def size(self) -> int:
        """Rows per block."""
        return self.block_rows or default_block_rows(self.k)

    def n_blocks(self, n_rows: int) -> int:
        return len(block_bounds(n_rows, self.k, self.size)) - 1


@dataclass(frozen=True)
class Clustered:
    """What an engine's workers say back to the driver once they clustered: the run's
    detail line and the rows suppressed per reason (:data:`.sensitive.REASONS`' names;
    empty on k alone)."""

    detail: str
    suppressed: Mapping[str, int] = dataclasses.field(default_factory=dict)


def sample_fraction(job: BlockJob, n_rows: int) -> float:
    """The share of rows to sample: :data:`SAMPLE_PER_BLOCK` rows per block, or every row
    (1.0) for a table of one block or small enough to take whole."""
    n_blocks = job.n_blocks(n_rows)
    if n_blocks <= 1:
        return 1.0
    return min(1.0, SAMPLE_PER_BLOCK * n_blocks / max(n_rows, 1))


def keys(data: QIData, plan: spread.Plan | None = None) -> list[np.ndarray]:
    """Each row's sort keys in the coarse order (np.lexsort's convention, the last
    primary), its position breaking ties: no two rows have equal keys. With a ``plan``, its
    keys in the spread order instead (:func:`.spread.keys`)."""
    if plan is not None:
        return spread.keys(data, plan)
    return [data.position.astype(np.int64, copy=False), *coarse_keys(data, workers=1)]


@dataclass(frozen=True)
class Cuts:
    """Where blocks 1 .. n - 1 start: the keys of each one's first row (one array per
    key, in :func:`keys`'s order), in the coarse order, or in the spread order of
    ``plan``."""

    keys: tuple[np.ndarray, ...]
    plan: spread.Plan | None = None

    @property
    def n_blocks(self) -> int:
        return 1 + (len(self.keys[0]) if self.keys else 0)


def cuts(job: BlockJob, sample: QIData, n_rows: int, plan: spread.Plan | None = None) -> Cuts:
    """The blocks' starts from a sample of the table's rows: the sample sorted (in the
    coarse order, or the spread order of ``plan``), each block's start taken at its share of
    the sample (the whole table as the sample gives block mode's own starts)."""
    bounds = block_bounds(n_rows, job.k, job.size)
    m = sample.n_rows
    if len(bounds) <= 2 or m == 0:
        return Cuts(())
    ks = keys(sample, plan)
    order = lexsort(ks)
    at = np.rint(bounds[1:-1] * (m / n_rows)).astype(np.int64)
    # a start at the sample's first row, or one repeated, would leave a block empty
    at = np.unique(at[(at > 0) & (at < m)])
    rows = order[at]
    return Cuts(tuple(k[rows] for k in ks), plan)


def block_ids(data: QIData, cut: Cuts) -> np.ndarray:
    """Each row's block: how many block starts come at or before it in the order the blocks
    are cut from (the coarse order, or the spread order of the cuts' plan)."""
    n = data.n_rows
    if not cut.keys or n == 0:
        return np.zeros(n, dtype=np.int32)
    ks = keys(data, cut.plan)
    c = len(cut.keys[0])
    merged = [np.concatenate([k, s.astype(k.dtype, copy=False)]) for k, s in zip(ks, cut.keys, strict=True)]
    # a start sorts before the row it is (equal keys): that row opens the block
    is_start = np.concatenate([np.zeros(n, dtype=np.int8), np.ones(c, dtype=np.int8)])
    order = lexsort([1 - is_start, *merged])
    starts_before = np.cumsum(is_start[order], dtype=np.int64)
    out = np.empty(n + c, dtype=np.int64)
    out[order] = starts_before
    return out[:n].astype(np.int32)


def spreads(job: BlockJob) -> bool:
    """Whether the blocks may be cut from the spread order (:mod:`.spread`): a criterion
    compares every class with the whole table. The sample then carries the rows'
    sensitive codes."""
    return job.rule is not None and job.rule.reads_input


def spread_plan(job: BlockJob, sample: QIData, n_rows: int) -> spread.Plan | None:
    """The spread order's plan (:func:`.spread.plan`) from the sample (with its sensitive
    codes), or None where it does not apply (the criteria, or the QIs' association)."""
    if job.n_blocks(n_rows) <= 1:
        return None
    return spread.plan(sample, n_rows, job.k, job.size, job.rule)


def coarse_keeps(
    job: BlockJob, sizes: np.ndarray, counts: Sequence[np.ndarray], sensitive: Sensitive
) -> bool:
    """Whether the coarse order serves (:data:`.spread.COARSE_KEEPS` of its blocks keep the
    criteria as a whole), from the real blocks' sizes and value counts (``counts[s]``: a
    (blocks, m_s) array of sensitive column s, counted in the workers): the statistic one
    process computes (:func:`.spread.spread_order`), exact, not estimated from the sample's
    few rows a block."""
    assert job.rule is not None
    return spread.keeping(list(counts), np.asarray(sizes), job.rule, sensitive) >= spread.COARSE_KEEPS


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


def cluster_block(job: BlockJob, data: QIData) -> tuple[np.ndarray, np.ndarray]:
    """One block's classes (ids 0 .., -1 suppressed), its rows in position order as block
    mode gives them (the block's own coarse order is the table's, restricted to its rows),
    and each row's reason code (0: placed; see .sensitive.REASONS): the rows of a rare value
    (:attr:`BlockJob.rare`) are left out first, and with criteria or limits a row the block
    left is ``unplaced`` until :func:`place_group` places it."""
    rank = np.empty(data.n_rows, dtype=np.int64)
    rank[lexsort(keys(data))] = np.arange(data.n_rows, dtype=np.int64)
    block = dataclasses.replace(data, coarse_rank=rank)
    labels = np.full(data.n_rows, SUPPRESSED, dtype=np.int64)
    reasons = np.zeros(data.n_rows, dtype=np.int32)
    rare = rare_rows(job, data)
    keep = np.flatnonzero(~rare)
    reasons[rare] = REASON_CODES["rare_value"]
    if len(keep):
        algorithm = block_algorithm(
            job.k, job.leftover, job.block_rows, None, job.rule, job.limits, job.target_weight
        )
        labels[keep] = np.asarray(algorithm(block.take(keep), job.k), dtype=np.int64)
    if job.across:
        reasons[(labels < 0) & ~rare] = job.unplaced
    return labels, reasons


def rare_rows(job: BlockJob, data: QIData) -> np.ndarray:
    """The rows whose sensitive value :attr:`BlockJob.rare` names."""
    rare = np.zeros(data.n_rows, dtype=bool)
    if job.rare and data.sensitive is not None:
        for s, v in job.rare:
            rare |= data.sensitive.codes[s] == v
    return rare


def rare_codes(rule: Rule, counts: Sequence[np.ndarray], k: int, budget: int) -> list[tuple[int, int, int]]:
    """:func:`.sensitive.rare_values` from the whole table's counts alone (the driver holds
    no rows): the values whose forced class size exceeds max(2 k, 32) rows, largest first,
    while their rows fit in ``budget``, a value's rows counted whole even where another
    column's chosen value holds some of them (on one sensitive column, the same choice).
    Returns (column, value code, forced size) of each."""
    limit = max(2 * k, 32)
    candidates: list[tuple[float, int, int]] = []
    for s, c in enumerate(counts):
        total = float(c.sum())
        p = c / total if total > 0 else c.astype(np.float64)
        forced = rule.forced_size(p)
        candidates.extend((float(forced[v]), s, int(v)) for v in np.nonzero(forced > limit)[0])
    used = 0
    chosen: list[tuple[int, int, int]] = []
    for forced_v, s, v in sorted(candidates, reverse=True):
        extra = int(counts[s][v])
        if used + extra > budget:
            continue
        used += extra
        chosen.append((s, v, int(forced_v)))
    return chosen


def group_levels(job: BlockJob, n_blocks: int, largest: int) -> list[int]:
    """The blocks per group of each round that places the rows the blocks left: first
    :data:`GROUP_BLOCKS`, then :data:`GROUP_GROWTH` times more each round, while a group of
    blocks of at most ``largest`` rows stays within :data:`GROUP_ROWS` rows (one block at
    least), until one group holds all ``n_blocks``. None without criteria or limits."""
    if not job.across or n_blocks == 0:
        return []
    cap = max(1, GROUP_ROWS // max(largest, 1))
    levels: list[int] = []
    f = GROUP_BLOCKS
    while True:
        blocks = min(f, cap)
        if levels and blocks <= levels[-1]:
            break
        levels.append(blocks)
        if blocks >= n_blocks:
            break
        f *= GROUP_GROWTH
    return levels


def origin(level: int, unit: int) -> int:
    """The unit a class was made in: a block at level 0, a group of round ``level`` after;
    in one int64, so that ordering origins orders blocks first, then each round's groups."""
    return (level << 32) | unit


def place_group(
    job: BlockJob, level: int, group: int, data: QIData, origins: np.ndarray, labels: np.ndarray
) -> tuple[np.ndarray, np.ndarray, int, int]:
    """The rows a group's blocks left placed (:func:`.sbca_plus.run.across_blocks`, as one
    process places a table's): ``data`` the group's rows in position order, but those of
    rare values; each row's class as (``origins``, ``labels``), -1 a row left. The classes
    are numbered within the group (order kept), and the ones made here are of origin
    (``level``, ``group``). Returns the new origins and labels, the rows clustered together
    and the rows placed in other classes."""
    member = labels >= 0
    pairs = np.stack([origins[member], labels[member]], axis=1)
    known, inverse = np.unique(pairs, axis=0, return_inverse=True)
    local = np.full(data.n_rows, SUPPRESSED, dtype=np.int64)
    local[member] = inverse.reshape(-1)
    pooled, rescued = across_blocks(
        data,
        job.k,
        local,
        job.rule,
        job.limits,
        leftover=job.leftover,
        block_rows=job.block_rows,
        target_weight=job.target_weight,
        workers=1,
    )
    n_known = len(known)
    out_origin = origins.copy()
    out_label = labels.copy()
    placed = ~member & (local >= 0)
    old = placed & (local < n_known)
    out_origin[old] = known[local[old], 0]
    out_label[old] = known[local[old], 1]
    new = placed & (local >= n_known)
    out_origin[new] = origin(level, group)
    out_label[new] = local[new] - n_known
    return out_origin, out_label, pooled, rescued


def offsets(classes: Mapping[int, int]) -> dict[int, int]:
    """Each block's (or origin's, :func:`origin`) first class id: the classes of the blocks
    before it, in block order (block mode's numbering)."""
    ordered = sorted(classes)
    starts = itertools.accumulate((classes[b] for b in ordered), initial=0)
    return dict(zip(ordered, starts, strict=False))
