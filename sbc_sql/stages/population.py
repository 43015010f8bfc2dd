"""The population a release is matched against (``--population``: k-map, delta-presence):
the table's checks, its distinct QI tuples pulled for the clustering, and the privacy
models verification runs over it (:mod:`sbc_sql.privacy.population`).

The population is a table or view of the database, holding every QI under the same name
and of the same kind (numbers, dates and timestamps against their like; categories against
any type the engine compares with them). Its rows are read only as distinct QI tuples with
their counts (one GROUP BY in the engine), never one by one.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from ..arrays import to_numpy
from ..cluster.decode import Decoder
from ..cluster.population import Population
from ..engines.base import Engine
from ..errors import EngineError, InputError
from ..model import Column
from ..plan import options as planned
from ..privacy.base import PrivacyModel
from ..privacy.population import DeltaPresence, KMap, population_tuples_sql
from ..sql.nodes import as_category, as_number, ref
from ..sql.templates import render
from .measure import Layout
from .verify import join_keys


def check_table(engine: Engine, table: str, qis: Sequence[Column]) -> None:
    """The population exists and holds every QI, each of its kind: else one ``Error:``
    line naming the table, the column and the fix."""
    try:
        info = engine.describe(table) if engine.table_exists(table) else None
    except (InputError, EngineError):
        info = None
    if info is None or not info.columns:
        raise InputError(
            f"--population '{table}' is not a table or view of the database; name one holding "
            "the QIs under the same names (a CSV or Parquet file: read it through a view)"
        )
    columns = {c.name: c for c in info.columns}
    for c in qis:
        found = columns.get(c.name)
        if found is None:
            raise InputError(
                f"--population '{table}' has no column '{c.name}', a quasi-identifier; give a "
                f"population holding every QI under its name ({', '.join(q.name for q in qis)})"
            )
        if (found.kind == "numeric") != (c.kind == "numeric") or found.temporal != c.temporal:
            raise InputError(
                f"column '{c.name}' of --population '{table}' is {found.type} where the table's is "
                f"{c.type}; give the population the same kind of value (cast it in a view)"
            )


def pull(engine: Engine, table: str, decoder: Decoder) -> Population:
    """The population's distinct QI tuples, coded as the decoder codes the input's rows: a
    category the input lacks (or a NULL it has none of) is -1, inside no class."""
    import pyarrow.compute as pc

    qis = decoder.qis
    exprs = [
        as_number(ref(c.name, "s"), c) if c.kind == "numeric" else as_category(ref(c.name, "s"), c)
        for c in qis
    ]
    query = render("pull_population", tuples=population_tuples_sql(table, qis), qi=exprs)
    with engine.driver_call(f"reading the population '{table}'"):
        got = engine.fetch_arrow(query)
    columns: list[np.ndarray] = []
    for i, c in enumerate(qis):
        arr = got.column(i)
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if c.kind == "numeric":
            columns.append(to_numpy(arr, np.float64))
            continue
        domain = decoder.domains[i]
        assert domain is not None
        if pa.types.is_dictionary(arr.type):
            arr = arr.cast(arr.type.value_type)
        if arr.type != domain.type:
            arr = arr.cast(domain.type, safe=False)
        codes = to_numpy(pc.index_in(arr, value_set=domain), np.int32, fill=-1)
        # NULL is the input's code after its domain's, where the input holds NULL
        null = np.asarray(arr.is_null(), dtype=bool)
        codes[null] = len(domain) if decoder.cardinality[i] > len(domain) else -1
        columns.append(codes)
    rows = to_numpy(got.column(len(qis)), np.int64)
    return Population(tuple(columns), rows)


def models(
    engine: Engine,
    asked: planned.Population,
    qis: Sequence[Column],
    release: str,
    classes: str | None = None,
    figures: str | None = None,
) -> tuple[PrivacyModel, ...]:
    """k-map and delta-presence as ``asked`` over ``release`` (one row per released row, or
    a row table beside the class table ``classes``): the models verification runs, joined
    on the QIs :func:`~.verify.join_keys` finds cheapest against the population. With
    ``figures``, a new temporary table of that name holds the per-class figure, computed
    once, which the models read (the caller drops it)."""
    table = asked.table
    if table is None:
        return ()
    qis = tuple(qis)
    boxes = classes or release
    (n,) = engine.fetch_one(render("row_count", source=table))
    (n_classes,) = engine.fetch_one(render("distinct_classes", release=boxes))
    layout = Layout(qis, (), tuple(1.0 for _ in qis))
    keys = join_keys(engine, layout, table, boxes, int(n_classes or 0), int(n))
    if figures is not None:
        matches = KMap(population=table, qis=qis, keys=keys, classes=classes, k_map=2).matches_sql(release)
        with engine.hashed_joins():
            engine.execute(render("population_figures", figures=figures, matches=matches))
    on = {"population": table, "qis": qis, "keys": keys, "classes": classes, "figures": figures}
    out: list[PrivacyModel] = []
    if asked.k_map is not None:
        out.append(KMap(**on, k_map=asked.k_map))  # type: ignore[arg-type]
    if asked.delta:
        low, high = asked.bounds
        out.append(DeltaPresence(**on, delta_min=low, delta_max=high))  # type: ignore[arg-type]
    return tuple(out)
