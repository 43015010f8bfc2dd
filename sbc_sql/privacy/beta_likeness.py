"""beta-likeness: no sensitive value is much more frequent in a class than in the input.

Per class (``sql/beta_likeness.sql``), over the values whose share q in the class exceeds
their share p in the input: basic beta-likeness asks ``(q - p) / p <= beta``, enhanced
beta-likeness ``(q - p) / p <= min(beta, -ln p)`` (frequent values are held to -ln p).
``evaluate`` reports the largest ``(q - p) / p`` and the largest ``min((q - p) / p, -ln p)``
over the classes (0 when no value is above its input share), the second as other tools
report a release's enhanced beta. Its compiled twin is ``kernels/criterion_beta_likeness.py``,
which reads each value's cap f(p) (margin included) from the parameters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from sqlglot import exp

from ..cluster.sensitive import MARGIN, beta_cap
from ..model import Column
from ..sql.nodes import same_key
from ..sql.templates import render
from .base import figure, param
from .criterion import Criterion
from .options import Option
from .registry import BETA_LIKENESS


@dataclass(frozen=True)
class BetaLikeness(Criterion):
    """Every class's relative gain in any value of ``column`` at most ``beta`` (the enhanced
    gain with ``enhanced``). ``beta`` is needed only to check."""

    column: Column | None
    beta: float | None = None
    enhanced: bool = False
    name: ClassVar[str] = "beta-likeness"
    options: ClassVar[tuple[Option, ...]] = BETA_LIKENESS.options
    key: ClassVar[str] = "beta"
    kernel: ClassVar[str] = "criterion_beta_likeness"
    reads_input: ClassVar[bool] = True

    @classmethod
    def from_options(cls, values: Mapping[str, Any], column: Column | None = None) -> BetaLikeness | None:
        beta = values["beta_likeness"]
        return None if beta is None else cls(column, beta, enhanced=not values["beta_basic"])

    def option_values(self) -> dict[str, Any]:
        return {"beta_likeness": self.beta, "beta_basic": not self.enhanced}

    def summary(self) -> dict[str, Any]:
        return {"beta_likeness": self.beta, "beta_model": "enhanced" if self.enhanced else "basic"}

    @classmethod
    def measured(cls, column: Column) -> BetaLikeness:
        return cls(column)

    @property
    def threshold(self) -> float:
        if self.beta is None:
            raise ValueError("beta-likeness checks a class against a beta; none was given")
        return self.beta

    def describe(self) -> str:
        return f"{'enhanced' if self.enhanced else 'basic'} beta-likeness beta={self.threshold:g}"

    def kind(self) -> str:
        return f"{'enhanced' if self.enhanced else 'basic'} beta-likeness"

    @property
    def sensitive(self) -> Column | None:
        return self.column

    # ---- SQL

    def per_class_sql(self, release: str, original: str | None = None) -> exp.Expression:
        if original is None:
            raise ValueError("beta-likeness compares a release with its original; none was given")
        column = self.sensitive_column()
        return render(
            "beta_likeness",
            original=original,
            release=release,
            sens=column.name,
            same=same_key(exp.column("sbc_value", "p"), exp.column("sbc_value", "q"), column),
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
            f"{violations} class(es) raise a value of '{self.sensitive_column().name}' above "
            f"{kind}beta={self.beta} over its input share"
        ]

    # ---- the array rule

    def caps(self, p: np.ndarray) -> np.ndarray:
        """Each value's largest share in a class, f(p), by the margin below what the SQL allows
        (the margin on the cap first: the kernels' arithmetic)."""
        cap: np.ndarray = beta_cap(p, self.threshold, self.enhanced) * (1.0 - MARGIN)
        return cap

    def class_ok(self, counts: np.ndarray, size: int, p: np.ndarray, ordered: bool) -> bool:
        # only values above their input share are bounded (cap >= p always)
        return not np.any((counts > p * size) & (counts > self.caps(p) * size))

    def classes_ok(
        self, counts: np.ndarray, shares: np.ndarray, size: np.ndarray, p: np.ndarray, ordered: bool
    ) -> np.ndarray:
        size_col = size[:, None]
        over = (counts > p[None, :] * size_col) & (counts > self.caps(p)[None, :] * size_col)
        alike: np.ndarray = ~np.any(over, axis=1)
        return alike

    def forced_size(self, p: np.ndarray) -> np.ndarray:
        """ceil(1 / f(p)): the smallest class one row of a value of share p may sit in."""
        cap = self.caps(np.asarray(p, dtype=np.float64))
        with np.errstate(divide="ignore"):
            forced: np.ndarray = np.where(
                cap > 0, np.ceil(1.0 / np.where(cap > 0, cap, 1.0) - 1e-12), np.inf
            ).astype(np.float64)
        return forced

    def kernel_params(self, shares: Sequence[np.ndarray]) -> tuple[list[int], list[float]]:
        return [], [float(c) for p in shares for c in self.caps(p)]
