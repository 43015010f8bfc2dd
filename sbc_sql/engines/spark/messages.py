"""Spark's errors read for what may be shown: their error class (condition), SQLSTATE and the
Java classes of their causes, never their text.

Spark's messages quote the statement and often a value (``[CAST_INVALID_INPUT] The value
'...' of the type ...``), so an error is known by its condition alone: a word Spark fixes
per kind of error (``PATH_NOT_FOUND``, ``ARITHMETIC_OVERFLOW``). An error raised inside a
job arrives wrapped (a job aborted because a task failed); its causes are walked for the
first condition, and for the Java classes that say what happened where no condition does
(an out-of-memory error, a full disk).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from ...errors import EngineError

#: the fix for a column of a type Spark cannot read
UNREADABLE_FIX = "write it as a type Spark reads, or read the files with DuckDB (--engine duckdb)"

#: condition -> (what went wrong, in sbc-sql's words, with the fix; the EngineError's kind)
CONDITIONS: dict[str, tuple[str, str]] = {
    "PATH_NOT_FOUND": ("a file or folder it reads does not exist; check the path", "missing"),
    "TABLE_OR_VIEW_NOT_FOUND": ("a table or view it names does not exist", "missing"),
    "SCHEMA_NOT_FOUND": ("a database (schema) it names does not exist", "missing"),
    "UNRESOLVED_COLUMN": ("a column it names does not exist", "missing"),
    "AMBIGUOUS_REFERENCE": (
        "two columns have names that differ only in case, which Spark takes as one name; rename one of them",
        "other",
    ),
    "COLUMN_ALREADY_EXISTS": (
        "two columns have names that differ only in case, which Spark takes as one name; rename one of them",
        "other",
    ),
    "CAST_INVALID_INPUT": (
        "a value cannot be read as the type asked for (its text is not shown, as it quotes the data)",
        "conversion",
    ),
    "CAST_OVERFLOW": ("a value does not fit the type asked for", "conversion"),
    "ARITHMETIC_OVERFLOW": (
        "a number overflowed its type (Spark checks arithmetic in ANSI mode); rescale the column "
        "or declare it with --keep/--drop",
        "conversion",
    ),
    "NUMERIC_VALUE_OUT_OF_RANGE": ("a number does not fit its decimal type", "conversion"),
    "DIVIDE_BY_ZERO": ("a division by zero", "conversion"),
    "DATETIME_OVERFLOW": ("a date or timestamp is out of range", "conversion"),
    "MALFORMED_RECORD_IN_PARSING": (
        "a line of the CSV file does not fit its header or its columns' types (its content is "
        "not shown); fix the line, or pass --csv-delimiter / --csv-header",
        "csv",
    ),
    "FAILED_READ_FILE": (
        "a file could not be read: it is damaged, truncated or not of its format",
        "corrupt",
    ),
    "UNABLE_TO_INFER_SCHEMA": ("the files hold no rows Spark can read a schema from", "corrupt"),
    "INSUFFICIENT_TABLE_PROPERTY": ("a table lacks a property it needs", "other"),
    "TABLE_OR_VIEW_ALREADY_EXISTS": ("a table or view of that name exists already", "other"),
    "LOCATION_ALREADY_EXISTS": (
        "the folder of a table of that name exists already; remove it or choose another name",
        "other",
    ),
    "PATH_ALREADY_EXISTS": ("the folder exists already", "other"),
    "INSUFFICIENT_PERMISSIONS": ("the user lacks a privilege it needs", "permission"),
    "TASK_WRITE_FAILED": ("writing the files failed (a full disk, or a folder it cannot write)", "other"),
    "UNSUPPORTED_DATA_TYPE_FOR_DATASOURCE": (
        "a column's type cannot be written as Parquet; declare it with --drop",
        "other",
    ),
    "INVALID_COLUMN_NAME_AS_PATH": ("a column name cannot be used by the file format", "other"),
    # a Parquet path's error names the column (see files.py); a catalog table's names the type
    "PARQUET_TYPE_ILLEGAL": (f"a column has a Parquet type Spark cannot read; {UNREADABLE_FIX}", "other"),
    "PARQUET_TYPE_NOT_SUPPORTED": (
        f"a column has a Parquet type Spark cannot read; {UNREADABLE_FIX}",
        "other",
    ),
    "PARQUET_TYPE_NOT_RECOGNIZED": (
        f"a column has a Parquet type Spark cannot read; {UNREADABLE_FIX}",
        "other",
    ),
    "UNSUPPORTED_TIME_TYPE": (
        f"a column is a time of day, which Spark cannot read; {UNREADABLE_FIX}",
        "other",
    ),
}

#: conditions whose parameter names a type (never a value): the parameter is kept, and shown
TYPE_PARAMETERS = {"PARQUET_TYPE_ILLEGAL": "parquetType", "PARQUET_TYPE_NOT_SUPPORTED": "parquetType"}

#: Java classes of a cause (or their ends) -> (what went wrong, kind); asked when no
#: condition says it
CLASSES: tuple[tuple[str, tuple[str, str]], ...] = (
    (
        "OutOfMemoryError",
        ("Spark ran out of memory; give the driver more (--spark-conf spark.driver.memory=4g)", "memory"),
    ),
    ("AccessDeniedException", ("a file or folder cannot be read or written by this user", "permission")),
    ("FileAlreadyExistsException", ("a file or folder of that name exists already", "other")),
    ("FileNotFoundException", ("a file or folder it reads does not exist", "missing")),
)

#: fixed phrases of Java's and the file system's own (not of the data), matched, never shown
PHRASES: tuple[tuple[str, tuple[str, str]], ...] = (
    ("No space left on device", ("the disk is full; free space there", "disk-full")),
    ("Disk quota exceeded", ("the disk quota is exceeded; free space there", "disk-full")),
    ("Permission denied", ("a file or folder cannot be read or written by this user", "permission")),
)


@dataclass
class Reading:
    """What an exception says that may be shown."""

    condition: str | None = None
    #: every condition of the cause chain, outermost first
    conditions: list[str] = field(default_factory=list)
    classes: list[str] = field(default_factory=list)
    #: the causes' messages, only matched against PHRASES
    texts: list[str] = field(default_factory=list)
    #: condition -> the type its TYPE_PARAMETERS parameter names
    types: dict[str, str] = field(default_factory=dict)

    @property
    def type(self) -> str | None:
        """The type the condition names, where it names one."""
        return self.types.get(self.condition or "")


def read(err: BaseException) -> Reading:
    """The condition and cause classes of a pyspark or py4j exception: the condition is the
    innermost one this module knows (a file that failed to read because a CSV line does not
    fit says the latter), else the outermost."""
    reading = Reading()
    getter = getattr(err, "getCondition", None)
    if callable(getter):
        with contextlib.suppress(Exception):  # a py4j call on a stopped JVM
            condition = getter()
            if condition:
                reading.conditions.append(str(condition))
                _keep_type(str(condition), err, reading)
    reading.classes.append(type(err).__name__)
    java = getattr(err, "java_exception", None) or getattr(err, "_origin", None)
    _walk(java, reading)
    known = [c for c in reading.conditions if _known(c)]
    reading.condition = known[-1] if known else (reading.conditions[0] if reading.conditions else None)
    return reading


def _known(condition: str) -> bool:
    return condition in CONDITIONS or condition.split(".")[0] in CONDITIONS


def _walk(throwable: Any, reading: Reading) -> None:
    """The Java cause chain, at most a few links deep."""
    seen = 0
    while throwable is not None and seen < 12:
        seen += 1
        try:
            reading.classes.append(str(throwable.getClass().getName()))
            if _is_spark_throwable(throwable):
                condition = throwable.getCondition()
                if condition and str(condition) not in reading.conditions:
                    reading.conditions.append(str(condition))
                    _keep_type(str(condition), throwable, reading)
            message = throwable.getMessage()
            if message:
                reading.texts.append(str(message))
            throwable = throwable.getCause()
        except Exception:
            return


def _keep_type(condition: str, err: Any, reading: Reading) -> None:
    """The type a condition of TYPE_PARAMETERS names, read from its parameters (a dict from
    pyspark, a java.util.Map from the JVM)."""
    name = TYPE_PARAMETERS.get(condition)
    if name is None:
        return
    with contextlib.suppress(Exception):
        value = err.getMessageParameters().get(name)
        if value:
            reading.types[condition] = str(value)


def _is_spark_throwable(throwable: Any) -> bool:
    try:
        return any(
            str(i.getName()) == "org.apache.spark.SparkThrowable" for i in _interfaces(throwable.getClass())
        )
    except Exception:
        return False


def _interfaces(cls: Any) -> list[Any]:
    found: list[Any] = []
    while cls is not None:
        found.extend(cls.getInterfaces())
        cls = cls.getSuperclass()
    return found


def explain(reading: Reading, doing: str) -> EngineError:
    """The EngineError for what ``reading`` says went wrong while ``doing``; its
    ``condition`` attribute is Spark's error class (empty when none was given)."""
    error = _explained(reading, doing)
    error.condition = reading.condition or ""  # type: ignore[attr-defined]
    error.named_type = reading.type  # type: ignore[attr-defined]
    return error


def _explained(reading: Reading, doing: str) -> EngineError:
    condition = reading.condition or ""
    said = CONDITIONS.get(condition) or CONDITIONS.get(condition.split(".")[0])
    if said is None:
        for name, meaning in CLASSES:
            if any(c.endswith(name) for c in reading.classes):
                said = meaning
                break
    if said is None:
        for phrase, meaning in PHRASES:
            if any(phrase in t for t in reading.texts):
                said = meaning
                break
    if said is None:
        what = f"a Spark error of class {condition}" if condition else "a Spark error"
        said = (
            f"{what} (its text is not shown, as it may quote the data); rerun with --debug to see where",
            "other",
        )
        return EngineError(f"{doing}: {said[0]}", said[1])
    shown = f" ({condition})" if condition else ""
    if reading.type:
        shown = f" ({condition}: {reading.type})"
    return EngineError(f"{doing}: {said[0]}{shown}", said[1])
