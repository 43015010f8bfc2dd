"""Rows that block mode's blocks could not place under the privacy criteria or the
per-column limits, placed across blocks: each joins, of the table's classes that keep the
criteria and the limits with it, the one whose information loss grows least, and stays
suppressed when none does.

A block keeps the criteria on its own rows; a row whose sensitive value its block lacks the
company for may still fit a class of another block. The placement itself is compiled
(:func:`.sbca_plus.algorithm.place_rows`: each row prices every class it is offered and
checks the criteria on them cheapest first, the classes' summaries kept as rows join). Above
:data:`NEAR_CLASSES` classes the rows are offered their neighbours' classes first: the rows
left are cut into stretches of ``2 x NEAR_ROWS`` places of the table's coarse order, and the
rows of a stretch are offered the classes that start in it or within :data:`NEAR_ROWS`
places of it (their QI neighbours, where the cheapest classes are). The rows none of those
take are offered the classes of stretches four times as long, and so on up to every class
of the table, so a row stays suppressed only when no class of the table keeps the criteria
with it. Work grows with the rows left times the classes near them, not times every class.
"""

from __future__ import annotations

import numpy as np

from .blocks import coarse_order
from .limits import Limits
from .model import SUPPRESSED, QIData
from .sbca_plus.algorithm import place_rows
from .sensitive import Rule

#: classes above which rows are offered their neighbours' classes first
NEAR_CLASSES = 4096
#: places each side, in the coarse order, of the classes offered first
#: (1,000,000 synthetic rows, t = 0.2, 37,422 rows to place: 31.7 s at 2,048, 46.2 s at
#: 16,384, NCP 12.37 % against 12.23 %)
NEAR_ROWS = 2048
#: how much longer each round's stretches are than the last one's
GROWTH = 4


def rescue(data: QIData, labels: np.ndarray, rule: Rule | None, limits: Limits | None = None) -> int:
    """Place the rows labelled ``SUPPRESSED`` in ``labels`` (in place) where ``rule`` (None:
    no criteria) and ``limits`` hold with them, each into the class of least NCP increase
    among those that do (ties: lower class id), in row order; returns how many were placed.
    Every class of ``labels`` keeps ``rule`` and ``limits`` and does after."""
    if rule is not None and not rule.active:
        rule = None
    if (rule is not None and data.sensitive is None) or not (labels >= 0).any():
        return 0
    before = int((labels == SUPPRESSED).sum())
    if before == 0:
        return 0
    n_classes = len(np.unique(labels[labels >= 0]))
    if n_classes <= NEAR_CLASSES:
        _place(data, labels, np.flatnonzero(labels == SUPPRESSED), np.flatnonzero(labels >= 0), rule, limits)
        return before - int((labels == SUPPRESSED).sum())
    rank = np.empty(data.n_rows, dtype=np.int64)
    rank[coarse_order(data)] = np.arange(data.n_rows, dtype=np.int64)
    reach = NEAR_ROWS
    while (labels == SUPPRESSED).any():
        _round(data, labels, rank, reach, rule, limits)
        if 2 * reach >= data.n_rows:
            break
        reach *= GROWTH
    return before - int((labels == SUPPRESSED).sum())


def _round(
    data: QIData, labels: np.ndarray, rank: np.ndarray, reach: int, rule: Rule | None, limits: Limits | None
) -> None:
    """One round of :func:`rescue`: the rows left, by stretches of ``2 x reach`` places, each
    offered the classes that start within ``reach`` places of its stretch."""
    left = np.flatnonzero(labels == SUPPRESSED)
    member = np.flatnonzero(labels >= 0)
    # each class's start (its first row's place), and the member rows by their class's start
    by_place = member[np.argsort(rank[member], kind="stable")]
    ids, first = np.unique(labels[by_place], return_index=True)
    start = np.empty(int(ids.max()) + 1, dtype=np.int64)
    start[ids] = rank[by_place[first]]
    member = member[np.argsort(start[labels[member]], kind="stable")]
    member_start = start[labels[member]]
    stretch = rank[left] // (2 * reach)
    # rows placed in this round so far: members of the next stretches' classes too
    placed: list[np.ndarray] = []
    for s in np.unique(stretch):
        lo, hi = int(s) * 2 * reach - reach, (int(s) + 1) * 2 * reach + reach
        a, b = np.searchsorted(member_start, [lo, hi])
        rows = member[a:b]
        if placed:
            joined = np.concatenate(placed)
            joined_start = start[labels[joined]]
            rows = np.concatenate([rows, joined[(joined_start >= lo) & (joined_start < hi)]])
        if len(rows) == 0:
            continue
        done = _place(data, labels, left[stretch == s], rows, rule, limits)
        placed.append(done)


def _place(
    data: QIData,
    labels: np.ndarray,
    left: np.ndarray,
    rows: np.ndarray,
    rule: Rule | None,
    limits: Limits | None,
) -> np.ndarray:
    """The rows ``left`` (ascending) offered the classes of the member rows ``rows`` (every
    row of each of those classes); ``labels`` updated in place. Returns the rows placed."""
    if len(left) == 0 or len(rows) == 0:
        return left[:0]
    ids, local = np.unique(labels[rows], return_inverse=True)
    sub = np.concatenate([rows, left])
    sub_labels = np.concatenate([local.astype(np.int64), np.full(len(left), SUPPRESSED, dtype=np.int64)])
    got = place_rows(data.take(sub), sub_labels, rule, limits)[len(rows) :]
    ok = got >= 0
    labels[left[ok]] = ids[got[ok]]
    return left[ok]
