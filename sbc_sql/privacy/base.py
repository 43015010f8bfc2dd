"""The privacy-model seam: what a release must satisfy, one definition per model.

After ARX's ``PrivacyCriterion``: a model is one privacy criterion (k-anonymity,
l-diversity, t-closeness, beta-likeness). Each model defines, in one SQL template
(``sql/<template>.sql``), a *per-class figure*: one row per class of a release, ``eq_class``
and the figure's columns. Everything else reads that one definition:

* **what the clustering must respect**: :attr:`PrivacyModel.min_class_size`, the fewest rows
  a class may hold (k for k-anonymity); a model whose condition also reads the sensitive
  values of a class (:attr:`PrivacyModel.sensitive` is not None) states it as its
  :meth:`PrivacyModel.violation` over the per-class figure, which a clustering that enforces
  the model will test per class;
* **its violation check**: :meth:`PrivacyModel.violations_sql`, one query over the release
  (a release, or the row table of one) returning one row: ``violations``, the number of
  classes for which :meth:`PrivacyModel.violation` holds, then the model's measure columns;
  :meth:`PrivacyModel.check` runs it and says in words what is wrong. Verification runs every
  model's check with its other checks: a release passes only if no model reports a
  violation;
* **its measure**: :meth:`PrivacyModel.measure_sql`, one row folding the per-class figure over
  the classes (:meth:`PrivacyModel.folds`), which ``evaluate`` reports under the folds'
  names.

Names enter the templates as quoted identifiers; a model's thresholds (k, l, t, beta) are
bound parameters (:meth:`PrivacyModel.params`). Problems name columns and counts, never
cell values.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from sqlglot import exp

from ..engines.base import Engine
from ..model import Column
from ..sql.nodes import alias
from ..sql.templates import col, ident

#: the alias of the per-class relation inside a model's queries
CLASSES = "sbc_classes"


def figure(name: str) -> exp.Column:
    """A column of the per-class figure."""
    return col(name, CLASSES)


def param(name: str) -> exp.Placeholder:
    """A bound parameter ``$name``."""
    return exp.Placeholder(this=name)


class PrivacyModel(ABC):
    """One privacy criterion over a release's classes (see the module docstring)."""

    #: the model's name, as a flag or a report would spell it
    name: ClassVar[str]
    #: whether its queries join on the values of a series (value_pairs_range), which a
    #: planner should hash rather than sort by estimates it cannot make
    #: (:meth:`Engine.hashed_joins`)
    hashed: ClassVar[bool] = False

    @property
    def min_class_size(self) -> int:
        """The fewest rows a class may hold; the clustering makes every class at least this."""
        return 1

    @property
    def sensitive(self) -> Column | None:
        """The sensitive column the model's figure reads (None: class sizes only)."""
        return None

    @abstractmethod
    def per_class_sql(self, release: str, original: str | None = None) -> exp.Expression:
        """One row per class of ``release``: ``eq_class`` and the figure's columns."""

    @abstractmethod
    def folds(self) -> list[tuple[str, exp.Expression]]:
        """The release's figures: (name, aggregate over :data:`CLASSES`), what
        ``evaluate`` reports."""

    @abstractmethod
    def violation(self) -> exp.Expression:
        """The condition on one class's figure (over :data:`CLASSES`) under which the class
        violates the model; its thresholds are parameters (:meth:`params`)."""

    def params(self) -> dict[str, Any]:
        """The bound parameters of :meth:`violation`."""
        return {}

    @abstractmethod
    def problems(self, violations: int, measures: dict[str, Any]) -> list[str]:
        """What the violation check says is wrong, in words (empty when ``violations`` is 0)."""

    # ---- built from the above

    def _over_classes(self, release: str, original: str | None) -> exp.Subquery:
        return exp.Subquery(
            this=self.per_class_sql(release, original), alias=exp.TableAlias(this=ident(CLASSES))
        )

    def measure_sql(self, release: str, original: str | None = None) -> exp.Expression:
        """One row: the model's figures of ``release`` (see :meth:`folds`)."""
        columns = [alias(agg, name) for name, agg in self.folds()]
        return exp.select(*columns).from_(self._over_classes(release, original))

    def violations_sql(self, release: str, original: str | None = None) -> exp.Expression:
        """One row: ``violations`` (classes that violate the model), then the figures."""
        count = exp.Filter(this=exp.Count(this=exp.Star()), expression=exp.Where(this=self.violation()))
        columns = [alias(count, "violations")] + [alias(agg, name) for name, agg in self.folds()]
        return exp.select(*columns).from_(self._over_classes(release, original))

    def measure(self, engine: Engine, release: str, original: str | None = None) -> dict[str, Any]:
        """The model's figures of ``release``, by name."""
        with engine.hashed_joins() if self.hashed else contextlib.nullcontext():
            row = engine.fetch_one(self.measure_sql(release, original))
        return {name: value for (name, _), value in zip(self.folds(), row, strict=True)}

    def check(self, engine: Engine, release: str, original: str | None = None) -> list[str]:
        """The problems the violation check finds in ``release`` (empty: the model holds)."""
        with engine.hashed_joins() if self.hashed else contextlib.nullcontext():
            violations, *values = engine.fetch_one(self.violations_sql(release, original), self.params())
        measures = {name: value for (name, _), value in zip(self.folds(), values, strict=True)}
        return self.problems(int(violations or 0), measures)


def check_all(
    engine: Engine, models: Sequence[PrivacyModel], release: str, original: str | None = None
) -> list[str]:
    """Every model's problems with ``release``, in the models' order: it passes only when
    none reports a violation."""
    return [p for m in models for p in m.check(engine, release, original)]
