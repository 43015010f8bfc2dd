"""SBC's contingency-based distances: a seed's distance table per categorical QI, and the
distance from the seed to every remaining row (the same arithmetic as
:mod:`sbc_sql.cluster.similarity` and :mod:`sbc_sql.cluster.sbca_paper`)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def sbc_tables(
    seed_codes, card, pred, cnt, cnt_off, pair, pair_off, k, active, tab, tab_off, keys, vals, heads
):
    """Fill ``tab[tab_off[q] + v]``: distance from the seed's value of QI q to value v.
    ``keys``/``vals`` are scratch of at least max(card) entries, ``heads`` of
    2 max(card) + BUCKET_SLACK + 1 (see _rank_values)."""
    dc = card.shape[0]
    for q in range(dc):
        if not active[q]:
            continue
        c = card[q]
        s = seed_codes[q]
        base = tab_off[q]
        if c == 2:
            tab[base] = 1.0
            tab[base + 1] = 1.0
            tab[base + s] = 0.0
            continue
        m = pred[q]
        if m < 0:
            # the first categorical QI: similarity from its own frequency column
            _rank_values(cnt, cnt_off[q], c, s, 0.0, False, tab, base, keys, vals, heads)
            continue
        src = pair
        rb = pair_off[q] + seed_codes[m] * c
        tot = 0
        for v in range(c):
            tot += pair[rb + v]
        if tot < k:
            # the paper's Table 2: too few rows with the seed's M value, use all of M
            src = cnt
            rb = cnt_off[q]
            tot = 0
            for v in range(c):
                tot += cnt[rb + v]
        _rank_values(src, rb, c, s, float(tot), True, tab, base, keys, vals, heads)


#: counts up to 2 c + this many are ranked by buckets (see _rank_values)
BUCKET_SLACK = 256


@njit(cache=True, nogil=True)
def _rank_values(src, rb, c, s, total, share, tab, base, keys, vals, heads):
    """``tab[base + v] = rank(v) / (c - 1)`` in the order of key ``|x(v) - x(s)|`` (ties by
    code, the seed first), ``x(v) = src[rb + v] / total`` when ``share`` (and 0 for every
    v when total is 0), else the count itself.

    The counts are integers: with b the seed's count, a value of count a has key
    |a - b| / total (or |a - b|), so a smaller |a - b| is a smaller key (the keys of two
    distances differ by 1 / total, far above their rounding), and values at the same
    distance have count b - d or b + d: two keys, each computed once and compared as the
    sort compares them. When the counts are at most 2 c + BUCKET_SLACK the values are
    chained by count (``heads``, ``vals``: code order within a count) and walked outward
    from b, O(c + largest count); else sorted (_rank_sorted).
    """
    if share and total <= 0:
        xs = 0.0
    elif share:
        xs = src[rb + s] / total
    else:
        xs = float(src[rb + s])
    top = 0
    for v in range(c):
        if src[rb + v] > top:
            top = src[rb + v]
    if top > 2 * c + BUCKET_SLACK or top >= heads.shape[0]:
        _rank_sorted(src, rb, c, s, total, share, xs, tab, base, keys, vals)
        return
    b = src[rb + s]
    for a in range(top + 1):
        heads[a] = -1
    for v in range(c - 1, -1, -1):
        if v == s:
            continue
        a = src[rb + v]
        vals[v] = heads[a]
        heads[a] = v
    denom = c - 1
    tab[base + s] = 0.0
    rank = _emit(tab, base, vals, heads[b], 1, denom)
    for d in range(1, max(b, top - b) + 1):
        lft = heads[b - d] if b - d >= 0 else -1
        rgt = heads[b + d] if b + d <= top else -1
        if lft >= 0 and rgt >= 0:
            if share:
                kl = abs((b - d) / total - xs)
                kr = abs((b + d) / total - xs)
            else:
                kl = abs(float(b - d) - xs)
                kr = abs(float(b + d) - xs)
            if kl == kr:
                # one key: the two chains merged by code
                while lft >= 0 and rgt >= 0:
                    if lft < rgt:
                        tab[base + lft] = rank / denom
                        lft = vals[lft]
                    else:
                        tab[base + rgt] = rank / denom
                        rgt = vals[rgt]
                    rank += 1
            elif kr < kl:
                lft, rgt = rgt, lft
        rank = _emit(tab, base, vals, lft, rank, denom)
        rank = _emit(tab, base, vals, rgt, rank, denom)


@njit(cache=True, nogil=True, inline="always")
def _emit(tab, base, nxt, v, rank, denom):
    """Rank the chain from value v on (``nxt``: the next value of its chain, -1 at its end)
    from ``rank``; returns the next rank."""
    while v >= 0:
        tab[base + v] = rank / denom
        rank += 1
        v = nxt[v]
    return rank


@njit(cache=True, nogil=True)
def _rank_sorted(src, rb, c, s, total, share, xs, tab, base, keys, vals):
    """_rank_values by sorting: every value of count 0 has the same key ``|0 - x(s)|``, so
    only the values of nonzero count are sorted and the zero run is merged in by code:
    O(c + m log m) for m nonzero values."""
    z = abs(0.0 - xs)
    m = 0
    for v in range(c):
        if v != s and src[rb + v] != 0:
            keys[m] = abs(src[rb + v] / total - xs) if share else abs(float(src[rb + v]) - xs)
            vals[m] = v
            m += 1
    order = np.argsort(keys[:m], kind="mergesort")
    denom = c - 1
    tab[base + s] = 0.0
    rank = 1
    j = 0
    for v in range(c):
        if v == s or src[rb + v] != 0:
            continue
        while j < m:
            kk = keys[order[j]]
            if kk < z or (kk == z and vals[order[j]] < v):
                tab[base + vals[order[j]]] = rank / denom
                rank += 1
                j += 1
            else:
                break
        tab[base + v] = rank / denom
        rank += 1
    while j < m:
        tab[base + vals[order[j]]] = rank / denom
        rank += 1
        j += 1


@njit(cache=True, nogil=True)
def _distances(seed, sc, wn, num_act, cat, wc, cat_act, tab, tab_off, n, dist):
    """SBC distance from row ``seed`` to rows 0..n-1; ``sc`` holds the numerics divided by
    their range (QIData.scaled), so the sums are those of :mod:`sbc_sql.cluster.sbca_paper`."""
    for i in range(n):
        dist[i] = 0.0
    for j in range(sc.shape[0]):
        if not num_act[j]:
            continue
        w = wn[j]
        col = sc[j]
        s = col[seed]
        if np.isnan(s):
            for i in range(n):
                if not np.isnan(col[i]):
                    dist[i] += w
        else:
            for i in range(n):
                d = abs(col[i] - s)
                if np.isnan(d):
                    d = 1.0
                dist[i] += w * d
    for q in range(cat.shape[0]):
        if not cat_act[q]:
            continue
        w = wc[q]
        col = cat[q]
        base = tab_off[q]
        for i in range(n):
            dist[i] += w * tab[base + col[i]]
