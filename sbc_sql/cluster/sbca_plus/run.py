"""The default algorithm's runner: cluster-aware SBCA exact or in blocks (the blocks'
leftovers pooled and rescued when criteria or limits are asked), or on each group of alike
background knowledge alone."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import numpy as np

from ...errors import InputError
from ..blocks import (
    BLOCK_PASSES,
    BLOCK_POOL_ROWS,
    TUPLE_BLOCK_PASSES,
    TUPLE_BLOCK_ROUNDS,
    block_bounds,
    blocked,
    check_memory,
    choose_mode,
    coarse_order,
    default_block_rows,
)
from ..limits import Limits
from ..model import QIData
from ..rescue import rescue
from ..runs import ClusterOptions, ClusterRun, Progress, locate, share_needed, suppression_budget, threads
from ..sensitive import REASON_CODES, Rule
from ..spread import order_name, spread_order
from . import compiled
from .algorithm import resplit_rounds, sbca_plus

#: where the grouping by background knowledge lives (imported when a run asks for it)
PER_GROUP = "background.run:per_group"


def block_algorithm(
    k: int,
    leftover: str = "nearest",
    rows: int | None = None,
    stop: np.ndarray | None = None,
    rule: Rule | None = None,
    limits: Limits | None = None,
    target_weight: float = 0.0,
    tuples: bool = False,
) -> Callable[..., np.ndarray]:
    """The cluster-aware SBCA as block mode runs it on each block. With ``rows`` (blocks of
    that many rows, chosen by the user) every row of a block is a candidate for each class;
    ``stop`` is the flag that stops its kernels (see :func:`.blocks.blocked`); ``rule``: the
    criteria each block's classes keep, against the whole input's shares; ``limits``: the
    per-column limits they keep; ``tuples``: the rows are distinct tuples standing for their
    rows (:data:`.blocks.TUPLE_BLOCK_PASSES`, :data:`.blocks.TUPLE_BLOCK_ROUNDS`)."""
    pool = max(BLOCK_POOL_ROWS, rows or 0)
    return functools.partial(
        sbca_plus,
        leftover=leftover,
        passes=TUPLE_BLOCK_PASSES if tuples else BLOCK_PASSES,
        rounds=resplit_rounds(k, TUPLE_BLOCK_ROUNDS) if tuples else None,
        pool=-(-pool // k),
        stop=stop,
        rule=rule,
        limits=limits,
        target_weight=target_weight,
    )


def run_sbca(data: QIData, k: int, options: ClusterOptions, progress: Progress | None) -> ClusterRun:
    if options.background is not None:
        return _sbca_per_group(data, k, options)
    # the default runs in blocks at every size (a small table is one block): on Adult its
    # blocks beat one exact block on NCP at every k and take a fifth of the time
    # streamed: the rows are here already (a caller that pulled them), so blocks
    mode = "blocks" if options.mode in ("auto", "streamed") else options.mode
    rule = options.rule if options.rule.active else None
    limits = options.limits if options.limits.active else None
    if options.mode == "auto" and rule is not None and rule.reads_input:
        # every class near the input's distribution: a block of similar rows is far from it
        # and leaves many rows to the others, so one exact block while it fits (on Adult
        # t = 0.2 costs 16 % exact, 22 % in blocks: benchmarks/results/criteria.md)
        mode = choose_mode(data.n_rows, k)
    check_memory(data, mode, options.workers)
    if mode == "exact":
        labels = sbca_plus(
            data,
            k,
            leftover=options.leftover,
            progress=progress,
            rule=rule,
            limits=limits,
            target_weight=options.target_weight,
        )
        return ClusterRun(
            labels,
            "sbca",
            "exact",
            "cluster-aware SBCA (growth, seeds far from the last class, refinement, coarse order), one block",
            reasons=_unplaced(labels, rule, limits),
        )
    size = options.block_rows or default_block_rows(k)
    stop = np.zeros(1, dtype=np.bool_)
    coarse = coarse_order(data, options.workers) if data.n_rows else None
    spread = None if coarse is None else spread_order(data, k, size, rule, coarse)
    labels = blocked(
        data,
        k,
        block_algorithm(
            k,
            options.leftover,
            options.block_rows,
            stop,
            rule,
            limits,
            options.target_weight,
            tuples=data.multiplicity is not None,
        ),
        block_size=size,
        workers=options.workers,
        progress=progress,
        categorical_by="coarse",
        stop=stop,
        cut_order=spread,
        coarse=coarse,
    )
    n_blocks = len(block_bounds(data.n_rows, k, size)) - 1
    cut = order_name(spread is not None)
    detail = (
        f"cluster-aware SBCA in {n_blocks:,} block(s) of at most {size:,} rows "
        f"of {cut}, {threads(options.workers)}, {compiled.engine()} kernels"
    )
    if rule is not None or limits is not None:
        pooled, rescued = across_blocks(
            data,
            k,
            labels,
            rule,
            limits,
            leftover=options.leftover,
            block_rows=options.block_rows,
            target_weight=options.target_weight,
            workers=options.workers,
            stop=stop,
        )
        detail += across_detail(pooled, rescued)
    return ClusterRun(labels, "sbca", "blocks", detail, reasons=_unplaced(labels, rule, limits))


#: block mode with criteria: rounds that cluster the rows the blocks left, pooled
POOLED_ROUNDS = 2


def pooled_strata(data: QIData, k: int, size: int, rule: Rule | None) -> np.ndarray | None:
    """The strata the pooled rounds cut their blocks by (:func:`.blocks.stratified_order`):
    the rows' sensitive values when a criterion compares every class with the whole input's
    distribution (t-closeness, beta-likeness), else None.

    The rows a block of QI-similar rows leaves are those of the values it holds more of than
    the input does; pooled in the coarse order again they would meet the rows left by their
    QI neighbours, with the same excess. Interleaved by value, each pooled block holds the
    values of rows left all over the table (1,000,000 synthetic rows of benchmarks/datasets.py,
    t = 0.2, k = 10: of 216,448 rows
    the blocks left, the pooled rounds placed 48,339 in the coarse order and 179,026
    interleaved, leaving 37,422 rather than 168,109 to place one by one, at the same NCP)."""
    if rule is None or not rule.reads_input or data.sensitive is None:
        return None
    return data.sensitive.strata(len(block_bounds(data.n_rows, k, size)) - 1)


def across_blocks(
    data: QIData,
    k: int,
    labels: np.ndarray,
    rule: Rule | None,
    limits: Limits | None,
    *,
    leftover: str = "nearest",
    block_rows: int | None = None,
    target_weight: float = 0.0,
    workers: int | None = None,
    stop: np.ndarray | None = None,
) -> tuple[int, int]:
    """Place the rows block mode's blocks left (in ``labels``, in place): a block's rows
    are not the input's distribution, so the rows of its over-represented values may find
    no class there (and a row at a block's edge may find no class within the per-column
    limits). Pooled over the blocks they are clustered again, in blocks of the
    same size (at most :data:`POOLED_ROUNDS` rounds, while a round places rows; cut by
    sensitive value too where the criteria compare classes with the input's distribution,
    see :func:`pooled_strata`); then each row still left joins a class of ``labels`` where
    the criteria survive (:func:`.rescue.rescue`). ``data`` is the whole table in one
    process, or a group of consecutive blocks in Spark's workers
    (:mod:`sbc_sql.engines.spark.blocks`); the new classes take the ids after the largest of
    ``labels``. Returns the rows clustered together and the rows placed in other blocks'
    classes (:func:`across_detail`)."""
    stop = np.zeros(1, dtype=np.bool_) if stop is None else stop
    size = block_rows or default_block_rows(k)
    algorithm = block_algorithm(k, leftover, block_rows, stop, rule, limits, target_weight)
    pooled = 0
    for _ in range(POOLED_ROUNDS):
        left = np.flatnonzero(labels < 0)
        if len(left) < max(k, rule.min_size if rule is not None else k):
            break
        pool = data.take(left)
        sub = blocked(
            pool,
            k,
            algorithm,
            block_size=size,
            workers=workers,
            categorical_by="coarse",
            stop=stop,
            strata=pooled_strata(pool, k, size, rule),
        )
        placed = sub >= 0
        if not placed.any():
            break
        labels[left[placed]] = sub[placed] + int(labels.max()) + 1
        pooled += int(placed.sum())
    rescued = rescue(data, labels, rule, limits)
    return pooled, rescued


def across_detail(pooled: int, rescued: int) -> str:
    """What :func:`across_blocks` did, for the run's detail line."""
    parts = [f"{pooled:,} row(s) the blocks left clustered together"] if pooled else []
    parts += [f"{rescued:,} placed in other blocks' classes"] if rescued else []
    return "".join(f"; {p}" for p in parts)


def _unplaced(labels: np.ndarray, rule: Rule | None, limits: Limits | None = None) -> np.ndarray | None:
    """With criteria or limits, the reason of every suppressed row: no class keeps them
    with it (``unplaced``; ``limits`` when only limits are asked)."""
    if rule is None and limits is None:
        return None
    reason = "unplaced" if rule is not None else "limits"
    return np.where(labels < 0, REASON_CODES[reason], 0).astype(np.int8)


def _sbca_per_group(data: QIData, k: int, options: ClusterOptions) -> ClusterRun:
    """The default on each group of alike background knowledge alone (see .background)."""
    per_group = locate(PER_GROUP)
    assert options.background is not None
    inner = dataclasses.replace(options, background=None)
    runs: list[ClusterRun] = []

    def cluster(part: QIData) -> tuple[np.ndarray, np.ndarray | None]:
        runs.append(run_sbca(part, k, inner, None))
        return runs[-1].labels, runs[-1].reasons

    labels, reasons, groups, knowledge = per_group(data, k, options.background, cluster)
    small = int((reasons == REASON_CODES["bk_small"]).sum())
    budget = suppression_budget(options.max_suppression, data.n_rows)
    if small > budget:
        need = share_needed(small, data.n_rows)
        raise InputError(
            f"{small:,} rows ({small / data.n_rows:.2%}) are in groups of alike background knowledge "
            f"of fewer than k rows, above --max-suppression {options.max_suppression:g} ({budget:,} rows): "
            f"give --max-suppression {need:g} or a larger --bk-threshold"
        )
    how = runs[0].detail if runs else "no group of k rows"
    bg = options.background
    return ClusterRun(
        labels,
        "sbca",
        runs[0].mode if runs else "exact",
        f"{how}; in each of {groups:,} group(s) of background knowledge within J={bg.threshold:g} bits "
        f"({bg.source})",
        reasons,
        knowledge=knowledge,
    )
