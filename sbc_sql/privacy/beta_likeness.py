"""beta-likeness: no sensitive value is much more frequent in a class than in the input.

Per class (``sql/beta_likeness.sql``), over the values whose share q in the class exceeds
their share p in the input: basic beta-likeness asks ``(q - p) / p <= beta``, enhanced
beta-likeness ``(q - p) / p <= min(beta, -ln p)`` (frequent values are held to -ln p).
``evaluate`` reports the largest ``(q - p) / p`` and the largest ``min((q - p) / p, -ln p)``
over the classes (0 when no value is above its input share), the second as other tools
report a release's enhanced beta.
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
class BetaLikeness(PrivacyModel):
    """Every class's relative gain in any value of ``column`` at most ``beta`` (the enhanced
    gain with ``enhanced``). ``beta`` is needed only to check."""

    column: Column
    beta: float | None = None
    enhanced: bool = False
    name: ClassVar[str] = "beta-likeness"

    @property
    def sensitive(self) -> Column:
        return self.column

    def per_class_sql(self, release: str, original: str | None = None) -> exp.Expression:
        if original is None:
            raise ValueError("beta-likeness compares a release with its original; none was given")
        return render(
            "beta_likeness",
            original=original,
            release=release,
            sens=self.column.name,
            same=same_key(exp.column("sbc_value", "p"), exp.column("sbc_value", "q"), self.column),
        )

    def folds(self) -> list[tuple[str, exp.Expression]]:
        zero = exp.Literal.number(0)
        return [
            ("beta_likeness", exp.Coalesce(this=exp.Max(this=figure("sbc_beta")), expressions=[zero])),
            (
                "enhanced_beta_likeness",
                exp.Coalesce(this=exp.Max(this=figure("sbc_enhanced")), expressions=[zero.copy()]),
            ),
        ]

    def violation(self) -> exp.Expression:
        if self.beta is None:
            raise ValueError("beta-likeness checks a release against a beta; none was given")
        above = exp.GT(this=figure("sbc_beta"), expression=param("beta"))
        if not self.enhanced:
            return above
        # enhanced: (q - p) / p <= min(beta, -ln p) for every value
        return exp.Or(
            this=above, expression=exp.GT(this=figure("sbc_over_cap"), expression=exp.Literal.number(0))
        )

    def params(self) -> dict[str, Any]:
        return {"beta": self.beta}

    def problems(self, violations: int, measures: dict[str, Any]) -> list[str]:
        if not violations:
            return []
        kind = "enhanced " if self.enhanced else ""
        return [
            f"{violations} class(es) raise a value of '{self.column.name}' above {kind}beta={self.beta} "
            "over its input share"
        ]
