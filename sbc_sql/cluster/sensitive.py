"""What a clustering keeps besides k: the sensitive values of every class.

The privacy models of :mod:`sbc_sql.privacy` say in SQL what a release must satisfy; an
algorithm that enforces them while it clusters needs the same conditions over arrays. Here:

* :class:`Sensitive`: every declared sensitive column of the rows as value codes (0 ..
  m - 1 in the values' order, NULL last, as ``sql/t_closeness_ordered.sql`` ranks them) with
  each value's count in the whole input (its share p, which t-closeness and beta-likeness
  compare a class with);
* :class:`Rule`: the criteria asked on top of k (the registered criteria of
  :mod:`sbc_sql.privacy.registry`, each defining its own array rule), each checked on every
  sensitive column on its own, with :meth:`Rule.ok` (one class from its value counts),
  :meth:`Rule.classes_ok` (every class of a labelling at once), :meth:`Rule.helpful` (which
  values repair a class that fails) and :meth:`Rule.forced_size` (the smallest class a value
  may sit in, under beta-likeness).

A clustering checks a little more strictly than the SQL verification (by
:data:`MARGIN`), so that a class it accepts never fails verification through rounding.
The compiled kernels take the same conditions as a program over flat arrays
(:meth:`Rule.kernel_arrays`); a test holds the three forms together.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np


class Criterion(Protocol):
    """What the clustering asks of a privacy criterion on top of k: its array rule and the
    parameters of its compiled twin. The criteria themselves are
    :mod:`sbc_sql.privacy`'s (:class:`sbc_sql.privacy.criterion.Criterion`), registered in
    :mod:`sbc_sql.privacy.registry`; this layer sees them only through this protocol."""

    #: the criterion's short name (``l``, ``t``, ``beta``, ...)
    key: ClassVar[str]
    #: the module of its compiled twin in the kernel folder
    kernel: ClassVar[str]
    #: whether it compares a class with the whole input's distribution
    reads_input: ClassVar[bool]

    @property
    def min_class_size(self) -> int: ...

    def kind(self) -> str: ...

    def class_ok(self, counts: np.ndarray, size: int, p: np.ndarray, ordered: bool) -> bool: ...

    def classes_ok(
        self, counts: np.ndarray, shares: np.ndarray, size: np.ndarray, p: np.ndarray, ordered: bool
    ) -> np.ndarray: ...

    def repair_bound(self, counts: np.ndarray, size: int, p: np.ndarray) -> int: ...

    def forced_size(self, p: np.ndarray) -> np.ndarray | None: ...

    def infeasible(self, p: np.ndarray, column: str) -> list[str]: ...

    def kernel_params(self, shares: Sequence[np.ndarray]) -> tuple[list[int], list[float]]: ...


#: how much stricter than the verification a clustering checks (shares, distances, gains)
MARGIN = 1e-9
#: entropy l-diversity: a class of exactly l equally frequent values passes (verification
#: allows 1e-12 below ln l; the two sums agree to about 1e-15)
ENTROPY_TIE = 1e-13
#: the reasons a row may be suppressed for, by code (the run reports counts per reason)
REASONS = {
    0: "none",
    1: "rare_value",  # its sensitive value forces a class far larger than the others
    2: "unplaced",  # no class keeps every criterion with it
    3: "bk_small",  # its background-knowledge cluster holds fewer than k rows
    4: "lemma2",  # its background-knowledge cluster is not beta-like as a whole
    5: "kagg_left",
    6: "kinc_left",
    7: "budget",  # the algorithm's own suppression (full-domain recoding, k only)
    8: "limits",  # no class holds it within the per-column limits (--max-width, --max-values)
    9: "delta_min",  # its class matches too many population rows for --delta-min
}
REASON_CODES = {name: code for code, name in REASONS.items()}
#: a repair bound meaning "a row of a value below its input share repairs the class" (see
#: :meth:`Rule.helpful`)
BELOW_SHARE = -1


@dataclass(frozen=True)
class Sensitive:
    """The sensitive columns of n rows: ``codes[s]`` is column s's value code per row (int32,
    0 .. m_s - 1 in value order, NULL last); ``counts[s]`` each value's count in the whole
    input (a table's rows, not only these: blocks keep the input's counts); ``ordered[s]``:
    numeric or temporal values, whose t-closeness uses the ordered ground distance."""

    names: tuple[str, ...]
    codes: tuple[np.ndarray, ...]
    counts: tuple[np.ndarray, ...]
    ordered: tuple[bool, ...]

    def __post_init__(self) -> None:
        if not len(self.names) == len(self.codes) == len(self.counts) == len(self.ordered):
            raise ValueError("Sensitive fields must have one entry per column")

    @property
    def n_columns(self) -> int:
        return len(self.names)

    @property
    def n_rows(self) -> int:
        return len(self.codes[0]) if self.codes else 0

    def shares(self, s: int) -> np.ndarray:
        """Each value's share p of column s in the input."""
        c = self.counts[s].astype(np.float64)
        total = c.sum()
        return c / total if total > 0 else c

    def take(self, rows: np.ndarray) -> Sensitive:
        """The same columns restricted to ``rows`` (the input's counts kept)."""
        return Sensitive(self.names, tuple(c[rows] for c in self.codes), self.counts, self.ordered)

    def strata(self, min_rows: int) -> np.ndarray:
        """Each row's stratum (0 ..) by its sensitive values, for blocks that hold every value
        near its share (:func:`.blocks.stratified_order`). A column's values are taken in
        their order, and a value of fewer than ``min_rows`` of these rows (the number of
        blocks: fewer cannot sit in each) shares a stratum with the values after it until
        they hold that many. Several columns: the strata of their value pairs while those
        number at most one per ``min_rows`` rows, else the first column's."""
        n = self.n_rows
        out = np.zeros(n, dtype=np.int64)
        combos = 1
        for s in range(self.n_columns):
            codes = self.codes[s].astype(np.int64, copy=False)
            counts = np.bincount(codes, minlength=len(self.counts[s]))
            value_stratum = _fill(counts, max(int(min_rows), 1))
            column = value_stratum[codes]
            width = int(value_stratum.max(initial=0)) + 1
            if s == 0:
                out, combos = column, width
            elif combos * width * max(int(min_rows), 1) <= n:
                out, combos = out * width + column, combos * width
        return np.unique(out, return_inverse=True)[1].astype(np.int64) if n else out

    def class_counts(self, s: int, labels: np.ndarray, n_classes: int) -> np.ndarray:
        """(n_classes, m_s) value counts of column s per class; rows labelled < 0 are left out."""
        m = len(self.counts[s])
        keep = labels >= 0
        flat = labels[keep].astype(np.int64) * m + self.codes[s][keep]
        return np.bincount(flat, minlength=n_classes * m).reshape(n_classes, m)


def _fill(counts: np.ndarray, min_rows: int) -> np.ndarray:
    """Each value's stratum, the values taken in order: a stratum takes values until it
    holds ``min_rows`` rows, then the next value opens another."""
    out = np.empty(len(counts), dtype=np.int64)
    current = filled = 0
    for v, c in enumerate(counts.tolist()):
        out[v] = current
        filled += c
        if filled >= min_rows:
            current, filled = current + 1, 0
    return out


def beta_cap(p: np.ndarray, beta: float, enhanced: bool) -> np.ndarray:
    """f(p): the largest share a value of input share p may take in a class. Enhanced:
    p (1 + min(beta, -ln p)); basic: p (1 + beta)."""
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(divide="ignore"):
        gain = np.minimum(beta, -np.log(np.where(p > 0, p, 1.0))) if enhanced else np.full_like(p, beta)
    return p * (1.0 + gain)


@dataclass(frozen=True)
class Rule:
    """The criteria on top of k a clustering keeps, each on every sensitive column on its
    own: instances of the registered criteria (:mod:`sbc_sql.privacy.registry`), without a
    column, in the registry's order (:meth:`sbc_sql.privacy.criteria.Criteria.rule` makes
    them). Empty: k alone."""

    criteria: tuple[Criterion, ...] = ()

    @property
    def active(self) -> bool:
        return bool(self.criteria)

    @property
    def min_size(self) -> int:
        """The fewest rows any class needs for the criteria (l values need l rows)."""
        return max((c.min_class_size for c in self.criteria), default=1)

    @property
    def reads_input(self) -> bool:
        """Whether a criterion compares a class with the whole input's distribution."""
        return any(c.reads_input for c in self.criteria)

    def asked(self) -> set[str]:
        """The criteria asked, by their short names (``l``, ``t``, ``beta``)."""
        return {c.key for c in self.criteria}

    def find(self, key: str) -> Any | None:
        """The criterion of this short name (``beta`` ...) the rule asks, None when it asks
        none."""
        return next((c for c in self.criteria if c.key == key), None)

    def describe(self) -> str:
        """The criteria in words, without their thresholds."""
        return ", ".join(c.kind() for c in self.criteria)

    # ---- one class

    def column_ok(self, counts: np.ndarray, size: int, p: np.ndarray, ordered: bool) -> bool:
        """Whether a class of ``size`` rows with value ``counts`` (of one column with input
        shares ``p``) satisfies every criterion, by :data:`MARGIN` more than verification asks."""
        if size <= 0:
            return False
        counts = np.asarray(counts, dtype=np.float64)
        return all(c.class_ok(counts, size, p, ordered) for c in self.criteria)

    def ok(self, counts: list[np.ndarray] | tuple[np.ndarray, ...], size: int, sensitive: Sensitive) -> bool:
        """Every criterion on every sensitive column, for one class (``counts[s]``: column
        s's value counts in it)."""
        return all(
            self.column_ok(counts[s], size, sensitive.shares(s), sensitive.ordered[s])
            for s in range(sensitive.n_columns)
        )

    # ---- every class of a labelling

    def classes_ok(self, labels: np.ndarray, sensitive: Sensitive) -> np.ndarray:
        """One flag per class id 0 .. max(labels): whether it satisfies every criterion
        (an empty class id does not)."""
        n_classes = int(labels.max()) + 1 if len(labels) and labels.max() >= 0 else 0
        keep = labels >= 0
        size = np.bincount(labels[keep], minlength=n_classes)
        counts = [sensitive.class_counts(s, labels, n_classes) for s in range(sensitive.n_columns)]
        return self.counts_ok(counts, size, sensitive)

    def counts_ok(
        self, counts: list[np.ndarray] | tuple[np.ndarray, ...], size: np.ndarray, sensitive: Sensitive
    ) -> np.ndarray:
        """:meth:`ok` of many classes at once, from their value counts (``counts[s]``: a
        (classes, m_s) array of column s) and sizes: one flag per class (size 0 fails). A
        clustering weighs candidate classes that are no labelling (every cut of a partition)."""
        size = np.asarray(size, dtype=np.float64)
        good = size > 0
        safe = np.where(good, size, 1.0)
        for s in range(sensitive.n_columns):
            cnt = np.asarray(counts[s], dtype=np.float64)
            p = sensitive.shares(s)
            q = cnt / safe[:, None]
            for c in self.criteria:
                good &= c.classes_ok(cnt, q, safe, p, sensitive.ordered[s])
        return good

    # ---- repairing a class

    def helpful(self, counts: np.ndarray, size: int, p: np.ndarray, ordered: bool) -> np.ndarray:
        """For one column of a class that fails, the values whose rows repair it: those the
        first criterion with a say bounds (:meth:`~sbc_sql.privacy.criterion.Criterion.repair_bound`:
        for distinct l-diversity the values it lacks), otherwise the values below their input
        share (a row of one of them lowers the share of the value most over-represented,
        brings the distribution closer to the input's, and raises its entropy toward the
        input's). All False when the column already passes."""
        if self.column_ok(counts, size, p, ordered):
            return np.zeros(len(p), dtype=bool)
        counts = np.asarray(counts, dtype=np.float64)
        bounds = (c.repair_bound(counts, size, p) for c in self.criteria)
        bound = next((b for b in bounds if b != BELOW_SHARE), BELOW_SHARE)
        if bound != BELOW_SHARE:
            bounded: np.ndarray = counts < bound
            return bounded
        below: np.ndarray = counts < p * max(size, 1)
        return below

    def forced_size(self, p: np.ndarray) -> np.ndarray:
        """Per value of input share p, the smallest class that may hold one row of it (under
        beta-likeness ceil(1 / f(p))); 1 when no criterion forces a size."""
        p = np.asarray(p, dtype=np.float64)
        forced = [f for c in self.criteria if (f := c.forced_size(p)) is not None]
        if not forced:
            return np.ones(len(p), dtype=np.int64)
        out: np.ndarray = functools.reduce(np.maximum, forced)
        return out

    def check_feasible(self, sensitive: Sensitive) -> list[str]:
        """What no clustering can achieve on this input (the whole input as one class fails),
        e.g. entropy l-diversity above the input's own entropy. Empty: feasible."""
        return [
            problem
            for c in self.criteria
            for s in range(sensitive.n_columns)
            for problem in c.infeasible(sensitive.shares(s), sensitive.names[s])
        ]

    # ---- the compiled kernels' form

    def kernel_arrays(self, sensitive: Sensitive) -> dict[str, np.ndarray]:
        """The criteria as flat arrays for the compiled kernels: ``scode`` (S, n) int32 codes
        offset into one value axis of M = sum m_s values (column s's values at
        ``soff[s]`` .. ``soff[s + 1]``), ``sp`` (M) input shares, ``sord`` (S) ordered flags,
        and the criteria's program ``crit_i`` / ``crit_f`` (see
        :mod:`sbc_sql.cluster.sbca_plus.kernels.criteria`, :meth:`program`)."""
        sizes = [len(c) for c in sensitive.counts]
        soff = np.zeros(len(sizes) + 1, dtype=np.int64)
        soff[1:] = np.cumsum(sizes)
        n = sensitive.n_rows
        scode = np.empty((sensitive.n_columns, n), dtype=np.int32)
        sp = np.empty(int(soff[-1]), dtype=np.float64)
        shares = [sensitive.shares(s) for s in range(sensitive.n_columns)]
        for s in range(sensitive.n_columns):
            scode[s] = sensitive.codes[s] + soff[s]
            sp[soff[s] : soff[s + 1]] = shares[s]
        crit_i, crit_f = self.program(shares)
        return {
            "scode": scode,
            "soff": soff,
            "sp": sp,
            "sord": np.array(sensitive.ordered, dtype=np.bool_),
            "crit_i": crit_i,
            "crit_f": crit_f,
        }

    def program(self, shares: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """The kernels' program of the criteria (``crit_i``, ``crit_f``) over sensitive
        columns of input ``shares``, one after the other on one value axis."""
        from .sbca_plus.kernels import criterion_codes

        codes = criterion_codes()
        header = [len(self.criteria)]
        ints: list[int] = []
        floats: list[float] = []
        for c in self.criteria:
            c_ints, c_floats = c.kernel_params(shares)
            header += [codes[c.kernel], 1 + 3 * len(self.criteria) + len(ints), len(floats)]
            ints += c_ints
            floats += c_floats
        return np.array(header + ints, dtype=np.int64), np.array(floats, dtype=np.float64)


def emd(q: np.ndarray, p: np.ndarray, ordered: bool) -> float:
    """Earth Mover's Distance between a class's value shares q and the input's p: equal
    ground distance (0.5 sum |q - p|) or, for ordered values, sum_i |sum_{j <= i} (q_j - p_j)|
    / (m - 1) (0 for one value), as ``sql/t_closeness*.sql`` define it."""
    return float(emd_rows(np.asarray(q, dtype=np.float64)[None, :], p, ordered)[0])


def emd_rows(q: np.ndarray, p: np.ndarray, ordered: bool) -> np.ndarray:
    """:func:`emd` of every row of q."""
    r = q - p[None, :]
    if not ordered:
        out: np.ndarray = 0.5 * np.abs(r).sum(axis=1)
        return out
    m = q.shape[1]
    if m <= 1:
        return np.zeros(q.shape[0])
    ordered_out: np.ndarray = np.abs(np.cumsum(r, axis=1)).sum(axis=1) / (m - 1)
    return ordered_out


def rare_values(
    rule: Rule, sensitive: Sensitive, k: int, budget_rows: int
) -> tuple[np.ndarray, list[tuple[str, int, int]]]:
    """The rows to suppress before clustering because their sensitive value forces a class
    far larger than the rest (under a criterion that forces class sizes: beta-likeness):
    values whose forced size exceeds max(2 k, 32) rows, largest first, while their rows fit
    in ``budget_rows``. Placing such a row costs a class of hundreds of rows its ranges;
    suppressing it costs the row alone.
    Returns a mask over the rows and, per value suppressed, (column, value code, forced size)."""
    mask = np.zeros(sensitive.n_rows, dtype=bool)
    chosen: list[tuple[str, int, int]] = []
    limit = max(2 * k, 32)
    candidates: list[tuple[float, int, int]] = []
    for s in range(sensitive.n_columns):
        forced = rule.forced_size(sensitive.shares(s))
        candidates.extend((float(forced[v]), s, int(v)) for v in np.nonzero(forced > limit)[0])
    used = 0
    for forced_v, s, v in sorted(candidates, reverse=True):
        rows = sensitive.codes[s] == v
        extra = int((rows & ~mask).sum())
        if used + extra > budget_rows:
            continue
        mask |= rows
        used += extra
        chosen.append((sensitive.names[s], v, int(forced_v)))
    return mask, chosen
