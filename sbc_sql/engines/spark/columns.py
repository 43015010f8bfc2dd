"""Spark's column types as sbc-sql reads them: the type a release's checks name, and how it
reads as a QI."""

from __future__ import annotations

from typing import Any


def type_info(data_type: Any) -> tuple[str, str | None, str | None]:
    """(type as the release's checks name it, kind, temporal) of a Spark data type: numbers,
    dates and timestamps are numeric, strings and booleans categorical; kind None for
    binary, nested, interval and other types no QI can have."""
    from pyspark.sql import types as t

    simple: list[tuple[type, str, str | None, str | None]] = [
        (t.ByteType, "TINYINT", "numeric", None),
        (t.ShortType, "SMALLINT", "numeric", None),
        (t.IntegerType, "INTEGER", "numeric", None),
        (t.LongType, "BIGINT", "numeric", None),
        (t.FloatType, "FLOAT", "numeric", None),
        (t.DoubleType, "DOUBLE", "numeric", None),
        (t.DateType, "DATE", "numeric", "date"),
        (t.TimestampNTZType, "TIMESTAMP", "numeric", "timestamp"),
        (t.TimestampType, "TIMESTAMP WITH TIME ZONE", "numeric", "timestamp"),
        (t.BooleanType, "BOOLEAN", "categorical", None),
        (t.StringType, "VARCHAR", "categorical", None),
        (t.BinaryType, "BLOB", None, None),
        (t.NullType, "NULL", None, None),
    ]
    for cls, shown, kind, temporal in simple:
        if isinstance(data_type, cls):
            return shown, kind, temporal
    if isinstance(data_type, t.DecimalType):
        return f"DECIMAL({data_type.precision},{data_type.scale})", "numeric", None
    if isinstance(data_type, t.ArrayType):
        return type_info(data_type.elementType)[0] + "[]", None, None
    if isinstance(data_type, t.MapType):
        return "MAP", None, None
    if isinstance(data_type, t.StructType):
        return "STRUCT", None, None
    return str(data_type.typeName()).upper(), None, None


def has_equality(data_type: Any) -> bool:
    """Whether Spark compares values of the type for equality: not a MAP or a VARIANT, nor
    an array or struct that holds one."""
    from pyspark.sql import types as t

    if isinstance(data_type, (t.MapType, t.VariantType)):
        return False
    if isinstance(data_type, t.ArrayType):
        return has_equality(data_type.elementType)
    if isinstance(data_type, t.StructType):
        return all(has_equality(f.dataType) for f in data_type.fields)
    return True


def typed(f: Any) -> tuple[str, str | None, str | None, str | None, bool]:
    """(type, comment, kind, temporal, equality) of a schema field, as ColumnInfo takes them
    after its name."""
    shown, kind, temporal = type_info(f.dataType)
    comment = (f.metadata or {}).get("comment")
    return shown, comment, kind, temporal, has_equality(f.dataType)
