"""SBCA compiled with numba: the classes of :func:`sbca.sbca`, byte for byte, much faster.

The reference spends its time in "distance from the seed to every remaining row, then the
k - 1 nearest". Here that loop runs in numba over a struct of arrays kept in SBCA's sort
order: numerics pre-scaled by their range (float64: float32 would round the sums
differently and change ties), category codes renumbered to the values present (uint16 when
they fit), one sweep per attribute into a distance buffer, then a separate scan for the k
smallest (ties by sort position). Sweeps run over slices that start at 0: numba then drops
its negative-index check and LLVM vectorizes them (measured 4x over a variable start).

Categorical distance tables follow :meth:`Contingency.distance_table` exactly, but cost
O(values present + nonzero counts * log) instead of a sort over the whole domain: every
value whose count is 0 has the same key, so its rank follows from its code alone. The pair
contingency tables are sparse (one entry per (predecessor value, value) pair that occurs),
so a block of a few thousand rows never allocates card(M) x card(N) counts.

Removed rows stay in place, marked dead, until they are a fifth of the range swept; then
the live rows are compacted in order. Sort order, and so tie-breaking, is never disturbed.

Every kernel is ``nogil``, and :func:`cluster_rows` does a whole block (gather, sort,
cluster, leftovers) in one compiled call, so blocks on threads run side by side
(see :mod:`blocks`).
"""

from __future__ import annotations

import numpy as np

from .model import SUPPRESSED, QIData
from .sbca_paper import Progress, sbca
from .similarity import Contingency

try:
    import numba

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised only where numba is absent
    numba = None
    HAVE_NUMBA = False


def _jit(fn):
    """Compile with numba when present; otherwise leave the function as plain Python."""
    if HAVE_NUMBA:
        return numba.njit(cache=True, nogil=True)(fn)
    return fn  # pragma: no cover


# ---------------------------------------------------------------------------------------
# Building the state: local codes, marginal counts, sparse pair counts
# ---------------------------------------------------------------------------------------


@_jit
def _localize(col, card, out):
    """Renumber one categorical column to 0..L-1 in ascending code order; return the codes.

    Distances depend on a value's rank among all ``card`` codes, but only the values present
    need a table entry; renumbering keeps tables and counts as small as the data.
    """
    n = col.shape[0]
    if card <= 2 * n + 64:
        idx = np.full(card, -1, np.int64)
        for i in range(n):
            idx[col[i]] = 0
        n_loc = 0
        for v in range(card):
            if idx[v] == 0:
                idx[v] = n_loc
                n_loc += 1
        codes = np.empty(n_loc, np.int64)
        for v in range(card):
            if idx[v] >= 0:
                codes[idx[v]] = v
        for i in range(n):
            out[i] = idx[col[i]]
        return codes
    order = np.argsort(col.astype(np.int64), kind="mergesort")
    n_loc = 0
    for j in range(n):
        if j == 0 or col[order[j]] != col[order[j - 1]]:
            n_loc += 1
        out[order[j]] = n_loc - 1
    codes = np.empty(n_loc, np.int64)
    for j in range(n):
        codes[out[order[j]]] = col[order[j]]
    return codes


@_jit
def _counting_order(key, n_keys, order):
    """``order`` stably re-sorted by key[order] (keys in 0..n_keys-1): a counting sort."""
    start = np.zeros(n_keys + 1, np.int64)
    for j in range(order.shape[0]):
        start[key[order[j]] + 1] += 1
    for v in range(n_keys):
        start[v + 1] += start[v]
    out = np.empty(order.shape[0], np.int64)
    for j in range(order.shape[0]):
        i = order[j]
        out[start[key[i]]] = i
        start[key[i]] += 1
    return out


@_jit
def _pair_entries(lm, ln, n_m, n_n, seg, ent_n, ent_c, pentry, e0):
    """Sparse counts of (M value, N value) pairs: one entry per pair that occurs.

    Entries are sorted by (M, N), so the entries of one M value are a contiguous segment
    with N ascending; ``pentry[i]`` is row i's entry, so removing a row is one decrement.
    Returns the number of entries.
    """
    n = lm.shape[0]
    key = lm.astype(np.int64) * n_n + ln
    order = _counting_order(lm, n_m, _counting_order(ln, n_n, np.arange(n)))
    n_ent = 0
    prev = -1
    for j in range(n):
        i = order[j]
        if key[i] != prev:
            prev = key[i]
            ent_n[e0 + n_ent] = ln[i]
            ent_c[e0 + n_ent] = 0
            seg[lm[i] + 1] += 1
            n_ent += 1
        ent_c[e0 + n_ent - 1] += 1
        pentry[i] = e0 + n_ent - 1
    seg[0] = e0
    for a in range(n_m):
        seg[a + 1] += seg[a]
    return n_ent


@_jit
def _build(codes, card, loc):
    """Local codes into ``loc``, marginal and pair counts of the rows (in sort order)."""
    n_cat, n = codes.shape
    goff = np.zeros(n_cat + 1, np.int64)
    room = 0
    for c in range(n_cat):
        room += min(card[c], n)
    gbuf = np.empty(room, np.int64)
    for c in range(n_cat):
        g = _localize(codes[c], card[c], loc[c])
        goff[c + 1] = goff[c] + g.shape[0]
        gbuf[goff[c] : goff[c + 1]] = g
    gcode = gbuf[: goff[n_cat]].copy()
    cnt = np.zeros(goff[n_cat], np.int64)
    for c in range(n_cat):
        for i in range(n):
            cnt[goff[c] + loc[c, i]] += 1
    n_pairs = max(n_cat - 1, 0)
    soff = np.zeros(n_pairs + 1, np.int64)
    for p in range(n_pairs):
        soff[p + 1] = soff[p] + (goff[p + 1] - goff[p]) + 1
    seg = np.zeros(soff[n_pairs], np.int64)
    ent_n = np.empty(n * n_pairs, np.int32)
    ent_c = np.empty(n * n_pairs, np.int64)
    pentry = np.empty((n_pairs, n), np.int64)
    e0 = 0
    for p in range(n_pairs):
        n_m = goff[p + 1] - goff[p]
        n_n = goff[p + 2] - goff[p + 1]
        e0 += _pair_entries(
            loc[p], loc[p + 1], n_m, n_n, seg[soff[p] : soff[p + 1]], ent_n, ent_c, pentry[p], e0
        )
    return goff, gcode, cnt, soff, seg, ent_n[:e0].copy(), ent_c[:e0].copy(), pentry


# ---------------------------------------------------------------------------------------
# Categorical distance tables (SPEC section 2)
# ---------------------------------------------------------------------------------------


@_jit
def _rank_table(table, card, s, xs, nz_u, nz_x, n_nz, gcode, keys, us, mark):
    """Write i / (card - 1) for every present value at rank i of the similarity order.

    The order is Contingency.distance_table's: key |x - x_seed| ascending, ties by code,
    seed first. ``nz_u``/``nz_x`` hold the values with a nonzero count (ascending code) and
    their x; every other value has x = 0, hence the same key z = |0 - x_seed|, so it ranks by
    code inside the run of key z: r0 + code - (seed before it) - (non-z nonzero values
    before it). Only nonzero values are sorted.
    """
    n_loc = table.shape[0]
    denom = float(card - 1)
    z = abs(0.0 - xs)
    m = 0
    for j in range(n_nz):
        u = nz_u[j]
        if u != s:
            keys[m] = abs(nz_x[j] - xs)
            us[m] = u
            m += 1
    order = np.argsort(keys[:m], kind="mergesort")
    table[s] = 0.0
    r = 1
    n_gt = 0
    for j in range(m):
        kk = keys[order[j]]
        if kk < z:
            table[us[order[j]]] = r / denom
            mark[us[order[j]]] = 1
            r += 1
        elif kk > z:
            mark[us[order[j]]] = 1
            n_gt += 1
    r0 = r
    gs = gcode[s]
    passed = 0
    for u in range(n_loc):
        if mark[u]:
            passed += 1
            mark[u] = 0
        elif u != s:
            g = gcode[u]
            rank = r0 + g - passed - (1 if gs < g else 0)
            table[u] = rank / denom
    r = card - n_gt
    for j in range(m):
        if keys[order[j]] > z:
            table[us[order[j]]] = r / denom
            r += 1


@_jit
def _distance_table(
    c,
    seed,
    k,
    loc,
    goff,
    gcode,
    cnt,
    card,
    soff,
    seg,
    ent_n,
    ent_c,
    pentry,
    table,
    keys,
    us,
    mark,
    nz_u,
    nz_x,
):
    """Distance table of categorical QI c (local codes) for the seed row, into ``table``."""
    g0 = goff[c]
    n_loc = goff[c + 1] - g0
    tb = table[g0 : g0 + n_loc]
    s = loc[c, seed]
    if card[c] == 2:
        for u in range(n_loc):
            tb[u] = 1.0
        tb[s] = 0.0
        return
    n_nz = 0
    if c == 0:
        # the first categorical QI: similarity from its own frequency column
        for u in range(n_loc):
            if cnt[g0 + u] > 0:
                nz_u[n_nz] = u
                nz_x[n_nz] = float(cnt[g0 + u])
                n_nz += 1
        xs = float(cnt[g0 + s])
    else:
        a = loc[c - 1, seed]
        lo = seg[soff[c - 1] + a]
        hi = seg[soff[c - 1] + a + 1]
        row_sum = 0
        for e in range(lo, hi):
            row_sum += ent_c[e]
        if row_sum < k:
            # the paper's Table 2: too few rows with the seed's M value, use all rows of M
            total = 0
            for u in range(n_loc):
                total += cnt[g0 + u]
            ftotal = float(total)
            xs = 0.0
            if total > 0:
                xs = cnt[g0 + s] / ftotal
                for u in range(n_loc):
                    if cnt[g0 + u] > 0:
                        nz_u[n_nz] = u
                        nz_x[n_nz] = cnt[g0 + u] / ftotal
                        n_nz += 1
        else:
            ftotal = float(row_sum)
            xs = ent_c[pentry[c - 1, seed]] / ftotal
            for e in range(lo, hi):
                if ent_c[e] > 0:
                    nz_u[n_nz] = ent_n[e]
                    nz_x[n_nz] = ent_c[e] / ftotal
                    n_nz += 1
    _rank_table(tb, card[c], s, xs, nz_u, nz_x, n_nz, gcode[g0 : g0 + n_loc], keys, us, mark)


# ---------------------------------------------------------------------------------------
# The greedy loop
# ---------------------------------------------------------------------------------------


@_jit
def _sweep_numeric(x, w, s, dist, assign):
    """Add (or write) w * d(seed, row) of one scaled numeric QI; s is the seed's value.

    Callers pass slices starting at 0: with a loop from 0 numba can drop its negative-index
    wraparound and LLVM vectorizes (measured 4x over a loop from a variable start).
    """
    if s != s:
        for i in range(x.shape[0]):
            t = 0.0 if x[i] != x[i] else 1.0
            dist[i] = w * t if assign else dist[i] + w * t
    elif assign:
        for i in range(x.shape[0]):
            d = abs(x[i] - s)
            dist[i] = w * (1.0 if d != d else d)
    else:
        for i in range(x.shape[0]):
            d = abs(x[i] - s)
            dist[i] += w * (1.0 if d != d else d)


@_jit
def _sweep_categorical(codes, tb, w, dist, assign):
    """Add (or write) w * table[code] of one categorical QI (slices starting at 0)."""
    if assign:
        for i in range(codes.shape[0]):
            dist[i] = w * tb[codes[i]]
    else:
        for i in range(codes.shape[0]):
            dist[i] += w * tb[codes[i]]


@_jit
def _nearest(dist, alive, k, best_d, best_i):
    """The k live rows with the smallest distance; ties go to the smaller position.

    Strict comparisons keep an earlier row ahead of a later one at equal distance, which
    is the reference's "below the k-th value, then the first rows equal to it". Positions
    are relative to the slices given.
    """
    n = dist.shape[0]
    nb = 0
    i = 0
    while nb < k and i < n:
        if alive[i]:
            _insert(best_d, best_i, nb, dist[i], i)
            nb += 1
        i += 1
    worst = best_d[k - 1]
    for j in range(n - i):
        d = dist[i + j]
        if d < worst and alive[i + j]:
            _insert(best_d, best_i, k - 1, d, i + j)
            worst = best_d[k - 1]


@_jit
def _insert(best_d, best_i, j, d, i):
    """Put (d, i) into the sorted prefix best[0..j], after every entry <= d."""
    while j > 0 and best_d[j - 1] > d:
        best_d[j] = best_d[j - 1]
        best_i[j] = best_i[j - 1]
        j -= 1
    best_d[j] = d
    best_i[j] = i


@_jit
def _compact(first, end, alive, num, loc, pentry, rid):
    """Move the live rows of first..end-1 to the front, in order; return their count."""
    w = 0
    for i in range(first, end):
        if alive[i]:
            for a in range(num.shape[0]):
                num[a, w] = num[a, i]
            for c in range(loc.shape[0]):
                loc[c, w] = loc[c, i]
            for p in range(pentry.shape[0]):
                pentry[p, w] = pentry[p, i]
            rid[w] = rid[i]
            alive[w] = True
            w += 1
    for i in range(w, end):
        alive[i] = False
    return w


@_jit
def _form_classes(
    num,
    num_w,
    loc,
    cat_w,
    active,
    card,
    goff,
    gcode,
    cnt,
    soff,
    seg,
    ent_n,
    ent_c,
    pentry,
    rid,
    alive,
    labels,
    st,
    k,
    max_classes,
):
    """Form up to ``max_classes`` classes; ``st`` = [classes, first, end, live] persists."""
    n_num = num.shape[0]
    n_cat = loc.shape[0]
    n = rid.shape[0]
    dist = np.empty(n, np.float64)
    table = np.empty(goff[n_cat], np.float64)
    max_loc = 1
    for c in range(n_cat):
        max_loc = max(max_loc, goff[c + 1] - goff[c])
    keys = np.empty(max_loc, np.float64)
    us = np.empty(max_loc, np.int64)
    mark = np.zeros(max_loc, np.uint8)
    nz_u = np.empty(max_loc, np.int64)
    nz_x = np.empty(max_loc, np.float64)
    best_d = np.empty(k, np.float64)
    best_i = np.empty(k, np.int64)
    cls, first, end, live = st[0], st[1], st[2], st[3]
    formed = 0
    while live >= k and formed < max_classes:
        while not alive[first]:
            first += 1
        seed = first
        assign = True
        span = dist[first:end]
        for a in range(n_num):
            _sweep_numeric(num[a, first:end], num_w[a], num[a, seed], span, assign)
            assign = False
        for c in range(n_cat):
            if active[c]:
                _distance_table(
                    c,
                    seed,
                    k,
                    loc,
                    goff,
                    gcode,
                    cnt,
                    card,
                    soff,
                    seg,
                    ent_n,
                    ent_c,
                    pentry,
                    table,
                    keys,
                    us,
                    mark,
                    nz_u,
                    nz_x,
                )
        for c in range(n_cat):
            if active[c]:
                _sweep_categorical(loc[c, first:end], table[goff[c] : goff[c + 1]], cat_w[c], span, assign)
                assign = False
        if assign:
            dist[first:end] = 0.0
        _nearest(span, alive[first:end], k, best_d, best_i)
        for j in range(k):
            i = first + best_i[j]
            alive[i] = False
            labels[rid[i]] = cls
            for c in range(n_cat):
                cnt[goff[c] + loc[c, i]] -= 1
            for p in range(pentry.shape[0]):
                ent_c[pentry[p, i]] -= 1
        live -= k
        cls += 1
        formed += 1
        while first < end and not alive[first]:
            first += 1
        if 5 * (end - first - live) > end - first:
            end = _compact(first, end, alive, num, loc, pentry, rid)
            first = 0
    st[0], st[1], st[2], st[3] = cls, first, end, live
    return formed


@_jit
def _live_rows(alive, rid, first, end):
    """Data rows still unclustered, in sort order."""
    out = np.empty(end - first, np.int64)
    m = 0
    for i in range(first, end):
        if alive[i]:
            out[m] = rid[i]
            m += 1
    return out[:m]


# ---------------------------------------------------------------------------------------
# Leftovers: the reference's "nearest" rule without a pass over the table per row
# ---------------------------------------------------------------------------------------


@_jit
def _numeric_ncp(cmin, cmax, nulls, span):
    """leftover.numeric_ncp for one class."""
    has_numbers = cmin > -np.inf and cmin < np.inf
    width = cmax - cmin if has_numbers else 0.0
    ncp = width / span if span > 0 else 0.0
    return 1.0 if (nulls > 0 and has_numbers) else ncp


@_jit
def _place_nearest(nums, cats, is_num, col_of, weight, span, card_q, card_b, labels, rows):
    """leftover.place_leftovers(mode="nearest"), the same floats in the same order.

    Class statistics (size, min, max, NULLs, distinct values, and whether each class holds
    each leftover row's value) are built once and updated as rows join, instead of being
    recomputed from every label for every leftover row.
    """
    n = labels.shape[0]
    n_left = rows.shape[0]
    n_cls = 0
    for i in range(n):
        if labels[i] + 1 > n_cls:
            n_cls = labels[i] + 1
    size = np.zeros(n_cls, np.float64)
    for i in range(n):
        if labels[i] >= 0:
            size[labels[i]] += 1.0
    cmin, cmax, nulls = _numeric_stats(nums, labels, n_cls)
    distinct, has = _categorical_stats(cats, card_b, labels, rows, n_cls)
    for t in range(n_left):
        r = rows[t]
        c = _cheapest_class(
            nums, is_num, col_of, weight, span, card_q, r, t, size, cmin, cmax, nulls, distinct, has
        )
        labels[r] = c
        size[c] += 1.0
        for q in range(is_num.shape[0]):
            a = col_of[q]
            if is_num[q]:
                v = nums[a, r]
                if v != v:
                    nulls[a, c] += 1.0
                else:
                    cmin[a, c] = min(cmin[a, c], v)
                    cmax[a, c] = max(cmax[a, c], v)
            elif not has[a, c, t]:
                distinct[a, c] += 1.0
                for u in range(t, n_left):
                    if cats[a, rows[u]] == cats[a, r]:
                        has[a, c, u] = True


@_jit
def _numeric_stats(nums, labels, n_cls):
    """Per numeric QI and class: min and max of the numbers, count of NULLs."""
    n_num, n = nums.shape
    cmin = np.full((n_num, n_cls), np.inf)
    cmax = np.full((n_num, n_cls), -np.inf)
    nulls = np.zeros((n_num, n_cls), np.float64)
    for a in range(n_num):
        x = nums[a]
        for i in range(n):
            c = labels[i]
            if c >= 0:
                v = x[i]
                if v != v:
                    nulls[a, c] += 1.0
                else:
                    cmin[a, c] = min(cmin[a, c], v)
                    cmax[a, c] = max(cmax[a, c], v)
    return cmin, cmax, nulls


@_jit
def _categorical_stats(cats, card_b, labels, rows, n_cls):
    """Per categorical QI and class: distinct values, and which leftover rows' values it holds."""
    n_cat, n = cats.shape
    n_left = rows.shape[0]
    distinct = np.zeros((n_cat, n_cls), np.float64)
    has = np.zeros((n_cat, n_cls, n_left), np.bool_)
    members = np.empty(n, np.int64)
    m = 0
    for i in range(n):
        if labels[i] >= 0:
            members[m] = i
            m += 1
    by_class = _counting_order(labels, n_cls, members[:m])
    for b in range(n_cat):
        x = cats[b]
        stamp = np.full(card_b[b], -1, np.int64)
        for j in range(m):
            i = by_class[j]
            c = labels[i]
            if stamp[x[i]] != c:
                stamp[x[i]] = c
                distinct[b, c] += 1.0
        for i in range(n):
            c = labels[i]
            if c >= 0:
                for t in range(n_left):
                    if x[i] == x[rows[t]]:
                        has[b, c, t] = True
    return distinct, has


@_jit
def _cheapest_class(nums, is_num, col_of, weight, span, card_q, r, t, size, cmin, cmax, nulls, distinct, has):
    """leftover.cheapest_class: argmin over classes of the NCP increase (numpy's argmin)."""
    best = -1
    best_v = 0.0
    for c in range(size.shape[0]):
        inc = np.inf
        if size[c] > 0:
            old = 0.0
            new = 0.0
            for q in range(is_num.shape[0]):
                a = col_of[q]
                w = weight[q]
                if is_num[q]:
                    v = nums[a, r]
                    old_q = _numeric_ncp(cmin[a, c], cmax[a, c], nulls[a, c], span[q])
                    if v != v:
                        new_q = _numeric_ncp(cmin[a, c], cmax[a, c], nulls[a, c] + 1.0, span[q])
                    else:
                        new_q = _numeric_ncp(min(cmin[a, c], v), max(cmax[a, c], v), nulls[a, c], span[q])
                else:
                    cq = float(card_q[q])
                    d = distinct[a, c]
                    old_q = d / cq if d > 1 else 0.0
                    d_new = d + (0.0 if has[a, c, t] else 1.0)
                    new_q = d_new / cq if d_new > 1 else 0.0
                old += w * old_q * size[c]
                new += w * new_q * (size[c] + 1)
            inc = new - old
        # numpy's argmin: the first minimum, or the first NaN if there is one
        if best < 0 or (inc != inc and best_v == best_v) or inc < best_v:
            best = c
            best_v = inc
        if best_v != best_v:
            break
    return best


# ---------------------------------------------------------------------------------------
# One block from table-wide arrays, in as few compiled calls as possible
# ---------------------------------------------------------------------------------------


@_jit
def _sort_order(codes, raw, pos, card):
    """QIData.sort_order of the block without the GIL: np.lexsort's successive stable sorts.

    Least significant key first: position, numerics from last to first (NaN last, as
    numpy sorts), then the categoricals, packed into one integer key when their product
    of cardinalities fits in 62 bits.
    """
    n_cat, n = codes.shape
    idx = np.arange(n)
    ascending = True
    for i in range(1, n):
        if pos[i] <= pos[i - 1]:
            ascending = False
            break
    if not ascending:
        idx = np.argsort(pos, kind="mergesort")
    for a in range(raw.shape[0] - 1, -1, -1):
        idx = idx[np.argsort(raw[a][idx], kind="mergesort")]
    prod = 1.0
    for c in range(n_cat):
        prod *= float(card[c])
    if n_cat > 0 and prod < 4.0e18:
        key = np.zeros(n, np.int64)
        for c in range(n_cat):
            for i in range(n):
                key[i] = key[i] * card[c] + codes[c, idx[i]]
        idx = idx[np.argsort(key, kind="mergesort")]
    else:
        for c in range(n_cat - 1, -1, -1):
            idx = idx[np.argsort(codes[c][idx].astype(np.int64), kind="mergesort")]
    return idx


@_jit
def _start(scaled, raw, codes, position, card, rows, loc):
    """Gather the block's rows, sort them, and build the kernel's state (see _form_classes).

    Returns the block's raw numerics and codes (row order, for leftovers) and the state.
    """
    nb = rows.shape[0]
    g_raw = np.empty((raw.shape[0], nb), np.float64)
    g_codes = np.empty((codes.shape[0], nb), np.int32)
    g_pos = np.empty(nb, np.int64)
    for j in range(nb):
        r = rows[j]
        for a in range(raw.shape[0]):
            g_raw[a, j] = raw[a, r]
        for c in range(codes.shape[0]):
            g_codes[c, j] = codes[c, r]
        g_pos[j] = position[r]
    order = _sort_order(g_codes, g_raw, g_pos, card)
    num = np.empty((scaled.shape[0], nb), np.float64)
    s_codes = np.empty((codes.shape[0], nb), np.int32)
    for j in range(nb):
        i = order[j]
        r = rows[i]
        for a in range(scaled.shape[0]):
            num[a, j] = scaled[a, r]
        for c in range(codes.shape[0]):
            s_codes[c, j] = g_codes[c, i]
    goff, gcode, cnt, soff, seg, ent_n, ent_c, pentry = _build(s_codes, card, loc)
    labels = np.full(nb, -1, np.int64)
    alive = np.ones(nb, np.bool_)
    st = np.array([0, 0, nb, nb], np.int64)
    return (g_raw, g_codes, num, goff, gcode, cnt, soff, seg, ent_n, ent_c, pentry, order, alive, labels, st)


LEFTOVER_CODES = {"nearest": 0, "last": 1, "suppress": 2}


@_jit
def _finish(mode, labels, left, g_raw, g_codes, is_num, col_of, weight, span, card_q, card):
    """Place the rows left (fewer than k) as leftover.place_leftovers does."""
    last = labels.max() if labels.shape[0] > 0 else -1
    if left.shape[0] == 0 or mode == 2 or last < 0:
        return
    if mode == 1:
        for r in left:
            labels[r] = last
        return
    _place_nearest(g_raw, g_codes, is_num, col_of, weight, span, card_q, card, labels, left)


@_jit
def _cluster_block(
    scaled,
    num_w,
    raw,
    codes,
    position,
    card,
    cat_w,
    active,
    is_num,
    col_of,
    weight,
    span,
    card_q,
    rows,
    k,
    mode,
    loc,
):
    """SBCA over the given rows of a prepared table, start to finish in one call."""
    (g_raw, g_codes, num, goff, gcode, cnt, soff, seg, ent_n, ent_c, pentry, rid, alive, labels, st) = _start(
        scaled, raw, codes, position, card, rows, loc
    )
    _form_classes(
        num,
        num_w,
        loc,
        cat_w,
        active,
        card,
        goff,
        gcode,
        cnt,
        soff,
        seg,
        ent_n,
        ent_c,
        pentry,
        rid,
        alive,
        labels,
        st,
        k,
        rows.shape[0],
    )
    left = _live_rows(alive, rid, st[1], st[2])
    _finish(mode, labels, left, g_raw, g_codes, is_num, col_of, weight, span, card_q, card)
    return labels


# ---------------------------------------------------------------------------------------
# Python side
# ---------------------------------------------------------------------------------------


class PreparedTable:
    """Table-wide arrays for the kernel, computed once and shared by every block.

    Numerics scaled by the table's ranges (what the distances read), raw numerics (sort
    order and leftover NCP), category codes in SPEC's categorical order, and the per-QI
    constants the leftover rule needs.
    """

    def __init__(self, data: QIData) -> None:
        n = data.n_rows
        cat_order = data.categorical_order()
        num_all = [q for q in range(data.n_qis) if data.numeric[q]]
        num_w = [q for q in num_all if data.weights[q] != 0]
        self.n_rows = n
        self.scaled = np.empty((len(num_w), n), np.float64)
        for a, q in enumerate(num_w):
            self.scaled[a] = data.scaled(q)
        self.num_w = np.array([data.weights[q] for q in num_w], dtype=np.float64)
        self.raw = np.empty((len(num_all), n), np.float64)
        for a, q in enumerate(num_all):
            self.raw[a] = data.columns[q]
        self.codes = np.empty((len(cat_order), n), np.int32)
        for c, q in enumerate(cat_order):
            self.codes[c] = _checked_codes(data, q)
        self.position = np.ascontiguousarray(data.position, dtype=np.int64)
        self.card = np.array([max(int(data.cardinality[q]), 1) for q in cat_order], dtype=np.int64)
        self.cat_w = np.array([data.weights[q] for q in cat_order], dtype=np.float64)
        self.active = np.array(
            [data.weights[q] != 0 and self.card[c] > 1 for c, q in enumerate(cat_order)], dtype=np.bool_
        )
        # leftovers walk the QIs in column order; col_of finds each one's array
        self.is_num = np.array(data.numeric, dtype=np.bool_)
        self.col_of = np.array(
            [num_all.index(q) if data.numeric[q] else cat_order.index(q) for q in range(data.n_qis)],
            dtype=np.int64,
        )
        self.weight = np.array(data.weights, dtype=np.float64)
        self.span = np.array(
            [data.span(q) if data.numeric[q] else 0.0 for q in range(data.n_qis)], dtype=np.float64
        )
        self.card_q = np.array([max(int(data.cardinality[q]), 1) for q in range(data.n_qis)], dtype=np.int64)

    def local_codes(self, n_rows: int) -> np.ndarray:
        """The buffer for a block's local codes, uint16 when they fit.

        Measured: uint16 sweeps ~20 % faster than int32; uint8 was slower than both.
        """
        most = min(int(self.card.max()), n_rows) if len(self.card) else 0
        dtype = np.uint16 if most <= np.iinfo(np.uint16).max else np.int32
        return np.empty((len(self.card), n_rows), dtype)

    def leftover_args(self) -> tuple:
        return (self.is_num, self.col_of, self.weight, self.span, self.card_q, self.card)


def leftover_code(mode: str) -> int:
    """The kernel's number for a leftover mode; unknown modes are refused up front."""
    if mode not in LEFTOVER_CODES:
        raise ValueError(f"unknown leftover mode {mode!r}")
    return LEFTOVER_CODES[mode]


def cluster_rows(table: PreparedTable, rows: np.ndarray, k: int, leftover: str = "nearest") -> np.ndarray:
    """SBCA over ``rows`` of a prepared table, as sbca(data.take(rows), k, leftover).

    One compiled call that releases the GIL: blocks on threads run truly in parallel.
    """
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    t = table
    return _cluster_block(
        t.scaled,
        t.num_w,
        t.raw,
        t.codes,
        t.position,
        t.card,
        t.cat_w,
        t.active,
        t.is_num,
        t.col_of,
        t.weight,
        t.span,
        t.card_q,
        rows,
        k,
        leftover_code(leftover),
        t.local_codes(len(rows)),
    )


class CompiledSBCA:
    """sbca_compiled with a fixed leftover mode, usable by blocks.blocked.

    Called as ``algorithm(block_data, k)`` it is sbca_compiled; blocks.blocked sees
    ``prepare_table``/``cluster_rows`` and runs each block in one compiled call instead.
    """

    def __init__(self, leftover: str = "nearest") -> None:
        leftover_code(leftover)
        self.leftover = leftover

    def __call__(self, data: QIData, k: int) -> np.ndarray:
        return sbca_compiled(data, k, self.leftover)

    def prepare_table(self, data: QIData) -> PreparedTable:
        return PreparedTable(data)

    def cluster_rows(self, table: PreparedTable, rows: np.ndarray, k: int) -> np.ndarray:
        return cluster_rows(table, rows, k, self.leftover)


def _checked_codes(data: QIData, q: int) -> np.ndarray:
    """Category codes of QI q, refused when outside 0..card-1 (the kernel does not check)."""
    col = data.columns[q]
    card = max(int(data.cardinality[q]), 1)
    if len(col) and (int(col.min()) < 0 or int(col.max()) >= card):
        raise ValueError(f"QI {data.names[q]!r}: category codes must lie in 0..{card - 1}")
    return col


def _own_counts(contingency: Contingency, data: QIData) -> bool:
    """Whether the given counts are exactly those of data's rows (what the kernel derives)."""
    mine = Contingency(data)
    if mine.order != contingency.order:
        return False
    for q in mine.order:
        if not np.array_equal(mine.counts[q], contingency.counts[q]):
            return False
    return all(np.array_equal(mine.pair[p], contingency.pair[p]) for p in mine.pairs)


def _leave_counts(contingency: Contingency, data: QIData, rows: np.ndarray) -> None:
    """Set the caller's counts to those of the unclustered rows, as the reference leaves them."""
    left = Contingency(data.take(rows))
    for q in contingency.order:
        contingency.counts[q][...] = left.counts[q]
    for p in contingency.pairs:
        contingency.pair[p][...] = left.pair[p]


def sbca_compiled(
    data: QIData,
    k: int,
    leftover: str = "nearest",
    contingency: Contingency | None = None,
    progress: Progress | None = None,
) -> np.ndarray:
    """:func:`sbca.sbca` compiled: the same labels for the same input, many times faster.

    Falls back to the reference when numba is missing, or when ``contingency`` holds counts
    other than data's own (the kernel derives its counts from the rows it is given). An
    unknown leftover mode is refused even when no row is left over. Progress is reported
    about a hundred times per run rather than after every class.
    """
    if k < 1:
        raise ValueError(f"k={k} must be at least 1")
    if not HAVE_NUMBA or (contingency is not None and not _own_counts(contingency, data)):
        return sbca(data, k, leftover, contingency, progress)
    mode = leftover_code(leftover)
    n = data.n_rows
    if n == 0:
        return np.full(0, SUPPRESSED, dtype=np.int64)
    t = PreparedTable(data)
    rows = np.arange(n, dtype=np.int64)
    if progress is None and contingency is None:
        return cluster_rows(t, rows, k, leftover)
    loc = t.local_codes(n)
    (g_raw, g_codes, num, goff, gcode, cnt, soff, seg, ent_n, ent_c, pentry, rid, alive, labels, st) = _start(
        t.scaled, t.raw, t.codes, t.position, t.card, rows, loc
    )
    step = max(1, n // (100 * k)) if progress is not None else n
    while (
        _form_classes(
            num,
            t.num_w,
            loc,
            t.cat_w,
            t.active,
            t.card,
            goff,
            gcode,
            cnt,
            soff,
            seg,
            ent_n,
            ent_c,
            pentry,
            rid,
            alive,
            labels,
            st,
            k,
            step,
        )
        == step
    ):
        if progress is not None:
            progress(n - int(st[3]), n)
    left = _live_rows(alive, rid, st[1], st[2])
    if contingency is not None:
        _leave_counts(contingency, data, left)
    _finish(mode, labels, left, g_raw, g_codes, *t.leftover_args())
    if progress is not None:
        progress(n, n)
    return labels
