"""Opening a run's inputs: the data a call gives (a frame, a Spark DataFrame, a path or a
name) as a database and a table, a table named where it is, and which existing names belong
to a release (whose provenance says so), so that a run never overwrites another's."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .. import engines, provenance
from ..engines.base import Engine
from ..errors import InputError


def _qualified_input(engine: Engine, table: str) -> str:
    """``table`` with its database and schema (a file input as it is)."""
    from ..engines.paths import looks_like_file

    name = engine.parse_name(table)
    if looks_like_file(table) or name.path or (name.catalog is not None and name.schema is not None):
        return table
    return str(name.within(*engine.working()))


def _input(
    database: Any, table: Any, k: Any, *, engine: str | None = None, output: str | None = None
) -> tuple[Any, str, Any]:
    """(database, table, k) of a call: data given as a frame is copied into an in-memory
    DuckDB under ``table`` (default 'data'), and ``anonymize(df, 5)`` reads 5 as k. With
    ``engine='spark'`` the database is a SparkSession (None: a local one is built) or a
    Spark DataFrame, the input itself."""
    engines.check_engine(engine, database)
    if engines.is_spark_frame(database):
        if k is None and not isinstance(table, str) and table is not None:
            table, k = None, table
        if not output:
            raise InputError(
                "a Spark DataFrame has no place of its own for the release; name one with "
                "--output: a folder path for Parquet files, or a table of the Spark catalog"
            )
        table = table or "data"
        database = engines.spark_from_frame(database, table)
    frame = engines.as_frame(database)
    if frame is not None:
        if k is None and not isinstance(table, str) and table is not None:
            table, k = None, table
        name = table or "data"
        database = engines.duckdb_from_frame(frame, name)
        table = name
    if not isinstance(table, str) or not table:
        raise InputError("no table given; pass the table (or view, or CSV/Parquet path) to anonymize")
    if k is None:
        raise InputError("no k given; pass the minimum class size, e.g. k=5")
    return database, table, k


def release_owners(engine: Engine, names: Iterable[str]) -> dict[str, str]:
    """Which of these existing names belong to a release, and its name: a release's view and
    tables carry its provenance; its text view ``<release>_view`` belongs to the release
    whose provenance names it."""
    names = list(names)
    bases = {
        n: n.rpartition("_")[0] for n in names if n.rpartition("_")[0] and n.rpartition("_")[2] == "view"
    }
    # every comment these names need in one look-up
    comments = engine.comments(list(dict.fromkeys([*names, *bases.values()])))
    owners: dict[str, str] = {}
    for name in names:
        doc = _provenance_of(comments[name])
        if doc is not None:
            owners[name] = str(doc["release"]["view"])
            continue
        if name in bases:
            doc = _provenance_of(comments[bases[name]])
            if doc is not None and str(doc["release"]["text_view"]).lower() == name.lower():
                owners[name] = str(doc["release"]["view"])
    return owners


def _provenance_of(comment: str | None) -> Mapping[str, Any] | None:
    try:
        found = provenance.parse(comment)
    except provenance.ProvenanceError:
        return None
    return found.document if found is not None else None
