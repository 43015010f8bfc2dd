"""Strict multidimensional Mondrian (LeFevre, DeWitt and Ramakrishnan, ICDE 2006): a baseline.

Top-down: a partition is cut on the QI with the widest normalized range at its median, every
row whose value is <= the median going left, as long as both halves keep at least k rows;
when the widest QI allows no such cut the next widest is tried, and a partition that allows
none becomes a class. Classes are released by local recoding like every other algorithm here
(each class's actual range and value set), so the cuts only decide who is grouped with whom.

The partitions are processed a whole level at a time (a breadth-first frontier instead of
recursion or a per-partition Python loop): every round sorts the active rows once per QI by
(partition, value), which gives every partition's median, its cut sizes and its width in a
few vectorized operations. Depth therefore costs rounds, never stack frames.

With privacy criteria on the sensitive columns (a :class:`~..sensitive.Rule`), a cut is
allowed only when both halves hold at least k rows and keep the rule. The median cut of each
QI is tried first, widest QI first; when none is allowed, the widest QI that has an allowed
cut is cut at the one whose smaller half is largest, since a criterion that fails at the
median often holds a few values further on. The whole input is the first partition: it
keeps the rule unless the input cannot (then every row is suppressed, and the run reports
it). These partitions are cut one at a time, each weighing all its cuts in a few vectorized
operations.

With a target label (``QIData.target``, ``--target``) and a weight W, the QI a partition is
cut on is the one of largest normalized width + W x (sum of the QI weights) x purity gain,
the gain being the share of the partition's rows that the median cut moves into the
majority label of their half (rows outside their half's majority label before the cut,
less after it, over the partition's rows): cuts that keep labels apart are preferred, on
the same scale as SBCA's and k-member's target cost. Without criteria only.
"""

from __future__ import annotations

import numpy as np

from ...errors import InputError
from ..model import SUPPRESSED, QIData
from ..runs import ClusterOptions, ClusterRun, Progress
from ..sensitive import Rule, Sensitive

#: at most this many (cut, sensitive value) counts are weighed per partition and QI: the
#: cuts nearest the median are kept (a QI and a sensitive column of thousands of values each
#: would otherwise ask for millions per partition)
CUT_COUNTS = 1 << 20


def mondrian(data: QIData, k: int, rule: Rule | None = None, target_weight: float = 0.0) -> np.ndarray:
    """Class id per row (0..C-1, ordered by each class's first row position).

    Fewer than k rows cannot form a class: they are all suppressed (-1), as in SBCA.
    QI weights are not used: Mondrian's choice of cut is by normalized width only.
    With an active ``rule`` every class also keeps it on ``data.sensitive``; an input that
    does not keep it as a whole is suppressed whole. ``target_weight`` with ``data.target``:
    the cut's QI also weighs label purity (see the module docstring).
    """
    if k < 1:
        raise ValueError(f"k={k} must be at least 1")
    n = data.n_rows
    labels = np.full(n, SUPPRESSED, dtype=np.int64)
    if n == 0 or n < k:
        return labels
    keys = [split_keys(data, q) for q in range(data.n_qis)]
    ranks = np.stack([rank for rank, _ in keys])
    rank_values = tuple(values for _, values in keys)
    if rule is not None and rule.active:
        if data.sensitive is None:
            raise ValueError("criteria on sensitive values need QIData.sensitive")
        group = partition_with_rule(data, ranks, rank_values, k, rule, data.sensitive)
    else:
        aware = data.target is not None and target_weight > 0
        bonus = float(target_weight) * float(sum(data.weights)) if aware else 0.0
        group = partition_rows(data, ranks, rank_values, k, bonus)
    return first_position_labels(group, data.position)


def split_keys(data: QIData, q: int) -> tuple[np.ndarray, np.ndarray]:
    """Row ranks that order QI q for median cuts, and each rank's scaled value (numerics).

    Numerics: dense rank of the value, NULL after every number. Categoricals have no order of
    their own, so values are ranked by descending frequency in the whole table (ties by
    code): the median then tends to fall on a frequent value and the cut isolates it, which
    keeps the large side at one distinct value.
    """
    col = data.columns[q]
    if data.numeric[q]:
        isnull = np.isnan(col)
        distinct = np.unique(col[~isnull])
        rank = np.searchsorted(distinct, col).astype(np.int64)
        rank[isnull] = len(distinct)
        scaled = (distinct - data.lo[q]) / data.span(q) if data.span(q) > 0 else distinct * 0.0
        return rank, np.append(scaled, np.nan)
    card = max(int(data.cardinality[q]), int(col.max()) + 1 if len(col) else 1)
    counts = np.bincount(col, minlength=card)
    order = np.lexsort((np.arange(card), -counts))
    rank_of_code = np.empty(card, dtype=np.int64)
    rank_of_code[order] = np.arange(card)
    return rank_of_code[col], np.zeros(0)


def partition_rows(
    data: QIData, ranks: np.ndarray, rank_values: tuple[np.ndarray, ...], k: int, bonus: float = 0.0
) -> np.ndarray:
    """Final partition id per row, cutting all active partitions once per round; ``bonus``
    (> 0 with ``data.target``) weighs each cut's label purity gain against its width."""
    n = data.n_rows
    group = np.full(n, -1, dtype=np.int64)
    active = np.arange(n)
    pid = np.zeros(n, dtype=np.int64)
    n_final = 0
    while len(active):
        size = np.bincount(pid)
        cuts = [
            partition_cut(data, q, ranks[q, active], pid, size, rank_values[q], k) for q in range(data.n_qis)
        ]
        allowed = np.stack([c[0] for c in cuts], axis=1)
        width = np.stack([c[1] for c in cuts], axis=1)
        median = np.stack([c[2] for c in cuts], axis=1)
        if bonus > 0 and data.target is not None:
            labels = data.target[active]
            width = width + bonus * np.stack(
                [
                    purity_gain(labels, pid, size, ranks[q, active] > median[pid, q])
                    for q in range(data.n_qis)
                ],
                axis=1,
            )
        # widest allowed QI; argmax keeps the first QI on equal widths
        choice = np.argmax(np.where(allowed, width, -1.0), axis=1)
        splits = np.asarray(allowed.any(axis=1))
        stop_rows = ~splits[pid]
        final_id = np.cumsum(~splits) - 1 + n_final
        group[active[stop_rows]] = final_id[pid[stop_rows]]
        n_final += int((~splits).sum())
        go = ~stop_rows
        active, pid = active[go], pid[go]
        row_q = choice[pid]
        right = ranks[row_q, active] > median[pid, row_q]
        new_base = 2 * (np.cumsum(splits) - 1)
        pid = new_base[pid] + right
    return group


def purity_gain(labels: np.ndarray, pid: np.ndarray, size: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Per partition: (rows outside the majority label before the cut - those outside their
    half's majority label after it) / the partition's rows; ``right`` says each row's half."""
    n_lab = int(labels.max()) + 1 if len(labels) else 1
    n_part = len(size)
    before = np.bincount(pid * n_lab + labels, minlength=n_part * n_lab).reshape(n_part, n_lab)
    halves = np.bincount((2 * pid + right) * n_lab + labels, minlength=2 * n_part * n_lab).reshape(
        n_part, 2, n_lab
    )
    outside_before = size - before.max(axis=1)
    outside_after = size - halves.max(axis=2).sum(axis=1)
    gain: np.ndarray = (outside_before - outside_after) / np.maximum(size, 1)
    return gain


def partition_cut(
    data: QIData, q: int, rank: np.ndarray, pid: np.ndarray, size: np.ndarray, rank_value: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per partition on QI q: is the strict median cut allowed, the width, the median rank."""
    n_ranks = int(rank.max()) + 1
    key = np.sort(pid * n_ranks + rank)
    starts = np.concatenate(([0], np.cumsum(size)[:-1]))
    sorted_rank = key % n_ranks
    median = sorted_rank[starts + (size - 1) // 2]
    parts = np.arange(len(size), dtype=np.int64)
    left = np.searchsorted(key, parts * n_ranks + median, side="right") - starts
    allowed = (left >= k) & (size - left >= k)
    if data.numeric[q]:
        width = numeric_width(sorted_rank, starts, size, rank_value)
    else:
        new_value = np.ones(len(key), dtype=np.int64)
        new_value[1:] = key[1:] != key[:-1]
        distinct = np.add.reduceat(new_value, starts)
        width = distinct / max(int(data.cardinality[q]), 1)
    return allowed, width, median


def numeric_width(
    sorted_rank: np.ndarray, starts: np.ndarray, size: np.ndarray, rank_value: np.ndarray
) -> np.ndarray:
    """Normalized range per partition; 1 when NULL mixes with numbers (its NCP)."""
    null_rank = len(rank_value) - 1
    numbers = np.add.reduceat((sorted_rank < null_rank).astype(np.int64), starts)
    lo = rank_value[sorted_rank[starts]]
    hi = rank_value[sorted_rank[starts + np.maximum(numbers, 1) - 1]]
    width = np.where(numbers > 0, hi - lo, 0.0)
    return np.where((numbers > 0) & (numbers < size), 1.0, width)


def partition_with_rule(
    data: QIData, ranks: np.ndarray, rank_values: tuple[np.ndarray, ...], k: int, rule: Rule, sens: Sensitive
) -> np.ndarray:
    """Final partition id per row, every partition of at least k rows keeping ``rule``
    (-1 for every row when the whole input does not)."""
    n = data.n_rows
    group = np.full(n, -1, dtype=np.int64)
    whole = [np.bincount(c, minlength=len(m))[None, :] for c, m in zip(sens.codes, sens.counts, strict=True)]
    if not rule.counts_ok(whole, np.array([n]), sens)[0]:
        return group
    stack = [np.arange(n)]
    n_final = 0
    while stack:
        rows = stack.pop()
        left = rule_cut(data, ranks, rank_values, rows, k, rule, sens)
        if left is None:
            group[rows] = n_final
            n_final += 1
        else:
            stack.append(rows[~left])
            stack.append(rows[left])
    return group


def rule_cut(
    data: QIData,
    ranks: np.ndarray,
    rank_values: tuple[np.ndarray, ...],
    rows: np.ndarray,
    k: int,
    rule: Rule,
    sens: Sensitive,
) -> np.ndarray | None:
    """The left half (a mask over ``rows``) of the cut a partition takes, None when no cut
    leaves two halves of at least k rows that keep ``rule``."""
    size = len(rows)
    if size < 2 * k:
        return None
    codes = [c[rows] for c in sens.codes]
    total = [np.bincount(c, minlength=len(m)) for c, m in zip(codes, sens.counts, strict=True)]
    n_values = sum(len(m) for m in sens.counts)
    per_qi = []
    for q in range(data.n_qis):
        rank = ranks[q, rows]
        order = np.argsort(rank, kind="stable")
        sorted_rank = rank[order]
        per_qi.append((q, rank, order, sorted_rank, partition_width(data, q, sorted_rank, rank_values[q])))
    # widest first; on equal widths the first QI
    per_qi.sort(key=lambda e: (-e[4], e[0]))

    def halves_ok(order: np.ndarray, cuts: np.ndarray) -> np.ndarray:
        return halves_keep(rule, sens, codes, total, order, cuts)

    for _, rank, order, sorted_rank, _ in per_qi:
        # the strict median cut: every row up to the median's value goes left
        cut = int(np.searchsorted(sorted_rank, sorted_rank[(size - 1) // 2], side="right"))
        if k <= cut <= size - k and halves_ok(order, np.array([cut]))[0]:
            median_left: np.ndarray = rank <= sorted_rank[cut - 1]
            return median_left
    # no median cut keeps the rule: the widest QI that has a cut which does, at its most
    # balanced such cut
    keep = max(1, CUT_COUNTS // max(n_values, 1))
    for _, rank, order, sorted_rank, _ in per_qi:
        cuts = np.nonzero(sorted_rank[1:] != sorted_rank[:-1])[0] + 1
        cuts = cuts[(cuts >= k) & (cuts <= size - k)]
        if len(cuts) > keep:
            near = np.argsort(np.abs(cuts - size / 2), kind="stable")[:keep]
            cuts = np.sort(cuts[near])
        if not len(cuts):
            continue
        fine = cuts[halves_ok(order, cuts)]
        if len(fine):
            j = int(np.argmax(np.minimum(fine, size - fine)))
            left: np.ndarray = rank <= sorted_rank[fine[j] - 1]
            return left
    return None


def halves_keep(
    rule: Rule,
    sens: Sensitive,
    codes: list[np.ndarray],
    total: list[np.ndarray],
    order: np.ndarray,
    cuts: np.ndarray,
) -> np.ndarray:
    """Whether both halves of a partition keep ``rule``, per cut (ascending; a cut is how
    many rows of ``order`` go left), from the partition's sensitive ``codes`` and their
    ``total`` counts."""
    seg = np.searchsorted(cuts, np.arange(int(cuts[-1])), side="right")
    left = []
    for c, m in zip(codes, sens.counts, strict=True):
        flat = np.bincount(seg * len(m) + c[order[: len(seg)]], minlength=len(cuts) * len(m))
        left.append(np.cumsum(flat.reshape(len(cuts), len(m)), axis=0))
    right = [t[None, :] - lc for t, lc in zip(total, left, strict=True)]
    size = len(order)
    both: np.ndarray = rule.counts_ok(left, cuts, sens) & rule.counts_ok(right, size - cuts, sens)
    return both


def partition_width(data: QIData, q: int, sorted_rank: np.ndarray, rank_value: np.ndarray) -> float:
    """One partition's width on QI q from its sorted ranks, as :func:`partition_cut` measures it."""
    size = len(sorted_rank)
    if data.numeric[q]:
        starts = np.zeros(1, dtype=np.int64)
        return float(numeric_width(sorted_rank, starts, np.array([size]), rank_value)[0])
    distinct = 1 + int((sorted_rank[1:] != sorted_rank[:-1]).sum())
    return distinct / max(int(data.cardinality[q]), 1)


def first_position_labels(group: np.ndarray, position: np.ndarray) -> np.ndarray:
    """Renumber groups 0..C-1 by the smallest source position among their rows.

    Makes the class ids independent of how the groups were found (same input, same ids).
    """
    labels = np.full(len(group), SUPPRESSED, dtype=np.int64)
    kept = group >= 0
    if not kept.any():
        return labels
    ids, inverse = np.unique(group[kept], return_inverse=True)
    first = np.full(len(ids), np.iinfo(np.int64).max)
    np.minimum.at(first, inverse, position[kept])
    rank = np.empty(len(ids), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(ids))
    labels[kept] = rank[inverse]
    return labels


def run_mondrian(data: QIData, k: int, options: ClusterOptions, progress: Progress | None) -> ClusterRun:
    """Mondrian as the registry runs it: for k and the criteria, or for k and label purity."""
    if data.target is not None and options.target_weight > 0:
        if options.rule.active:
            raise InputError(
                "--algorithm mondrian keeps --target or the privacy criteria, not both; "
                "use the default algorithm (sbca), which keeps both"
            )
        return ClusterRun(
            mondrian(data, k, target_weight=options.target_weight),
            "mondrian",
            "exact",
            "strict median partitioning, cuts weighing label purity "
            f"(target weight {options.target_weight:g})",
        )
    return ClusterRun(mondrian(data, k, rule=options.rule), "mondrian", "exact", "strict median partitioning")
