"""Pairs of neighbouring classes split anew (the last phase of :func:`.refine.finish`).

The refinement's moves and swaps change one or two rows at a time, and stop where no such
change pays: at large k a class of k rows then keeps a value, or a wide range, that only a
different split of its rows with a neighbour's would drop. Here the rows of two classes A
and B are pooled and split again:

* along each of a few row orders (:func:`_orders`: each QI's values, and the first numeric
  paired with each categorical either way), at the cut point of least cost that leaves both sides
  standing for k rows or more (two sweeps over the pooled rows);
* then each of the best cut and the current split is improved by moves and swaps between
  its two sides (:func:`_polish`), every pooled row a candidate (the refinement looks only
  at rows near in the row order).

The split of least cost replaces A and B when it costs less than they do (by more than
:data:`.costs.EPS`), both sides stand for k rows or more, keep the per-column limits and
keep the privacy criteria: the total cost never grows. A class's partners are its
:data:`NEAR` neighbours on each side in the order of the classes' mean row position, of
which the :data:`PARTNERS` whose pooled rows cost least over the two classes' are tried,
until one pair is split anew. A round visits every class once (a class split anew waits
for the next round); after the first, only pairs of which a class changed in the round
before are tried. Rounds stop when one changes nothing, after ``rounds`` or when ``stop[0]``
is set.

Cost: O(orders * n log n) for the orders, then per round O(orders * n) to sort each
class's rows in each order, O(n / k * NEAR * k * d) to rank the partners, O(n / k *
PARTNERS * orders * k * d) for the cuts and O(STEPS * (k * d + starters * k)) per polish,
where starters are the rows whose side is cheaper without them (a swap gains only when one
of its rows is one): linear in the rows for a given k. Memory: O(orders * n) for the
orders; categorical codes are renumbered over the rows at hand, so the value counts take
O(n * d) whatever the cardinalities.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from .costs import EPS, INF, cat_ncp, num_ncp
from .criteria import rows_ok

#: a class's neighbours on each side (in the order of the classes' mean row position) that
#: are ranked as partners
NEAR = 20
#: of those, the partners tried (least cost of their pooled rows first)
PARTNERS = 6
#: moves and swaps of one polish at most
STEPS = 50
#: row orders the cuts are tried along at most (each QI alone, then pairs)
MAX_ORDERS = 32
#: swaps priced in full per step of a polish, at most, per pooled row
SWAPS = 4


#: The re-split's state besides the table: ``code`` the categorical codes renumbered per QI
#: (:func:`_local_codes`) and ``vmax`` their most values, the counts' stride per QI;
#: ``ranks[u, i]`` row i's rank in order u and ``perms[u]`` the rows in that order;
#: ``start`` the classes' segments of ``members`` (their rows) and of ``sorted_m[u]`` (their
#: rows in order u); ``cnt``/``cnt2`` value counts of one class or two sides (zeros between
#: calls); ``pool`` the rows of the pair at hand, ``cand`` a split of them (side 0 first),
#: ``side``/``kept`` the sides of two splits; ``pre`` the cut's prefix costs; the sweep's
#: bounds, NULL and distinct counts ``lo``/``hi``/``nn``/``dist``; the polish's per-side
#: bounds ``b2`` (lowest, second lowest, highest, second highest), NULL and distinct counts
#: ``nn2``/``dist2``, row counts ``sz`` and rows stood for ``w2``, ``without[t]``, the
#: sum_q w_q NCP_q of pooled row t's side without it, and the rows a swap starts from
#: (``starters``) with what their side saves without them (``saving``, negated).
Scratch = namedtuple(
    "Scratch",
    (
        "code",
        "vmax",
        "ranks",
        "perms",
        "start",
        "members",
        "sorted_m",
        "cnt",
        "cnt2",
        "pool",
        "cand",
        "side",
        "kept",
        "pre",
        "lo",
        "hi",
        "nn",
        "dist",
        "b2",
        "nn2",
        "dist2",
        "sz",
        "w2",
        "without",
        "starters",
        "saving",
    ),
)


@njit(cache=True, nogil=True)
def _local_codes(cat, card, cat_act):
    """The categorical codes renumbered 0, 1, ... per QI in order of first appearance (so the
    counts below take the rows' distinct values, not the cardinalities), and the most
    distinct values of any QI."""
    dc = cat.shape[0]
    n = cat.shape[1]
    out = np.zeros((dc, n), dtype=np.int64)
    top = 1
    for q in range(dc):
        if not cat_act[q]:
            continue
        seen = np.full(card[q], -1, dtype=np.int64)
        used = 0
        for i in range(n):
            v = cat[q, i]
            if seen[v] < 0:
                seen[v] = used
                used += 1
            out[q, i] = seen[v]
        if used > top:
            top = used
    return out, top


@njit(cache=True, nogil=True)
def _stable_order(key, perm):
    """``perm`` (row indices) reordered by ``key`` of its rows, ties kept in ``perm``'s order."""
    sub = np.empty(perm.shape[0])
    for t in range(perm.shape[0]):
        sub[t] = key[perm[t]]
    o = np.argsort(sub, kind="mergesort")
    return perm[o]


@njit(cache=True, nogil=True)
def _orders(raw, num_act, code, cat_act, vmax, wt):
    """The rank of every row in each order the cuts are tried along (``ranks[u, i]``), and
    the rows in each order (``perms[u, t]``): each active QI alone, then the first active
    numeric with each active categorical (the numeric first, then the categorical first),
    at most MAX_ORDERS; ties in row order. A numeric ranks by value
    (NULL last); a categorical by the mean of the first active numeric over its rows (by
    code without one), so that a cut groups values of alike numbers."""
    dn = raw.shape[0]
    dc = code.shape[0]
    n = code.shape[1]
    first = -1
    for j in range(dn):
        if num_act[j]:
            first = j
            break
    keys = np.empty((dn + dc, n))
    for j in range(dn):
        for i in range(n):
            x = raw[j, i]
            keys[j, i] = INF if np.isnan(x) else x
    total = np.zeros(vmax)
    count = np.zeros(vmax)
    for q in range(dc):
        if not cat_act[q]:
            continue
        for v in range(vmax):
            total[v] = 0.0
            count[v] = 0.0
        if first >= 0:
            for i in range(n):
                x = raw[first, i]
                if not np.isnan(x):
                    total[code[q, i]] += wt[i] * x
                    count[code[q, i]] += wt[i]
        for i in range(n):
            v = code[q, i]
            keys[dn + q, i] = total[v] / count[v] if count[v] > 0 else v
    act = np.empty(dn + dc, dtype=np.int64)
    n_act = 0
    for j in range(dn):
        if num_act[j]:
            act[n_act] = j
            n_act += 1
    for q in range(dc):
        if cat_act[q]:
            act[n_act] = dn + q
            n_act += 1
    plan = np.full((MAX_ORDERS, 2), -1, dtype=np.int64)
    n_ord = 0
    for a in range(n_act):
        if n_ord < MAX_ORDERS:
            plan[n_ord, 0] = act[a]
            n_ord += 1
    for q in range(dc):
        if first < 0 or not cat_act[q]:
            continue
        for first_key, second_key in ((first, dn + q), (dn + q, first)):
            if n_ord < MAX_ORDERS:
                plan[n_ord, 0] = first_key
                plan[n_ord, 1] = second_key
                n_ord += 1
    ranks = np.empty((n_ord, n), dtype=np.int32)
    perms = np.empty((n_ord, n), dtype=np.int32)
    for u in range(n_ord):
        perm = np.arange(n)
        if plan[u, 1] >= 0:
            perm = _stable_order(keys[plan[u, 1]], perm)
        perm = _stable_order(keys[plan[u, 0]], perm)
        for t in range(n):
            ranks[u, perm[t]] = t
            perms[u, t] = perm[t]
    return ranks, perms


@njit(cache=True, nogil=True)
def _open_scratch(tab, n_cls):
    raw, cat, card, cat_act = tab.raw, tab.cat, tab.card, tab.cat_act
    n = cat.shape[1]
    dn = raw.shape[0]
    dc = cat.shape[0]
    code, vmax = _local_codes(cat, card, cat_act)
    ranks, perms = _orders(raw, tab.num_act, code, cat_act, vmax, tab.wt)
    return Scratch(
        code,
        vmax,
        ranks,
        perms,
        np.zeros(n_cls + 1, dtype=np.int64),
        np.empty(n, dtype=np.int64),
        np.empty((ranks.shape[0], n), dtype=np.int32),
        np.zeros(dc * vmax, dtype=np.int64),
        np.zeros((2, dc * vmax), dtype=np.int64),
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.int64),
        np.empty(n + 1),
        np.full(dn, INF),
        np.full(dn, -INF),
        np.zeros(dn, dtype=np.int64),
        np.zeros(dc, dtype=np.int64),
        np.empty((2, dn, 4)),
        np.empty((2, dn), dtype=np.int64),
        np.empty((2, dc), dtype=np.int64),
        np.empty(2, dtype=np.int64),
        np.empty(2, dtype=np.int64),
        np.empty(n),
        np.empty(n, dtype=np.int64),
        np.empty(n),
    )


@njit(cache=True, nogil=True)
def _cost(tab, sc, rows, a, b):
    """What the rows ``rows[a:b]`` cost as one class: the rows they stand for times
    sum_q w_q NCP_q."""
    raw, span, wn, num_act, card, wc, cat_act, wt = (
        tab.raw, tab.span, tab.wn, tab.num_act, tab.card, tab.wc, tab.cat_act, tab.wt
    )  # fmt: skip
    code, vmax, cnt = sc.code, sc.vmax, sc.cnt
    s = 0.0
    for j in range(raw.shape[0]):
        if not num_act[j]:
            continue
        lo = INF
        hi = -INF
        nn = 0
        for t in range(a, b):
            x = raw[j, rows[t]]
            if np.isnan(x):
                nn += 1
            else:
                lo = min(lo, x)
                hi = max(hi, x)
        s += wn[j] * num_ncp(lo, hi, nn, b - a, span[j])
    for q in range(code.shape[0]):
        if not cat_act[q]:
            continue
        d = 0
        for t in range(a, b):
            v = q * vmax + code[q, rows[t]]
            if cnt[v] == 0:
                d += 1
            cnt[v] += 1
        for t in range(a, b):
            cnt[q * vmax + code[q, rows[t]]] = 0
        s += wc[q] * cat_ncp(d, card[q])
    w = 0
    for t in range(a, b):
        w += wt[rows[t]]
    return w * s


@njit(cache=True, nogil=True)
def _within_limits(tab, sc, rows, a, b):
    """Whether the rows ``rows[a:b]`` as one class keep the per-column limits."""
    raw, wlim, vlim, cat_act = tab.raw, tab.wlim, tab.vlim, tab.cat_act
    code, vmax, cnt = sc.code, sc.vmax, sc.cnt
    for j in range(raw.shape[0]):
        if wlim[j] == INF:
            continue
        lo = INF
        hi = -INF
        for t in range(a, b):
            x = raw[j, rows[t]]
            if not np.isnan(x):
                lo = min(lo, x)
                hi = max(hi, x)
        if hi - lo > wlim[j]:
            return False
    ok = True
    for q in range(code.shape[0]):
        if not cat_act[q] or not ok:
            continue
        d = 0
        for t in range(a, b):
            v = q * vmax + code[q, rows[t]]
            if cnt[v] == 0:
                d += 1
            cnt[v] += 1
        for t in range(a, b):
            cnt[q * vmax + code[q, rows[t]]] = 0
        if d > vlim[q]:
            ok = False
    return ok


@njit(cache=True, nogil=True, inline="always")
def _sweep_add(r, raw, num_act, code, cat_act, vmax, cnt, lo, hi, nn, dist):
    """Row r joins the sweep's class: its bounds, NULL counts and distinct counts."""
    for j in range(raw.shape[0]):
        if num_act[j]:
            x = raw[j, r]
            if np.isnan(x):
                nn[j] += 1
            else:
                lo[j] = min(lo[j], x)
                hi[j] = max(hi[j], x)
    for q in range(code.shape[0]):
        if cat_act[q]:
            v = q * vmax + code[q, r]
            if cnt[v] == 0:
                dist[q] += 1
            cnt[v] += 1


@njit(cache=True, nogil=True, inline="always")
def _sweep_ncp(size, span, wn, num_act, card, wc, cat_act, lo, hi, nn, dist):
    """sum_q w_q NCP_q of the sweep's class of ``size`` rows."""
    s = 0.0
    for j in range(wn.shape[0]):
        if num_act[j]:
            s += wn[j] * num_ncp(lo[j], hi[j], nn[j], size, span[j])
    for q in range(wc.shape[0]):
        if cat_act[q]:
            s += wc[q] * cat_ncp(dist[q], card[q])
    return s


@njit(cache=True, nogil=True)
def _sweep_reset(rows, a, b, code, vmax, cnt, lo, hi, nn, dist):
    """The sweep's counts of ``rows[a:b]`` back to zeros, its bounds to none."""
    for t in range(a, b):
        for q in range(code.shape[0]):
            cnt[q * vmax + code[q, rows[t]]] = 0
    for j in range(lo.shape[0]):
        lo[j] = INF
        hi[j] = -INF
        nn[j] = 0
    for q in range(dist.shape[0]):
        dist[q] = 0


@njit(cache=True, nogil=True)
def _best_cut(tab, sc, m, w_all, k):
    """The cut c of ``sc.cand[:m]`` into its first c rows and the others of least cost,
    each side standing for k rows or more, and that cost; (INF, -1) when there is none. One
    sweep forward to the last cut, one backward to the first, so a pair of classes of about
    k rows each costs about one pass over its rows."""
    raw, span, wn, num_act, card, wc, cat_act, wt = (
        tab.raw, tab.span, tab.wn, tab.num_act, tab.card, tab.wc, tab.cat_act, tab.wt
    )  # fmt: skip
    rows, code, vmax, cnt, pre = sc.cand, sc.code, sc.vmax, sc.cnt, sc.pre
    lo, hi, nn, dist = sc.lo, sc.hi, sc.nn, sc.dist
    c_lo = -1
    c_hi = -1
    w = 0
    for t in range(m - 1):
        w += wt[rows[t]]
        if w >= k and w_all - w >= k:
            if c_lo < 0:
                c_lo = t + 1
            c_hi = t + 1
    if c_lo < 0:
        return INF, -1
    w = 0
    for t in range(c_hi):
        r = rows[t]
        w += wt[r]
        _sweep_add(r, raw, num_act, code, cat_act, vmax, cnt, lo, hi, nn, dist)
        if t + 1 >= c_lo:
            pre[t + 1] = w * _sweep_ncp(t + 1, span, wn, num_act, card, wc, cat_act, lo, hi, nn, dist)
    _sweep_reset(rows, 0, c_hi, code, vmax, cnt, lo, hi, nn, dist)
    best = INF
    at = -1
    w = 0
    for t in range(m - 1, c_lo - 1, -1):
        r = rows[t]
        w += wt[r]
        _sweep_add(r, raw, num_act, code, cat_act, vmax, cnt, lo, hi, nn, dist)
        if t <= c_hi:
            c = pre[t] + w * _sweep_ncp(m - t, span, wn, num_act, card, wc, cat_act, lo, hi, nn, dist)
            if c <= best:
                best = c
                at = t
    _sweep_reset(rows, c_lo, m, code, vmax, cnt, lo, hi, nn, dist)
    return best, at


@njit(cache=True, nogil=True)
def _merge(sc, u, A, B):
    """``sc.cand``: the rows of classes A and B in order u (a merge of their sorted rows)."""
    sorted_m, ranks, start, out = sc.sorted_m, sc.ranks, sc.start, sc.cand
    i = start[A]
    a1 = start[A + 1]
    j = start[B]
    b1 = start[B + 1]
    t = 0
    while i < a1 or j < b1:
        if j >= b1 or (i < a1 and ranks[u, sorted_m[u, i]] < ranks[u, sorted_m[u, j]]):
            out[t] = sorted_m[u, i]
            i += 1
        else:
            out[t] = sorted_m[u, j]
            j += 1
        t += 1


@njit(cache=True, nogil=True)
def _side_bounds(rows, m, side, sd, raw, b2, nn2):
    """Per numeric QI, side ``sd``'s lowest, second lowest, highest and second highest
    values (ties counted, as :func:`.classes._class_bounds`) and NULL count."""
    for j in range(raw.shape[0]):
        lo = INF
        lo2 = INF
        hi = -INF
        hi2 = -INF
        z = 0
        for t in range(m):
            if side[t] != sd:
                continue
            x = raw[j, rows[t]]
            if np.isnan(x):
                z += 1
                continue
            if x < lo:
                lo2 = lo
                lo = x
            elif x < lo2:
                lo2 = x
            if x > hi:
                hi2 = hi
                hi = x
            elif x > hi2:
                hi2 = x
        b2[sd, j, 0] = lo
        b2[sd, j, 1] = lo2
        b2[sd, j, 2] = hi
        b2[sd, j, 3] = hi2
        nn2[sd, j] = z


@njit(cache=True, nogil=True, inline="always")
def _swapped_ncp(b, nn, sd, j, out, into, size, span):
    """NCP of numeric QI j on side ``sd`` once value ``out`` leaves it and ``into`` joins it
    (NaN: NULL): the side's second lowest and second highest values (:func:`_side_bounds`)
    stand in for a bound that leaves."""
    lo = b[sd, j, 0]
    hi = b[sd, j, 2]
    z = nn[sd, j]
    if np.isnan(out):
        z -= 1
    else:
        if out <= lo:
            lo = b[sd, j, 1]
        if out >= hi:
            hi = b[sd, j, 3]
    if np.isnan(into):
        z += 1
    else:
        lo = min(lo, into)
        hi = max(hi, into)
    return num_ncp(lo, hi, z, size, span)


@njit(cache=True, nogil=True)
def _polish(tab, sc, m, side, k):
    """Moves and swaps of rows of ``sc.pool[:m]`` between side 0 and side 1 (``side[t]``,
    changed in place), the one that lowers the two sides' cost most first, each side
    standing for k rows or more, at most STEPS. A swap is tried only from a row whose side
    is cheaper without it (as in the refinement).

    One function on purpose, as :func:`.refine._refine_pass`: the loops over pairs of rows
    read the arrays once, here."""
    raw, span, wn, num_act, card, wc, cat_act, wt = (
        tab.raw, tab.span, tab.wn, tab.num_act, tab.card, tab.wc, tab.cat_act, tab.wt
    )  # fmt: skip
    rows, code, vmax, cnt2 = sc.pool, sc.code, sc.vmax, sc.cnt2
    b, nn, dist, sz, w, s_without = sc.b2, sc.nn2, sc.dist2, sc.sz, sc.w2, sc.without
    starters, saving = sc.starters, sc.saving
    dn = raw.shape[0]
    dc = code.shape[0]
    w[0] = 0
    w[1] = 0
    sz[0] = 0
    sz[1] = 0
    for q in range(dc):
        dist[0, q] = 0
        dist[1, q] = 0
    for t in range(m):
        r = rows[t]
        sd = side[t]
        w[sd] += wt[r]
        sz[sd] += 1
        for q in range(dc):
            if cat_act[q]:
                v = q * vmax + code[q, r]
                if cnt2[sd, v] == 0:
                    dist[sd, q] += 1
                cnt2[sd, v] += 1
    s_side = np.zeros(2)
    for _ in range(STEPS):
        _side_bounds(rows, m, side, 0, raw, b, nn)
        _side_bounds(rows, m, side, 1, raw, b, nn)
        for sd in range(2):
            s = 0.0
            for j in range(dn):
                if num_act[j]:
                    s += wn[j] * num_ncp(b[sd, j, 0], b[sd, j, 2], nn[sd, j], sz[sd], span[j])
            for q in range(dc):
                if cat_act[q]:
                    s += wc[q] * cat_ncp(dist[sd, q], card[q])
            s_side[sd] = s
        cur = w[0] * s_side[0] + w[1] * s_side[1]
        # each row's side without it
        for t in range(m):
            r = rows[t]
            a = side[t]
            s = 0.0
            for j in range(dn):
                if not num_act[j]:
                    continue
                x = raw[j, r]
                z = nn[a, j]
                lo = b[a, j, 0]
                hi = b[a, j, 2]
                if np.isnan(x):
                    z -= 1
                else:
                    if x <= lo:
                        lo = b[a, j, 1]
                    if x >= hi:
                        hi = b[a, j, 3]
                s += wn[j] * num_ncp(lo, hi, z, sz[a] - 1, span[j])
            for q in range(dc):
                if cat_act[q]:
                    d = dist[a, q]
                    if cnt2[a, q * vmax + code[q, r]] == 1:
                        d -= 1
                    s += wc[q] * cat_ncp(d, card[q])
            s_without[t] = s
        best = EPS
        best_t = -1
        best_u = -1
        for t in range(m):
            r = rows[t]
            a = side[t]
            o = 1 - a
            # r moves to the other side
            if w[a] - wt[r] >= k:
                s = 0.0
                for j in range(dn):
                    if not num_act[j]:
                        continue
                    x = raw[j, r]
                    if np.isnan(x):
                        s += wn[j] * num_ncp(b[o, j, 0], b[o, j, 2], nn[o, j] + 1, sz[o] + 1, span[j])
                    else:
                        lo = min(b[o, j, 0], x)
                        hi = max(b[o, j, 2], x)
                        s += wn[j] * num_ncp(lo, hi, nn[o, j], sz[o] + 1, span[j])
                for q in range(dc):
                    if cat_act[q]:
                        d = dist[o, q]
                        if cnt2[o, q * vmax + code[q, r]] == 0:
                            d += 1
                        s += wc[q] * cat_ncp(d, card[q])
                gain = cur - (w[a] - wt[r]) * s_without[t] - (w[o] + wt[r]) * s
                if gain > best:
                    best = gain
                    best_t = t
                    best_u = -1
        # swaps, from the rows whose side is cheaper without them, the largest saving first,
        # at most SWAPS * m of them priced in full
        n_start = 0
        for t in range(m):
            if s_without[t] < s_side[side[t]]:
                starters[n_start] = t
                saving[n_start] = s_without[t] - s_side[side[t]]
                n_start += 1
        by_saving = np.argsort(saving[:n_start], kind="mergesort")
        priced = 0
        for e in range(n_start):
            if priced >= SWAPS * m:
                break
            t = starters[by_saving[e]]
            r = rows[t]
            a = side[t]
            o = 1 - a
            for u in range(m):
                if side[u] != o:
                    continue
                y_row = rows[u]
                wa = w[a] - wt[r] + wt[y_row]
                wo = w[o] - wt[y_row] + wt[r]
                if wa < k or wo < k or cur - wa * s_without[t] - wo * s_without[u] <= best:
                    continue
                priced += 1
                sa = 0.0
                so = 0.0
                for j in range(dn):
                    if not num_act[j]:
                        continue
                    x = raw[j, r]
                    y = raw[j, y_row]
                    # side a without r, with y_row; side o without y_row, with r
                    sa += wn[j] * _swapped_ncp(b, nn, a, j, x, y, sz[a], span[j])
                    so += wn[j] * _swapped_ncp(b, nn, o, j, y, x, sz[o], span[j])
                for q in range(dc):
                    if not cat_act[q]:
                        continue
                    vr = q * vmax + code[q, r]
                    vs = q * vmax + code[q, y_row]
                    da = dist[a, q]
                    do = dist[o, q]
                    if vr != vs:
                        if cnt2[a, vr] == 1:
                            da -= 1
                        if cnt2[a, vs] == 0:
                            da += 1
                        if cnt2[o, vs] == 1:
                            do -= 1
                        if cnt2[o, vr] == 0:
                            do += 1
                    sa += wc[q] * cat_ncp(da, card[q])
                    so += wc[q] * cat_ncp(do, card[q])
                gain = cur - wa * sa - wo * so
                if gain > best:
                    best = gain
                    best_t = t
                    best_u = u
        if best_t < 0:
            break
        for t in (best_t, best_u):
            if t < 0:
                continue
            r = rows[t]
            a = side[t]
            o = 1 - a
            w[a] -= wt[r]
            w[o] += wt[r]
            sz[a] -= 1
            sz[o] += 1
            for q in range(dc):
                if cat_act[q]:
                    v = q * vmax + code[q, r]
                    cnt2[a, v] -= 1
                    if cnt2[a, v] == 0:
                        dist[a, q] -= 1
                    if cnt2[o, v] == 0:
                        dist[o, q] += 1
                    cnt2[o, v] += 1
            side[t] = o
    for t in range(m):
        for q in range(dc):
            v = q * vmax + code[q, rows[t]]
            cnt2[0, v] = 0
            cnt2[1, v] = 0


@njit(cache=True, nogil=True)
def _split_cost(tab, sc, m, side):
    """``sc.cand[:m]``: the rows of ``sc.pool[:m]`` of side 0, then those of side 1; returns
    how many are of side 0 and what the two sides cost."""
    rows, out = sc.pool, sc.cand
    n0 = 0
    for t in range(m):
        if side[t] == 0:
            out[n0] = rows[t]
            n0 += 1
    n1 = n0
    for t in range(m):
        if side[t] == 1:
            out[n1] = rows[t]
            n1 += 1
    return n0, _cost(tab, sc, out, 0, n0) + _cost(tab, sc, out, n0, m)


@njit(cache=True, nogil=True)
def _keeps_all(tab, cr, sc, m, n0, k):
    """Whether both sides of the split in ``sc.cand[:m]`` (side 0 its first n0 rows) stand
    for k rows or more and keep the per-column limits and the criteria."""
    wt, rows = tab.wt, sc.cand
    w0 = 0
    w1 = 0
    for t in range(m):
        if t < n0:
            w0 += wt[rows[t]]
        else:
            w1 += wt[rows[t]]
    if w0 < k or w1 < k:
        return False
    if not (_within_limits(tab, sc, rows, 0, n0) and _within_limits(tab, sc, rows, n0, m)):
        return False
    if not cr.act:
        return True
    scode, scnt, soff, sp, sord, crit_i, crit_f = (
        cr.scode,
        cr.scnt,
        cr.soff,
        cr.sp,
        cr.sord,
        cr.crit_i,
        cr.crit_f,
    )
    return rows_ok(rows, 0, n0, scode, scnt, soff, sp, sord, crit_i, crit_f) and rows_ok(
        rows, n0, m, scode, scnt, soff, sp, sord, crit_i, crit_f
    )


@njit(cache=True, nogil=True)
def _try_pair(tab, cr, sc, lab, A, B, now, k):
    """Split the rows of classes A and B anew (see the module docstring) when that lowers
    their cost ``now`` and keeps k, the limits and the criteria; returns whether it did."""
    wt, start, members, pool, side, kept = tab.wt, sc.start, sc.members, sc.pool, sc.side, sc.kept
    m = 0
    w_all = 0
    for c in (A, B):
        for t in range(start[c], start[c + 1]):
            pool[m] = members[t]
            kept[m] = 0 if c == A else 1
            w_all += wt[members[t]]
            m += 1
    # the current split, polished
    _polish(tab, sc, m, kept, k)
    _, c_kept = _split_cost(tab, sc, m, kept)
    # the best cut along an order, polished
    best = INF
    best_u = -1
    best_at = -1
    for u in range(sc.ranks.shape[0]):
        _merge(sc, u, A, B)
        c, at = _best_cut(tab, sc, m, w_all, k)
        if c < best:
            best = c
            best_u = u
            best_at = at
    c_cut = INF
    if best_u >= 0:
        _merge(sc, best_u, A, B)
        ranks = sc.ranks
        first = ranks[best_u, sc.cand[best_at]]
        for t in range(m):
            side[t] = 0 if ranks[best_u, pool[t]] < first else 1
        _polish(tab, sc, m, side, k)
        _, c_cut = _split_cost(tab, sc, m, side)
    # the cheaper of the two first, then the other, while it saves and keeps everything
    for attempt in range(2):
        use_cut = (c_cut < c_kept) == (attempt == 0)
        if not (c_cut if use_cut else c_kept) < now - EPS:
            continue
        n0, _ = _split_cost(tab, sc, m, side if use_cut else kept)
        if not _keeps_all(tab, cr, sc, m, n0, k):
            continue
        for t in range(m):
            lab[sc.cand[t]] = A if t < n0 else B
        return True
    return False


@njit(cache=True, nogil=True)
def _open_round(tab, sc, lab, n_cls, cost, centre):
    """The classes' member lists (``sc.start``, ``sc.members``), their rows in each order
    (``sc.sorted_m``), costs and mean row positions."""
    start, members, sorted_m, perms = sc.start, sc.members, sc.sorted_m, sc.perms
    n = lab.shape[0]
    fill = np.empty(n_cls, dtype=np.int64)
    start[:] = 0
    for i in range(n):
        if lab[i] >= 0:
            start[lab[i] + 1] += 1
    for c in range(n_cls):
        start[c + 1] += start[c]
        fill[c] = start[c]
    for i in range(n):
        c = lab[i]
        if c >= 0:
            members[fill[c]] = i
            fill[c] += 1
    for c in range(n_cls):
        cost[c] = _cost(tab, sc, members, start[c], start[c + 1])
        total = 0.0
        for t in range(start[c], start[c + 1]):
            total += members[t]
        centre[c] = total / max(start[c + 1] - start[c], 1)
    for u in range(perms.shape[0]):
        for c in range(n_cls):
            fill[c] = start[c]
        for t in range(n):
            i = perms[u, t]
            c = lab[i]
            if c >= 0:
                sorted_m[u, fill[c]] = i
                fill[c] += 1


@njit(cache=True, nogil=True)
def resplit(tab, cr, lab, k, rounds, stop, stats):
    """Rounds of pairs of classes split anew (see the module docstring) on the labels
    ``lab`` (rows labelled below 0 are left alone); ``stats`` receives [rounds, pairs split
    anew]. The table ``tab`` and criteria ``cr`` are those of :func:`.refine.finish`."""
    n_cls = 0
    for i in range(lab.shape[0]):
        if lab[i] + 1 > n_cls:
            n_cls = lab[i] + 1
    if n_cls < 2 or rounds <= 0:
        return
    sc = _open_scratch(tab, n_cls)
    start, members, pool = sc.start, sc.members, sc.pool
    cost = np.empty(n_cls)
    centre = np.empty(n_cls)
    pos = np.empty(n_cls, dtype=np.int64)
    done = np.zeros(n_cls, dtype=np.bool_)
    changed = np.full(n_cls, -2, dtype=np.int64)  # the last round a class changed in
    near = np.empty(2 * NEAR, dtype=np.int64)
    near_cost = np.empty(2 * NEAR)
    n_rounds = 0
    n_split = 0
    for rnd in range(rounds):
        _open_round(tab, sc, lab, n_cls, cost, centre)
        by_centre = np.argsort(centre, kind="mergesort")
        for p in range(n_cls):
            pos[by_centre[p]] = p
        done[:] = False
        n_rounds += 1
        split = 0
        for A in range(n_cls):
            if stop[0]:
                break
            if done[A] or start[A + 1] == start[A]:
                continue
            # partners: the near classes whose pooled rows cost least over the two classes'
            n_near = 0
            for p in range(max(0, pos[A] - NEAR), min(n_cls, pos[A] + NEAR + 1)):
                B = by_centre[p]
                if B == A or done[B] or start[B + 1] == start[B]:
                    continue
                if rnd > 0 and changed[A] != rnd - 1 and changed[B] != rnd - 1:
                    continue  # tried in the round before, and neither has changed since
                m = 0
                for c in (A, B):
                    for t in range(start[c], start[c + 1]):
                        pool[m] = members[t]
                        m += 1
                near[n_near] = B
                near_cost[n_near] = _cost(tab, sc, pool, 0, m) - cost[A] - cost[B]
                n_near += 1
            ranked = np.argsort(near_cost[:n_near], kind="mergesort")
            for e in range(min(PARTNERS, n_near)):
                B = near[ranked[e]]
                if _try_pair(tab, cr, sc, lab, A, B, cost[A] + cost[B], k):
                    done[A] = True
                    done[B] = True
                    changed[A] = rnd
                    changed[B] = rnd
                    split += 1
                    break
        n_split += split
        if split == 0 or stop[0]:
            break
    stats[0] = n_rounds
    stats[1] = n_split
