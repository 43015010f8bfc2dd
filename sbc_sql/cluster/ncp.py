"""NCP in numpy: of a class on one QI, and the total of a labelling.

The normalized certainty penalty of a class on a numeric QI is its range over the QI's
range (1 when NULL mixes with numbers, 0 when all NULL); on a categorical QI its distinct
values over the QI's cardinality (0 for a single value); a suppressed row costs 1. The
product computes NCP in SQL over the written release; this twin scores a labelling before
anything is written (algorithm choices, leftovers, benchmarks, tests). The numba kernels'
costs (:mod:`.sbca_plus.kernels.costs`, shared by every compiled algorithm) are the same
arithmetic in the same order.
"""

from __future__ import annotations

import numpy as np

from .model import SUPPRESSED, QIData


def numeric_ncp(
    cmin: np.ndarray, cmax: np.ndarray, nulls: np.ndarray, size: np.ndarray, span: float
) -> np.ndarray:
    """NCP of classes on one numeric QI: range over span; 1 when NULL mixes with numbers."""
    has_numbers = np.isfinite(cmin)
    width = np.where(has_numbers, cmax - cmin, 0.0)
    ncp = width / span if span > 0 else np.zeros_like(width)
    mixed = (nulls > 0) & has_numbers
    return np.where(mixed, 1.0, ncp)


def class_bounds(
    col: np.ndarray, lab: np.ndarray, n_classes: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per class of ``lab`` (0 .. n_classes - 1), a numeric QI's lowest and highest value
    (inf and -inf when it has none) and its count of NULLs."""
    isnull = np.isnan(col)
    nulls = np.bincount(lab, weights=isnull, minlength=n_classes)
    cmin = np.full(n_classes, np.inf)
    np.minimum.at(cmin, lab, np.where(isnull, np.inf, col))
    cmax = np.full(n_classes, -np.inf)
    np.maximum.at(cmax, lab, np.where(isnull, -np.inf, col))
    return cmin, cmax, nulls


def numeric_join(
    cmin: np.ndarray, cmax: np.ndarray, nulls: np.ndarray, size: np.ndarray, span: float, v: float
) -> tuple[np.ndarray, np.ndarray]:
    """Classes' NCP on one numeric QI before and after a row of value v (NaN: NULL) joins."""
    old = numeric_ncp(cmin, cmax, nulls, size, span)
    if np.isnan(v):
        return old, numeric_ncp(cmin, cmax, nulls + 1, size + 1, span)
    return old, numeric_ncp(np.minimum(cmin, v), np.maximum(cmax, v), nulls, size + 1, span)


def categorical_ncp(distinct: np.ndarray, card: int) -> np.ndarray:
    """NCP of classes on one categorical QI holding ``distinct`` of its ``card`` values."""
    return np.where(distinct > 1, distinct / card, 0.0)


def ncp_per_qi(data: QIData, labels: np.ndarray) -> np.ndarray:
    """Mean NCP per QI over all n rows; a suppressed row costs 1 on every QI. A row standing
    for several (``QIData.multiplicity``) counts as the rows it stands for."""
    weight = data.weights_of_rows()
    n = int(weight.sum())
    out = np.zeros(data.n_qis)
    if n == 0:
        return out
    kept = labels != SUPPRESSED
    suppressed = n - int(weight[kept].sum())
    lab = labels[kept]
    if len(lab) == 0:
        return np.ones(data.n_qis)
    _, lab = np.unique(lab, return_inverse=True)
    n_classes = int(lab.max()) + 1
    size = np.bincount(lab, weights=weight[kept], minlength=n_classes).astype(np.float64)
    for q in range(data.n_qis):
        col = data.columns[q][kept]
        if data.numeric[q]:
            cmin, cmax, nulls = class_bounds(col, lab, n_classes)
            per_class = numeric_ncp(cmin, cmax, nulls, size, data.span(q))
        else:
            card = max(int(data.cardinality[q]), 1)
            pairs = np.unique(lab.astype(np.int64) * card + col)
            distinct = np.bincount(pairs // card, minlength=n_classes).astype(np.float64)
            per_class = categorical_ncp(distinct, card)
        out[q] = (float((per_class * size).sum()) + suppressed) / n
    return out


def total_ncp(data: QIData, labels: np.ndarray) -> float:
    """Weighted mean of the per-QI NCP: the release's total NCP in [0, 1]."""
    w = np.asarray(data.weights, dtype=np.float64)
    if data.n_rows == 0 or w.sum() == 0:
        return 0.0
    return float((ncp_per_qi(data, labels) * w).sum() / w.sum())
