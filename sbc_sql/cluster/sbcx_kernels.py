"""numba kernels of SBCA+ (see :mod:`sbc_sql.cluster.sbcx`).

Every kernel works in the *sorted domain*: row i is the i-th row of ``QIData.sort_order()``,
so ties broken by the smaller index are ties broken by sort position (SPEC section 3).
Arrays are columnar: ``num[j, i]`` is numeric QI j of row i, already divided by its range
(NaN for NULL), ``cat[q, i]`` the code of categorical QI q, with the categorical QIs in
SBC's order (ascending cardinality, SPEC section 2).

The information loss of a class G is ``|G| * sum_q w_q NCP_q(G)`` (SPEC section 4), so the
kernels keep, per class, the numeric bounds and NULL counts and the categorical distinct
counts, from which one row's effect is O(d).
"""

from __future__ import annotations

import numpy as np

try:
    from numba import njit
except ImportError:  # pragma: no cover - numba is the "fast" extra; plain Python still works

    def njit(*args, **kwargs):  # type: ignore[no-redef]
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        return lambda f: f


INF = np.inf

# ---------------------------------------------------------------------------------------
# NCP of one QI of a class
# ---------------------------------------------------------------------------------------


@njit(cache=True, nogil=True, inline="always")
def _num_ncp(lo: float, hi: float, nulls: int, size: int) -> float:
    if nulls >= size:
        return 0.0  # all NULL (or empty)
    if nulls > 0:
        return 1.0  # NULL mixed with numbers
    return hi - lo


@njit(cache=True, nogil=True, inline="always")
def _cat_ncp(distinct: int, card: int) -> float:
    if distinct > 1:
        return distinct / card
    return 0.0


# ---------------------------------------------------------------------------------------
# SBC's contingency-based distance tables (SPEC section 2)
# ---------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def sbc_tables(seed_codes, card, pred, cnt, cnt_off, pair, pair_off, k, active, tab, tab_off):
    """Fill ``tab[tab_off[q] + v]``: distance from the seed's value of QI q to value v."""
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
        key = np.empty(c, dtype=np.float64)
        m = pred[q]
        if m < 0:
            # the first categorical QI: similarity from its own frequency column
            cb = cnt_off[q]
            cs = cnt[cb + s]
            for v in range(c):
                key[v] = abs(float(cnt[cb + v]) - float(cs))
        else:
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
            else:
                src = pair
            total = float(tot)
            if total > 0:
                ps = src[rb + s] / total
                for v in range(c):
                    key[v] = abs(src[rb + v] / total - ps)
            else:
                for v in range(c):
                    key[v] = 0.0
        key[s] = -1.0
        order = np.argsort(key, kind="mergesort")
        for i in range(c):
            tab[base + order[i]] = i / (c - 1)


@njit(cache=True, nogil=True)
def _distances(seed, rnum, wn, num_act, rcat, wc, cat_act, tab, tab_off, n_rem, dist):
    """SBC distance from remaining row ``seed`` (a position) to every remaining row."""
    for i in range(n_rem):
        dist[i] = 0.0
    for j in range(rnum.shape[0]):
        if not num_act[j]:
            continue
        w = wn[j]
        col = rnum[j]
        s = col[seed]
        if np.isnan(s):
            for i in range(n_rem):
                if not np.isnan(col[i]):
                    dist[i] += w
        else:
            for i in range(n_rem):
                d = abs(col[i] - s)
                if np.isnan(d):
                    d = 1.0
                dist[i] += w * d
    for q in range(rcat.shape[0]):
        if not cat_act[q]:
            continue
        w = wc[q]
        col = rcat[q]
        base = tab_off[q]
        for i in range(n_rem):
            dist[i] += w * tab[base + col[i]]


@njit(cache=True, nogil=True)
def _smallest(dist, n_rem, m, skip, out, buf):
    """Positions of the m smallest ``dist[:n_rem]`` (ties: smaller position), ``skip`` left
    out; written to ``out`` in position order; returns how many."""
    cnt = 0
    for i in range(n_rem):
        if i != skip:
            buf[cnt] = dist[i]
            cnt += 1
    if m >= cnt:
        t = 0
        for i in range(n_rem):
            if i != skip:
                out[t] = i
                t += 1
        return t
    kth = np.partition(buf[:cnt], m - 1)[m - 1]
    below = 0
    for i in range(n_rem):
        if i != skip and dist[i] < kth:
            below += 1
    room = m - below
    t = 0
    for i in range(n_rem):
        if i == skip:
            continue
        d = dist[i]
        if d < kth:
            out[t] = i
            t += 1
        elif d == kth and room > 0:
            out[t] = i
            t += 1
            room -= 1
    return t


# ---------------------------------------------------------------------------------------
# The greedy pass
# ---------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def greedy_pass(rnum, wn, num_act, rcat, card, wc, cat_act, pred, cnt, cnt_off, pair,
                pair_off, rid, state, labels, k, growth, farthest, pool, budget):
    """Form classes of k rows while at least k rows remain (or ``budget`` rows are done).

    ``rnum``/``rcat``/``rid`` hold the remaining rows compacted in sort order (updated in
    place); ``state`` = [n_rem, next class id, seed position]. ``labels`` is indexed by row
    id (sorted domain). ``growth``: grow the class one row at a time by least NCP increase
    among the ``pool`` SBC-nearest rows; else the seed and its k - 1 SBC-nearest rows.
    ``farthest``: the next seed is the remaining row farthest from this seed; else the
    first remaining row. Returns the number of rows labelled by this call.
    """
    dn = rnum.shape[0]
    dc = rcat.shape[0]
    n_rem = state[0]
    cls = state[1]
    seed = state[2]
    tab_off = np.zeros(dc + 1, dtype=np.int64)
    for q in range(dc):
        tab_off[q + 1] = tab_off[q] + card[q]
    tab = np.zeros(tab_off[dc], dtype=np.float64)
    ccount = np.zeros(tab_off[dc], dtype=np.int64)
    n_all = rnum.shape[1] if dn > 0 else rcat.shape[1]
    dist = np.empty(n_all, dtype=np.float64)
    buf = np.empty(n_all, dtype=np.float64)
    cand = np.empty(n_all, dtype=np.int64)
    taken = np.zeros(n_all, dtype=np.bool_)
    members = np.empty(k, dtype=np.int64)
    keep = np.ones(n_all, dtype=np.bool_)
    seed_codes = np.empty(dc, dtype=np.int64)
    lo = np.empty(dn)
    hi = np.empty(dn)
    nulls = np.zeros(dn, dtype=np.int64)
    distinct = np.zeros(dc, dtype=np.int64)
    done = 0
    while n_rem >= k and done < budget:
        for q in range(dc):
            seed_codes[q] = rcat[q, seed]
        sbc_tables(seed_codes, card, pred, cnt, cnt_off, pair, pair_off, k, cat_act, tab, tab_off)
        _distances(seed, rnum, wn, num_act, rcat, wc, cat_act, tab, tab_off, n_rem, dist)
        members[0] = seed
        if not growth:
            _smallest(dist, n_rem, k - 1, seed, cand, buf)
            for t in range(k - 1):
                members[t + 1] = cand[t]
        else:
            m = _smallest(dist, n_rem, pool - 1, seed, cand, buf)
            for t in range(m):
                taken[t] = False
            # class state: the seed alone
            for j in range(dn):
                x = rnum[j, seed]
                if np.isnan(x):
                    nulls[j] = 1
                    lo[j] = INF
                    hi[j] = -INF
                else:
                    nulls[j] = 0
                    lo[j] = x
                    hi[j] = x
            for q in range(dc):
                ccount[tab_off[q] + rcat[q, seed]] += 1
                distinct[q] = 1
            size = 1
            s_cur = 0.0
            for j in range(dn):
                if num_act[j]:
                    s_cur += wn[j] * _num_ncp(lo[j], hi[j], nulls[j], size)
            for step in range(1, k):
                best_t = -1
                best_inc = INF
                best_d = INF
                for t in range(m):
                    if taken[t]:
                        continue
                    i = cand[t]
                    s_new = 0.0
                    for j in range(dn):
                        if not num_act[j]:
                            continue
                        x = rnum[j, i]
                        if np.isnan(x):
                            s_new += wn[j] * _num_ncp(lo[j], hi[j], nulls[j] + 1, size + 1)
                        else:
                            s_new += wn[j] * _num_ncp(min(lo[j], x), max(hi[j], x), nulls[j], size + 1)
                    for q in range(dc):
                        if not cat_act[q]:
                            continue
                        dq = distinct[q]
                        if ccount[tab_off[q] + rcat[q, i]] == 0:
                            dq += 1
                        s_new += wc[q] * _cat_ncp(dq, card[q])
                    inc = (size + 1) * s_new - size * s_cur
                    d = dist[i]
                    if inc < best_inc or (inc == best_inc and d < best_d):
                        best_inc = inc
                        best_d = d
                        best_t = t
                taken[best_t] = True
                i = cand[best_t]
                members[step] = i
                for j in range(dn):
                    x = rnum[j, i]
                    if np.isnan(x):
                        nulls[j] += 1
                    else:
                        lo[j] = min(lo[j], x)
                        hi[j] = max(hi[j], x)
                for q in range(dc):
                    p = tab_off[q] + rcat[q, i]
                    if ccount[p] == 0:
                        distinct[q] += 1
                    ccount[p] += 1
                size += 1
                s_cur = 0.0
                for j in range(dn):
                    if num_act[j]:
                        s_cur += wn[j] * _num_ncp(lo[j], hi[j], nulls[j], size)
                for q in range(dc):
                    if cat_act[q]:
                        s_cur += wc[q] * _cat_ncp(distinct[q], card[q])
            for t in range(k):
                i = members[t]
                for q in range(dc):
                    ccount[tab_off[q] + rcat[q, i]] = 0
        # the class: label, take out of the contingency counts, drop from the remaining rows
        for t in range(k):
            i = members[t]
            labels[rid[i]] = cls
            keep[i] = False
            for q in range(dc):
                cnt[cnt_off[q] + rcat[q, i]] -= 1
                mq = pred[q]
                if mq >= 0:
                    pair[pair_off[q] + rcat[mq, i] * card[q] + rcat[q, i]] -= 1
        cls += 1
        done += k
        nxt = -1
        if farthest:
            best = -INF
            for i in range(n_rem):
                if keep[i] and dist[i] > best:
                    best = dist[i]
                    nxt = i
        w = 0
        new_seed = 0
        for i in range(n_rem):
            if keep[i]:
                if i == nxt:
                    new_seed = w
                if w != i:
                    rid[w] = rid[i]
                    for j in range(dn):
                        rnum[j, w] = rnum[j, i]
                    for q in range(dc):
                        rcat[q, w] = rcat[q, i]
                w += 1
            else:
                keep[i] = True
        n_rem = w
        seed = new_seed
    state[0] = n_rem
    state[1] = cls
    state[2] = seed
    return done


# ---------------------------------------------------------------------------------------
# Class state for leftovers and refinement
# ---------------------------------------------------------------------------------------
#
# Per class c: size[c], the member list (head[c], nxt/prv per row), numeric bounds and NULL
# counts lo/hi/nn[c, j], categorical distinct counts dist_[c, q], and S[c] = sum_q w_q NCP_q,
# so the class costs size[c] * S[c]. How many rows of class c hold value v of QI q lives in
# an open-addressing hash keyed (c * dc + q) * vmax + v: O(n d) memory whatever the
# cardinalities.

_HMUL = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True, nogil=True, inline="always")
def _hslot(hk, key, shift):
    h = np.int64((np.uint64(key) * _HMUL) >> shift)
    mask = hk.shape[0] - 1
    while True:
        kk = hk[h]
        if kk == key or kk == -1:
            return h
        h = (h + 1) & mask


@njit(cache=True, nogil=True)
def _hash_shift(cap):
    bits = 0
    while (1 << bits) < cap:
        bits += 1
    return np.uint64(64 - bits)


@njit(cache=True, nogil=True)
def _build_counts(lab, cat, cat_act, vmax, hk, hv, shift, dist_):
    """Fill the value-count hash and the distinct counts from the labels; returns slots used."""
    dc = cat.shape[0]
    hk[:] = -1
    hv[:] = 0
    dist_[:, :] = 0
    used = 0
    for i in range(lab.shape[0]):
        c = lab[i]
        if c < 0:
            continue
        for q in range(dc):
            if not cat_act[q]:
                continue
            key = (c * dc + q) * vmax + cat[q, i]
            h = _hslot(hk, key, shift)
            if hk[h] == -1:
                hk[h] = key
                used += 1
            if hv[h] == 0:
                dist_[c, q] += 1
            hv[h] += 1
    return used


@njit(cache=True, nogil=True)
def _class_numeric(c, skip, head, nxt, num, j):
    """lo, hi, NULL count of numeric QI j over class c without row ``skip``."""
    lo = INF
    hi = -INF
    nn = 0
    i = head[c]
    while i >= 0:
        if i != skip:
            x = num[j, i]
            if np.isnan(x):
                nn += 1
            else:
                if x < lo:
                    lo = x
                if x > hi:
                    hi = x
        i = nxt[i]
    return lo, hi, nn


@njit(cache=True, nogil=True)
def _class_sum(c, size, lo, hi, nn, dist_, wn, num_act, wc, cat_act, card):
    s = 0.0
    for j in range(wn.shape[0]):
        if num_act[j]:
            s += wn[j] * _num_ncp(lo[c, j], hi[c, j], nn[c, j], size[c])
    for q in range(wc.shape[0]):
        if cat_act[q]:
            s += wc[q] * _cat_ncp(dist_[c, q], card[q])
    return s


class _Dummy:  # pragma: no cover - keeps linters quiet about the section below
    pass
