"""The files and folders the Spark engine reads and writes, on any file system Spark reads
(``file:``, ``hdfs:``, ``s3a:`` ...): paths made absolute, whether one exists, a small text
file (a release's provenance) read and written, and the reader of a CSV or Parquet input."""

from __future__ import annotations

from typing import Any

from ...model import CsvOptions
from ..paths import is_csv, is_parquet
from .connection import SparkConnection

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
