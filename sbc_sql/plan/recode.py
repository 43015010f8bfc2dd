"""How a run recodes each class's QIs: generalized (ranges and value sets, the default) or
microaggregated (``--recode microaggregate``: one value per QI, the class's mean, median or
mode; a categorical QI's mode or its value set). The option combinations a run refuses, and
each QI's aggregate, decided before any data is read."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from .. import choices
from ..errors import InputError
from ..model import Column
from .options import Options

#: a microaggregated numeric QI's aggregate unless --aggregate says
DEFAULT_AGGREGATE = "mean"
#: a microaggregated categorical QI's aggregate unless --aggregate-categorical says
DEFAULT_CATEGORICAL = "mode"


def check_recode(options: Options) -> None:
    """Refuse a recode, or an aggregate, the run cannot take: an unknown name, an aggregate
    asked of a generalized release, and what a microaggregated release cannot keep (a
    refresh's placement into published classes, per-column limits on ranges and sets it
    does not publish)."""
    if options.recode not in choices.RECODES:
        raise InputError(f"--recode '{options.recode}' is not one of {', '.join(choices.RECODES)}")
    for flag, value, allowed in (
        ("--aggregate", options.aggregate, choices.AGGREGATES),
        ("--aggregate-categorical", options.aggregate_categorical, choices.CATEGORICAL_AGGREGATES),
    ):
        if value is None:
            continue
        if value not in allowed:
            raise InputError(f"{flag} '{value}' is not one of {', '.join(allowed)}")
        if options.recode != "microaggregate":
            raise InputError(
                f"{flag} {value} applies to a microaggregated release only; add --recode "
                f"microaggregate, or drop {flag}"
            )
    if options.recode != "microaggregate":
        return
    if options.incremental:
        raise InputError(
            "--recode microaggregate cannot be --incremental: a refresh adds rows to published "
            "classes, which would change their released values; drop --incremental"
        )
    for flag, given in (("--max-width", options.max_width), ("--max-values", options.max_values)):
        if given:
            raise InputError(
                f"{flag} limits the ranges and value sets of a generalized release, which "
                f"--recode microaggregate does not publish; drop {flag}"
            )


def recoded(columns: Sequence[Column], options: Options) -> list[Column]:
    """The columns with each QI's aggregate set when the release is microaggregated (a
    numeric QI takes --aggregate, a categorical one --aggregate-categorical); as they are
    when generalized. The mean of a TIMESTAMP QI is refused: it has no value of the column's
    type every engine computes alike (its median and mode are values of the class)."""
    if options.recode != "microaggregate":
        return list(columns)
    out = []
    for c in columns:
        if c.role != "qi":
            out.append(c)
            continue
        if c.kind == "numeric":
            aggregate = options.aggregate or DEFAULT_AGGREGATE
            if aggregate == "mean" and c.temporal == "timestamp":
                raise InputError(
                    f"--aggregate mean cannot release timestamp column '{c.name}' (of type {c.type}); "
                    "give --aggregate median or --aggregate mode"
                )
        else:
            aggregate = options.aggregate_categorical or DEFAULT_CATEGORICAL
        out.append(dataclasses.replace(c, aggregate=aggregate))
    return out
