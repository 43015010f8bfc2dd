"""SBCA+ (sbc_sql.cluster.sbca_plus.algorithm): properties over small random QI tables."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import sbca_plus_flags as flags
from strategies import sbca_plus_ks as ks
from strategies import sbca_plus_tables as qi_tables

from sbc_sql.cluster.model import SUPPRESSED, QIData
from sbc_sql.cluster.ncp import total_ncp
from sbc_sql.cluster.sbca_paper import sbca
from sbc_sql.cluster.sbca_plus.algorithm import sbca_plus
from sbc_sql.cluster.sbca_plus.kernels.costs import INF
from sbc_sql.cluster.sbca_plus.kernels.grow import _gather_pool, _num_key, _pool_num_keys
from sbc_sql.cluster.sbca_plus.kernels.select import _select
from sbc_sql.cluster.sbca_plus.kernels.similarity import BUCKET_SLACK, _rank_values
from sbc_sql.cluster.similarity import Contingency

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


def check_classes(data: QIData, labels: np.ndarray, k: int) -> None:
    assert labels.shape == (data.n_rows,)
    assert labels.dtype == np.int64
    if data.n_rows < k:
        assert (labels == SUPPRESSED).all()
        return
    assert (labels >= 0).all()  # every row placed, exactly once
    sizes = np.bincount(labels)
    assert (sizes >= k).all()  # class ids 0..C-1, none empty, none below k


@SETTINGS
@given(qi_tables(), ks, flags)
def test_every_class_has_k_rows_and_every_row_one_class(data, k, opts):
    check_classes(data, sbca_plus(data, k, **opts), k)


@SETTINGS
@given(qi_tables(), ks, flags)
def test_deterministic(data, k, opts):
    first = sbca_plus(data, k, **opts)
    again = sbca_plus(data.take(np.arange(data.n_rows)), k, **opts)
    assert np.array_equal(first, again)


@SETTINGS
@given(qi_tables(), ks, st.booleans(), st.sampled_from(["class", "farthest", "first"]))
def test_refinement_never_raises_ncp(data, k, growth, seeds):
    plain = sbca_plus(data, k, growth=growth, seeds=seeds, refine=False)
    refined = sbca_plus(data, k, growth=growth, seeds=seeds, refine=True)
    check_classes(data, refined, k)
    assert total_ncp(data, refined) <= total_ncp(data, plain) + 1e-12


@SETTINGS
@given(qi_tables(), ks, st.sampled_from(["nearest", "last", "suppress"]))
def test_all_switches_off_is_the_papers_sbca(data, k, leftover):
    ours = sbca_plus(data, k, growth=False, seeds="first", refine=False, order="sort", leftover=leftover)
    assert np.array_equal(ours, sbca(data, k, leftover=leftover))


@SETTINGS
@given(qi_tables(), ks)
def test_contingency_is_decremented_like_sbca(data, k):
    mine, theirs = Contingency(data), Contingency(data)
    sbca_plus(data, k, growth=False, seeds="first", refine=False, order="sort", contingency=mine)
    sbca(data, k, contingency=theirs)
    for q in mine.order:
        assert np.array_equal(mine.counts[q], theirs.counts[q])
    for pair in mine.pairs:
        assert np.array_equal(mine.pair[pair], theirs.pair[pair])


@SETTINGS
@given(qi_tables(max_rows=80), st.integers(1, 4), flags)
def test_progress_reports_and_changes_nothing(data, k, opts):
    seen: list[tuple[int, int]] = []
    with_progress = sbca_plus(data, k, progress=lambda done, total: seen.append((done, total)), **opts)
    assert np.array_equal(with_progress, sbca_plus(data, k, **opts))
    assert seen[-1] == (data.n_rows, data.n_rows)
    done = [d for d, _ in seen]
    assert done == sorted(done)


@SETTINGS
@given(qi_tables(), ks, flags)
def test_leftover_modes(data, k, opts):
    last = sbca_plus(data, k, leftover="last", **opts)
    check_classes(data, last, k)
    suppressed = sbca_plus(data, k, leftover="suppress", **opts)
    n_sup = int((suppressed == SUPPRESSED).sum())
    if data.n_rows >= k:
        assert n_sup < k
        kept = suppressed[suppressed != SUPPRESSED]
        assert (np.bincount(kept) >= k).all()


@SETTINGS
@given(st.lists(st.integers(0, 4), min_size=1, max_size=300), st.integers(0, 40), st.integers(0, 3))
def test_select_takes_the_smallest_by_key_tie_position(keys, m, seed):
    rng = np.random.default_rng(seed)
    n = len(keys)
    key = np.array(keys, dtype=np.float64)
    tie = rng.integers(0, 3, n).astype(np.float64)
    pos = rng.permutation(n).astype(np.int64)
    ok = rng.random(n) < 0.8
    out = np.empty(n, dtype=np.int64)
    heap = np.empty(n, dtype=np.int64)
    got = _select(key, tie, pos, n, m, ok, out, heap)
    want = sorted(np.flatnonzero(ok), key=lambda i: (key[i], tie[i], pos[i]))[:m]
    assert sorted(out[:got].tolist()) == sorted(int(i) for i in want)


def test_growth_prefers_rows_the_class_already_covers():
    # seed (first row) is age 30 / A; the SBC-nearest other row differs only in age by 1,
    # but the rows with age 30 and B or A cost nothing once one of them is in
    age = np.array([30, 31, 30, 30, 50, 52, 51, 50], dtype=np.float64)
    cat = np.array([0, 0, 1, 1, 2, 2, 2, 2], dtype=np.int32)
    data = QIData(("age", "c"), (True, False), (age, cat), (30.0, np.nan), (52.0, np.nan), (0, 3), (1.0, 1.0))
    labels = sbca_plus(data, 4, refine=False)
    check_classes(data, labels, 4)
    assert total_ncp(data, labels) <= total_ncp(data, sbca(data, 4)) + 1e-12


def test_bad_options():
    data = QIData(("c",), (False,), (np.zeros(3, dtype=np.int32),), (np.nan,), (np.nan,), (1,), (1.0,))
    with pytest.raises(ValueError, match="must be at least 1"):
        sbca_plus(data, 0)
    with pytest.raises(ValueError, match="unknown seeds mode"):
        sbca_plus(data, 2, seeds="random")
    with pytest.raises(ValueError, match="unknown leftover mode"):
        sbca_plus(data, 2, leftover="drop")


def test_many_categories_use_wider_codes():
    # more than 256 categories: the kernels get uint16 codes; same answers as the paper's
    rng = np.random.default_rng(7)
    n = 400
    big = rng.integers(0, 300, n).astype(np.int32)
    small = rng.integers(0, 3, n).astype(np.int32)
    data = QIData(
        ("big", "small"),
        (False, False),
        (big, small),
        (np.nan, np.nan),
        (np.nan, np.nan),
        (300, 3),
        (1.0, 1.0),
    )
    off = sbca_plus(data, 5, growth=False, seeds="first", refine=False, order="sort")
    assert np.array_equal(off, sbca(data, 5))
    labels = sbca_plus(data, 5)
    check_classes(data, labels, 5)
    assert total_ncp(data, labels) <= total_ncp(data, off)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(3, 40),
    st.integers(0, 2**31 - 1),
    st.booleans(),
    st.floats(0.0, 0.9),
    st.sampled_from([6, 60, 5000]),
    st.booleans(),
)
def test_similarity_ranks_match_a_full_sort(c, seed, share, zeros, most, buckets):
    # _rank_values walks the values chained by count outward from the seed's count (or, for
    # counts too large for its buckets, sorts the nonzero counts and merges the zero run in
    # by code); either way the ranks must be those of a stable sort of every key, the seed
    # first, float ties between the two sides of the seed's count included
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, most, size=c).astype(np.int64)
    counts[rng.random(c) < zeros] = 0
    s = int(rng.integers(0, c))
    if c > 4 and rng.random() < 0.5:
        # values at the same distance on both sides of the seed's count
        d = int(rng.integers(1, max(2, counts[s] + 1)))
        counts[(s + 1) % c] = counts[s] + d
        counts[(s + 2) % c] = max(0, counts[s] - d)
    total = float(counts.sum())
    x = counts.astype(np.float64)
    if share:
        x = x / total if total > 0 else np.zeros(c)
    key = np.abs(x - x[s])
    key[s] = -1.0
    expected = np.empty(c)
    expected[np.argsort(key, kind="mergesort")] = np.arange(c) / (c - 1)
    tab = np.full(c + 3, -7.0)
    heads = np.empty(2 * c + BUCKET_SLACK + 1 if buckets else 0, np.int64)
    _rank_values(counts, 0, c, s, total, share, tab, 3, np.empty(c), np.empty(c, np.int64), heads)
    np.testing.assert_array_equal(tab[3:], expected)
    assert (tab[:3] == -7.0).all()


def test_more_than_eight_categorical_qis_use_several_cost_tables():
    # the growth's categorical cost is looked up by 8 bits of a row's mask at a time
    rng = np.random.default_rng(4)
    n, d = 400, 11
    cols = [rng.integers(0, 3 + q, n).astype(np.int64) for q in range(d)]
    data = QIData(
        names=tuple(f"c{q}" for q in range(d)),
        numeric=(False,) * d,
        columns=tuple(cols),
        lo=(0.0,) * d,
        hi=(0.0,) * d,
        cardinality=tuple(3 + q for q in range(d)),
        weights=(1.0,) * d,
        position=np.arange(n, dtype=np.int64),
    )
    for k in (2, 5):
        labels = sbca_plus(data, k)
        assert (np.bincount(labels) >= k).all() and (labels >= 0).all()
        np.testing.assert_array_equal(labels, sbca_plus(data, k))
        assert total_ncp(data, labels) < total_ncp(data, sbca(data, k))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 6))
def test_pool_sweep_equals_the_per_row_numeric_cost(seed, size):
    # the growth step sweeps the pool one QI at a time; the refills score rows one by one:
    # the two must give the same floats for all-NULL, mixed and numeric classes
    rng = np.random.default_rng(seed)
    n, dn = 40, 4
    wr = rng.normal(size=(n, dn))
    wr[rng.random((n, dn)) < 0.2] = np.nan
    span = np.array([1.5, 0.0, 2.0, 3.0])
    wn = np.array([1.0, 2.0, 0.5, 0.0])
    num_act = wn != 0
    gnn = rng.integers(0, size + 1, dn)
    glo = np.where(gnn < size, -rng.random(dn), INF)
    ghi = np.where(gnn < size, rng.random(dn), -INF)
    cand = rng.permutation(n)
    px = np.empty((dn, n))
    acc = np.empty(n)
    _gather_pool(cand, n, wr, px)
    _pool_num_keys(n, px, span, wn, num_act, glo, ghi, gnn, size, acc)
    want = [_num_key(t, wr, span, wn, num_act, glo, ghi, gnn, size) for t in cand]
    np.testing.assert_array_equal(acc, want)


def _growth_by_class(data: QIData, members: np.ndarray, row: int) -> float:
    """How much row's joining raises NCP of the class ``members`` (the "class" seed rule)."""
    total = 0.0
    for q in range(data.n_qis):
        w = data.weights[q]
        col = np.asarray(data.columns[q])
        if data.numeric[q]:
            if w == 0:
                continue
            span = data.span(q)
            vals = col[members]
            x = col[row]
            finite = vals[~np.isnan(vals)]
            if np.isnan(x):
                e = 0.0 if np.isnan(vals).any() else 1.0
            elif len(finite) == 0:
                e = 1.0
            elif span > 0:
                e = (max(finite.max(), x) - min(finite.min(), x) - (finite.max() - finite.min())) / span
            else:
                e = 0.0
            total += w * e
        elif w != 0 and data.cardinality[q] > 1 and col[row] not in set(col[members].tolist()):
            total += w / data.cardinality[q]
    return total


@SETTINGS
@given(qi_tables(), st.integers(1, 4))
def test_class_seeds_start_the_second_class_farthest_from_the_first(data, k):
    # growth off: a class is its seed and the seed's k - 1 SBC-nearest rows, so the second
    # class holds its seed, which must be a remaining row whose joining would raise the
    # first class's NCP most
    if data.n_rows < 2 * k:
        return
    labels = sbca_plus(data, k, growth=False, seeds="class", refine=False, leftover="suppress")
    first = np.flatnonzero(labels == 0)
    rest = np.flatnonzero(labels != 0)
    if (labels == 1).sum() == 0:
        return
    score = {int(r): _growth_by_class(data, first, int(r)) for r in rest}
    top = max(score.values())
    second = np.flatnonzero(labels == 1)
    assert any(score[int(r)] >= top - 1e-9 for r in second)
