"""A CSV or Parquet input read with pyarrow, for an engine that cannot read local files
itself (PostgreSQL): streamed in record batches and handed over in parts of bounded size.

Columns are named and typed as DuckDB's reader names and types the same file, where pyarrow
can: the delimiter and the header are taken as given or sniffed (a first line that does not
fit the types of the lines after it is a header), empty and repeated header names become
``column<i>`` and ``name_<n>``, whole numbers are BIGINT, other numbers DOUBLE, ISO dates
DATE, date-times TIMESTAMP, true/false BOOLEAN, numbers written with a leading zero
('02152') and the rest text, an empty field is NULL. (pyarrow reads fewer forms than
DuckDB's sniffer: a day-first date such as 02/01/2020 and 't'/'f' stay text.)
Types are read from the first block of lines (about 1 MB), as DuckDB reads them from a
sample: a later line that does not fit them is an error naming its line. A Parquet file
keeps its own types (dictionaries as their values).

Every failure is one InputError naming the file, the line or column and the fix, never a
value: pyarrow's own messages quote the line they stopped at, so none of them is shown.
"""

from __future__ import annotations

import collections
import contextlib
import csv
import gzip
import io
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import pyarrow as pa
import pyarrow.csv as pacsv

from ..errors import InputError
from ..model import CsvOptions
from .paths import is_parquet

#: the delimiters a CSV file is sniffed for, as DuckDB's sniffer tries them
DELIMITERS = ",;\t|"
#: what the delimiter and the header are sniffed from
SAMPLE_BYTES = 1 << 16
#: pyarrow reads (and infers the types from) blocks of this many bytes
BLOCK_BYTES = 1 << 20
#: the rows of a batch read from a Parquet file
BATCH_ROWS = 1 << 16
#: a part handed to the engine holds batches up to about this many bytes of Arrow data
PART_BYTES = 64 << 20
#: the longest column name the engine keeps whole (PostgreSQL's NAMEDATALEN - 1)
MAX_NAME_BYTES = 63

# the types pyarrow infers, as DuckDB names them in its messages
_TYPE_NAMES = {
    "int64": "BIGINT",
    "double": "DOUBLE",
    "date32[day]": "DATE",
    "bool": "BOOLEAN",
    "timestamp[s]": "TIMESTAMP",
    "timestamp[ns]": "TIMESTAMP",
    "time32[s]": "TIME",
    "string": "VARCHAR",
}


def parts(path: Path, csv_options: CsvOptions, fix: str) -> Iterator[pa.Table]:
    """The file's rows in order, as Arrow tables of about PART_BYTES each (at least one,
    which is empty for a file of no rows). ``fix`` ends a message about a CSV file that
    cannot be read (how else to load it)."""
    if not path.exists():
        raise InputError(
            f"input file '{path}' does not exist; pass an existing CSV or Parquet file, or a "
            "table name, with --table"
        )
    if not path.is_file():
        raise InputError(f"input file '{path}' is a folder; pass a CSV or Parquet file with --table")
    schema, batches = _parquet(path) if is_parquet(path) else _csv(path, csv_options, fix)
    pending: list[pa.RecordBatch] = []
    size = 0
    sent = False
    for batch in batches:
        pending.append(batch)
        size += batch.nbytes
        if size >= PART_BYTES:
            yield pa.Table.from_batches(pending, schema)
            pending, size, sent = [], 0, True
    if pending or not sent:
        yield pa.Table.from_batches(pending, schema)


# ---- Parquet ----


def _parquet(path: Path) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq  # here: every DuckDB run imports this module, and reads no Parquet with it

    where = f"Parquet file '{path}'"
    fix = "write it again, or pass another CSV or Parquet file"
    try:
        file = pq.ParquetFile(path)
        source = file.schema_arrow
    except (pa.ArrowException, OSError, ValueError) as err:
        if _refused(err):
            raise _unreadable(path, err) from None
        raise InputError(f"{where} is not a valid Parquet file (or is damaged); {fix}") from None
    schema = _plain_schema(source, where)
    names = _names(source.names, where)
    schema = pa.schema([f.with_name(n) for f, n in zip(schema, names, strict=True)])

    def batches() -> Iterator[pa.RecordBatch]:
        try:
            for batch in file.iter_batches(batch_size=BATCH_ROWS):
                columns = [pc.cast(c, f.type) for c, f in zip(batch.columns, schema, strict=True)]
                yield pa.RecordBatch.from_arrays(columns, schema=schema)
        except (pa.ArrowException, OSError, ValueError) as err:
            if _refused(err):
                raise _unreadable(path, err) from None
            raise InputError(f"{where} is damaged: a part of it cannot be read; {fix}") from None

    return schema, batches()


def _plain_schema(schema: pa.Schema, where: str) -> pa.Schema:
    """The types the engine takes: a dictionary as its values, a date in milliseconds as a
    date; a struct, map or union column is refused (PostgreSQL has no such column type)."""
    fields = []
    for f in schema:
        t = f.type
        if pa.types.is_dictionary(t):
            t = t.value_type
        if pa.types.is_date64(t):
            t = pa.date32()
        if pa.types.is_struct(t) or pa.types.is_map(t) or pa.types.is_union(t):
            raise InputError(
                f"{where}: column '{f.name}' is a {t}, a nested type a PostgreSQL table cannot "
                "hold; write the file without it, or anonymize it with a DuckDB --db"
            )
        fields.append(pa.field(f.name, t))
    return pa.schema(fields)


# ---- CSV ----


def _csv(path: Path, options: CsvOptions, fix: str) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    where = f"CSV file '{path}'"
    try:
        sample = _sample(path)
    except OSError as err:
        if _refused(err):
            raise _unreadable(path, err) from None
        raise InputError(f"{where} cannot be read (damaged, or not what its name says); {fix}") from None
    delimiter = options.delimiter or _sniff_delimiter(path, sample)
    parse = pacsv.ParseOptions(delimiter=delimiter)
    convert = pacsv.ConvertOptions(null_values=[""], strings_can_be_null=True)
    with _reading(path, delimiter, fix):
        header = options.header if options.header is not None else _has_header(path, parse, convert)
        if header:
            given = next(csv.reader(io.StringIO(sample), delimiter=delimiter), [])
        else:
            probe = pacsv.open_csv(
                path, pacsv.ReadOptions(autogenerate_column_names=True, block_size=BLOCK_BYTES), parse
            )
            given = [f"column{i}" for i in range(len(probe.schema))]
        names = _names(given, where)
        read = pacsv.ReadOptions(column_names=names, skip_rows=1 if header else 0, block_size=BLOCK_BYTES)
        reader = pacsv.open_csv(path, read, parse, convert)
        padded = _zero_padded(path, read, parse, reader.schema)
        if padded:
            text = pacsv.ConvertOptions(
                column_types={n: pa.string() for n in padded}, null_values=[""], strings_can_be_null=True
            )
            reader = pacsv.open_csv(path, read, parse, text)
    for f in reader.schema:
        if pa.types.is_binary(f.type):
            raise InputError(
                f"{where}: column '{f.name}' holds bytes that are not UTF-8 text; convert the "
                f"file to UTF-8, or {fix}"
            )

    def batches() -> Iterator[pa.RecordBatch]:
        done = 1 if header else 0  # records read so far, the header included
        while True:
            with _reading(path, delimiter, fix, reader.schema, done):
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    return
            done += batch.num_rows
            yield batch

    return reader.schema, batches()


def _open_text(path: Path) -> IO[str]:
    opener: Callable[..., IO[str]] = gzip.open if path.name.lower().endswith(".gz") else open
    return opener(path, "rt", newline="", encoding="utf-8-sig", errors="replace")


def _sample(path: Path) -> str:
    """The file's first lines as text (a last line cut short is left out)."""
    with _open_text(path) as fh:
        text = fh.read(SAMPLE_BYTES)
    cut = text.rfind("\n")
    return text[: cut + 1] if 0 <= cut < len(text) - 1 else text


def _sniff_delimiter(path: Path, sample: str) -> str:
    """A tab for .tsv; else the delimiter of DELIMITERS that splits the first lines alike
    (a comma when none does, or the file is one column)."""
    if path.name.lower().endswith((".tsv", ".tsv.gz")):
        return "\t"
    try:
        return csv.Sniffer().sniff(sample, delimiters=DELIMITERS).delimiter
    except csv.Error:
        return ","


def _has_header(path: Path, parse: pacsv.ParseOptions, convert: pacsv.ConvertOptions) -> bool:
    """DuckDB's rule: the first line is a header unless some column takes a type other than
    text in the lines after it and the first line's fields all fit those types."""
    rest = pacsv.ReadOptions(autogenerate_column_names=True, skip_rows=1, block_size=BLOCK_BYTES)
    try:
        after = pacsv.open_csv(path, rest, parse, convert).schema
    except pa.ArrowInvalid:
        return True  # one line only: a header over no rows
    typed = {f.name: f.type for f in after if not (pa.types.is_string(f.type) or pa.types.is_null(f.type))}
    if not typed:
        return True
    whole = pacsv.ReadOptions(column_names=after.names, block_size=BLOCK_BYTES)
    as_text = pacsv.ConvertOptions(
        column_types={n: pa.string() for n in after.names}, null_values=[""], strings_can_be_null=True
    )
    first = pacsv.open_csv(path, whole, parse, as_text).read_next_batch().slice(0, 1)
    return any(not _fits(first.column(name), typ) for name, typ in typed.items())


def _zero_padded(
    path: Path, read: pacsv.ReadOptions, parse: pacsv.ParseOptions, schema: pa.Schema
) -> list[str]:
    """The numeric columns whose first lines write a number with a leading zero ('02152'):
    DuckDB reads those as text (a zip code, a code), so they stay text here too."""
    import pyarrow.compute as pc

    numeric = [f.name for f in schema if pa.types.is_integer(f.type) or pa.types.is_floating(f.type)]
    if not numeric:
        return []
    as_text = pacsv.ConvertOptions(
        column_types={n: pa.string() for n in numeric}, include_columns=numeric, null_values=[""]
    )
    try:
        first = pacsv.open_csv(path, read, parse, as_text).read_next_batch()
    except StopIteration:
        return []
    return [n for n in numeric if pc.any(pc.match_substring_regex(first.column(n), "^0[0-9]")).as_py()]


def _fits(values: pa.Array, typ: pa.DataType) -> bool:
    import pyarrow.compute as pc

    try:
        pc.cast(values, typ)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False
    return True


_CONVERSION = re.compile(r"\AIn CSV column #(\d+): (?:Row #\d+: )?CSV conversion error")


@contextlib.contextmanager
def _reading(
    path: Path, delimiter: str, fix: str, schema: pa.Schema | None = None, done: int = 0
) -> Iterator[None]:
    """Reading a CSV file: pyarrow's errors, which quote the line they stopped at, become
    the InputError of what went wrong where (the line, the column), never a value.
    ``schema`` and ``done`` (the records read before, the header included) locate a value
    that does not fit its column's type."""
    where = f"CSV file '{path}'"
    try:
        yield
    except OSError as err:
        if _refused(err):
            raise _unreadable(path, err) from None
        raise InputError(f"{where} cannot be read (damaged, or not what its name says); {fix}") from None
    except (pa.ArrowException, ValueError) as err:
        text = str(err)
        if text.startswith("Empty CSV file"):
            raise InputError(f"{where} is empty; pass a file with a header and rows") from None
        if text.startswith("CSV parse error: Expected"):
            ragged = ragged_line(path, delimiter)
            at = (
                f"line {ragged[0]:,} has {ragged[1]} field(s) where the header has {ragged[2]}"
                if ragged
                else "a line has another number of fields than the header"
            )
            raise InputError(
                f"{where}: {at}, so its columns cannot be read; fix or remove that line, or pass "
                "--csv-delimiter if another character separates the fields"
            ) from None
        converted = _CONVERSION.match(text)
        if converted is None:
            raise InputError(f"{where} cannot be read as CSV; fix the file, or {fix}") from None
        column = int(converted.group(1))
        field = schema.field(column) if schema is not None else None
        if field is None or pa.types.is_string(field.type):
            # text that is not UTF-8 (the only conversion of a column read as text)
            named = f"column '{field.name}'" if field is not None else f"its column {column + 1}"
            raise InputError(
                f"{where}: {named} holds bytes that are not UTF-8 text; convert the file to UTF-8, or {fix}"
            ) from None
        line = _unfit_line(path, delimiter, column, field.type, done)
        at = f"line {line:,}" if line is not None else "a line"
        typed = _TYPE_NAMES.get(str(field.type), str(field.type).upper())
        raise InputError(
            f"{where}: {at}: a value of column '{field.name}' cannot be read as {typed}, the "
            f"type read from the first lines; fix that line, or {fix}"
        ) from None


def _unfit_line(path: Path, delimiter: str, column: int, typ: pa.DataType, after: int) -> int | None:
    """The line number of the first record, after the first ``after``, whose field
    ``column`` does not fit ``typ``; None when none is found (a type pyarrow casts text to
    otherwise than it reads CSV)."""
    values: list[str | None] = []
    lines: list[int] = []
    with _open_text(path) as fh:
        rows = csv.reader(fh, delimiter=delimiter)
        for index, row in enumerate(rows):
            if index < after:
                continue
            values.append(row[column] if column < len(row) and row[column] != "" else None)
            lines.append(rows.line_num)
            if len(values) == 1 << 14:
                found = _first_unfit(values, typ)
                if found is not None:
                    return lines[found]
                values, lines = [], []
    found = _first_unfit(values, typ) if values else None
    return lines[found] if found is not None else None


def _first_unfit(values: list[str | None], typ: pa.DataType) -> int | None:
    """The index of the first value that does not cast to ``typ`` (by halving), or None."""
    array = pa.array(values, pa.string())
    if _fits(array, typ):
        return None
    lo, hi = 0, len(array)  # the first misfit lies in [lo, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _fits(array.slice(lo, mid - lo), typ):
            lo = mid
        else:
            hi = mid
    return lo


def ragged_line(path: Path, delimiter: str) -> tuple[int, int, int] | None:
    """The first line of a CSV file whose number of fields differs from its header's: (line
    number, its fields, the header's), or None."""
    with _open_text(path) as fh:
        rows = csv.reader(fh, delimiter=delimiter)
        header = next(rows, None)
        if header is None:
            return None
        for row in rows:
            if row and len(row) != len(header):
                return rows.line_num, len(row), len(header)
    return None


# ---- both ----


def _names(given: list[str], where: str) -> list[str]:
    """Column names as DuckDB's reader makes them: an empty one is column<i>, a repeated one
    (in any case) name_<n>, n counting the repeats; a name longer than the engine keeps is
    refused."""
    seen: collections.Counter[str] = collections.Counter()
    names = []
    for i, name in enumerate(given):
        name = name or f"column{i}"
        key = name.lower()
        if seen[key]:
            name = f"{name}_{seen[key]}"
        seen[key] += 1
        if len(name.encode()) > MAX_NAME_BYTES:
            raise InputError(
                f"{where}: column '{name[:20]}...' has a name of {len(name.encode())} bytes, longer "
                f"than PostgreSQL's {MAX_NAME_BYTES}, which would cut it; rename it in the file"
            )
        names.append(name)
    return names


def _refused(err: BaseException) -> bool:
    """The system would not read the file (a missing permission): an OSError with an errno,
    not pyarrow's word on the file's content."""
    return isinstance(err, OSError) and err.errno is not None


def _unreadable(path: Path, err: BaseException) -> InputError:
    why = getattr(err, "strerror", None) or "the system refused"
    return InputError(f"input file '{path}' cannot be read ({why}); pass a CSV or Parquet file you may read")
