"""The cluster step: arrays -> labels. One algorithm at one k over the prepared arrays,
giving a class id per pulled row (or tuple).

It reads and writes no database and no file: everything it is given, the arrays, the
statistics, the hierarchies and the background knowledge, was read by the prepare step
(:func:`sbc_sql.run.prepare.ready`), and everything it hands on is written by the publish
step; where the engine clusters in its own workers, the labels were made there and are
handed on as they are.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .. import plan as planning
from ..cluster import registry
from ..cluster.registry import ClusterRun, run_clustering
from .lines import COMPILING, Log, Progress
from .prepare import Prepared, cluster_limits


@dataclass(frozen=True, eq=False)
class Clustering:
    """One algorithm's classes at one k: the plan they are for and a class id per row
    (None: a dry run, which clusters nothing)."""

    plan: planning.Plan
    run: ClusterRun | None


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
    return Clustering(plan, run)
