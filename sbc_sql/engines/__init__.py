"""Engines: the databases a run can work in. :func:`connect` picks the one a ``--db`` names."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from .. import choices
from ..errors import InputError
from ..model import ColumnInfo, TableInfo
from .base import Capabilities, Engine

__all__ = [
    "ENGINES",
    "Capabilities",
    "ColumnInfo",
    "Engine",
    "TableInfo",
    "as_frame",
    "builds_session",
    "check_engine",
    "connect",
    "duckdb_from_frame",
    "in_server",
    "is_spark_frame",
    "is_spark_session",
    "keyed",
    "reading",
    "spark_from_frame",
]


#: the engines a caller names (PostgreSQL is named by its URL)
ENGINES = choices.ENGINES


def parse_attach(text: str) -> tuple[Path, str]:
    """'clinic.duckdb' -> (clinic.duckdb, 'clinic'); 'a/b.duckdb:src' -> (a/b.duckdb, 'src')."""
    path, sep, alias = text.rpartition(":")
    if not sep or not alias or "/" in alias or "\\" in alias or not path:
        path, alias = text, Path(text).stem
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", alias):
        raise InputError(
            f"--attach '{text}': the alias '{alias}' is not a plain name; give one, e.g. "
            f"--attach {path}:other"
        )
    return Path(path), alias


def connect(
    database: Engine | str | Path | Any | None,
    *,
    must_exist: bool = True,
    read_only: bool = False,
    engine: str | None = None,
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
) -> Engine:
    """The engine for ``database``: an Engine as it is; a DuckDB connection, a DuckDB file
    path or None (in memory) for DuckDB. ``read_only`` opens a file read-only (what only
    reads: measure, verify, evaluate and a dry run). A ``postgresql://`` URL (any libpq
    URL) is a PostgreSQL database, read and written in place. A SparkSession, or None with
    ``engine='spark'`` (a local session, built here on ``master`` with the Spark properties
    ``conf``), is Apache Spark."""
    if isinstance(database, Engine):
        return database
    check_engine(engine, database)
    if engine == "spark" or is_spark_session(database):
        from .spark import SparkEngine

        return SparkEngine.connect(database, master=master, conf=conf)
    from .urls import looks_like_url

    if looks_like_url(database):
        from .postgres import PostgresEngine

        return PostgresEngine.connect(str(database))
    from .duckdb import DuckDBEngine

    return DuckDBEngine.connect(database, must_exist=must_exist, read_only=read_only)


@contextlib.contextmanager
def reading(database: Engine | str | Path | Any | None, attach: Iterable[str] = ()) -> Iterator[Engine]:
    """An engine for what only reads (measure, verify, evaluate): a file is opened read-only
    and closed on the way out, so that nothing of it stays open after an error either; an
    engine or connection given is used as it is and left open. ``attach``: other database
    files to read from, each FILE or FILE:ALIAS, attached read-only."""
    files = [parse_attach(a) for a in attach]
    engine = connect(database, read_only=True)
    try:
        for path, alias in files:
            engine.attach(path, alias)
        yield engine
    finally:
        if engine is not database:
            engine.close()


def as_frame(data: Any) -> Any | None:
    """``data`` as something DuckDB can read in place (a pandas or polars DataFrame, a pyarrow
    Table, a DuckDB relation as Arrow), or None when it is a database, not data."""
    import pyarrow as pa

    if isinstance(data, (pa.Table, pa.RecordBatchReader)):
        return data
    module = type(data).__module__.split(".")[0]
    if module in ("pandas", "polars") and type(data).__name__ == "DataFrame":
        return data
    import duckdb

    if isinstance(data, duckdb.DuckDBPyRelation):
        return data.to_arrow_table()
    return None


def _from_pyspark(value: Any, *classes: str) -> bool:
    """``value`` is one of pyspark's classes of these names (pyspark is not imported)."""
    kind = type(value)
    return kind.__module__.split(".")[0] == "pyspark" and kind.__name__ in classes


def is_spark_session(value: Any) -> bool:
    return _from_pyspark(value, "SparkSession")


def is_spark_frame(value: Any) -> bool:
    return _from_pyspark(value, "DataFrame")


def builds_session(engine: str | None) -> bool:
    """The engine named ``engine`` (one of :data:`ENGINES`) runs in a session that
    :func:`connect` builds from None, not in a database a file or URL names."""
    return engine == "spark"


def check_engine(engine: str | None, database: Any) -> None:
    """``engine`` is one sbc-sql knows, and fits ``database``."""

    if engine is not None and engine not in ENGINES:
        raise InputError(f"engine '{engine}' is not one of {', '.join(ENGINES)}")
    spark_given = is_spark_session(database) or is_spark_frame(database)
    if spark_given and engine not in (None, "spark"):
        raise InputError(f"a Spark session or DataFrame runs on engine 'spark', not '{engine}'")
    if engine == "spark" and not spark_given and database is not None and not isinstance(database, Engine):
        raise InputError(
            "engine='spark' takes a SparkSession or a Spark DataFrame as the database (or None "
            "for a local session)"
        )


def spark_from_frame(frame: Any, name: str) -> Engine:
    """A Spark engine over the DataFrame's session, the DataFrame its input ``name``."""
    from .spark import SparkEngine

    return SparkEngine.from_frame(frame, name)


def in_server(plpy: Any) -> Engine:
    """The engine of a function running inside PostgreSQL (PL/Python): the calling session,
    reached through ``plpy``."""
    from .plpy import PlpyEngine

    return PlpyEngine(plpy)


def keyed(database: Any, row_key: str | None, *, read_only: bool) -> Engine:
    """The DuckDB engine over ``database`` (as :func:`connect` takes it) with the source's
    rows named by the integer key column ``row_key`` (None: by their position), for the
    runs whose class ids a warehouse joins back (:mod:`sbc_sql.warehouse`)."""
    from .row_keys import KeyedDuckDB

    engine = KeyedDuckDB.connect(database, read_only=read_only)
    if not isinstance(engine, KeyedDuckDB):  # pragma: no cover - connect makes its own class
        raise TypeError("expected the keyed engine")
    engine.row_key = row_key
    return engine


def duckdb_from_frame(frame: Any, name: str) -> Engine:
    """An in-memory DuckDB holding ``frame`` as the table ``name``."""
    from .duckdb import DuckDBEngine

    engine = DuckDBEngine.connect(None)
    engine.load_frame(name, frame)
    return engine
