"""A privacy criterion's options, declared as plain data: name, type, default, help text and
limits, from which the one ``Error:`` line a bad value gets is written.

A criterion class lists its options (:attr:`.criterion.Criterion.options`); the registry
(:mod:`.registry`) gathers every registered criterion's, which is what a table of options (a
flag, a keyword, a setting) reads. A value of None is an option not given: never checked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..errors import InputError


@dataclass(frozen=True)
class Option:
    """One option of a criterion.

    ``name`` is the keyword (``l_diversity``; the flag is ``--l-diversity``), ``type`` the
    value's type (int, float, str or bool), ``default`` its value when not given (None: the
    criterion is not asked), ``help`` one sentence for a flag's help and ``metavar`` the
    placeholder it names. Limits: ``choices`` (a str among them), ``minimum`` (a whole number
    at least this), ``above`` / ``below`` (a finite number strictly between); ``meaning`` says
    what the value bounds and ``example`` a good value, both for the error line."""

    name: str
    type: type
    default: Any
    help: str
    metavar: str = ""
    choices: tuple[str, ...] = ()
    minimum: int | None = None
    above: float | None = None
    below: float | None = None
    meaning: str = ""
    example: str = ""

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def problem(self, value: Any) -> str | None:
        """What is wrong with ``value``, in the words of an ``Error:`` line (None: nothing)."""
        if value is None:
            return None
        if self.choices:
            if value not in self.choices:
                return f"{self.flag} '{value}' is not one of {', '.join(self.choices)}"
            return None
        hint = f"; {self.meaning}: give e.g. {self.flag} {self.example}"
        if self.minimum is not None:
            if isinstance(value, bool) or not isinstance(value, int) or value < self.minimum:
                return f"{self.flag} {value} is not a whole number of {self.minimum} or more{hint}"
            return None
        if self.above is not None and self.below is not None:
            if not (math.isfinite(value) and self.above < value < self.below):
                return f"{self.flag} {value} is outside ({self.above:g}, {self.below:g}){hint}"
            return None
        if self.above is not None and not (math.isfinite(value) and value > self.above):
            return f"{self.flag} {value} is not a finite number above {self.above:g}{hint}"
        return None

    def check(self, value: Any) -> None:
        """Raise the ``Error:`` line of :meth:`problem`, if any."""
        problem = self.problem(value)
        if problem is not None:
            raise InputError(problem)
