"""Rows that block mode's blocks could not place under the privacy criteria, placed across
blocks: each joins, of the table's classes that keep the criteria with it, the one whose
information loss grows least, and stays suppressed when none does.

A block keeps the criteria on its own rows; a row whose sensitive value its block lacks the
company for may still fit a class of another block. The rows are few (a block places all
but a handful), so this is a numpy pass per row over the classes' summaries (ranges, NULL
counts, value sets, built once), the criteria checked on the classes of least increase
first, at most :data:`MAX_CHECKS` of them.
"""

from __future__ import annotations

import numpy as np

from .model import SUPPRESSED, QIData
from .ncp import categorical_ncp, numeric_ncp
from .sensitive import Rule

#: classes whose criteria are checked for one row, cheapest first, before it stays suppressed
MAX_CHECKS = 1000


def rescue(data: QIData, labels: np.ndarray, rule: Rule) -> int:
    """Place the rows labelled ``SUPPRESSED`` in ``labels`` (in place) where ``rule`` holds
    with them, each into the class of least NCP increase among those (ties: lower class id);
    returns how many were placed. Every class of ``labels`` keeps ``rule`` and does after."""
    rows = np.flatnonzero(labels == SUPPRESSED)
    if len(rows) == 0 or data.sensitive is None or not (labels >= 0).any():
        return 0
    sens = data.sensitive
    n_cls = int(labels.max()) + 1
    assigned = np.flatnonzero(labels >= 0)
    lab = labels[assigned]
    size = np.bincount(lab, minlength=n_cls).astype(np.float64)
    by_class = assigned[np.argsort(lab, kind="stable")]
    starts = np.searchsorted(lab[np.argsort(lab, kind="stable")], np.arange(n_cls + 1))
    extra: dict[int, list[int]] = {}
    shares = [sens.shares(s) for s in range(sens.n_columns)]
    nums: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    cats: dict[int, tuple[np.ndarray, np.ndarray, set[tuple[int, int]]]] = {}
    for q in range(data.n_qis):
        col = data.columns[q][assigned]
        if data.numeric[q]:
            isnull = np.isnan(col)
            nulls = np.bincount(lab, weights=isnull, minlength=n_cls)
            cmin = np.full(n_cls, np.inf)
            np.minimum.at(cmin, lab, np.where(isnull, np.inf, col))
            cmax = np.full(n_cls, -np.inf)
            np.maximum.at(cmax, lab, np.where(isnull, -np.inf, col))
            nums[q] = (cmin, cmax, nulls)
        else:
            keys = np.unique(col.astype(np.int64) * n_cls + lab)
            distinct = np.bincount(keys % n_cls, minlength=n_cls).astype(np.float64)
            cats[q] = (keys, distinct, set())
    placed = 0
    for r in rows:
        inc = np.zeros(n_cls)
        old = np.zeros(n_cls)
        for q in range(data.n_qis):
            w = data.weights[q]
            v = data.columns[q][r]
            if data.numeric[q]:
                cmin, cmax, nulls = nums[q]
                span = data.span(q)
                old_q = numeric_ncp(cmin, cmax, nulls, size, span)
                if np.isnan(v):
                    new_q = numeric_ncp(cmin, cmax, nulls + 1, size + 1, span)
                else:
                    new_q = numeric_ncp(np.minimum(cmin, v), np.maximum(cmax, v), nulls, size + 1, span)
            else:
                keys, distinct, added = cats[q]
                card = max(int(data.cardinality[q]), 1)
                has = np.zeros(n_cls, dtype=bool)
                lo, hi = np.searchsorted(keys, [int(v) * n_cls, (int(v) + 1) * n_cls])
                has[keys[lo:hi] % n_cls] = True
                for vq, c in added:
                    if vq == v:
                        has[c] = True
                old_q = categorical_ncp(distinct, card)
                new_q = categorical_ncp(distinct + (~has), card)
            old += w * old_q * size
            inc += w * new_q * (size + 1)
        inc -= old
        inc[size == 0] = np.inf
        for c in np.argsort(inc, kind="stable")[:MAX_CHECKS]:
            if not np.isfinite(inc[c]):
                break
            members = np.concatenate([by_class[starts[c] : starts[c + 1]], extra.get(int(c), []), [r]])
            members = members.astype(np.int64)
            counts = [
                np.bincount(sens.codes[s][members], minlength=len(shares[s])) for s in range(len(shares))
            ]
            if not rule.ok(counts, len(members), sens):
                continue
            labels[r] = c
            extra.setdefault(int(c), []).append(int(r))
            _join(data, nums, cats, size, int(c), int(r))
            placed += 1
            break
    return placed


def _join(data: QIData, nums: dict, cats: dict, size: np.ndarray, c: int, r: int) -> None:
    """Row r into class c's summaries."""
    for q in range(data.n_qis):
        v = data.columns[q][r]
        if data.numeric[q]:
            cmin, cmax, nulls = nums[q]
            if np.isnan(v):
                nulls[c] += 1
            else:
                cmin[c] = min(cmin[c], v)
                cmax[c] = max(cmax[c], v)
        else:
            keys, distinct, added = cats[q]
            lo, hi = np.searchsorted(keys, [int(v) * len(size) + c, int(v) * len(size) + c + 1])
            if hi == lo and (int(v), c) not in added:
                added.add((int(v), c))
                distinct[c] += 1
    size[c] += 1
