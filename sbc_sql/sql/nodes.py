"""Small sqlglot expression builders shared by the SQL stages.

Numbers: dates count days and timestamps microseconds since 1970-01-01, so ranges and
NCP are the same in SQL and in the clustering step (both are ratios of differences).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sqlglot import exp

from ..model import Column
from .dialects import ListHasNull, SameKey, ValueSet
from .templates import col, ident


def ref(name: str, table: str | None = None) -> exp.Column:
    return col(name, table)


def as_number(expr: exp.Expression, column: Column) -> exp.Expression:
    """The numeric QI's value as DOUBLE."""
    if column.temporal == "date":
        epoch = exp.cast(exp.Literal.string("1970-01-01"), "DATE")
        return exp.cast(exp.DateDiff(this=expr, expression=epoch, unit=exp.var("DAY")), "DOUBLE")
    if column.temporal == "timestamp":
        return exp.cast(exp.UnixMicros(this=expr), "DOUBLE")
    return exp.cast(expr, "DOUBLE")


def as_category(expr: exp.Expression, column: Column) -> exp.Expression:
    """The categorical QI's value as pulled: stored types as they are, exotic ones as text."""
    base = column.type.upper()
    if base.startswith(("VARCHAR", "ENUM", "BOOLEAN", "CHAR", "TEXT", "STRING")) or base in (
        "TINYINT",
        "SMALLINT",
        "INTEGER",
        "BIGINT",
    ):
        return expr
    return exp.cast(expr, "VARCHAR")


#: categorical types whose values are text: the sentinel '' is one of their own values
_TEXT_TYPES = {"VARCHAR", "CHAR", "CHARACTER", "BPCHAR", "NCHAR", "NVARCHAR", "TEXT", "STRING", "CITEXT"}


def same_key(left: exp.Expression, right: exp.Expression, column: Column) -> exp.Expression:
    """Join condition: ``left`` and ``right``, two values of ``column``'s type, are equal, NULL
    equal to NULL (IS NOT DISTINCT FROM), in a form every engine's planner hashes (see
    :class:`~sbc_sql.sql.dialects.SameKey`). Every join on a value of the data takes it: a
    join whose only key is IS NOT DISTINCT FROM is a nested loop on PostgreSQL.

    The sentinel that stands for NULL is a constant of the column's type: 0 for a number,
    1970-01-01 for a date or a timestamp, '' for text, FALSE for a boolean; any other
    categorical type (an enum, a UUID, a time) is compared as its text. A column of no kind
    (a nested, binary or JSON column released verbatim) has no sentinel and keeps IS NOT
    DISTINCT FROM: it is never the only key of a join (the QIs or the class id are hashed)."""
    if column.kind is None:
        return exp.NullSafeEQ(this=left, expression=right)
    text = False
    sentinel: exp.Expression
    if column.temporal == "date":
        sentinel = exp.cast(exp.Literal.string("1970-01-01"), "DATE")
    elif column.temporal == "timestamp":
        zoned = re.search(r"TIME ZONE|TZ", column.type.upper()) is not None
        epoch = exp.Literal.string("1970-01-01 00:00:00")
        sentinel = exp.cast(epoch, "TIMESTAMPTZ" if zoned else "TIMESTAMP")
    elif column.kind == "numeric":
        sentinel = exp.Literal.number(0)
    else:
        t = column.type.upper().strip()
        base = re.split(r"[(\s\[]", t, maxsplit=1)[0]
        if base in ("BOOLEAN", "BOOL") and not t.endswith("]"):
            sentinel = exp.false()
        else:
            text = base not in _TEXT_TYPES or t.endswith("]")
            sentinel = exp.Literal.string("")
    return SameKey(this=left, expression=right, sentinel=sentinel, text=exp.true() if text else None)


def alias(expr: exp.Expr, name: str) -> exp.Alias:
    return exp.Alias(this=expr, alias=ident(name))


def conj(parts: Sequence[exp.Expr]) -> exp.Expr:
    """AND of the parts (TRUE when empty)."""
    if not parts:
        return exp.true()
    # one flat chain (a AND b AND c): nesting each AND in parentheses made a statement over a
    # table of 1,000 columns deeper than sqlglot renders (its recursion) or DuckDB parses
    # (max_expression_depth); a part that is an OR keeps its own parentheses
    out: exp.Expr = _operand(parts[0])
    for p in parts[1:]:
        out = exp.And(this=out, expression=_operand(p))
    return out


def _operand(part: exp.Expr) -> exp.Expr:
    return exp.paren(part, copy=False) if isinstance(part, exp.Connector) else part


def or_false(e: exp.Expression) -> exp.Expression:
    """The truth value ``e``, FALSE where it is NULL."""
    return exp.Coalesce(this=e, expressions=[exp.false()])


def text_list() -> exp.DataType:
    """The type of a list of text, which every engine names its own way (a value set read
    as text)."""
    text = exp.DataType(this=exp.DataType.Type.TEXT, nested=False)
    return exp.DataType(this=exp.DataType.Type.ARRAY, expressions=[text], nested=True)


def list_size(values: exp.Expression) -> exp.Expression:
    """Elements of a list (a value set), NULL elements included."""
    return exp.ArraySize(this=values)


def list_has_null(values: exp.Expression) -> exp.Expression:
    """The list holds a NULL element."""
    return ListHasNull(this=values)


def list_contains(values: exp.Expression, value: exp.Expression) -> exp.Expression:
    """The list holds ``value`` (a non-NULL value: NULL is asked with :func:`list_has_null`)."""
    return exp.ArrayContains(this=values, expression=value)


def value_set(value: exp.Expression, sets: int) -> exp.Expression:
    """Aggregate: the group's distinct values of ``value`` sorted, NULL as one trailing element;
    ``sets``: how many value sets the same grouping computes (an engine may build many of
    them differently from a few)."""
    return ValueSet(this=value, sets=exp.Literal.number(sets))
