"""What every clustering algorithm's runner shares: the options a run gives it
(:class:`ClusterOptions`), what it returns (:class:`ClusterRun`), the suppression budget
and its checks, and the rows kept or suppressed around a runner when criteria are asked
(:func:`run_kept`).

A runner lives beside its algorithm (``sbca_plus/run.py``, ``sbca_paper.py``,
``baselines/``, ``background/run.py``); the registry names it by where it lives and
:func:`load` imports it when it runs, so an algorithm's module (k-member's brings in numba,
the background knowledge's pyarrow) loads only when chosen.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from ..errors import InputError
from .background.options import BackgroundOptions, Knowledge
from .hierarchy import Hierarchy
from .limits import Limits
from .model import SUPPRESSED, QIData
from .sensitive import REASON_CODES, Rule, rare_values

Progress = Callable[[int, int], None]

#: --target-weight when not given: total NCP + W x CM is minimized (see ClusterOptions)
DEFAULT_TARGET_WEIGHT = 0.03


@dataclass(frozen=True)
class ClusterRun:
    """What a clustering produced: a class id per row (-1 suppressed), the algorithm, the
    mode it ran in and one line saying how (the run summary prints it)."""

    labels: np.ndarray
    algorithm: str
    mode: str
    detail: str
    #: per row, why it is suppressed (a code of .sensitive.REASONS; 0 for a released row);
    #: None when the algorithm gives no reasons
    reasons: np.ndarray | None = None
    #: the sensitive values suppressed before clustering: (column, value code, class size
    #: that value forces)
    rare: tuple[tuple[str, int, int], ...] = ()
    #: the background knowledge the classes are bounded by (verified with the release)
    knowledge: Knowledge | None = None
    #: the engine clustered the rows in its own workers and keeps each row's class as this
    #: table (row_id, eq_class); ``labels`` is then empty
    table: str | None = None
    #: with ``table``: the rows suppressed per reason (REASONS' names), counted there
    suppressed: Mapping[str, int] = field(default_factory=dict)
    #: with ``table``: the classes' value sets were made beside the clustering and are kept
    #: as the table ``<table>_sets`` (stages.write.value_sets' columns)
    sets: bool = False


@dataclass(frozen=True)
class ClusterOptions:
    """The run's options an algorithm may read; each entry says which it accepts.

    ``mode`` is auto, exact or blocks; ``hierarchies`` maps a QI to its generalization
    hierarchy; ``max_suppression`` is the share of rows an algorithm may suppress;
    ``block_rows`` sizes the blocks of block mode (None: the algorithm's own size)."""

    mode: str = "auto"
    leftover: str = "nearest"
    workers: int | None = None
    hierarchies: Mapping[str, Hierarchy] = field(default_factory=dict)
    max_suppression: float = 0.01
    block_rows: int | None = None
    #: the criteria on top of k to keep on the sensitive columns (QIData.sensitive)
    rule: Rule = field(default_factory=Rule)
    #: the background-knowledge bound (see .background): read by kinc, kagg and beta-ge
    #: (None: their defaults) and by the default, which then clusters each group of alike
    #: beliefs alone (None: no bound)
    background: BackgroundOptions | None = None
    #: per-column limits on the classes' ranges and value sets (read by the default only)
    limits: Limits = field(default_factory=Limits)
    #: W, what label purity is worth against information loss: the algorithms marked
    #: ``target`` (with QIData.target given) minimize total NCP + W x CM, CM the share of rows
    #: whose target label is not their class's majority label; in a class's cost, each such
    #: row adds W x sum_q w_q (the QIs' weights), on the scale of |G| x sum_q w_q NCP_q(G)
    target_weight: float = 0.0


Runner = Callable[[QIData, int, ClusterOptions, "Progress | None"], ClusterRun]


def locate(where: str) -> Any:
    """The name at ``where``, ``module:name`` with the module under ``sbc_sql.cluster``
    (``baselines.kmember:run_kmember``), its module imported now."""
    module, name = where.split(":")
    return getattr(importlib.import_module(f"{__package__}.{module}"), name)


def load(where: str) -> Runner:
    """The runner at ``where`` (see :func:`locate`)."""
    return cast(Runner, locate(where))


def suppression_budget(share: float, n_rows: int) -> int:
    """The rows ``--max-suppression share`` lets go of ``n_rows``: the whole number under
    the share (a run's budget, and what verification allows)."""
    return int(share * n_rows)


def share_needed(count: int, n: int) -> float:
    """The --max-suppression that lets ``count`` of ``n`` rows go, rounded up to 0.001."""
    return math.ceil(count / n * 1000) / 1000


def threads(workers: int | None) -> str:
    """The workers a block run uses, in words (its detail line)."""
    return f"{workers or os.cpu_count() or 1} worker(s)"


def run_kept(
    runner: Runner,
    presuppress: bool,
    data: QIData,
    k: int,
    options: ClusterOptions,
    progress: Progress | None,
) -> ClusterRun:
    """``runner`` on the rows, its reasons completed and its suppression held to the
    budget: with ``options.rule`` active the rows of sensitive values that force huge
    classes are suppressed first (when ``presuppress``), the runner clusters the rest."""
    rule = options.rule
    if not rule.active:
        run = runner(data, k, options, progress)
        if options.limits.active:
            run = dataclasses.replace(run, reasons=reasons_of(run, data.n_rows, "limits"))
            check_limits_budget(run, data, k, options)
        return run
    if data.sensitive is None:
        raise ValueError("criteria on sensitive values need QIData.sensitive")
    n = data.n_rows
    budget = suppression_budget(options.max_suppression, n)
    rare = np.zeros(n, dtype=bool)
    chosen: list[tuple[str, int, int]] = []
    if presuppress:
        rare, chosen = rare_values(rule, data.sensitive, k, budget)
    if not rare.any():
        run = runner(data, k, options, progress)
        run = dataclasses.replace(run, reasons=reasons_of(run, n), rare=tuple(chosen))
        if not options.limits.active:
            run = rejoin_unplaced(run, data, rule, budget)
        check_budget(run, data, rule, budget, options.max_suppression)
        return run
    keep = np.nonzero(~rare)[0]
    inner = dataclasses.replace(
        options, max_suppression=max(0.0, (budget - int(rare.sum())) / max(len(keep), 1))
    )
    run = runner(data.take(keep), k, inner, progress)
    labels = np.full(n, SUPPRESSED, dtype=np.int64)
    labels[keep] = run.labels
    reasons = np.full(n, REASON_CODES["rare_value"], dtype=np.int8)
    reasons[keep] = reasons_of(run, len(keep))
    knowledge = None if run.knowledge is None else run.knowledge.expanded(keep, n)
    run = dataclasses.replace(run, labels=labels, reasons=reasons, rare=tuple(chosen), knowledge=knowledge)
    check_budget(run, data, rule, budget, options.max_suppression)
    return run


def rejoin_unplaced(run: ClusterRun, data: QIData, rule: Rule, budget: int) -> ClusterRun:
    """The last resort when more rows are left unplaced than the budget allows, and the whole
    input keeps the criteria: those rows join a class, which takes in the smallest other
    classes one at a time until it keeps every criterion again. Every criterion holds on the
    whole input, so this ends, at the latest with one class; a run that placed its rows
    within the budget is left as it is. Each step adds one class's value counts: linear in
    the rows and the classes."""
    labels, reasons, sens = run.labels, run.reasons, data.sensitive
    if run.table is not None or run.knowledge is not None or reasons is None or sens is None:
        return run
    unplaced = reasons == REASON_CODES["unplaced"]
    if int((labels < 0).sum()) <= budget or not unplaced.any():
        return run
    whole = [c.astype(np.int64) for c in sens.counts]
    if not rule.ok(whole, data.n_rows, sens):
        return run
    placed = labels >= 0
    if not placed.any():
        return run
    n_classes = int(labels[placed].max()) + 1
    sizes = np.bincount(labels[placed], minlength=n_classes)
    per_class = [sens.class_counts(s, labels, n_classes) for s in range(sens.n_columns)]
    counts = [
        np.bincount(sens.codes[s][unplaced], minlength=len(sens.counts[s])) for s in range(sens.n_columns)
    ]
    size = int(unplaced.sum())
    order = [int(c) for c in np.argsort(sizes, kind="stable") if sizes[c] > 0]
    joined: list[int] = []
    for c in order:
        joined.append(c)
        size += int(sizes[c])
        counts = [counts[s] + per_class[s][c] for s in range(sens.n_columns)]
        if rule.ok(counts, size, sens):
            into = joined[0]
            merged = labels.copy()
            merged[unplaced | np.isin(labels, joined)] = into
            # the class ids stay 0 .. classes - 1, in their order
            ids = np.unique(merged[merged >= 0])
            merged[merged >= 0] = np.searchsorted(ids, merged[merged >= 0])
            kept = reasons.copy()
            kept[unplaced] = 0
            return dataclasses.replace(run, labels=merged, reasons=kept)
    return run


def check_counted(count: int, n: int, k: int, rule: Rule | None, limits: Limits | None, share: float) -> None:
    """:func:`check_budget` (criteria) or :func:`check_limits_budget` (limits alone) from
    the count of rows suppressed alone, where the rows are not here (an engine's workers
    clustered them)."""
    budget = suppression_budget(share, n)
    if count <= budget:
        return
    need = share_needed(count, n)
    if rule is None or not rule.active:
        if limits is None:
            return
        raise _limits_error(count, n, k, limits, share, budget, need)
    hint = f"give --max-suppression {need:g}"
    beta = rule.find("beta")
    if beta is not None:
        hint += f" or --beta-likeness {beta.threshold * 2:g}"
    raise InputError(
        f"{count:,} rows ({count / n:.2%}) cannot be placed in classes that keep {rule.describe()}, "
        f"above --max-suppression {share:g} ({budget:,} rows): {hint}"
    )


def check_budget(run: ClusterRun, data: QIData, rule: Rule, budget: int, share: float) -> None:
    """More rows suppressed than ``--max-suppression`` allows is an error naming the value
    most of them hold (by its column and frequency rank, never the value itself), the class
    size it forces, and a budget or beta that would do."""
    suppressed = run.labels < 0
    count = int(suppressed.sum())
    if count <= budget:
        return
    assert data.sensitive is not None
    sens = data.sensitive
    n = data.n_rows
    beta = rule.find("beta")
    worst = ""
    for s in range(sens.n_columns):
        codes = sens.codes[s][suppressed]
        if not len(codes):
            continue
        v = int(np.bincount(codes).argmax())
        order = np.argsort(-sens.counts[s], kind="stable")
        rank = int(np.nonzero(order == v)[0][0]) + 1
        forced = rule.forced_size(sens.shares(s))[v]
        worst = (
            f"; most hold the {_ordinal(rank)} most frequent value of '{sens.names[s]}' "
            f"({int(sens.counts[s][v]):,} rows in the input"
            + (f", which forces classes of at least {int(forced):,} rows" if beta is not None else "")
            + ")"
        )
        break
    need = share_needed(count, n)
    hint = f"give --max-suppression {need:g}"
    if beta is not None:
        hint += f" or --beta-likeness {beta.threshold * 2:g}"
    if run.reasons is not None and np.isin(run.reasons, _GROUPED).any():
        # larger groups of alike background knowledge: fewer under k, fewer skewed
        hint += " or a larger --bk-threshold"
    raise InputError(
        f"{count:,} rows ({count / n:.2%}) cannot be placed in classes that keep {rule.describe()}, "
        f"above --max-suppression {share:g} ({budget:,} rows){worst}: {hint}"
    )


#: the reasons of rows left out by their group of background knowledge
_GROUPED = [REASON_CODES["bk_small"], REASON_CODES["lemma2"]]


def describe_limits(limits: Limits) -> str:
    """The limits as the flags give them: ``--max-width age=5 --max-values education=2``."""
    parts = []
    if limits.width:
        parts.append("--max-width " + ",".join(f"{n}={limits.given_width(n):g}" for n in limits.width))
    if limits.values:
        parts.append("--max-values " + ",".join(f"{n}={v}" for n, v in limits.values.items()))
    return " ".join(parts)


def check_limits_budget(run: ClusterRun, data: QIData, k: int, options: ClusterOptions) -> None:
    """More rows left out by the limits than ``--max-suppression`` allows is an error: the
    limits cannot hold on this table at this k."""
    n = data.n_rows
    count = int((run.labels < 0).sum())
    budget = suppression_budget(options.max_suppression, n)
    if count <= budget:
        return
    need = share_needed(count, n)
    raise _limits_error(count, n, k, options.limits, options.max_suppression, budget, need)


def _limits_error(
    count: int, n: int, k: int, limits: Limits, share: float, budget: int, need: float
) -> InputError:
    return InputError(
        f"{count:,} rows ({count / n:.2%}) fit no class of k={k} rows within "
        f"{describe_limits(limits)}, "
        f"above --max-suppression {share:g} ({budget:,} rows): give wider limits, "
        f"a smaller k or --max-suppression {need:g}"
    )


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def reasons_of(run: ClusterRun, n: int, reason: str = "unplaced") -> np.ndarray:
    """The run's reasons per row, ``reason`` for a suppressed row it gave none for."""
    if run.reasons is not None:
        return run.reasons.astype(np.int8, copy=False)
    return np.where(run.labels < 0, REASON_CODES[reason], 0).astype(np.int8)
