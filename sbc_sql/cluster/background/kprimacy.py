"""k-anonymity first: k-row clusters grown from the farthest row, refined toward beta-likeness.

While at least 2k rows remain: the row farthest from the remaining rows' centroid starts a
cluster of its k nearest rows; while the cluster is not beta-like, the next nearest row
whose value is not the worst one and still fits replaces the member of the worst value
farthest from the starting row (the size stays k). A cluster that ends beta-like is a
class; one that does not goes to the free pool, which the post-processing (:mod:`.kagg`,
:mod:`.kinc`) merges or grows. The last k .. 2k - 1 rows form one cluster.

Rare-aware (the default): a cluster holding a value that no k-row class can hold is not
refined (swapping could only push such rows toward the last clusters, where they pile up
and nothing can dilute them); it goes to the free pool as it is, beside the frequent
values that the post-processing needs to dilute it.
"""

from __future__ import annotations

import numpy as np

from .likeness import Likeness
from .space import Space


def farthest(space: Space, idx: np.ndarray, point: tuple[np.ndarray, np.ndarray]) -> int:
    """The row of ``idx`` farthest from ``point`` (ties: smallest position)."""
    return int(space.order_by(idx, space.distance(idx, point), descending=True)[0])


def generate_cluster(
    space: Space, start: int, pool: np.ndarray, k: int, like: Likeness, rare_aware: bool = True
) -> np.ndarray:
    """k rows of ``pool`` around ``start`` (which it holds), refined by swaps toward
    beta-likeness; each candidate is examined once."""
    d = space.distance(pool, space.point(start))
    order = space.order_by(pool, d)
    order = np.concatenate(([start], order[order != start]))
    dist = space.distance(order, space.point(start))
    members = order[:k].copy()
    member_d = dist[:k].copy()
    codes = space.codes
    counts = np.bincount(codes[members], minlength=space.m)
    if rare_aware and np.any(like.needs_more_than(k)[codes[members]]):
        return members
    rest_codes = codes[order]
    at = k
    while at < len(order) and not like.ok(counts, k):
        w = like.worst(counts, k)
        cand = rest_codes[at:]
        useful = np.flatnonzero((cand != w) & like.fits(counts, k)[cand])
        if not len(useful):
            break
        at += int(useful[0])
        y = order[at]
        with_w = np.flatnonzero(codes[members] == w)
        not_start = with_w[members[with_w] != start]
        among = not_start if len(not_start) else with_w
        # farthest from the start; ties: the later member (the one taken last)
        x = int(among[np.lexsort((-among, -member_d[among]))[0]])
        counts[w] -= 1
        counts[codes[y]] += 1
        members[x] = y
        member_d[x] = dist[at]
        at += 1
    return members


def k_primacy(
    space: Space, k: int, like: Likeness, rare_aware: bool = True
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(classes, free clusters) of one group of at least k rows."""
    alive = np.ones(len(space), dtype=bool)
    classes: list[np.ndarray] = []
    free: list[np.ndarray] = []

    def keep(c: np.ndarray) -> None:
        counts = np.bincount(space.codes[c], minlength=space.m)
        (classes if like.ok(counts, len(c)) else free).append(np.sort(c))

    while int(alive.sum()) >= 2 * k:
        pool = np.flatnonzero(alive)
        start = farthest(space, pool, space.centroid(pool))
        c = generate_cluster(space, start, pool, k, like, rare_aware)
        alive[c] = False
        keep(c)
    rest = np.flatnonzero(alive)
    if len(rest):
        keep(rest)
    return classes, free
