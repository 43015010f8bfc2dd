"""Incremental post-processing of the free clusters (kInc_GE's second step).

The free cluster farthest from the input's distribution (largest relative difference)
grows by the free row nearest its centroid until it is beta-like; it is then a class, and
the next cluster is generated (as in :mod:`.kprimacy`) from the free row farthest from that
class's centroid, or is every free row when fewer than 2k remain. Rows that never make a
beta-like class, and a final remainder of fewer than k rows, are not released (reason
``kinc_left``).
"""

from __future__ import annotations

import numpy as np

from .kprimacy import farthest, generate_cluster
from .likeness import Likeness
from .space import Space


def k_inc(
    space: Space, free: list[np.ndarray], k: int, like: Likeness, rare_aware: bool = True
) -> tuple[list[np.ndarray], np.ndarray]:
    """(classes, rows left) from the free clusters of one group."""
    classes: list[np.ndarray] = []
    if not free:
        return classes, np.zeros(0, dtype=np.int64)
    codes, m = space.codes, space.m
    rd = [like.rd(np.bincount(codes[c], minlength=m), len(c)) for c in free]
    first = int(np.argmax(rd))
    cv = list(free[first])
    alive = np.zeros(len(space), dtype=bool)
    for i, c in enumerate(free):
        if i != first:
            alive[c] = True
    counts = np.bincount(codes[cv], minlength=m)
    while True:
        while not like.ok(counts, len(cv)) and alive.any():
            pool = np.flatnonzero(alive)
            cen = space.centroid(np.array(cv))
            y = int(space.order_by(pool, space.distance(pool, cen))[0])
            cv.append(y)
            alive[y] = False
            counts[codes[y]] += 1
        if not like.ok(counts, len(cv)):
            return classes, np.sort(np.array(cv, dtype=np.int64))
        classes.append(np.sort(np.array(cv, dtype=np.int64)))
        pool = np.flatnonzero(alive)
        if not len(pool):
            return classes, np.zeros(0, dtype=np.int64)
        if len(pool) < k:
            return classes, pool
        if len(pool) >= 2 * k:
            start = farthest(space, pool, space.centroid(np.array(cv)))
            nxt = generate_cluster(space, start, pool, k, like, rare_aware)
        else:
            nxt = pool
        alive[nxt] = False
        cv = list(nxt)
        counts = np.bincount(codes[nxt], minlength=m)
