"""Engines: the databases a run can work in. :func:`connect` picks the one a ``--db`` names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .base import Capabilities, ColumnInfo, Engine, TableInfo

__all__ = ["Capabilities", "ColumnInfo", "Engine", "TableInfo", "connect"]


def connect(database: Engine | str | Path | Any | None, *, must_exist: bool = True) -> Engine:
    """The engine for ``database``: an Engine as it is; a DuckDB connection, a DuckDB file
    path or None (in memory) for DuckDB."""
    if isinstance(database, Engine):
        return database
    from .duckdb import DuckDBEngine

    return DuckDBEngine.connect(database, must_exist=must_exist)
