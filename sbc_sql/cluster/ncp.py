"""Total NCP of a labelling in numpy (SPEC section 4).

The product computes NCP in SQL over the written release; this twin scores a labelling
before anything is written (algorithm choices, refinement, benchmarks, tests).
"""

from __future__ import annotations

import numpy as np

from .leftover import numeric_ncp
from .model import SUPPRESSED, QIData


def ncp_per_qi(data: QIData, labels: np.ndarray) -> np.ndarray:
    """Mean NCP per QI over all n rows; a suppressed row costs 1 on every QI."""
    n = data.n_rows
    out = np.zeros(data.n_qis)
    if n == 0:
        return out
    kept = labels != SUPPRESSED
    suppressed = n - int(kept.sum())
    lab = labels[kept]
    if len(lab) == 0:
        return np.ones(data.n_qis)
    _, lab = np.unique(lab, return_inverse=True)
    n_classes = int(lab.max()) + 1
    size = np.bincount(lab, minlength=n_classes).astype(np.float64)
    for q in range(data.n_qis):
        col = data.columns[q][kept]
        if data.numeric[q]:
            isnull = np.isnan(col)
            nulls = np.bincount(lab, weights=isnull, minlength=n_classes)
            cmin = np.full(n_classes, np.inf)
            np.minimum.at(cmin, lab, np.where(isnull, np.inf, col))
            cmax = np.full(n_classes, -np.inf)
            np.maximum.at(cmax, lab, np.where(isnull, -np.inf, col))
            per_class = numeric_ncp(cmin, cmax, nulls, size, data.span(q))
        else:
            card = max(int(data.cardinality[q]), 1)
            pairs = np.unique(lab.astype(np.int64) * card + col)
            distinct = np.bincount(pairs // card, minlength=n_classes).astype(np.float64)
            per_class = np.where(distinct > 1, distinct / card, 0.0)
        out[q] = (float((per_class * size).sum()) + suppressed) / n
    return out


def total_ncp(data: QIData, labels: np.ndarray) -> float:
    """Weighted mean of the per-QI NCP: the release's total NCP in [0, 1]."""
    w = np.asarray(data.weights, dtype=np.float64)
    if data.n_rows == 0 or w.sum() == 0:
        return 0.0
    return float((ncp_per_qi(data, labels) * w).sum() / w.sum())
