"""Rows inside a release's classes: the condition that a row lies within its class's
generalization, and the (class, value) pairs that meet rows with only the classes that can
hold them, on a key every planner can hash.

A class generalizes each QI to a range (numbers, dates; NULL only where the class holds it)
or a value set (categories). Verification holds each class's released values to the source
rows inside it, a refresh finds the published classes a new row lies inside, and k-map and
delta-presence count the population rows inside each class: each joins its rows to the
classes' pairs of one or two QIs (:func:`pairs_sql`) and tests the other QIs
(:func:`inside`) on what the join keeps, rather than meeting every class with every row.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from ..model import Column
from .nodes import conj, list_contains, list_has_null, ref, same_key
from .templates import render

#: the pairs' key columns, in the order of the QIs they join on
KEYS = ("sbc_key", "sbc_key2")


def inside(c: Column, row: str, cls: str) -> exp.Expression:
    """The row's value of QI c lies within its class's range or set (NULL included)."""
    value = ref(c.name, row)
    is_null = exp.Is(this=value, expression=exp.Null())
    if c.kind == "numeric":
        in_range = exp.Between(this=value, low=ref(c.name + "_min", cls), high=ref(c.name + "_max", cls))
        return exp.Case(ifs=[exp.If(this=is_null, true=ref(c.name + "_has_null", cls))], default=in_range)
    values = ref(c.name, cls)
    has_null = list_has_null(values)
    contains = list_contains(values, value)
    return exp.Case(ifs=[exp.If(this=is_null, true=has_null)], default=contains)


def value_pairs_sql(c: Column, original: str, release: str) -> exp.Expression:
    """(class, value) pairs of QI c: a categorical QI's value sets unnested, a numeric QI's
    values in ``original`` numbered between its ranges' bounds (:func:`range_spans_sql`)."""
    if c.kind == "numeric":
        spans = range_spans_sql(c, original, release)
        return render("value_pairs_range", release=release, original=original, key=c.name, spans=spans)
    return render("value_pairs_set", release=release, key=c.name)


def range_spans_sql(c: Column, original: str, release: str) -> exp.Expression:
    """Each class's range of the numeric QI c among the values of ``original``
    (range_spans.sql)."""
    return render("range_spans", release=release, original=original, key=c.name)


def pairs_sql(keys: Sequence[Column], original: str, release: str) -> exp.Expression:
    """The (class, value[, value]) pairs of one or two QIs (``keys``) of ``release``, their
    values those of ``original``: the key columns :data:`KEYS`."""
    pairs = [value_pairs_sql(c, original, release) for c in keys]
    if len(pairs) == 1:
        return pairs[0]
    return render("value_pairs_two", first=pairs[0], second=pairs[1])


def pairs_match(keys: Sequence[Column], row: str, pairs: str) -> exp.Expr:
    """The row (aliased ``row``) has the values of the pair (aliased ``pairs``) of
    :func:`pairs_sql`: NULL equal to NULL, on a key every planner can hash."""
    return conj([same_key(ref(c.name, row), ref(key, pairs), c) for c, key in zip(keys, KEYS, strict=False)])
