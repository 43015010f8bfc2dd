"""Recursive (c,l)-diversity: in every class, the most frequent sensitive value is rarer than
c times the rows of the values ranked l and below.

As ARX and sdcMicro define it: with a class's value counts ranked r1 >= r2 >= ... >= rm (NULL
is a value), the class keeps it iff r1 < c (r_l + r_{l+1} + ... + r_m); a class of fewer than
l values fails. Removing one of the l - 1 most frequent values still leaves a class in which
no value dominates (the criterion's recursion). Its per-class figure (``sql/recursive_diversity.sql``)
ranks the counts with ROW_NUMBER; ``evaluate`` reports, for l = 2, the largest r1 / (r2 + ...
+ rm) of a class: the release keeps recursive (c,2)-diversity for every c above it. Its
compiled twin is ``kernels/criterion_recursive_diversity.py``.

Options: ``recursive_l`` asks it (a whole number of 2 or more, l as in l-diversity, which
it strengthens) and ``recursive_c`` bounds the dominance, default 2: at l = 2 the most
frequent value then holds less than two thirds of a class, a bound that a class of l
equally frequent values keeps for every l.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from sqlglot import exp

from ..cluster.sensitive import MARGIN
from ..model import Column
from ..sql.templates import render
from .base import figure, param
from .criterion import BELOW_SHARE, Criterion, at_most_distinct
from .options import Option
from .registry import RECURSIVE_DIVERSITY

L_OPTION, C_OPTION = RECURSIVE_DIVERSITY.options
#: the l evaluate reports the criterion's figure for (no l is asked there)
MEASURED_L = 2


@dataclass(frozen=True)
class RecursiveDiversity(Criterion):
    """In every class r1 < ``c`` (r_l + ... + r_m) of ``column``'s value counts ranked
    descending; ``c`` is needed only to check."""

    column: Column | None
    l: int = MEASURED_L  # noqa: E741 - the criterion's own name for it
    c: float | None = None
    name: ClassVar[str] = "recursive-diversity"
    options: ClassVar[tuple[Option, ...]] = RECURSIVE_DIVERSITY.options
    key: ClassVar[str] = "recursive"
    kernel: ClassVar[str] = "criterion_recursive_diversity"

    @classmethod
    def from_options(
        cls, values: Mapping[str, Any], column: Column | None = None
    ) -> RecursiveDiversity | None:
        l_div = values["recursive_l"]
        return None if l_div is None else cls(column, l_div, values["recursive_c"])

    def option_values(self) -> dict[str, Any]:
        return {"recursive_l": self.l, "recursive_c": self.c}

    @classmethod
    def measured(cls, column: Column) -> RecursiveDiversity:
        return cls(column)

    @property
    def threshold(self) -> float:
        if self.c is None:
            raise ValueError("recursive (c,l)-diversity checks a class against a c; none was given")
        return self.c

    def describe(self) -> str:
        return f"recursive (c,l)-diversity c={self.threshold:g}, l={self.l}"

    def kind(self) -> str:
        return "recursive (c,l)-diversity"

    def check_values(self, column: str, distinct: int) -> None:
        at_most_distinct(L_OPTION, self.l, column, distinct, "no class can hold more")

    @property
    def min_class_size(self) -> int:
        # l values need l rows
        return self.l

    @property
    def sensitive(self) -> Column | None:
        return self.column

    # ---- SQL

    def per_class_sql(self, release: str, original: str | None = None) -> exp.Expression:
        return render(
            "recursive_diversity",
            release=release,
            sens=self.sensitive_column().name,
            rank=exp.Literal.number(self.l),
        )

    def folds(self) -> list[tuple[str, exp.Expression]]:
        ratio = exp.Div(
            this=exp.Cast(this=figure("sbc_top"), to=exp.DataType.build("DOUBLE")),
            expression=exp.Nullif(this=figure("sbc_tail"), expression=exp.Literal.number(0)),
        )
        # NULL when a class holds fewer than l values: no c keeps it
        every_tail = exp.GT(this=exp.Min(this=figure("sbc_tail")), expression=exp.Literal.number(0))
        largest = exp.Case(ifs=[exp.If(this=every_tail, true=exp.Max(this=ratio))])
        return [("recursive_c", largest)]

    def violation(self) -> exp.Expression:
        few = exp.LT(this=figure("sbc_values"), expression=param("l"))
        dominated = exp.GTE(
            this=figure("sbc_top"), expression=exp.Mul(this=param("c"), expression=figure("sbc_tail"))
        )
        return exp.Or(this=few, expression=dominated)

    def params(self) -> dict[str, Any]:
        return {"l": self.l, "c": self.threshold}

    def problems(self, violations: int, measures: dict[str, Any]) -> list[str]:
        if not violations:
            return []
        return [
            f"{violations} class(es) hold their most frequent value of '{self.sensitive_column().name}' "
            f"at c={self.c} times the rows of their values ranked l={self.l} and below, or more"
        ]

    # ---- the array rule

    def _cap(self) -> float:
        """c by the margin stricter than the SQL's (the kernels' arithmetic)."""
        return self.threshold * (1.0 - MARGIN)

    def class_ok(self, counts: np.ndarray, size: int, p: np.ndarray, ordered: bool) -> bool:
        ranked = -np.sort(-counts[counts > 0])
        if len(ranked) < self.l:
            return False
        return bool(ranked[0] < self._cap() * ranked[self.l - 1 :].sum())

    def classes_ok(
        self, counts: np.ndarray, shares: np.ndarray, size: np.ndarray, p: np.ndarray, ordered: bool
    ) -> np.ndarray:
        ranked = -np.sort(-counts, axis=1)
        enough = (counts > 0).sum(axis=1) >= self.l
        tail = ranked[:, self.l - 1 :].sum(axis=1)
        top = ranked[:, 0] if ranked.shape[1] else np.zeros(len(size))
        kept: np.ndarray = enough & (top < self._cap() * tail)
        return kept

    def infeasible(self, p: np.ndarray, column: str) -> list[str]:
        # classes that all keep it make an input that keeps it: summed over the classes, r1
        # is at least the input's and the tails at most its tail
        if self.class_ok(p, 1, p, False):
            return []
        ranked = -np.sort(-p[p > 0])
        tail = float(ranked[self.l - 1 :].sum())
        shown = f"{ranked[0] / tail:.2f} times" if tail > 0 else "all"
        return [
            f"recursive (c,l)-diversity c={self.threshold:g}, l={self.l} cannot hold on '{column}': "
            f"in the whole input its most frequent value holds {shown} the rows of the values "
            f"ranked {self.l} and below; give a larger {C_OPTION.flag} or a smaller {L_OPTION.flag}"
        ]

    def repair_bound(self, counts: np.ndarray, size: int, p: np.ndarray) -> int:
        # a class that fails: the rows of a value that is not the most frequent one
        if self.class_ok(counts, size, p, False):
            return BELOW_SHARE
        return int(counts.max())

    def kernel_params(self, shares: Sequence[np.ndarray]) -> tuple[list[int], list[float]]:
        return [self.l], [self._cap()]
