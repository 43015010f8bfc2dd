"""The Plan: what a run has decided before it reads the data (the input, every column's role, the
options, the release's names, the QIs' weights).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from ..model import Column, TableInfo, ledger_objects_of, release_objects_of
from .options import Options

# the class table's size column (beside eq_class and the QIs' release columns)
CLASS_SIZE = "class_size"


@dataclass(frozen=True)
class Plan:
    source: TableInfo
    display_name: str
    columns: tuple[Column, ...]
    options: Options
    output: str
    view: str
    weights: tuple[float, ...]

    @property
    def k(self) -> int:
        return self.options.k

    @property
    def rows_table(self) -> str:
        """The release's row table: class id and verbatim columns, a row per released row."""
        return f"{self.output}_rows"

    @property
    def classes_table(self) -> str:
        """The release's class table: a row per class, its size and generalization."""
        return f"{self.output}_classes"

    @property
    def release_objects(self) -> tuple[str, ...]:
        """Everything a release writes: the release view, its two tables, the text view;
        made incremental, its ledger and its pending rows too."""
        ledger = ledger_objects_of(self.output) if self.options.incremental else ()
        return (*release_objects_of(self.output), *ledger)

    def generalized(self) -> Plan:
        """This plan as a generalized release's (every QI a range or a value set): what a
        microaggregated release's clustering would publish, for its NCP."""
        columns = tuple(dataclasses.replace(c, aggregate=None) for c in self.columns)
        options = dataclasses.replace(
            self.options, recode="generalize", aggregate=None, aggregate_categorical=None
        )
        return dataclasses.replace(self, columns=columns, options=options)

    @property
    def qis(self) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if c.role == "qi")

    @property
    def numeric_qis(self) -> tuple[Column, ...]:
        return tuple(c for c in self.qis if c.kind == "numeric")

    @property
    def categorical_qis(self) -> tuple[Column, ...]:
        return tuple(c for c in self.qis if c.kind == "categorical")

    @property
    def verbatim(self) -> tuple[Column, ...]:
        """Columns released as they are: sensitive and insensitive."""
        return tuple(c for c in self.columns if c.role in ("sensitive", "insensitive"))

    @property
    def sensitive(self) -> tuple[Column, ...]:
        """The sensitive columns, which the privacy criteria read."""
        return tuple(c for c in self.columns if c.role == "sensitive")

    @property
    def target(self) -> Column | None:
        """The --target column (released verbatim), None without one."""
        name = self.options.target
        return next((c for c in self.columns if c.name == name), None) if name else None


def scaled_weights(weights: Sequence[float]) -> tuple[float, ...]:
    """Weights scaled so the largest is 1 (all 0 stay 0): only their ratios matter, and so
    weights as large as 1e308 neither overflow their sum nor a weighted cost."""
    top = max(weights, default=0.0)
    return tuple(w / top for w in weights) if top > 0 and top != 1.0 else tuple(weights)


def release_names(plan: Plan) -> list[str]:
    """Column names of the release view, in order (see docs/release.md)."""
    return ["eq_class"] + [n for c in plan.columns if c.role != "identifier" for n in c.release_columns]
