"""The QI space of phase 2: distances, centroids and the generalisation cost of a group.

Distance between a row and a point: per numeric QI the difference over the QI's range
(NULL against NULL 0, NULL against a number 1), per categorical QI 0 when equal else 1,
summed with the QIs' weights. A centroid takes the numeric mean (NaN when all NULL) and the
categorical mode (ties: the smallest code). The cost of a group is the release's NCP: a
numeric range over the QI's range (1 when NULL mixes with numbers), a categorical QI's
distinct values over its cardinality (0 for one value). Rows are addressed by their index
into the group's arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import QIData


@dataclass
class Summary:
    """What the NCP and representative of a group need: per numeric QI min, max (of the
    scaled values; +inf / -inf without numbers) and NULL count; per categorical QI which
    codes it holds; its size and sensitive counts."""

    lo: np.ndarray
    hi: np.ndarray
    nulls: np.ndarray
    cats: list[np.ndarray]
    size: int
    counts: np.ndarray

    def union(self, other: Summary) -> Summary:
        return Summary(
            np.minimum(self.lo, other.lo),
            np.maximum(self.hi, other.hi),
            self.nulls + other.nulls,
            [a | b for a, b in zip(self.cats, other.cats, strict=True)],
            self.size + other.size,
            self.counts + other.counts,
        )


class Stacked:
    """Summaries of several groups as arrays (one row per group), updated in place."""

    def __init__(self, summaries: list[Summary]) -> None:
        self.lo = np.array([s.lo for s in summaries])
        self.hi = np.array([s.hi for s in summaries])
        self.nulls = np.array([s.nulls for s in summaries])
        self.cats = [np.array([s.cats[j] for s in summaries]) for j in range(len(summaries[0].cats))]
        self.size = np.array([s.size for s in summaries], dtype=np.int64)
        self.counts = np.array([s.counts for s in summaries])

    def add(self, c: int, one: Summary) -> None:
        """Group c gains the rows summarised by ``one``."""
        self.lo[c] = np.minimum(self.lo[c], one.lo)
        self.hi[c] = np.maximum(self.hi[c], one.hi)
        self.nulls[c] += one.nulls
        for j, held in enumerate(self.cats):
            held[c] |= one.cats[j]
        self.size[c] += one.size
        self.counts[c] += one.counts


class Space:
    """The QIs and sensitive codes of one phase-1 group, in the group's row order."""

    def __init__(self, data: QIData, rows: np.ndarray, codes: np.ndarray, m: int) -> None:
        self.rows = rows
        nq = [q for q in range(data.n_qis) if data.numeric[q]]
        cq = [q for q in range(data.n_qis) if not data.numeric[q]]
        r = len(rows)
        self.num = np.column_stack([data.scaled(q)[rows] for q in nq]) if nq else np.zeros((r, 0))
        self.cat = (
            np.column_stack([data.columns[q][rows].astype(np.int64) for q in cq])
            if cq
            else np.zeros((r, 0), dtype=np.int64)
        )
        self.wn = np.array([data.weights[q] for q in nq], dtype=np.float64)
        self.wc = np.array([data.weights[q] for q in cq], dtype=np.float64)
        self.card = [
            max(int(data.cardinality[q]), int(self.cat[:, j].max(initial=0)) + 1) for j, q in enumerate(cq)
        ]
        self.position = data.position[rows]
        self.codes = codes[rows]
        self.m = m

    def __len__(self) -> int:
        return len(self.rows)

    # ---- distances

    def point(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        return self.num[i], self.cat[i]

    def distance(self, idx: np.ndarray, point: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        """Weighted distance of rows ``idx`` to a point (numeric values, categorical codes)."""
        x = self.num[idx]
        y = point[0][None, :]
        nx, ny = np.isnan(x), np.isnan(y)
        diff = np.where(nx | ny, (nx != ny).astype(np.float64), np.abs(x - y))
        out: np.ndarray = diff @ self.wn + (self.cat[idx] != point[1][None, :]) @ self.wc
        return out

    def centroid(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Numeric mean (NaN when all NULL), categorical mode (ties: smallest code)."""
        x = self.num[idx]
        have = (~np.isnan(x)).sum(axis=0)
        sums = np.nansum(x, axis=0)
        mean = np.where(have > 0, sums / np.maximum(have, 1), np.nan)
        mode = np.array(
            [
                int(np.bincount(self.cat[idx, j], minlength=self.card[j]).argmax())
                for j in range(len(self.card))
            ],
            dtype=np.int64,
        )
        return mean, mode

    def order_by(self, idx: np.ndarray, d: np.ndarray, descending: bool = False) -> np.ndarray:
        """``idx`` by distance (ties by position)."""
        return idx[np.lexsort((self.position[idx], -d if descending else d))]

    # ---- groups

    def summary(self, idx: np.ndarray) -> Summary:
        x = self.num[idx]
        finite = np.where(np.isnan(x), np.inf, x)
        lo = finite.min(axis=0, initial=np.inf)
        hi = np.where(np.isnan(x), -np.inf, x).max(axis=0, initial=-np.inf)
        cats = []
        for j, card in enumerate(self.card):
            s = np.zeros(card, dtype=bool)
            s[self.cat[idx, j]] = True
            cats.append(s)
        return Summary(
            lo, hi, np.isnan(x).sum(axis=0), cats, len(idx), np.bincount(self.codes[idx], minlength=self.m)
        )

    def ncp(self, lo: np.ndarray, hi: np.ndarray, nulls: np.ndarray, distinct: np.ndarray) -> np.ndarray:
        """Weighted NCP of groups given as stacked summaries (one row per group)."""
        has = np.isfinite(lo)
        width = np.where(has, hi - lo, 0.0)
        num = np.where((nulls > 0) & has, 1.0, width)
        card = np.array(self.card, dtype=np.float64)
        cat = np.where(distinct > 1, distinct / np.maximum(card, 1.0)[None, :], 0.0)
        out: np.ndarray = num @ self.wn + cat @ self.wc
        return out

    def union_costs(self, one: Summary, others: list[Summary]) -> np.ndarray:
        """size * NCP of ``one`` merged with each of ``others``."""
        lo = np.minimum(one.lo[None, :], np.array([o.lo for o in others]).reshape(len(others), -1))
        hi = np.maximum(one.hi[None, :], np.array([o.hi for o in others]).reshape(len(others), -1))
        nulls = one.nulls[None, :] + np.array([o.nulls for o in others]).reshape(len(others), -1)
        distinct = np.zeros((len(others), len(self.card)))
        for j in range(len(self.card)):
            held = np.array([o.cats[j] for o in others]).reshape(len(others), -1)
            distinct[:, j] = (held | one.cats[j][None, :]).sum(axis=1)
        size = np.array([one.size + o.size for o in others], dtype=np.float64)
        out: np.ndarray = size * self.ncp(lo, hi, nulls, distinct)
        return out

    def representative_distances(self, i: int, summaries: Stacked) -> np.ndarray:
        """How far row i is from each class's generalised values: the Euclidean norm of the
        numeric distances to the ranges' midpoints (over the QIs' ranges), plus 1 per
        categorical QI whose value the class does not hold."""
        x = self.num[i][None, :]
        has = np.isfinite(summaries.lo)
        mid = (np.where(has, summaries.lo, 0.0) + np.where(has, summaries.hi, 0.0)) / 2
        diff = np.where(
            np.isnan(x), (summaries.nulls == 0).astype(np.float64), np.where(has, np.abs(x - mid), 1.0)
        )
        miss = np.zeros(len(summaries.lo))
        for j, held in enumerate(summaries.cats):
            miss += ~held[:, self.cat[i, j]]
        out: np.ndarray = np.sqrt((diff * diff).sum(axis=1)) + miss
        return out

    def add(self, s: Summary, i: int) -> Summary:
        return s.union(self.summary(np.array([i])))
