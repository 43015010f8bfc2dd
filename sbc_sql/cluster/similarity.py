"""SBC's categorical distances from contingency counts (the paper's similarity tables).

For each categorical QI the seed's value gets a similarity order over all values of that
QI; the distance to the value at position i is i / (card - 1). The order comes from the
counts of the rows still unclustered, so :class:`Contingency` is updated after every class.
"""

from __future__ import annotations

import itertools

import numpy as np

from .model import QIData


class Contingency:
    """Counts of the remaining rows: per categorical QI, and per (predecessor, QI) pair."""

    def __init__(
        self,
        data: QIData,
        pair_counts: dict[tuple[int, int], np.ndarray] | None = None,
        value_counts: dict[int, np.ndarray] | None = None,
    ) -> None:
        self.order = data.categorical_order()
        self.card = {q: max(int(data.cardinality[q]), 1) for q in self.order}
        # (predecessor, QI) for every categorical QI after the first
        self.pairs = list(itertools.pairwise(self.order))
        self.predecessor = {n: m for m, n in self.pairs}
        self.counts: dict[int, np.ndarray] = {}
        # counts of the source rows: a row standing for m rows (QIData.multiplicity) counts m
        weights = None if data.multiplicity is None else data.multiplicity.astype(np.float64)
        for q in self.order:
            if value_counts is not None and q in value_counts:
                self.counts[q] = np.asarray(value_counts[q], dtype=np.int64).copy()
            else:
                self.counts[q] = np.bincount(data.columns[q], weights, minlength=self.card[q]).astype(
                    np.int64, copy=False
                )
        self.pair: dict[tuple[int, int], np.ndarray] = {}
        for m, n in self.pairs:
            if pair_counts is not None and (m, n) in pair_counts:
                self.pair[(m, n)] = np.asarray(pair_counts[(m, n)], dtype=np.int64).copy()
            else:
                flat = data.columns[m].astype(np.int64) * self.card[n] + data.columns[n]
                self.pair[(m, n)] = (
                    np.bincount(flat, weights, minlength=self.card[m] * self.card[n])
                    .reshape(self.card[m], self.card[n])
                    .astype(np.int64, copy=False)  # counted in int64 already unless weighted
                )

    def remove(self, data: QIData, rows: np.ndarray) -> None:
        """Decrement the counts by the rows that just formed a class."""
        taken = data.weights_of_rows()[rows]
        for q in self.order:
            np.subtract.at(self.counts[q], data.columns[q][rows], taken)
        for m, n in self.pairs:
            np.subtract.at(self.pair[(m, n)], (data.columns[m][rows], data.columns[n][rows]), taken)

    def distance_table(self, q: int, seed_codes: dict[int, int], k: int) -> np.ndarray:
        """Distance from the seed's value of categorical QI q to every value of q."""
        card = self.card[q]
        s = seed_codes[q]
        if card <= 1:
            return np.zeros(card, dtype=np.float64)
        if card == 2:
            table = np.ones(2, dtype=np.float64)
            table[s] = 0.0
            return table
        m = self.predecessor.get(q)
        if m is None:
            # the first categorical QI: similarity from its own frequency column
            counts = self.counts[q].astype(np.float64)
            key = np.abs(counts - counts[s])
        else:
            row = self.pair[(m, q)][seed_codes[m]]
            if row.sum() < k:
                # the paper's Table 2: too few rows with the seed's M value, use all rows of M
                row = self.counts[q]
            total = float(row.sum())
            p = row / total if total > 0 else np.zeros(card, dtype=np.float64)
            key = np.abs(p - p[s])
        return rank_distances(key, s)


def rank_distances(key: np.ndarray, seed: int) -> np.ndarray:
    """Positions in the order (key ascending, ties by value order, seed first) over card-1."""
    card = len(key)
    key = key.astype(np.float64).copy()
    key[seed] = -1.0
    order = np.lexsort((np.arange(card), key))
    rank = np.empty(card, dtype=np.float64)
    rank[order] = np.arange(card, dtype=np.float64)
    return rank / (card - 1)


def similarity_order(key: np.ndarray, seed: int) -> list[int]:
    """The value codes in similarity order (for reports and tests)."""
    return [int(v) for v in np.argsort(rank_distances(key, seed), kind="stable")]
