"""Rows that block mode's blocks could not place under the privacy criteria or the
per-column limits, placed across blocks: each joins, of the classes near it that keep the
criteria and the limits with it, the one whose information loss grows least, and stays
suppressed when none does.

A block keeps the criteria on its own rows; a row whose sensitive value its block lacks the
company for may still fit a class of another block. The placement itself is compiled
(:func:`.sbca_plus.algorithm.place_rows`: each row prices every class it is offered and
checks the criteria on them cheapest first, the classes' summaries kept as rows join). Up
to :data:`NEAR_CLASSES` classes every row is offered every class, in passes until one
places none. Above, the rows are offered their neighbours' classes, in one pass: the rows
left are cut into stretches of ``2 x NEAR_ROWS`` places of the table's coarse order, and the
rows of a stretch are offered the classes that start in it or within :data:`NEAR_ROWS`
places of it (their QI neighbours, where the cheapest classes are); the rows none of those
take are offered the classes of stretches four times as long, up to :data:`FARTHEST` places
each side. A row a criterion forces into a large class (a rare value under beta-likeness)
is offered only classes that large. Work grows with the rows left times the classes near
them, not times every class.
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
#: ... up to this many places each side: a row no class within them takes stays suppressed
#: (under beta = 2 on 1,000,000 clinic rows at k = 10, 12,365 rows of a rare value that no
#: class within 8,192 places took were offered those within 32,768 in 22 s, and 1,062
#: joined one; offered every class of the table, such rows took hours)
FARTHEST = 8192


def rescue(data: QIData, labels: np.ndarray, rule: Rule | None, limits: Limits | None = None) -> int:
    """Place the rows labelled ``SUPPRESSED`` in ``labels`` (in place) where ``rule`` (None:
    no criteria) and ``limits`` hold with them, each into the class of least NCP increase
    among those that do (ties: lower class id), in row order; returns how many were placed.
    Every class of ``labels`` keeps ``rule`` and ``limits`` and does after. Up to
    :data:`NEAR_CLASSES` classes the passes go on until one places none (a row no class took
    may fit one that rows joined since), so a row left fits no class; above, one pass over
    the neighbours' classes (see the module's docstring)."""
    if rule is not None and not rule.active:
        rule = None
    if (rule is not None and data.sensitive is None) or not (labels >= 0).any():
        return 0
    before = int((labels == SUPPRESSED).sum())
    if before == 0:
        return 0
    n_classes = len(np.unique(labels[labels >= 0]))
    if n_classes <= NEAR_CLASSES:
        # passes over the rows left, in row order, until one places none
        while len(
            _place(
                data, labels, np.flatnonzero(labels == SUPPRESSED), np.flatnonzero(labels >= 0), rule, limits
            )
        ):
            pass
        return before - int((labels == SUPPRESSED).sum())
    rank = np.empty(data.n_rows, dtype=np.int64)
    rank[coarse_order(data)] = np.arange(data.n_rows, dtype=np.int64)
    need = _needed_size(data, rule)
    left = np.flatnonzero(labels == SUPPRESSED)
    # rows by the class size they need, the largest first, each offered only the classes
    # that large (a row of a common value needs 1)
    sizes = need[left] if need is not None else np.ones(len(left), dtype=np.int64)
    for size in np.unique(sizes)[::-1]:
        rows = left[sizes == size]
        reach = NEAR_ROWS
        while True:
            rows = rows[labels[rows] == SUPPRESSED]
            if len(rows) == 0:
                break
            _round(data, labels, rank, reach, rule, limits, rows, int(size) - 1)
            if 2 * reach >= data.n_rows or reach >= FARTHEST:
                break
            reach *= GROWTH
    return before - int((labels == SUPPRESSED).sum())


def _members(labels: np.ndarray, min_size: int) -> np.ndarray:
    """The rows of the classes of at least ``min_size`` rows."""
    member = np.flatnonzero(labels >= 0)
    if min_size <= 1:
        return member
    size = np.bincount(labels[member])
    big: np.ndarray = member[size[labels[member]] >= min_size]
    return big


def _needed_size(data: QIData, rule: Rule | None) -> np.ndarray | None:
    """Each row's smallest class it may join, itself included (beta-likeness forces one for
    a rare value: :meth:`.sensitive.Rule.forced_size`), or None when no criterion does. A
    row is offered no class smaller: under beta = 2, most rows the blocks of 1,000,000
    clinic rows left were of values no class of theirs was large enough for, and each was
    priced against every class of the table in vain."""
    if rule is None or data.sensitive is None:
        return None
    sens = data.sensitive
    need = np.ones(data.n_rows, dtype=np.int64)
    for s in range(sens.n_columns):
        need = np.maximum(need, rule.forced_size(sens.shares(s))[sens.codes[s]])
    return need if (need > 1).any() else None


def _round(
    data: QIData,
    labels: np.ndarray,
    rank: np.ndarray,
    reach: int,
    rule: Rule | None,
    limits: Limits | None,
    left: np.ndarray,
    min_size: int,
) -> None:
    """One round of :func:`rescue`: the rows ``left`` (ascending), by stretches of
    ``2 x reach`` places, each offered the classes of at least ``min_size`` rows that start
    within ``reach`` places of its stretch."""
    member = _members(labels, min_size)
    if len(member) == 0:
        return
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
