"""k-map and delta-presence: what a release's classes risk among the people of a population.

Given a population table (``--population``: the people the input was drawn from, on the
same QIs), a class *matches* the population rows inside its generalization (every QI
within its range, NULL only where the class holds NULL, or among its set). Its per-class
figure, one template (``sql/templates/population_matches.sql``), is each class's rows and
its matches:

* **k-map** (:class:`KMap`): every class matches at least ``k_map`` population rows, so
  that whoever a released class points to, at least ``k_map`` people of the population
  fit it;
* **delta-presence** (:class:`DeltaPresence`): each class's delta, its rows over its
  matches (the share of the population it fits that is in the release), lies within
  [``delta_min``, ``delta_max``], so that being in the population says neither too much
  nor too little about being in the release. A class that matches no population row fails.

The population's distinct tuples meet the classes through the classes' values of one or two
QIs (``keys``, a key every engine hashes); the other QIs filter that join
(:mod:`sbc_sql.sql.matching`). The clustering enforces k-map and delta-max by merging
classes (:mod:`sbc_sql.cluster.population`); delta-min is verified.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sqlglot import exp

from ..model import Column
from ..sql.matching import KEYS, inside, pairs_match, pairs_sql
from ..sql.nodes import conj, ref
from ..sql.templates import ident, render
from .base import PrivacyModel, figure, param


def population_tuples_sql(population: str, qis: tuple[Column, ...]) -> exp.Expression:
    """The population's distinct QI tuples, each with its rows (``sbc_rows``)."""
    return render("population_tuples", population=population, qi=[c.name for c in qis])


@dataclass(frozen=True, kw_only=True)
class PopulationModel(PrivacyModel):
    """A model over each class's population matches: the population table, the release's
    QIs, the one or two of them the matches join on, and the class table the classes'
    generalizations are read from (None: the release checked, one row per released row;
    a class table: beside the row table the run checks)."""

    population: str
    qis: tuple[Column, ...]
    keys: tuple[Column, ...]
    classes: str | None = None
    #: a table holding the per-class figure already (population_figures), read instead
    figures: str | None = None
    hashed: ClassVar[bool] = True

    def per_class_sql(self, release: str, original: str | None = None) -> exp.Expression:
        if self.figures is not None:
            return exp.select("eq_class", "sbc_size", "sbc_population").from_(
                exp.Table(this=ident(self.figures))
            )
        return self.matches_sql(release)

    def matches_sql(self, release: str) -> exp.Expression:
        """Each class's rows and population matches, computed (population_matches.sql)."""
        boxes = self.classes or release
        return render(
            "population_matches",
            release=release,
            boxes=boxes,
            population=population_tuples_sql(self.population, self.qis),
            pairs=pairs_sql(self.keys, self.population, boxes),
            keys=[ref(key, "p") for key in KEYS[: len(self.keys)]],
            match=pairs_match(self.keys, "n", "c"),
            qicol=[n for c in self.qis for n in c.release_columns],
            inside=conj([inside(c, "n", "c") for c in self.qis]),
        )


def _delta() -> exp.Expression:
    """A class's delta: its rows over its population matches (NULL when it matches none)."""
    matches = exp.Nullif(this=figure("sbc_population"), expression=exp.Literal.number(0))
    return exp.Div(this=exp.cast(figure("sbc_size"), "DOUBLE"), expression=matches, typed=False, safe=False)


@dataclass(frozen=True, kw_only=True)
class KMap(PopulationModel):
    """Every class matches at least ``k_map`` population rows."""

    k_map: int
    name: ClassVar[str] = "k-map"

    def describe(self) -> str:
        return f"k-map k={self.k_map}"

    def folds(self) -> list[tuple[str, exp.Expression]]:
        return [("fewest_population_matches", exp.Min(this=figure("sbc_population")))]

    def violation(self) -> exp.Expression:
        return exp.LT(this=figure("sbc_population"), expression=param("k_map"))

    def params(self) -> dict[str, Any]:
        return {"k_map": self.k_map}

    def problems(self, violations: int, measures: dict[str, Any]) -> list[str]:
        if not violations:
            return []
        return [
            f"{violations:,} class(es) match fewer than k-map={self.k_map} rows of the population "
            f"'{self.population}' (the fewest: {int(measures['fewest_population_matches'] or 0):,})"
        ]


@dataclass(frozen=True, kw_only=True)
class DeltaPresence(PopulationModel):
    """Every class's rows over its population matches lie within [delta_min, delta_max]."""

    delta_min: float
    delta_max: float
    name: ClassVar[str] = "delta-presence"

    def describe(self) -> str:
        return f"delta-presence in [{self.delta_min:g}, {self.delta_max:g}]"

    def folds(self) -> list[tuple[str, exp.Expression]]:
        return [("smallest_delta", exp.Min(this=_delta())), ("largest_delta", exp.Max(this=_delta()))]

    def violation(self) -> exp.Expression:
        size, matches = figure("sbc_size"), figure("sbc_population")
        none = exp.LTE(this=matches, expression=exp.Literal.number(0))
        above = exp.GT(this=size, expression=exp.Mul(this=param("delta_max"), expression=matches))
        below = exp.LT(this=size, expression=exp.Mul(this=param("delta_min"), expression=matches))
        return exp.Or(this=exp.Or(this=none, expression=above), expression=below)

    def params(self) -> dict[str, Any]:
        return {"delta_min": float(self.delta_min), "delta_max": float(self.delta_max)}

    def problems(self, violations: int, measures: dict[str, Any]) -> list[str]:
        if not violations:
            return []
        low, high = measures["smallest_delta"], measures["largest_delta"]
        found = "" if low is None else f" (delta from {float(low):.4g} to {float(high):.4g})"
        return [
            f"{violations:,} class(es) have a delta outside [{self.delta_min:g}, {self.delta_max:g}] "
            f"against the population '{self.population}', or match none of its rows{found}"
        ]
