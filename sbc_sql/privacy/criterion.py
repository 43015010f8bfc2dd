"""A privacy criterion, defined once: its SQL, its array rule, its compiled twin, its options.

After ARX's ``PrivacyCriterion``, one class per criterion (:mod:`.registry` lists them)
gives every form the criterion takes:

* **SQL** (a :class:`.base.PrivacyModel`): the per-class figure, the violation check that
  verification runs and the measure ``evaluate`` reports, on one sensitive column;
* **the array rule**, what a clustering checks while it forms classes, on one sensitive
  column's value counts with the input's shares p: :meth:`Criterion.class_ok` (one class),
  :meth:`Criterion.classes_ok` (many classes at once), and what repairs a class that fails
  (:meth:`Criterion.repair_bound`), with the class sizes the criterion forces
  (:meth:`Criterion.forced_size`) and what no clustering of the input can achieve
  (:meth:`Criterion.infeasible`). It checks a little more strictly than the SQL (by
  :data:`~sbc_sql.cluster.sensitive.MARGIN`), so that a class a clustering accepts never fails
  verification through rounding;
* **its compiled twin**: the kernel module :attr:`Criterion.kernel` of
  :mod:`sbc_sql.cluster.sbca_plus.kernels` (``criterion_<name>.py``, whose ``ok`` and
  optional ``repair`` are the array rule's, over the kernels' flat arrays) and the
  parameters it reads there (:meth:`Criterion.kernel_params`);
* **its options** (:attr:`Criterion.options`, plain data) and how their values make the
  criterion (:meth:`Criterion.from_options`; None when it is not asked).

An instance holds the thresholds and the sensitive column its SQL reads; the array rule
reads only the thresholds, and a :class:`~sbc_sql.cluster.sensitive.Rule` holds instances
without a column, applied to every sensitive column on its own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from ..cluster.sensitive import BELOW_SHARE
from ..errors import InputError
from ..model import Column
from .base import PrivacyModel
from .options import Option

__all__ = ["BELOW_SHARE", "Criterion", "at_most_distinct"]


class Criterion(PrivacyModel):
    """One privacy criterion in every form (see the module docstring)."""

    #: the criterion's options, in the order a caller passes them positionally
    options: ClassVar[tuple[Option, ...]] = ()
    #: its short name, as algorithms list the criteria they keep (``l``, ``t``, ``beta``)
    key: ClassVar[str]
    #: its compiled twin: the kernel module's name in sbc_sql.cluster.sbca_plus.kernels
    kernel: ClassVar[str]
    #: whether it compares a class with the whole input's distribution (then one exact block
    #: clusters better than many blocks of similar rows)
    reads_input: ClassVar[bool] = False

    @classmethod
    def from_options(cls, values: Mapping[str, Any], column: Column | None = None) -> Criterion | None:
        """The criterion the option ``values`` ask (by option name), on ``column``; None when
        they do not ask it."""
        return None

    def option_values(self) -> dict[str, Any]:
        """The option values that ask this criterion (the inverse of :meth:`from_options`)."""
        return {}

    def summary(self) -> dict[str, Any]:
        """What a run's summary says was asked: :meth:`option_values`, by option name."""
        return self.option_values()

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Criterion:
        """The criterion a provenance record describes (its name, :meth:`params`, column and
        form), on no column: the record's keys are the criterion's fields."""
        fields = {f.name for f in dataclasses.fields(cls)} - {"column"}  # type: ignore[arg-type]
        return cls(None, **{key: v for key, v in record.items() if key in fields})  # type: ignore[call-arg]

    @classmethod
    def measured(cls, column: Column) -> Criterion | None:
        """The criterion whose measure ``evaluate`` reports on a sensitive column, with no
        threshold given (None: it reports none)."""
        return None

    def describe(self) -> str:
        """The criterion and its thresholds, as a message names them."""
        return self.name

    def kind(self) -> str:
        """The criterion without its thresholds, as a message names it."""
        return self.name

    def check_values(self, column: str, distinct: int) -> None:
        """Raise an ``Error:`` line when the criterion cannot hold on a sensitive column of
        ``distinct`` values (NULL counted as one)."""

    def sensitive_column(self) -> Column:
        """The sensitive column the SQL reads (an instance for SQL has one)."""
        column = self.sensitive
        if column is None:
            raise ValueError(f"{self.name} reads a sensitive column; none was given")
        return column

    # ---- the array rule, one sensitive column

    def class_ok(self, counts: np.ndarray, size: int, p: np.ndarray, ordered: bool) -> bool:
        """Whether a class of ``size`` rows (at least 1) with value ``counts`` (float64) keeps
        the criterion; ``p``: the values' input shares, ``ordered``: numeric or temporal values."""
        return True

    def classes_ok(
        self, counts: np.ndarray, shares: np.ndarray, size: np.ndarray, p: np.ndarray, ordered: bool
    ) -> np.ndarray:
        """:meth:`class_ok` of many classes at once: ``counts`` (classes, m) float64, their
        ``shares`` (counts over size) and ``size`` (classes,), 1 for an empty class."""
        return np.ones(len(size), dtype=bool)

    def repair_bound(self, counts: np.ndarray, size: int, p: np.ndarray) -> int:
        """Which rows repair a class that fails: a bound b >= 0, the rows of a value whose
        count in the class is below b, or :data:`BELOW_SHARE`, the rows of a value below its
        input share (a row of one lowers the share of the most over-represented value and
        brings the distribution toward the input's). The first criterion that gives a bound
        decides; a criterion that has no say gives :data:`BELOW_SHARE`."""
        return BELOW_SHARE

    def forced_size(self, p: np.ndarray) -> np.ndarray | None:
        """Per value of input share p, the smallest class that may hold one row of it (None:
        any class may)."""
        return None

    def infeasible(self, p: np.ndarray, column: str) -> list[str]:
        """Why no clustering can keep the criterion on a column of input shares ``p`` (the
        whole input as one class fails); empty: feasible."""
        return []

    # ---- the compiled twin

    def kernel_params(self, shares: Sequence[np.ndarray]) -> tuple[list[int], list[float]]:
        """The integer and float parameters the kernel module reads (see
        :mod:`sbc_sql.cluster.sbca_plus.kernels.criteria`); ``shares``: every sensitive
        column's input shares, in the order of the kernels' one value axis."""
        return [], []


def at_most_distinct(option: Option, value: int, column: str, distinct: int, what: str) -> None:
    """A criterion asking ``value`` distinct values of a column that has fewer: the ``Error:``
    line naming the column's count and the largest value that could hold."""
    if distinct < value:
        raise InputError(
            f"{option.flag} {value} is above the {distinct} distinct value(s) of the sensitive "
            f"column '{column}'; {what}: give {option.flag} {max(distinct, 2)} or less"
        )
