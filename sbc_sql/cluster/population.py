"""k-map and delta-presence over arrays: each class's population matches, and the merges that
bring every class to k-map and under delta-max.

A population table (``--population``) holds the people the input was drawn from, on the
same QIs. A class of the release *matches* a population row when every QI of the row lies
inside the class's generalization: within its range (a NULL only where the class holds
NULL) or among its set. k-map asks every class to match at least ``k_map`` population rows;
delta-presence asks the share of those matches that are in the release (the class's rows
over its matches, delta) to lie within [delta-min, delta-max]. The SQL that verifies both is
:mod:`sbc_sql.privacy.population`'s; this module is the clustering's side, over the
population's distinct QI tuples coded as the input's columns (:class:`Population`).

A class only gains matches when it widens, so :func:`enforce` merges each class that
matches too few, or whose delta is above delta-max, into the class whose merged box adds
the least NCP, until every class keeps both. Merging keeps k and the criteria a class's
sensitive values keep by mixing (l-diversity, t-closeness, beta-likeness; recursive
(c,l)-diversity is checked per merge, with the nearest partner that keeps it chosen).
Widening lowers delta, so delta-min is kept by choosing partners that keep it, and a class
still below it is suppressed whole, the classes of lowest delta first, within the rows
``--max-suppression`` leaves; verification checks the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .model import SUPPRESSED, QIData
from .ncp import categorical_ncp, class_bounds, numeric_ncp

#: a class is held to delta-max this much more strictly than SQL checks it, so that a class
#: the merges accept never fails verification through rounding
MARGIN = 1e-9

#: partners tried per merge for one that keeps the sensitive criteria (nearest first)
PARTNERS = 16


@dataclass(frozen=True)
class Population:
    """The population's distinct QI tuples, coded as the input's :class:`QIData` columns:
    numerics as float64 (NULL: NaN), categoricals as the input's codes (NULL: the input's
    NULL code; a value, or a NULL, the input lacks: -1, inside no class), with each tuple's
    rows (int64)."""

    columns: tuple[np.ndarray, ...]
    rows: np.ndarray

    @property
    def n_tuples(self) -> int:
        return len(self.rows)

    @property
    def total(self) -> int:
        return int(self.rows.sum())


@dataclass
class Boxes:
    """Classes' generalizations over arrays: per numeric QI the lowest and highest value
    (inf, -inf: none) and whether NULL is in; per categorical QI a (classes, cardinality)
    membership matrix; the rows each class stands for."""

    lo: dict[int, np.ndarray]
    hi: dict[int, np.ndarray]
    null: dict[int, np.ndarray]
    sets: dict[int, np.ndarray]
    rows: np.ndarray

    @property
    def n_classes(self) -> int:
        return len(self.rows)

    def box(self, c: int) -> Box:
        """Class c's generalization alone."""
        return Box(
            {q: float(v[c]) for q, v in self.lo.items()},
            {q: float(v[c]) for q, v in self.hi.items()},
            {q: bool(v[c]) for q, v in self.null.items()},
            {q: v[c] for q, v in self.sets.items()},
        )

    def merged(self, c: int, d: int) -> Box:
        """The generalization of classes c and d merged."""
        return Box(
            {q: float(min(v[c], v[d])) for q, v in self.lo.items()},
            {q: float(max(v[c], v[d])) for q, v in self.hi.items()},
            {q: bool(v[c] or v[d]) for q, v in self.null.items()},
            {q: v[c] | v[d] for q, v in self.sets.items()},
        )


@dataclass(frozen=True)
class Box:
    """One class's generalization: per numeric QI its range (inf, -inf: no number) and
    whether NULL is in, per categorical QI its membership over the codes."""

    lo: dict[int, float]
    hi: dict[int, float]
    null: dict[int, bool]
    sets: dict[int, np.ndarray]


def boxes(data: QIData, labels: np.ndarray, n_classes: int) -> Boxes:
    """The boxes of classes 0 .. n_classes - 1 of ``labels`` (suppressed rows left out)."""
    kept = labels >= 0
    lab = labels[kept]
    weights = data.weights_of_rows()[kept]
    lo, hi, null, sets = {}, {}, {}, {}
    for q in range(data.n_qis):
        col = data.columns[q][kept]
        if data.numeric[q]:
            lo[q], hi[q], nulls = class_bounds(col, lab, n_classes)
            null[q] = nulls > 0
        else:
            member = np.zeros((n_classes, max(data.cardinality[q], int(col.max(initial=-1)) + 1)), dtype=bool)
            member[lab, col] = True
            sets[q] = member
    rows = np.bincount(lab, weights=weights, minlength=n_classes).astype(np.int64)
    return Boxes(lo, hi, null, sets, rows)


class Matcher:
    """Counts the population rows inside a box: the population sorted once on each QI, so
    that a box reads only the tuples its range or set picks on the QI that picks fewest
    (found by binary search on each) and tests the others on those."""

    def __init__(self, data: QIData, population: Population) -> None:
        self.data = data
        self.population = population
        # per QI: the tuples' order on it (NaN last), its values in that order, and how many
        # are numbers (every one for a category)
        self.order: list[np.ndarray] = []
        self.sorted: list[np.ndarray] = []
        self.finite: list[int] = []
        for q in range(data.n_qis):
            values = population.columns[q]
            order = np.argsort(values, kind="stable")
            self.order.append(order)
            self.sorted.append(values[order])
            self.finite.append(int(np.count_nonzero(~np.isnan(values))) if data.numeric[q] else len(values))

    def _spans(self, box: Box, q: int) -> tuple[np.ndarray, np.ndarray]:
        """The (start, stop) positions, in QI q's order, of the tuples the box picks on q."""
        s, finite = self.sorted[q], self.finite[q]
        if self.data.numeric[q]:
            starts: list[int] = []
            stops: list[int] = []
            if np.isfinite(box.lo[q]):
                starts.append(int(np.searchsorted(s[:finite], box.lo[q], side="left")))
                stops.append(int(np.searchsorted(s[:finite], box.hi[q], side="right")))
            if box.null[q]:
                starts.append(finite)
                stops.append(len(s))
            return np.asarray(starts, dtype=np.int64), np.asarray(stops, dtype=np.int64)
        # in the values' own type: searchsorted would otherwise convert the whole array
        codes = np.flatnonzero(box.sets[q]).astype(s.dtype)
        return np.searchsorted(s, codes, side="left"), np.searchsorted(s, codes, side="right")

    def _candidates(self, box: Box) -> tuple[int, np.ndarray]:
        """The QI that picks fewest tuples, and those tuples."""
        spans = [self._spans(box, q) for q in range(self.data.n_qis)]
        key = int(np.argmin([int((stops - starts).sum()) for starts, stops in spans]))
        starts, stops = spans[key]
        order = self.order[key]
        parts = [order[a:z] for a, z in zip(starts, stops, strict=True) if z > a]
        return key, np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def matches(self, box: Box) -> int:
        """The population rows inside ``box``."""
        key, idx = self._candidates(box)
        for q in range(self.data.n_qis):
            if q == key or not len(idx):
                continue
            v = self.population.columns[q][idx]
            if self.data.numeric[q]:
                nan = np.isnan(v)
                inside = np.where(nan, box.null[q], (v >= box.lo[q]) & (v <= box.hi[q]))
            else:
                member = box.sets[q]
                inside = (v >= 0) & (v < len(member))
                inside[inside] = member[v[inside]]
            idx = idx[inside]
        return int(self.population.rows[idx].sum())

    def all_matches(self, b: Boxes) -> np.ndarray:
        return np.array([self.matches(b.box(c)) for c in range(b.n_classes)], dtype=np.int64)

    def whole(self) -> int:
        """The population rows inside the whole input's box (what one class would match)."""
        labels = np.zeros(self.data.n_rows, dtype=np.int64)
        return self.matches(boxes(self.data, labels, 1).box(0))


def failing(rows: np.ndarray, matched: np.ndarray, k_map: int | None, delta_max: float | None) -> np.ndarray:
    """Which classes break k-map (fewer matches than ``k_map``) or delta-max (rows above
    ``delta_max`` times their matches, a little more strictly than SQL checks it)."""
    bad = np.zeros(len(rows), dtype=bool)
    if k_map is not None:
        bad |= matched < k_map
    if delta_max is not None:
        bad |= rows > delta_max * matched * (1.0 - MARGIN)
    return bad


#: the classes whose merged generalization's NCP is computed in full per merge: the nearest
#: on the numeric QIs (their ranges widened), where there are more
NEAREST = 256


def _cost(data: QIData, b: Boxes, c: int, alive: np.ndarray) -> np.ndarray:
    """Per class, the NCP (times rows) that merging class c into it adds; inf for c itself,
    for classes merged away, and, with more than :data:`NEAREST` classes alive and a numeric
    QI, for all but the :data:`NEAREST` whose ranges widen least (the categorical sets'
    unions, the costly part, are counted on those alone)."""
    numerics = [q for q in range(data.n_qis) if data.numeric[q]]
    live = np.flatnonzero(alive)
    live = live[live != c]
    if numerics and len(live) > NEAREST:
        widened = np.zeros(len(live))
        for q in numerics:
            span = data.span(q) or 1.0
            lo, hi = b.lo[q][live], b.hi[q][live]
            width = np.maximum(hi, b.hi[q][c]) - np.minimum(lo, b.lo[q][c])
            had = np.where(np.isfinite(hi - lo), hi - lo, 0.0)
            widened += data.weights[q] * np.where(np.isfinite(width), width - had, 1.0) / span
        live = live[np.argpartition(widened, NEAREST)[:NEAREST]]
    rows = b.rows[live]
    size = rows + b.rows[c]
    before = np.zeros(len(live))
    after = np.zeros(len(live))
    own = 0.0
    for q in range(data.n_qis):
        w = data.weights[q]
        if data.numeric[q]:
            zero = np.zeros(len(live))
            null = b.null[q][live].astype(np.float64)
            before += w * numeric_ncp(b.lo[q][live], b.hi[q][live], null, zero, data.span(q)) * rows
            lo, hi = np.minimum(b.lo[q][live], b.lo[q][c]), np.maximum(b.hi[q][live], b.hi[q][c])
            after += w * numeric_ncp(lo, hi, null + b.null[q][c], zero, data.span(q)) * size
            one = np.array([b.null[q][c]], dtype=np.float64)
            own += w * float(numeric_ncp(b.lo[q][c : c + 1], b.hi[q][c : c + 1], one, one, data.span(q))[0])
        else:
            card = max(data.cardinality[q], 1)
            sets = b.sets[q][live]
            before += w * categorical_ncp(sets.sum(axis=1), card) * rows
            after += w * categorical_ncp((sets | b.sets[q][c]).sum(axis=1), card) * size
            own += w * float(categorical_ncp(np.array([b.sets[q][c].sum()]), card)[0])
    added = np.full(b.n_classes, np.inf)
    added[live] = after - before - own * b.rows[c]
    return added


def _merge(b: Boxes, into: int, c: int) -> None:
    for q in b.lo:
        b.lo[q][into] = min(b.lo[q][into], b.lo[q][c])
        b.hi[q][into] = max(b.hi[q][into], b.hi[q][c])
        b.null[q][into] |= b.null[q][c]
    for q in b.sets:
        b.sets[q][into] |= b.sets[q][c]
    b.rows[into] += b.rows[c]


@dataclass(frozen=True)
class Enforced:
    """The labels after the merges, how many classes were merged away, each remaining
    class's population matches (by its new label), the rows suppressed for delta-min, and
    the rows of the classes still below it, which the budget could not take."""

    labels: np.ndarray
    merged: int
    matched: np.ndarray
    suppressed: np.ndarray
    below: int = 0


def enforce(
    data: QIData,
    labels: np.ndarray,
    population: Population,
    k_map: int | None,
    delta_max: float | None,
    keeps: Callable[[np.ndarray], bool] | None = None,
    delta_min: float | None = None,
    budget: int = 0,
) -> Enforced:
    """Merge the classes of ``labels`` that break k-map or delta-max until none does (see the
    module docstring). Each merge takes, among the :data:`PARTNERS` partners that add the
    least NCP, the nearest whose merged class keeps the sensitive criteria (``keeps(rows)``,
    None: no criterion) and ``delta_min``; where none does, the nearest, which verification
    then judges. A class left below ``delta_min`` is suppressed, the lowest delta first,
    while its rows fit ``budget`` (the rows the run may still suppress). Class ids are
    renumbered 0 .. m - 1 in the order of their first row; suppressed rows stay suppressed."""
    kept = labels >= 0
    ids, compact = np.unique(labels[kept], return_inverse=True)
    lab = np.full(len(labels), SUPPRESSED, dtype=np.int64)
    lab[kept] = compact
    n_classes = len(ids)
    matcher = Matcher(data, population)
    b = boxes(data, lab, n_classes)
    matched = matcher.all_matches(b)
    alive = np.ones(n_classes, dtype=bool)
    # each class's current class: merged classes point at the one they joined
    parent = np.arange(n_classes)
    bad = failing(b.rows, matched, k_map, delta_max)
    merged = 0
    while bad.any() and alive.sum() > 1:
        # the worst first: the class matching fewest
        c = int(np.flatnonzero(bad)[np.argmin(matched[bad])])
        cost = _cost(data, b, c, alive)
        partners = np.argsort(cost, kind="stable")[: min(PARTNERS, int(alive.sum()) - 1)]
        into = int(partners[0])
        # the merged class's matches, where a partner's were counted
        counted: dict[int, int] = {}
        for d in (int(p) for p in partners):
            if keeps is not None:
                members = np.flatnonzero(np.isin(parent[lab.clip(0)], (c, d)) & (lab >= 0))
                if not keeps(members):
                    continue
            if delta_min is not None:
                counted[d] = matcher.matches(b.merged(c, d))
                if b.rows[c] + b.rows[d] < delta_min * counted[d]:
                    continue
            into = d
            break
        _merge(b, into, c)
        alive[c] = False
        parent[parent == c] = into
        bad[c] = False
        matched[into] = counted[into] if into in counted else matcher.matches(b.box(into))
        bad[into] = failing(b.rows[into : into + 1], matched[into : into + 1], k_map, delta_max)[0]
        merged += 1
    dropped = np.zeros(n_classes, dtype=bool)
    below = 0
    if delta_min is not None:
        low = alive & (b.rows < delta_min * matched * (1.0 + MARGIN))
        for c in np.flatnonzero(low)[np.argsort((b.rows / np.maximum(matched, 1))[low], kind="stable")]:
            if b.rows[c] > budget:
                below += int(b.rows[c])
                continue
            budget -= int(b.rows[c])
            dropped[c] = True
    final = np.where(lab >= 0, parent[lab.clip(0)], SUPPRESSED)
    suppressed = (final >= 0) & dropped[final.clip(0)]
    final[suppressed] = SUPPRESSED
    # renumber the surviving classes densely, in the order of their first row
    live = final[final >= 0]
    _, first = np.unique(live, return_index=True)
    order = np.unique(live)[np.argsort(first)]
    new_id = np.full(n_classes, -1, dtype=np.int64)
    new_id[order] = np.arange(len(order))
    out = np.where(final >= 0, new_id[final.clip(0)], SUPPRESSED)
    return Enforced(out, merged, matched[order], suppressed, below)
