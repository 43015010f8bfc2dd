"""A refresh's new rows placed into the classes a release has published, without changing
any of them: a class takes new rows only as a group of at least k that its ranges and sets
already cover and that keeps the criteria on its own.

Each new row may lie inside several classes (``pairs``: the (row, class) pairs where it
does). The classes are taken greedily, the one covering the most rows not yet placed first
(the lowest class id among equals): it takes all of them if they are k or more and the
group keeps the criteria (``group_ok``), else none. A class's count falls as rows go to
others, so counts are kept in a heap and checked when popped. What no class takes is left
for the refresh to cluster among itself (-1).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

import numpy as np


def place(
    pair_rows: np.ndarray,
    pair_classes: np.ndarray,
    n_rows: int,
    k: int,
    group_ok: Callable[[np.ndarray], bool] | None = None,
) -> np.ndarray:
    """The class each of ``n_rows`` new rows joins (-1: none), from the (row, class) pairs
    where a row lies inside a class; ``group_ok(rows)``: whether a group of new rows keeps
    the release's criteria on its own (None: k alone)."""
    labels = np.full(n_rows, -1, dtype=np.int64)
    if len(pair_rows) == 0:
        return labels
    order = np.lexsort((pair_rows, pair_classes))
    rows = np.asarray(pair_rows, dtype=np.int64)[order]
    classes = np.asarray(pair_classes, dtype=np.int64)[order]
    starts = np.flatnonzero(np.r_[True, classes[1:] != classes[:-1]])
    ends = np.r_[starts[1:], len(classes)]
    heap = [(-(int(e) - int(s)), int(classes[s]), int(s), int(e)) for s, e in zip(starts, ends, strict=True)]
    heapq.heapify(heap)
    placed = np.zeros(n_rows, dtype=bool)
    while heap:
        count, cls, s, e = heapq.heappop(heap)
        members = rows[s:e][~placed[rows[s:e]]]
        if len(members) < k:
            continue
        if len(members) < -count:  # rows went to other classes since it was counted
            heapq.heappush(heap, (-len(members), cls, s, e))
            continue
        if group_ok is not None and not group_ok(members):
            continue
        labels[members] = cls
        placed[members] = True
    return labels
