"""Leftovers placed by least NCP increase, then refinement by moves and swaps (the entry
kernel :func:`finish`).

Per class c: size[c], the member list (head[c], nxt/prv per row), numeric bounds and NULL
counts lo/hi/nn[c, j], categorical distinct counts dist_[c, q], and S[c] = sum_q w_q NCP_q,
so the class costs size[c] * S[c]. How many rows of class c hold value v of QI q lives in
an open-addressing hash keyed (c * dc + q) * vmax + v: O(n d) memory whatever the
cardinalities. The swaps, tried from each row with every partner in its window, read three
facts per categorical QI instead of probing the hash for them: whether the partner alone
holds its value in its class (a bit per row and QI, redone for the two classes a move or
swap changes), whether the row's own class holds the partner's value (the class's values
marked while its row is tried) and whether the partner's class holds the row's value (a bit
per class and QI, found once per row).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .costs import INF, cat_ncp, num_ncp, num_ncp_with, within_width
from .criteria import active, members_ok

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
            s += wn[j] * num_ncp(lo[c, j], hi[c, j], nn[c, j], size[c], span[j])
    for q in range(wc.shape[0]):
        if cat_act[q]:
            s += wc[q] * cat_ncp(dist_[c, q], card[q])
    return s


@njit(cache=True, nogil=True)
def _add_row(
    c,
    r,
    lab,
    size,
    wsz,
    wt,
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
    wsz[c] += wt[r]
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
    wsz,
    wt,
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
    wsz[c] -= wt[r]
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
def _mark_alone(c, head, nxt, cat, cat_act, vmax, hk, hv, shift, alone):
    """``alone[i]`` for each row i of class c: bit q set when no other row of c holds its
    value of (active) categorical QI q."""
    dc = cat.shape[0]
    i = head[c]
    while i >= 0:
        bits = np.int64(0)
        for q in range(dc):
            if cat_act[q] and hv[_hslot(hk, (c * dc + q) * vmax + cat[q, i], shift)] == 1:
                bits |= np.int64(1) << np.int64(q)
        alone[i] = bits
        i = nxt[i]


@njit(cache=True, nogil=True)
def _mark_values(c, head, nxt, cat, cat_act, vmax, marks, on):
    """``marks[q * vmax + v]`` set to ``on`` for every value v of QI q that class c holds."""
    dc = cat.shape[0]
    i = head[c]
    while i >= 0:
        for q in range(dc):
            if cat_act[q]:
                marks[q * vmax + cat[q, i]] = on
        i = nxt[i]


@njit(cache=True, nogil=True, inline="always")
def _holds(c, r, cat, cat_act, vmax, hk, hv, shift):
    """Bit q set when class c holds row r's value of (active) categorical QI q."""
    dc = cat.shape[0]
    bits = np.int64(0)
    for q in range(dc):
        if cat_act[q] and hv[_hslot(hk, (c * dc + q) * vmax + cat[q, r], shift)] != 0:
            bits |= np.int64(1) << np.int64(q)
    return bits


@njit(cache=True, nogil=True, inline="always")
def _impurity_change(lc, lm, c, out_label, in_label):
    """How many more rows of class c lie outside its majority label once a row of
    ``out_label`` leaves it and one of ``in_label`` joins it (-1: none of either); ``lm[c]``
    is its current majority count."""
    if out_label == in_label:
        return 0
    if out_label < 0:
        # one joins: impurity grows unless its label is (one of) the majority
        return 0 if lc[c, in_label] == lm[c] else 1
    top = 0
    for m in range(lc.shape[1]):
        v = lc[c, m] - (1 if m == out_label else 0) + (1 if m == in_label else 0)
        if v > top:
            top = v
    size_change = (1 if in_label >= 0 else 0) - 1
    return size_change - (top - lm[c])


@njit(cache=True, nogil=True)
def _lab_count(lc, lm, c, label, step):
    """Class c's count of ``label`` moves by ``step``; its majority count follows."""
    lc[c, label] += step
    if step > 0:
        if lc[c, label] > lm[c]:
            lm[c] = lc[c, label]
    else:
        top = 0
        for m in range(lc.shape[1]):
            if lc[c, m] > top:
                top = lc[c, m]
        lm[c] = top


@njit(cache=True, nogil=True)
def _place_increase(
    c,
    r,
    size,
    lo,
    hi,
    nn,
    dist_,
    hk,
    hv,
    shift,
    raw,
    span,
    wn,
    num_act,
    cat,
    card,
    wc,
    cat_act,
    qkind,
    qidx,
    vmax,
    wlim,
    vlim,
    wsz,
    w_r,
):
    """How much class c's information loss grows when row r joins it (QIs in column order);
    INF when r would break a per-column limit there. ``size[c]`` counts the class's rows
    (its NCP's shape: all NULL, mixed), ``wsz[c]`` the rows they stand for and ``w_r`` those
    r stands for (the loss's multiplier)."""
    dc = cat.shape[0]
    for j in range(raw.shape[0]):
        if not within_width(lo[c, j], hi[c, j], raw[j, r], wlim[j]):
            return INF
    old = 0.0
    new = 0.0
    for t in range(qkind.shape[0]):
        u = qidx[t]
        if qkind[t] == 0:
            if not num_act[u]:
                continue
            o = num_ncp(lo[c, u], hi[c, u], nn[c, u], size[c], span[u])
            m = num_ncp_with(lo[c, u], hi[c, u], nn[c, u], size[c] + 1, span[u], raw[u, r])
            old += wn[u] * o * wsz[c]
            new += wn[u] * m * (wsz[c] + w_r)
        else:
            if not cat_act[u]:
                continue
            dq = dist_[c, u]
            o = cat_ncp(dq, card[u])
            key = (c * dc + u) * vmax + cat[u, r]
            if hv[_hslot(hk, key, shift)] == 0:
                dq += 1
                if dq > vlim[u]:
                    return INF
            m = cat_ncp(dq, card[u])
            old += wc[u] * o * wsz[c]
            new += wc[u] * m * (wsz[c] + w_r)
    return new - old


@njit(cache=True, nogil=True)
def finish(
    raw,
    span,
    wn,
    num_act,
    cat,
    card,
    wc,
    cat_act,
    qkind,
    qidx,
    lab,
    k,
    place,
    window,
    max_passes,
    stats,
    stop,
    scode,
    soff,
    sp,
    sord,
    crit_i,
    crit_f,
    wlim,
    vlim,
    tgt,
    n_lab,
    tw,
    wt,
):
    """Place the rows labelled -2 (the fewer than k left by the greedy pass) by least NCP
    increase, then, when ``max_passes`` > 0, refine: move one row to another class or swap
    two rows of different classes whenever the total NCP falls and every class keeps at
    least k rows.

    Candidate partners of row r are the rows within ``window`` positions of r in the row
    order (rows that agree on its leading QIs). Rows labelled -1 (suppressed) are left
    alone. ``qkind``/``qidx`` give the QIs in the data's column order (0 numeric, 1
    categorical; index into raw/cat) so sums run in the same order as leftover.py.
    ``stats`` receives [passes, moves, swaps]. ``stop[0]`` set (the run was interrupted, its
    labels will not be used) ends the refinement at the next row.

    Criteria on top of k (``crit_i`` asks any, see :mod:`.criteria`; ``scode[s, i]``: row i's
    value of sensitive column s on the value axis): a row labelled -2 joins, of the classes
    that keep the criteria with it, the one whose NCP grows least, and is labelled -1 when
    none does; a move or swap is taken only when both classes keep them afterwards (checked,
    from the classes' member lists, only for a candidate that would be the best so far).

    Per-column limits (``wlim``, ``vlim``, see greedy_pass): a row joins only a class it
    keeps within them (none: it is labelled -1), and no move or swap breaks them.

    Target labels (``tgt[i]``: row i's label, 0 .. ``n_lab`` - 1; empty: none) with ``tw`` >
    0: a class's cost is its information loss plus ``tw`` for each row outside its majority
    label, in placement, moves and swaps alike (a row outside its class's majority label may
    start a swap even when its class is no cheaper without it).

    Multiplicities: ``wt[i]`` is how many rows row i stands for (all 1 when every row stands
    for itself). A class costs the rows it stands for times S, every class keeps standing
    for k rows or more through moves and swaps, and rows move whole. The privacy criteria
    and the target count rows as they are (all 1).
    """
    act = active(crit_i)
    scnt = np.zeros(sp.shape[0], dtype=np.int64)
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
    size = np.zeros(n_cls, dtype=np.int64)  # a class's rows (its NCP's shape)
    wsz = np.zeros(n_cls, dtype=np.int64)  # ... and the rows they stand for (its cost)
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
                wsz,
                wt,
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
    has_t = tgt.shape[0] > 0 and tw > 0
    lc = np.zeros((n_cls if has_t else 0, max(n_lab, 1)), dtype=np.int32)
    lm = np.zeros(n_cls if has_t else 0, dtype=np.int32)
    if has_t:
        for i in range(n):
            if lab[i] >= 0:
                _lab_count(lc, lm, lab[i], tgt[i], 1)
    S = np.empty(n_cls)
    for c in range(n_cls):
        S[c] = _class_sum(c, size, lo, hi, nn, dist_, span, wn, num_act, wc, cat_act, card)

    # leftovers: the class whose NCP grows least, ties by the lower class id (with criteria:
    # of the classes that keep them with the row)
    if place:
        inc_c = np.empty(n_cls)
        for r in range(n):
            if lab[r] != -2:
                continue
            best_c = -1
            best = INF
            for c in range(n_cls):
                inc_c[c] = INF
                if size[c] == 0:
                    continue
                inc = _place_increase(
                    c, r, size, lo, hi, nn, dist_, hk, hv, shift, raw, span, wn, num_act, cat, card, wc,
                    cat_act, qkind, qidx, vmax, wlim, vlim, wsz, wt[r],
                )  # fmt: skip
                if has_t and inc < INF:
                    inc += tw * _impurity_change(lc, lm, c, -1, tgt[r])
                inc_c[c] = inc
                if inc < best and inc < INF:
                    best = inc
                    best_c = c
            if act and best_c >= 0:
                by_inc = np.argsort(inc_c, kind="mergesort")
                best_c = -1
                for t in range(n_cls):
                    c = by_inc[t]
                    if inc_c[c] == INF:
                        break
                    if members_ok(head[c], nxt, -1, r, scode, scnt, soff, sp, sord, crit_i, crit_f):
                        best_c = c
                        break
            if best_c < 0:
                lab[r] = -1
                continue
            _add_row(
                best_c,
                r,
                lab,
                size,
                wsz,
                wt,
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
            if has_t:
                _lab_count(lc, lm, best_c, tgt[r], 1)

    # refinement
    a_lo = np.empty(dn)
    a_hi = np.empty(dn)
    a_nn = np.empty(dn, dtype=np.int64)
    a_uniq = np.zeros(dc, dtype=np.bool_)
    seen = np.full(n_cls, -1, dtype=np.int64)
    # per row, bit q: it alone holds its value of QI q in its class (kept for the classes a
    # move or swap changes); per class, bit q: it holds the current row's value of QI q
    # (for turn ``tick``); the values of the current row's class, marked: the swaps' value
    # tests read these instead of the value-count hash
    alone = np.zeros(n, dtype=np.int64)
    for c in range(n_cls):
        _mark_alone(c, head, nxt, cat, cat_act, vmax, hk, hv, shift, alone)
    held = np.zeros(n_cls, dtype=np.int64)
    held_at = np.full(n_cls, -1, dtype=np.int64)
    marks = np.zeros(dc * vmax, dtype=np.bool_)
    tick = 0
    moves = 0
    swaps = 0
    passes = 0
    eps = 1e-9
    for _ in range(max_passes):
        passes += 1
        improved = 0
        for r in range(n):
            if stop[0]:
                break
            A = lab[r]
            if A < 0:
                continue
            sa = size[A]
            wa = wsz[A]
            w_r = wt[r]
            cost_a = wa * S[A]
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
                    s_a_minus += wn[j] * num_ncp(a_lo[j], a_hi[j], a_nn[j], sa - 1, span[j])
            for q in range(dc):
                if not cat_act[q]:
                    continue
                a_uniq[q] = (alone[r] >> np.int64(q)) & 1 == 1
                dq = dist_[A, q]
                if a_uniq[q]:
                    dq -= 1
                s_a_minus += wc[q] * cat_ncp(dq, card[q])
            # A swap gains at most what its two rows save by leaving their classes, so only
            # rows whose class is cheaper without them start one (the partner's turn covers
            # the other case); a row whose class would stand for fewer than k rows without
            # it cannot move.
            swaps_ok = s_a_minus < S[A] or (has_t and lc[A, tgt[r]] < lm[A])
            if not swaps_ok and wa - w_r < k:
                continue
            tick += 1
            if swaps_ok:
                _mark_values(A, head, nxt, cat, cat_act, vmax, marks, True)
            a_ok = -1  # whether A keeps the criteria without r: not yet known
            best_gain = eps
            best_kind = 0
            best_s = -1
            best_b = -1
            for s in range(max(0, r - window), min(n, r + window + 1)):
                B = lab[s]
                if B < 0 or B == A:
                    continue
                sb = size[B]
                wb = wsz[B]
                cost_b = wb * S[B]
                if held_at[B] != tick:
                    held_at[B] = tick
                    held[B] = _holds(B, r, cat, cat_act, vmax, hk, hv, shift)
                hb = held[B]
                # move r into B
                if wa - w_r >= k and seen[B] != r:
                    seen[B] = r
                    fits = True
                    for j in range(dn):
                        if not within_width(lo[B, j], hi[B, j], raw[j, r], wlim[j]):
                            fits = False
                    s_new = 0.0
                    for j in range(dn):
                        if not num_act[j]:
                            continue
                        s_new += wn[j] * num_ncp_with(
                            lo[B, j], hi[B, j], nn[B, j], sb + 1, span[j], raw[j, r]
                        )
                    for q in range(dc):
                        if not cat_act[q]:
                            continue
                        dq = dist_[B, q]
                        if (hb >> np.int64(q)) & 1 == 0:
                            dq += 1
                            if dq > vlim[q]:
                                fits = False
                        s_new += wc[q] * cat_ncp(dq, card[q])
                    gain = cost_a + cost_b - (wa - w_r) * s_a_minus - (wb + w_r) * s_new
                    if has_t:
                        lr = tgt[r]
                        gain -= tw * (
                            _impurity_change(lc, lm, A, lr, -1) + _impurity_change(lc, lm, B, -1, lr)
                        )
                    if not fits:
                        gain = -INF
                    if gain > best_gain and act:
                        if a_ok < 0:
                            a_ok = 0
                            if members_ok(head[A], nxt, r, -1, scode, scnt, soff, sp, sord, crit_i, crit_f):
                                a_ok = 1
                        if a_ok == 0 or not members_ok(
                            head[B], nxt, -1, r, scode, scnt, soff, sp, sord, crit_i, crit_f
                        ):
                            gain = -INF
                    if gain > best_gain:
                        best_gain = gain
                        best_kind = 1
                        best_b = B
                if not swaps_ok:
                    continue
                # swap r and s (each class keeping k rows or more)
                w_s = wt[s]
                if wa - w_r + w_s < k or wb - w_s + w_r < k:
                    continue
                s_a2 = 0.0
                s_b2 = 0.0
                fits = True
                for j in range(dn):
                    if not num_act[j]:
                        continue
                    x = raw[j, r]
                    y = raw[j, s]
                    # A without r, with s
                    s_a2 += wn[j] * num_ncp_with(a_lo[j], a_hi[j], a_nn[j], sa, span[j], y)
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
                    s_b2 += wn[j] * num_ncp_with(bl, bh, bn, sb, span[j], x)
                    if not (within_width(a_lo[j], a_hi[j], y, wlim[j]) and within_width(bl, bh, x, wlim[j])):
                        fits = False
                for q in range(dc):
                    if not cat_act[q]:
                        continue
                    vr = cat[q, r]
                    vs = cat[q, s]
                    if vr == vs:
                        s_a2 += wc[q] * cat_ncp(dist_[A, q], card[q])
                        s_b2 += wc[q] * cat_ncp(dist_[B, q], card[q])
                        continue
                    da = dist_[A, q]
                    if a_uniq[q]:
                        da -= 1
                    if not marks[q * vmax + vs]:
                        da += 1
                    db = dist_[B, q]
                    if (alone[s] >> np.int64(q)) & 1 == 1:
                        db -= 1
                    if (hb >> np.int64(q)) & 1 == 0:
                        db += 1
                    if da > vlim[q] or db > vlim[q]:
                        fits = False
                    s_a2 += wc[q] * cat_ncp(da, card[q])
                    s_b2 += wc[q] * cat_ncp(db, card[q])
                gain = cost_a + cost_b - (wa - w_r + w_s) * s_a2 - (wb - w_s + w_r) * s_b2
                if has_t and tgt[r] != tgt[s]:
                    gain -= tw * (
                        _impurity_change(lc, lm, A, tgt[r], tgt[s])
                        + _impurity_change(lc, lm, B, tgt[s], tgt[r])
                    )
                if not fits:
                    gain = -INF
                if gain > best_gain and act:
                    same = True
                    for u in range(scode.shape[0]):
                        if scode[u, r] != scode[u, s]:
                            same = False
                    if not same and not (
                        members_ok(head[A], nxt, r, s, scode, scnt, soff, sp, sord, crit_i, crit_f)
                        and members_ok(head[B], nxt, s, r, scode, scnt, soff, sp, sord, crit_i, crit_f)
                    ):
                        gain = -INF
                if gain > best_gain:
                    best_gain = gain
                    best_kind = 2
                    best_s = s
                    best_b = B
            if swaps_ok:
                _mark_values(A, head, nxt, cat, cat_act, vmax, marks, False)
            if best_kind == 0:
                continue
            improved += 1
            B = best_b
            _remove_row(
                A,
                r,
                lab,
                size,
                wsz,
                wt,
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
                    wsz,
                    wt,
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
                    wsz,
                    wt,
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
                wsz,
                wt,
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
            if has_t:
                _lab_count(lc, lm, A, tgt[r], -1)
                _lab_count(lc, lm, B, tgt[r], 1)
                if best_kind == 2:
                    _lab_count(lc, lm, B, tgt[best_s], -1)
                    _lab_count(lc, lm, A, tgt[best_s], 1)
            S[A] = _class_sum(A, size, lo, hi, nn, dist_, span, wn, num_act, wc, cat_act, card)
            S[B] = _class_sum(B, size, lo, hi, nn, dist_, span, wn, num_act, wc, cat_act, card)
            if used[0] * 2 > cap:
                used[0] = _build_counts(lab, cat, cat_act, vmax, hk, hv, shift, dist_)
            _mark_alone(A, head, nxt, cat, cat_act, vmax, hk, hv, shift, alone)
            _mark_alone(B, head, nxt, cat, cat_act, vmax, hk, hv, shift, alone)
        if improved == 0 or stop[0]:
            break
    stats[0] = passes
    stats[1] = moves
    stats[2] = swaps
