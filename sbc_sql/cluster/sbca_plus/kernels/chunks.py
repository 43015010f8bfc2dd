"""Bounds over chunks of consecutive rows, so that the greedy pass's searches skip whole
chunks and still pick the rows a sweep of every row picks.

The rows the greedy pass holds are cut into chunks of ``CHUNK`` consecutive positions (in
the row order: rows near each other on the coarse order's curve, sharing its few-valued
categories). Each chunk keeps, over the rows alive when it was built, per numeric QI the
least and largest number (``raw`` and ``sc``) and whether a NULL or a number occurs, and per
categorical QI the values it holds as 64 bits (bit ``code & 63``) and its one value (-1
when it holds several). Rows only leave, so the bounds stay true until the chunks are
built again (at the start of a pass and after each compaction).

Two searches read them:

- :func:`grow_chunked` grows a class when every remaining row is a candidate (a block of
  the default's block mode): the least key of a chunk's rows is at least the key of its
  bounds (the numeric ranges from the chunk's box, the categorical costs of the QIs on which
  no value of the chunk is in the class), so a chunk whose bound is above the best key so far
  is skipped. SBC's distance to the seed, the tie-break, is computed only for rows of equal
  key (its tables only once one is needed).
- :func:`farthest_chunked` finds the next seed, the remaining row whose joining would raise
  the class just formed most: a chunk whose upper bound is below the best so far is skipped.

Every bound is computed with the operations of the row's own key, in the same order, on
values that bound the row's: rounding is monotone, so the bound holds for the floats too,
and the rows picked are those of the sweeps (:func:`.grow._grow`'s plain path and
``greedy._class_growth``), ties included.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .costs import INF
from .grow import _fill_table
from .similarity import sbc_tables

#: rows per chunk
CHUNK = 16
#: what a bound carried over from an earlier step of the class gives up for rounding (the
#: keys are sums of a few terms of at most 1 each: their rounding is below 1e-14)
SLACK = 1e-9


@njit(cache=True, nogil=True)
def build_chunks(raw, sc, cat, alive, n, blo, bhi, slo, shi, bnan, bnum, cset, cone, cn):
    """The bounds of the chunks of rows 0 .. n - 1 (the alive ones); returns the number of
    chunks."""
    dn = raw.shape[0]
    dc = cat.shape[0]
    nch = (n + CHUNK - 1) // CHUNK
    for c in range(nch):
        cn[c] = 0
        for j in range(dn):
            blo[c, j] = INF
            bhi[c, j] = -INF
            slo[c, j] = INF
            shi[c, j] = -INF
            bnan[c, j] = False
            bnum[c, j] = False
        for q in range(dc):
            cset[c, q] = 0
            cone[c, q] = -2
    for i in range(n):
        if not alive[i]:
            continue
        c = i // CHUNK
        cn[c] += 1
        for j in range(dn):
            x = raw[j, i]
            if np.isnan(x):
                bnan[c, j] = True
            else:
                bnum[c, j] = True
                blo[c, j] = min(blo[c, j], x)
                bhi[c, j] = max(bhi[c, j], x)
                y = sc[j, i]
                slo[c, j] = min(slo[c, j], y)
                shi[c, j] = max(shi[c, j], y)
        for q in range(dc):
            v = np.int64(cat[q, i])
            cset[c, q] |= np.int64(1) << (v & 63)
            if cone[c, q] == -2:
                cone[c, q] = v
            elif cone[c, q] != v:
                cone[c, q] = -1
    return nch


@njit(cache=True, nogil=True, inline="always")
def _row_key(i, raw, cat, span, wn, num_act, glo, ghi, gnn, size, aq, cbase, ccount, tabm):
    """The key of row i (as :func:`.grow._pool_num_keys` plus the mask table): sum_q w_q
    NCP_q of the class once row i joins it."""
    acc = 0.0
    for j in range(raw.shape[0]):
        if not num_act[j]:
            continue
        w = wn[j]
        nn = gnn[j]
        x = raw[j, i]
        if nn >= size:
            acc += w * (0.0 if np.isnan(x) else 1.0)
        elif nn > 0:
            acc += w * 1.0
        elif span[j] > 0:
            v = (max(ghi[j], x) - min(glo[j], x)) / span[j]
            if np.isnan(x):
                v = 1.0
            acc += w * v
        else:
            acc += w * (1.0 if np.isnan(x) else 0.0)
    mask = np.int64(0)
    for a in range(aq.shape[0]):
        q = aq[a]
        if ccount[cbase[q] + cat[q, i]] == 0:
            mask |= np.int64(1) << np.int64(a)
    return acc + tabm[0, mask]


@njit(cache=True, nogil=True, inline="always")
def _chunk_low(c, blo, bhi, bnan, bnum, cset, span, wn, num_act, glo, ghi, gnn, size, aq, hs, tabm):
    """A key no row of chunk c is below (see :func:`_row_key`)."""
    acc = 0.0
    for j in range(blo.shape[1]):
        if not num_act[j]:
            continue
        w = wn[j]
        nn = gnn[j]
        if nn >= size:
            v = 0.0 if bnan[c, j] else 1.0
        elif nn > 0:
            v = 1.0
        elif span[j] > 0:
            v = 1.0
            if bnum[c, j]:
                v = (max(ghi[j], blo[c, j]) - min(glo[j], bhi[c, j])) / span[j]
                if bnan[c, j] and v > 1.0:
                    v = 1.0
        else:
            v = 0.0 if bnum[c, j] else 1.0
        acc += w * v
    mask = np.int64(0)
    for a in range(aq.shape[0]):
        if (cset[c, aq[a]] & hs[a]) == 0:
            mask |= np.int64(1) << np.int64(a)
    return acc + tabm[0, mask]


@njit(cache=True, nogil=True, inline="always")
def _seed_distance(i, seed, sc, wn, num_act, cat, wc, cat_act, tab, cbase):
    """SBC's distance from row ``seed`` to row i, as :func:`.similarity._distances` sums it."""
    d = 0.0
    for j in range(sc.shape[0]):
        if not num_act[j]:
            continue
        w = wn[j]
        s = sc[j, seed]
        x = sc[j, i]
        if np.isnan(s):
            if not np.isnan(x):
                d += w
        else:
            e = abs(x - s)
            if np.isnan(e):
                e = 1.0
            d += w * e
    for q in range(cat.shape[0]):
        if not cat_act[q]:
            continue
        d += wc[q] * tab[cbase[q] + cat[q, i]]
    return d


@njit(cache=True, nogil=True)
def grow_chunked(
    seed,
    k,
    nch,
    raw,
    sc,
    cat,
    alive,
    rid,
    wt,
    span,
    wn,
    num_act,
    card,
    wc,
    cat_act,
    aq,
    cbase,
    ccount,
    dlt,
    tabm,
    glo,
    ghi,
    gnn,
    hs,
    members,
    blo,
    bhi,
    bnan,
    bnum,
    cset,
    cn,
    low,
    lowc,
    gdv,
    seed_codes,
    pred,
    cnt,
    cnt_off,
    pair,
    pair_off,
    tab,
    rank_keys,
    rank_vals,
    rank_heads,
):
    """Grow the seed's class to k rows (their multiplicities ``wt`` adding up to k) from every
    alive row, each step adding the row of least key, ties by SBC's distance to the seed, then
    position: the rows :func:`.grow._grow` adds when its pool holds every remaining row (no
    limits, no target, at most 8 active categoricals). The rows added are marked not alive.
    Returns the rows (``members``) the class holds, or minus that when no alive row is left
    before their multiplicities add up to k."""
    dn = raw.shape[0]
    na = aq.shape[0]
    for j in range(dn):
        x = raw[j, seed]
        if np.isnan(x):
            gnn[j] = 1
            glo[j] = INF
            ghi[j] = -INF
        else:
            gnn[j] = 0
            glo[j] = x
            ghi[j] = x
    for a in range(na):
        q = aq[a]
        v = np.int64(cat[q, seed])
        ccount[cbase[q] + v] = 1
        gdv[a] = 1
        hs[a] = np.int64(1) << (v & 63)
        dlt[a] = wc[q] * (2.0 / card[q])
    _fill_table(tabm, 0, dlt)
    members[0] = seed
    held = 1
    size = 1
    weight = wt[rid[seed]]
    tables = False
    if weight < k:
        cls_cat = 0.0  # sum_q w_q NCP_q of the class over the categoricals
        for step in range(1, k):
            # each chunk's bound: computed at the class's first step; at a later step the
            # bound of an earlier one, less the growth of the class's categorical part since
            # (the class's loss with any row only grows as the class does), and recomputed
            # when that is not above the best key
            first = -1
            least = INF
            for c in range(nch):
                if cn[c] == 0:
                    low[c] = INF
                    lowc[c] = 0.0
                    continue
                if step == 1:
                    b = _chunk_low(
                        c, blo, bhi, bnan, bnum, cset, span, wn, num_act, glo, ghi, gnn, size, aq, hs, tabm
                    )
                    low[c] = b
                    lowc[c] = cls_cat
                else:
                    b = low[c] + (lowc[c] - cls_cat) - SLACK
                if first < 0 or b < least:
                    least = b
                    first = c
            best = -1
            best_key = INF
            best_d = -1.0  # SBC's distance of the best row: not yet computed
            c = first
            nxt = 0
            while c >= 0:
                stop_i = min((c + 1) * CHUNK, alive.shape[0])
                for i in range(c * CHUNK, stop_i):
                    if not alive[i]:
                        continue
                    key = _row_key(
                        i, raw, cat, span, wn, num_act, glo, ghi, gnn, size, aq, cbase, ccount, tabm
                    )
                    if key > best_key:
                        continue
                    if key < best_key:
                        best_key = key
                        best = i
                        best_d = -1.0
                        continue
                    # a tie: SBC's distances to the seed, the tables once per class
                    if not tables:
                        for q in range(cat.shape[0]):
                            seed_codes[q] = cat[q, seed]
                        sbc_tables(
                            seed_codes, card, pred, cnt, cnt_off, pair, pair_off, k, cat_act, tab, cbase,
                            rank_keys, rank_vals, rank_heads,
                        )  # fmt: skip
                        tables = True
                    if best_d < 0:
                        best_d = _seed_distance(best, seed, sc, wn, num_act, cat, wc, cat_act, tab, cbase)
                    d = _seed_distance(i, seed, sc, wn, num_act, cat, wc, cat_act, tab, cbase)
                    if d < best_d or (d == best_d and i < best):
                        best_d = d
                        best = i
                # the next chunk whose bound is not above the best key
                c = -1
                while nxt < nch:
                    u = nxt
                    nxt += 1
                    if u == first or cn[u] == 0:
                        continue
                    if step > 1 and low[u] + (lowc[u] - cls_cat) - SLACK > best_key:
                        continue
                    if step > 1:
                        low[u] = _chunk_low(
                            u,
                            blo,
                            bhi,
                            bnan,
                            bnum,
                            cset,
                            span,
                            wn,
                            num_act,
                            glo,
                            ghi,
                            gnn,
                            size,
                            aq,
                            hs,
                            tabm,
                        )
                        lowc[u] = cls_cat
                    if low[u] <= best_key:
                        c = u
                        break
            if best < 0:
                # no row left (the sweep's pool ran dry): as _grow, minus the rows held
                held = -held
                break
            alive[best] = False
            members[step] = best
            held = step + 1
            weight += wt[rid[best]]
            if weight >= k:
                break
            for j in range(dn):
                x = raw[j, best]
                if np.isnan(x):
                    gnn[j] += 1
                else:
                    glo[j] = min(glo[j], x)
                    ghi[j] = max(ghi[j], x)
            for a in range(na):
                q = aq[a]
                v = np.int64(cat[q, best])
                p = cbase[q] + v
                ccount[p] += 1
                if ccount[p] > 1:
                    continue
                hs[a] |= np.int64(1) << (v & 63)
                gdv[a] += 1
                cls_cat += wc[q] * (gdv[a] / card[q] - (0.0 if gdv[a] == 2 else (gdv[a] - 1) / card[q]))
                # with the second value the cost of any other value drops from 2/card to 1/card
                second = dlt[a] != wc[q] * (1.0 / card[q])
                dlt[a] = wc[q] * (1.0 / card[q])
                if second:
                    _fill_table(tabm, 0, dlt)
            size += 1
    for t in range(abs(held)):
        i = members[t]
        for a in range(na):
            q = aq[a]
            ccount[cbase[q] + cat[q, i]] = 0
    return held


@njit(cache=True, nogil=True)
def farthest_chunked(
    nch,
    sc,
    wn,
    num_act,
    cat,
    wc,
    cat_act,
    card,
    cbase,
    clo,
    chi,
    cnn,
    inset,
    alive,
    slo,
    shi,
    bnan,
    bnum,
    cone,
    cn,
    high,
):
    """The alive row whose joining would raise the NCP of the class with scaled ranges
    clo/chi (clo > chi: all NULL), NULL flags cnn and values flagged in ``inset`` most (the
    sum ``greedy._class_growth`` computes; ties: the first position), or -1 when no row is
    alive."""
    dn = sc.shape[0]
    dc = cat.shape[0]
    first = -1
    most = -INF
    for c in range(nch):
        if cn[c] == 0:
            high[c] = -INF
            continue
        b = 0.0
        for j in range(dn):
            if not num_act[j]:
                continue
            w = wn[j]
            lo = clo[j]
            hi = chi[j]
            if lo > hi:
                b += w * (0.0 if (cnn[j] and not bnum[c, j]) else 1.0)
                continue
            e = -INF
            if bnum[c, j]:
                e = max(hi, shi[c, j]) - min(lo, slo[c, j]) - (hi - lo)
            if bnan[c, j]:
                e = max(e, 0.0 if cnn[j] else 1.0)
            b += w * e
        for q in range(dc):
            if not cat_act[q]:
                continue
            v = cone[c, q]
            b += 0.0 if (v >= 0 and inset[cbase[q] + v]) else wc[q] / card[q]
        high[c] = b
        if first < 0 or b > most:
            most = b
            first = c
    best = -1
    best_v = -INF
    c = first
    nxt = 0
    while c >= 0:
        for i in range(c * CHUNK, min((c + 1) * CHUNK, alive.shape[0])):
            if not alive[i]:
                continue
            v = 0.0
            for j in range(dn):
                if not num_act[j]:
                    continue
                w = wn[j]
                lo = clo[j]
                hi = chi[j]
                x = sc[j, i]
                if lo > hi:
                    v += w * (0.0 if (np.isnan(x) and cnn[j]) else 1.0)
                    continue
                e = max(hi, x) - min(lo, x) - (hi - lo)
                if np.isnan(x):
                    e = 0.0 if cnn[j] else 1.0
                v += w * e
            for q in range(dc):
                if not cat_act[q]:
                    continue
                v += 0.0 if inset[cbase[q] + cat[q, i]] else wc[q] / card[q]
            if v > best_v or (v == best_v and i < best):
                best_v = v
                best = i
        c = -1
        while nxt < nch:
            if nxt != first and high[nxt] >= best_v:
                c = nxt
                nxt += 1
                break
            nxt += 1
    return best
