"""The classes as the leftovers and the refinement (:mod:`.refine`) keep them, updated one
row at a time, and the rows they are made of.

Per class c: size[c], the member list (head[c], nxt/prv per row), numeric bounds and NULL
counts lo/hi/nn[c, j] (with the second lowest and highest, lo2/hi2), categorical distinct
counts dist[c, q], and ncp[c] = sum_q w_q NCP_q, so the class costs wsz[c] * ncp[c]. How
many rows of class c hold value v of QI q lives in an open-addressing hash keyed
(c * dc + q) * vmax + v: O(n d) memory whatever the cardinalities.

Each kernel here and in the modules that use these structures reads the fields it needs
into locals first: numba counts a reference each time an array is read out of a tuple, and
a count taken inside a loop costs the loop several times its work.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from .costs import INF, cat_ncp, num_ncp
from .criteria import members_ok

#: The rows and what their QIs cost, read only: ``raw``/``cat`` the values, ``span``,
#: ``wn``/``wc``, ``num_act``/``cat_act`` and ``card`` as in the kernels' arrays,
#: ``qkind``/``qidx`` the QIs in the data's column order (0 numeric, 1 categorical; index
#: into raw/cat), ``wlim``/``vlim`` the per-column limits, ``wt[i]`` how many rows row i
#: stands for and ``vmax`` the largest cardinality (the hash's stride per QI).
Table = namedtuple(
    "Table",
    (
        "raw",
        "span",
        "wn",
        "num_act",
        "cat",
        "card",
        "wc",
        "cat_act",
        "qkind",
        "qidx",
        "wlim",
        "vlim",
        "wt",
        "vmax",
    ),
)

#: The classes (see the module docstring): ``lab[i]`` row i's class (-1: none), ``size``
#: and ``wsz`` a class's rows (its NCP's shape) and the rows they stand for (its cost), the
#: member lists, bounds and counts, ``ncp``; the value-count hash ``hk``/``hv`` (key, count;
#: ``cap`` slots, ``shift`` its hash's shift, ``used[0]`` slots taken).
Classes = namedtuple(
    "Classes",
    (
        "lab",
        "size",
        "wsz",
        "head",
        "nxt",
        "prv",
        "lo",
        "lo2",
        "hi",
        "hi2",
        "nn",
        "dist",
        "ncp",
        "hk",
        "hv",
        "shift",
        "used",
        "cap",
    ),
)

#: The privacy criteria on top of k (see :mod:`.criteria`): ``scode[s, i]`` row i's value of
#: sensitive column s, ``scnt`` a scratch count (zeros between calls), the criteria's
#: arrays, and ``act`` whether any is asked.
Criteria = namedtuple("Criteria", ("scode", "scnt", "soff", "sp", "sord", "crit_i", "crit_f", "act"))

_HMUL = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True, nogil=True, inline="always")
def slot(hk, key, shift):
    """The slot of ``key`` in the hash ``hk``: where it is, or the free slot it would take."""
    h = np.int64((np.uint64(key) * _HMUL) >> shift)
    mask = hk.shape[0] - 1
    while True:
        kk = hk[h]
        if kk == key or kk == -1:
            return h
        h = (h + 1) & mask


@njit(cache=True, nogil=True, inline="always")
def value_key(c, q, v, dc, vmax):
    """The hash key of value v of categorical QI q (of ``dc``) in class c."""
    return (c * dc + q) * vmax + v


@njit(cache=True, nogil=True)
def _hash_shift(cap):
    bits = 0
    while (1 << bits) < cap:
        bits += 1
    return np.uint64(64 - bits)


@njit(cache=True, nogil=True)
def class_count(lab):
    """How many classes the labels name (the highest label + 1)."""
    n_cls = 0
    for i in range(lab.shape[0]):
        if lab[i] + 1 > n_cls:
            n_cls = lab[i] + 1
    return n_cls


@njit(cache=True, nogil=True)
def open_classes(tab, lab, n_cls):
    """The classes of the rows labelled 0 .. ``n_cls`` - 1 in ``lab`` (which they keep up to
    date from then on), each with its cost."""
    n = lab.shape[0]
    dn = tab.raw.shape[0]
    dc = tab.cat.shape[0]
    cat_act = tab.cat_act
    n_act = 0
    for q in range(dc):
        if cat_act[q]:
            n_act += 1
    cap = 16
    while cap < 4 * (n * n_act + 8):
        cap *= 2
    cls = Classes(
        lab,
        np.zeros(n_cls, dtype=np.int64),
        np.zeros(n_cls, dtype=np.int64),
        np.full(n_cls, -1, dtype=np.int64),
        np.full(n, -1, dtype=np.int64),
        np.full(n, -1, dtype=np.int64),
        np.full((n_cls, dn), INF),
        np.full((n_cls, dn), INF),
        np.full((n_cls, dn), -INF),
        np.full((n_cls, dn), -INF),
        np.zeros((n_cls, dn), dtype=np.int64),
        np.zeros((n_cls, dc), dtype=np.int64),
        np.empty(n_cls),
        np.full(cap, -1, dtype=np.int64),
        np.zeros(cap, dtype=np.int32),
        _hash_shift(cap),
        np.zeros(1, dtype=np.int64),
        cap,
    )
    for i in range(n):
        c = lab[i]
        if c >= 0:
            lab[i] = -1
            add_row(tab, cls, c, i)
    ncp = cls.ncp
    for c in range(n_cls):
        ncp[c] = class_ncp(tab, cls, c)
    return cls


@njit(cache=True, nogil=True)
def recount(tab, cls):
    """Fill the value-count hash and the distinct counts anew from the labels (dropping the
    slots of values no class holds any more)."""
    cat, cat_act, vmax = tab.cat, tab.cat_act, tab.vmax
    lab, dist, hk, hv, shift = cls.lab, cls.dist, cls.hk, cls.hv, cls.shift
    dc = cat.shape[0]
    hk[:] = -1
    hv[:] = 0
    dist[:, :] = 0
    used = 0
    for i in range(lab.shape[0]):
        c = lab[i]
        if c < 0:
            continue
        for q in range(dc):
            if not cat_act[q]:
                continue
            key = value_key(c, q, cat[q, i], dc, vmax)
            h = slot(hk, key, shift)
            if hk[h] == -1:
                hk[h] = key
                used += 1
            if hv[h] == 0:
                dist[c, q] += 1
            hv[h] += 1
    cls.used[0] = used


@njit(cache=True, nogil=True)
def _class_bounds(head, nxt, raw, c, j):
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
def class_ncp(tab, cls, c):
    """sum_q w_q NCP_q of class c, from its bounds and counts."""
    wn, span, num_act, wc, card, cat_act = tab.wn, tab.span, tab.num_act, tab.wc, tab.card, tab.cat_act
    lo, hi, nn, size, dist = cls.lo, cls.hi, cls.nn, cls.size, cls.dist
    s = 0.0
    for j in range(wn.shape[0]):
        if num_act[j]:
            s += wn[j] * num_ncp(lo[c, j], hi[c, j], nn[c, j], size[c], span[j])
    for q in range(wc.shape[0]):
        if cat_act[q]:
            s += wc[q] * cat_ncp(dist[c, q], card[q])
    return s


@njit(cache=True, nogil=True)
def add_row(tab, cls, c, r):
    """Row r (in no class) joins class c: its members, bounds and counts (not its cost)."""
    raw, cat, cat_act, vmax = tab.raw, tab.cat, tab.cat_act, tab.vmax
    lo, lo2, hi, hi2, nn, dist = cls.lo, cls.lo2, cls.hi, cls.hi2, cls.nn, cls.dist
    lab, head, nxt, prv, hk, hv, shift = cls.lab, cls.head, cls.nxt, cls.prv, cls.hk, cls.hv, cls.shift
    dc = cat.shape[0]
    lab[r] = c
    cls.size[c] += 1
    cls.wsz[c] += tab.wt[r]
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
        key = value_key(c, q, cat[q, r], dc, vmax)
        h = slot(hk, key, shift)
        if hk[h] == -1:
            hk[h] = key
            cls.used[0] += 1
        if hv[h] == 0:
            dist[c, q] += 1
        hv[h] += 1


@njit(cache=True, nogil=True)
def remove_row(tab, cls, c, r):
    """Row r leaves class c: its members, bounds and counts (not its cost)."""
    raw, cat, cat_act, vmax = tab.raw, tab.cat, tab.cat_act, tab.vmax
    lo, lo2, hi, hi2, nn, dist = cls.lo, cls.lo2, cls.hi, cls.hi2, cls.nn, cls.dist
    lab, head, nxt, prv, hk, hv, shift = cls.lab, cls.head, cls.nxt, cls.prv, cls.hk, cls.hv, cls.shift
    dc = cat.shape[0]
    cls.size[c] -= 1
    cls.wsz[c] -= tab.wt[r]
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
            lo[c, j], lo2[c, j], hi[c, j], hi2[c, j], nn[c, j] = _class_bounds(head, nxt, raw, c, j)
    for q in range(dc):
        if not cat_act[q]:
            continue
        h = slot(hk, value_key(c, q, cat[q, r], dc, vmax), shift)
        hv[h] -= 1
        if hv[h] == 0:
            dist[c, q] -= 1


@njit(cache=True, nogil=True)
def keeps(cr, cls, c, out, inn):
    """Whether class c keeps the criteria without row ``out`` and with row ``inn`` (-1: none)."""
    return members_ok(
        cls.head[c],
        cls.nxt,
        out,
        inn,
        cr.scode,
        cr.scnt,
        cr.soff,
        cr.sp,
        cr.sord,
        cr.crit_i,
        cr.crit_f,
    )
