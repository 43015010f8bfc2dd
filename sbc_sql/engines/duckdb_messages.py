"""DuckDB's text, read for what may be shown: its error messages and its type names.

DuckDB's messages quote the data: a CSV row that breaks the sniffed type is printed whole
("Original Line: ..."), a failed cast names the value ("Could not convert string 'x' to
INT32"), a constraint names the key, an ENUM type lists its categories. sbc-sql's messages
never show a cell value, so a DuckDB error is read here into one line of sbc-sql's own:
the operation, the cause and the fix.

What is kept of DuckDB's text is what cannot hold a value: file paths, line and column
counts, column and type names and sizes, each taken from a place in a known message that
DuckDB writes itself (a value quoted in a message comes before DuckDB's own tail, so the
tail is read from the end); and the first line of the error classes whose text is names
and SQL (catalog, binder, parser, transaction), with every single-quoted literal and each
ENUM's categories left out. Any other class is named and its text not shown.

Pure functions over strings, so the tests can feed them the messages DuckDB really gives.
"""

from __future__ import annotations

import re

from ..errors import EngineError

#: error classes whose first line names tables, columns, types, files and SQL only
SAFE_CLASSES = frozenset(
    {
        "Binder",
        "Catalog",
        "Dependency",
        "IO",
        "Invalid Configuration",
        "Missing Extension",
        "Not implemented",
        "Parser",
        "Permission",
        "TransactionContext",
    }
)
#: DuckDB's type names (and their aliases), the only words a conversion message is read for
_TYPE_WORDS = """BIGINT BIGNUM BIT BITSTRING BLOB BOOL BOOLEAN BPCHAR BYTEA CHAR DATE DATETIME
DEC DECIMAL DOUBLE ENUM FLOAT FLOAT4 FLOAT8 GUID HUGEINT INT INT1 INT128 INT16 INT2 INT32 INT4
INT64 INT8 INTEGER INTERVAL JSON LIST LONG MAP NUMERIC NVARCHAR REAL SHORT SIGNED SMALLINT STRING
STRUCT TEXT TIME TIMESTAMP TIMESTAMPTZ TIMESTAMP_MS TIMESTAMP_NS TIMESTAMP_S TIMESTAMP_US TIMETZ
TINYINT UBIGINT UHUGEINT UINT128 UINT16 UINT32 UINT64 UINT8 UINTEGER UNION USMALLINT UTINYINT UUID
VARBINARY VARCHAR VARINT"""
TYPE_NAMES = frozenset(_TYPE_WORDS.split())

_HEAD = re.compile(r"(?P<cls>[A-Z][A-Za-z ]*?) Error: (?P<rest>.*)", re.DOTALL)
# the statement DuckDB echoes after the message; it may hold a view's literals
_ECHO = re.compile(r"\n\s*LINE \d+:")
# a path as DuckDB's I/O messages quote it: file "x", file 'x', database "x" (in JSON, \"x\")
_PATH = re.compile(r"""(?:file|database|directory) \\?(?P<q>["'])(?P<path>[^"'\\]+)\\?(?P=q)""")
_PID = re.compile(r"\(PID (?P<pid>\d+)\)")
# a cast's tail: "... to INT32 when casting from source column x" ends the message
_CAST_TAIL = re.compile(
    r"\sto '?(?P<type>[A-Z][A-Z0-9_]*)(?:\(\d+(?:,\s*\d+)?\))?'?"
    r"(?: when casting from source column (?P<col>[^'\"\s]+))?\s*$"
)
_CSV_LINE = re.compile(r"\ACSV Error on Line: (?P<line>\d+)")
_CSV_SNIFF = re.compile(r'\AError when sniffing file "(?P<path>[^"]+)"\.')
_CSV_FILE = re.compile(r"^  file = (?P<path>.+)$", re.MULTILINE)
_CSV_COLUMNS = re.compile(r"^Expected Number of Columns: (?P<want>\d+) Found: (?P<got>\d+)$", re.MULTILINE)
_CSV_CONVERTED = re.compile(
    r"^Column (?P<col>.+) is being converted as type (?P<type>[A-Z][A-Z0-9_]*)$", re.MULTILINE
)
_CSV_LINE_SIZE = re.compile(
    r"^Maximum line size of (?P<limit>\d+) bytes exceeded\. Actual Size:\s*(?P<size>\d+) bytes\.$",
    re.MULTILINE,
)
_CSV_LINE_SIZE_FIX = re.compile(r"^Possible Solution: .*max_line_size=(?P<size>\d+)$", re.MULTILINE)
_CSV_SETTINGS = "\n  delimiter = "
# the messages that say a file is not what it should be, each at the start of DuckDB's text
_CORRUPT = re.compile(
    r"\A(?:The file .* exists, but it is not a valid DuckDB database file"
    r"|Could not read enough bytes from file"
    r"|Corrupt database file"
    r"|No magic bytes found at end of file"
    r"|File .* too small to be a Parquet file"
    r"|Failed to read file .*: \w+ decompression failure"
    r"|Failed to read Parquet file"
    r"|TProtocolException: )"
)
_REREAD = (
    "read it into a table yourself with DuckDB's read_csv and the options it needs "
    "({options}) and pass that table with --table"
)
# conversions whose message names the type in words before the value
_FIELD = re.compile(r"\A(?:invalid )?(?P<type>date|timestamp|time) field (?:value out of range|format)")


def display_type(sql_type: str) -> str:
    """A DuckDB type name with every ENUM's categories left out: ``ENUM('HIV', 'flu')`` is
    shown as ``ENUM``, also inside STRUCT, UNION, MAP and lists (the categories are data)."""
    out: list[str] = []
    i, n = 0, len(sql_type)
    while i < n:
        if sql_type[i] == '"':  # a quoted field name, copied whole ("" inside is one quote)
            end = i + 1
            while end < n and (sql_type[end] != '"' or sql_type[end + 1 : end + 2] == '"'):
                end += 2 if sql_type[end] == '"' else 1
            out.append(sql_type[i : end + 1])
            i = end + 1
            continue
        starts_word = i == 0 or not (sql_type[i - 1].isalnum() or sql_type[i - 1] == "_")
        if starts_word and sql_type[i : i + 5].upper() == "ENUM(":
            out.append(sql_type[i : i + 4])
            i = _after_group(sql_type, i + 4)
            continue
        out.append(sql_type[i])
        i += 1
    return "".join(out)


def _after_group(text: str, start: int) -> int:
    """The position after the parenthesized group opening at ``start`` (quotes respected)."""
    depth, quote, i = 0, "", start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == quote and text[i + 1 : i + 2] == quote:
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)


def redact(line: str) -> str:
    """A line of DuckDB's text with its single-quoted literals and ENUM categories left out."""
    return re.sub(r"'(?:[^']|'')*'", "'...'", display_type(line))


def error_class(message: str) -> str:
    """DuckDB's error class: 'Conversion' for 'Conversion Error: ...' ('' if none)."""
    head = _HEAD.match(message)
    return head.group("cls") if head else ""


def explain(message: str, doing: str) -> EngineError:
    """One line of sbc-sql's own for a DuckDB error met while ``doing`` (e.g. "creating
    table 'x'"): the operation, the cause and the fix, never a value from ``message``."""
    echoed = list(_ECHO.finditer(message))
    if echoed:
        message = message[: echoed[-1].start()]
    head = _HEAD.match(message)
    cls, rest = (head.group("cls"), head.group("rest")) if head else ("", message)
    if _CSV_LINE.match(rest) or _CSV_SNIFF.match(rest):
        return _csv(rest, cls)
    if cls == "Conversion":
        return _conversion(rest, doing)
    if cls in ("IO", "Invalid Input", "Permission", "Out of Memory", "TransactionContext", ""):
        found = _file_or_memory(rest, cls, doing)
        if found is not None:
            return found
    if cls in SAFE_CLASSES:
        first = redact(rest.splitlines()[0] if rest else "").rstrip()
        return EngineError(f"{doing}: DuckDB {cls} error: {first}", "other")
    named = f"a DuckDB {cls} error" if cls else "a DuckDB error"
    return EngineError(
        f"{doing}: {named} (its text is not shown, as it may quote the data); check the "
        "table, view or file named here, or rerun with --debug to see where it happened",
        "other",
    )


def _file_or_memory(rest: str, cls: str, doing: str) -> EngineError | None:
    """A full disk, a denied or missing path, a locked or corrupt file, or too little
    memory; None for anything else. Paths are read only from I/O messages and from the
    start of the messages that name a file (DuckDB's own words, before any data)."""
    first = rest.split("\n", 1)[0]
    # a failed commit is a transaction error whose text is the I/O error that failed it
    io = cls in ("IO", "Permission", "TransactionContext")
    path = ""
    if io or _CORRUPT.match(rest):
        found = _PATH.search(first) or re.match(r"\AFile '(?P<path>[^']+)'", first)
        path = found.group("path") if found else ""
    at = f" ('{path}')" if path else ""
    if io and "No space left on device" in first:
        return EngineError(
            f"{doing}: No space left on device{at}; free space on that disk (DuckDB also "
            "spills to a .tmp folder beside the database) or write elsewhere, and run again",
            "disk-full",
        )
    if io and ("Permission denied" in first or "Operation not permitted" in first):
        return EngineError(
            f"{doing}: permission denied{at}; make it writable for you or choose a path you can write",
            "permission",
        )
    if io and "Could not set lock on file" in first:
        pid = _PID.search(first)
        who = f"another process (PID {pid.group('pid')})" if pid else "another process"
        return EngineError(f"{doing}: {who} has '{path}' open; close it there and run again", "locked")
    if io and "No such file or directory" in first:
        return EngineError(
            f"{doing}: '{path}' does not exist (no such file or folder); give a path in an existing folder",
            "missing",
        )
    if io and "Is a directory" in first:
        return EngineError(f"{doing}: '{path}' is a folder; give a file", "missing")
    if _CORRUPT.match(rest):
        parquet = "arquet" in first or "TProtocol" in first or "decompression" in first
        what = "Parquet file" if parquet else "DuckDB database file"
        named = f"'{path}'" if path else "the file"
        return EngineError(
            f"{doing}: {named} is not a valid {what}, or it is truncated or corrupt; "
            "restore it from a copy or pass another file",
            "corrupt",
        )
    if cls == "Out of Memory":
        sizes = redact(first).rstrip(".")
        return EngineError(
            f"{doing}: DuckDB ran out of memory ({sizes}); raise --memory-limit, free memory, "
            "or run on fewer rows or columns",
            "memory",
        )
    return None


def _type_name(name: str | None) -> str | None:
    return name if name is not None and name.upper() in TYPE_NAMES else None


def _conversion(rest: str, doing: str) -> EngineError:
    """A value its target type cannot hold: the column and the type, never the value."""
    tail = _CAST_TAIL.search(display_type(rest))
    to = _type_name(tail.group("type")) if tail else None
    field = _FIELD.match(rest)
    if field:
        tail, to = None, field.group("type").upper()
    column = tail.group("col") if tail else None
    of = f"a value of column '{column}'" if column else "a value"
    as_type = f"cannot be read as {to}" if to else "cannot be read as the type asked for"
    return EngineError(
        f"{doing}: {of} {as_type}; fix or remove such values where they come from (the "
        "table, view or file), or declare the column with a type that holds them",
        "conversion",
    )


def _first_line_over(path: str, limit: int) -> int | None:
    """The number of the file's first line longer than ``limit`` bytes (its end of line
    left out), read by its length alone; None when the file cannot be read or has none."""
    number, length = 1, 0
    try:
        with open(path, "rb") as file:
            while chunk := file.read(1 << 20):
                start = 0
                while (end := chunk.find(b"\n", start)) >= 0:
                    if length + end - start > limit:
                        return number
                    number, length, start = number + 1, 0, end + 1
                length += len(chunk) - start
                if length > limit:
                    return number
    except OSError:
        return None
    return None


def _csv(rest: str, cls: str) -> EngineError:
    """A CSV file DuckDB could not read: the file, the line number and why, never a line's
    content. DuckDB's summary (the column it converted, its settings) follows the line it
    quotes, so each is read from the end."""
    sniff = _CSV_SNIFF.match(rest)
    settings = rest.rfind(_CSV_SETTINGS)
    tail = rest[rest.rfind("\n", 0, settings) :] if settings >= 0 else ""
    named = _CSV_FILE.search(tail)
    path = sniff.group("path") if sniff else named.group("path") if named else ""
    where = f"CSV file '{path}'" if path else "the CSV file"
    if sniff:
        return EngineError(
            f"{where}: DuckDB could not detect its layout (delimiter, quoting, the same number "
            "of columns on every line); fix the file, or "
            + _REREAD.format(options="delim, quote, header, columns"),
            "csv",
        )
    line = _CSV_LINE.match(rest)
    at = f"line {line.group('line')}" if line else "a line"
    body = rest[:settings] if settings >= 0 else rest
    # a conversion's summary line, or a ragged line's counts, is DuckDB's last of its kind
    converted = list(_CSV_CONVERTED.finditer(body)) if cls == "Conversion" else []
    columns = list(_CSV_COLUMNS.finditer(body)) if cls == "Invalid Input" else []
    if columns:
        got, want = columns[-1].group("got"), columns[-1].group("want")
        return EngineError(
            f"{where}: {at} has {got} columns, expected {want}; fix that line, or "
            + _REREAD.format(options="null_padding=true, or ignore_errors=true to skip such lines"),
            "csv",
        )
    if converted:
        column, typed = converted[-1].group("col"), _type_name(converted[-1].group("type"))
        return EngineError(
            f"{where}: {at}: a value of column '{column}' cannot be read as "
            f"{typed or 'its detected type'}, the type DuckDB detected from the first lines; "
            "fix that line, or "
            + _REREAD.format(options="types={...} with the column's type, or sample_size=-1"),
            "csv",
        )
    too_long = list(_CSV_LINE_SIZE.finditer(body))
    if too_long:
        # DuckDB numbers the line in its buffer, not in the file (a long line 9 is its line
        # 1): the file's own line is found by reading it, its length compared, never shown
        limit, size = int(too_long[-1].group("limit")), int(too_long[-1].group("size"))
        found = _first_line_over(path, limit) if path else None
        at = f"line {found:,}" if found is not None else "a line"
        suggested = _CSV_LINE_SIZE_FIX.search(body[too_long[-1].end() :])
        wanted = int(suggested.group("size")) if suggested else size + 2
        return EngineError(
            f"{where}: {at} is {size:,} bytes long, over DuckDB's line-size limit of {limit:,} "
            "bytes (max_line_size); shorten that line, or "
            + _REREAD.format(options=f"max_line_size={wanted}"),
            "csv",
        )
    if "\nInvalid unicode (byte sequence mismatch) detected." in body:
        return EngineError(
            f"{where}: {at} is not UTF-8; convert the file to UTF-8, or "
            + _REREAD.format(options="encoding"),
            "csv",
        )
    return EngineError(
        f"{where}: {at} cannot be read as CSV; fix that line, or "
        + _REREAD.format(options="quote, escape, null_padding or ignore_errors"),
        "csv",
    )
