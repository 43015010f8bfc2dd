"""t-closeness: in every class, the sensitive column's distribution lies within t of the
input's, by the Earth Mover's Distance.

Categorical or boolean columns take equal ground distance (``sql/t_closeness.sql``: 0.5 *
sum |p - q|); numeric and temporal ones the ordered distance over the input's sorted
distinct values, divided by m - 1 (``sql/t_closeness_ordered.sql``). ``evaluate`` reports
the largest distance of any class. Its compiled twin is ``kernels/criterion_t_closeness.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from sqlglot import exp

from ..cluster.sensitive import MARGIN, emd, emd_rows
from ..model import Column
from ..sql.nodes import same_key
from ..sql.templates import render
from .base import figure, param
from .criterion import Criterion
from .options import Option
from .registry import T_CLOSENESS


@dataclass(frozen=True)
class TCloseness(Criterion):
    """Every class's distribution of ``column`` within EMD ``t`` of the input's. ``t`` is
    needed only to check."""

    column: Column | None
    t: float | None = None
    name: ClassVar[str] = "t-closeness"
    options: ClassVar[tuple[Option, ...]] = T_CLOSENESS.options
    key: ClassVar[str] = "t"
    kernel: ClassVar[str] = "criterion_t_closeness"
    reads_input: ClassVar[bool] = True

    @classmethod
    def from_options(cls, values: Mapping[str, Any], column: Column | None = None) -> TCloseness | None:
        t = values["t_closeness"]
        return None if t is None else cls(column, t)

    def option_values(self) -> dict[str, Any]:
        return {"t_closeness": self.t}

    @classmethod
    def measured(cls, column: Column) -> TCloseness:
        return cls(column)

    @property
    def threshold(self) -> float:
        if self.t is None:
            raise ValueError("t-closeness checks a class against a t; none was given")
        return self.t

    def describe(self) -> str:
        return f"t-closeness t={self.threshold:g}"

    @property
    def sensitive(self) -> Column | None:
        return self.column

    @property
    def ordered(self) -> bool:
        """Numeric (or temporal) values: the ordered ground distance."""
        return self.sensitive_column().kind == "numeric"

    # ---- SQL

    def per_class_sql(self, release: str, original: str | None = None) -> exp.Expression:
        if original is None:
            raise ValueError("t-closeness compares a release with its original; none was given")
        template = "t_closeness_ordered" if self.ordered else "t_closeness"
        released = exp.column("sbc_value", "q")
        original_value = exp.column("sbc_value", "r" if self.ordered else "p")
        column = self.sensitive_column()
        return render(
            template,
            original=original,
            release=release,
            sens=column.name,
            same=same_key(original_value, released, column),
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
            f"of '{self.sensitive_column().name}'"
        ]

    # ---- the array rule

    def class_ok(self, counts: np.ndarray, size: int, p: np.ndarray, ordered: bool) -> bool:
        return not emd(counts / size, p, ordered) > self.threshold - MARGIN

    def classes_ok(
        self, counts: np.ndarray, shares: np.ndarray, size: np.ndarray, p: np.ndarray, ordered: bool
    ) -> np.ndarray:
        near: np.ndarray = emd_rows(shares, p, ordered) <= self.threshold - MARGIN
        return near

    def kernel_params(self, shares: Sequence[np.ndarray]) -> tuple[list[int], list[float]]:
        return [], [float(self.threshold)]
