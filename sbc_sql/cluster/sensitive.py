"""What a clustering keeps besides k: the sensitive values of every class.

The privacy models of :mod:`sbc_sql.privacy` say in SQL what a release must satisfy; an
algorithm that enforces them while it clusters needs the same conditions over arrays. Here:

* :class:`Sensitive`: every declared sensitive column of the rows as value codes (0 ..
  m - 1 in the values' order, NULL last, as ``sql/t_closeness_ordered.sql`` ranks them) with
  each value's count in the whole input (its share p, which t-closeness and beta-likeness
  compare a class with);
* :class:`Rule`: the criteria asked on top of k (l-diversity distinct or entropy,
  t-closeness, beta-likeness enhanced or basic), each checked on every sensitive column on
  its own, with :meth:`Rule.ok` (one class from its value counts), :meth:`Rule.classes_ok`
  (every class of a labelling at once), :meth:`Rule.helpful` (which values repair a class
  that fails) and :meth:`Rule.forced_size` (the smallest class a value may sit in under
  beta-likeness).

A clustering checks a little more strictly than the SQL verification (by
:data:`MARGIN`), so that a class it accepts never fails verification through rounding.
The compiled kernels take the same conditions as flat arrays (:meth:`Rule.kernel_arrays`);
a test compares the two.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

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
}
REASON_CODES = {name: code for code, name in REASONS.items()}


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

    def class_counts(self, s: int, labels: np.ndarray, n_classes: int) -> np.ndarray:
        """(n_classes, m_s) value counts of column s per class; rows labelled < 0 are left out."""
        m = len(self.counts[s])
        keep = labels >= 0
        flat = labels[keep].astype(np.int64) * m + self.codes[s][keep]
        return np.bincount(flat, minlength=n_classes * m).reshape(n_classes, m)


def beta_cap(p: np.ndarray, beta: float, enhanced: bool) -> np.ndarray:
    """f(p): the largest share a value of input share p may take in a class. Enhanced:
    p (1 + min(beta, -ln p)); basic: p (1 + beta)."""
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(divide="ignore"):
        gain = np.minimum(beta, -np.log(np.where(p > 0, p, 1.0))) if enhanced else np.full_like(p, beta)
    return p * (1.0 + gain)


@dataclass(frozen=True)
class Rule:
    """The criteria on top of k: ``l`` (0: none) distinct or, with ``entropy``, entropy
    l-diversity; ``t`` t-closeness; ``beta`` beta-likeness, ``enhanced`` or basic. None:
    not asked."""

    l: int = 0  # noqa: E741 - the criterion's own name
    entropy: bool = False
    t: float | None = None
    beta: float | None = None
    enhanced: bool = True

    @property
    def active(self) -> bool:
        return self.l > 0 or self.t is not None or self.beta is not None

    @property
    def min_size(self) -> int:
        """The fewest rows any class needs for l-diversity (l values need l rows)."""
        return max(self.l, 1)

    # ---- one class

    def column_ok(self, counts: np.ndarray, size: int, p: np.ndarray, ordered: bool) -> bool:
        """Whether a class of ``size`` rows with value ``counts`` (of one column with input
        shares ``p``) satisfies every criterion, by :data:`MARGIN` more than verification asks."""
        if size <= 0:
            return False
        counts = np.asarray(counts, dtype=np.float64)
        if self.l:
            present = counts > 0
            if self.entropy:
                q = counts[present] / size
                if -(q * np.log(q)).sum() < math.log(self.l) - ENTROPY_TIE:
                    return False
            elif int(present.sum()) < self.l:
                return False
        if self.t is not None and emd(counts / size, p, ordered) > self.t - MARGIN:
            return False
        if self.beta is not None:
            # the margin on the cap first, as kernel_arrays gives it: the kernels' arithmetic
            cap = beta_cap(p, self.beta, self.enhanced) * (1.0 - MARGIN)
            # only values above their input share are bounded (cap >= p always)
            if np.any((counts > p * size) & (counts > cap * size)):
                return False
        return True

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
            if self.l:
                if self.entropy:
                    with np.errstate(divide="ignore", invalid="ignore"):
                        h = -np.where(q > 0, q * np.log(np.where(q > 0, q, 1.0)), 0.0).sum(axis=1)
                    good &= h >= math.log(self.l) - ENTROPY_TIE
                else:
                    good &= (cnt > 0).sum(axis=1) >= self.l
            if self.t is not None:
                good &= emd_rows(q, p, sensitive.ordered[s]) <= self.t - MARGIN
            if self.beta is not None:
                cap = beta_cap(p, self.beta, self.enhanced) * (1.0 - MARGIN)
                size_col = safe[:, None]
                over = (cnt > p[None, :] * size_col) & (cnt > cap[None, :] * size_col)
                good &= ~np.any(over, axis=1)
        return good

    # ---- repairing a class

    def helpful(self, counts: np.ndarray, size: int, p: np.ndarray, ordered: bool) -> np.ndarray:
        """For one column of a class that fails, the values whose rows repair it: for distinct
        l-diversity the values it lacks; otherwise the values below their input share (a row
        of one of them lowers the share of the value most over-represented, brings the
        distribution closer to the input's, and raises its entropy toward the input's).
        All False when the column already passes."""
        if self.column_ok(counts, size, p, ordered):
            return np.zeros(len(p), dtype=bool)
        counts = np.asarray(counts, dtype=np.float64)
        if self.l and not self.entropy and int((counts > 0).sum()) < self.l:
            lacking: np.ndarray = counts == 0
            return lacking
        below: np.ndarray = counts < p * max(size, 1)
        return below

    def forced_size(self, p: np.ndarray) -> np.ndarray:
        """Per value of input share p, the smallest class that may hold one row of it under
        beta-likeness, ceil(1 / f(p)) (1 without beta-likeness)."""
        p = np.asarray(p, dtype=np.float64)
        if self.beta is None:
            return np.ones(len(p), dtype=np.int64)
        cap = beta_cap(p, self.beta, self.enhanced) * (1.0 - MARGIN)
        with np.errstate(divide="ignore"):
            return np.where(cap > 0, np.ceil(1.0 / np.where(cap > 0, cap, 1.0) - 1e-12), np.inf).astype(
                np.float64
            )

    def check_feasible(self, sensitive: Sensitive) -> list[str]:
        """What no clustering can achieve on this input (the whole input as one class fails):
        entropy l-diversity above the input's own entropy. Empty: feasible."""
        problems = []
        if self.l and self.entropy:
            for s in range(sensitive.n_columns):
                p = sensitive.shares(s)
                p = p[p > 0]
                h = float(-(p * np.log(p)).sum())
                if h < math.log(self.l) - ENTROPY_TIE:
                    problems.append(
                        f"entropy l-diversity l={self.l} is above what the whole of '{sensitive.names[s]}' "
                        f"reaches (entropy l {math.exp(h):.2f}); give --l-diversity "
                        f"{max(int(math.exp(h)), 1)} or less"
                    )
        return problems

    # ---- the compiled kernels' form

    def kernel_arrays(self, sensitive: Sensitive) -> dict[str, np.ndarray]:
        """The criteria as flat arrays for the compiled kernels: ``scode`` (S, n) int32 codes
        offset into one value axis of M = sum m_s values (column s's values at
        ``soff[s]`` .. ``soff[s + 1]``), ``sp`` (M) input shares, ``scap`` (M) beta caps
        (f(p), with the margin; inf without beta: a class breaks beta-likeness when a value's
        count exceeds both p and its cap times the class size), ``sord`` (S) ordered flags,
        ``crit_i``
        [l, entropy, t asked, beta asked], ``crit_f`` [t, beta]."""
        sizes = [len(c) for c in sensitive.counts]
        soff = np.zeros(len(sizes) + 1, dtype=np.int64)
        soff[1:] = np.cumsum(sizes)
        n = sensitive.n_rows
        scode = np.empty((sensitive.n_columns, n), dtype=np.int32)
        sp = np.empty(int(soff[-1]), dtype=np.float64)
        scap = np.full(int(soff[-1]), np.inf, dtype=np.float64)
        for s in range(sensitive.n_columns):
            scode[s] = sensitive.codes[s] + soff[s]
            p = sensitive.shares(s)
            sp[soff[s] : soff[s + 1]] = p
            if self.beta is not None:
                scap[soff[s] : soff[s + 1]] = beta_cap(p, self.beta, self.enhanced) * (1.0 - MARGIN)
        return {
            "scode": scode,
            "soff": soff,
            "sp": sp,
            "scap": scap,
            "sord": np.array(sensitive.ordered, dtype=np.bool_),
            "crit_i": np.array(
                [self.l, int(self.entropy), int(self.t is not None), int(self.beta is not None)],
                dtype=np.int64,
            ),
            "crit_f": np.array(
                [self.t if self.t is not None else 0.0, self.beta if self.beta is not None else 0.0],
                dtype=np.float64,
            ),
        }


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
    far larger than the rest (beta-likeness only): values whose forced size exceeds
    max(2 k, 32) rows, largest first, while their rows fit in ``budget_rows``. Placing such
    a row costs a class of hundreds of rows its ranges; suppressing it costs the row alone.
    Returns a mask over the rows and, per value suppressed, (column, value code, forced size)."""
    mask = np.zeros(sensitive.n_rows, dtype=bool)
    chosen: list[tuple[str, int, int]] = []
    if rule.beta is None:
        return mask, chosen
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
