"""Rows that block mode's blocks could not place under the privacy criteria or the
per-column limits, placed across blocks: each joins, of the table's classes that keep the
criteria and the limits with it, the one whose information loss grows least, and stays
suppressed when none does.

A block keeps the criteria on its own rows; a row whose sensitive value its block lacks the
company for may still fit a class of another block. The classes' summaries (ranges, NULL
counts, value sets, sensitive value counts) are built once and kept as rows join; per row,
the increase of every class is one numpy pass, and the criteria are checked at once on the
:data:`MAX_CHECKS` classes of least increase. Above :data:`NEAR_CLASSES` classes a row is
tried first in the classes that start within :data:`NEAR_ROWS` rows of it in the table's
coarse order (its QI neighbours, where the cheapest classes are), and in every class only
when none of those keeps the criteria with it.
"""

from __future__ import annotations

import numpy as np

from .blocks import coarse_order
from .limits import Limits
from .model import SUPPRESSED, QIData
from .ncp import categorical_ncp, class_bounds, numeric_join
from .sensitive import Rule

#: classes whose criteria are checked for one row, cheapest first, before it stays suppressed
MAX_CHECKS = 4096
#: classes above which a row is tried in its neighbours' classes first
NEAR_CLASSES = 4096
#: rows each side, in the coarse order, of the classes tried first
NEAR_ROWS = 16384

#: pairs (value, class) that rows brought kept apart before they are merged into the others
#: (or a 64th of those, when more: a merge sorts them all)
MERGE_ROWS = 1024


def rescue(data: QIData, labels: np.ndarray, rule: Rule | None, limits: Limits | None = None) -> int:
    """Place the rows labelled ``SUPPRESSED`` in ``labels`` (in place) where ``rule`` (None:
    no criteria) and ``limits`` hold with them, each into the class of least NCP increase
    among those that do (ties: lower class id), in row order; returns how many were placed.
    Every class of ``labels`` keeps ``rule`` and ``limits`` and does after."""
    rows = np.flatnonzero(labels == SUPPRESSED)
    if rule is not None and not rule.active:
        rule = None
    if len(rows) == 0 or (rule is not None and data.sensitive is None) or not (labels >= 0).any():
        return 0
    classes = _Classes(data, labels, rule, limits or Limits())
    near = len(classes.every) > NEAR_CLASSES
    if near:
        rank = np.empty(data.n_rows, dtype=np.int64)
        rank[coarse_order(data)] = np.arange(data.n_rows, dtype=np.int64)
        # each class by where its first row lies in the coarse order
        start = np.full(classes.n_cls, data.n_rows, dtype=np.int64)
        kept = labels >= 0
        np.minimum.at(start, labels[kept], rank[kept])
        by_start = classes.every[np.argsort(start[classes.every], kind="stable")]
        starts = start[by_start]
    placed = 0
    for r in rows:
        c = -1
        if near:
            lo, hi = np.searchsorted(starts, [rank[r] - NEAR_ROWS, rank[r] + NEAR_ROWS])
            c = classes.cheapest(int(r), np.sort(by_start[lo:hi]))
        if c < 0:
            c = classes.cheapest(int(r), classes.every)
        if c >= 0:
            classes.join(c, int(r))
            placed += 1
    return placed


class _Classes:
    """The classes of a labelling, as summaries a row's joining is priced from."""

    def __init__(self, data: QIData, labels: np.ndarray, rule: Rule | None, limits: Limits) -> None:
        self.data, self.labels, self.rule, self.limits = data, labels, rule, limits
        self.sens = data.sensitive
        self.n_cls = n_cls = int(labels.max()) + 1
        assigned = np.flatnonzero(labels >= 0)
        lab = labels[assigned]
        self.size = np.bincount(lab, minlength=n_cls).astype(np.float64)
        self.every = np.flatnonzero(self.size > 0)
        # each class's count of every sensitive value, (classes, m_s) per column
        self.scounts = (
            [self.sens.class_counts(s, labels, n_cls) for s in range(self.sens.n_columns)]
            if rule is not None and self.sens is not None
            else []
        )
        self.nums: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        # categorical QI q: the pairs present as sorted keys value * n_cls + class (those
        # rows brought since in a second, short array merged in now and then) and each
        # class's distinct count
        self.keys: dict[int, list[np.ndarray]] = {}
        self.distinct: dict[int, np.ndarray] = {}
        for q in range(data.n_qis):
            col = data.columns[q][assigned]
            if data.numeric[q]:
                self.nums[q] = class_bounds(col, lab, n_cls)
            else:
                keys = np.unique(col.astype(np.int64) * n_cls + lab)
                self.distinct[q] = np.bincount(keys % n_cls, minlength=n_cls).astype(np.float64)
                self.keys[q] = [keys, np.zeros(0, dtype=np.int64)]

    def _has(self, q: int, v: int, cands: np.ndarray) -> np.ndarray:
        """Which of the classes ``cands`` hold value v of categorical QI q."""
        want = v * self.n_cls + cands
        has = np.zeros(len(cands), dtype=bool)
        for keys in self.keys[q]:
            if len(keys):
                at = np.minimum(np.searchsorted(keys, want), len(keys) - 1)
                has |= keys[at] == want
        return has

    def increase(self, r: int, cands: np.ndarray) -> np.ndarray:
        """How much each class of ``cands`` grows in information loss when row r joins it
        (inf where it would break a per-column limit)."""
        data = self.data
        size = self.size[cands]
        old = np.zeros(len(cands))
        new = np.zeros(len(cands))
        broken = np.zeros(len(cands), dtype=bool)
        for q in range(data.n_qis):
            w = data.weights[q]
            v = data.columns[q][r]
            name = data.names[q]
            if data.numeric[q]:
                cmin, cmax, nulls = (a[cands] for a in self.nums[q])
                old_q, new_q = numeric_join(cmin, cmax, nulls, size, data.span(q), v)
                if name in self.limits.width and not np.isnan(v):
                    broken |= np.fmax(cmax, v) - np.fmin(cmin, v) > self.limits.width[name]
            else:
                card = max(int(data.cardinality[q]), 1)
                distinct = self.distinct[q][cands]
                with_v = distinct + ~self._has(q, int(v), cands)
                old_q = categorical_ncp(distinct, card)
                new_q = categorical_ncp(with_v, card)
                if name in self.limits.values:
                    broken |= with_v > self.limits.values[name]
            old += w * old_q * size
            new += w * new_q * (size + 1)
        inc: np.ndarray = np.where(broken, np.inf, new - old)
        return inc

    def cheapest(self, r: int, cands: np.ndarray) -> int:
        """Of the classes ``cands`` (ascending ids), the one of least increase that keeps
        the criteria and the limits with row r (ties: lower id), of the MAX_CHECKS of least
        increase; -1: none of them does."""
        if len(cands) == 0:
            return -1
        inc = self.increase(r, cands)
        fits = np.isfinite(inc)
        if not fits.all():
            cands, inc = cands[fits], inc[fits]
            if len(cands) == 0:
                return -1
        if len(cands) > MAX_CHECKS:
            part = np.argpartition(inc, MAX_CHECKS - 1)[:MAX_CHECKS]
            cands, inc = cands[part], inc[part]
        by = np.lexsort((cands, inc))
        cands = cands[by]
        if self.rule is None or self.sens is None:
            return int(cands[0])
        counts = []
        for s, cnt in enumerate(self.scounts):
            with_r = cnt[cands]
            with_r[:, self.sens.codes[s][r]] += 1
            counts.append(with_r)
        ok = self.rule.counts_ok(counts, self.size[cands] + 1, self.sens)
        return int(cands[np.argmax(ok)]) if ok.any() else -1

    def join(self, c: int, r: int) -> None:
        """Row r into class c: its label and the class's summaries."""
        data = self.data
        self.labels[r] = c
        for s, cnt in enumerate(self.scounts):
            assert self.sens is not None
            cnt[c, int(self.sens.codes[s][r])] += 1
        one = np.array([c], dtype=np.int64)
        for q in range(data.n_qis):
            v = data.columns[q][r]
            if data.numeric[q]:
                cmin, cmax, nulls = self.nums[q]
                if np.isnan(v):
                    nulls[c] += 1
                else:
                    cmin[c] = min(cmin[c], v)
                    cmax[c] = max(cmax[c], v)
            elif not self._has(q, int(v), one)[0]:
                self.distinct[q][c] += 1
                main, recent = self.keys[q]
                key = int(v) * self.n_cls + c
                recent = np.insert(recent, np.searchsorted(recent, key), key)
                if len(recent) > max(MERGE_ROWS, len(main) // 64):
                    main, recent = np.union1d(main, recent), recent[:0]
                self.keys[q] = [main, recent]
        self.size[c] += 1
