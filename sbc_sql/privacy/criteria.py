"""The criteria a user asks for on top of k: l-diversity, t-closeness and beta-likeness, each
checked on every declared sensitive column on its own.

:class:`Criteria` holds what was asked (flags or keywords) and checks what needs no data;
:func:`models` turns it into the privacy models a release is verified against.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..cluster.sensitive import Rule
from ..errors import InputError
from ..model import Column
from .base import PrivacyModel
from .beta_likeness import BetaLikeness
from .k_anonymity import KAnonymity
from .l_diversity import VARIANTS, LDiversity
from .t_closeness import TCloseness


@dataclass(frozen=True)
class Criteria:
    """``l_diversity`` (with ``l_model`` distinct or entropy), ``t_closeness`` and
    ``beta_likeness`` (enhanced unless ``beta_basic``); None: not asked."""

    l_diversity: int | None = None
    l_model: str = "distinct"
    t_closeness: float | None = None
    beta_likeness: float | None = None
    beta_basic: bool = False

    @property
    def asked(self) -> bool:
        return any(v is not None for v in (self.l_diversity, self.t_closeness, self.beta_likeness))

    def check(self) -> None:
        """The thresholds' own limits (the data's are checked by :func:`check_sensitive`)."""
        if self.l_model not in VARIANTS:
            raise InputError(f"--l-model '{self.l_model}' is not one of {', '.join(VARIANTS)}")
        if self.l_diversity is not None and (
            isinstance(self.l_diversity, bool)
            or not isinstance(self.l_diversity, int)
            or self.l_diversity < 2
        ):
            raise InputError(
                f"--l-diversity {self.l_diversity} is not a whole number of 2 or more; a class "
                "holds at least l sensitive values: give e.g. --l-diversity 3"
            )
        t = self.t_closeness
        if t is not None and not (math.isfinite(t) and 0 < t < 1):
            raise InputError(
                f"--t-closeness {t} is outside (0, 1); it bounds a distance between distributions: "
                "give e.g. --t-closeness 0.2"
            )
        b = self.beta_likeness
        if b is not None and not (math.isfinite(b) and b > 0):
            raise InputError(
                f"--beta-likeness {b} is not a finite number above 0; it bounds a relative gain: "
                "give e.g. --beta-likeness 1"
            )

    def rule(self) -> Rule:
        """The same criteria as the clustering checks them."""
        return Rule(
            self.l_diversity or 0,
            self.l_model == "entropy",
            self.t_closeness,
            self.beta_likeness,
            enhanced=not self.beta_basic,
        )

    def describe(self) -> str:
        parts = []
        if self.l_diversity is not None:
            parts.append(f"{self.l_model} l-diversity l={self.l_diversity}")
        if self.t_closeness is not None:
            parts.append(f"t-closeness t={self.t_closeness:g}")
        if self.beta_likeness is not None:
            parts.append(
                f"{'basic' if self.beta_basic else 'enhanced'} beta-likeness beta={self.beta_likeness:g}"
            )
        return ", ".join(parts)


def require_sensitive(criteria: Criteria, sensitive: Sequence[Column]) -> None:
    """A criterion asked needs a sensitive column to hold on."""
    if criteria.asked and not sensitive:
        raise InputError(
            f"{criteria.describe()} is asked, but no column is declared sensitive; declare one "
            "(--sensitive, or the column comment 'sbc:sensitive')"
        )


def check_sensitive(criteria: Criteria, sensitive: Sequence[Column], distinct: dict[str, int]) -> None:
    """A criterion needs a sensitive column, and l at most the values of each (``distinct``:
    each column's distinct values, NULL counted as one)."""
    require_sensitive(criteria, sensitive)
    if not criteria.asked:
        return
    if criteria.l_diversity is not None:
        for c in sensitive:
            if distinct[c.name] < criteria.l_diversity:
                raise InputError(
                    f"--l-diversity {criteria.l_diversity} is above the {distinct[c.name]} distinct "
                    f"value(s) of the sensitive column '{c.name}'; no class can hold more: give "
                    f"--l-diversity {max(distinct[c.name], 2)} or less"
                )


def models(k: int, criteria: Criteria, sensitive: Sequence[Column]) -> tuple[PrivacyModel, ...]:
    """k-anonymity, then each criterion on each sensitive column, in the columns' order."""
    out: list[PrivacyModel] = [KAnonymity(k)]
    for c in sensitive:
        if criteria.l_diversity is not None:
            out.append(LDiversity(c, criteria.l_diversity, criteria.l_model))
        if criteria.t_closeness is not None:
            out.append(TCloseness(c, criteria.t_closeness))
        if criteria.beta_likeness is not None:
            out.append(BetaLikeness(c, criteria.beta_likeness, enhanced=not criteria.beta_basic))
    return tuple(out)
