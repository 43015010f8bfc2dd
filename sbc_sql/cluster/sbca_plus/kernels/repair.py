"""A class of k rows grown on until it keeps the privacy criteria (see :mod:`.criteria`)."""

from __future__ import annotations

import numpy as np
from numba import njit

from .costs import INF, cat_ncp, num_ncp_with, within_width
from .criteria import first_failing, helpful, repair_bound


@njit(cache=True, nogil=True, inline="always")
def _within(i, raw, cat, cbase, rcount, cdist, glo, ghi, wlim, vlim):
    """Whether row i keeps the class within the per-column limits when it joins."""
    for j in range(raw.shape[0]):
        if not within_width(glo[j], ghi[j], raw[j, i], wlim[j]):
            return False
    for q in range(cat.shape[0]):  # noqa: SIM110 (a loop numba compiles)
        if cdist[q] >= vlim[q] and rcount[cbase[q] + cat[q, i]] == 0:
            return False
    return True


@njit(cache=True, nogil=True)
def _best_helpful(
    cands, n_cands, alive, rid, scode, s, scnt, size, bound, sp, raw, span, wn, num_act, cat, card, wc,
    cat_act, cbase, rcount, cdist, glo, ghi, gnn, dist, wlim, vlim,
):  # fmt: skip
    """Among positions ``cands[:n_cands]`` (or every position below ``n_cands`` when
    ``cands`` is empty), the alive row whose value of column s repairs the class and whose
    joining raises its information loss least (ties: SBC distance, then position), and that
    keeps the per-column limits (``wlim``, ``vlim``, see greedy_pass); -1: none."""
    best = -1
    best_key = INF
    best_d = INF
    every = cands.shape[0] == 0
    for t in range(n_cands):
        i = t if every else cands[t]
        if not alive[i]:
            continue
        if not helpful(scode[s, rid[i]], scnt, size, bound, sp):
            continue
        if not _within(i, raw, cat, cbase, rcount, cdist, glo, ghi, wlim, vlim):
            continue
        # the class's size is the same for every candidate: least S(G + r) is least increase
        key = 0.0
        for j in range(raw.shape[0]):
            if num_act[j]:
                key += wn[j] * num_ncp_with(glo[j], ghi[j], gnn[j], size + 1, span[j], raw[j, i])
        for q in range(cat.shape[0]):
            if cat_act[q]:
                dq = cdist[q]
                if rcount[cbase[q] + cat[q, i]] == 0:
                    dq += 1
                key += wc[q] * cat_ncp(dq, card[q])
        if key > best_key:
            continue
        d = dist[i]
        if key < best_key or d < best_d or (d == best_d and i < best):
            best_key = key
            best_d = d
            best = i
    return best


@njit(cache=True, nogil=True)
def _join(i, rid, scode, scnt, raw, cat, cbase, rcount, cdist, glo, ghi, gnn):
    """Row i's values into the class's counts, bounds and value sets."""
    for s in range(scode.shape[0]):
        scnt[scode[s, rid[i]]] += 1
    for j in range(raw.shape[0]):
        x = raw[j, i]
        if np.isnan(x):
            gnn[j] += 1
        else:
            glo[j] = min(glo[j], x)
            ghi[j] = max(ghi[j], x)
    for q in range(cat.shape[0]):
        slot = cbase[q] + cat[q, i]
        if rcount[slot] == 0:
            cdist[q] += 1
        rcount[slot] += 1


@njit(cache=True, nogil=True)
def repair(
    members, size, alive, rid, wset, nw, n_cur, scode, soff, sp, sord, crit_i, crit_f, scnt, raw,
    span, wn, num_act, cat, card, wc, cat_act, cbase, rcount, cdist, glo, ghi, gnn, dist, wlim, vlim,
):  # fmt: skip
    """Grow the class ``members[:size]`` (its rows already marked not alive) while it fails
    the criteria: add the row that repairs the first failing column (:func:`.criteria.helpful`)
    of least information-loss increase, among the alive rows of the wide set ``wset[:nw]``
    and, when none of those helps, among every alive row of the ``n_cur`` held. Returns the
    class's size, negative when no alive row repairs it (its rows are then left unplaced).
    ``scnt``, ``rcount`` (zeros on entry and on return) and ``cdist``, ``glo``, ``ghi``,
    ``gnn`` are scratch."""
    for j in range(raw.shape[0]):
        glo[j] = INF
        ghi[j] = -INF
        gnn[j] = 0
    for q in range(cat.shape[0]):
        cdist[q] = 0
    for t in range(size):
        _join(members[t], rid, scode, scnt, raw, cat, cbase, rcount, cdist, glo, ghi, gnn)
    every = np.empty(0, dtype=np.int64)
    failed = False
    while True:
        s = first_failing(scnt, size, soff, sp, sord, crit_i, crit_f)
        if s < 0:
            break
        bound = repair_bound(scnt, size, s, soff, sp, sord, crit_i, crit_f)
        i = _best_helpful(
            wset, nw, alive, rid, scode, s, scnt, size, bound, sp, raw, span, wn, num_act, cat, card,
            wc, cat_act, cbase, rcount, cdist, glo, ghi, gnn, dist, wlim, vlim,
        )  # fmt: skip
        if i < 0:
            i = _best_helpful(
                every, n_cur, alive, rid, scode, s, scnt, size, bound, sp, raw, span, wn, num_act, cat,
                card, wc, cat_act, cbase, rcount, cdist, glo, ghi, gnn, dist, wlim, vlim,
            )  # fmt: skip
        if i < 0:
            failed = True
            break
        alive[i] = False
        members[size] = i
        size += 1
        _join(i, rid, scode, scnt, raw, cat, cbase, rcount, cdist, glo, ghi, gnn)
    for t in range(size):
        i = members[t]
        for s in range(scode.shape[0]):
            scnt[scode[s, rid[i]]] = 0
        for q in range(cat.shape[0]):
            rcount[cbase[q] + cat[q, i]] = 0
    return -size if failed else size
