"""l-diversity: every class holds at least l well-represented values of the sensitive column.

Two variants over one per-class figure (``sql/l_diversity.sql``; NULL is a value): *distinct*
(at least l distinct values in a class) and *entropy* (the entropy of a class's value
shares at least ln l). ``evaluate`` reports distinct l-diversity, the fewest distinct values
in a class.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sqlglot import exp

from .. import choices
from ..model import Column
from ..sql.templates import render
from .base import PrivacyModel, figure, param

VARIANTS = choices.L_VARIANTS

# entropy l-diversity compares a sum of logarithms with ln l: a class of exactly l equally
# frequent values has entropy ln l up to rounding, and must pass
ENTROPY_SLACK = 1e-12


@dataclass(frozen=True)
class LDiversity(PrivacyModel):
    """At least ``l`` distinct values (``variant="distinct"``) or an entropy of at least
    ln ``l`` (``"entropy"``) of ``column`` in every class. ``l`` is needed only to check."""

    column: Column
    l: int | None = None  # noqa: E741 - the model's own name for it
    variant: str = "distinct"
    name: ClassVar[str] = "l-diversity"

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ValueError(f"l-diversity variant {self.variant!r} is not one of {', '.join(VARIANTS)}")

    @property
    def min_class_size(self) -> int:
        # l distinct values need l rows
        return max(self.l or 1, 1)

    @property
    def sensitive(self) -> Column:
        return self.column

    def per_class_sql(self, release: str, original: str | None = None) -> exp.Expression:
        return render("l_diversity", release=release, sens=self.column.name)

    def folds(self) -> list[tuple[str, exp.Expression]]:
        if self.variant == "distinct":
            return [("l_diversity", exp.Min(this=figure("sbc_distinct")))]
        # the largest l for which every class passes: e^(smallest entropy)
        return [("entropy_l_diversity", exp.Exp(this=exp.Min(this=figure("sbc_entropy"))))]

    def violation(self) -> exp.Expression:
        if self.l is None:
            raise ValueError("l-diversity checks a release against an l; none was given")
        if self.variant == "distinct":
            return exp.LT(this=figure("sbc_distinct"), expression=param("l"))
        bound = exp.Sub(this=exp.Ln(this=param("l")), expression=exp.Literal.number(ENTROPY_SLACK))
        return exp.LT(this=figure("sbc_entropy"), expression=bound)

    def params(self) -> dict[str, Any]:
        return {"l": self.l}

    def problems(self, violations: int, measures: dict[str, Any]) -> list[str]:
        if not violations:
            return []
        what = "distinct values" if self.variant == "distinct" else "values by entropy"
        return [f"{violations} class(es) hold fewer than l={self.l} {what} of '{self.column.name}'"]
