"""The population risk of a table or a release, read from the database: the frequencies of
its keys (one ``GROUP BY``, ``sql/templates/population_keys.sql`` with per-record weights,
``report_sizes.sql`` with a sampling fraction) handed to the estimators of
:mod:`sbc_sql.quality.population`.

The sample's link to its population is given one of two ways: a **sampling fraction** (every
record stands for 1 / fraction people; the population N = records / fraction) or a column of
**per-record weights** (each record stands for its weight in people, 1 or more; N = the sum
of the weights). Before release the keys are the QI tuples of the table (``profile``); after
release the classes' generalized tuples (``evaluate``), each class one key of its size.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..engines.base import Engine
from ..errors import InputError
from ..model import Column, ColumnInfo
from ..sql.templates import render
from . import population

#: the smallest weight a record may have: it stands for itself at least
LEAST_WEIGHT = 1.0
FRACTION_FLAG = "--sampling-fraction"
WEIGHTS_FLAG = "--sample-weights"


@dataclass(frozen=True)
class Basis:
    """How the sample stands for its population: a fraction, or a weights column."""

    fraction: float | None = None
    weights: str | None = None

    @property
    def given(self) -> bool:
        return self.fraction is not None or self.weights is not None


@dataclass(frozen=True)
class PopulationRisk:
    """The population-risk figures of one set of keys (definitions:
    :mod:`sbc_sql.quality.population`)."""

    #: 'sampling fraction' or 'weights'
    basis: str
    #: the weights column, with weights
    weights_column: str | None
    #: records / population: the fraction given, or records / the sum of the weights
    sampling_fraction: float
    records: int
    population: float
    sample_uniques: int
    #: estimated population uniques by each estimator (None: it found no answer)
    zayatz: float | None
    pitman: float | None
    snb: float | None
    #: the decision rule's estimator, its estimate, and that over the population
    model: str
    population_uniques: float
    population_unique_share: float
    #: the Benedetti-Franconi individual risk, summed up
    global_risk: float
    expected_reidentifications: float
    highest_individual_risk: float
    #: shares of records whose individual risk is above 20 %, 10 %, 5 %
    individual_above_20: float
    individual_above_10: float
    individual_above_5: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def basis(sampling_fraction: float | None, sample_weights: str | None) -> Basis:
    """The basis asked, checked: at most one of the two, a fraction in (0, 1]."""
    if sampling_fraction is not None and sample_weights:
        raise InputError(
            f"both {FRACTION_FLAG} and {WEIGHTS_FLAG} are given; the population is estimated from "
            "one of them: give the fraction when every record was drawn with the same chance, the "
            "weights column when the records stand for different numbers of people"
        )
    if sampling_fraction is not None:
        value = float(sampling_fraction)
        if not (math.isfinite(value) and 0 < value <= 1):
            raise InputError(
                f"{FRACTION_FLAG} {sampling_fraction} is outside (0, 1]: it is the share of the "
                "population the table holds, e.g. --sampling-fraction 0.01 for a 1 % sample, 1 "
                "for the whole population"
            )
        return Basis(fraction=value)
    return Basis(weights=sample_weights or None)


def check_weights(
    engine: Engine, source: str, columns: Sequence[ColumnInfo] | Sequence[Column], b: Basis, table: str
) -> None:
    """The weights column exists, is numeric (no date), has no NULL and no weight below
    :data:`LEAST_WEIGHT` (counts only: no value is shown)."""
    if b.weights is None:
        return
    of: dict[str, ColumnInfo | Column] = {c.name: c for c in columns}
    c = of.get(b.weights)
    if c is None:
        raise InputError(
            f"column '{b.weights}' given to {WEIGHTS_FLAG} does not exist in '{table}'; its "
            f"columns are: {', '.join(of)}"
        )
    if c.kind != "numeric" or c.temporal is not None:
        raise InputError(
            f"column '{b.weights}' given to {WEIGHTS_FLAG} is of type {c.type}, not a number: "
            "weights are numbers of people, 1 or more; give a numeric column, or "
            f"{FRACTION_FLAG} instead"
        )
    _, nulls, below = engine.fetch_one(
        render("population_weights", source=source, weight=b.weights), {"least": LEAST_WEIGHT}
    )
    if int(nulls or 0):
        raise InputError(
            f"column '{b.weights}' given to {WEIGHTS_FLAG} is NULL on {int(nulls):,} rows: every "
            "record needs its weight; fill them, or leave those rows out of the table"
        )
    if int(below or 0):
        raise InputError(
            f"column '{b.weights}' given to {WEIGHTS_FLAG} has {int(below):,} rows weighing less "
            f"than {LEAST_WEIGHT:g}: a record stands for itself at least; give the weights that "
            "gross the sample up to its population"
        )


def figures(engine: Engine, source: str, keys: Sequence[str], b: Basis) -> PopulationRisk:
    """The estimators over the keys of ``source`` grouped by the columns ``keys``."""
    if b.weights is not None:
        rows = engine.fetch_all(render("population_keys", source=source, col=list(keys), weight=b.weights))
        f = np.array([int(r[0]) for r in rows], dtype=np.int64)
        weight = np.array([float(r[1]) for r in rows], dtype=float)
        count = np.array([int(r[2]) for r in rows], dtype=np.int64)
        records = int(np.dot(f, count))
        total = float(np.dot(weight, count))
        return assemble(f, weight, count, records / total if total else 1.0, "weights", b.weights)
    assert b.fraction is not None
    rows = engine.fetch_all(render("report_sizes", source=source, col=list(keys)))
    return from_sizes([int(r[0]) for r in rows], [int(r[1]) for r in rows], b.fraction)


def from_sizes(sizes: Sequence[int], counts: Sequence[int], fraction: float) -> PopulationRisk:
    """The figures of keys of the given sizes (``counts`` of each) under a sampling fraction:
    a key's population frequency is its size / fraction."""
    f = np.asarray(sizes, dtype=np.int64)
    return assemble(f, f / fraction, np.asarray(counts, dtype=np.int64), fraction, "sampling fraction", None)


def assemble(
    f: np.ndarray, weight: np.ndarray, count: np.ndarray, fraction: float, how: str, column: str | None
) -> PopulationRisk:
    """The figures of rows (f, the sum of a key's weights, keys sharing both): the
    population N is the sum of the weights (records / fraction under a fraction)."""
    records = int(np.dot(f, count))
    big_n = float(np.dot(weight, count))
    sizes, counts = population.histogram(f, count)
    u = population.uniqueness(sizes, counts, big_n)
    ind = population.individual(f, weight, count)

    def share(x: int) -> float:
        return x / records if records else 0.0

    return PopulationRisk(
        basis=how,
        weights_column=column,
        sampling_fraction=fraction,
        records=records,
        population=big_n,
        sample_uniques=u.sample_uniques,
        zayatz=u.zayatz,
        pitman=u.pitman,
        snb=u.snb,
        model=u.chosen,
        population_uniques=u.estimate,
        population_unique_share=u.share,
        global_risk=ind.global_risk,
        expected_reidentifications=ind.expected_reidentifications,
        highest_individual_risk=ind.highest,
        individual_above_20=share(ind.above_20),
        individual_above_10=share(ind.above_10),
        individual_above_5=share(ind.above_5),
    )


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f} %"


def _count(value: float | None) -> str:
    return "no answer" if value is None else f"{value:,.1f}"


def rows(r: PopulationRisk) -> list[tuple[str, str, str]]:
    """(figure, value, meaning) rows of a terminal table."""
    how = (
        f"sampling fraction {r.sampling_fraction:g}"
        if r.basis == "sampling fraction"
        else f"weights '{r.weights_column}' (fraction {r.sampling_fraction:.4g})"
    )
    return [
        ("population", f"{r.population:,.0f}", f"people the {r.records:,} records stand for, by {how}"),
        (
            "population uniques",
            _pct(r.population_unique_share),
            f"{r.population_uniques:,.1f} people alone in the population on the QIs "
            f"({r.model}, by the decision rule)",
        ),
        ("  Zayatz", _count(r.zayatz), "estimated population uniques"),
        ("  Pitman", _count(r.pitman), "estimated population uniques"),
        ("  SNB", _count(r.snb), "estimated population uniques"),
        (
            "individual risk, global",
            _pct(r.global_risk),
            "mean over records of their risk (Benedetti-Franconi)",
        ),
        ("individual risk, highest", _pct(r.highest_individual_risk), "the riskiest record's"),
        (
            "expected re-identifications",
            f"{r.expected_reidentifications:,.1f}",
            "sum of the records' risks: correct matches an intruder may expect",
        ),
        ("records at risk > 20 %", _pct(r.individual_above_20), "by their individual risk"),
        ("records at risk > 10 %", _pct(r.individual_above_10), "by their individual risk"),
        ("records at risk > 5 %", _pct(r.individual_above_5), "by their individual risk"),
    ]


NOT_ASKED = (
    f"Population risk: not estimated (give {FRACTION_FLAG} or {WEIGHTS_FLAG} to estimate what the "
    "records risk in the population the table was drawn from)."
)
