"""k-anonymity: every class of the release holds at least k rows.

The release's other class-level checks (one generalized tuple per class, every row inside
its class's box) are verification's own; with them, every generalized tuple is shared by at
least k rows. This is the model ``anonymize`` verifies its release against.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sqlglot import exp

from ..sql.templates import render
from .base import PrivacyModel, figure, param


@dataclass(frozen=True)
class KAnonymity(PrivacyModel):
    """Every class holds at least ``k`` rows. Its figure, the smallest class, is what
    ``evaluate`` reports as ``smallest_class`` (from the measure stage's class sizes)."""

    k: int
    name: ClassVar[str] = "k-anonymity"

    @property
    def min_class_size(self) -> int:
        return self.k

    def per_class_sql(self, release: str, original: str | None = None) -> exp.Expression:
        return render("k_anonymity", release=release)

    def folds(self) -> list[tuple[str, exp.Expression]]:
        return [("smallest_class", exp.Min(this=figure("sbc_size")))]

    def violation(self) -> exp.Expression:
        return exp.LT(this=figure("sbc_size"), expression=param("k"))

    def params(self) -> dict[str, Any]:
        return {"k": self.k}

    def problems(self, violations: int, measures: dict[str, Any]) -> list[str]:
        if not violations:
            return []
        return [f"the smallest class has {measures['smallest_class']} rows, below k={self.k}"]
