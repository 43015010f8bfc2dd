"""SBCA+ with every switch off gives the paper's labels (the numpy reference, sbca_paper.sbca);
block mode is complete and k-anonymous."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import data_from_arrays as make_data
from strategies import kernel_tables as qi_tables

from sbc_sql.cluster import blocks
from sbc_sql.cluster.leftover import LEFTOVER_MODES
from sbc_sql.cluster.model import SUPPRESSED, QIData
from sbc_sql.cluster.sbca_paper import sbca
from sbc_sql.cluster.sbca_plus import compiled
from sbc_sql.cluster.sbca_plus.algorithm import PAPER, sbca_plus
from sbc_sql.cluster.sbca_plus.args import call_args
from sbc_sql.cluster.similarity import Contingency

SETTINGS = settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


def synthetic(n: int, seed: int = 0) -> QIData:
    """Correlated numerics with NULLs and skewed categoricals, enough rows for many blocks."""
    rng = np.random.default_rng(seed)
    age = np.round(rng.normal(45, 15, n))
    age[rng.random(n) < 0.02] = np.nan
    income = np.round(age * 900 + rng.normal(0, 9000, n), -2)
    cats = []
    for card in (2, 6, 40):
        p = 1.0 / np.arange(1, card + 1) ** 1.1
        cats.append((rng.choice(card, n, p=p / p.sum()), card))
    return make_data([age, income], cats)


def paper(data: QIData, k: int, leftover: str = "nearest", **options) -> np.ndarray:
    """The paper's SBCA as sbc-sql runs it: SBCA+ with every switch off."""
    return sbca_plus(data, k, leftover=leftover, **PAPER, **options)


def assert_k_anonymous(labels: np.ndarray, n: int, k: int) -> None:
    assert labels.shape == (n,)
    assert (labels != SUPPRESSED).all()
    sizes = np.bincount(labels)
    assert (sizes[sizes > 0] >= k).all()


# ---------------------------------------------------------------------------------------
# SBCA+ with every switch off == the paper's reference
# ---------------------------------------------------------------------------------------


@SETTINGS
@given(data=qi_tables(), k=st.integers(2, 8))
def test_compiled_equals_reference(data: QIData, k: int) -> None:
    for mode in LEFTOVER_MODES:
        expected = sbca(data, k, mode)
        got = paper(data, k, mode)
        np.testing.assert_array_equal(got, expected, err_msg=f"leftover={mode}")


@settings(max_examples=20, deadline=None)
@given(data=qi_tables(max_rows=120), k=st.integers(1, 6))
def test_progress_and_contingency_paths_match(data: QIData, k: int) -> None:
    calls: list[tuple[int, int]] = []
    mine, theirs = Contingency(data), Contingency(data)
    expected = sbca(data, k, contingency=theirs)
    got = paper(data, k, contingency=mine, progress=lambda d, t: calls.append((d, t)))
    np.testing.assert_array_equal(got, expected)
    assert calls[-1] == (data.n_rows, data.n_rows)
    for q in mine.order:
        np.testing.assert_array_equal(mine.counts[q], theirs.counts[q])


@pytest.mark.slow
def test_large_domains_and_wide_predecessor_rows() -> None:
    """Declared domains far larger than the rows present."""
    rng = np.random.default_rng(7)
    n = 400
    cats = [
        (rng.integers(0, 3, n), 3),
        (rng.integers(0, 50, n) * 97, 5000),
        (rng.integers(0, 200, n) * 301, 70000),
    ]
    data = make_data([rng.normal(size=n)], cats)
    for k in (2, 5, 30):
        np.testing.assert_array_equal(paper(data, k), sbca(data, k))


def test_edge_cases() -> None:
    data = make_data([np.array([1.0, 2.0, 3.0])], [])
    np.testing.assert_array_equal(paper(data, 5), sbca(data, 5))
    assert len(paper(data.take(np.arange(0)), 3)) == 0
    with pytest.raises(ValueError, match="must be at least 1"):
        paper(data, 0)
    with pytest.raises(ValueError, match="unknown leftover mode"):
        paper(data, 2, "bogus")


# ---------------------------------------------------------------------------------------
# block mode
# ---------------------------------------------------------------------------------------


@SETTINGS
@given(data=qi_tables(), k=st.integers(2, 8), block_size=st.integers(1, 120))
def test_blocks_partition_the_rows(data: QIData, k: int, block_size: int) -> None:
    parts = blocks.make_blocks(data, k, block_size)
    rows = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    np.testing.assert_array_equal(np.sort(rows), np.arange(data.n_rows))
    if data.n_rows >= k:
        assert all(len(p) >= k for p in parts)
        assert all(len(p) <= max(block_size, 2 * k - 1) for p in parts)
    labels = blocks.blocked(data, k, paper, block_size=block_size, workers=1)
    if data.n_rows >= k:
        assert_k_anonymous(labels, data.n_rows, k)


@SETTINGS
@given(data=qi_tables(), k=st.integers(2, 8))
def test_one_block_is_the_exact_algorithm(data: QIData, k: int) -> None:
    labels = blocks.blocked(data, k, paper, block_size=data.n_rows)
    np.testing.assert_array_equal(labels, sbca(data, k))


def test_compiled_blocks_equal_reference_blocks() -> None:
    """SBCA+ with every switch off gives, block by block, what sbca(data.take(rows), k) gives."""
    data = synthetic(3000, seed=3)
    for mode in LEFTOVER_MODES:
        fast = blocks.blocked(data, 7, functools.partial(paper, leftover=mode), block_size=500)
        slow = blocks.blocked(data, 7, functools.partial(sbca, leftover=mode), block_size=500)
        np.testing.assert_array_equal(fast, slow)


def test_workers_do_not_change_labels() -> None:
    data = synthetic(20000, seed=5)
    seen: list[tuple[int, int]] = []
    one = blocks.blocked(data, 10, paper, block_size=1024, workers=1)
    two = blocks.blocked(
        data, 10, paper, block_size=1024, workers=2, progress=lambda d, t: seen.append((d, t))
    )
    np.testing.assert_array_equal(one, two)
    assert_k_anonymous(one, data.n_rows, 10)
    assert seen[-1][0] == seen[-1][1] == len(seen)


# ---------------------------------------------------------------------------------------
# the cluster-aware SBCA's row order
# ---------------------------------------------------------------------------------------


def _coarse_and_fine(data: QIData) -> tuple[list[int], list[int]]:
    cats = data.categorical_order()
    return (
        [q for q in cats if data.cardinality[q] <= blocks.COARSE_CARDINALITY],
        [q for q in cats if data.cardinality[q] > blocks.COARSE_CARDINALITY],
    )


@SETTINGS
@given(data=qi_tables())
def test_coarse_order_leads_with_the_coarse_categoricals(data: QIData) -> None:
    order = blocks.coarse_order(data)
    np.testing.assert_array_equal(np.sort(order), np.arange(data.n_rows))
    coarse, _ = _coarse_and_fine(data)
    nums = [q for q in range(data.n_qis) if data.numeric[q] and data.weights[q] != 0 and data.span(q) > 0]
    lead = [data.columns[q][order].astype(np.int64) for q in coarse]
    for i in range(1, data.n_rows):
        before = tuple(int(c[i - 1]) for c in lead)
        after = tuple(int(c[i]) for c in lead)
        assert before <= after
        if before == after and len(nums) == 1:
            # one numeric: by its value within equal coarse values, NULLs last
            x = data.columns[nums[0]][order]
            assert np.isnan(x[i]) or x[i - 1] <= x[i]


def test_coarse_order_puts_numerics_before_fine_categoricals() -> None:
    rng = np.random.default_rng(4)
    n = 500
    age = rng.integers(18, 90, n).astype(np.float64)
    sex = rng.integers(0, 2, n)
    zip_ = rng.integers(0, 300, n)
    data = make_data([age], [(sex, 2), (zip_, 300)])
    order = blocks.coarse_order(data)
    np.testing.assert_array_equal(order, np.lexsort((data.position, zip_, age, sex)))
    # the paper's sort order has every categorical first (ascending cardinality), then the numerics
    np.testing.assert_array_equal(data.sort_order(), np.lexsort((data.position, age, zip_, sex)))
    # several numerics: along the curve, which keeps them together, not one after the other
    income = age * 1000 + rng.normal(0, 5000, n)
    two = make_data([age, income], [(sex, 2)])
    keys = blocks.curve_keys(two, [0, 1], [])
    np.testing.assert_array_equal(blocks.coarse_order(two), np.lexsort((two.position, keys, sex)))


@settings(max_examples=80, deadline=None)
@given(
    n=st.integers(1, 400),
    levels=st.lists(st.sampled_from([1, 2, 5, 50, 10**6]), min_size=1, max_size=4),
    seed=st.integers(0, 2**32 - 1),
)
def test_lexsort_is_numpys(n: int, levels: list[int], seed: int) -> None:
    # few or many ties on the primary key: both paths
    rng = np.random.default_rng(seed)
    keys = [rng.integers(0, v, n) for v in levels]
    keys[-1] = keys[-1].astype(np.uint64)
    np.testing.assert_array_equal(blocks.lexsort(keys), np.lexsort(keys))


def test_lexsort_ties_nulls_of_a_float_primary_key() -> None:
    # a numeric QI with NULLs is the primary key when it is the only numeric: its NaN rows
    # tie (np.lexsort's order), so they are ordered by the other keys and by position
    rng = np.random.default_rng(3)
    primary = rng.random(3000)
    primary[rng.random(3000) < 0.2] = np.nan
    keys = [rng.permutation(3000), rng.integers(0, 30, 3000), primary]
    np.testing.assert_array_equal(blocks.lexsort(keys), np.lexsort(keys))
    np.testing.assert_array_equal(
        blocks.lexsort([np.arange(5)[::-1], np.array([np.nan, 0, np.nan, 1, np.nan])]), [1, 3, 4, 2, 0]
    )


@pytest.mark.parametrize(("n_num", "n_coarse"), [(2, 1), (2, 3), (4, 2), (3, 15), (1, 16)])
def test_coarse_order_whatever_its_keys_pack_into(n_num: int, n_coarse: int) -> None:
    # the coarse codes join the curve key when its bits leave room (2 numerics: 32 bits
    # used), stay apart when not (4 numerics: 64), and 15 or 16 categoricals of 20 values
    # overflow one mixed-radix key: the order is the same lexicographic one every time
    rng = np.random.default_rng(n_num * 100 + n_coarse)
    n = 3000
    nums = [rng.integers(0, 40, n).astype(np.float64) for _ in range(n_num)]
    cats = [(rng.integers(0, 20, n), 20) for _ in range(n_coarse)] + [(rng.integers(0, 90, n), 90)]
    data = make_data(nums, cats, position=rng.permutation(n))
    coarse = [np.asarray(data.columns[n_num + c]) for c in range(n_coarse)]
    fine = np.asarray(data.columns[-1])
    if n_num > 1:
        numeric = [blocks.curve_keys(data, list(range(n_num)), [])]
    else:
        numeric = [np.asarray(data.columns[0])]
    want = np.lexsort([data.position, fine] + numeric + coarse[::-1])
    np.testing.assert_array_equal(blocks.coarse_order(data), want)


def test_no_numerics_coarse_order_is_the_sort_order() -> None:
    rng = np.random.default_rng(2)
    data = make_data([], [(rng.integers(0, 300, 400), 300), (rng.integers(0, 3, 400), 3)])
    np.testing.assert_array_equal(blocks.coarse_order(data), data.sort_order())


@SETTINGS
@given(data=qi_tables(), seed=st.integers(0, 2**32 - 1))
def test_a_blocks_order_read_from_the_rank_is_its_own(data: QIData, seed: int) -> None:
    # the rank is a cache: rows taken from a ranked table are ordered as if recomputed
    ranked = blocks.with_coarse_rank(data, blocks.coarse_order(data))
    rows = np.sort(np.random.default_rng(seed).permutation(data.n_rows)[: data.n_rows // 2 + 1])
    assert ranked.take(rows).coarse_rank is not None
    np.testing.assert_array_equal(
        blocks.coarse_order(ranked.take(rows)), blocks.coarse_order(data.take(rows))
    )


def test_coarse_blocks_equal_blocks_that_order_themselves() -> None:
    from sbc_sql.cluster.sbca_plus.algorithm import sbca_plus

    data = synthetic(6000, seed=8)
    k, size = 6, 1000
    got = blocks.blocked(data, k, sbca_plus, block_size=size, categorical_by="coarse")
    order = blocks.coarse_order(data)
    bounds = blocks.block_bounds(data.n_rows, k, size)
    parts = [np.sort(order[a:b]) for a, b in itertools.pairwise(bounds)]
    want = blocks._merge(data.n_rows, parts, [sbca_plus(data.take(rows), k) for rows in parts])
    np.testing.assert_array_equal(got, want)
    assert_k_anonymous(got, data.n_rows, k)


def test_choose_mode_and_memory() -> None:
    assert blocks.choose_mode(30_162, 10) == "exact"
    assert blocks.choose_mode(1_000_000, 10) == "blocks"
    assert blocks.choose_mode(10, 2, exact_threshold=5) == "blocks"
    exact = blocks.estimate_memory(1_000_000, 8, "exact")
    blocked_ = blocks.estimate_memory(1_000_000, 8, "blocks")
    assert blocked_ > 0 and exact > 0
    assert blocks.estimate_memory(2_000_000, 8, "blocks") > blocked_
    with pytest.raises(ValueError, match="unknown mode"):
        blocks.estimate_memory(10, 2, "bogus")


def _axis_levels(nums, lo, span, cats, rank, roff, card, bits) -> list[np.ndarray]:
    """Every row's cell on each curve axis, in numpy: numerics take levels 0..2**bits-2 by
    value over the table's range and NULL the top level of its own; a categorical value
    takes its rank spread over all levels."""
    levels = 1 << bits
    axes = []
    for a in range(nums.shape[0]):
        lv = np.floor((nums[a] - lo[a]) / span[a] * (levels - 2) + 0.5)
        lv = np.clip(lv, 0.0, levels - 2.0)
        axes.append(np.where(np.isnan(nums[a]), levels - 1, lv).astype(np.uint64))
    for c in range(cats.shape[0]):
        r = rank[roff[c] + cats[c].astype(np.int64)]
        axes.append((r * (levels - 1) // (card[c] - 1)).astype(np.uint64))
    return axes


def _hilbert_keys_numpy(axes: list[np.ndarray], bits: int, spread: np.ndarray) -> np.ndarray:
    """The kernel's Hilbert index (Skilling's transposition, bits interleaved) over all rows
    at once, in numpy: the reference the kernel is held to."""
    x = [a.copy() for a in axes]
    d = len(x)
    one, zero = np.uint64(1), np.uint64(0)
    for level in range(bits - 1, 0, -1):
        p = np.uint64((1 << level) - 1)
        for j in range(d):
            m = zero - ((x[j] >> np.uint64(level)) & one)
            x[0] ^= p & m
            t = (x[0] ^ x[j]) & p & ~m
            x[0] ^= t
            x[j] ^= t
    for j in range(1, d):
        x[j] ^= x[j - 1]
    t = np.zeros_like(x[0])
    for level in range(bits - 1, 0, -1):
        m = zero - ((x[d - 1] >> np.uint64(level)) & one)
        t ^= np.uint64((1 << level) - 1) & m
    key = np.zeros_like(x[0])
    for j in range(d):
        v = x[j] ^ t
        part = spread[(v & np.uint64(255)).astype(np.int64)]
        if bits > 8:
            part |= spread[((v >> np.uint64(8)) & np.uint64(255)).astype(np.int64)] << np.uint64(8 * d)
        key |= part << np.uint64(d - 1 - j)
    return key


@settings(max_examples=20, deadline=None)
@given(data=qi_tables(), by=st.sampled_from(["frequency", "code"]))
def test_curve_keys_match_the_numpy_reference(data: QIData, by: str) -> None:
    num_q, cat_q = blocks._curve_dims(data)
    d = len(num_q) + len(cat_q)
    if d == 0:
        return
    bits = max(1, min(16, 64 // d))
    arrays = blocks._curve_arrays(data, num_q, cat_q, by)
    spread = blocks._spread_table(d)
    expected = _hilbert_keys_numpy(_axis_levels(*arrays.values(), bits), bits, spread)
    # numba's JIT, and the module built at install where there is one
    for hilbert_keys in (compiled.jit_kernel("hilbert_keys"), None):
        keys = np.empty(data.n_rows, dtype=np.uint64)
        values = {**arrays, "bits": bits, "spread": spread, "start": 0, "end": data.n_rows, "keys": keys}
        if hilbert_keys is None:
            compiled.hilbert_keys(values)
        else:
            hilbert_keys(*call_args("hilbert_keys", values))
        np.testing.assert_array_equal(keys, expected)


@SETTINGS
@given(strata=st.lists(st.integers(0, 5), min_size=1, max_size=300), seed=st.integers(0, 99))
def test_the_stratified_order_holds_each_stratum_near_its_share_everywhere(strata: list, seed: int) -> None:
    """Every stretch from the start of the interleaved order holds each stratum at its share
    of the rows, within one row and half the number of strata; a stratum's rows keep their
    order."""
    codes = np.unique(np.array(strata), return_inverse=True)[1]
    n, m = len(codes), int(codes.max()) + 1
    order = np.random.default_rng(seed).permutation(n)
    got = blocks.stratified_order(order, codes)
    assert sorted(got.tolist()) == list(range(n))
    place = np.empty(n, dtype=np.int64)
    place[order] = np.arange(n)
    share = np.bincount(codes, minlength=m) / n
    seen = np.zeros(m)
    for length, row in enumerate(got, start=1):
        seen[codes[row]] += 1
        assert (np.abs(seen - length * share) <= 1 + m / 2).all()
    for s in range(m):
        rows = got[codes[got] == s]
        assert (np.diff(place[rows]) > 0).all()


def test_blocks_cut_by_strata_hold_each_stratum_at_its_share() -> None:
    """Blocks cut from the coarse order by strata: each holds every stratum near its share
    even where the strata go with the QIs, and still clusters its rows in the coarse order."""
    n = 4000
    age = np.arange(n, dtype=np.float64) % 90
    # the stratum goes with age: the young are 0, the old 1, a few of each in between
    strata = (age > 45).astype(np.int64)
    strata[::50] = 1 - strata[::50]
    data = QIData(("age",), (True,), (age,), (0.0,), (89.0,), (0,), (1.0,))
    seen: list[np.ndarray] = []

    def record(block: QIData, k: int) -> np.ndarray:
        seen.append(block.position.copy())
        assert block.coarse_rank is not None
        return np.zeros(block.n_rows, dtype=np.int64)

    blocks.blocked(data, 5, record, block_size=500, workers=1, categorical_by="coarse", strata=strata)
    share = strata.mean()
    assert len(seen) == 8
    for rows in seen:
        assert abs(strata[rows].mean() - share) < 0.01
    seen.clear()
    blocks.blocked(data, 5, record, block_size=500, workers=1, categorical_by="coarse")
    assert max(abs(strata[rows].mean() - share) for rows in seen) > 0.4
    with pytest.raises(ValueError, match="coarse"):
        blocks.blocked(data, 5, record, block_size=500, workers=1, strata=strata)
