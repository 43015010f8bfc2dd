"""The greedy pass: seeds, classes of k rows, the contingency counts decremented as rows
are clustered (an entry kernel, see :mod:`..args`)."""

from __future__ import annotations

import numpy as np
from numba import njit

from .chunks import CHUNK, build_chunks, farthest_chunked, grow_chunked
from .costs import INF
from .criteria import active
from .grow import _grow
from .repair import repair
from .select import _select
from .similarity import BUCKET_SLACK, _distances, sbc_tables


@njit(cache=True, nogil=True)
def _class_growth(sc, wn, num_act, cat, wc, cat_act, card, cbase, clo, chi, cnn, inset, n, out):
    """out[i]: how much row i's joining would raise the NCP of the class with scaled ranges
    clo/chi (clo > chi: all NULL), NULL flags cnn and values flagged in ``inset`` (numeric:
    the range's growth, 1 for a NULL the class lacks or a number against an all-NULL range;
    categorical: 1/card for a value the class lacks; weighted). The sweep whose farthest row
    :func:`.chunks.farthest_chunked` finds (tests/test_kernel_chunks.py holds them together)."""
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
        nul = 0.0 if cnn[j] else 1.0
        width = hi - lo
        for i in range(n):
            x = col[i]
            # a number's cost, replaced by a NULL's: no branch, so the loop vectorizes
            e = max(hi, x) - min(lo, x) - width
            if np.isnan(x):
                e = nul
            out[i] += w * e
    for q in range(cat.shape[0]):
        if not cat_act[q]:
            continue
        c = wc[q] / card[q]
        col = cat[q]
        base = cbase[q]
        for i in range(n):
            out[i] += 0.0 if inset[base + col[i]] else c


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
    """Form classes of k rows while at least k rows remain (until ``budget`` rows are done,
    or ``stop[0]`` is set: the run was interrupted and its labels will not be used).

    ``raw``/``sc``/``cat``/``rid``/``alive``/``dist`` hold the rows not yet clustered, in
    row order (compacted now and then, in place); ``state`` = [rows held, rows alive, next
    class id, seed position, rows the alive rows stand for]. ``labels`` is indexed by
    ``rid``. ``cnt``/``pair`` are the contingency counts of the remaining rows (decremented
    in place, as :func:`sbc_sql.cluster.sbca_paper.sbca` does).

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

    Criteria on top of k (``crit_i`` asks any, see :mod:`.criteria`; ``scode[s, r]`` is row
    id r's value of sensitive column s on the value axis): a class of k rows that fails them
    grows on, a row at a time, by :func:`.repair.repair`; one that no remaining row repairs
    leaves its rows unlabelled (they are placed, or suppressed, by ``finish``). Classes may
    then hold more than k rows. Without criteria the classes are those of k alone.

    Per-column limits (``growth`` only): ``wlim[j]`` the widest range numeric QI j may span
    in a class (INF: none), ``vlim[q]`` the most values categorical QI q may hold (at least
    its cardinality: none); a limited categorical is active. A class grows only with rows
    that keep them (and its repair too); a seed whose class no remaining row completes is
    left unlabelled alone (``finish`` places it where it fits, or suppresses it), and its
    would-be members stay for the next seeds.

    Target labels (``growth`` only): ``tgt[r]`` the label of row id r (0 .. ``n_lab`` - 1;
    empty: no target), ``tw`` what one row outside its class's majority label costs (see
    :func:`.grow._grow`); a class grows preferring rows of its majority label.

    Multiplicities (``growth`` only): ``wt[r]`` is how many rows row id r stands for (a
    distinct QI tuple and its count; all 1 when every row stands for itself). A class is
    complete once its rows' multiplicities add up to k, and the pass runs while the rows
    alive stand for k rows or more (``state[4]``); the contingency counts are counts of the
    rows stood for. The privacy criteria count rows as they are (all 1).
    Returns the number of rows taken by this call.
    """
    dn = raw.shape[0]
    dc = cat.shape[0]
    n_cur = state[0]
    n_alive = state[1]
    w_alive = state[4]
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
    vlim_a = np.empty(n_act, dtype=np.int64)
    for a in range(n_act):
        vlim_a[a] = vlim[aq[a]]
    gdv = np.zeros(n_act, dtype=np.int64)
    lcnt = np.zeros(max(n_lab, 1), dtype=np.int64)
    wl = np.zeros(nmax if tgt.shape[0] > 0 else 0, dtype=np.int32)
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
    act = active(crit_i)
    cap = nmax if act else k  # a class keeping criteria may grow to every row
    members = np.empty(cap, dtype=np.int64)
    scnt = np.zeros(sp.shape[0], dtype=np.int64)  # the class's sensitive value counts
    rcount = np.zeros(cbase[dc] if act else 0, dtype=np.int64)  # ... and its QI value counts
    cdist = np.zeros(dc, dtype=np.int64)
    rlo = np.empty(dn)
    rhi = np.empty(dn)
    rnn = np.zeros(dn, dtype=np.int64)
    nw = 0
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
    rank_heads = np.empty(2 * top + BUCKET_SLACK + 1, dtype=np.int64)
    glo = np.empty(dn)
    ghi = np.empty(dn)
    gnn = np.zeros(dn, dtype=np.int64)
    clo = np.empty(sc.shape[0])
    chi = np.empty(sc.shape[0])
    cnn = np.zeros(sc.shape[0], dtype=np.int64)
    inset = np.zeros(cbase[dc], dtype=np.bool_)
    mslot = np.empty((cap, dc), dtype=np.int64)
    # the chunks' bounds (see .chunks), for the growth from every remaining row and the
    # next seed
    nch_max = (nmax + CHUNK - 1) // CHUNK
    blo = np.empty((nch_max, dn))
    bhi = np.empty((nch_max, dn))
    slo = np.empty((nch_max, dn))
    shi = np.empty((nch_max, dn))
    bnan = np.zeros((nch_max, dn), dtype=np.bool_)
    bnum = np.zeros((nch_max, dn), dtype=np.bool_)
    cset = np.zeros((nch_max, dc), dtype=np.int64)
    cone = np.zeros((nch_max, dc), dtype=np.int64)
    cn = np.zeros(nch_max, dtype=np.int64)
    bound = np.empty(nch_max)
    boundc = np.empty(nch_max)
    hs = np.zeros(n_act, dtype=np.int64)
    nch = build_chunks(raw, sc, cat, alive, n_cur, blo, bhi, slo, shi, bnan, bnum, cset, cone, cn)
    # the growth takes every remaining row in chunks when its pool would hold them all and
    # nothing else (limits, a target, criteria, more than 8 active categoricals, the next
    # seed by SBC's distance from this one) reads SBC's distances
    limited = False
    for j in range(dn):
        if wlim[j] < INF:
            limited = True
    for a in range(n_act):
        if vlim_a[a] < card[aq[a]]:
            limited = True
    chunked = growth and seed_rule != 1 and not act and not limited and not (tgt.shape[0] > 0 and tw > 0)
    chunked = chunked and n_tab == 1
    done = 0
    while w_alive >= k and done < budget and not stop[0]:
        alive[seed] = False
        members[0] = seed
        got = k
        every = chunked and min(pool, n_alive - 1) == n_alive - 1
        if not every:
            for q in range(dc):
                seed_codes[q] = cat[q, seed]
            sbc_tables(
                seed_codes, card, pred, cnt, cnt_off, pair, pair_off, k, cat_act, tab, cbase,
                rank_keys, rank_vals, rank_heads,
            )  # fmt: skip
            _distances(seed, sc, wn, num_act, cat, wc, cat_act, tab, cbase, n_cur, dist)
        if every:
            got = grow_chunked(
                seed, k, nch, raw, sc, cat, alive, rid, wt, span, wn, num_act, card, wc, cat_act, aq, cbase,
                ccount, dlt, tabm, glo, ghi, gnn, hs, members, blo, bhi, bnan, bnum, cset, cn, bound, boundc,
                gdv, seed_codes, pred, cnt, cnt_off, pair, pair_off, tab, rank_keys, rank_vals, rank_heads,
            )  # fmt: skip
        elif not growth:
            _select(dist, dist, ident, n_cur, k - 1, alive, cand, tpos)
            for t in range(k - 1):
                members[t + 1] = cand[t]
        else:
            m = min(pool, n_alive - 1)
            # the pool is refilled at class sizes 2, 4, ... below k: no need of more rows else
            nw = _select(dist, dist, ident, n_cur, max(wide, m) if k > 2 else m, alive, wset, tpos)
            for t in range(nw):
                wtie[t] = dist[wset[t]]
            got = _grow(
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
                wlim,
                vlim_a,
                gdv,
                tgt,
                tw,
                lcnt,
                wl,
                wt,
            )
        size = got
        placed = True
        if got < 0:
            # the seed alone leaves the pass; the rows its class held stay for other seeds
            size = 1
            placed = False
        elif act:
            for t in range(size):
                alive[members[t]] = False
            size = repair(
                members, size, alive, rid, wset, nw, n_cur, scode, soff, sp, sord, crit_i, crit_f, scnt,
                raw, span, wn, num_act, cat, card, wc, cat_act, cbase, rcount, cdist, rlo, rhi, rnn, dist,
                wlim, vlim,
            )  # fmt: skip
            if size < 0:
                size = -size
                placed = False
        # the class: label it, take it out of the contingency counts
        taken = 0
        for t in range(size):
            i = members[t]
            alive[i] = False
            w = wt[rid[i]]
            taken += w
            if placed:
                labels[rid[i]] = cls
            for q in range(dc):
                cnt[cnt_off[q] + cat[q, i]] -= w
                mq = pred[q]
                if mq >= 0:
                    pair[pair_off[q] + cat[mq, i] * card[q] + cat[q, i]] -= w
        if seed_rule == 2:
            # the class's ranges (scaled) and values, for the next seed
            for j in range(sc.shape[0]):
                clo[j] = INF
                chi[j] = -INF
                cnn[j] = 0
            for t in range(size):
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
        if placed:
            cls += 1
        done += size
        n_alive -= size
        w_alive -= taken
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
            nch = build_chunks(raw, sc, cat, alive, n_cur, blo, bhi, slo, shi, bnan, bnum, cset, cone, cn)
        seed = -1
        if seed_rule == 2:
            # the remaining row farthest from the class (ties: the first)
            seed = farthest_chunked(
                nch, sc, wn, num_act, cat, wc, cat_act, card, cbase, clo, chi, cnn, inset, alive,
                slo, shi, bnan, bnum, cone, cn, bound,
            )  # fmt: skip
            for t in range(size):
                for q in range(dc):
                    inset[mslot[t, q]] = False
        elif seed_rule == 1:
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
    state[4] = w_alive
    state[3] = seed
    return done
