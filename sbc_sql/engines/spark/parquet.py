"""A Parquet input's own schema, as its footer declares it: what Spark's reader cannot take.

Spark reads a Parquet file's schema from the footer of one of its files, and refuses a
column whose Parquet type it has no type for (``PARQUET_TYPE_ILLEGAL`` and its kin) without
naming the column. The footer is read here through the Parquet library Spark itself runs on
(so on any file system Spark reads), one file of a folder as Spark does, and each leaf of
the schema is kept with the column it belongs to and its type as Spark's errors print it
(``INT64 (TIMESTAMP(NANOS,false))``): a type, never a value.

A nanosecond timestamp (Parquet ``TIMESTAMP(NANOS)``, what pandas writes for datetime64[ns]
and DuckDB for TIMESTAMP_NS) Spark reads as its number when asked
(``spark.sql.legacy.parquet.nanosAsLong``); the engine then converts a top-level one to a
timestamp of microseconds (see :mod:`.files`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: the Spark SQL setting under which Spark's Parquet reader takes a TIMESTAMP(NANOS) column
#: as its number of nanoseconds (a BIGINT) instead of refusing it
NANOS_AS_LONG = "spark.sql.legacy.parquet.nanosAsLong"
#: the setting under which Spark reads a timestamp not adjusted to UTC as TIMESTAMP_NTZ
INFER_NTZ = "spark.sql.parquet.inferTimestampNTZ.enabled"

#: how deep a folder is searched for a data file (partition folders: year=2020/month=1/...)
MAX_DEPTH = 16


@dataclass(frozen=True)
class Leaf:
    """One primitive field of a Parquet schema."""

    #: the top-level column it belongs to
    column: str
    #: its names from the top: one name for a top-level column, more inside a group
    path: tuple[str, ...]
    #: its type as Spark's errors print it: the primitive type, and its annotation in brackets
    type: str
    #: a nanosecond timestamp: whether it is adjusted to UTC (an instant) or not (a local
    #: date-time); None for any other type
    nanos_utc: bool | None = None

    @property
    def top_level(self) -> bool:
        return len(self.path) == 1

    @property
    def where(self) -> str:
        """The leaf as a user names it: the column, or the column's field (``c.t``)."""
        return ".".join(self.path)


def leaves(session: Any, fs: Any, path: Any) -> list[Leaf]:
    """The leaves of the schema of the Parquet file ``path`` (a Hadoop Path on ``fs``), or
    of the first data file of the folder ``path`` (empty files and names starting with '_' or
    '.' are not data, as Spark skips them); none when the folder holds no file. A file that
    is no Parquet file raises (the caller lets Spark's own read say what is wrong with it)."""
    found = _first_file(fs, path, 0)
    if found is None:
        return []
    jvm = session.sparkContext._jvm
    parquet = jvm.org.apache.parquet.hadoop
    source = parquet.util.HadoopInputFile.fromPath(found, session._jsc.hadoopConfiguration())
    reader = parquet.ParquetFileReader.open(source)
    try:
        schema = reader.getFooter().getFileMetaData().getSchema()
    finally:
        reader.close()
    out: list[Leaf] = []
    for field in schema.getFields():
        name = str(field.getName())
        _walk(field, name, (name,), out)
    return out


def _first_file(fs: Any, path: Any, depth: int) -> Any:
    status = fs.getFileStatus(path)
    if not status.isDirectory():
        return path
    if depth >= MAX_DEPTH:
        return None
    children = sorted(
        (
            s
            for s in fs.listStatus(path)
            if not str(s.getPath().getName()).startswith(("_", ".")) and (s.isDirectory() or s.getLen() > 0)
        ),
        key=lambda s: (s.isDirectory(), str(s.getPath().getName())),
    )
    for child in children:
        found = child.getPath() if not child.isDirectory() else _first_file(fs, child.getPath(), depth + 1)
        if found is not None:
            return found
    return None


def _walk(field: Any, column: str, path: tuple[str, ...], out: list[Leaf]) -> None:
    if not field.isPrimitive():
        for sub in field.asGroupType().getFields():
            _walk(sub, column, (*path, str(sub.getName())), out)
        return
    primitive = str(field.asPrimitiveType().getPrimitiveTypeName())
    annotation = field.getLogicalTypeAnnotation()
    if annotation is None:
        out.append(Leaf(column, path, primitive))
        return
    text = str(annotation)
    nanos_utc = None
    if re.fullmatch(r"TIMESTAMP\(NANOS,(true|false)\)", text):
        nanos_utc = text.endswith("true)")
    out.append(Leaf(column, path, f"{primitive} ({text})", nanos_utc))


def refused(leaves: list[Leaf], condition: str, parquet_type: str | None) -> list[Leaf]:
    """The leaves Spark's error of ``condition`` refers to: those of the type it names
    (``PARQUET_TYPE_ILLEGAL``, ``PARQUET_TYPE_NOT_SUPPORTED``), or every time of day
    (``UNSUPPORTED_TIME_TYPE``, which names no type)."""
    if condition == "UNSUPPORTED_TIME_TYPE":
        return [leaf for leaf in leaves if re.search(r"\(TIME\(", leaf.type)]
    if parquet_type is None:
        return []
    return [leaf for leaf in leaves if leaf.type == parquet_type]
