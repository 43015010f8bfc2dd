"""k-anonymity: every class of the release holds at least k rows.

The release's other class-level checks (one generalized tuple per class, every row inside
its class's box) are verification's own; with them, every generalized tuple is shared by at
least k rows. This is the model ``anonymize`` verifies its release against. k is every
command's own argument rather than an option of the criterion, and every clustering keeps
it by construction: its array rule and compiled twin (``kernels/criterion_k_anonymity.py``)
state the same class-size condition for the property test that holds the three forms together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from sqlglot import exp

from ..sql.templates import render
from .base import figure, param
from .criterion import Criterion


@dataclass(frozen=True)
class KAnonymity(Criterion):
    """Every class holds at least ``k`` rows. Its figure, the smallest class, is what
    ``evaluate`` reports as ``smallest_class`` (from the measure stage's class sizes)."""

    k: int
    name: ClassVar[str] = "k-anonymity"
    key: ClassVar[str] = "k"
    kernel: ClassVar[str] = "criterion_k_anonymity"

    @property
    def min_class_size(self) -> int:
        return self.k

    def describe(self) -> str:
        return f"k-anonymity k={self.k}"

    # ---- SQL

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

    # ---- the array rule

    def class_ok(self, counts: np.ndarray, size: int, p: np.ndarray, ordered: bool) -> bool:
        return size >= self.k

    def classes_ok(
        self, counts: np.ndarray, shares: np.ndarray, size: np.ndarray, p: np.ndarray, ordered: bool
    ) -> np.ndarray:
        large: np.ndarray = size >= self.k
        return large

    def kernel_params(self, shares: Sequence[np.ndarray]) -> tuple[list[int], list[float]]:
        return [self.k], []
