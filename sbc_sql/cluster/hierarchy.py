"""A generalization hierarchy of one QI, as the full-domain algorithms read it: a group id
per domain code at each level, the levels nesting from every value apart to one group."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from .model import QIData


def first_appearance_ids(a: np.ndarray) -> np.ndarray:
    """Dense ids 0.. numbered in the order the values first appear (a canonical partition)."""
    _, first, inverse = np.unique(a, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.reshape(-1)]


@dataclass(frozen=True)
class Hierarchy:
    """Group id per domain code at each level: ``levels[l, code]``, shape (L + 1, width).

    ``values``: for a numeric QI the sorted distinct numbers the codes stand for (width is
    ``len(values) + 1``, the last code being NULL); ``None`` for a categorical QI, whose codes
    are its category codes.
    """

    levels: np.ndarray
    values: np.ndarray | None = None

    def __post_init__(self) -> None:
        levels = np.asarray(self.levels, dtype=np.int64)
        if levels.ndim != 2 or levels.shape[0] < 1 or levels.shape[1] < 1:
            raise InputError("a hierarchy needs at least one level over at least one value")
        if self.values is not None and levels.shape[1] != len(self.values) + 1:
            raise InputError(
                f"a numeric hierarchy over {len(self.values)} values needs "
                f"{len(self.values) + 1} columns (NULL last), not {levels.shape[1]}"
            )
        levels = np.stack([first_appearance_ids(level) for level in levels])
        if not (levels[0] == np.arange(levels.shape[1])).all():
            raise InputError("level 0 of a hierarchy must keep every value apart")
        if (levels[-1] != 0).any():
            raise InputError("the last level of a hierarchy must be one group")
        for lv in range(levels.shape[0] - 1):
            pairs = np.unique(levels[lv] * levels.shape[1] + levels[lv + 1])
            if len(pairs) != levels[lv].max() + 1:
                raise InputError(f"hierarchy level {lv + 1} splits a group of level {lv}; levels must nest")
        object.__setattr__(self, "levels", levels)

    @property
    def height(self) -> int:
        """Number of generalization steps from the values to one group."""
        return int(self.levels.shape[0]) - 1

    def groups(self, level: int) -> int:
        """Number of groups at a level."""
        return int(self.levels[level].max()) + 1

    def step(self, level: int) -> np.ndarray:
        """Group id at level + 1 of each group id at ``level`` (levels nest)."""
        out = np.empty(self.groups(level), dtype=np.int64)
        out[self.levels[level]] = self.levels[level + 1]
        return out

    def codes(self, data: QIData, q: int) -> np.ndarray:
        """Domain code of every row for QI q."""
        col = data.columns[q]
        width = self.levels.shape[1]
        if self.values is None:
            if data.numeric[q]:
                raise InputError(f"QI {data.names[q]!r} is numeric; its hierarchy needs values")
            codes = col.astype(np.int64)
            if len(codes) and (codes.min() < 0 or codes.max() >= width):
                raise InputError(f"QI {data.names[q]!r} has codes beyond the {width} values of its hierarchy")
            return codes
        if not data.numeric[q]:
            raise InputError(f"QI {data.names[q]!r} is categorical; its hierarchy has values")
        isnull = np.isnan(col)
        codes = np.searchsorted(self.values, col).astype(np.int64)
        listed = np.append(self.values, np.nan)
        known = isnull | (listed[codes] == col)
        if not known.all():
            raise InputError(
                f"QI {data.names[q]!r} has {int((~known).sum())} values that its hierarchy does not list"
            )
        codes[isnull] = len(self.values)
        return codes
