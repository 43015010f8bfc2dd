"""The background-knowledge algorithms as the registry runs them.

``kinc``, ``kagg`` and ``beta-ge``: phase 1 (:mod:`.phase1`) on the estimated or given
background knowledge, then phase 2 on each group, then (by default) the rescue of the rows
phase 2 left out. Every class is of one group, so its members' beliefs are within J; the
rows not released carry a reason (``bk_small``, ``lemma2``, ``kagg_left``, ``kinc_left``).
:func:`per_group` serves the default algorithm: its classes stay inside the groups.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...errors import InputError
from ..model import SUPPRESSED, QIData
from ..runs import ClusterOptions, ClusterRun, Progress, Runner
from ..sensitive import REASON_CODES, Rule
from .knowledge import estimate, sensitive_column
from .likeness import Likeness
from .options import BackgroundOptions, Knowledge
from .phase1 import Phase1, phase1
from .space import Space

#: each algorithm's reason for the rows its post-processing leaves
LEFT_REASON = {"kinc": "kinc_left", "kagg": "kagg_left", "beta-ge": "lemma2"}


def group_rows(data: QIData, options: BackgroundOptions, k: int) -> Phase1:
    """Phase 1 on ``data`` with the options' knowledge and threshold."""
    beliefs, key = estimate(data, options)
    return phase1(beliefs, key, data.position, options.threshold, k)


def _hilbert(data: QIData) -> np.ndarray:
    from ..blocks import curve_keys

    nums = [q for q in range(data.n_qis) if data.numeric[q] and data.weights[q] != 0 and data.span(q) > 0]
    cats = [
        q
        for q in range(data.n_qis)
        if not data.numeric[q] and data.weights[q] != 0 and data.cardinality[q] > 1
    ]
    if not data.n_rows or not (nums or cats):
        return np.zeros(data.n_rows, dtype=np.uint64)
    # categorical axes in value order, as the values' codes are
    return curve_keys(data, nums, cats, categorical_by="code")


def knowledge_of(groups: Phase1, options: BackgroundOptions) -> Knowledge:
    """The beliefs phase 1 grouped the rows by, for verification."""
    assert groups.beliefs is not None and groups.belief is not None
    return Knowledge(groups.belief, groups.beliefs, options.threshold)


def background_run(
    algorithm: str, data: QIData, k: int, rule: Rule, options: BackgroundOptions
) -> tuple[np.ndarray, np.ndarray, str, Knowledge]:
    """(labels, reasons, one line of detail, the knowledge) of one of the three algorithms."""
    if rule.asked() - {"beta"}:
        raise InputError(f"--algorithm {algorithm} keeps beta-likeness only, not l-diversity or t-closeness")
    if "beta" not in rule.asked():
        raise InputError(
            f"--algorithm {algorithm} needs --beta-likeness (its classes keep beta-likeness "
            "besides k and the background-knowledge bound)"
        )
    codes, m = sensitive_column(data)
    assert data.sensitive is not None
    like = Likeness(rule, data.sensitive)
    n = data.n_rows
    groups = group_rows(data, options, k)
    labels = np.full(n, SUPPRESSED, dtype=np.int64)
    reasons = np.zeros(n, dtype=np.int8)
    reasons[groups.small] = REASON_CODES["bk_small"]
    keys = _hilbert(data) if algorithm == "beta-ge" else None
    rng = np.random.default_rng(options.seed)
    phase2 = _phase2(algorithm, k, like, options, keys, rng)
    next_class = 0
    for rows in groups.groups:
        space = Space(data, rows, codes, m)
        classes, left = phase2(space)
        if options.rescue and algorithm != "beta-ge":
            from .rescue import rescue

            classes, left = rescue(space, classes, left, like)
        for c in classes:
            labels[rows[c]] = next_class
            next_class += 1
        reasons[rows[left]] = REASON_CODES[LEFT_REASON[algorithm]]
    removed = int((labels < 0).sum())
    detail = (
        f"{algorithm}: background knowledge from {options.source}, J={options.threshold:g} bits, "
        f"{len(groups.groups):,} group(s) of {groups.distinct:,} distinct belief(s)"
        + (" (chunked)" if groups.approximate else "")
        + f", {next_class:,} class(es), {removed:,} row(s) not released"
    )
    return labels, reasons, detail, knowledge_of(groups, options)


def _phase2(
    algorithm: str,
    k: int,
    like: Likeness,
    options: BackgroundOptions,
    keys: np.ndarray | None,
    rng: np.random.Generator,
) -> Callable[[Space], tuple[list[np.ndarray], np.ndarray]]:
    if algorithm == "beta-ge":
        from .beta_ge import beta_ge

        assert keys is not None
        return lambda space: beta_ge(space, keys[space.rows], k, like, rng)
    from .kprimacy import k_primacy

    if algorithm == "kagg":
        from .kagg import k_agg

        def agg(space: Space) -> tuple[list[np.ndarray], np.ndarray]:
            classes, free = k_primacy(space, k, like, options.rare_aware)
            more, left = k_agg(space, free, like)
            return classes + more, left

        return agg
    from .kinc import k_inc

    def inc(space: Space) -> tuple[list[np.ndarray], np.ndarray]:
        classes, free = k_primacy(space, k, like, options.rare_aware)
        more, left = k_inc(space, free, k, like, options.rare_aware)
        return classes + more, left

    return inc


def per_group(
    data: QIData,
    k: int,
    options: BackgroundOptions,
    cluster: Callable[[QIData], tuple[np.ndarray, np.ndarray | None]],
) -> tuple[np.ndarray, np.ndarray, int, Knowledge]:
    """(labels, reasons, groups, the knowledge) of ``cluster`` run on each phase-1 group
    alone: its classes never mix rows whose beliefs are more than J apart."""
    groups = group_rows(data, options, k)
    n = data.n_rows
    labels = np.full(n, SUPPRESSED, dtype=np.int64)
    reasons = np.zeros(n, dtype=np.int8)
    reasons[groups.small] = REASON_CODES["bk_small"]
    offset = 0
    for rows in groups.groups:
        sub, why = cluster(data.take(rows))
        kept = sub >= 0
        labels[rows[kept]] = sub[kept] + offset
        if why is not None:
            reasons[rows] = why
        else:
            reasons[rows[~kept]] = REASON_CODES["unplaced"]
        offset += int(sub.max(initial=-1)) + 1
    return labels, reasons, len(groups.groups), knowledge_of(groups, options)


def _runner(name: str) -> Runner:
    """The background-knowledge algorithm ``name`` as the registry runs it."""

    def run(data: QIData, k: int, options: ClusterOptions, progress: Progress | None) -> ClusterRun:
        labels, reasons, detail, knowledge = background_run(
            name, data, k, options.rule, options.background or BackgroundOptions()
        )
        return ClusterRun(labels, name, "exact", detail, reasons, knowledge=knowledge)

    return run


run_kinc = _runner("kinc")
run_kagg = _runner("kagg")
run_beta_ge = _runner("beta-ge")
