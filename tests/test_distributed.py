"""Block mode cut apart (the Spark engine's clustering, here without Spark): the blocks from
the whole table as the sample are block mode's, the same blocks give the same classes, and a
sample's blocks are near the size asked, each of at least k rows."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from strategies import data_from_arrays as make_data
from test_spread import clinic

from sbc_sql.cluster import blocks, distributed, spread
from sbc_sql.cluster.distributed import BlockJob
from sbc_sql.cluster.model import QIData
from sbc_sql.cluster.registry import block_algorithm
from sbc_sql.cluster.sbca_plus.run import across_blocks
from sbc_sql.cluster.sensitive import Sensitive, rare_values
from sbc_sql.privacy.criteria import rule_of


def synthetic(n: int, seed: int = 0, numerics: int = 2) -> QIData:
    """Numerics with NULLs and ties, a coarse and a fine categorical (both orders' keys)."""
    rng = np.random.default_rng(seed)
    age = np.round(rng.normal(45, 15, n))
    age[rng.random(n) < 0.02] = np.nan
    nums = [age, np.round(age * 900 + rng.normal(0, 9000, n), -2)][:numerics]
    cats = []
    for card in (3, 40):
        p = 1.0 / np.arange(1, card + 1) ** 1.1
        cats.append((rng.choice(card, n, p=p / p.sum()), card))
    data = make_data(nums, cats)
    # positions as an engine's row ids: increasing, not consecutive
    return dataclasses.replace(data, position=np.cumsum(rng.integers(1, 5, n)))


def shuffled_apart(data: QIData, parts: int, seed: int = 1) -> list[QIData]:
    """The rows dealt at random into ``parts`` pieces, as workers would hold them."""
    rng = np.random.default_rng(seed)
    piece = rng.integers(0, parts, data.n_rows)
    return [data.take(np.flatnonzero(piece == p)) for p in range(parts)]


def spread_labels(data: QIData, job: BlockJob, cut: distributed.Cuts) -> np.ndarray:
    """Class ids as the workers make them: blocks assigned piece by piece, each block
    clustered alone, ids offset by the classes of the blocks before it."""
    block = np.empty(data.n_rows, dtype=np.int64)
    index = {int(p): i for i, p in enumerate(data.position)}
    for piece in shuffled_apart(data, 3):
        ids = distributed.block_ids(piece, cut)
        block[[index[int(p)] for p in piece.position]] = ids
    local = np.full(data.n_rows, -1, dtype=np.int64)
    classes = {}
    for b in np.unique(block):
        rows = np.flatnonzero(block == b)  # position order
        local[rows] = distributed.cluster_block(job, data.take(rows))[0]
        classes[int(b)] = int(local[rows].max()) + 1
    first = distributed.offsets(classes)
    return np.array([lab + first[int(b)] if lab >= 0 else -1 for lab, b in zip(local, block, strict=True)])


@pytest.mark.parametrize(("k", "numerics"), [(3, 2), (5, 1), (10, 2)])
def test_the_whole_table_as_sample_gives_block_modes_blocks_and_classes(k: int, numerics: int) -> None:
    data = synthetic(6000, seed=k, numerics=numerics)
    job = BlockJob(k, block_rows=400)
    cut = distributed.cuts(job, data, data.n_rows)
    expected_blocks = blocks.make_blocks(data, k, job.size, "coarse")
    assert cut.n_blocks == len(expected_blocks) > 10
    got = np.zeros(data.n_rows, dtype=np.int64)
    for piece in shuffled_apart(data, 4):
        where = np.searchsorted(data.position, piece.position)
        got[where] = distributed.block_ids(piece, cut)
    for b, rows in enumerate(expected_blocks):
        assert (got[rows] == b).all()

    algorithm = block_algorithm(k, "nearest", job.block_rows)
    expected = blocks.blocked(data, k, algorithm, block_size=job.size, workers=1, categorical_by="coarse")
    np.testing.assert_array_equal(spread_labels(data, job, cut), expected)


def test_a_samples_blocks_are_near_the_size_asked() -> None:
    data = synthetic(40_000, seed=7)
    job = BlockJob(5, block_rows=1000)
    fraction = distributed.sample_fraction(job, data.n_rows)
    assert 0 < fraction < 1
    rng = np.random.default_rng(distributed.SEED)
    sample = data.take(np.flatnonzero(rng.random(data.n_rows) < fraction))
    cut = distributed.cuts(job, sample, data.n_rows)
    sizes = np.bincount(distributed.block_ids(data, cut))
    assert len(sizes) == cut.n_blocks == job.n_blocks(data.n_rows) == 40
    # 100 sampled rows a block: sizes within about three tenths of the size asked
    assert sizes.min() > 0.6 * 1000 and sizes.max() < 1.4 * 1000
    assert sizes.sum() == data.n_rows


def test_small_blocks_join_a_neighbour() -> None:
    assert distributed.joined({0: 10, 1: 12, 2: 11}, 5) == {}
    # a small block takes in the blocks after it until it holds k rows
    assert distributed.joined({0: 10, 1: 2, 2: 11}, 5) == {2: 1}
    assert distributed.joined({0: 2, 1: 12, 2: 11}, 5) == {1: 0}
    assert distributed.joined({0: 10, 1: 2, 2: 2, 3: 2, 4: 9}, 5) == {2: 1, 3: 1}
    # a small last block joins the group before it
    assert distributed.joined({0: 10, 1: 9, 2: 1}, 5) == {2: 1}
    assert distributed.joined({0: 10, 1: 2, 2: 1}, 5) == {1: 0, 2: 0}
    merged: dict[int, int] = {}
    counts = {0: 10, 1: 2, 2: 2, 3: 2, 4: 9}
    for b, n in counts.items():
        to = distributed.joined(counts, 5).get(b, b)
        merged[to] = merged.get(to, 0) + n
    assert min(merged.values()) >= 5


def test_one_block_needs_no_cuts_and_offsets_number_classes_in_block_order() -> None:
    data = synthetic(300, seed=3)
    job = BlockJob(5)
    assert distributed.sample_fraction(job, data.n_rows) == 1.0
    cut = distributed.cuts(job, data, data.n_rows)
    assert cut.n_blocks == 1
    assert (distributed.block_ids(data, cut) == 0).all()
    assert distributed.offsets({2: 4, 0: 3, 5: 1}) == {0: 0, 2: 3, 5: 7}


# ---- criteria and limits: the rows the blocks leave, placed per group of blocks ----


def with_diagnosis(data: QIData, seed: int = 2) -> QIData:
    """A sensitive column that follows the first QI nine times in ten (blocks of alike rows
    lack the other values), counted over the whole table."""
    rng = np.random.default_rng(seed)
    first = np.nan_to_num(data.columns[0], nan=45.0)
    by_first = np.digitize(first, [35, 45, 55]).astype(np.int32)
    codes = np.where(rng.random(data.n_rows) < 0.9, by_first, rng.integers(0, 4, data.n_rows)).astype(
        np.int32
    )
    sens = Sensitive(("dx",), (codes,), (np.bincount(codes, minlength=4).astype(np.int64),), (False,))
    return dataclasses.replace(data, sensitive=sens)


def same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    """The same rows suppressed and the same rows together, whatever the ids."""
    if not np.array_equal(a < 0, b < 0):
        return False
    kept = a >= 0
    pairs = np.unique(np.stack([a[kept], b[kept]], axis=1), axis=0)
    return len(pairs) == len(np.unique(a[kept])) == len(np.unique(b[kept]))


def test_a_group_places_the_rows_its_blocks_left_as_one_process_places_a_tables() -> None:
    data = with_diagnosis(synthetic(6_000))
    rule = rule_of(t_closeness=0.2)
    job = BlockJob(5, rule=rule)
    # block mode's blocks and classes in one process, then its step across blocks
    labels = blocks.blocked(
        data, 5, block_algorithm(5, rule=rule), block_size=job.size, workers=1, categorical_by="coarse"
    )
    assert (labels < 0).sum() > 100  # the blocks leave rows
    one = labels.copy()
    pooled, rescued = across_blocks(data, 5, one, rule, None, workers=1)
    assert pooled + rescued > 0
    # the same classes named by (origin, label), as the workers hold them, placed as a group
    origins = np.zeros(data.n_rows, dtype=np.int64)
    new_origin, new_label, pooled_g, rescued_g = distributed.place_group(job, 1, 0, data, origins, labels)
    assert (pooled_g, rescued_g) == (pooled, rescued)
    grouped = np.where(new_label >= 0, new_origin * 10**6 + new_label, -1)
    assert same_partition(one, grouped)
    # every class keeps the criterion against the whole table's counts
    assert rule.classes_ok(one, data.sensitive)[np.unique(one[one >= 0])].all()


def test_rounds_of_groups_grow_until_one_holds_the_table_within_the_cap() -> None:
    rule = rule_of(l_diversity=2)
    assert distributed.group_levels(BlockJob(5), 1000, 1536) == []  # k alone: no rounds
    assert distributed.group_levels(BlockJob(5, rule=rule), 1000, 1536) == [8, 64, 170]
    assert distributed.group_levels(BlockJob(5, rule=rule), 6, 1536) == [8]
    # blocks of 160,000 rows (k = 1,000): one block a group, one round
    assert distributed.group_levels(BlockJob(1000, rule=rule), 50, 160_000) == [1]


def test_rare_values_from_the_counts_are_those_the_rows_give() -> None:
    data = with_diagnosis(synthetic(3_000))
    codes = np.concatenate([data.sensitive.codes[0][:2_990], np.full(10, 4, dtype=np.int32)])
    sens = Sensitive(("dx",), (codes,), (np.bincount(codes, minlength=5).astype(np.int64),), (False,))
    rule = rule_of(beta_likeness=1.0)
    mask, chosen = rare_values(rule, sens, 5, 60)
    from_counts = distributed.rare_codes(rule, sens.counts, 5, 60)
    assert [(s, v, f) for s, v, f in from_counts] == [(0, v, f) for _, v, f in chosen] and chosen
    assert np.array_equal(mask, sens.codes[0] == from_counts[0][1])


# ---- t-closeness and beta-likeness: blocks cut from the spread order (.spread) ----


def spread_job(rule) -> BlockJob:
    return BlockJob(10, block_rows=400, rule=rule)


@pytest.mark.parametrize("rule", [rule_of(t_closeness=0.2), rule_of(beta_likeness=2.0)], ids=["t", "beta"])
def test_the_whole_table_as_sample_gives_the_spread_orders_blocks_and_classes(rule) -> None:
    data = dataclasses.replace(clinic(8_000, seed=5), position=np.arange(8_000, dtype=np.int64) * 3 + 1)
    job = spread_job(rule)
    coarse = blocks.coarse_order(data)
    order = spread.spread_order(data, job.k, job.size, rule, coarse)
    assert order is not None
    # the plan of the whole table, keyed in pieces as workers hold the rows, is the order
    plan = distributed.spread_plan(job, data, data.n_rows)
    assert plan is not None and plan.tied == (0, 1) and plan.free == (2, 3)
    cut = distributed.cuts(job, data, data.n_rows, plan)
    expected_blocks = blocks.make_blocks(data, job.k, job.size, "coarse", order=order)
    assert cut.n_blocks == len(expected_blocks) == 20
    got = np.zeros(data.n_rows, dtype=np.int64)
    for piece in shuffled_apart(data, 4):
        got[np.searchsorted(data.position, piece.position)] = distributed.block_ids(piece, cut)
    for b, rows in enumerate(expected_blocks):
        assert (got[rows] == b).all()
    # each block clustered in its own coarse order: block mode's first stage, one process
    algorithm = block_algorithm(job.k, "nearest", job.block_rows, rule=rule)
    expected = blocks.blocked(
        data,
        job.k,
        algorithm,
        block_size=job.size,
        workers=1,
        categorical_by="coarse",
        cut_order=order,
        coarse=coarse,
    )
    assert (expected < 0).sum() < 0.05 * data.n_rows
    np.testing.assert_array_equal(spread_labels(data, job, cut), expected)


def test_a_samples_spread_blocks_are_near_the_size_the_input_and_in_the_free_qis() -> None:
    data = dataclasses.replace(clinic(60_000, seed=6), position=np.arange(60_000, dtype=np.int64))
    rule = rule_of(t_closeness=0.2)
    job = spread_job(rule)
    fraction = distributed.sample_fraction(job, data.n_rows)
    assert 0 < fraction < 1
    rng = np.random.default_rng(distributed.SEED)
    sample = data.take(np.flatnonzero(rng.random(data.n_rows) < fraction))
    plan = distributed.spread_plan(job, sample, data.n_rows)
    assert plan is not None and plan.tied == (0, 1) and plan.free == (2, 3)
    cut = distributed.cuts(job, sample, data.n_rows, plan)
    block = distributed.block_ids(data, cut)
    sizes = np.bincount(block)
    assert len(sizes) == cut.n_blocks == job.n_blocks(data.n_rows) == 150
    # 100 sampled rows a block, their quantiles in 8 strata estimated apart: sizes vary by
    # about a tenth (the coarse order's: 8 %)
    assert sizes.std() < 0.12 * 400 and sizes.min() > 0.6 * 400 and sizes.max() < 1.5 * 400
    assert sizes.sum() == data.n_rows
    # the blocks' sensitive values near the table's: the coarse order's blocks mostly fail
    # t = 0.2 as a whole, the spread order's keep it
    dx = data.sensitive.codes[0]
    counts = [np.bincount(block * 8 + dx, minlength=len(sizes) * 8).reshape(-1, 8)]
    assert spread.keeping(counts, sizes, rule, data.sensitive) >= 0.95
    coarse_cut = distributed.cuts(job, sample, data.n_rows)
    coarse_block = distributed.block_ids(data, coarse_cut)
    coarse_sizes = np.bincount(coarse_block)
    coarse_counts = [np.bincount(coarse_block * 8 + dx, minlength=len(coarse_sizes) * 8).reshape(-1, 8)]
    assert not distributed.coarse_keeps(job, coarse_sizes, coarse_counts, data.sensitive)
    # ... and near in the free QIs: 48,000 rows of the main nationality over 300 zip codes,
    # about 4 to a block of 400 (the coarse order's blocks hold most of them)
    zips = [len(np.unique(data.columns[2][block == b])) for b in range(len(sizes))]
    coarse_zips = [len(np.unique(data.columns[2][coarse_block == b])) for b in range(len(coarse_sizes))]
    assert np.median(zips) <= 20 and np.median(coarse_zips) >= 150


def test_a_plan_counts_rows_among_the_samples_as_sorting_would() -> None:
    rng = np.random.default_rng(4)
    n, m = 3_000, 500
    table = [rng.integers(0, 5, n), np.round(rng.normal(0, 1, n), 1), rng.integers(0, 3, n).astype(np.int32)]
    table[1][rng.random(n) < 0.05] = np.nan
    position = np.arange(n, dtype=np.int64)
    keys_ = [position, *table]
    pick = rng.choice(n, m, replace=False)
    found = spread.Sorted.of([k[pick] for k in keys_])
    left, right = found.count(keys_)
    rank = np.empty(n, dtype=np.int64)
    rank[np.lexsort(keys_)] = np.arange(n)
    sampled = np.sort(rank[pick])
    np.testing.assert_array_equal(left, np.searchsorted(sampled, rank, side="left"))
    np.testing.assert_array_equal(right, np.searchsorted(sampled, rank, side="right"))
