"""Fixtures: a fresh DuckDB, a table builder from pandas and a CLI runner.

The helpers themselves live in helpers.py so hypothesis tests can call them inside @given.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import helpers
import pytest


@pytest.fixture
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    """A fresh in-memory database."""
    connection = duckdb.connect()
    yield connection
    connection.close()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """Where a test's database file goes (not created)."""
    return tmp_path / "test.duckdb"


@pytest.fixture
def file_con(db_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """A fresh database file, opened."""
    connection = duckdb.connect(str(db_path))
    yield connection
    connection.close()


@pytest.fixture
def make_table():
    """make_table(con, name, df, types) -> CREATE TABLE name from a DataFrame."""
    return helpers.make_table


@pytest.fixture
def cli():
    """cli(args) -> exit_code, stdout, stderr of the typer app run in-process."""
    return helpers.run_cli
