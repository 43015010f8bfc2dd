"""The cluster step: arrays -> labels. One algorithm at one k over the prepared arrays,
giving a class id per pulled row (or tuple).

It reads and writes no database and no file: everything it is given, the arrays, the
statistics, the hierarchies and the background knowledge, was read by the prepare step
(:func:`sbc_sql.run.prepare.ready`), and everything it hands on is written by the publish
step; where the engine clusters in its own workers, the labels were made there and are
handed on as they are.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np

from .. import plan as planning
from ..cluster import registry
from ..cluster.model import QIData
from ..cluster.population import enforce
from ..cluster.registry import ClusterRun, run_clustering
from ..cluster.runs import share_needed, suppression_budget
from ..cluster.sensitive import REASON_CODES
from ..errors import InputError
from .lines import COMPILING, Log, Progress
from .prepare import Prepared, cluster_limits


@dataclass(frozen=True, eq=False)
class Clustering:
    """One algorithm's classes at one k: the plan they are for and a class id per row
    (None: a dry run, which clusters nothing)."""

    plan: planning.Plan
    run: ClusterRun | None


def _population(prepared: Prepared, data: QIData, run: ClusterRun, log: Log | None) -> ClusterRun:
    """The classes merged until each keeps k-map and delta-max against the population
    (:func:`sbc_sql.cluster.population.enforce`), the sensitive criteria kept by the
    partner each merge chooses."""
    asked = prepared.plan.options.population
    assert prepared.population is not None
    rule = prepared.plan.options.criteria.rule()
    keeps = None
    if rule.active and data.sensitive is not None:
        sensitive = data.sensitive
        sizes = [len(c) for c in sensitive.counts]

        def keeps(members: np.ndarray) -> bool:
            counts = [np.bincount(sensitive.codes[s][members], minlength=sizes[s]) for s in range(len(sizes))]
            return rule.ok(counts, len(members), sensitive)

    options = prepared.plan.options
    weights = data.weights_of_rows()
    left = suppression_budget(options.max_suppression, data.n_represented) - int(
        weights[run.labels < 0].sum()
    )
    enforced = enforce(
        data, run.labels, prepared.population, asked.k_map, asked.delta_max, keeps, asked.delta_min, left
    )
    if enforced.below:
        n = data.n_represented
        need = share_needed(enforced.below + int(weights[enforced.suppressed | (run.labels < 0)].sum()), n)
        raise InputError(
            f"--delta-min {asked.delta_min:g}: classes of {enforced.below:,} more row(s) match so many "
            f"rows of the population '{asked.table}' that their delta stays below it, above what "
            f"--max-suppression {options.max_suppression:g} lets go; give --max-suppression {need:g} "
            "or a lower --delta-min"
        )
    reasons = run.reasons
    if enforced.suppressed.any():
        reasons = np.zeros(len(run.labels), dtype=np.int8) if reasons is None else reasons.copy()
        reasons[enforced.suppressed] = REASON_CODES["delta_min"]
    if log is not None:
        fewest = int(enforced.matched.min()) if len(enforced.matched) else 0
        log(
            f"population '{asked.table}': {enforced.merged:,} class(es) merged for "
            f"{prepared.plan.options.population.describe()}; each class now matches at least "
            f"{fewest:,} of its rows"
            + (
                f"; {int(weights[enforced.suppressed].sum()):,} row(s) suppressed in classes below "
                f"--delta-min {asked.delta_min:g}"
                if enforced.suppressed.any()
                else ""
            )
        )
    return dataclasses.replace(run, labels=enforced.labels, reasons=reasons)


def cluster(prepared: Prepared, *, progress: Progress | None = None, log: Log | None = None) -> Clustering:
    """Cluster the prepared rows as the plan they were made ready for asks
    (:func:`sbc_sql.run.prepare.ready`)."""
    plan = prepared.plan
    if prepared.dry:
        return Clustering(plan, None)
    if prepared.workers is not None:
        return Clustering(plan, prepared.workers)
    data = prepared.data
    if data is None:
        raise RuntimeError("the prepared arrays were released; prepare the table again")
    options = plan.options
    if log is not None and registry.compiles_first(options.algorithm):
        log(COMPILING)
    t = time.perf_counter()
    run = run_clustering(
        data,
        plan.k,
        algorithm=options.algorithm,
        mode=options.mode,
        leftover=options.leftover,
        workers=options.workers,
        block_rows=options.block_rows,
        hierarchies=prepared.resolved,
        max_suppression=options.max_suppression,
        rule=options.criteria.rule(),
        background=prepared.background,
        progress=progress,
        limits=cluster_limits(plan),
        target_weight=(
            registry.DEFAULT_TARGET_WEIGHT if options.target_weight is None else options.target_weight
        ),
    )
    prepared.stage("cluster", t)
    if log is not None:
        units = ""
        if prepared.tuples is not None and prepared.n_tuples is not None:
            units = (
                f"; {prepared.n_tuples:,} distinct QI tuples standing for {prepared.stats.n_rows:,} "
                "rows (--rows clusters every row)"
            )
        log(f"clustering: {run.algorithm}, {run.mode} mode ({run.detail}){units}")
        for column, _, forced in run.rare:
            log(
                f"a value of '{column}' forces classes of at least {forced:,} rows under "
                "beta-likeness: its rows are suppressed"
            )
    if prepared.population is not None:
        t = time.perf_counter()
        run = _population(prepared, data, run, log)
        prepared.stage("cluster", t)
    return Clustering(plan, run)
