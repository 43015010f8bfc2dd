"""Greedy k-member clustering (Byun, Kamra, Bertino and Li, DASFAA 2007): a baseline.

The algorithm, as in the paper's Figure "greedy k-member clustering":

1. r = the first row of ``data.sort_order()`` (the paper picks it at random; a fixed row keeps
   the output reproducible).
2. While at least k rows remain: the next cluster's seed is the remaining row farthest from r;
   the cluster grows, one row at a time, by the remaining row whose joining raises the
   cluster's information loss least, until it holds k rows; r becomes the last row added.
3. Each of the fewer than k rows left joins the cluster whose information loss grows least
   (the same rule as SBCA's ``nearest`` leftover mode).

With privacy criteria on the sensitive columns (a :class:`~..sensitive.Rule`), a cluster of
k rows that does not keep the rule goes on growing, each time by the row of least cost among
those whose sensitive value repairs it (:meth:`~..sensitive.Rule.helpful`; a row that
repairs more of the failing columns first), until it keeps the rule; a cluster that no
remaining row can repair is given up, its rows joining the leftovers. Each leftover then
joins the cluster of least cost increase that keeps the rule with it, and a row that no
cluster can take is suppressed (:func:`..rescue.rescue`, as block mode places rows across
blocks).

With a target label (``QIData.target``, ``--target``) and a weight W, this is class-aware
k-member clustering (DPPSCT): a row outside the cluster's majority label costs W x the sum
of the QI weights more, as in SBCA (see ``ClusterOptions.target_weight``), so a cluster
grows preferring rows of its majority label. The criteria are kept without it (k-member
refuses both at once); leftovers join clusters by information loss alone.

Distance (hierarchy-free version of the paper's): numeric |x - y| / span, NULL against a
number 1 and NULL against NULL 0 (as SBC's numeric distance); categorical 0 when equal, 1
otherwise; weighted sum over QIs. Information loss: IL(c) = |c| * sum over QIs of weight *
NCP(c), with NCP exactly as :mod:`..ncp` scores a release, instead of the paper's taxonomy
heights, so that the algorithm minimizes the figure it is compared on. Ties always go to the
row that comes first in ``data.sort_order()``.

The work is quadratic (every added row scans every remaining row), so the loop runs in a
numba kernel, with the NCP costs every compiled algorithm shares
(:mod:`..sbca_plus.kernels.costs`); :func:`greedy_numpy` is the same loop in vectorized
numpy, the readable reference: both compute every score with the same floating-point
operations in the same order, so they return the same labels.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numba
import numpy as np

from ...errors import InputError
from ..leftover import place_leftovers
from ..model import SUPPRESSED, QIData
from ..ncp import categorical_ncp
from ..rescue import rescue
from ..runs import ClusterOptions, ClusterRun, Progress
from ..sbca_plus import kernels as _kernels
from ..sbca_plus.kernels import criteria as _criteria
from ..sbca_plus.kernels.costs import cat_ncp as _cat_ncp
from ..sensitive import Rule

# numba keys this module's cached kernels on this file alone; they compile in the kernel
# folder's criteria and costs, so an edit there drops them too
_kernels.drop_stale_cache(
    Path(__file__).resolve().parent / "__pycache__", "kmember.*.nb[ic]", "kmember-kernels.sha256"
)

ENGINES = ("auto", "numba", "numpy")


def kmember(
    data: QIData, k: int, engine: str = "auto", rule: Rule | None = None, target_weight: float = 0.0
) -> np.ndarray:
    """Class id per row (0..C-1 in the order clusters were formed); -1 only when n < k.

    ``engine``: "numba" or "auto" (the jitted kernel), "numpy" (the vectorized reference,
    the same labels). With an active ``rule`` (compiled kernel only) every class also keeps
    it on ``data.sensitive``, and a row no class can take with the rule is suppressed (-1).
    ``target_weight`` with ``data.target``: class-aware k-member (see the module docstring).
    """
    if k < 1:
        raise ValueError(f"k={k} must be at least 1")
    if engine not in ENGINES:
        raise ValueError(f"engine={engine!r} must be one of {ENGINES}")
    n = data.n_rows
    labels = np.full(n, SUPPRESSED, dtype=np.int64)
    if n == 0 or n < k:
        return labels
    order = data.sort_order()
    arrays = kernel_arrays(data, order)
    aware = data.target is not None and target_weight > 0
    if aware and rule is not None and rule.active:
        raise InputError(
            "--algorithm kmember keeps --target or the privacy criteria, not both; "
            "use the default algorithm (sbca), which keeps both"
        )
    if rule is not None and rule.active:
        if engine == "numpy":
            raise ValueError("k-member keeps criteria in its compiled kernel only (engine 'numba')")
        if data.sensitive is None:
            raise ValueError("criteria on sensitive values need QIData.sensitive")
        crit = rule.kernel_arrays(data.sensitive)
        scode = np.ascontiguousarray(crit["scode"][:, order])
        criteria = (crit[key] for key in ("soff", "sp", "sord", "crit_i", "crit_f"))
        sorted_labels = _greedy_rule_numba(*arrays, k, scode, *criteria)
        labels[order] = sorted_labels
        rescue(data, labels, rule)
        return labels
    greedy = greedy_numpy if engine == "numpy" else _greedy_numba
    if aware:
        assert data.target is not None
        tgt = np.ascontiguousarray(data.target[order], dtype=np.int64)
        tw = float(target_weight) * float(sum(data.weights))
    else:
        tgt, tw = np.zeros(0, dtype=np.int64), 0.0
    sorted_labels = greedy(*arrays, k, tgt, tw)
    labels[order] = sorted_labels
    n_clusters = int(sorted_labels.max()) + 1
    place_leftovers(data, labels, order[sorted_labels < 0], "nearest", n_clusters - 1)
    return labels


def kernel_arrays(
    data: QIData, order: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """QIs in sort order as column blocks: scaled numerics, category codes, weights, cards.

    QIs with weight 0 (and categoricals of one category) cannot change a distance or a cost
    and are left out. Columns stay separate rows of a 2-D block: one sweep per QI, over
    consecutive memory, is what the kernel's loops vectorize.
    """
    n = len(order)
    num = [q for q in range(data.n_qis) if data.numeric[q] and data.weights[q] != 0]
    cat = [
        q
        for q in range(data.n_qis)
        if not data.numeric[q] and data.weights[q] != 0 and data.cardinality[q] > 1
    ]
    xn = np.empty((len(num), n), dtype=np.float64)
    for i, q in enumerate(num):
        xn[i] = data.scaled(q)[order]
    xc = np.empty((len(cat), n), dtype=np.int64)
    for i, q in enumerate(cat):
        xc[i] = data.columns[q][order]
    wn = np.array([data.weights[q] for q in num], dtype=np.float64)
    wc = np.array([data.weights[q] for q in cat], dtype=np.float64)
    card = np.array(
        [max(int(data.cardinality[q]), int(xc[i].max()) + 1) for i, q in enumerate(cat)], dtype=np.int64
    )
    return xn, xc, wn, wc, card


# ---------------------------------------------------------------------------------------
# numpy reference: one vectorized sweep over the remaining rows per added row


def greedy_numpy(
    xn: np.ndarray,
    xc: np.ndarray,
    wn: np.ndarray,
    wc: np.ndarray,
    card: np.ndarray,
    k: int,
    tgt: np.ndarray | None = None,
    tw: float = 0.0,
) -> np.ndarray:
    """Labels in sort order for every row placed in a full cluster, -1 for the leftovers;
    ``tgt`` (labels in sort order, empty: none) and ``tw`` the cost of a row outside the
    cluster's majority label."""
    n = xn.shape[1]
    aware = tgt is not None and len(tgt) > 0 and tw > 0
    rt = tgt if aware else None
    labels = np.full(n, SUPPRESSED, dtype=np.int64)
    rem = np.arange(n)
    rn, rc = xn, xc
    prev_n, prev_c = xn[:, 0].copy(), xc[:, 0].copy()
    cls = 0
    while len(rem) >= k:
        taken = np.zeros(len(rem), dtype=bool)
        seed = int(np.argmax(distances_numpy(rn, rc, wn, wc, prev_n, prev_c)))
        state = ClusterState(rn[:, seed], rc[:, seed], card)
        taken[seed] = True
        last = seed
        lcnt = np.zeros(int(tgt.max()) + 1 if rt is not None and tgt is not None else 1, dtype=np.int64)
        if rt is not None:
            lcnt[rt[seed]] += 1
        for size in range(1, k):
            score = state.scores(rn, rc, wn, wc)
            if rt is not None:
                score += np.where(lcnt[rt] < lcnt.max(), tw / (size + 1), 0.0)
            score[taken] = np.inf
            last = int(np.argmin(score))
            taken[last] = True
            state.add(rn[:, last], rc[:, last])
            if rt is not None:
                lcnt[rt[last]] += 1
        labels[rem[taken]] = cls
        prev_n, prev_c = rn[:, last].copy(), rc[:, last].copy()
        keep = ~taken
        rem, rn, rc = rem[keep], rn[:, keep], rc[:, keep]
        if rt is not None:
            rt = rt[keep]
        cls += 1
    return labels


def distances_numpy(
    rn: np.ndarray, rc: np.ndarray, wn: np.ndarray, wc: np.ndarray, pn: np.ndarray, pc: np.ndarray
) -> np.ndarray:
    """Distance from row (pn, pc) to every remaining row (same operations as the kernel)."""
    dist = np.zeros(rn.shape[1])
    for i in range(len(wn)):
        x = rn[i]
        if np.isnan(pn[i]):
            d = np.where(np.isnan(x), 0.0, 1.0)
        else:
            d = np.where(np.isnan(x), 1.0, np.abs(x - pn[i]))
        dist += wn[i] * d
    for i in range(len(wc)):
        dist += wc[i] * (rc[i] != pc[i])
    return dist


class ClusterState:
    """What a cluster's NCP depends on: numeric bounds and NULLs, categorical presence."""

    def __init__(self, seed_n: np.ndarray, seed_c: np.ndarray, card: np.ndarray) -> None:
        self.cmin = np.full(len(seed_n), np.inf)
        self.cmax = np.full(len(seed_n), -np.inf)
        self.has_null = np.zeros(len(seed_n), dtype=bool)
        self.present = [np.zeros(int(c), dtype=bool) for c in card]
        self.distinct = np.zeros(len(card), dtype=np.int64)
        self.card = card
        self.add(seed_n, seed_c)

    def add(self, xn: np.ndarray, xc: np.ndarray) -> None:
        null = np.isnan(xn)
        self.has_null |= null
        self.cmin = np.where(null, self.cmin, np.minimum(self.cmin, xn))
        self.cmax = np.where(null, self.cmax, np.maximum(self.cmax, xn))
        for i, v in enumerate(xc):
            if not self.present[i][v]:
                self.present[i][v] = True
                self.distinct[i] += 1

    def scores(self, rn: np.ndarray, rc: np.ndarray, wn: np.ndarray, wc: np.ndarray) -> np.ndarray:
        """IL(c + x) / (|c| + 1) minus a constant, for every remaining row x."""
        score = np.zeros(rn.shape[1])
        for i in range(len(wn)):
            x = rn[i]
            has_num = np.isfinite(self.cmin[i])
            if self.has_null[i] and has_num:
                t = np.ones(len(x))
            elif has_num:
                t = np.where(np.isnan(x), 1.0, np.maximum(self.cmax[i], x) - np.minimum(self.cmin[i], x))
            else:
                t = np.where(np.isnan(x), 0.0, 1.0)
            score += wn[i] * t
        for i in range(len(wc)):
            absent = wc[i] * (
                categorical_ncp(self.distinct[i] + 1, self.card[i])
                - categorical_ncp(self.distinct[i], self.card[i])
            )
            score += np.where(self.present[i], 0.0, absent)[rc[i]]
        return score


# ---------------------------------------------------------------------------------------
# numba kernel: the same algorithm and the same arithmetic, compiled


def _scores_python(
    buf, m, rn, rc, wn, wc, card, cmin, cmax, has_null, present, distinct, absent
):  # pragma: no cover
    """``buf[j]``: how much the cluster (ranges cmin/cmax, NULL flags, values present)
    grows when remaining row j joins it, less a constant: the score both kernels grow by."""
    dn = rn.shape[0]
    dc = rc.shape[0]
    for i in range(dc):
        absent[i] = wc[i] * (_cat_ncp(distinct[i] + 1, card[i]) - _cat_ncp(distinct[i], card[i]))
    for j in range(m):
        buf[j] = 0.0
    for i in range(dn):
        w = wn[i]
        has_num = np.isfinite(cmin[i])
        lo = cmin[i]
        hi = cmax[i]
        for j in range(m):
            x = rn[i, j]
            if has_null[i] and has_num:
                t = 1.0
            elif has_num:
                t = 1.0 if np.isnan(x) else max(hi, x) - min(lo, x)
            else:
                t = 0.0 if np.isnan(x) else 1.0
            buf[j] += w * t
    for i in range(dc):
        a = absent[i]
        for j in range(m):
            buf[j] += 0.0 if present[i, rc[i, j]] else a


_scores = numba.njit(cache=True, inline="always")(_scores_python)


def _greedy_python(xn, xc, wn, wc, card, k, tgt, tw):  # pragma: no cover - compiled by numba
    """Body of the numba kernel (see :func:`greedy_numpy` for the algorithm)."""
    dn, n = xn.shape
    aware = tgt.shape[0] > 0 and tw > 0
    n_lab = 1
    for j in range(tgt.shape[0]):
        n_lab = max(n_lab, tgt[j] + 1)
    lcnt = np.zeros(n_lab, np.int64)
    lmax = 0
    dc = xc.shape[0]
    labels = np.full(n, -1, np.int64)
    rem = np.arange(n)
    m = n
    rn = xn.copy()
    rc = xc.copy()
    buf = np.empty(n)
    taken = np.zeros(n, np.bool_)
    pn = xn[:, 0].copy()
    pc = xc[:, 0].copy()
    cmin = np.empty(dn)
    cmax = np.empty(dn)
    has_null = np.zeros(dn, np.bool_)
    maxcard = 1
    for i in range(dc):
        maxcard = max(maxcard, card[i])
    present = np.zeros((dc, maxcard), np.bool_)
    distinct = np.zeros(dc, np.int64)
    absent = np.zeros(dc)
    cls = 0
    while m >= k:
        # seed: the remaining row farthest from the previous cluster's last row
        for j in range(m):
            buf[j] = 0.0
        for i in range(dn):
            p = pn[i]
            w = wn[i]
            for j in range(m):
                x = rn[i, j]
                d = abs(x - p)
                if np.isnan(p) or np.isnan(x):  # one side NULL: 1, both NULL: 0
                    d = 1.0 if np.isnan(p) != np.isnan(x) else 0.0
                buf[j] += w * d
        for i in range(dc):
            p = pc[i]
            w = wc[i]
            for j in range(m):
                buf[j] += w * (1.0 if rc[i, j] != p else 0.0)
        best = 0
        for j in range(1, m):
            if buf[j] > buf[best]:
                best = j
        for j in range(m):
            taken[j] = False
        for i in range(dn):
            cmin[i] = np.inf
            cmax[i] = -np.inf
            has_null[i] = False
        present[:, :] = False
        distinct[:] = 0
        lcnt[:] = 0
        lmax = 0
        last = best
        for step in range(k):
            if step > 0:
                # scores of every remaining row: IL(c + x) / (|c| + 1) minus a constant
                _scores(buf, m, rn, rc, wn, wc, card, cmin, cmax, has_null, present, distinct, absent)
                if aware:
                    extra = tw / (step + 1)
                    for j in range(m):
                        if lcnt[tgt[rem[j]]] < lmax:
                            buf[j] += extra
                best = -1
                for j in range(m):
                    if not taken[j] and (best < 0 or buf[j] < buf[best]):
                        best = j
                last = best
            taken[last] = True
            labels[rem[last]] = cls
            if aware:
                lb = tgt[rem[last]]
                lcnt[lb] += 1
                lmax = max(lmax, lcnt[lb])
            for i in range(dn):
                x = rn[i, last]
                if np.isnan(x):
                    has_null[i] = True
                else:
                    cmin[i] = min(cmin[i], x)
                    cmax[i] = max(cmax[i], x)
            for i in range(dc):
                v = rc[i, last]
                if not present[i, v]:
                    present[i, v] = True
                    distinct[i] += 1
        for i in range(dn):
            pn[i] = rn[i, last]
        for i in range(dc):
            pc[i] = rc[i, last]
        # compact the remaining rows, keeping sort order
        w_pos = 0
        for j in range(m):
            if not taken[j]:
                rem[w_pos] = rem[j]
                for i in range(dn):
                    rn[i, w_pos] = rn[i, j]
                for i in range(dc):
                    rc[i, w_pos] = rc[i, j]
                w_pos += 1
        m = w_pos
        cls += 1
    return labels


_greedy_numba: Callable[..., np.ndarray] = numba.njit(cache=True)(_greedy_python)


# ---------------------------------------------------------------------------------------
# numba kernel with privacy criteria: the same growth, then repair until the rule holds


def _greedy_rule_python(  # pragma: no cover - compiled by numba
    xn, xc, wn, wc, card, k, scode, soff, sp, sord, crit_i, crit_f
):
    """Body of the kernel with criteria: :func:`_greedy_python`'s clusters, each grown on
    past k by the cheapest repairing row until every sensitive column keeps the rule; a
    cluster that cannot be repaired is given up (its rows -1, left for the leftovers)."""
    dn, n = xn.shape
    dc = xc.shape[0]
    n_sens = scode.shape[0]
    n_values = sp.shape[0]
    labels = np.full(n, -1, np.int64)
    rem = np.arange(n)
    m = n
    rn = xn.copy()
    rc = xc.copy()
    rs = scode.copy()
    buf = np.empty(n)
    taken = np.zeros(n, np.bool_)
    pn = xn[:, 0].copy()
    pc = xc[:, 0].copy()
    cmin = np.empty(dn)
    cmax = np.empty(dn)
    has_null = np.zeros(dn, np.bool_)
    maxcard = 1
    for i in range(dc):
        maxcard = max(maxcard, card[i])
    present = np.zeros((dc, maxcard), np.bool_)
    distinct = np.zeros(dc, np.int64)
    absent = np.zeros(dc)
    cnt = np.zeros(n_values)
    helpful = np.zeros(n_values, np.bool_)
    cls = 0
    while m >= k:
        for j in range(m):
            buf[j] = 0.0
        for i in range(dn):
            p = pn[i]
            w = wn[i]
            for j in range(m):
                x = rn[i, j]
                d = abs(x - p)
                if np.isnan(p) or np.isnan(x):
                    d = 1.0 if np.isnan(p) != np.isnan(x) else 0.0
                buf[j] += w * d
        for i in range(dc):
            p = pc[i]
            w = wc[i]
            for j in range(m):
                buf[j] += w * (1.0 if rc[i, j] != p else 0.0)
        best = 0
        for j in range(1, m):
            if buf[j] > buf[best]:
                best = j
        for j in range(m):
            taken[j] = False
        for i in range(dn):
            cmin[i] = np.inf
            cmax[i] = -np.inf
            has_null[i] = False
        present[:, :] = False
        distinct[:] = 0
        cnt[:] = 0.0
        last = best
        size = 0
        failed = False
        while True:
            repair = False
            if size >= k:
                # which values repair the columns that fail (Rule.helpful); done when none fails
                helpful[:] = False
                for s in range(n_sens):
                    lo = soff[s]
                    hi = soff[s + 1]
                    if _criteria.column_ok(cnt, lo, hi, size, sp, sord[s], crit_i, crit_f):
                        continue
                    repair = True
                    bound = _criteria.repair_bound(cnt, size, s, soff, sp, sord, crit_i, crit_f)
                    for v in range(lo, hi):
                        helpful[v] = _criteria.helpful(v, cnt, size, bound, sp)
                if not repair:
                    break
            if size > 0:
                _scores(buf, m, rn, rc, wn, wc, card, cmin, cmax, has_null, present, distinct, absent)
                best = -1
                best_help = 0
                for j in range(m):
                    if taken[j]:
                        continue
                    if repair:
                        # the rows that repair the most failing columns, then the cheapest
                        n_help = 0
                        for s in range(n_sens):
                            if helpful[rs[s, j]]:
                                n_help += 1
                        if n_help == 0:
                            continue
                        if best < 0 or n_help > best_help or (n_help == best_help and buf[j] < buf[best]):
                            best = j
                            best_help = n_help
                    elif best < 0 or buf[j] < buf[best]:
                        best = j
                if best < 0:
                    failed = True
                    break
                last = best
            taken[last] = True
            labels[rem[last]] = cls
            size += 1
            for i in range(dn):
                x = rn[i, last]
                if np.isnan(x):
                    has_null[i] = True
                else:
                    cmin[i] = min(cmin[i], x)
                    cmax[i] = max(cmax[i], x)
            for i in range(dc):
                v = rc[i, last]
                if not present[i, v]:
                    present[i, v] = True
                    distinct[i] += 1
            for s in range(n_sens):
                cnt[rs[s, last]] += 1.0
        for i in range(dn):
            pn[i] = rn[i, last]
        for i in range(dc):
            pc[i] = rc[i, last]
        if failed:
            for j in range(m):
                if taken[j]:
                    labels[rem[j]] = -1
        w_pos = 0
        for j in range(m):
            if not taken[j]:
                rem[w_pos] = rem[j]
                for i in range(dn):
                    rn[i, w_pos] = rn[i, j]
                for i in range(dc):
                    rc[i, w_pos] = rc[i, j]
                for s in range(n_sens):
                    rs[s, w_pos] = rs[s, j]
                w_pos += 1
        m = w_pos
        if not failed:
            cls += 1
    return labels


_greedy_rule_numba: Callable[..., np.ndarray] = numba.njit(cache=True)(_greedy_rule_python)


def run_kmember(data: QIData, k: int, options: ClusterOptions, progress: Progress | None) -> ClusterRun:
    """k-member as the registry runs it: greedy, or class-aware with a target label."""
    if data.target is not None and options.target_weight > 0:
        return ClusterRun(
            kmember(data, k, rule=options.rule, target_weight=options.target_weight),
            "kmember",
            "exact",
            f"class-aware k-member clustering (DPPSCT), target weight {options.target_weight:g}",
        )
    return ClusterRun(kmember(data, k, rule=options.rule), "kmember", "exact", "greedy k-member clustering")
