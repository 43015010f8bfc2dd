"""SBCA+'s pairs of classes split anew (sbc_sql.cluster.sbca_plus.kernels.resplit): sizes,
limits and criteria kept, total NCP never raised, and lowered where single moves and swaps
stop."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import sbca_plus_tables as qi_tables
from test_sbca_criteria import RULES, tables

from sbc_sql.cluster.limits import Limits
from sbc_sql.cluster.model import SUPPRESSED, QIData
from sbc_sql.cluster.ncp import total_ncp
from sbc_sql.cluster.sbca_plus.algorithm import (
    RESPLIT_MIN_K,
    ROUNDS,
    _kernel_arrays,
    resplit_rounds,
    sbca_plus,
)
from sbc_sql.cluster.sbca_plus.kernels.classes import Table
from sbc_sql.cluster.sbca_plus.kernels.resplit import _best_cut, _cost, _open_scratch

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


def _weighted_sizes(data: QIData, labels: np.ndarray) -> np.ndarray:
    kept = labels >= 0
    return np.bincount(labels[kept], weights=data.weights_of_rows()[kept])[np.unique(labels[kept])]


@SETTINGS
@given(qi_tables(max_rows=60), st.integers(1, 6))
def test_splitting_anew_keeps_k_and_never_raises_ncp(data: QIData, k: int) -> None:
    plain = sbca_plus(data, k, rounds=0)
    split = sbca_plus(data, k, rounds=ROUNDS)
    if data.n_rows < k:
        assert (split == SUPPRESSED).all()
        return
    assert (split >= 0).all()
    assert _weighted_sizes(data, split).min() >= k
    assert total_ncp(data, split) <= total_ncp(data, plain) + 1e-12


@SETTINGS
@given(qi_tables(max_rows=60), st.integers(2, 6), st.integers(0, 2**32 - 1))
def test_tuples_standing_for_several_rows_keep_k(data: QIData, k: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    weighted = QIData(
        data.names,
        data.numeric,
        data.columns,
        data.lo,
        data.hi,
        data.cardinality,
        data.weights,
        multiplicity=rng.integers(1, 4, data.n_rows).astype(np.int64),
    )
    plain = sbca_plus(weighted, k, rounds=0)
    split = sbca_plus(weighted, k, rounds=ROUNDS)
    assert ((plain >= 0) == (split >= 0)).all()
    if (split >= 0).any():
        assert _weighted_sizes(weighted, split).min() >= k
    assert total_ncp(weighted, split) <= total_ncp(weighted, plain) + 1e-12


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=tables(), k=st.integers(2, 6), rule=st.sampled_from(RULES))
def test_splitting_anew_keeps_the_criteria(data: QIData, k: int, rule) -> None:
    assert data.sensitive is not None
    if rule.check_feasible(data.sensitive) or any(len(c) < rule.min_size for c in data.sensitive.counts):
        return
    plain = sbca_plus(data, k, rule=rule, rounds=0)
    split = sbca_plus(data, k, rule=rule, rounds=ROUNDS)
    used = np.unique(split[split >= 0])
    assert rule.classes_ok(split, data.sensitive)[used].all()
    assert np.bincount(split[split >= 0])[used].min() >= k
    assert ((plain < 0) == (split < 0)).all()  # the same rows, split otherwise
    assert total_ncp(data, split) <= total_ncp(data, plain) + 1e-12


def _population(n: int, seed: int) -> QIData:
    """Ages and three categoricals of 5 to 12 values, loosely tied to age."""
    rng = np.random.default_rng(seed)
    age = rng.integers(17, 91, n).astype(np.float64)
    cols: list[np.ndarray] = [age]
    cards = [0]
    for c in (5, 9, 12):
        base = ((age - 17) / 74 * (c - 1)).astype(np.int32)
        cols.append(np.clip(base + rng.integers(-2, 3, n), 0, c - 1).astype(np.int32))
        cards.append(c)
    return QIData(
        ("age", "a", "b", "c"),
        (True, False, False, False),
        tuple(cols),
        (17.0, math.nan, math.nan, math.nan),
        (90.0, math.nan, math.nan, math.nan),
        tuple(cards),
        (1.0,) * 4,
    )


def test_splitting_anew_lowers_ncp_where_moves_and_swaps_stop() -> None:
    """On 2,000 rows at k = 25 the refinement's moves and swaps stop above what pairs of
    classes split anew reach: the pass is what lowers the loss here."""
    data = _population(2000, 5)
    plain = total_ncp(data, sbca_plus(data, 25, rounds=0))
    split = total_ncp(data, sbca_plus(data, 25))
    assert split < plain * 0.98


def test_it_runs_from_resplit_min_k_up_by_default() -> None:
    assert resplit_rounds(RESPLIT_MIN_K - 1) == 0
    assert resplit_rounds(RESPLIT_MIN_K) == ROUNDS
    data = _population(400, 2)
    k = RESPLIT_MIN_K - 1
    assert np.array_equal(sbca_plus(data, k), sbca_plus(data, k, rounds=0))


def test_splitting_anew_keeps_the_per_column_limits() -> None:
    data = _population(1500, 9)
    limits = Limits({"age": 20.0}, {"b": 4})
    plain = sbca_plus(data, 25, limits=limits, rounds=0)
    split = sbca_plus(data, 25, limits=limits)
    kept = split >= 0
    assert ((plain >= 0) == kept).all()
    for c in np.unique(split[kept]):
        rows = split == c
        assert np.ptp(data.columns[0][rows]) <= 20.0
        assert len(np.unique(data.columns[2][rows])) <= 4
    assert total_ncp(data, split) <= total_ncp(data, plain) + 1e-12


@settings(max_examples=40, deadline=None)
@given(qi_tables(max_rows=30), st.integers(1, 5), st.integers(0, 2**32 - 1))
def test_the_best_cut_is_the_cheapest_of_every_cut(data: QIData, k: int, seed: int) -> None:
    """The two sweeps price each cut as the two sides' costs computed one by one."""
    n = data.n_rows
    order = np.arange(n, dtype=np.int64)
    arr = _kernel_arrays(data, None, order)
    card = arr["card"]
    wt = np.random.default_rng(seed).integers(1, 3, n).astype(np.int64)
    tab = Table(
        arr["raw"], arr["span"], arr["wn"], arr["num_act"], arr["cat"].astype(np.int32), card,
        arr["wc"], arr["cat_act"], arr["qkind"], arr["qidx"], arr["wlim"], arr["vlim"], wt,
        int(max(card.max(), 1)),
    )  # fmt: skip
    sc = _open_scratch(tab, 1)
    sc.cand[:n] = np.random.default_rng(seed).permutation(n)
    w_all = int(wt.sum())
    cost, at = _best_cut(tab, sc, n, w_all, k)
    rows = sc.cand[:n].copy()
    want = math.inf
    for c in range(1, n):
        if wt[rows[:c]].sum() >= k and wt[rows[c:]].sum() >= k:
            want = min(want, _cost(tab, sc, rows, 0, c) + _cost(tab, sc, rows, c, n))
    if want == math.inf:
        assert at == -1 and cost == math.inf
    else:
        assert math.isclose(cost, want, rel_tol=1e-12, abs_tol=1e-12)
        assert math.isclose(cost, _cost(tab, sc, rows, 0, at) + _cost(tab, sc, rows, at, n), abs_tol=1e-12)
