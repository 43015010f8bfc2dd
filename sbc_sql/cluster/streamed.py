"""Block mode a run of blocks at a time: the arrays' side of the streamed run
(:mod:`sbc_sql.stages.stream`), which holds a run of consecutive blocks in memory, never the
table.

The database sorts the rows in the coarse order (each row's keys, :func:`.distributed.keys`,
depend on the row and the table's ranges and cardinalities alone) and hands them back in that
order. The blocks are cut where :func:`.blocks.blocked` cuts them, at
:func:`.blocks.block_bounds` of the table's rows, so they are one process's blocks; the
blocks are grouped into runs of at most the rows the run may hold (:func:`runs`), and each
run is clustered here (:func:`cluster_run`): every block as one process's block mode clusters
it (:func:`.distributed.cluster_block`), and with criteria or per-column limits the rows its
blocks left are placed in rounds of groups of its consecutive blocks, as Spark's workers place
them (:func:`.distributed.place_group`, :func:`.distributed.group_levels`). Class ids are
numbered within the run in block order, each unit's after the units' before it, as
:func:`.blocks.blocked` numbers them; the caller adds the classes of the runs before.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from . import distributed
from .decode import Decoder
from .distributed import BlockJob
from .model import SUPPRESSED
from .sensitive import REASON_CODES


def runs(bounds: np.ndarray, held: int) -> list[tuple[int, int]]:
    """The blocks (cut at ``bounds``, :func:`.blocks.block_bounds`) grouped into runs of
    consecutive blocks of at most ``held`` rows in all, one block at least: (first block,
    block after the last) of each."""
    out: list[tuple[int, int]] = []
    n_blocks = len(bounds) - 1
    first = 0
    while first < n_blocks:
        last = first + 1
        while last < n_blocks and bounds[last + 1] - bounds[first] <= held:
            last += 1
        out.append((first, last))
        first = last
    return out


@dataclass(frozen=True)
class Rows:
    """A run's rows as the database sorted them: each row's id, its QI columns (numbers, or
    category codes) and the codes of the decoder's coded columns (:attr:`.decode.Decoder.extra`)."""

    row_id: np.ndarray
    columns: tuple[np.ndarray, ...]
    codes: tuple[np.ndarray, ...]

    def take(self, idx: np.ndarray) -> Rows:
        return Rows(self.row_id[idx], tuple(c[idx] for c in self.columns), tuple(c[idx] for c in self.codes))


@dataclass(frozen=True)
class Clustered:
    """A run's classes: each row's class id (numbered from 0 within the run; -1 none), in the
    order of the rows given, and the classes it numbered, with the rows left per reason code."""

    labels: np.ndarray
    n_classes: int
    reasons: np.ndarray


def cluster_run(
    job: BlockJob, decoder: Decoder, rows: Rows, starts: Sequence[int], workers: int = 1
) -> Clustered:
    """Cluster a run of blocks: ``rows`` in the coarse order, block b its rows from
    ``starts[b]`` to ``starts[b + 1]`` (the last to the end). Every block is clustered with its
    rows in position order, as block mode gives them to the algorithm; with criteria or limits
    the rows the blocks left are then placed in rounds of groups of the run's blocks."""
    cuts = [*starts, len(rows.row_id)]
    # each block's rows in position order (block mode's order within a block)
    order = np.concatenate(
        [a + np.argsort(rows.row_id[a:b], kind="stable") for a, b in itertools.pairwise(cuts)]
        or [np.zeros(0, dtype=np.int64)]
    )
    rows = rows.take(order)
    n = len(rows.row_id)
    origin = np.zeros(n, dtype=np.int64)
    label = np.full(n, SUPPRESSED, dtype=np.int64)
    reason = np.zeros(n, dtype=np.int32)

    def block(b: int) -> None:
        a, e = cuts[b], cuts[b + 1]
        part = rows.take(np.arange(a, e))
        labels, reasons = distributed.cluster_block(job, decoder.data(part.columns, part.row_id, part.codes))
        origin[a:e] = distributed.origin(0, b)
        label[a:e] = labels
        reason[a:e] = reasons

    n_blocks = len(cuts) - 1
    if workers <= 1 or n_blocks <= 1:
        for b in range(n_blocks):
            block(b)
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(block, range(n_blocks)))
    if job.across:
        _place(job, decoder, rows, cuts, origin, label, reason)
    ids, n_classes = _numbered(origin, label)
    back = np.empty(n, dtype=np.int64)
    back[order] = np.arange(n, dtype=np.int64)
    return Clustered(ids[back], n_classes, reason[back])


def _place(
    job: BlockJob,
    decoder: Decoder,
    rows: Rows,
    cuts: list[int],
    origin: np.ndarray,
    label: np.ndarray,
    reason: np.ndarray,
) -> None:
    """The rows the run's blocks left placed, in place: rounds of groups of
    :func:`.distributed.group_levels` consecutive blocks of the run, each group's rows in
    position order (but those of rare values), as Spark's workers place them."""
    sizes = np.diff(cuts)
    rare = REASON_CODES["rare_value"]
    block_of = np.repeat(np.arange(len(sizes)), sizes)
    levels = distributed.group_levels(job, len(sizes), int(sizes.max(initial=0)))
    for level, factor in enumerate(levels, start=1):
        left = (label < 0) & (reason != rare)
        if not left.any():
            break
        group_of = block_of // factor
        for g in np.unique(group_of[left]):
            idx = np.flatnonzero((group_of == g) & (reason != rare))
            idx = idx[np.argsort(rows.row_id[idx], kind="stable")]
            part = rows.take(idx)
            data = decoder.data(part.columns, part.row_id, part.codes)
            new_origin, new_label, _, _ = distributed.place_group(
                job, level, int(g), data, origin[idx], label[idx]
            )
            origin[idx], label[idx] = new_origin, new_label
        reason[label >= 0] = 0


def _numbered(origin: np.ndarray, label: np.ndarray) -> tuple[np.ndarray, int]:
    """Class ids from 0 over the run: each unit's (``origin``) after those of the units before
    it in origin order, its own in label order (:func:`.distributed.offsets`)."""
    member = label >= 0
    ids = np.full(len(label), SUPPRESSED, dtype=np.int64)
    if not member.any():
        return ids, 0
    units, unit_of = np.unique(origin[member], return_inverse=True)
    tops = np.zeros(len(units), dtype=np.int64)
    np.maximum.at(tops, unit_of, label[member] + 1)
    first = np.concatenate([[0], np.cumsum(tops)[:-1]])
    ids[member] = first[unit_of] + label[member]
    return ids, int(tops.sum())
