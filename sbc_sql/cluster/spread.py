"""The order blocks are cut from when a criterion compares every class with the whole input.

Block mode cuts the coarse order (:func:`.blocks.coarse_order`) into blocks of QI
neighbours. Where the sensitive values go with some QIs (a diagnosis with age and sex) a
block of neighbours in those QIs is far from the input's distribution, t-closeness and
beta-likeness fail in it, and the rows it cannot place end in wide classes across blocks
(clinic table, 1,000,000 rows, k = 10: t = 0.2 cost 24.2 % NCP, 56 % above the exact
algorithm on 100,000 of its rows). Any class that keeps such a criterion must span those
QIs anyway; the other QIs it can keep narrow. So here:

1. each QI's **association** with the sensitive values (:func:`association`): how far the
   sensitive values' distribution within a bucket of the QI sits from the input's, beyond
   what the same buckets give the values shuffled (a QI of many values has far buckets by
   chance alone);
2. the associated QIs order the rows into **groups** (:func:`groups`): as many equal
   stretches of their own coarse order as still each keep the criteria with half the
   distance to spare (their deviation from the input doubled), one group when none does;
3. within a group the rows are ordered by the other QIs, **interleaved** by strata of the
   associated ones (:func:`spread_order`), so every stretch, and every block cut from it,
   holds each stratum near its share and rows near each other in the other QIs.

Each block then sits near its group's distribution, and its classes keep the criteria while
they stay narrow in the QIs the values do not go with (same table: 16.8 % NCP for t = 0.2,
8.6 % above the exact reference; beta = 2 from 26.2 % to 14.7 %, with two groups).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .blocks import block_bounds, coarse_order
from .model import QIData
from .sensitive import Rule, Sensitive, emd_rows

#: a QI is associated with the sensitive values when its buckets' distance to the input's
#: distribution exceeds the shuffled values' by this much (the clinic table's age: 0.34,
#: sex: 0.11; its zip code and nationality, and the synthetic table's QIs but age and
#: income, below 0.005)
ASSOCIATED = 0.02
#: buckets of a numeric QI for its association (quantiles; NULL a bucket of its own)
BUCKETS = 16
#: strata of the associated QIs' order within a group that every block holds near its share
STRATA = 8
#: a group must keep the criteria with its deviation from the input's distribution this
#: many times larger: the classes cut from its blocks need the rest
DEVIATION = 2.0
#: the fewest blocks a group holds
GROUP_BLOCKS = 2
#: the coarse order serves when at least this share of its blocks keeps the criteria as a
#: whole (their classes then can too): the synthetic table's at beta = 2 (91 % at 1,000,000
#: rows), where the spread order cost NCP (6.43 % -> 6.97 %); at t = 0.2 39 %, the clinic
#: table's 6 % and 45 % (t, beta)
COARSE_KEEPS = 0.75
#: the seed of the shuffle that measures the association of chance
SEED = 20_261_129


def association(data: QIData, sensitive: Sensitive) -> np.ndarray:
    """Per QI, the weighted mean distance (t-closeness' EMD) between the sensitive values'
    distribution in each of its buckets and the input's, less the same with the values
    shuffled; the largest over the sensitive columns. A QI of zero weight or one value: 0."""
    weight = data.weights_of_rows()
    rng = np.random.default_rng(SEED)
    out = np.zeros(data.n_qis)
    for q in range(data.n_qis):
        if data.weights[q] == 0:
            continue
        bucket = _buckets(data, q)
        n_buckets = int(bucket.max(initial=0)) + 1
        if n_buckets < 2:
            continue
        for s in range(sensitive.n_columns):
            codes = sensitive.codes[s].astype(np.int64, copy=False)
            shuffled = codes[rng.permutation(len(codes))]
            m = len(sensitive.counts[s])
            p = sensitive.shares(s)
            real = _bucket_distance(bucket, codes, weight, n_buckets, m, p, sensitive.ordered[s])
            chance = _bucket_distance(bucket, shuffled, weight, n_buckets, m, p, sensitive.ordered[s])
            out[q] = max(out[q], real - chance)
    return out


def _buckets(data: QIData, q: int) -> np.ndarray:
    """Each row's bucket of QI q: a categorical's value code, a numeric's quantile (of
    :data:`BUCKETS`), NULL the last."""
    col = data.columns[q]
    if not data.numeric[q]:
        return np.asarray(col, dtype=np.int64)
    values = np.asarray(col, dtype=np.float64)
    null = np.isnan(values)
    if null.all():
        return np.zeros(len(values), dtype=np.int64)
    edges = np.unique(np.quantile(values[~null], np.linspace(0, 1, BUCKETS + 1)[1:-1]))
    out = np.searchsorted(edges, values, side="right").astype(np.int64)
    out[null] = len(edges) + 1
    return out


def _bucket_distance(
    bucket: np.ndarray,
    codes: np.ndarray,
    weight: np.ndarray,
    n_buckets: int,
    m: int,
    p: np.ndarray,
    ordered: bool,
) -> float:
    counts = np.bincount(bucket * m + codes, weights=weight, minlength=n_buckets * m).reshape(n_buckets, m)
    size = counts.sum(axis=1)
    used = size > 0
    distance = emd_rows(counts[used] / size[used, None], p, ordered)
    return float((distance * size[used]).sum() / size[used].sum())


def groups(rank: np.ndarray, data: QIData, rule: Rule, most: int) -> int:
    """How many equal stretches of the associated QIs' order (``rank``: each row's place in
    it) the rows are cut into: the most, a power of two up to ``most``, whose every stretch
    keeps the criteria with its deviation from the input's distribution :data:`DEVIATION`
    times larger; 1 when none does."""
    sensitive = data.sensitive
    assert sensitive is not None
    n = data.n_rows
    weight = data.weights_of_rows().astype(np.float64)
    g = 1
    while 2 * g <= most:
        g *= 2
    while g > 1:
        group = rank * g // max(n, 1)
        size = np.bincount(group, weights=weight, minlength=g)
        counts = []
        for s in range(sensitive.n_columns):
            m = len(sensitive.counts[s])
            p = sensitive.shares(s)
            c = np.bincount(group * m + sensitive.codes[s], weights=weight, minlength=g * m).reshape(g, m)
            q = np.clip(p + DEVIATION * (c / size[:, None] - p), 0.0, None)
            counts.append(q / q.sum(axis=1, keepdims=True) * size[:, None])
        if rule.counts_ok(counts, size, sensitive).all():
            return g
        g //= 2
    return 1


def spread_order(
    data: QIData, k: int, block_rows: int, rule: Rule | None, coarse: np.ndarray
) -> np.ndarray | None:
    """The row order to cut blocks from (row indices), or None where the coarse order
    (``coarse``, :func:`.blocks.coarse_order`) serves: no criterion compares classes with
    the input, or :data:`COARSE_KEEPS` of its blocks keep the criteria as a whole, or no QI,
    or every QI, is associated with the sensitive values (with nothing to keep narrow, rows
    spread over every block only widen the classes)."""
    sensitive = data.sensitive
    if rule is None or not rule.reads_input or sensitive is None or data.n_rows == 0:
        return None
    if _keeping(coarse, data, k, block_rows, rule) >= COARSE_KEEPS:
        return None
    linked = association(data, sensitive) > ASSOCIATED
    weighted = np.asarray(data.weights) != 0
    tied = [q for q in range(data.n_qis) if linked[q] and weighted[q]]
    free = [q for q in range(data.n_qis) if not linked[q] and weighted[q]]
    if not tied or not free:
        return None
    n = data.n_rows
    tied_rank = _rank(_only(data, tied))
    free_rank = _rank(_only(data, free))
    n_groups = groups(tied_rank, data, rule, max(1, n // (GROUP_BLOCKS * max(block_rows, k))))
    group = tied_rank * n_groups // n
    stratum = tied_rank * n_groups * STRATA // n
    # within a group: the free QIs' order, then the tied ones'; each row then placed at its
    # quantile among its stratum's rows in that order
    base = np.lexsort((tied_rank, free_rank, group))
    s = stratum[base]
    counts = np.bincount(s, minlength=n_groups * STRATA)
    by_stratum = np.argsort(s, kind="stable")
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    place = np.empty(n, dtype=np.int64)
    place[by_stratum] = np.arange(n, dtype=np.int64) - np.repeat(starts, counts)
    quantile = (place + 0.5) / counts[s]
    return base[np.lexsort((quantile, group[base]))]


def _keeping(order: np.ndarray, data: QIData, k: int, block_rows: int, rule: Rule) -> float:
    """The share of the blocks cut from ``order`` that keep the criteria as a whole."""
    sensitive = data.sensitive
    assert sensitive is not None
    bounds = block_bounds(data.n_rows, k, block_rows)
    n_blocks = len(bounds) - 1
    block = np.empty(data.n_rows, dtype=np.int64)
    block[order] = np.repeat(np.arange(n_blocks, dtype=np.int64), np.diff(bounds))
    weight = data.weights_of_rows().astype(np.float64)
    size = np.bincount(block, weights=weight, minlength=n_blocks)
    counts = [
        np.bincount(block * len(c) + sensitive.codes[s], weights=weight, minlength=n_blocks * len(c)).reshape(
            n_blocks, len(c)
        )
        for s, c in enumerate(sensitive.counts)
    ]
    return float(rule.counts_ok(counts, size, sensitive).mean())


def _only(data: QIData, qs: list[int]) -> QIData:
    """The rows with only the QIs ``qs`` (their own coarse order, not the table's)."""

    def pick(values: tuple) -> tuple:
        return tuple(values[q] for q in qs)

    return dataclasses.replace(
        data,
        names=pick(data.names),
        numeric=pick(data.numeric),
        columns=pick(data.columns),
        lo=pick(data.lo),
        hi=pick(data.hi),
        cardinality=pick(data.cardinality),
        weights=pick(data.weights),
        coarse_rank=None,
    )


def _rank(data: QIData) -> np.ndarray:
    """Each row's place in the coarse order of ``data``."""
    rank = np.empty(data.n_rows, dtype=np.int64)
    rank[coarse_order(data)] = np.arange(data.n_rows, dtype=np.int64)
    return rank
