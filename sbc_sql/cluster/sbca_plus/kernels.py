"""numba kernels of SBCA+ (see :mod:`sbc_sql.cluster.sbca_plus.algorithm`).

Every kernel works in the *sorted domain*: row i is the i-th row of the row order SBCA+
takes (``blocks.coarse_order`` by default, ``QIData.sort_order()`` for SPEC's), so a tie
broken by the smaller index is a tie broken by position in that order (SPEC section 3).
Arrays are columnar: ``raw[j, i]`` is numeric QI j of row i in its own units (NaN for NULL),
``sc[j, i]`` the same divided by the QI's range (``QIData.scaled``, for SBC's distances),
``span[j]`` that range (0 when constant), ``cat[q, i]`` the code of categorical QI q, the
categorical QIs in SBC's order (ascending cardinality, SPEC section 2). ``wn``/``wc`` are the
QI weights, ``num_act``/``cat_act`` mark the QIs that can cost anything (weight not 0; for a
categorical QI also more than one category).

The information loss of a class G is ``|G| * sum_q w_q NCP_q(G)`` (SPEC section 4): the
kernels keep, per class, the numeric bounds and NULL counts and the categorical distinct
counts, from which the effect of one row is O(d).

Cost per class of the greedy pass: O(remaining rows * d) for SBC's distances and the pick
of the wide set, O(wide * d * log k) for the pool refills and O(pool * k) for the growth
(plus O(pool) per value entering the class). Refinement: O(rows * window * d) per pass, for
the rows whose class is cheaper without them.

The Python side calls three of them, through :mod:`.compiled`: :func:`greedy_pass`,
:func:`finish` and :func:`hilbert_keys`. ``pip install`` compiles those ahead of time
(:mod:`.aot`), so this module imports only numpy and numba, never the package.
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
# NCP of one QI of a class (SPEC section 4; same arithmetic as leftover.numeric_ncp)
# ---------------------------------------------------------------------------------------


@njit(cache=True, nogil=True, inline="always")
def _num_ncp(lo, hi, nulls, size, span):
    if nulls >= size:
        return 0.0  # all NULL (or empty)
    if nulls > 0:
        return 1.0  # NULL mixed with numbers
    if span > 0:
        return (hi - lo) / span
    return 0.0


@njit(cache=True, nogil=True, inline="always")
def _num_ncp_with(lo, hi, nulls, size, span, x):
    """NCP of a numeric QI once value x (NaN for NULL) joins rows with these bounds and
    NULL count; ``size`` counts x."""
    if np.isnan(x):
        return _num_ncp(lo, hi, nulls + 1, size, span)
    return _num_ncp(min(lo, x), max(hi, x), nulls, size, span)


@njit(cache=True, nogil=True, inline="always")
def _cat_ncp(distinct, card):
    if distinct > 1:
        return distinct / card
    return 0.0


# ---------------------------------------------------------------------------------------
# SBC's contingency-based distances (SPEC section 2; same arithmetic as similarity.py/sbca.py)
# ---------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def sbc_tables(seed_codes, card, pred, cnt, cnt_off, pair, pair_off, k, active, tab, tab_off, keys, vals):
    """Fill ``tab[tab_off[q] + v]``: distance from the seed's value of QI q to value v.
    ``keys``/``vals`` are scratch of at least max(card) entries."""
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
            _rank_values(cnt, cnt_off[q], c, s, 0.0, False, tab, base, keys, vals)
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
        _rank_values(src, rb, c, s, float(tot), True, tab, base, keys, vals)


@njit(cache=True, nogil=True)
def _rank_values(src, rb, c, s, total, share, tab, base, keys, vals):
    """``tab[base + v] = rank(v) / (c - 1)`` in the order of key ``|x(v) - x(s)|`` (ties by
    code, the seed first), ``x(v) = src[rb + v] / total`` when ``share`` (and 0 for every
    v when total is 0), else the count itself.

    Every value of count 0 has the same key ``|0 - x(s)|``, so only the values of nonzero
    count are sorted and the zero run is merged in by code: O(c + m log m) for m nonzero
    values, where sorting all c keys (c up to thousands, m often a few dozen in a block)
    dominated the greedy pass.
    """
    if share and total <= 0:
        xs = 0.0
    elif share:
        xs = src[rb + s] / total
    else:
        xs = float(src[rb + s])
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
    their range (QIData.scaled), so the sums are those of sbca.py."""
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


@njit(cache=True, nogil=True)
def _class_growth(sc, wn, num_act, cat, wc, cat_act, card, cbase, clo, chi, cnn, inset, n, out):
    """out[i]: how much row i's joining would raise the NCP of the class with scaled ranges
    clo/chi (clo > chi: all NULL), NULL flags cnn and values flagged in ``inset`` (numeric:
    the range's growth, 1 for a NULL the class lacks or a number against an all-NULL range;
    categorical: 1/card for a value the class lacks; weighted)."""
    for i in range(n):
        out[i] = 0.0
    for j in range(sc.shape[0]):
        if not num_act[j]:
            continue
        w = wn[j]
        col = sc[j]
        lo = clo[j]
        hi = chi[j]
        if lo > hi:
            for i in range(n):
                out[i] += w * (0.0 if (np.isnan(col[i]) and cnn[j]) else 1.0)
            continue
        for i in range(n):
            x = col[i]
            if np.isnan(x):
                e = 0.0 if cnn[j] else 1.0
            else:
                e = max(hi, x) - min(lo, x) - (hi - lo)
            out[i] += w * e
    for q in range(cat.shape[0]):
        if not cat_act[q]:
            continue
        c = wc[q] / card[q]
        col = cat[q]
        base = cbase[q]
        for i in range(n):
            if not inset[base + col[i]]:
                out[i] += c


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


# ---------------------------------------------------------------------------------------
# The greedy pass
# ---------------------------------------------------------------------------------------


@njit(cache=True, nogil=True, inline="always")
def _cat_delta(t, wcode, ccount, dlt):
    """Growth of sum_q w_q NCP_q over the active categoricals when wide-set row t joins:
    ``dlt[a]`` for every QI whose value the class lacks (always the same float for the
    same state, so equal costs stay equal)."""
    s = 0.0
    for a in range(wcode.shape[1]):
        if ccount[wcode[t, a]] == 0:
            s += dlt[a]
    return s


@njit(cache=True, nogil=True, inline="always")
def _num_key(t, wr, span, wn, num_act, glo, ghi, gnn, size):
    """sum_q w_q NCP_q over the numerics of the class once wide-set row t joins it."""
    s = 0.0
    for j in range(wr.shape[1]):
        if not num_act[j]:
            continue
        s += wn[j] * _num_ncp_with(glo[j], ghi[j], gnn[j], size + 1, span[j], wr[t, j])
    return s


@njit(cache=True, nogil=True)
def _gather_pool(cand, np_, wr, px):
    """The pool's numerics column by column: ``px[j, u]`` is QI j of pool row u."""
    for j in range(px.shape[0]):
        for u in range(np_):
            px[j, u] = wr[cand[u], j]


@njit(cache=True, nogil=True)
def _pool_num_keys(np_, px, span, wn, num_act, glo, ghi, gnn, size, acc):
    """``acc[u]`` = _num_key of pool row u, the same sum in the same order, computed one
    QI at a time over the pool so that the loops are branch-free and vectorize. The class
    (``size`` rows) is all NULL, mixed, or all numbers on each QI; a joining NULL or number
    then costs a constant, except a number joining numbers."""
    for u in range(np_):
        acc[u] = 0.0
    for j in range(px.shape[0]):
        if not num_act[j]:
            continue
        w = wn[j]
        nn = gnn[j]
        col = px[j]
        if nn >= size:
            # all NULL: a NULL keeps it at 0, a number makes it mixed (1)
            for u in range(np_):
                acc[u] += w * (0.0 if np.isnan(col[u]) else 1.0)
        elif nn > 0:
            for u in range(np_):
                acc[u] += w * 1.0
        elif span[j] > 0:
            lo = glo[j]
            hi = ghi[j]
            sp = span[j]
            for u in range(np_):
                x = col[u]
                v = (max(hi, x) - min(lo, x)) / sp
                if np.isnan(x):
                    v = 1.0
                acc[u] += w * v
        else:
            for u in range(np_):
                acc[u] += w * (1.0 if np.isnan(col[u]) else 0.0)


@njit(cache=True, nogil=True)
def _fill_table(tabm, g, dlt):
    """``tabm[g, mask]`` = the sum, in QI order from 0.0, of ``dlt[8 g + b]`` over the bits b
    of mask: the categorical cost of a row lacking those values (the same float as
    _cat_delta's sum when there is one table)."""
    lo = 8 * g
    nb = min(8, dlt.shape[0] - lo)
    tabm[g, 0] = 0.0
    for mask in range(1, 1 << nb):
        top = 0
        while (mask >> (top + 1)) != 0:
            top += 1
        tabm[g, mask] = tabm[g, mask ^ (1 << top)] + dlt[lo + top]


@njit(cache=True, nogil=True)
def _pool_masks(cand, np_, wcode, ccount, cm, pc):
    """Per pool row u, bit a of ``cm[u]`` set when the class lacks its value of QI a; and
    the pool's value slots column by column, ``pc[a, u]``, for clearing bits when a value
    enters the class."""
    for a in range(wcode.shape[1]):
        for u in range(np_):
            pc[a, u] = wcode[cand[u], a]
    for u in range(np_):
        cm[u] = 0
    for a in range(wcode.shape[1]):
        bit = np.int64(1) << np.int64(a)
        col = pc[a]
        for u in range(np_):
            if ccount[col[u]] == 0:
                cm[u] |= bit


@njit(cache=True, nogil=True)
def _grow(
    seed,
    k,
    m,
    nw,
    wset,
    wtie,
    rid,
    rowraw,
    rowslot,
    span,
    wn,
    num_act,
    card,
    wc,
    aq,
    wr,
    wcode,
    ok,
    wkey,
    ccount,
    dlt,
    glo,
    ghi,
    gnn,
    cand,
    tpos,
    members,
    px,
    acc,
    cm,
    tabm,
    pc,
):
    """Grow the seed's class to k rows from the wide set (see greedy_pass).

    The row added is the one of least increase of the class's information loss. As
    ``(size + 1) * S(G + r) - size * S(G) = S(G) + (size + 1) * (S(G + r) - S(G))``, that is
    the row of least S(G + r): its numeric part is recomputed per step (O(numeric QIs)), its
    categorical part is a table lookup by the set of QIs whose value the class lacks (a
    bit mask per pool row, cleared for the rows holding a value when it enters the class;
    the table is redone when a QI's cost per value changes); at refills the wide set is
    ranked with the same parts summed directly (_num_key, _cat_delta). ``rowraw``/``rowslot``
    hold every row's numerics and ccount slots (one per active categorical QI, listed in
    ``aq``) row-major by row id; ``wr``/``wcode`` receive those of the wide set.
    """
    dn = rowraw.shape[1]
    na = aq.shape[0]
    for t in range(nw):
        r = rid[wset[t]]
        for j in range(dn):
            wr[t, j] = rowraw[r, j]
        for a in range(na):
            wcode[t, a] = rowslot[r, a]
        ok[t] = True
    rs = rid[seed]
    for j in range(dn):
        x = rowraw[rs, j]
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
        ccount[rowslot[rs, a]] = 1
        # NCP_q goes from 0 to 2/card with the second value, by 1/card with any later one
        dlt[a] = wc[q] * (2.0 / card[q])
    for g in range(tabm.shape[0]):
        _fill_table(tabm, g, dlt)
    members[0] = seed
    size = 1
    wview = wcode[:nw]
    np_ = _select(wtie, wtie, wset, nw, m, ok, cand, tpos)
    _gather_pool(cand, np_, wr, px)
    _pool_masks(cand, np_, wcode, ccount, cm, pc)
    n_tab = tabm.shape[0]
    refresh = 2 if nw > np_ else k + 1
    for step in range(1, k):
        if size == refresh:
            refresh *= 2
            for t in range(nw):
                if ok[t]:
                    wkey[t] = _num_key(t, wr, span, wn, num_act, glo, ghi, gnn, size) + _cat_delta(
                        t, wview, ccount, dlt
                    )
            np_ = _select(wkey, wtie, wset, nw, m, ok, cand, tpos)
            _gather_pool(cand, np_, wr, px)
            _pool_masks(cand, np_, wcode, ccount, cm, pc)
        _pool_num_keys(np_, px, span, wn, num_act, glo, ghi, gnn, size, acc)
        best = -1
        best_key = INF
        best_d = INF
        for u in range(np_):
            t = cand[u]
            if not ok[t]:
                continue
            mk = cm[u]
            c = tabm[0, mk & 255]
            for g in range(1, n_tab):
                c += tabm[g, (mk >> np.int64(8 * g)) & 255]
            key = acc[u] + c
            if key > best_key:
                continue
            d = wtie[t]
            if key < best_key or d < best_d or (d == best_d and wset[t] < wset[best]):
                best_key = key
                best_d = d
                best = t
        ok[best] = False
        members[step] = wset[best]
        if step == k - 1:
            break
        for j in range(dn):
            x = wr[best, j]
            if np.isnan(x):
                gnn[j] += 1
            else:
                glo[j] = min(glo[j], x)
                ghi[j] = max(ghi[j], x)
        for a in range(na):
            p = wcode[best, a]
            ccount[p] += 1
            if ccount[p] > 1:
                continue
            # a value entered the class: rows holding it no longer add it, and with the
            # second value the cost of any other value drops from 2/card to 1/card
            second = dlt[a] != wc[aq[a]] * (1.0 / card[aq[a]])
            dlt[a] = wc[aq[a]] * (1.0 / card[aq[a]])
            if second:
                _fill_table(tabm, a >> 3, dlt)
            keep = ~(np.int64(1) << np.int64(a))
            col = pc[a]
            for u in range(np_):
                if col[u] == p:
                    cm[u] &= keep
        size += 1
    for t in range(k):
        r = rid[members[t]]
        for a in range(na):
            ccount[rowslot[r, a]] = 0


@njit(cache=True, nogil=True)
def greedy_pass(
    raw,
    sc,
    span,
    wn,
    num_act,
    cat,
    card,
    wc,
    cat_act,
    pred,
    cnt,
    cnt_off,
    pair,
    pair_off,
    rid,
    alive,
    dist,
    state,
    labels,
    k,
    growth,
    seed_rule,
    pool,
    wide,
    budget,
):
    """Form classes of k rows while at least k rows remain (until ``budget`` rows are done).

    ``raw``/``sc``/``cat``/``rid``/``alive``/``dist`` hold the rows not yet clustered, in
    row order (compacted now and then, in place); ``state`` = [rows held, rows alive, next
    class id, seed position]. ``labels`` is indexed by ``rid``. ``cnt``/``pair`` are the contingency
    counts of the remaining rows (decremented in place, as in sbca.py).

    ``growth`` False: the seed and its k - 1 SBC-nearest rows (ties by sort position), the
    paper's step. True: the class grows one row at a time, adding the row that raises its
    information loss least (ties: SBC distance to the seed, then sort position), among a pool
    of ``pool`` rows; the pool starts as the seed's SBC-nearest rows and, when ``wide`` is
    larger, is refilled at class sizes 2, 4, 8, ... with the ``pool`` rows of least increase
    among the seed's ``wide`` SBC-nearest rows. ``seed_rule``: the next seed is the first
    remaining row (0, the paper), the remaining row SBC-farthest from this seed (1), or the
    remaining row farthest from the class just formed (2): the one whose joining would raise
    the class's NCP most, sum_q w_q * (numeric: its range's growth over the QI's range, 1 for
    a NULL the class lacks or a number against an all-NULL range; categorical: 1/card_q for
    a value the class lacks). Ties: sort position.
    Returns the number of rows labelled by this call.
    """
    dn = raw.shape[0]
    dc = cat.shape[0]
    n_cur = state[0]
    n_alive = state[1]
    cls = state[2]
    seed = state[3]
    cbase = np.zeros(dc + 1, dtype=np.int64)
    for q in range(dc):
        cbase[q + 1] = cbase[q] + card[q]
    tab = np.zeros(cbase[dc], dtype=np.float64)
    ccount = np.zeros(cbase[dc], dtype=np.int64)
    nmax = rid.shape[0]
    ident = np.arange(nmax)
    tpos = np.empty(nmax, dtype=np.int64)
    wset = np.empty(nmax, dtype=np.int64)  # the wide set: positions
    wkey = np.empty(nmax, dtype=np.float64)  # its keys (least increase)
    wtie = np.empty(nmax, dtype=np.float64)  # its SBC distances
    wok = np.zeros(nmax, dtype=np.bool_)  # not yet in the class
    cand = np.empty(nmax, dtype=np.int64)  # the pool: indices into wset
    n_act = 0
    for q in range(dc):
        if cat_act[q]:
            n_act += 1
    aq = np.empty(n_act, dtype=np.int64)
    n_act = 0
    for q in range(dc):
        if cat_act[q]:
            aq[n_act] = q
            n_act += 1
    dlt = np.empty(n_act, dtype=np.float64)
    rowraw = np.empty((0, dn), dtype=np.float64)
    rowslot = np.empty((0, n_act), dtype=np.int64)
    if growth:
        rowraw = np.empty((nmax, dn), dtype=np.float64)
        rowslot = np.empty((nmax, n_act), dtype=np.int64)
        for i in range(n_cur):
            r = rid[i]
            for j in range(dn):
                rowraw[r, j] = raw[j, i]
            for a in range(n_act):
                q = aq[a]
                rowslot[r, a] = cbase[q] + cat[q, i]
    wr = np.empty((nmax, dn), dtype=np.float64)  # the wide set's numerics, gathered
    wcode = np.empty((nmax, n_act), dtype=np.int64)  # ... and its ccount slots
    members = np.empty(k, dtype=np.int64)
    px = np.empty((dn, nmax), dtype=np.float64)  # the pool's numerics, by QI
    acc = np.empty(nmax, dtype=np.float64)  # their part of each pool row's key
    n_tab = max(1, (n_act + 7) // 8)
    cm = np.zeros(nmax, dtype=np.int64)  # per pool row: the QIs it would add, as bits
    tabm = np.zeros((n_tab, 256), dtype=np.float64)  # their cost, by 8 bits of mask
    pc = np.empty((n_act, nmax), dtype=np.int64)  # the pool's value slots, by QI
    seed_codes = np.empty(dc, dtype=np.int64)
    top = 1
    for q in range(dc):
        top = max(top, card[q])
    rank_keys = np.empty(top, dtype=np.float64)  # sbc_tables' scratch
    rank_vals = np.empty(top, dtype=np.int64)
    glo = np.empty(dn)
    ghi = np.empty(dn)
    gnn = np.zeros(dn, dtype=np.int64)
    clo = np.empty(sc.shape[0])
    chi = np.empty(sc.shape[0])
    cnn = np.zeros(sc.shape[0], dtype=np.int64)
    inset = np.zeros(cbase[dc], dtype=np.bool_)
    mslot = np.empty((k, dc), dtype=np.int64)
    done = 0
    while n_alive >= k and done < budget:
        for q in range(dc):
            seed_codes[q] = cat[q, seed]
        sbc_tables(
            seed_codes, card, pred, cnt, cnt_off, pair, pair_off, k, cat_act, tab, cbase, rank_keys, rank_vals
        )
        _distances(seed, sc, wn, num_act, cat, wc, cat_act, tab, cbase, n_cur, dist)
        alive[seed] = False
        members[0] = seed
        if not growth:
            _select(dist, dist, ident, n_cur, k - 1, alive, cand, tpos)
            for t in range(k - 1):
                members[t + 1] = cand[t]
        else:
            m = min(pool, n_alive - 1)
            # the pool is refilled at class sizes 2, 4, ... below k: no need of more rows else
            nw = _select(dist, dist, ident, n_cur, max(wide, m) if k > 2 else m, alive, wset, tpos)
            for t in range(nw):
                wtie[t] = dist[wset[t]]
            _grow(
                seed,
                k,
                m,
                nw,
                wset,
                wtie,
                rid,
                rowraw,
                rowslot,
                span,
                wn,
                num_act,
                card,
                wc,
                aq,
                wr,
                wcode,
                wok,
                wkey,
                ccount,
                dlt,
                glo,
                ghi,
                gnn,
                cand,
                tpos,
                members,
                px,
                acc,
                cm,
                tabm,
                pc,
            )
        # the class: label it, take it out of the contingency counts
        for t in range(k):
            i = members[t]
            alive[i] = False
            labels[rid[i]] = cls
            for q in range(dc):
                cnt[cnt_off[q] + cat[q, i]] -= 1
                mq = pred[q]
                if mq >= 0:
                    pair[pair_off[q] + cat[mq, i] * card[q] + cat[q, i]] -= 1
        if seed_rule == 2:
            # the class's ranges (scaled) and values, for the next seed
            for j in range(sc.shape[0]):
                clo[j] = INF
                chi[j] = -INF
                cnn[j] = 0
            for t in range(k):
                i = members[t]
                for j in range(sc.shape[0]):
                    x = sc[j, i]
                    if np.isnan(x):
                        cnn[j] = 1
                    else:
                        clo[j] = min(clo[j], x)
                        chi[j] = max(chi[j], x)
                for q in range(dc):
                    mslot[t, q] = cbase[q] + cat[q, i]
                    inset[mslot[t, q]] = True
        cls += 1
        done += k
        n_alive -= k
        # drop the dead rows once they are an eighth of those held
        if (n_cur - n_alive) * 8 > n_cur:
            w = 0
            for i in range(n_cur):
                if alive[i]:
                    if w != i:
                        rid[w] = rid[i]
                        dist[w] = dist[i]
                        alive[w] = True
                        for j in range(dn):
                            raw[j, w] = raw[j, i]
                            sc[j, w] = sc[j, i]
                        for q in range(dc):
                            cat[q, w] = cat[q, i]
                    w += 1
            for i in range(w, n_cur):
                alive[i] = False
            n_cur = w
        seed = -1
        if seed_rule == 2:
            # dist becomes each row's distance from the class (it is free until the next
            # seed's distances), then the farthest row is taken as for rule 1
            _class_growth(sc, wn, num_act, cat, wc, cat_act, card, cbase, clo, chi, cnn, inset, n_cur, dist)
            for t in range(k):
                for q in range(dc):
                    inset[mslot[t, q]] = False
        if seed_rule != 0:
            best = -INF
            for i in range(n_cur):
                if alive[i] and dist[i] > best:
                    best = dist[i]
                    seed = i
        else:
            for i in range(n_cur):
                if alive[i]:
                    seed = i
                    break
        if seed < 0:
            seed = 0
    state[0] = n_cur
    state[1] = n_alive
    state[2] = cls
    state[3] = seed
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
def _class_bounds(c, head, nxt, raw, j):
    """Numeric QI j over class c: lo, second lowest, hi, second highest, NULL count.

    The second values count ties (two rows at the minimum: both are the minimum), so the
    class without one row at its minimum has the second lowest as minimum; INF / -INF when
    there is none.
    """
    lo = INF
    lo2 = INF
    hi = -INF
    hi2 = -INF
    nn = 0
    i = head[c]
    while i >= 0:
        x = raw[j, i]
        if np.isnan(x):
            nn += 1
        else:
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
        i = nxt[i]
    return lo, lo2, hi, hi2, nn


@njit(cache=True, nogil=True)
def _class_sum(c, size, lo, hi, nn, dist_, span, wn, num_act, wc, cat_act, card):
    s = 0.0
    for j in range(wn.shape[0]):
        if num_act[j]:
            s += wn[j] * _num_ncp(lo[c, j], hi[c, j], nn[c, j], size[c], span[j])
    for q in range(wc.shape[0]):
        if cat_act[q]:
            s += wc[q] * _cat_ncp(dist_[c, q], card[q])
    return s


@njit(cache=True, nogil=True)
def _add_row(
    c,
    r,
    lab,
    size,
    head,
    nxt,
    prv,
    lo,
    lo2,
    hi,
    hi2,
    nn,
    dist_,
    hk,
    hv,
    shift,
    used,
    raw,
    num_act,
    cat,
    cat_act,
    vmax,
):
    dc = cat.shape[0]
    lab[r] = c
    size[c] += 1
    prv[r] = -1
    nxt[r] = head[c]
    if head[c] >= 0:
        prv[head[c]] = r
    head[c] = r
    for j in range(raw.shape[0]):
        x = raw[j, r]
        if np.isnan(x):
            nn[c, j] += 1
        else:
            if x < lo[c, j]:
                lo2[c, j] = lo[c, j]
                lo[c, j] = x
            elif x < lo2[c, j]:
                lo2[c, j] = x
            if x > hi[c, j]:
                hi2[c, j] = hi[c, j]
                hi[c, j] = x
            elif x > hi2[c, j]:
                hi2[c, j] = x
    for q in range(dc):
        if not cat_act[q]:
            continue
        key = (c * dc + q) * vmax + cat[q, r]
        h = _hslot(hk, key, shift)
        if hk[h] == -1:
            hk[h] = key
            used[0] += 1
        if hv[h] == 0:
            dist_[c, q] += 1
        hv[h] += 1


@njit(cache=True, nogil=True)
def _remove_row(
    c,
    r,
    lab,
    size,
    head,
    nxt,
    prv,
    lo,
    lo2,
    hi,
    hi2,
    nn,
    dist_,
    hk,
    hv,
    shift,
    raw,
    num_act,
    cat,
    cat_act,
    vmax,
):
    dc = cat.shape[0]
    size[c] -= 1
    if prv[r] >= 0:
        nxt[prv[r]] = nxt[r]
    else:
        head[c] = nxt[r]
    if nxt[r] >= 0:
        prv[nxt[r]] = prv[r]
    nxt[r] = -1
    prv[r] = -1
    lab[r] = -1
    for j in range(raw.shape[0]):
        x = raw[j, r]
        if np.isnan(x):
            nn[c, j] -= 1
        elif x <= lo2[c, j] or x >= hi2[c, j]:
            # one of the two lowest or highest left: walk the class
            lo[c, j], lo2[c, j], hi[c, j], hi2[c, j], nn[c, j] = _class_bounds(c, head, nxt, raw, j)
    for q in range(dc):
        if not cat_act[q]:
            continue
        key = (c * dc + q) * vmax + cat[q, r]
        h = _hslot(hk, key, shift)
        hv[h] -= 1
        if hv[h] == 0:
            dist_[c, q] -= 1


@njit(cache=True, nogil=True)
def finish(
    raw, span, wn, num_act, cat, card, wc, cat_act, qkind, qidx, lab, k, place, window, max_passes, stats
):
    """Place the rows labelled -2 by least NCP increase (SPEC section 3 step 3), then, when
    ``max_passes`` > 0, refine: move one row to another class or swap two rows of different
    classes whenever the total NCP falls and every class keeps at least k rows.

    Candidate partners of row r are the rows within ``window`` positions of r in the row
    order (rows that agree on its leading QIs). Rows labelled -1 (suppressed) are left
    alone. ``qkind``/``qidx`` give the QIs in the data's column order (0 numeric, 1
    categorical; index into raw/cat) so sums run in the same order as leftover.py.
    ``stats`` receives [passes, moves, swaps].
    """
    n = lab.shape[0]
    dn = raw.shape[0]
    dc = cat.shape[0]
    n_cls = 0
    for i in range(n):
        if lab[i] + 1 > n_cls:
            n_cls = lab[i] + 1
    if n_cls == 0:
        return
    vmax = 1
    for q in range(dc):
        if card[q] > vmax:
            vmax = card[q]
    size = np.zeros(n_cls, dtype=np.int64)
    head = np.full(n_cls, -1, dtype=np.int64)
    nxt = np.full(n, -1, dtype=np.int64)
    prv = np.full(n, -1, dtype=np.int64)
    lo = np.full((n_cls, dn), INF)
    lo2 = np.full((n_cls, dn), INF)
    hi = np.full((n_cls, dn), -INF)
    hi2 = np.full((n_cls, dn), -INF)
    nn = np.zeros((n_cls, dn), dtype=np.int64)
    dist_ = np.zeros((n_cls, dc), dtype=np.int64)
    n_act = 0
    for q in range(dc):
        if cat_act[q]:
            n_act += 1
    cap = 16
    while cap < 4 * (n * n_act + 8):
        cap *= 2
    shift = _hash_shift(cap)
    hk = np.full(cap, -1, dtype=np.int64)
    hv = np.zeros(cap, dtype=np.int32)
    used = np.zeros(1, dtype=np.int64)
    for i in range(n):
        c = lab[i]
        if c >= 0:
            lab[i] = -1
            _add_row(
                c,
                i,
                lab,
                size,
                head,
                nxt,
                prv,
                lo,
                lo2,
                hi,
                hi2,
                nn,
                dist_,
                hk,
                hv,
                shift,
                used,
                raw,
                num_act,
                cat,
                cat_act,
                vmax,
            )
    S = np.empty(n_cls)
    for c in range(n_cls):
        S[c] = _class_sum(c, size, lo, hi, nn, dist_, span, wn, num_act, wc, cat_act, card)

    # leftovers: the class whose NCP grows least, ties by the lower class id
    if place:
        for r in range(n):
            if lab[r] != -2:
                continue
            best_c = -1
            best = INF
            for c in range(n_cls):
                if size[c] == 0:
                    continue
                old = 0.0
                new = 0.0
                for t in range(qkind.shape[0]):
                    u = qidx[t]
                    if qkind[t] == 0:
                        if not num_act[u]:
                            continue
                        o = _num_ncp(lo[c, u], hi[c, u], nn[c, u], size[c], span[u])
                        m = _num_ncp_with(lo[c, u], hi[c, u], nn[c, u], size[c] + 1, span[u], raw[u, r])
                        old += wn[u] * o * size[c]
                        new += wn[u] * m * (size[c] + 1)
                    else:
                        if not cat_act[u]:
                            continue
                        dq = dist_[c, u]
                        o = _cat_ncp(dq, card[u])
                        key = (c * dc + u) * vmax + cat[u, r]
                        if hv[_hslot(hk, key, shift)] == 0:
                            dq += 1
                        m = _cat_ncp(dq, card[u])
                        old += wc[u] * o * size[c]
                        new += wc[u] * m * (size[c] + 1)
                inc = new - old
                if inc < best:
                    best = inc
                    best_c = c
            _add_row(
                best_c,
                r,
                lab,
                size,
                head,
                nxt,
                prv,
                lo,
                lo2,
                hi,
                hi2,
                nn,
                dist_,
                hk,
                hv,
                shift,
                used,
                raw,
                num_act,
                cat,
                cat_act,
                vmax,
            )
            S[best_c] = _class_sum(best_c, size, lo, hi, nn, dist_, span, wn, num_act, wc, cat_act, card)

    # refinement
    a_lo = np.empty(dn)
    a_hi = np.empty(dn)
    a_nn = np.empty(dn, dtype=np.int64)
    a_uniq = np.zeros(dc, dtype=np.bool_)
    seen = np.full(n_cls, -1, dtype=np.int64)
    moves = 0
    swaps = 0
    passes = 0
    eps = 1e-9
    for p in range(max_passes):
        passes += 1
        improved = 0
        for r in range(n):
            A = lab[r]
            if A < 0:
                continue
            sa = size[A]
            cost_a = sa * S[A]
            # class A without r
            for j in range(dn):
                x = raw[j, r]
                a_lo[j] = lo[A, j]
                a_hi[j] = hi[A, j]
                a_nn[j] = nn[A, j]
                if np.isnan(x):
                    a_nn[j] -= 1
                else:
                    if x <= a_lo[j]:
                        a_lo[j] = lo2[A, j]
                    if x >= a_hi[j]:
                        a_hi[j] = hi2[A, j]
            s_a_minus = 0.0
            for j in range(dn):
                if num_act[j]:
                    s_a_minus += wn[j] * _num_ncp(a_lo[j], a_hi[j], a_nn[j], sa - 1, span[j])
            for q in range(dc):
                if not cat_act[q]:
                    continue
                key = (A * dc + q) * vmax + cat[q, r]
                a_uniq[q] = hv[_hslot(hk, key, shift)] == 1
                dq = dist_[A, q]
                if a_uniq[q]:
                    dq -= 1
                s_a_minus += wc[q] * _cat_ncp(dq, card[q])
            # A swap gains at most what its two rows save by leaving their classes, so only
            # rows whose class is cheaper without them start one (the partner's turn covers
            # the other case); a row of a class of exactly k cannot move.
            swaps_ok = s_a_minus < S[A]
            if not swaps_ok and sa <= k:
                continue
            best_gain = eps
            best_kind = 0
            best_s = -1
            best_b = -1
            for s in range(max(0, r - window), min(n, r + window + 1)):
                B = lab[s]
                if B < 0 or B == A:
                    continue
                sb = size[B]
                cost_b = sb * S[B]
                # move r into B
                if sa > k and seen[B] != r:
                    seen[B] = r
                    s_new = 0.0
                    for j in range(dn):
                        if not num_act[j]:
                            continue
                        s_new += wn[j] * _num_ncp_with(
                            lo[B, j], hi[B, j], nn[B, j], sb + 1, span[j], raw[j, r]
                        )
                    for q in range(dc):
                        if not cat_act[q]:
                            continue
                        dq = dist_[B, q]
                        key = (B * dc + q) * vmax + cat[q, r]
                        if hv[_hslot(hk, key, shift)] == 0:
                            dq += 1
                        s_new += wc[q] * _cat_ncp(dq, card[q])
                    gain = cost_a + cost_b - (sa - 1) * s_a_minus - (sb + 1) * s_new
                    if gain > best_gain:
                        best_gain = gain
                        best_kind = 1
                        best_b = B
                if not swaps_ok:
                    continue
                # swap r and s
                s_a2 = 0.0
                s_b2 = 0.0
                for j in range(dn):
                    if not num_act[j]:
                        continue
                    x = raw[j, r]
                    y = raw[j, s]
                    # A without r, with s
                    s_a2 += wn[j] * _num_ncp_with(a_lo[j], a_hi[j], a_nn[j], sa, span[j], y)
                    # B without s (one row of value y: its minimum gives way to the second
                    # lowest, see _class_bounds), with r
                    bl = lo[B, j]
                    bh = hi[B, j]
                    bn = nn[B, j]
                    if np.isnan(y):
                        bn -= 1
                    else:
                        if y <= bl:
                            bl = lo2[B, j]
                        if y >= bh:
                            bh = hi2[B, j]
                    s_b2 += wn[j] * _num_ncp_with(bl, bh, bn, sb, span[j], x)
                for q in range(dc):
                    if not cat_act[q]:
                        continue
                    vr = cat[q, r]
                    vs = cat[q, s]
                    if vr == vs:
                        s_a2 += wc[q] * _cat_ncp(dist_[A, q], card[q])
                        s_b2 += wc[q] * _cat_ncp(dist_[B, q], card[q])
                        continue
                    da = dist_[A, q]
                    if a_uniq[q]:
                        da -= 1
                    if hv[_hslot(hk, (A * dc + q) * vmax + vs, shift)] == 0:
                        da += 1
                    db = dist_[B, q]
                    if hv[_hslot(hk, (B * dc + q) * vmax + vs, shift)] == 1:
                        db -= 1
                    if hv[_hslot(hk, (B * dc + q) * vmax + vr, shift)] == 0:
                        db += 1
                    s_a2 += wc[q] * _cat_ncp(da, card[q])
                    s_b2 += wc[q] * _cat_ncp(db, card[q])
                gain = cost_a + cost_b - sa * s_a2 - sb * s_b2
                if gain > best_gain:
                    best_gain = gain
                    best_kind = 2
                    best_s = s
                    best_b = B
            if best_kind == 0:
                continue
            improved += 1
            B = best_b
            _remove_row(
                A,
                r,
                lab,
                size,
                head,
                nxt,
                prv,
                lo,
                lo2,
                hi,
                hi2,
                nn,
                dist_,
                hk,
                hv,
                shift,
                raw,
                num_act,
                cat,
                cat_act,
                vmax,
            )
            if best_kind == 2:
                swaps += 1
                s = best_s
                _remove_row(
                    B,
                    s,
                    lab,
                    size,
                    head,
                    nxt,
                    prv,
                    lo,
                    lo2,
                    hi,
                    hi2,
                    nn,
                    dist_,
                    hk,
                    hv,
                    shift,
                    raw,
                    num_act,
                    cat,
                    cat_act,
                    vmax,
                )
                _add_row(
                    A,
                    s,
                    lab,
                    size,
                    head,
                    nxt,
                    prv,
                    lo,
                    lo2,
                    hi,
                    hi2,
                    nn,
                    dist_,
                    hk,
                    hv,
                    shift,
                    used,
                    raw,
                    num_act,
                    cat,
                    cat_act,
                    vmax,
                )
            else:
                moves += 1
            _add_row(
                B,
                r,
                lab,
                size,
                head,
                nxt,
                prv,
                lo,
                lo2,
                hi,
                hi2,
                nn,
                dist_,
                hk,
                hv,
                shift,
                used,
                raw,
                num_act,
                cat,
                cat_act,
                vmax,
            )
            S[A] = _class_sum(A, size, lo, hi, nn, dist_, span, wn, num_act, wc, cat_act, card)
            S[B] = _class_sum(B, size, lo, hi, nn, dist_, span, wn, num_act, wc, cat_act, card)
            if used[0] * 2 > cap:
                used[0] = _build_counts(lab, cat, cat_act, vmax, hk, hv, shift, dist_)
        if improved == 0:
            break
    stats[0] = passes
    stats[1] = moves
    stats[2] = swaps


# ---------------------------------------------------------------------------------------
# Hilbert keys (the coarse order's numeric part; block mode's curve, see blocks.py)
# ---------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _hilbert_key(x, bits, spread):
    """Hilbert index of one point (coordinates < 2**bits, d * bits <= 64); x is scratch.

    Skilling's transposition ("Programming the Hilbert curve", 2004) written without
    data-dependent branches, then the bits interleaved through ``spread`` (a byte's bits
    placed d apart), most significant first.
    """
    d = x.shape[0]
    one = np.uint64(1)
    zero = np.uint64(0)
    for level in range(bits - 1, 0, -1):
        q = one << np.uint64(level)
        p = q - one
        for j in range(d):
            m = zero - ((x[j] >> np.uint64(level)) & one)
            x[0] ^= p & m
            t = (x[0] ^ x[j]) & p & ~m
            x[0] ^= t
            x[j] ^= t
    for j in range(1, d):
        x[j] ^= x[j - 1]
    t = zero
    for level in range(bits - 1, 0, -1):
        m = zero - ((x[d - 1] >> np.uint64(level)) & one)
        t ^= ((one << np.uint64(level)) - one) & m
    key = zero
    for j in range(d):
        v = x[j] ^ t
        part = spread[v & np.uint64(255)]
        if bits > 8:
            # only then is 8 * d below 64: a wider shift is undefined in LLVM
            part |= spread[(v >> np.uint64(8)) & np.uint64(255)] << np.uint64(8 * d)
        key |= part << np.uint64(d - 1 - j)
    return key


@njit(cache=True, nogil=True)
def hilbert_keys(nums, lo, span, cats, rank, roff, card, bits, spread, start, end, keys):
    """Hilbert keys of rows start..end-1 into ``keys`` (see blocks._axis_levels for the axes)."""
    levels = 1 << bits
    n_num = nums.shape[0]
    x = np.empty(n_num + cats.shape[0], np.uint64)
    for i in range(start, end):
        for a in range(n_num):
            v = nums[a, i]
            if v != v:
                x[a] = np.uint64(levels - 1)
            else:
                lv = np.floor((v - lo[a]) / span[a] * (levels - 2) + 0.5)
                x[a] = np.uint64(min(max(lv, 0.0), levels - 2.0))
        for c in range(cats.shape[0]):
            r = rank[roff[c] + cats[c, i]]
            x[n_num + c] = np.uint64(r * (levels - 1) // (card[c] - 1))
        keys[i] = _hilbert_key(x, bits, spread)
