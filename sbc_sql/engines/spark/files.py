"""The files and folders the Spark engine reads and writes, on any file system Spark reads
(``file:``, ``hdfs:``, ``s3a:`` ...): paths made absolute, whether one exists, a small text
file (a release's provenance) read and written, and a CSV or Parquet input read.

A Parquet input's schema is read from its footer first (:mod:`.parquet`). Its nanosecond
timestamps (``TIMESTAMP(NANOS)``: pandas' datetime64[ns], DuckDB's TIMESTAMP_NS), which
Spark's reader refuses, are read as their numbers and converted to Spark's timestamps,
which hold microseconds: the nanoseconds are truncated (towards the past), and the column
keeps its name and reads as Spark reads the same timestamps in microseconds (TIMESTAMP_NTZ
for a local date-time, TIMESTAMP for an instant). A column of another type Spark cannot
read is named in the error, with its type."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ...errors import EngineError, InputError
from ...model import CsvOptions
from ..paths import is_csv, is_parquet
from . import parquet
from .connection import SparkConnection, quoted

#: Spark's error classes for a column type its Parquet reader cannot read
UNREADABLE = (
    "PARQUET_TYPE_ILLEGAL",
    "PARQUET_TYPE_NOT_SUPPORTED",
    "PARQUET_TYPE_NOT_RECOGNIZED",
    "UNSUPPORTED_TIME_TYPE",
)
#: how to write a nanosecond timestamp Spark reads, where sbc-sql cannot convert it
MICROSECONDS = (
    "write it in microseconds (pandas: to_parquet(..., coerce_timestamps='us'); DuckDB: "
    "TIMESTAMP), or read the file with DuckDB (--engine duckdb)"
)

#: the provenance of a release written as a folder: a file beside its Parquet files (Spark
#: and other readers skip files whose names start with '_')
PROVENANCE_FILE = "_sbc_sql.json"


class SparkFiles(SparkConnection):
    """The Spark engine's file system calls."""

    def _qualified_path(self, text: str) -> str:
        with self._driver(f"reading the path '{text}'"):
            fs, path = self._fs(text)
            return str(fs.makeQualified(path).toString())

    def _fs(self, text: str) -> tuple[Any, Any]:
        jvm = self.session.sparkContext._jvm
        path = jvm.org.apache.hadoop.fs.Path(text)
        return path.getFileSystem(self.session._jsc.hadoopConfiguration()), path

    def _exists(self, path: str) -> bool:
        fs, p = self._fs(path)
        return bool(fs.exists(p))

    def _read_text(self, path: str) -> str | None:
        with self._driver(f"reading '{path}'"):
            fs, p = self._fs(path)
            if not fs.exists(p) or fs.getFileStatus(p).isDirectory():
                return None
            stream = fs.open(p)
            try:
                data = self.session.sparkContext._jvm.org.apache.commons.io.IOUtils.toByteArray(stream)
            finally:
                stream.close()
        return bytes(data).decode("utf-8")

    def _write_text(self, path: str, text: str) -> None:
        fs, p = self._fs(path)
        stream = fs.create(p, False)
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()

    def _format(self, path: str, shown: str) -> str:
        """'parquet' or 'csv': by the file's ending, or for a folder by its files' endings."""
        if is_csv(path):
            return "csv"
        if is_parquet(path):
            return "parquet"
        with self._driver(f"reading the folder '{shown}'"):
            fs, p = self._fs(path)
            if not fs.getFileStatus(p).isDirectory():
                return "parquet"
            files = [str(s.getPath().getName()).lower() for s in fs.listStatus(p)]
        visible = [f for f in files if not f.startswith(("_", "."))]
        return "csv" if visible and all(is_csv(f) for f in visible) else "parquet"

    def _load(self, fmt: str, csv: CsvOptions, path: str, shown: str) -> Any:
        """The DataFrame of the CSV or Parquet file or folder ``path`` (``shown`` as the user
        named it), a Parquet input's nanosecond timestamps converted to timestamps."""
        doing = f"reading {'CSV' if fmt == 'csv' else 'Parquet'} '{shown}'"
        reader = self._reader(fmt, csv, path)
        if fmt == "csv":
            with self._driver(doing):
                return reader.load(path)
        try:
            with self._driver(doing):
                fs, p = self._fs(path)
                leaves = parquet.leaves(self.session, fs, p)
        except EngineError:
            leaves = []  # no Parquet file: Spark's read says what it is
        nanos = {leaf.column: bool(leaf.nanos_utc) for leaf in leaves if leaf.nanos_utc is not None}
        inside = [leaf for leaf in leaves if leaf.nanos_utc is not None and not leaf.top_level]
        if inside:
            raise InputError(
                f"column '{inside[0].column}' of '{shown}' holds nanosecond timestamps (Parquet type "
                f"{inside[0].type}) in its field '{inside[0].where}', which Spark reads only as a "
                f"column of their own; {MICROSECONDS}"
            )
        try:
            with self._driver(doing):
                if not nanos:
                    return reader.load(path)
                # the schema read with the nanoseconds as numbers; the file is read with that
                # schema, which needs the setting no more
                with self._setting(parquet.NANOS_AS_LONG, "true"):
                    schema = reader.load(path).schema
                frame = reader.schema(schema).load(path)
                ntz = str(self.session.conf.get(parquet.INFER_NTZ, "true")).lower() == "true"
                return frame.select(
                    *(
                        _timestamp(f.name, nanos[f.name] or not ntz).alias(f.name, metadata=f.metadata)
                        if f.name in nanos
                        else _column(f.name)
                        for f in schema.fields
                    )
                )
        except EngineError as err:
            condition = getattr(err, "condition", "")
            if condition not in UNREADABLE:
                raise
            named = parquet.refused(leaves, condition, getattr(err, "named_type", None))
            if not named:
                raise
            raise InputError(_unreadable(named, shown, condition)) from None

    @contextlib.contextmanager
    def _setting(self, key: str, value: str) -> Iterator[None]:
        """The session's SQL setting ``key`` at ``value`` inside, as it was after."""
        conf = self.session.conf
        before = conf.get(key, None)
        conf.set(key, value)
        try:
            yield
        finally:
            if before is None:
                conf.unset(key)
            else:
                conf.set(key, before)

    def _reader(self, fmt: str, csv: CsvOptions, path: str) -> Any:
        """Spark's reader of the file or folder ``path`` (a CSV file with a header and the
        types its values show, unless ``csv`` says otherwise; a line that does not fit fails
        the read)."""
        reader = self.session.read.format(fmt)
        if fmt == "csv":
            header = True if csv.header is None else csv.header
            reader = reader.option("header", header).option("inferSchema", True).option("mode", "FAILFAST")
            tab = path.lower().endswith((".tsv", ".tsv.gz"))
            delimiter = csv.delimiter if csv.delimiter is not None else "\t" if tab else None
            if delimiter is not None:
                reader = reader.option("sep", delimiter)
        return reader


def _unreadable(named: list[parquet.Leaf], shown: str, condition: str) -> str:
    """The message for columns of types Spark's reader refused: each column, where in it, and
    its Parquet type."""

    def one(leaf: parquet.Leaf) -> str:
        inside = "" if leaf.top_level else f" in its field '{leaf.where}'"
        return f"'{leaf.column}' (Parquet type {leaf.type}{inside})"

    if len(named) == 1:
        said = f"column {one(named[0])} of '{shown}' is of a type"
    else:
        said = f"columns {', '.join(one(leaf) for leaf in named)} of '{shown}' are of types"
    return (
        f"{said} Spark cannot read ({condition}); write {'it' if len(named) == 1 else 'them'} as a "
        "type Spark reads, or read the file with DuckDB (--engine duckdb)"
    )


def _column(name: str) -> Any:
    from pyspark.sql import functions

    return functions.col(quoted(name))


def _timestamp(name: str, instant: bool) -> Any:
    """The column ``name`` of nanoseconds since 1970-01-01 00:00 as a timestamp of
    microseconds, the nanoseconds truncated (floor: 1969-12-31 23:59:59.9999995 is
    23:59:59.999999): an instant (TIMESTAMP) or a local date-time (TIMESTAMP_NTZ), either
    exact whatever the session's time zone. The division is a decimal one, exact where a
    double would round the nanoseconds of today's dates."""
    from pyspark.sql import functions

    micros = functions.floor(_column(name).cast("decimal(20,0)") / functions.lit(1000)).cast("bigint")
    if instant:
        return functions.timestamp_micros(micros)
    epoch = functions.lit("1970-01-01 00:00:00").cast("timestamp_ntz")
    return functions.timestamp_add("MICROSECOND", micros, epoch)
