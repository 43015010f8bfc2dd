"""The types every layer shares, and nothing else: a table as an engine reads it, a column
with its role, how a CSV input is read, the names a release writes.

This module is the bottom of the package: it imports nothing of sbc_sql, so the command
line, the run, the stages, the privacy models, the engines, the SQL builders and the
clustering can all speak of the same columns without importing one another
(ARCHITECTURE.md, "Layers").
"""

from __future__ import annotations

from dataclasses import dataclass

#: the roles a column can take in a release
ROLES = ("qi", "sensitive", "identifier", "insensitive")


@dataclass(frozen=True)
class ColumnInfo:
    """A column as the engine's catalog gives it, before any role is decided."""

    name: str
    #: the type as the engine names it, without values: an ENUM's categories are data, so
    #: ``ENUM('a', 'b')`` is ``ENUM`` here (the kind below is read from the full type)
    type: str
    comment: str | None
    #: how the engine's type reads as a QI: 'numeric' (numbers, dates, timestamps) or
    #: 'categorical'; None when no QI can have that type (nested, binary, intervals)
    kind: str | None = None
    #: 'date' or 'timestamp' for a numeric kind counted in days or microseconds
    temporal: str | None = None
    #: whether the engine compares its values for equality, which grouping them into classes
    #: and checking a released value against its source take: not PostgreSQL's json, xml and
    #: geometric types, nor Spark's MAP and VARIANT (nor arrays and structs of them)
    equality: bool = True


@dataclass(frozen=True)
class TableInfo:
    """An input table as the engine reads it."""

    name: str
    columns: tuple[ColumnInfo, ...]
    #: the user's input when it was copied into a temporary table for this run (a CSV or
    #: Parquet path, or a view, which has no stable row positions)
    from_file: str | None = None
    #: every object of the database the input reads: a table itself; a view, and the tables
    #: and views it selects from, transitively. No output may replace any of them.
    reads: tuple[str, ...] = ()
    #: where a release of this input goes when no output is named: None for the working
    #: schema; a folder (as the engine names paths) for an engine that writes a file
    #: input's release beside it
    output_folder: str | None = None


@dataclass(frozen=True)
class CsvOptions:
    """How a CSV input is read; None leaves it to the engine's sniffer."""

    delimiter: str | None = None
    header: bool | None = None


@dataclass(frozen=True)
class Column:
    """A column of a run, with the role it takes in the release."""

    name: str
    type: str
    role: str
    #: 'numeric' or 'categorical' as the engine reads the column's type (every QI has one;
    #: None: no QI can have that type)
    kind: str | None = None
    #: for numeric columns stored as DATE or TIMESTAMP: 'date' or 'timestamp'
    temporal: str | None = None
    #: where the role came from: 'flag', 'comment' or 'default'
    origin: str = "default"
    #: a microaggregated QI's released value: 'mean', 'median' or 'mode' of its class, or
    #: 'values' (a categorical QI's value set, as generalized); None: generalized
    aggregate: str | None = None

    @property
    def release_columns(self) -> list[str]:
        """Its columns in the release: a generalized numeric QI's range and NULL flag, else
        its name (a microaggregated QI's one value, a categorical QI's value set)."""
        if self.role == "qi" and self.kind == "numeric" and self.aggregate is None:
            return [self.name + s for s in ("_min", "_max", "_has_null")]
        return [self.name]

    @property
    def one_value(self) -> bool:
        """Whether the release shows this QI as one value of its class (microaggregated:
        mean, median or mode) rather than a range or a value set."""
        return self.role == "qi" and self.aggregate in ("mean", "median", "mode")


def release_objects_of(output: str) -> tuple[str, str, str, str]:
    """The names a release called ``output`` writes: the release view, its row and class
    tables, and the text view."""
    return (output, f"{output}_rows", f"{output}_classes", f"{output}_view")


def ledger_objects_of(output: str) -> tuple[str, str]:
    """The tables an incremental release called ``output`` keeps beside it, never published:
    its ledger of released rows and its pending rows (:mod:`sbc_sql.stages.ledger`)."""
    return (f"{output}_seen", f"{output}_pending")
