"""A class grown one row at a time: the row of least NCP increase among a pool refilled
from the seed's SBC-nearest rows (SBCA+'s ``growth``)."""

from __future__ import annotations

import numpy as np
from numba import njit

from .costs import INF, num_ncp_with, within_width
from .select import _select


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
        s += wn[j] * num_ncp_with(glo[j], ghi[j], gnn[j], size + 1, span[j], wr[t, j])
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


@njit(cache=True, nogil=True, inline="always")
def _fits(t, wr, wcode, ccount, glo, ghi, wlim, has_w, full):
    """Whether wide-set row t may join the class under the per-column limits: every
    limited numeric's range stays within ``wlim`` (NULL widens nothing), and it brings no
    value to a categorical whose value set is full (bits of ``full``, active-QI order)."""
    if full != 0:
        for a in range(wcode.shape[1]):
            if (full >> np.int64(a)) & 1 and ccount[wcode[t, a]] == 0:
                return False
    if has_w:
        for j in range(wr.shape[1]):
            if not within_width(glo[j], ghi[j], wr[t, j], wlim[j]):
                return False
    return True


@njit(cache=True, nogil=True, inline="always")
def _clear(members, size, rid, rowslot, ccount, tgt, lcnt, has_t):
    """The class's value and label counts back to zeros, for the next class."""
    for t in range(size):
        r = rid[members[t]]
        for a in range(rowslot.shape[1]):
            ccount[rowslot[r, a]] = 0
        if has_t:
            lcnt[tgt[r]] = 0


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
    wlim,
    vlim_a,
    gdv,
    tgt,
    tw,
    lcnt,
    wl,
    wt,
):
    """Grow the seed's class to k rows from the wide set (see greedy_pass); returns the
    rows (members) it holds once their multiplicities ``wt`` (by row id; all 1 when every
    row stands for itself) add up to k, or minus the rows it holds when no row of the wide
    set fits the per-column limits before that.

    The row added is the one of least increase of the class's information loss. As
    ``(size + 1) * S(G + r) - size * S(G) = S(G) + (size + 1) * (S(G + r) - S(G))``, that is
    the row of least S(G + r): its numeric part is recomputed per step (O(numeric QIs)), its
    categorical part is a table lookup by the set of QIs whose value the class lacks (a
    bit mask per pool row, cleared for the rows holding a value when it enters the class;
    the table is redone when a QI's cost per value changes); at refills the wide set is
    ranked with the same parts summed directly (_num_key, _cat_delta). ``rowraw``/``rowslot``
    hold every row's numerics and ccount slots (one per active categorical QI, listed in
    ``aq``) row-major by row id; ``wr``/``wcode`` receive those of the wide set.

    Without limits or a target, and with a pool that is never refilled (it holds the whole
    wide set), a chosen row leaves the pool, so every pool row is a candidate: the least key
    is found in one pass and its ties settled in a second (the same pick as one pass with
    every test; 12 % less greedy time per block of 1,536 synthetic rows).

    Per-column limits (``wlim[j]``: the widest range of numeric QI j, INF for none;
    ``vlim_a[a]``: the most values of active categorical QI a): a row that would break one
    is taken out of the class's wide set for good (a class only widens), and a class whose
    pool runs dry is refilled at once from what remains of the wide set.

    Target labels (``tgt[r]``: row id r's label; empty: none) with ``tw`` > 0: a row whose
    label is not one of the class's majority labels would add one row of impurity, which
    costs ``tw``; as the class's loss grows by (size + 1) x S(G + r), its key grows by
    ``tw / (size + 1)``. ``lcnt`` (zeros on entry and on return) counts the class's labels,
    ``wl`` receives the wide set's labels.
    """
    dn = rowraw.shape[1]
    na = aq.shape[0]
    has_t = tgt.shape[0] > 0 and tw > 0
    for t in range(nw):
        r = rid[wset[t]]
        for j in range(dn):
            wr[t, j] = rowraw[r, j]
        for a in range(na):
            wcode[t, a] = rowslot[r, a]
        ok[t] = True
        if has_t:
            wl[t] = tgt[r]
    lmax = 0
    if has_t:
        lcnt[tgt[rid[seed]]] = 1
        lmax = 1
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
    has_w = False
    for j in range(dn):
        if wlim[j] < INF:
            has_w = True
    full = np.int64(0)
    for a in range(na):
        q = aq[a]
        ccount[rowslot[rs, a]] = 1
        gdv[a] = 1
        if vlim_a[a] <= 1:
            full |= np.int64(1) << np.int64(a)
        # NCP_q goes from 0 to 2/card with the second value, by 1/card with any later one
        dlt[a] = wc[q] * (2.0 / card[q])
    for g in range(tabm.shape[0]):
        _fill_table(tabm, g, dlt)
    members[0] = seed
    size = 1
    weight = wt[rs]
    if weight >= k:
        # a row standing for k rows or more is a class of its own
        _clear(members, 1, rid, rowslot, ccount, tgt, lcnt, has_t)
        return 1
    held = 1
    wview = wcode[:nw]
    np_ = _select(wtie, wtie, wset, nw, m, ok, cand, tpos)
    _gather_pool(cand, np_, wr, px)
    _pool_masks(cand, np_, wcode, ccount, cm, pc)
    n_tab = tabm.shape[0]
    limited = has_w or full != 0
    for a in range(na):
        if vlim_a[a] < card[aq[a]]:
            limited = True
    refresh = 2 if nw > np_ else k + 1
    # no limits, no target, one mask table, the pool never refilled: the plain path
    plain = not limited and not has_t and n_tab == 1 and refresh > k
    bu = 0
    for step in range(1, k):
        dry = False
        while True:
            if size == refresh or dry:
                if size == refresh:
                    refresh *= 2
                for t in range(nw):
                    if ok[t]:
                        if limited and not _fits(t, wr, wcode, ccount, glo, ghi, wlim, has_w, full):
                            ok[t] = False
                            continue
                        wkey[t] = _num_key(t, wr, span, wn, num_act, glo, ghi, gnn, size) + _cat_delta(
                            t, wview, ccount, dlt
                        )
                        if has_t and lcnt[wl[t]] < lmax:
                            wkey[t] += tw / (size + 1)
                np_ = _select(wkey, wtie, wset, nw, m, ok, cand, tpos)
                _gather_pool(cand, np_, wr, px)
                _pool_masks(cand, np_, wcode, ccount, cm, pc)
            if limited:
                for u in range(np_):
                    t = cand[u]
                    if ok[t] and not _fits(t, wr, wcode, ccount, glo, ghi, wlim, has_w, full):
                        ok[t] = False
                live = False
                for u in range(np_):
                    if ok[cand[u]]:
                        live = True
                        break
                if not live and not dry:
                    dry = True
                    continue
            break
        _pool_num_keys(np_, px, span, wn, num_act, glo, ghi, gnn, size, acc)
        best = -1
        best_key = INF
        best_d = INF
        if plain:
            # every pool row is a candidate: the least key in one pass, then its ties
            for u in range(np_):
                v = acc[u] + tabm[0, cm[u]]
                acc[u] = v
                if v < best_key:
                    best_key = v
            for u in range(np_):
                if acc[u] == best_key:
                    t = cand[u]
                    d = wtie[t]
                    if best < 0 or d < best_d or (d == best_d and wset[t] < wset[best]):
                        best_d = d
                        best = t
                        bu = u
        else:
            for u in range(np_):
                t = cand[u]
                if not ok[t]:
                    continue
                mk = cm[u]
                c = tabm[0, mk & 255]
                for g in range(1, n_tab):
                    c += tabm[g, (mk >> np.int64(8 * g)) & 255]
                key = acc[u] + c
                if has_t and lcnt[wl[t]] < lmax:
                    key += tw / (size + 1)
                if key > best_key:
                    continue
                d = wtie[t]
                if key < best_key or d < best_d or (d == best_d and wset[t] < wset[best]):
                    best_key = key
                    best_d = d
                    best = t
        if best < 0:
            # no row of the wide set fits the limits: the class cannot be completed
            _clear(members, size, rid, rowslot, ccount, tgt, lcnt, has_t)
            return -size
        ok[best] = False
        if plain:
            # out of the pool: the last pool row takes its place
            last = np_ - 1
            cand[bu] = cand[last]
            acc[bu] = acc[last]
            cm[bu] = cm[last]
            for j in range(px.shape[0]):
                px[j, bu] = px[j, last]
            for a in range(na):
                pc[a, bu] = pc[a, last]
            np_ = last
        members[step] = wset[best]
        held = step + 1
        weight += wt[rid[wset[best]]]
        if has_t:
            lb = wl[best]
            lcnt[lb] += 1
            if lcnt[lb] > lmax:
                lmax = lcnt[lb]
        if weight >= k:
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
            gdv[a] += 1
            if gdv[a] >= vlim_a[a]:
                full |= np.int64(1) << np.int64(a)
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
    _clear(members, held, rid, rowslot, ccount, tgt, lcnt, has_t)
    return held
