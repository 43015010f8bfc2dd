"""beta-likeness first (beta_GE's second step): buckets of values, class sizes by binary
splits, rows chosen along a Hilbert curve.

1. A group that is not beta-like as a whole cannot be split into beta-like classes (any
   class holding the over-represented value holds it at least at the group's share), so
   none of its rows is released (reason ``lemma2``).
2. Buckets: the group's values sorted by ascending input share are cut into the fewest
   contiguous runs whose rows' share of the group is within the bound of the run's first
   (least frequent, so smallest bound) value, by dynamic programming.
3. Sizes: a class is a vector of how many rows it takes from each bucket; the root takes
   every row. A vector splits into halves (floor per bucket, and the rest) when both halves
   have k rows and each bucket within its bound; the leaves are the classes. A value of a
   bucket then never exceeds its bound in any class.
4. Rows: the leaves in a seeded random order; each takes a random remaining row of its
   first non-empty bucket, then from every bucket the remaining rows nearest that row on a
   Hilbert curve over the QIs.
"""

from __future__ import annotations

import numpy as np

from .likeness import Likeness
from .space import Space


def buckets(counts: np.ndarray, p: np.ndarray, bound: np.ndarray) -> list[list[int]]:
    """The fewest contiguous runs (in ascending share, ties by code) of the values present
    (``counts > 0``) whose rows' share of the group is within the run's first value's
    bound; ties in the recurrence: the largest last run. Empty when none exists."""
    values = [int(v) for v in np.lexsort((np.arange(len(p)), p)) if counts[v] > 0]
    n = float(counts.sum())
    c = np.concatenate(([0.0], np.cumsum([counts[v] for v in values])))
    big = len(values) + 1
    best = [0] + [big] * len(values)
    cut = [0] * (len(values) + 1)
    for e in range(1, len(values) + 1):
        for b in range(1, e + 1):
            if (c[e] - c[b - 1]) / n <= bound[values[b - 1]] and best[b - 1] + 1 < best[e]:
                best[e], cut[e] = best[b - 1] + 1, b
    if best[-1] >= big:
        return []
    runs = []
    e = len(values)
    while e > 0:
        b = cut[e]
        runs.append(values[b - 1 : e])
        e = b - 1
    return runs[::-1]


def split(root: np.ndarray, caps: np.ndarray, k: int) -> list[np.ndarray]:
    """The leaves of the binary splits of ``root`` (rows per bucket), left first."""

    def eligible(a: np.ndarray) -> bool:
        size = int(a.sum())
        return size >= k and bool(np.all(a <= caps * size))

    leaves = []
    stack = [np.asarray(root, dtype=np.int64)]
    while stack:
        a = stack.pop()
        left = a // 2
        right = a - left
        if eligible(left) and eligible(right):
            stack.extend([right, left])
        else:
            leaves.append(a)
    return leaves


def _nearest(keys: np.ndarray, alive: np.ndarray, h: int, count: int) -> np.ndarray:
    """Indices of the ``count`` alive entries of sorted ``keys`` nearest ``h`` (ties:
    the smaller key)."""
    idx = np.flatnonzero(alive)
    at = int(np.searchsorted(keys[idx], np.uint64(h)))
    lo, hi = at - 1, at
    out = []
    for _ in range(count):
        if hi < len(idx) and (lo < 0 or int(keys[idx[hi]]) - h < h - int(keys[idx[lo]])):
            out.append(idx[hi])
            hi += 1
        else:
            out.append(idx[lo])
            lo -= 1
    return np.array(out, dtype=np.int64)


def beta_ge(
    space: Space, keys: np.ndarray, k: int, like: Likeness, rng: np.random.Generator
) -> tuple[list[np.ndarray], np.ndarray]:
    """(classes, rows left) of one group; ``keys``: its rows' Hilbert keys."""
    codes = space.codes
    counts = np.bincount(codes, minlength=space.m)
    everyone = np.arange(len(space), dtype=np.int64)
    if len(space) < k or not like.ok(counts, len(space)):
        return [], everyone
    runs = buckets(counts, like.p, like.bound)
    caps = np.array([like.bound[r[0]] for r in runs])
    bucket_of = np.empty(space.m, dtype=np.int64)
    for i, r in enumerate(runs):
        bucket_of[r] = i
    rows_of = []
    for i in range(len(runs)):
        rows = everyone[bucket_of[codes] == i]
        rows = rows[np.lexsort((space.position[rows], keys[rows]))]
        rows_of.append(rows)
    root = np.array([len(r) for r in rows_of], dtype=np.int64)
    leaves = split(root, caps, k)
    alive = [np.ones(len(r), dtype=bool) for r in rows_of]
    sorted_keys = [keys[r] for r in rows_of]
    classes = []
    for leaf in (leaves[i] for i in rng.permutation(len(leaves))):
        first = int(np.flatnonzero(leaf > 0)[0])
        x = int(rng.choice(np.flatnonzero(alive[first])))
        h = int(sorted_keys[first][x])
        alive[first][x] = False
        taken = [rows_of[first][x : x + 1]]
        for b in np.flatnonzero(leaf > 0):
            want = int(leaf[b]) - (1 if b == first else 0)
            if want:
                near = _nearest(sorted_keys[b], alive[b], h, want)
                alive[b][near] = False
                taken.append(rows_of[b][near])
        classes.append(np.sort(np.concatenate(taken)))
    return classes, np.zeros(0, dtype=np.int64)
