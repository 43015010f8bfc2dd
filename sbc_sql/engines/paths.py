"""How an input or output names a file rather than a table: the endings of the CSV and
Parquet files sbc-sql reads, and the tests on a name every engine and command share. No
file is opened here."""

from __future__ import annotations

import os
from pathlib import Path

CSV_SUFFIXES = (".csv", ".tsv", ".csv.gz", ".tsv.gz")
PARQUET_SUFFIXES = (".parquet", ".pq")
#: the endings of the files an input may be
FILE_SUFFIXES = (*CSV_SUFFIXES, *PARQUET_SUFFIXES)


def looks_like_file(table: str) -> bool:
    """The input names a CSV or Parquet file (by its ending), not a table."""
    return table.lower().endswith(FILE_SUFFIXES)


def looks_like_path(text: str) -> bool:
    """A path (file or folder) rather than a table name: it has a slash in it, or a file's
    ending."""
    return "/" in text or os.sep in text or looks_like_file(text)


def is_parquet(path: str | Path) -> bool:
    return str(path).lower().endswith(PARQUET_SUFFIXES)


def is_csv(path: str | Path) -> bool:
    return str(path).lower().endswith(CSV_SUFFIXES)


def kind_of(path: str | Path) -> str:
    """'Parquet' or 'CSV', as messages name the file."""
    return "Parquet" if is_parquet(path) else "CSV"
