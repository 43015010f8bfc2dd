"""Agglomerative post-processing of the free clusters (kAgg_GE's second step).

While two or more clusters remain: the cluster farthest from the input's distribution
(largest relative difference, ties: the oldest) merges with the cluster whose union with
it costs least (size times NCP of the union, ties: the oldest); a beta-like union is a
class, any other goes back to the pool. Each step removes one cluster, so the loop ends;
the rows of a cluster left at the end are not released (reason ``kagg_left``).
"""

from __future__ import annotations

import numpy as np

from .likeness import Likeness
from .space import Space, Summary


def k_agg(space: Space, free: list[np.ndarray], like: Likeness) -> tuple[list[np.ndarray], np.ndarray]:
    """(classes, rows left) from the free clusters of one group."""
    pool: list[tuple[np.ndarray, Summary]] = [(c, space.summary(c)) for c in free]
    rd = [like.rd(s.counts, s.size) for _, s in pool]
    classes: list[np.ndarray] = []
    while len(pool) >= 2:
        v = int(np.argmax(rd))
        cv, sv = pool.pop(v)
        rd.pop(v)
        costs = space.union_costs(sv, [s for _, s in pool])
        w = int(np.argmin(costs))
        cw, sw = pool.pop(w)
        rd.pop(w)
        rows, merged = np.sort(np.concatenate([cv, cw])), sv.union(sw)
        if like.ok(merged.counts, merged.size):
            classes.append(rows)
        else:
            pool.append((rows, merged))
            rd.append(like.rd(merged.counts, merged.size))
    left = pool[0][0] if pool else np.zeros(0, dtype=np.int64)
    return classes, left
