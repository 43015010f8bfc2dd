"""Leftovers placed by least NCP increase, then refinement by moves and swaps, then pairs of
classes split anew (the entry kernel :func:`finish`).

:func:`finish` runs the phases: the classes opened from the labels (:mod:`.classes`), the
leftovers placed (:mod:`.leftovers`), :func:`refine`'s passes, then :mod:`.resplit`'s
rounds. The swaps, tried from each row with every
partner in its window, read three facts per categorical QI instead of probing the
value-count hash for them: whether the partner alone holds its value in its class (a bit
per row and QI, redone for the two classes a move or swap changes), whether the row's own
class holds the partner's value (the class's values marked while its row is tried) and
whether the partner's class holds the row's value (a bit per class and QI, found once per
row).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from .classes import (
    Criteria,
    Table,
    add_row,
    class_count,
    class_ncp,
    keeps,
    open_classes,
    recount,
    remove_row,
    slot,
    value_key,
)
from .costs import EPS, INF, cat_ncp, num_ncp, num_ncp_with, within_width
from .criteria import active
from .leftovers import place_leftovers
from .resplit import resplit
from .target import impurity_change, label_count, open_target

#: What the refinement knows beside the classes. Of the current row r's class A without r:
#: its numeric bounds and NULL counts ``a_lo``/``a_hi``/``a_nn`` and, per categorical QI,
#: whether r alone holds its value there (``a_uniq``). ``seen[B]``: the last row whose move
#: into class B was tried. ``alone[i]``, bit q: row i alone holds its value of QI q in its
#: class (kept for the classes a move or swap changes). ``held[B]``, bit q: class B holds
#: r's value of QI q (found at turn ``held_at[B]``; ``turn[0]`` counts the rows tried).
#: ``marks[q * vmax + v]``: A holds value v of QI q (set while r is tried).
Refinement = namedtuple(
    "Refinement", ("a_lo", "a_hi", "a_nn", "a_uniq", "seen", "alone", "held", "held_at", "turn", "marks")
)

#: kinds of change a row can make
NONE = 0
MOVE = 1
SWAP = 2


@njit(cache=True, nogil=True)
def _mark_alone(tab, cls, c, alone):
    """``alone[i]`` for each row i of class c: bit q set when no other row of c holds its
    value of (active) categorical QI q."""
    cat, cat_act, vmax = tab.cat, tab.cat_act, tab.vmax
    nxt, hk, hv, shift = cls.nxt, cls.hk, cls.hv, cls.shift
    dc = cat.shape[0]
    i = cls.head[c]
    while i >= 0:
        bits = np.int64(0)
        for q in range(dc):
            if cat_act[q] and hv[slot(hk, value_key(c, q, cat[q, i], dc, vmax), shift)] == 1:
                bits |= np.int64(1) << np.int64(q)
        alone[i] = bits
        i = nxt[i]


@njit(cache=True, nogil=True)
def _mark_values(cat, cat_act, vmax, head, nxt, c, marks, on):
    """``marks[q * vmax + v]`` set to ``on`` for every value v of QI q that class c holds."""
    i = head[c]
    while i >= 0:
        for q in range(cat.shape[0]):
            if cat_act[q]:
                marks[q * vmax + cat[q, i]] = on
        i = nxt[i]


@njit(cache=True, nogil=True, inline="always")
def _holds(cat, cat_act, vmax, hk, hv, shift, c, r):
    """Bit q set when class c holds row r's value of (active) categorical QI q."""
    dc = cat.shape[0]
    bits = np.int64(0)
    for q in range(dc):
        if cat_act[q] and hv[slot(hk, value_key(c, q, cat[q, r], dc, vmax), shift)] != 0:
            bits |= np.int64(1) << np.int64(q)
    return bits


@njit(cache=True, nogil=True)
def _open_refinement(tab, cls):
    n = cls.lab.shape[0]
    n_cls = cls.size.shape[0]
    dn = tab.raw.shape[0]
    dc = tab.cat.shape[0]
    rf = Refinement(
        np.empty(dn),
        np.empty(dn),
        np.empty(dn, dtype=np.int64),
        np.zeros(dc, dtype=np.bool_),
        np.full(n_cls, -1, dtype=np.int64),
        np.zeros(n, dtype=np.int64),
        np.zeros(n_cls, dtype=np.int64),
        np.full(n_cls, -1, dtype=np.int64),
        np.zeros(1, dtype=np.int64),
        np.zeros(dc * tab.vmax, dtype=np.bool_),
    )
    for c in range(n_cls):
        _mark_alone(tab, cls, c, rf.alone)
    return rf


@njit(cache=True, nogil=True)
def _swap_keeps(cr, cls, A, B, r, s):
    """Whether classes A and B keep the criteria once rows r (of A) and s (of B) swap."""
    scode = cr.scode
    for u in range(scode.shape[0]):
        if scode[u, r] != scode[u, s]:
            return keeps(cr, cls, A, r, s) and keeps(cr, cls, B, s, r)
    return True  # the same sensitive values: neither class changes for the criteria


@njit(cache=True, nogil=True)
def _apply(tab, cls, tg, rf, kind, A, B, r, s):
    """Row r moves from class A to B, and with a swap row s from B to A: the classes, their
    costs and label counts, the hash (recounted when half full) and the lone-value bits."""
    remove_row(tab, cls, A, r)
    if kind == SWAP:
        remove_row(tab, cls, B, s)
        add_row(tab, cls, A, s)
    add_row(tab, cls, B, r)
    if tg.on:
        lc, lm, tgt = tg.lc, tg.lm, tg.tgt
        label_count(lc, lm, A, tgt[r], -1)
        label_count(lc, lm, B, tgt[r], 1)
        if kind == SWAP:
            label_count(lc, lm, B, tgt[s], -1)
            label_count(lc, lm, A, tgt[s], 1)
    cls.ncp[A] = class_ncp(tab, cls, A)
    cls.ncp[B] = class_ncp(tab, cls, B)
    if cls.used[0] * 2 > cls.cap:
        recount(tab, cls)
    _mark_alone(tab, cls, A, rf.alone)
    _mark_alone(tab, cls, B, rf.alone)


@njit(cache=True, nogil=True)
def _refine_pass(tab, cls, tg, cr, rf, k, window, stop):
    """One pass over the rows in order, each taking the move or swap that lowers the total
    cost most (by more than EPS) and keeps k, the limits and the criteria; returns how many
    moves and swaps it took.

    One function on purpose: numba counts a reference to every array it reads out of a
    tuple, and to every array argument, at each call, so the loops over rows and partners
    read the fields once, here, and call only helpers of scalars.
    """
    raw, span, wn, num_act, wlim, wt = tab.raw, tab.span, tab.wn, tab.num_act, tab.wlim, tab.wt
    cat, card, wc, cat_act, vlim, vmax = tab.cat, tab.card, tab.wc, tab.cat_act, tab.vlim, tab.vmax
    lab, size, wsz, ncp, dist = cls.lab, cls.size, cls.wsz, cls.ncp, cls.dist
    lo, lo2, hi, hi2, nn = cls.lo, cls.lo2, cls.hi, cls.hi2, cls.nn
    head, nxt, hk, hv, shift = cls.head, cls.nxt, cls.hk, cls.hv, cls.shift
    a_lo, a_hi, a_nn, a_uniq, marks = rf.a_lo, rf.a_hi, rf.a_nn, rf.a_uniq, rf.marks
    seen, alone, held, held_at = rf.seen, rf.alone, rf.held, rf.held_at
    on, tw, tgt, lc, lm = tg.on, tg.tw, tg.tgt, tg.lc, tg.lm
    act = cr.act
    n = lab.shape[0]
    dn = raw.shape[0]
    dc = cat.shape[0]
    moves = 0
    swaps = 0
    for r in range(n):
        if stop[0]:
            break
        A = lab[r]
        if A < 0:
            continue
        sa = size[A]
        wa = wsz[A]
        w_r = wt[r]
        cost_a = wa * ncp[A]
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
            dq = dist[A, q]
            if a_uniq[q]:
                dq -= 1
            s_a_minus += wc[q] * cat_ncp(dq, card[q])
        # A swap gains at most what its two rows save by leaving their classes, so only rows
        # whose class is cheaper without them start one (the partner's turn covers the other
        # case); a row whose class would stand for fewer than k rows without it cannot move.
        swaps_ok = s_a_minus < ncp[A] or (on and lc[A, tgt[r]] < lm[A])
        can_move = wa - w_r >= k
        if not swaps_ok and not can_move:
            continue
        rf.turn[0] += 1
        turn = rf.turn[0]
        if swaps_ok:
            _mark_values(cat, cat_act, vmax, head, nxt, A, marks, True)
        a_ok = -1  # whether A keeps the criteria without r: not yet known
        best_gain, best_kind, best_s, best_b = EPS, NONE, -1, -1
        for s in range(max(0, r - window), min(lab.shape[0], r + window + 1)):
            B = lab[s]
            if B < 0 or B == A:
                continue
            wb = wsz[B]
            cost_b = wb * ncp[B]
            if held_at[B] != turn:
                held_at[B] = turn
                held[B] = _holds(cat, cat_act, vmax, hk, hv, shift, B, r)
            hb = held[B]
            # move r into B
            if can_move and seen[B] != r:
                seen[B] = r
                fits = True
                for j in range(dn):
                    if not within_width(lo[B, j], hi[B, j], raw[j, r], wlim[j]):
                        fits = False
                s_new = 0.0
                for j in range(dn):
                    if num_act[j]:
                        s_new += wn[j] * num_ncp_with(
                            lo[B, j], hi[B, j], nn[B, j], size[B] + 1, span[j], raw[j, r]
                        )
                for q in range(dc):
                    if not cat_act[q]:
                        continue
                    dq = dist[B, q]
                    if (hb >> np.int64(q)) & 1 == 0:
                        dq += 1
                        if dq > vlim[q]:
                            fits = False
                    s_new += wc[q] * cat_ncp(dq, card[q])
                gain = cost_a + cost_b - (wa - w_r) * s_a_minus - (wb + w_r) * s_new
                if on:
                    gain -= tw * (
                        impurity_change(lc, lm, A, tgt[r], -1) + impurity_change(lc, lm, B, -1, tgt[r])
                    )
                if not fits:
                    gain = -INF
                if gain > best_gain and act:
                    if a_ok < 0:
                        a_ok = 1 if keeps(cr, cls, A, r, -1) else 0
                    if a_ok == 0 or not keeps(cr, cls, B, -1, r):
                        gain = -INF
                if gain > best_gain:
                    best_gain, best_kind, best_b = gain, MOVE, B
            # swap r and s (each class keeping k rows or more)
            w_s = wt[s]
            if not swaps_ok or wa - w_r + w_s < k or wb - w_s + w_r < k:
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
                s_a2 += wn[j] * num_ncp_with(a_lo[j], a_hi[j], a_nn[j], size[A], span[j], y)
                # B without s (one row of value y: its minimum gives way to the second lowest,
                # see classes._class_bounds), with r
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
                s_b2 += wn[j] * num_ncp_with(bl, bh, bn, size[B], span[j], x)
                if not (within_width(a_lo[j], a_hi[j], y, wlim[j]) and within_width(bl, bh, x, wlim[j])):
                    fits = False
            for q in range(dc):
                if not cat_act[q]:
                    continue
                vr = cat[q, r]
                vs = cat[q, s]
                if vr == vs:
                    s_a2 += wc[q] * cat_ncp(dist[A, q], card[q])
                    s_b2 += wc[q] * cat_ncp(dist[B, q], card[q])
                    continue
                da = dist[A, q]
                if a_uniq[q]:
                    da -= 1
                if not marks[q * vmax + vs]:
                    da += 1
                db = dist[B, q]
                if (alone[s] >> np.int64(q)) & 1 == 1:
                    db -= 1
                if (hb >> np.int64(q)) & 1 == 0:
                    db += 1
                if da > vlim[q] or db > vlim[q]:
                    fits = False
                s_a2 += wc[q] * cat_ncp(da, card[q])
                s_b2 += wc[q] * cat_ncp(db, card[q])
            gain = cost_a + cost_b - (wa - w_r + w_s) * s_a2 - (wb - w_s + w_r) * s_b2
            if on and tgt[r] != tgt[s]:
                gain -= tw * (
                    impurity_change(lc, lm, A, tgt[r], tgt[s]) + impurity_change(lc, lm, B, tgt[s], tgt[r])
                )
            if not fits:
                gain = -INF
            if gain > best_gain and act and not _swap_keeps(cr, cls, A, B, r, s):
                gain = -INF
            if gain > best_gain:
                best_gain, best_kind, best_s, best_b = gain, SWAP, s, B
        if swaps_ok:
            _mark_values(cat, cat_act, vmax, head, nxt, A, marks, False)
        if best_kind == NONE:
            continue
        if best_kind == SWAP:
            swaps += 1
        else:
            moves += 1
        _apply(tab, cls, tg, rf, best_kind, A, best_b, r, best_s)
    return moves, swaps


@njit(cache=True, nogil=True)
def refine(tab, cls, tg, cr, k, window, max_passes, stop, stats):
    """Passes over the rows in order, each taking its best move or swap, until a pass changes
    nothing, ``max_passes`` are done or ``stop[0]`` is set; ``stats`` receives [passes,
    moves, swaps]."""
    rf = _open_refinement(tab, cls)
    moves = 0
    swaps = 0
    passes = 0
    for _ in range(max_passes):
        passes += 1
        pass_moves, pass_swaps = _refine_pass(tab, cls, tg, cr, rf, k, window, stop)
        moves += pass_moves
        swaps += pass_swaps
        if pass_moves + pass_swaps == 0 or stop[0]:
            break
    stats[0] = passes
    stats[1] = moves
    stats[2] = swaps


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
    rounds,
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

    Then, when ``rounds`` > 0 and no target counts, pairs of neighbouring classes are split
    anew where that lowers their cost (:func:`.resplit.resplit`, at most ``rounds`` rounds;
    both classes keep k, the limits and the criteria). ``stats`` receives [passes, moves,
    swaps, re-split rounds, pairs split anew].

    Multiplicities: ``wt[i]`` is how many rows row i stands for (all 1 when every row stands
    for itself). A class costs the rows it stands for times S, every class keeps standing
    for k rows or more through moves and swaps, and rows move whole. The privacy criteria
    and the target count rows as they are (all 1).
    """
    n_cls = class_count(lab)
    if n_cls == 0:
        return
    vmax = 1
    for q in range(cat.shape[0]):
        if card[q] > vmax:
            vmax = card[q]
    tab = Table(raw, span, wn, num_act, cat, card, wc, cat_act, qkind, qidx, wlim, vlim, wt, vmax)
    cr = Criteria(
        scode, np.zeros(sp.shape[0], dtype=np.int64), soff, sp, sord, crit_i, crit_f, active(crit_i)
    )
    cls = open_classes(tab, lab, n_cls)
    tg = open_target(tgt, n_lab, tw, lab, n_cls)
    if place:
        place_leftovers(tab, cls, tg, cr)
    refine(tab, cls, tg, cr, k, window, max_passes, stop, stats)
    if rounds > 0 and not tg.on and not stop[0]:
        resplit(tab, cr, lab, k, rounds, stop, stats[3:])
