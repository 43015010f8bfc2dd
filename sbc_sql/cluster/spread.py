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

The order is computed from a :class:`Plan` (:func:`plan`): table-level facts from which each
row's sort keys follow from the row alone (:func:`keys`). One process plans from the whole
table (:func:`spread_order`: the order exact); Spark's driver plans from the blocks' sample
and its workers key their rows from the plan (:mod:`.distributed`), so both cut the same
order, up to the sample's estimate of each row's quantile in its stratum.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .blocks import block_bounds, coarse_keys, lexsort
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
    spread over every block only widen the classes). The order is that of :func:`keys`
    under the :func:`plan` of the whole table: Spark's workers cut theirs from the same
    plan made of a sample (:mod:`.distributed`)."""
    sensitive = data.sensitive
    if rule is None or not rule.reads_input or sensitive is None or data.n_rows == 0:
        return None
    if _keeping(coarse, data, k, block_rows, rule) >= COARSE_KEEPS:
        return None
    found = plan(data, data.n_rows, k, block_rows, rule)
    return None if found is None else lexsort(keys(data, found))


def order_name(spread: bool) -> str:
    """The order blocks were cut from, for a run's detail line."""
    return "an order spreading the QIs the sensitive values go with" if spread else "the coarse order"


@dataclasses.dataclass(frozen=True)
class Sorted:
    """Rows sorted by their keys (np.lexsort's convention, the last primary; no two rows
    equal), kept as what :meth:`count` needs to place other rows among them: per key, from
    the primary, the distinct values of that key and the distinct codes of the keys so far.
    A value is coded by its place among a key's distinct values (equal to the i-th: 2 i + 1,
    between the (i - 1)-th and the i-th: 2 i), so a row's code compares with a sorted row's
    as their keys do; the codes of the keys so far and the next key's combine into one
    int64 and are coded again, so every level stays below 4 m**2 (m sorted rows). Counting
    a row is then a few binary searches per key, whatever the keys' types (NULLs, NaN,
    sort last as in np.lexsort)."""

    levels: tuple[tuple[np.ndarray, np.ndarray], ...]
    n_rows: int

    @classmethod
    def of(cls, keys: list[np.ndarray]) -> Sorted:
        """The rows of ``keys`` (in any order)."""
        n = len(keys[0]) if keys else 0
        code = np.zeros(n, dtype=np.int64)
        levels = []
        for key in reversed(keys):
            values = np.unique(key)
            code = code * (2 * len(values) + 1) + _code(values, key)
            prefixes = np.unique(code)
            code = _code(prefixes, code)
            levels.append((values, prefixes))
        return cls(tuple(levels), n)

    def count(self, keys: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """For each row of ``keys`` (the same keys, of the same types): how many sorted rows
        come before it, and how many at or before it."""
        n = len(keys[0]) if keys else 0
        code = np.zeros(n, dtype=np.int64)
        left = right = np.zeros(n, dtype=np.int64)
        for (values, prefixes), key in zip(self.levels, reversed(keys), strict=True):
            code = code * (2 * len(values) + 1) + _code(values, key)
            left = np.searchsorted(prefixes, code, side="left").astype(np.int64)
            right = np.searchsorted(prefixes, code, side="right").astype(np.int64)
            code = left + right
        return left, right


def _code(values: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Each of ``x`` by its place among the sorted distinct ``values`` (see :class:`Sorted`)."""
    return (np.searchsorted(values, x, side="left") + np.searchsorted(values, x, side="right")).astype(
        np.int64
    )


@dataclasses.dataclass(frozen=True)
class Plan:
    """The spread order as table-level facts, from which each row's sort keys follow from
    the row alone (:func:`keys`), wherever it is: made by :func:`plan` from a sample of the
    rows (Spark's driver, broadcast with the job), or from the whole table (one process,
    the order exact). With ``m`` sampled rows:

    * ``tied`` and ``free``: the QIs the sensitive values go with and the other weighted
      ones (:func:`association` on the sample);
    * ``n_groups`` and ``n_strata``: the groups (:func:`groups` on the sample) and their
      strata, equal stretches of the tied QIs' order (their coarse keys, position last);
    * ``strata``: the tied keys of the sampled rows where strata 1 .. ``n_strata`` - 1
      start, so a row's stratum is how many of them come at or before it, and its group
      ``stratum * n_groups // n_strata``;
    * ``sample``: the sampled rows in the base order (stratum, the free QIs' coarse keys,
      position) and ``starts`` where each stratum's rows begin there: a
      row's place in its stratum is its count of them (one process: exact; a sample: its
      quantile estimated as the share of the stratum's sampled rows before it)."""

    tied: tuple[int, ...]
    free: tuple[int, ...]
    n_groups: int
    n_strata: int
    strata: Sorted
    sample: Sorted
    starts: np.ndarray


def plan(sample: QIData, n_rows: int, k: int, block_rows: int, rule: Rule | None) -> Plan | None:
    """The :class:`Plan` of a table of ``n_rows`` rows from ``sample`` (its rows, or the
    whole table), or None where the spread order does not apply: no criterion compares
    classes with the input, or no QI, or every QI, is associated with the sensitive values.
    Whether the coarse order's blocks keep the criteria is the caller's to decide
    (:func:`keeping`, on the real blocks)."""
    sensitive = sample.sensitive
    m = sample.n_rows
    if rule is None or not rule.reads_input or sensitive is None or m == 0:
        return None
    linked = association(sample, sensitive) > ASSOCIATED
    weighted = np.asarray(sample.weights) != 0
    tied = tuple(q for q in range(sample.n_qis) if linked[q] and weighted[q])
    free = tuple(q for q in range(sample.n_qis) if not linked[q] and weighted[q])
    if not tied or not free:
        return None
    tied_keys = _tied_keys(sample, tied)
    tied_order = lexsort(tied_keys)
    rank = np.empty(m, dtype=np.int64)
    rank[tied_order] = np.arange(m, dtype=np.int64)
    most = max(1, min(n_rows // (GROUP_BLOCKS * max(block_rows, k)), m // STRATA))
    n_groups = groups(rank, sample, rule, most)
    # a stratum holds a sampled row at least (only a sample of fewer than STRATA rows, one
    # group, has fewer strata)
    n_strata = max(1, min(n_groups * STRATA, m))
    at = -(-np.arange(1, n_strata, dtype=np.int64) * m // n_strata)
    rows = tied_order[at]
    strata = Sorted.of([key[rows] for key in tied_keys])
    stratum = strata.count(tied_keys)[1]
    # rows of equal free QIs in a stratum in their source order, not the tied QIs' (which
    # would give a block the same narrow slice of them in every stratum): on the clinic
    # table at 1,000,000 rows, t = 0.2, 16.8 % NCP against 17.2 % (20 rows suppressed)
    base = [tied_keys[0], *_free_keys(sample, free), stratum]
    starts = np.concatenate(([0], np.cumsum(np.bincount(stratum, minlength=n_strata)))).astype(np.int64)
    return Plan(tied, free, n_groups, n_strata, strata, Sorted.of(base), starts)


def keys(data: QIData, found: Plan) -> list[np.ndarray]:
    """Each row's sort keys in the spread order of ``found`` (np.lexsort's convention, the
    last primary; no two rows equal): its group, its quantile within its stratum, then the
    base order's keys (the free QIs' coarse keys, position). Computed from
    the rows alone: rows keyed apart compare as in one table."""
    tied_keys = _tied_keys(data, found.tied)
    stratum = found.strata.count(tied_keys)[1]
    group = stratum * found.n_groups // found.n_strata
    base = [tied_keys[0], *_free_keys(data, found.free)]
    left, right = found.sample.count([*base, stratum])
    first = found.starts[stratum]
    size = found.starts[stratum + 1] - first
    # a sampled row's place is exact, (i + 0.5) / size; another's the share of the
    # stratum's sampled rows before it
    quantile = np.where(size > 0, (left + right - 2 * first) / (2.0 * np.maximum(size, 1)), 0.5)
    return [*base, quantile, group]


def _tied_keys(data: QIData, tied: tuple[int, ...]) -> list[np.ndarray]:
    """The tied QIs' coarse keys (their own coarse order), position last."""
    return [data.position.astype(np.int64, copy=False), *coarse_keys(_only(data, list(tied)), workers=1)]


def _free_keys(data: QIData, free: tuple[int, ...]) -> list[np.ndarray]:
    return coarse_keys(_only(data, list(free)), workers=1)


def keeping(counts: list[np.ndarray], size: np.ndarray, rule: Rule, sensitive: Sensitive) -> float:
    """The share of blocks that keep the criteria as a whole, from their value counts
    (``counts[s]``: a (blocks, m_s) array of column s) and sizes."""
    if len(size) == 0:
        return 1.0
    return float(rule.counts_ok(counts, size, sensitive).mean())


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
    return keeping(counts, size, rule, sensitive)


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
