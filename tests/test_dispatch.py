"""The clustering step as the pipeline runs it: algorithms, modes and workers."""

from __future__ import annotations

import numpy as np
import pytest

from sbc_sql.cluster import blocks, dispatch
from sbc_sql.cluster.model import SUPPRESSED, QIData
from sbc_sql.cluster.ncp import total_ncp
from sbc_sql.cluster.sbca_paper import sbca
from sbc_sql.cluster.sbca_plus.algorithm import sbca_plus


def population(n: int, seed: int = 3) -> QIData:
    """Two numerics (one with NULLs) and three skewed categoricals."""
    rng = np.random.default_rng(seed)
    age = rng.integers(0, 90, n).astype(np.float64)
    age[rng.random(n) < 0.02] = np.nan
    income = np.round(age * 900 + rng.normal(0, 5000, n))
    cards = (2, 9, 60)
    cats = [np.minimum(rng.zipf(1.6, n) - 1, c - 1).astype(np.int32) for c in cards]
    cols = (age, income, *cats)
    lo = (np.nanmin(age), np.nanmin(income), np.nan, np.nan, np.nan)
    hi = (np.nanmax(age), np.nanmax(income), np.nan, np.nan, np.nan)
    return QIData(
        ("age", "income", "sex", "region", "zip"),
        (True, True, False, False, False),
        cols,
        lo,
        hi,
        (0, 0, *cards),
        (1.0,) * 5,
    )


def assert_k_anonymous_and_complete(labels: np.ndarray, n: int, k: int) -> None:
    assert len(labels) == n
    kept = labels[labels != SUPPRESSED]
    assert len(kept) == n
    assert np.bincount(kept).min() >= k


@pytest.mark.parametrize("algorithm", ["sbca", "sbca-paper"])
@pytest.mark.parametrize("k", [3, 10])
def test_block_mode_is_k_anonymous_and_complete(algorithm, k):
    data = population(9000)
    run = dispatch.run_clustering(data, k, algorithm=algorithm, mode="blocks", workers=2)
    assert run.mode == "blocks"
    assert_k_anonymous_and_complete(run.labels, data.n_rows, k)


@pytest.mark.parametrize("algorithm", ["sbca", "sbca-paper"])
def test_block_mode_same_labels_for_any_worker_count(algorithm):
    data = population(7000, seed=5)
    one = dispatch.run_clustering(data, 5, algorithm=algorithm, mode="blocks", workers=1)
    two = dispatch.run_clustering(data, 5, algorithm=algorithm, mode="blocks", workers=2)
    np.testing.assert_array_equal(one.labels, two.labels)


def test_one_block_is_the_exact_run():
    data = population(1500, seed=8)
    whole = blocks.blocked(
        data, 6, dispatch.block_algorithm(6), block_size=data.n_rows, categorical_by="sort"
    )
    pool = -(-dispatch.BLOCK_POOL_ROWS // 6)
    np.testing.assert_array_equal(whole, sbca_plus(data, 6, passes=dispatch.BLOCK_PASSES, pool=pool))
    # and the default's auto mode on a table of one block is that run
    np.testing.assert_array_equal(dispatch.run_clustering(data, 6).labels, whole)


def test_paper_preset_is_the_paper_algorithm():
    data = population(1200, seed=9)
    run = dispatch.run_clustering(data, 4, algorithm="sbca-paper", mode="exact")
    np.testing.assert_array_equal(run.labels, sbca(data, 4))


def test_default_beats_the_paper_on_information_loss():
    data = population(3000, seed=11)
    plus = dispatch.run_clustering(data, 10, mode="exact").labels
    paper = dispatch.run_clustering(data, 10, algorithm="sbca-paper", mode="exact").labels
    assert total_ncp(data, plus) < total_ncp(data, paper)


def test_auto_mode_switches_to_blocks_above_the_threshold():
    assert blocks.choose_mode(1000, 10) == "exact"
    assert blocks.choose_mode(2_000_000, 10) == "blocks"
    small = dispatch.run_clustering(population(800), 5, algorithm="sbca-paper")
    assert small.mode == "exact"
    # the default always runs in blocks; a small table is one block
    default = dispatch.run_clustering(population(800), 5)
    assert default.mode == "blocks" and "in 1 block(s)" in default.detail


def test_a_run_that_cannot_fit_in_memory_is_refused(monkeypatch):
    from sbc_sql.errors import ResourceError

    monkeypatch.setattr(dispatch, "available_memory", lambda: 1024)
    with pytest.raises(ResourceError, match="GiB is available"):
        dispatch.run_clustering(population(500), 5)


def test_chosen_block_rows_cut_larger_blocks_each_row_a_candidate():
    data = population(6000, seed=12)
    run = dispatch.run_clustering(data, 5, block_rows=3000, workers=2)
    assert "2 block(s) of at most 3,000 rows" in run.detail
    assert_k_anonymous_and_complete(run.labels, data.n_rows, 5)
    again = dispatch.run_clustering(data, 5, block_rows=3000, workers=1)
    np.testing.assert_array_equal(run.labels, again.labels)
    # one block of the whole table: every row a candidate for every class
    whole = dispatch.run_clustering(data, 5, block_rows=6000)
    every = sbca_plus(data, 5, passes=dispatch.BLOCK_PASSES, pool=1200, wide=1200)
    np.testing.assert_array_equal(whole.labels, every)
    default = dispatch.run_clustering(data, 5)
    assert total_ncp(data, whole.labels) < total_ncp(data, default.labels)
