"""The seam between the database and the clustering algorithms.

A clustering step takes a :class:`QIData` (quasi-identifiers as columnar arrays: float64
numerics with NaN for NULL, int32 category codes where NULL is a category of its own) and
returns one class id per row (``-1`` for a suppressed row). It never sees the database.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .sensitive import Sensitive

SUPPRESSED = -1


@dataclass(frozen=True)
class QIData:
    """Quasi-identifiers of n rows, one array per QI, in the source's column order."""

    names: tuple[str, ...]
    numeric: tuple[bool, ...]
    columns: tuple[np.ndarray, ...]
    # numeric QIs: min and max over the whole input (NaN when all values are NULL)
    lo: tuple[float, ...]
    hi: tuple[float, ...]
    # categorical QIs: number of categories, NULL included when present (0 for numerics)
    cardinality: tuple[int, ...]
    weights: tuple[float, ...]
    # the row's position in the source: ties in every order are broken by it
    position: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # each row's place in the coarse order (blocks.coarse_order) of a larger table that these
    # rows were taken from, which coarse_order then reads instead of recomputing; None when
    # not computed
    coarse_rank: np.ndarray | None = None
    # the declared sensitive columns as value codes, for the algorithms that keep privacy
    # criteria on them (see .sensitive); None when no criterion is asked
    sensitive: Sensitive | None = None
    # the target label of every row (--target): int32 codes 0 .. n_labels - 1 in value
    # order, NULL a label of its own (last); the algorithms that read it keep classes pure
    # on it (ClusterOptions.target_weight); None when no target is given
    target: np.ndarray | None = None
    # how many source rows each row stands for: a distinct QI tuple and its count (int64,
    # at least 1), for the algorithms that cluster tuples whole (Clusterer.tuples); None
    # when every row stands for itself
    multiplicity: np.ndarray | None = None

    def __post_init__(self) -> None:
        d = len(self.names)
        if not (
            len(self.numeric)
            == len(self.columns)
            == len(self.lo)
            == len(self.hi)
            == len(self.cardinality)
            == len(self.weights)
            == d
        ):
            raise ValueError("QIData fields must have one entry per QI")
        n = self.n_rows
        for col in self.columns:
            if len(col) != n:
                raise ValueError("QIData columns must have equal length")
        if len(self.position) != n:
            object.__setattr__(self, "position", np.arange(n, dtype=np.int64))
        if self.coarse_rank is not None and len(self.coarse_rank) != n:
            raise ValueError("QIData coarse_rank must have one entry per row")
        if self.sensitive is not None and self.sensitive.n_rows != n:
            raise ValueError("QIData sensitive codes must have one entry per row")
        if self.target is not None and len(self.target) != n:
            raise ValueError("QIData target codes must have one entry per row")
        if self.multiplicity is not None and len(self.multiplicity) != n:
            raise ValueError("QIData multiplicities must have one entry per row")

    @property
    def n_rows(self) -> int:
        return len(self.columns[0]) if self.columns else 0

    @property
    def n_represented(self) -> int:
        """The source rows these rows stand for (n_rows when each stands for itself)."""
        return self.n_rows if self.multiplicity is None else int(self.multiplicity.sum())

    def weights_of_rows(self) -> np.ndarray:
        """How many source rows each row stands for, as int64 (ones without multiplicities)."""
        if self.multiplicity is None:
            return np.ones(self.n_rows, dtype=np.int64)
        return np.asarray(self.multiplicity, dtype=np.int64)

    @property
    def n_qis(self) -> int:
        return len(self.names)

    def span(self, q: int) -> float:
        """Range of numeric QI q, 0 when constant or all NULL."""
        r = self.hi[q] - self.lo[q]
        return float(r) if np.isfinite(r) and r > 0 else 0.0

    def scaled(self, q: int) -> np.ndarray:
        """Numeric QI q divided by its range (NaN stays NaN); zeros for a zero range."""
        col = self.columns[q]
        s = self.span(q)
        if s == 0.0:
            return np.where(np.isnan(col), np.nan, 0.0)
        return (col - self.lo[q]) / s

    def take(self, rows: np.ndarray) -> QIData:
        """The same QIs restricted to the given rows (ranges and cardinalities kept)."""
        return QIData(
            self.names,
            self.numeric,
            tuple(c[rows] for c in self.columns),
            self.lo,
            self.hi,
            self.cardinality,
            self.weights,
            self.position[rows],
            None if self.coarse_rank is None else self.coarse_rank[rows],
            None if self.sensitive is None else self.sensitive.take(rows),
            None if self.target is None else self.target[rows],
            None if self.multiplicity is None else self.multiplicity[rows],
        )

    @property
    def n_labels(self) -> int:
        """Distinct target labels (0 without a target)."""
        return int(self.target.max()) + 1 if self.target is not None and len(self.target) else 0

    def categorical_order(self) -> list[int]:
        """Categorical QIs by ascending cardinality, ties by column order (SBC's order)."""
        cats = [q for q in range(self.n_qis) if not self.numeric[q]]
        return sorted(cats, key=lambda q: (self.cardinality[q], q))

    def sort_order(self) -> np.ndarray:
        """The paper's row order (its first step): categoricals by cardinality, numerics, position."""
        keys: list[np.ndarray] = [self.position]
        numerics = [q for q in range(self.n_qis) if self.numeric[q]]
        keys.extend(self.columns[q] for q in reversed(numerics))
        keys.extend(self.columns[q] for q in reversed(self.categorical_order()))
        return np.lexsort(keys)
