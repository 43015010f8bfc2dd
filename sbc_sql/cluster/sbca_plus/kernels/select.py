"""The m smallest entries by (key, tie, position): the pick of a class's nearest rows,
of the wide set and of the pool."""

from __future__ import annotations

import numpy as np
from numba import njit

from .costs import INF


@njit(cache=True, nogil=True, inline="always")
def _before(key, tie, pos, a, b):
    """Entry a sorts before entry b by (key, tie, pos)."""
    ka = key[a]
    kb = key[b]
    if ka != kb:
        return ka < kb
    ta = tie[a]
    tb = tie[b]
    if ta != tb:
        return ta < tb
    return pos[a] < pos[b]


@njit(cache=True, nogil=True)
def _select(key, tie, pos, n, m, ok, out, heap):
    """The (at most) m entries i < n with ``ok[i]`` and the smallest (key[i], tie[i],
    pos[i]), written to ``out[:m]`` in no particular order; returns how many. A bounded
    max-heap (``heap``) when m is small beside n, else quickselect."""
    if m <= 0:
        return 0
    if 64 * m <= n:
        return _select_heap(key, tie, pos, n, m, ok, out, heap)
    cnt = 0
    mn = INF
    mx = -INF
    for i in range(n):
        if ok[i]:
            out[cnt] = i
            cnt += 1
            v = key[i]
            if v < mn:
                mn = v
            if v > mx:
                mx = v
    if m >= cnt:
        return cnt
    if not mx > mn:
        _quickselect(key, tie, pos, out, cnt, m)
        return m
    # bucket the keys, keep the buckets below the one holding the m-th, and settle that
    # bucket exactly
    nb = min(1024, max(16, cnt >> 2))
    scale = nb / (mx - mn)
    hist = np.zeros(nb + 1, dtype=np.int64)
    for u in range(cnt):
        hist[min(int((key[out[u]] - mn) * scale), nb - 1)] += 1
    below = 0
    bstar = 0
    while below + hist[bstar] < m:
        below += hist[bstar]
        bstar += 1
    w = 0
    nt = 0
    for u in range(cnt):
        i = out[u]
        b = min(int((key[i] - mn) * scale), nb - 1)
        if b < bstar:
            out[w] = i
            w += 1
        elif b == bstar:
            heap[nt] = i
            nt += 1
    _quickselect(key, tie, pos, heap, nt, m - below)
    for u in range(m - below):
        out[w + u] = heap[u]
    return m


@njit(cache=True, nogil=True)
def _quickselect(key, tie, pos, idx, cnt, m):
    """Reorder ``idx[:cnt]`` so that its first m entries are the smallest by _before."""
    lo = 0
    hi = cnt - 1
    kth = m - 1
    while hi > lo:
        mid = (lo + hi) >> 1
        # median of three as the pivot
        a = idx[lo]
        b = idx[mid]
        c = idx[hi]
        if _before(key, tie, pos, b, a):
            a, b = b, a
        if _before(key, tie, pos, c, b):
            b = c
            if _before(key, tie, pos, b, a):
                b = a
        piv = b
        i = lo
        j = hi
        while i <= j:
            while _before(key, tie, pos, idx[i], piv):
                i += 1
            while _before(key, tie, pos, piv, idx[j]):
                j -= 1
            if i <= j:
                t = idx[i]
                idx[i] = idx[j]
                idx[j] = t
                i += 1
                j -= 1
        if kth <= j:
            hi = j
        elif kth >= i:
            lo = i
        else:
            break


@njit(cache=True, nogil=True)
def _select_heap(key, tie, pos, n, m, ok, out, heap):
    """_select by one scan with a max-heap of m entries: once full, almost every further
    entry is rejected at the top."""
    h = 0
    for i in range(n):
        if not ok[i]:
            continue
        if h < m:
            c = h
            h += 1
            while c > 0:
                p = (c - 1) >> 1
                if _before(key, tie, pos, heap[p], i):
                    heap[c] = heap[p]
                    c = p
                else:
                    break
            heap[c] = i
        elif _before(key, tie, pos, i, heap[0]):
            c = 0
            while True:
                lft = 2 * c + 1
                if lft >= h:
                    break
                big = lft
                if lft + 1 < h and _before(key, tie, pos, heap[lft], heap[lft + 1]):
                    big = lft + 1
                if _before(key, tie, pos, i, heap[big]):
                    heap[c] = heap[big]
                    c = big
                else:
                    break
            heap[c] = i
    for u in range(h):
        out[u] = heap[u]
    return h
