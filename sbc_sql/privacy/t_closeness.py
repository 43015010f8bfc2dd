"""t-closeness: in every class, the sensitive column's distribution lies within t of the
input's, by the Earth Mover's Distance.

Categorical or boolean columns take equal ground distance (``sql/t_closeness.sql``: 0.5 *
sum |p - q|); numeric and temporal ones the ordered distance over the input's sorted
distinct values, divided by m - 1 (``sql/t_closeness_ordered.sql``). ``evaluate`` reports
the largest distance of any class.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sqlglot import exp

from ..model import Column
from ..sql.nodes import same_key
from ..sql.templates import render
from .base import PrivacyModel, figure, param


@dataclass(frozen=True)
class TCloseness(PrivacyModel):
    """Every class's distribution of ``column`` within EMD ``t`` of the input's. ``t`` is
    needed only to check."""

    column: Column
    t: float | None = None
    name: ClassVar[str] = "t-closeness"

    @property
    def sensitive(self) -> Column:
        return self.column

    @property
    def ordered(self) -> bool:
        """Numeric (or temporal) values: the ordered ground distance."""
        return self.column.kind == "numeric"

    def per_class_sql(self, release: str, original: str | None = None) -> exp.Expression:
        if original is None:
            raise ValueError("t-closeness compares a release with its original; none was given")
        template = "t_closeness_ordered" if self.ordered else "t_closeness"
        released = exp.column("sbc_value", "q")
        original_value = exp.column("sbc_value", "r" if self.ordered else "p")
        return render(
            template,
            original=original,
            release=release,
            sens=self.column.name,
            same=same_key(original_value, released, self.column),
        )

    def folds(self) -> list[tuple[str, exp.Expression]]:
        largest: exp.Expression = exp.Max(this=figure("sbc_emd"))
        if self.ordered:
            # one distinct input value: no distance at all
            largest = exp.Coalesce(this=largest, expressions=[exp.Literal.number(0)])
        return [("t_closeness", largest)]

    def violation(self) -> exp.Expression:
        if self.t is None:
            raise ValueError("t-closeness checks a release against a t; none was given")
        return exp.GT(this=figure("sbc_emd"), expression=param("t"))

    def params(self) -> dict[str, Any]:
        return {"t": self.t}

    def problems(self, violations: int, measures: dict[str, Any]) -> list[str]:
        if not violations:
            return []
        return [
            f"{violations} class(es) lie farther than t={self.t} from the input's distribution "
            f"of '{self.column.name}'"
        ]
