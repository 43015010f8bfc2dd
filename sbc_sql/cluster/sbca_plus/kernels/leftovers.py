"""The rows the greedy pass left (labelled -2, fewer than k) placed one by one, each in the
class whose cost grows least with it (the first phase of :func:`.refine.finish`)."""

from __future__ import annotations

import numpy as np
from numba import njit

from .classes import add_row, class_ncp, keeps, slot, value_key
from .costs import INF, cat_ncp, num_ncp, num_ncp_with, within_width
from .target import impurity_change, label_count


@njit(cache=True, nogil=True)
def place_increase(tab, cls, c, r):
    """How much class c's information loss grows when row r joins it (QIs in column order,
    so the sums run as leftover.py's); INF when r would break a per-column limit there.
    ``size[c]`` counts the class's rows (its NCP's shape: all NULL, mixed), ``wsz[c]`` the
    rows they stand for and ``wt[r]`` those r stands for (the loss's multiplier)."""
    raw, span, wn, num_act, wlim = tab.raw, tab.span, tab.wn, tab.num_act, tab.wlim
    cat, card, wc, cat_act, vlim, vmax = tab.cat, tab.card, tab.wc, tab.cat_act, tab.vlim, tab.vmax
    qkind, qidx = tab.qkind, tab.qidx
    lo, hi, nn, dist, hk, hv, shift = cls.lo, cls.hi, cls.nn, cls.dist, cls.hk, cls.hv, cls.shift
    dc = cat.shape[0]
    for j in range(raw.shape[0]):
        if not within_width(lo[c, j], hi[c, j], raw[j, r], wlim[j]):
            return INF
    size = cls.size[c]
    wsz = cls.wsz[c]
    w_r = tab.wt[r]
    old = 0.0
    new = 0.0
    for t in range(qkind.shape[0]):
        u = qidx[t]
        if qkind[t] == 0:
            if not num_act[u]:
                continue
            o = num_ncp(lo[c, u], hi[c, u], nn[c, u], size, span[u])
            m = num_ncp_with(lo[c, u], hi[c, u], nn[c, u], size + 1, span[u], raw[u, r])
            old += wn[u] * o * wsz
            new += wn[u] * m * (wsz + w_r)
        else:
            if not cat_act[u]:
                continue
            dq = dist[c, u]
            o = cat_ncp(dq, card[u])
            if hv[slot(hk, value_key(c, u, cat[u, r], dc, vmax), shift)] == 0:
                dq += 1
                if dq > vlim[u]:
                    return INF
            m = cat_ncp(dq, card[u])
            old += wc[u] * o * wsz
            new += wc[u] * m * (wsz + w_r)
    return new - old


@njit(cache=True, nogil=True)
def _nearest_class(tab, cls, tg, cr, r, inc):
    """The class row r joins: the one whose cost grows least with it, ties by the lower class
    id (with criteria: of the classes that keep them with r); -1 when none can take it.
    ``inc`` receives each class's increase (INF: it cannot take r)."""
    size = cls.size
    n_cls = size.shape[0]
    best_c = -1
    best = INF
    for c in range(n_cls):
        inc[c] = INF
        if size[c] == 0:
            continue
        grow = place_increase(tab, cls, c, r)
        if tg.on and grow < INF:
            grow += tg.tw * impurity_change(tg.lc, tg.lm, c, -1, tg.tgt[r])
        inc[c] = grow
        if grow < best and grow < INF:
            best = grow
            best_c = c
    if cr.act and best_c >= 0:
        by_inc = np.argsort(inc, kind="mergesort")
        best_c = -1
        for t in range(n_cls):
            c = by_inc[t]
            if inc[c] == INF:
                break
            if keeps(cr, cls, c, -1, r):
                return c
    return best_c


@njit(cache=True, nogil=True)
def place_leftovers(tab, cls, tg, cr):
    """Every row labelled -2 joins its nearest class, in row order (each class's cost and
    label counts kept up to date), or is labelled -1 (suppressed) when no class can take it."""
    lab, ncp = cls.lab, cls.ncp
    inc = np.empty(ncp.shape[0])
    for r in range(lab.shape[0]):
        if lab[r] != -2:
            continue
        c = _nearest_class(tab, cls, tg, cr, r, inc)
        if c < 0:
            lab[r] = -1
            continue
        add_row(tab, cls, c, r)
        ncp[c] = class_ncp(tab, cls, c)
        if tg.on:
            label_count(tg.lc, tg.lm, c, tg.tgt[r], 1)
