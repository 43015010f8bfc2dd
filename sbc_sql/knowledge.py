"""The run's background-knowledge options for the clustering, with the user's knowledge
(``--bk NAME``: a table, or a CSV or Parquet file) read and matched to the pulled rows.

The knowledge table is keyed by QI values and the rows arrive as codes, so the rows' QI
values and sensitive values are read once more from the source, by row id; the sensitive
values are put in code order the way the pull does (distinct values sorted, NULL last).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
from sqlglot import exp

from .cluster.background.knowledge import from_table
from .cluster.background.options import BackgroundOptions, UserKnowledge
from .cluster.model import QIData
from .engines.base import Engine
from .engines.paths import looks_like_file
from .errors import InputError
from .plan import Plan
from .sql.templates import col, ident


def background_options(engine: Engine, plan: Plan, data: QIData) -> BackgroundOptions | None:
    """The clustering's background options: None when the run neither asks for them nor
    runs an algorithm that needs them."""
    from .cluster import registry

    bg = plan.options.background
    chosen = registry.get(plan.options.algorithm)
    if not bg.asked and not (chosen.background and chosen.requires):
        return None
    knowledge = None
    if bg.table is not None:
        knowledge = read_knowledge(engine, plan, bg.table, data)
    return BackgroundOptions(
        threshold=bg.threshold if bg.threshold is not None else BackgroundOptions.threshold,
        estimator=bg.estimator or BackgroundOptions.estimator,
        knowledge=knowledge,
        seed=bg.seed if bg.seed is not None else BackgroundOptions.seed,
    )


def read_table(engine: Engine, name: str) -> pa.Table:
    """The knowledge table: a CSV or Parquet file, or a table of the database."""
    if looks_like_file(name):
        path = Path(name)
        if not path.is_file():
            raise InputError(
                f"--bk file '{name}' does not exist; pass a CSV or Parquet file, or a table name"
            )
        reader = "read_parquet" if name.lower().endswith((".parquet", ".pq")) else "read_csv"
        source: exp.Func | exp.Table = exp.func(reader, exp.Literal.string(str(path)))
    else:
        if not engine.table_exists(name):
            raise InputError(
                f"--bk table '{name}' does not exist; pass a table name, or a CSV or Parquet file"
            )
        source = exp.Table(this=ident(name))
    with engine.driver_call(f"reading the background knowledge '{name}'"):
        return engine.fetch_arrow(exp.select("*").from_(source))


def read_knowledge(engine: Engine, plan: Plan, name: str, data: QIData) -> UserKnowledge:
    """The user's knowledge matched to the rows of ``data`` (by their row ids)."""
    import pyarrow.compute as pc

    table = read_table(engine, name)
    (sensitive,) = plan.sensitive
    columns = [c.name for c in plan.qis]
    query = exp.select(
        exp.alias_(engine.row_id("s"), "sbc_row_id"),
        *[col(c, "s") for c in columns],
        exp.alias_(col(sensitive.name, "s"), "sbc_sensitive"),
    ).from_(exp.Table(this=ident(plan.source.name), alias=exp.TableAlias(this=exp.to_identifier("s"))))
    with engine.driver_call("reading the rows' QI values for the background knowledge"):
        rows = engine.fetch_arrow(query)
    row_id = rows.column("sbc_row_id").to_numpy()
    at = np.searchsorted(row_id, data.position, sorter=np.argsort(row_id))
    order = np.argsort(row_id)[at]
    values = rows.column("sbc_sensitive").combine_chunks()
    domain = pc.unique(values.drop_null())
    domain = domain.take(pc.sort_indices(domain)) if len(domain) else domain
    names: list[object] = domain.to_pylist() + ([None] if values.null_count else [])
    records = pa.table({c: rows.column(c).take(pa.array(order)) for c in columns})
    return from_table(table, records, data.position, names, sensitive.name)
