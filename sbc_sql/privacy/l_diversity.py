"""l-diversity: every class holds at least l well-represented values of the sensitive column.

Two variants over one per-class figure (``sql/l_diversity.sql``; NULL is a value): *distinct*
(at least l distinct values in a class) and *entropy* (the entropy of a class's value
shares at least ln l). ``evaluate`` reports distinct l-diversity, the fewest distinct values
in a class. Its compiled twin is ``kernels/criterion_l_diversity.py``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from sqlglot import exp

from .. import choices
from ..cluster.sensitive import ENTROPY_TIE
from ..model import Column
from ..sql.templates import render
from .base import figure, param
from .criterion import BELOW_SHARE, Criterion, at_most_distinct
from .options import Option
from .registry import L_DIVERSITY

VARIANTS = choices.L_VARIANTS

# entropy l-diversity compares a sum of logarithms with ln l: a class of exactly l equally
# frequent values has entropy ln l up to rounding, and must pass
ENTROPY_SLACK = 1e-12

L_OPTION, MODEL_OPTION = L_DIVERSITY.options


@dataclass(frozen=True)
class LDiversity(Criterion):
    """At least ``l`` distinct values (``variant="distinct"``) or an entropy of at least
    ln ``l`` (``"entropy"``) of ``column`` in every class. ``l`` is needed only to check."""

    column: Column | None
    l: int | None = None  # noqa: E741 - the model's own name for it
    variant: str = "distinct"
    name: ClassVar[str] = "l-diversity"
    options: ClassVar[tuple[Option, ...]] = L_DIVERSITY.options
    key: ClassVar[str] = "l"
    kernel: ClassVar[str] = "criterion_l_diversity"

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ValueError(f"l-diversity variant {self.variant!r} is not one of {', '.join(VARIANTS)}")

    @classmethod
    def from_options(cls, values: Mapping[str, Any], column: Column | None = None) -> LDiversity | None:
        l_div = values["l_diversity"]
        return None if l_div is None else cls(column, l_div, values["l_model"])

    def option_values(self) -> dict[str, Any]:
        return {"l_diversity": self.l, "l_model": self.variant}

    @property
    def entropy(self) -> bool:
        return self.variant == "entropy"

    @classmethod
    def measured(cls, column: Column) -> LDiversity:
        return cls(column)

    @property
    def threshold(self) -> int:
        if self.l is None:
            raise ValueError("l-diversity checks a class against an l; none was given")
        return self.l

    def describe(self) -> str:
        return f"{self.variant} l-diversity l={self.l}"

    def kind(self) -> str:
        return f"{self.variant} l-diversity"

    def check_values(self, column: str, distinct: int) -> None:
        at_most_distinct(L_OPTION, self.threshold, column, distinct, "no class can hold more")

    @property
    def min_class_size(self) -> int:
        # l distinct values need l rows
        return max(self.l or 1, 1)

    @property
    def sensitive(self) -> Column | None:
        return self.column

    # ---- SQL

    def per_class_sql(self, release: str, original: str | None = None) -> exp.Expression:
        return render("l_diversity", release=release, sens=self.sensitive_column().name)

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
        return [
            f"{violations} class(es) hold fewer than l={self.l} {what} of '{self.sensitive_column().name}'"
        ]

    # ---- the array rule

    def class_ok(self, counts: np.ndarray, size: int, p: np.ndarray, ordered: bool) -> bool:
        present = counts > 0
        if self.entropy:
            q = counts[present] / size
            return not -(q * np.log(q)).sum() < math.log(self.threshold) - ENTROPY_TIE
        return int(present.sum()) >= self.threshold

    def classes_ok(
        self, counts: np.ndarray, shares: np.ndarray, size: np.ndarray, p: np.ndarray, ordered: bool
    ) -> np.ndarray:
        if self.entropy:
            q = shares
            with np.errstate(divide="ignore", invalid="ignore"):
                h = -np.where(q > 0, q * np.log(np.where(q > 0, q, 1.0)), 0.0).sum(axis=1)
            entropy_ok: np.ndarray = h >= math.log(self.threshold) - ENTROPY_TIE
            return entropy_ok
        distinct_ok: np.ndarray = (counts > 0).sum(axis=1) >= self.threshold
        return distinct_ok

    def repair_bound(self, counts: np.ndarray, size: int, p: np.ndarray) -> int:
        # distinct l-diversity short of l values: the values the class lacks (count below 1)
        if not self.entropy and int((counts > 0).sum()) < self.threshold:
            return 1
        return BELOW_SHARE

    def infeasible(self, p: np.ndarray, column: str) -> list[str]:
        if not self.entropy:
            return []
        p = p[p > 0]
        h = float(-(p * np.log(p)).sum())
        if h >= math.log(self.threshold) - ENTROPY_TIE:
            return []
        return [
            f"entropy l-diversity l={self.l} is above what the whole of '{column}' "
            f"reaches (entropy l {math.exp(h):.2f}); give {L_OPTION.flag} "
            f"{max(int(math.exp(h)), 1)} or less"
        ]

    def kernel_params(self, shares: Sequence[np.ndarray]) -> tuple[list[int], list[float]]:
        return [self.threshold, int(self.entropy)], []
