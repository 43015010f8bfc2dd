"""Beta-likeness of a group from its sensitive counts, as :class:`..sensitive.Rule` checks it.

Rule fails a class when a value's count exceeds both p |E| and f(p) |E| (1 - MARGIN),
i.e. exceeds max(p, f(p) (1 - MARGIN)) |E|: that maximum is each value's *bound*, and a
group is beta-like iff every count is within bound times its size. Every check of phase 2
goes through here, so a class phase 2 accepts is one Rule accepts.
"""

from __future__ import annotations

import numpy as np

from ...errors import InputError
from ..sensitive import MARGIN, Rule, Sensitive, beta_cap


class Likeness:
    """The beta bounds of one sensitive column (values by code)."""

    def __init__(self, rule: Rule, sensitive: Sensitive) -> None:
        beta = rule.find("beta")
        if beta is None:
            raise InputError("background-knowledge clustering keeps beta-likeness: give --beta-likeness")
        self.p = sensitive.shares(0)
        self.cap = beta_cap(self.p, beta.threshold, beta.enhanced)
        self.bound = np.maximum(self.p, self.cap * (1.0 - MARGIN))

    def ok(self, counts: np.ndarray, size: int) -> bool:
        return size > 0 and bool(np.all(counts <= self.bound * size))

    def worst(self, counts: np.ndarray, size: int) -> int:
        """The value most over its bound (ties: smallest code)."""
        positive = self.bound > 0
        ratio = np.where(positive, counts / (np.where(positive, self.bound, 1.0) * max(size, 1)), np.inf)
        return int(np.argmax(np.where(counts > 0, ratio, 0.0)))

    def fits(self, counts: np.ndarray, size: int) -> np.ndarray:
        """Per value: whether one more row of it keeps its count within bound (size given)."""
        out: np.ndarray = counts + 1 <= self.bound * size
        return out

    def rd(self, counts: np.ndarray, size: int) -> float:
        """The largest relative difference (q - p) / p over the values of the input."""
        present = self.p > 0
        q = counts[present] / max(size, 1)
        return float(np.max((q - self.p[present]) / self.p[present], initial=0.0))

    def needs_more_than(self, k: int) -> np.ndarray:
        """Per value: whether no class of k rows may hold one row of it."""
        out: np.ndarray = self.bound * k < 1.0
        return out
