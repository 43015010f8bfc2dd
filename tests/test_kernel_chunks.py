"""The greedy pass's chunked searches (sbc_sql.cluster.sbca_plus.kernels.chunks) against the
sweeps of every row they replace: the same rows, ties included."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sbc_sql.cluster.model import QIData
from sbc_sql.cluster.sbca_plus.algorithm import _kernel_arrays
from sbc_sql.cluster.sbca_plus.kernels.chunks import CHUNK, build_chunks, farthest_chunked, grow_chunked
from sbc_sql.cluster.sbca_plus.kernels.costs import INF
from sbc_sql.cluster.sbca_plus.kernels.greedy import _class_growth
from sbc_sql.cluster.sbca_plus.kernels.grow import _grow
from sbc_sql.cluster.sbca_plus.kernels.similarity import BUCKET_SLACK, _distances, sbc_tables
from sbc_sql.cluster.similarity import Contingency

SETTINGS = settings(max_examples=80, deadline=None)


def block(seed: int, n: int) -> QIData:
    """A block of n rows: 3 numerics of few values (ties) with NULLs, one constant, and 5
    categoricals, one of more than 64 values (the chunks' value bits wrap)."""
    rng = np.random.default_rng(seed)
    names, numeric, columns, lo, hi, card, weights = [], [], [], [], [], [], []
    for q, top in enumerate((6, 40, 3, 0)):
        col = rng.integers(0, top + 1, n).astype(np.float64)
        col[rng.random(n) < (0.1 if q != 1 else 0.0)] = np.nan
        names.append(f"n{q}")
        numeric.append(True)
        columns.append(col)
        finite = col[~np.isnan(col)]
        lo.append(float(finite.min()) if len(finite) else np.nan)
        hi.append(float(finite.max()) if len(finite) else np.nan)
        card.append(0)
        weights.append((1.0, 2.0, 0.5, 1.0)[q])
    for q, c in enumerate((2, 3, 7, 90, 5)):
        # sorted in part, as the coarse order sorts a block: chunks of one value and of several
        col = rng.integers(0, c, n)
        if q < 2:
            col = np.sort(col)
        names.append(f"c{q}")
        numeric.append(False)
        columns.append(col.astype(np.int32))
        lo.append(np.nan)
        hi.append(np.nan)
        card.append(c)
        weights.append((1.0, 0.5, 1.0, 1.0, 0.0)[q])
    return QIData(
        tuple(names), tuple(numeric), tuple(columns), tuple(lo), tuple(hi), tuple(card), tuple(weights)
    )


def chunk_arrays(arr: dict, alive: np.ndarray) -> dict:
    n = len(alive)
    nch = (n + CHUNK - 1) // CHUNK
    dn, dc = arr["raw"].shape[0], arr["cat"].shape[0]
    out = {
        "blo": np.empty((nch, dn)),
        "bhi": np.empty((nch, dn)),
        "slo": np.empty((nch, dn)),
        "shi": np.empty((nch, dn)),
        "bnan": np.zeros((nch, dn), dtype=np.bool_),
        "bnum": np.zeros((nch, dn), dtype=np.bool_),
        "cset": np.zeros((nch, dc), dtype=np.int64),
        "cone": np.zeros((nch, dc), dtype=np.int64),
        "cn": np.zeros(nch, dtype=np.int64),
    }
    names = ("blo", "bhi", "slo", "shi", "bnan", "bnum", "cset", "cone", "cn")
    out["nch"] = build_chunks(arr["raw"], arr["sc"], arr["cat"], alive, n, *(out[x] for x in names))
    return out


def setup(seed: int, n: int, dead: float):
    """A block's kernel arrays, its rows alive, its chunks (built before some rows left)."""
    data = block(seed, n)
    order = np.arange(n, dtype=np.int64)
    arr = dict(_kernel_arrays(data, Contingency(data), order))
    rng = np.random.default_rng(seed + 1)
    alive = np.ones(n, dtype=np.bool_)
    chunks = chunk_arrays(arr, alive)
    # rows that left after the chunks were built: their bounds still count them
    alive &= rng.random(n) >= dead
    return arr, alive, chunks, rng


@SETTINGS
@given(st.integers(0, 2**31 - 1), st.integers(2, 120), st.integers(2, 9), st.sampled_from([0.0, 0.3]))
def test_chunked_growth_adds_the_rows_of_the_sweep(seed, n, k, dead):
    arr, alive, ch, rng = setup(seed, n, dead)
    live = np.flatnonzero(alive)
    if len(live) < 2:
        return
    s = int(rng.choice(live))
    raw, sc, cat, card, cat_act, wc, wn = (
        arr[x] for x in ("raw", "sc", "cat", "card", "cat_act", "wc", "wn")
    )
    num_act, span = arr["num_act"], arr["span"]
    dn, dc = raw.shape[0], cat.shape[0]
    cbase = np.concatenate([[0], np.cumsum(card)]).astype(np.int64)
    aq = np.flatnonzero(cat_act).astype(np.int64)
    na = len(aq)
    wt = rng.integers(1, 3, n).astype(np.int64) if rng.random() < 0.3 else np.ones(n, dtype=np.int64)
    rid = np.arange(n, dtype=np.int64)
    top = int(card.max())
    scratch = (
        np.empty(top),
        np.empty(top, dtype=np.int64),
        np.empty(2 * top + BUCKET_SLACK + 1, dtype=np.int64),
    )
    sel = (arr["pred"], arr["cnt"], arr["cnt_off"], arr["pair"], arr["pair_off"])
    codes = cat[:, s].astype(np.int64)

    # the sweep: SBC's distances of every row, the whole wide set as the pool
    tab = np.zeros(cbase[-1])
    sbc_tables(codes, card, sel[0], *sel[1:], k, cat_act, tab, cbase, *scratch)
    dist = np.zeros(n)
    _distances(s, sc, wn, num_act, cat, wc, cat_act, tab, cbase, n, dist)
    pool = alive.copy()
    pool[s] = False
    wset = np.flatnonzero(pool).astype(np.int64)
    nw = len(wset)
    rowraw = np.ascontiguousarray(raw.T)
    rowslot = np.array([[cbase[q] + cat[q, i] for q in aq] for i in range(n)], dtype=np.int64).reshape(n, na)
    want = np.empty(n, dtype=np.int64)
    got = _grow(
        s, k, nw, nw, wset, dist[wset].copy(), rid, rowraw, rowslot, span, wn, num_act, card, wc, aq,
        np.empty((n, dn)), np.empty((n, na), dtype=np.int64), np.zeros(n, dtype=np.bool_), np.empty(n),
        np.zeros(cbase[-1], dtype=np.int64), np.empty(na), np.empty(dn), np.empty(dn),
        np.zeros(dn, dtype=np.int64),
        np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64), want, np.empty((dn, n)), np.empty(n),
        np.zeros(n, dtype=np.int64), np.zeros((1, 256)), np.empty((na, n), dtype=np.int64),
        np.full(dn, INF), np.full(na, 1 << 30, dtype=np.int64), np.zeros(na, dtype=np.int64),
        np.zeros(0, dtype=np.int32), 0.0, np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int32), wt,
    )  # fmt: skip

    # the chunks: no distance until a tie
    members = np.empty(n, dtype=np.int64)
    ccount = np.zeros(cbase[-1], dtype=np.int64)
    left = pool.copy()
    held = grow_chunked(
        s, k, ch["nch"], raw, sc, cat, left, rid, wt, span, wn, num_act, card, wc, cat_act, aq, cbase,
        ccount, np.empty(na), np.zeros((1, 256)), np.empty(dn), np.empty(dn), np.zeros(dn, dtype=np.int64),
        np.zeros(na, dtype=np.int64), members, ch["blo"], ch["bhi"], ch["bnan"], ch["bnum"], ch["cset"],
        ch["cn"],
        np.empty(ch["nch"]), np.empty(ch["nch"]), np.zeros(na, dtype=np.int64), np.empty(dc, dtype=np.int64),
        *sel, np.zeros(cbase[-1]), *scratch,
    )  # fmt: skip
    assert held == got
    np.testing.assert_array_equal(members[: abs(held)], want[: abs(got)])
    assert not ccount.any()  # left clear for the next class
    taken = np.zeros(n, dtype=np.bool_)
    taken[members[1 : abs(held)]] = True
    np.testing.assert_array_equal(left, pool & ~taken)


@SETTINGS
@given(st.integers(0, 2**31 - 1), st.integers(1, 120), st.integers(1, 9), st.sampled_from([0.0, 0.3]))
def test_chunked_seed_is_the_farthest_row_of_the_sweep(seed, n, size, dead):
    arr, alive, ch, rng = setup(seed, n, dead)
    sc, cat, card, cat_act, wc, wn = (arr[x] for x in ("sc", "cat", "card", "cat_act", "wc", "wn"))
    num_act = arr["num_act"]
    cbase = np.concatenate([[0], np.cumsum(card)]).astype(np.int64)
    members = rng.choice(n, min(size, n), replace=False)
    dn = sc.shape[0]
    clo, chi, cnn = np.full(dn, INF), np.full(dn, -INF), np.zeros(dn, dtype=np.int64)
    inset = np.zeros(cbase[-1], dtype=np.bool_)
    for i in members:
        for j in range(dn):
            if np.isnan(sc[j, i]):
                cnn[j] = 1
            else:
                clo[j] = min(clo[j], sc[j, i])
                chi[j] = max(chi[j], sc[j, i])
        inset[cbase[:-1] + cat[:, i]] = True
    out = np.zeros(n)
    _class_growth(sc, wn, num_act, cat, wc, cat_act, card, cbase, clo, chi, cnn, inset, n, out)
    want = -1
    for i in range(n):
        if alive[i] and (want < 0 or out[i] > out[want]):
            want = i
    got = farthest_chunked(
        ch["nch"], sc, wn, num_act, cat, wc, cat_act, card, cbase, clo, chi, cnn, inset, alive,
        ch["slo"], ch["shi"], ch["bnan"], ch["bnum"], ch["cone"], ch["cn"], np.empty(ch["nch"]),
    )  # fmt: skip
    assert got == want
