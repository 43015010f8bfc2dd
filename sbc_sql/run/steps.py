"""A run's steps, in order, as data: :data:`STEPS`, which :func:`walk` walks. Each step is
handed the run so far (:class:`Run`: what was asked, and what the steps before it made) and
hands it on with what it made: the prepared table (:class:`~.prepare.Prepared`), its
classes (:class:`~.cluster.Clustering`), then the release (:class:`~.result.Result`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .. import plan as planning
from ..engines.base import Engine
from ..hierarchies import HierarchySpec
from .cluster import Clustering, cluster
from .lines import Log, Progress
from .prepare import Prepared, prepare, ready
from .publish import publish
from .result import Result


@dataclass(frozen=True)
class Request:
    """What a run is asked: the engine it runs on, the table and the run's options, the file
    the release is exported to (None: none), and where its lines and progress go."""

    engine: Engine
    table: str
    options: planning.Options
    hierarchies: Mapping[str, HierarchySpec] | None
    out_file: str | Path | None
    log: Log
    progress: Progress | None


@dataclass(frozen=True, eq=False)
class Run:
    """A run between two steps: what was asked, and what each step made so far."""

    request: Request
    prepared: Prepared | None = None
    clustering: Clustering | None = None
    result: Result | None = None


def prepare_step(run: Run) -> Run:
    """plan -> stats -> tuples -> pull, then what the clustering reads besides (the
    hierarchy files, the user's background knowledge)."""
    asked = run.request
    prepared = prepare(asked.engine, asked.table, asked.options, hierarchies=asked.hierarchies, log=asked.log)
    try:
        return dataclasses.replace(run, prepared=ready(prepared, log=asked.log))
    except BaseException:
        prepared.close()
        raise


def cluster_step(run: Run) -> Run:
    """The prepared arrays -> a class id per row."""
    assert run.prepared is not None
    made = cluster(run.prepared, progress=run.request.progress, log=run.request.log)
    return dataclasses.replace(run, clustering=made)


def publish_step(run: Run) -> Run:
    """write -> verify -> measure -> names -> provenance -> export; the run's last use of the
    prepared arrays, which are let go before anything is written."""
    assert run.prepared is not None and run.clustering is not None
    result = publish(run.prepared, run.clustering, out_file=run.request.out_file, release_arrays=True)
    return dataclasses.replace(run, result=result)


Step = Callable[[Run], Run]

#: a run, step by step
STEPS: tuple[Step, ...] = (prepare_step, cluster_step, publish_step)


def walk(request: Request) -> Result:
    """Run ``request`` through :data:`STEPS`; the working table of distinct tuples the
    prepare step made, if any, is dropped at the end, whatever happened."""
    run = Run(request)
    try:
        for step in STEPS:
            run = step(run)
    finally:
        if run.prepared is not None:
            run.prepared.close()
    assert run.result is not None
    return run.result
