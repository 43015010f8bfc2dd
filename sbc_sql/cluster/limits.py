"""Per-column limits on generalization: how wide a class's range may be on a numeric QI and
how many values its set may hold on a categorical QI (``--max-width age=10`` and
``--max-values nationality=3``).

A limit bounds what an analyst loses on one column, whatever the others cost: without one,
a class of ten rows may span ages 17 to 90 when that keeps its other columns exact. The
default SBCA keeps the limits while it clusters (a class grows only with rows that keep
it within them, a leftover row joins only a class it fits, refinement never breaks them);
a row that fits no class is suppressed. Widths are in the clustering's units: a number's
own, days for a date, microseconds for a timestamp (the session converts a date-time's
width, given in days).

Every limit here is in force: one that cannot bind (a width at least the column's range, a
value count at least its cardinality) is left out by :meth:`Limits.binding`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from .model import SUPPRESSED, QIData


@dataclass(frozen=True)
class Limits:
    """``width``: QI name -> widest range of a class (clustering units); ``values``: QI
    name -> most values of a class's set."""

    width: Mapping[str, float] = field(default_factory=dict)
    values: Mapping[str, int] = field(default_factory=dict)
    #: per QI, clustering units per unit of the width as given (a timestamp's microseconds
    #: per day), for messages; 1 when absent
    scale: Mapping[str, float] = field(default_factory=dict)

    def given_width(self, name: str) -> float:
        """The width of ``name`` in the units it was given in."""
        return self.width[name] / self.scale.get(name, 1.0)

    @property
    def active(self) -> bool:
        return bool(self.width or self.values)

    def binding(self, data: QIData) -> Limits:
        """The limits that can bind on ``data``: a width below the column's range, a value
        count below its cardinality."""
        index = {n: q for q, n in enumerate(data.names)}
        return Limits(
            {n: w for n, w in self.width.items() if w < data.span(index[n])},
            {n: v for n, v in self.values.items() if v < data.cardinality[index[n]]},
            self.scale,
        )

    def kernel_arrays(self, data: QIData, num_q: list[int], cat_q: list[int]) -> dict[str, np.ndarray]:
        """``wlim`` per numeric QI of ``num_q`` (inf: none) and ``vlim`` per categorical QI of
        ``cat_q`` (its cardinality + 1: none), in those orders, as the kernels take them."""
        wlim = np.array([self.width.get(data.names[q], np.inf) for q in num_q], dtype=np.float64)
        vlim = np.array(
            [self.values.get(data.names[q], data.cardinality[q] + 1) for q in cat_q], dtype=np.int64
        )
        return {"wlim": wlim, "vlim": vlim}

    def broken(self, data: QIData, labels: np.ndarray) -> dict[str, int]:
        """Per limited QI, the classes of ``labels`` that break its limit (a numpy check of
        the clustering's output, independent of the kernels)."""
        index = {n: q for q, n in enumerate(data.names)}
        kept = labels != SUPPRESSED
        lab = labels[kept]
        out: dict[str, int] = {}
        if not len(lab):
            return dict.fromkeys((*self.width, *self.values), 0)
        n_cls = int(lab.max()) + 1
        for name, w in self.width.items():
            col = np.asarray(data.columns[index[name]], dtype=np.float64)[kept]
            num = ~np.isnan(col)
            lo = np.full(n_cls, np.inf)
            hi = np.full(n_cls, -np.inf)
            np.minimum.at(lo, lab[num], col[num])
            np.maximum.at(hi, lab[num], col[num])
            out[name] = int(((hi - lo) > w).sum())
        for name, v in self.values.items():
            codes = np.asarray(data.columns[index[name]], dtype=np.int64)[kept]
            pairs = np.unique(lab * (int(codes.max()) + 1) + codes)
            per_class = np.bincount(pairs // (int(codes.max()) + 1), minlength=n_cls)
            out[name] = int((per_class > v).sum())
        return out
