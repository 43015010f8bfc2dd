"""Placing the rows left when fewer than k remain after the greedy pass: each joins the
class whose information loss grows least (``nearest``), the last class formed (``last``),
or is suppressed (``suppress``)."""

from __future__ import annotations

import numpy as np

from .. import choices
from .model import SUPPRESSED, QIData
from .ncp import categorical_ncp, class_bounds, numeric_join

LEFTOVER_MODES = choices.LEFTOVER_MODES


def place_leftovers(data: QIData, labels: np.ndarray, rows: np.ndarray, mode: str, last_class: int) -> None:
    """Assign ``rows`` (in sort order) to classes in ``labels``, in place."""
    if len(rows) == 0:
        return
    if mode == "suppress" or last_class < 0:
        labels[rows] = SUPPRESSED
    elif mode == "last":
        labels[rows] = last_class
    elif mode == "nearest":
        for r in rows:
            labels[r] = cheapest_class(data, labels, r)
    else:
        raise ValueError(f"unknown leftover mode {mode!r}")


def class_cost_increase(data: QIData, labels: np.ndarray, r: int) -> np.ndarray:
    """For every class, how much the sum over its rows of weighted NCP grows if row r joins."""
    assigned = labels >= 0
    lab = labels[assigned]
    n_classes = int(lab.max()) + 1
    size = np.bincount(lab, minlength=n_classes).astype(np.float64)
    present = size > 0
    old = np.zeros(n_classes)
    new = np.zeros(n_classes)
    for q in range(data.n_qis):
        w = data.weights[q]
        col = data.columns[q][assigned]
        v = data.columns[q][r]
        if data.numeric[q]:
            cmin, cmax, nulls = class_bounds(col, lab, n_classes)
            old_q, new_q = numeric_join(cmin, cmax, nulls, size, data.span(q), v)
        else:
            card = max(int(data.cardinality[q]), 1)
            pairs = np.unique(lab.astype(np.int64) * card + col)
            distinct = np.bincount(pairs // card, minlength=n_classes).astype(np.float64)
            has_v = np.zeros(n_classes, dtype=bool)
            has_v[(pairs[pairs % card == v] // card)] = True
            old_q = categorical_ncp(distinct, card)
            new_q = categorical_ncp(distinct + (~has_v), card)
        old += w * old_q * size
        new += w * new_q * (size + 1)
    inc = new - old
    inc[~present] = np.inf
    return inc


def cheapest_class(data: QIData, labels: np.ndarray, r: int) -> int:
    """The class whose NCP grows least when row r joins it (ties: lowest class id)."""
    return int(np.argmin(class_cost_increase(data, labels, r)))
