"""The publish step: write -> verify -> measure -> names -> provenance -> export, in one
transaction, from the labels the cluster step handed on.

The labels are uploaded (or, clustered as tuples, joined to the rows in the engine), the
row and class tables are built under temporary names, verified in SQL (k, the criteria,
the per-column limits and the background-knowledge bound, :mod:`sbc_sql.stages.verify`)
and measured; only then are they renamed to the release's names, its views created and
its provenance written on them, and the release exported to its file. A failure or an
interruption rolls everything back.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import secrets
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from .. import arrays, provenance
from .. import plan as planning
from ..engines.base import Engine, drop_table_sql
from ..errors import VerificationError
from ..model import ledger_objects_of
from ..privacy.base import PrivacyModel
from ..privacy.criteria import models as criteria_models
from ..stages import ledger, measure, pull, stats, stream, verify, write
from ..stages import population as population_stage
from . import provenance as run_provenance
from .cluster import Clustering
from .prepare import Prepared
from .result import Result


def publish(
    prepared: Prepared,
    clustering: Clustering,
    *,
    out_file: str | Path | None = None,
    commit: bool = True,
    release_arrays: bool = False,
) -> Result:
    """Write, verify and measure the release of ``clustering`` in one transaction, then give
    it its names: the row and class tables are built under temporary names and renamed, and
    the views created, only once verification has passed; a failure or an interruption rolls
    everything back. Under --replace the release's existing names are dropped first.

    ``commit=False`` is a trial: written, verified and measured, then rolled back (its
    working tables dropped first, for an engine without transactional DDL); the Result
    holds the measures and ``written`` is False.

    The release's names were checked when its plan was made (:func:`sbc_sql.run.prepare.prepare`,
    :meth:`~sbc_sql.run.prepare.Prepared.plan_for`). ``release_arrays``: the last
    clustering of the prepared arrays, which are let go once the value sets are made, before
    anything is written."""
    engine, plan, st = prepared.engine, clustering.plan, prepared.stats
    timings = prepared.timings
    made = _value_sets(prepared, clustering)
    if release_arrays:
        prepared.release_arrays()
    # what exists of the release's names: dropped first under --replace
    taken = engine.object_kinds(plan.release_objects)
    in_engine = clustering.run.table if clustering.run is not None else None
    labels_name = in_engine or f"sbc_labels_{secrets.token_hex(4)}"
    temp_name = f"sbc_tmp_{plan.output}_{secrets.token_hex(4)}"  # + _rows, _classes
    layout = measure.Layout(plan.qis, plan.verbatim, plan.weights)
    source = plan.source.name
    rows_tmp, classes_tmp = f"{temp_name}_rows", f"{temp_name}_classes"
    # the source joined to the labels once: the write and the verification read it
    labelled = f"{temp_name}_labelled"
    # each class's population matches, for k-map and delta-presence (--population)
    figures_tmp = f"{temp_name}_population"
    row_id = engine.row_id("s")
    measures = verdict = None
    criteria = plan.options.criteria
    models = criteria_models(plan.k, criteria, plan.sensitive if criteria.asked else ())
    limits = verify.limits_of(plan.qis, plan.options.max_width, plan.options.max_values)
    achieved: dict[str, float] = {}
    export_tmp = f"{out_file}.sbc-partial" if out_file else None

    try:
        with (
            _labels(prepared, clustering, labels_name),
            verify.working_tables(
                engine, labelled, *([figures_tmp] if plan.options.population.asked else [])
            ),
            engine.transaction(),
        ):
            t = time.perf_counter()
            if plan.options.replace:
                for tree in write.drop_release_sql(taken, plan.release_objects):
                    engine.execute(tree)
                # an incremental release's ledger goes with it, whatever this run keeps
                ledger_names = [n for n in ledger_objects_of(plan.output) if n not in plan.release_objects]
                for tree in write.drop_release_sql(engine.object_kinds(ledger_names), ledger_names):
                    engine.execute(tree)
            # a run that clustered tuples builds its classes from the tuples and their labels
            tuples = (
                None if prepared.tuples is None else (prepared.tuples, uploaded_tuple_labels(labels_name))
            )
            classes_from, classes_labels = tuples or (None, labels_name)
            engine.execute(verify.labelled_sql(layout, source, labels_name, labelled, row_id, tuples))
            # the value sets made here, or, in a dry run, those a real run would make
            beside = (
                made is not None
                or (clustering.run is not None and clustering.run.sets)
                or (engine.dry and write.sets_beside(plan, engine.capabilities.value_sets))
            )
            sets = stream.sets_name(labels_name) if beside else None
            with contextlib.ExitStack() as uploaded:
                if sets is not None and made is not None:
                    uploaded.enter_context(engine.upload(sets, made))
                if write.microaggregated(plan):
                    for tree in write.create_classes_micro_sql(
                        plan, classes_tmp, labels_name, row_id, engine.column_type, labelled
                    ):
                        engine.execute(tree)
                else:
                    engine.execute(
                        write.create_classes_sql(
                            plan,
                            classes_tmp,
                            classes_labels,
                            row_id,
                            classes_from,
                            sets,
                            engine.list_type,
                            labelled,
                        )
                    )
            if made is not None:
                made = None
                # Arrow's allocator keeps what it freed for reuse: give the lists' memory
                # back before the statements that read the source again
                pa.default_memory_pool().release_unused()
            engine.execute(write.create_rows_sql(plan, rows_tmp, labels_name, row_id, labelled))
            prepared.stage("write", t)

            t = time.perf_counter()
            if engine.dry:
                for tree in verify.label_checks_sql(
                    layout, source, labels_name, rows_tmp, classes_tmp, row_id, models, tuples, labelled
                ):
                    engine.show(tree)
                if write.microaggregated(plan):
                    rows = write.labelled_rows_sql(labelled, [c.name for c in plan.qis])
                    for tree in verify.aggregate_checks_sql(layout, classes_tmp, rows, engine.column_type):
                        engine.show(tree)
                if limits:
                    engine.show(verify.limits_sql(limits, classes_tmp))
            else:
                # k-map and delta-presence read the classes just written, which the join
                # keys they are matched to the population on are counted from
                models = (
                    *models,
                    *population_stage.models(
                        engine, plan.options.population, plan.qis, rows_tmp, classes_tmp, figures_tmp
                    ),
                )
                verdict = verify.verify_with_labels(
                    engine,
                    layout,
                    source,
                    labels_name,
                    rows_tmp,
                    classes_tmp,
                    plan.k,
                    models,
                    limits,
                    tuples,
                    labelled,
                )
                if not verdict.ok:
                    raise VerificationError(
                        "release failed verification, nothing was written: " + "; ".join(verdict.problems)
                    )
                achieved = _achieved(engine, models[1:], rows_tmp, source)
                knowledge = clustering.run.knowledge if clustering.run else None
                if knowledge is not None:
                    problems, diameter = verify.js_problems(engine, labels_name, knowledge.threshold)
                    if problems:
                        raise VerificationError(
                            "release failed verification, nothing was written: " + "; ".join(problems)
                        )
                    achieved["js_diameter"] = diameter
            prepared.stage("verify", t)

            t = time.perf_counter()
            ranges, cards = known_domains(plan, st)
            size = planning.CLASS_SIZE
            if write.microaggregated(plan):
                measures = _measure_micro(
                    prepared, plan, labels_name, row_id, labelled, classes_tmp, temp_name
                )
            elif engine.dry:
                for tree in measure.measure_sql(layout, source, classes_tmp, ranges, size, cards):
                    engine.show(tree)
            else:
                measures = measure.measure_tables(engine, layout, source, classes_tmp, ranges, size, cards)
            prepared.stage("measure", t)
            if not commit:
                trial = [rows_tmp, classes_tmp]
                for tree in write.drop_release_sql(engine.object_kinds(trial), trial):
                    engine.execute(tree)
                raise _Trial

            t = time.perf_counter()
            versions = _ledger(engine, plan, labels_name, row_id, rows_tmp, classes_tmp, verdict)
            for old, new in ((rows_tmp, plan.rows_table), (classes_tmp, plan.classes_table)):
                engine.execute(engine.rename_table(old, new))
            engine.execute(
                write.create_release_view_sql(plan, plan.output, plan.rows_table, plan.classes_table)
            )
            engine.execute(write.create_view_sql(plan, plan.view, plan.output))
            doc = run_provenance.document(prepared, clustering, verdict, measures, models, achieved)
            if versions is not None:
                doc.update(versions)
            text = provenance.to_json(doc)
            for tree in write.comment_release_sql(plan, text):
                engine.execute(tree)
            if export_tmp:
                fmt = planning.export_format(str(out_file))
                # CSV has no lists: it holds the text view ('25-40', 'F|M'), the others the release
                exported = plan.view if fmt == "csv" else plan.output
                engine.execute(engine.export_sql(exported, export_tmp, fmt, provenance=text))
            prepared.stage("write", t)
            t = time.perf_counter()
        # the commit is part of the write: an engine without transactional DDL writes the
        # release's files or tables there
        prepared.stage("write", t)
        if export_tmp and not engine.dry:
            os.replace(export_tmp, out_file)  # type: ignore[arg-type]
    except _Trial:
        pass
    except BaseException:
        if export_tmp and os.path.exists(export_tmp):
            os.remove(export_tmp)
        raise
    mode = clustering.run.mode if clustering.run else ""
    bound: dict[str, object] = {}
    if engine.dry:
        # what a real run binds to the parameters of the statements a dry run only shows
        for model in models:
            bound.update(model.params())
        bound.update(verify.limits_params(limits))
        bound.update(measure.ncp_params(layout, known_domains(plan, st)[0]))
    return Result(
        engine,
        plan.output,
        plan.view,
        plan,
        measures,
        verdict,
        mode,
        dict(timings),
        written=commit and not engine.dry,
        exported=Path(out_file) if out_file and commit and not engine.dry else None,
        criteria=criteria if criteria.asked else None,
        achieved=achieved,
        suppressed_by=run_provenance.suppressed_by(clustering.run),
        tuples=prepared.n_tuples if prepared.tuples is not None else None,
        bound=bound,
        labels=labels_name if engine.dry else None,
    )


def _ledger(
    engine: Engine,
    plan: planning.Plan,
    labels: str,
    row_id: Any,
    rows: str,
    classes: str,
    verdict: verify.Verdict | None,
) -> dict[str, Any] | None:
    """A release made incremental: its ledger of released rows and its pending rows
    (:mod:`sbc_sql.stages.ledger`), its rows numbered version 1, and what its provenance
    records of them (None: not incremental)."""
    if not plan.options.incremental:
        return None
    seen, pending = ledger_objects_of(plan.output)
    source = plan.source.name
    held = [c.name for c in ledger.fingerprinted(plan.columns)]
    engine.execute(ledger.seen_sql(seen, write.labelled_join_sql(source, labels, row_id, held), plan.columns))
    engine.execute(ledger.pending_table_sql(pending))
    engine.execute(ledger.pending_sql(pending, source, seen, plan.columns), {"reason": ledger.SUPPRESSED})
    engine.execute(ledger.add_version_sql(rows))
    digest = None
    if not engine.dry:
        digest = ledger.digests(engine, rows, classes, plan.columns, 1, 1)[1]
    facts = verdict.facts if verdict is not None else {}
    return {
        "ledger": {"seen": seen, "pending": pending},
        "versions": [
            {
                "version": 1,
                "parent": None,
                "rows_added": facts.get("released"),
                "placed_in_existing": 0,
                "classes_added": facts.get("classes"),
                "pending": facts.get("suppressed"),
                "digest": digest,
            }
        ],
    }


def _measure_micro(
    prepared: Prepared,
    plan: planning.Plan,
    labels: str,
    row_id: Any,
    labelled: str,
    classes: str,
    temp_name: str,
) -> measure.Measures | None:
    """A microaggregated release's measures: NCP of its clustering as if generalized (the
    ranges and value sets its classes span, built beside it under a temporary name and
    dropped: the release does not publish them), with the release's own SSE and IL1s on
    its numeric QIs (:func:`sbc_sql.stages.measure.micro_loss`). A dry run shows the
    statements."""
    engine, st = prepared.engine, prepared.stats
    ranges, cards = known_domains(plan, st)
    general = plan.generalized()
    spans = f"{temp_name}_spans"
    g_layout = measure.Layout(general.qis, general.verbatim, general.weights)
    layout = measure.Layout(plan.qis, plan.verbatim, plan.weights)
    make = write.create_classes_sql(general, spans, labels, row_id, labelled=labelled)
    rows = write.labelled_rows_sql(labelled, [c.name for c in plan.qis])
    loss_query = measure.micro_loss_sql(layout, plan.source.name, classes, rows)
    size = planning.CLASS_SIZE
    if engine.dry:
        engine.show(make)
        for tree in measure.measure_sql(g_layout, plan.source.name, spans, ranges, size, cards):
            engine.show(tree)
        if loss_query is not None:
            engine.show(loss_query)
        return None
    engine.execute(make)
    try:
        found = measure.measure_tables(engine, g_layout, plan.source.name, spans, ranges, size, cards)
    finally:
        engine.execute(drop_table_sql(spans))
    loss = measure.micro_loss(engine, layout, plan.source.name, classes, rows)
    if loss is None:
        return found
    sse, il1s, per = loss
    return dataclasses.replace(found, sse=sse, il1s=il1s, loss=per)


class _Trial(Exception):
    """Raised inside a trial's transaction (publish with commit=False) to roll it back."""


def _achieved(engine: Engine, models: Sequence[PrivacyModel], rows: str, source: str) -> dict[str, float]:
    """What the release achieves of each criterion: each model's figures, the worst over
    the sensitive columns (the fewest values, the largest distance or gain)."""
    out: dict[str, float] = {}
    for m in models:
        for name, value in m.measure(engine, rows, source).items():
            v = float(value or 0)
            worse = min if name.endswith("l_diversity") else max
            out[name] = worse(out[name], v) if name in out else v
    return out


@contextlib.contextmanager
def _labels(prepared: Prepared, clustering: Clustering, name: str) -> Iterator[None]:
    """The class labels uploaded under ``name`` for the statements that join them; a dry run
    uploads nothing (its statements only name the labels). With background knowledge, each
    row's belief too, and the beliefs under ``<name>_beliefs`` (see
    :func:`sbc_sql.stages.verify.js_problems`). The uploads are the stage 'upload' of the
    run's seconds: with the pull, the rows moved between the database and Python."""
    run, row_id = clustering.run, prepared.row_id
    if run is not None and run.table is not None:
        # clustered in the engine's workers, or streamed: the labels (and the value sets
        # made beside them) are there already, dropped after
        try:
            yield
        finally:
            prepared.engine.discard(run.table)
            if run.sets:
                prepared.engine.discard(stream.sets_name(run.table))
        return
    if prepared.tuples is not None:
        with _tuple_labels(prepared, clustering, name):
            yield
        return
    if run is None or row_id is None:
        yield
        return
    t = time.perf_counter()
    columns = {
        "row_id": row_id.astype(np.int64, copy=False),
        "eq_class": run.labels.astype(np.int64, copy=False),
    }
    with contextlib.ExitStack() as stack:
        if run.knowledge is not None:
            kn = run.knowledge
            columns["belief"] = kn.belief.astype(np.int64, copy=False)
            v, m = kn.beliefs.shape
            beliefs = arrays.table(
                {
                    "belief": np.repeat(np.arange(v, dtype=np.int64), m),
                    "value": np.tile(np.arange(m, dtype=np.int64), v),
                    "p": np.ascontiguousarray(kn.beliefs, dtype=np.float64).ravel(),
                }
            )
            stack.enter_context(prepared.engine.upload(f"{name}_beliefs", beliefs))
        stack.enter_context(prepared.engine.upload(name, arrays.table(columns)))
        prepared.stage("upload", t)
        yield


def uploaded_tuple_labels(labels: str) -> str:
    """The name the tuples' own labels are uploaded under, beside the row labels ``labels``
    of a run that clustered tuples (publish builds the class table from them)."""
    return f"{labels}_tuples"


@contextlib.contextmanager
def _tuple_labels(prepared: Prepared, clustering: Clustering, name: str) -> Iterator[None]:
    """The row labels under ``name`` of a run that clustered tuples: the tuples' labels
    uploaded, then joined to the rows on the tuple in the engine (a temporary table, dropped
    after)."""
    engine, run, plan = prepared.engine, clustering.run, clustering.plan
    assert prepared.tuples is not None
    uploaded = uploaded_tuple_labels(name)
    t = time.perf_counter()
    with contextlib.ExitStack() as stack:
        if run is not None and prepared.row_id is not None:
            columns = {
                "row_id": prepared.row_id.astype(np.int64, copy=False),
                "eq_class": run.labels.astype(np.int64, copy=False),
            }
            stack.enter_context(engine.upload(uploaded, arrays.table(columns)))
        try:
            engine.execute(
                pull.tuple_labels_sql(
                    plan, name, prepared.tuples, uploaded, engine.row_id("s"), engine.row_id("t")
                )
            )
            prepared.stage("upload", t)
            yield
        finally:
            engine.discard(name)  # a dry run lists it


def known_domains(
    plan: planning.Plan, st: stats.Stats
) -> tuple[dict[str, tuple[float, float]], dict[str, int]]:
    """The input's numeric ranges and categorical cardinalities from the statistics stage, so
    that measuring does not aggregate the source again (a column without a finite range is
    left to SQL)."""
    ranges = {
        c.name: (st.lo[c.name], st.hi[c.name])
        for c in plan.numeric_qis
        if math.isfinite(st.lo[c.name]) and math.isfinite(st.hi[c.name])
    }
    cards = {c.name: st.cardinality(c.name) for c in plan.categorical_qis}
    return ranges, cards


def _value_sets(prepared: Prepared, clustering: Clustering) -> pa.Table | None:
    """The classes' value sets made in this process from the pulled arrays and the labels
    (write.value_sets), where this release's sets are made beside the clustering
    (write.sets_beside); None: the class table's statement aggregates them (a dry run,
    labels made in the engine's workers, or arrays let go)."""
    run, data, plan = clustering.run, prepared.data, clustering.plan
    if run is None or run.table is not None or data is None:
        return None
    if not write.sets_beside(plan, prepared.engine.capabilities.value_sets):
        return None
    # generalizing is writing: its seconds are the write's
    t = time.perf_counter()
    sets = write.value_sets(data, run.labels, prepared.stats.domains, plan)
    prepared.stage("write", t)
    return sets
