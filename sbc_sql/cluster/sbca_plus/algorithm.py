"""SBCA+, a cluster-aware SBCA that keeps SBC's contingency-based distances.

The paper's SBCA (:func:`..sbca_paper.sbca`) takes the first remaining row in sort order as the seed and
the seed's k - 1 SBC-nearest rows as its class. SBCA+ changes three things, each behind a
switch so that every one can be measured on its own:

``growth``
    The class grows one row at a time: the next row is the one that raises the class's
    information loss (``|class| * sum_q w_q NCP_q``, its ranges and value sets) least;
    SBC's distance to the seed breaks ties between rows of equal cost, which are common
    (every row whose values the class already holds costs only its size). The rows
    considered form a pool of ``pool * k`` rows: first the seed's SBC-nearest rows, then,
    at class sizes 2, 4, 8, ..., the rows of least increase among the seed's
    ``wide * k`` SBC-nearest rows, so the pool follows the class as its value sets and
    ranges take shape. A class costs O(remaining rows * d) for SBC's distances (as in the
    paper), O(wide * k * d * log k) for the refills and O(pool * k * k) for the steps: over
    the n / k classes, O(n^2 d / k + n k (wide d log k / k + pool)).
``seeds="class"``
    The next seed is the remaining row farthest from the class just formed: the one whose
    joining would raise that class's NCP most (ties: sort position), so outliers are
    clustered while they still have company instead of being left for the end, and the next
    class starts away from the last one. ``"farthest"``: the remaining row SBC-farthest from
    the last seed; ``"first"``: the paper's first remaining row in sort order. It costs one
    O(remaining rows * d) sweep per class.
``refine``
    After the greedy pass and the leftovers, single rows move to another class, or two rows
    of different classes swap, whenever the total NCP falls and every class keeps at least
    k rows. A row's partners are the rows within ``window`` positions of it in the row order
    (they share its few-valued categories and lie near it on the numerics); a swap is only
    tried from a row whose class is cheaper without it. Passes repeat until one changes nothing (at most
    ``passes``); each costs O(n * window * d). Then, from k = :data:`RESPLIT_MIN_K` up,
    pairs of neighbouring classes are split anew (:mod:`.kernels.resplit`): their rows
    pooled, cut along a few row orders at the point of least cost, polished by moves and
    swaps between the two sides, and the split taken when it costs less and keeps k, the
    limits and the criteria; at most ``rounds`` rounds, each O(n * orders * d) (plus the
    polishes, bounded per step).

``order="coarse"``
    Rows are taken in :func:`.blocks.coarse_order`: categoricals of few values, then the
    numerics (along a Hilbert curve), then the finer categoricals; ties of every rule, the
    refinement's partners and block mode's blocks follow it. ``"sort"`` is the paper's order
    (every categorical before the numerics).

``rule``
    Privacy criteria on top of k (l-diversity, t-closeness, beta-likeness on
    ``QIData.sensitive``, a :class:`..sensitive.Rule`) are kept while the classes form: a
    class of k rows that fails them grows on with the rows that repair it, of least NCP
    increase (:mod:`.kernels.repair`); a class no remaining row repairs leaves its rows to the
    last step, where each joins the class of least NCP increase that keeps the criteria with
    it, or is suppressed; refinement takes only moves and swaps after which both classes keep
    them. Without a rule the classes are those of k alone, as before.

What each switch buys in total NCP is measured in benchmarks/results/utility.md (the
ablation rows) and benchmarks/results/tuning.md. With every switch off (:data:`PAPER`) the
labels are those of :func:`..sbca_paper.sbca`. The hot loops are numba kernels in
:mod:`.kernels`, called through :mod:`.compiled` with the arguments :mod:`.args` declares.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypedDict

import numpy as np

from ..blocks import coarse_order
from ..leftover import LEFTOVER_MODES
from ..limits import Limits
from ..model import SUPPRESSED, QIData
from ..sensitive import Rule
from ..similarity import Contingency
from . import compiled as kern

Progress = Callable[[int, int], None]

_SEED_RULES = {"class": 2, "farthest": 1, "first": 0}  # greedy_pass's seed_rule
SEED_MODES = tuple(_SEED_RULES)
ORDERS = ("coarse", "sort")

#: pool of rows a growing class chooses from, in multiples of k (at least POOL_MIN rows)
POOL = 8
POOL_MIN = 16
#: SBC-nearest rows the pool is refilled from, in multiples of k
WIDE = 256
#: refinement partners: rows within max(WINDOW_MIN, 2 k) positions in sort order
WINDOW_MIN = 16
#: refinement passes at most
PASSES = 10
#: rounds of pairs of classes split anew at most (after the refinement's passes)
ROUNDS = 8
#: pairs of classes are split anew from this k up: the rounds cost about as much per row at
#: every k, where the greedy pass costs more per row as k grows (benchmarks/results/tuning.md)
RESPLIT_MIN_K = 25


class Switches(TypedDict):
    """The switches of :func:`sbca_plus` that set its growth, seeds, refinement and order."""

    growth: bool
    seeds: str
    refine: bool
    order: str


#: every switch off: the labels of the paper's SBCA (:func:`..sbca_paper.sbca`)
PAPER: Switches = {"growth": False, "seeds": "first", "refine": False, "order": "sort"}

_UNPLACED = -2
#: the growth keeps one bit per categorical QI for each candidate row (an int64)
MAX_CATEGORICAL = 64


def sbca_plus(
    data: QIData,
    k: int,
    *,
    growth: bool = True,
    seeds: str = "class",
    refine: bool = True,
    leftover: str = "nearest",
    progress: Progress | None = None,
    contingency: Contingency | None = None,
    pool: int = POOL,
    wide: int = WIDE,
    window: int | None = None,
    passes: int = PASSES,
    rounds: int | None = None,
    order: str = "coarse",
    stop: np.ndarray | None = None,
    rule: Rule | None = None,
    limits: Limits | None = None,
    target_weight: float = 0.0,
) -> np.ndarray:
    """Cluster the rows of ``data`` into classes of at least k; returns a class id per row.

    ``growth``, ``seeds``, ``refine`` and ``order`` are the switches described in the module
    docstring; ``leftover`` places the fewer than k rows left at the end as the paper's
    last step does (``nearest``: least NCP increase, before refinement). Class ids are 0, 1, ...
    in the order the classes were formed; a row that ``suppress`` removes gets
    ``SUPPRESSED``; with fewer than k rows every row does. Deterministic: the same input
    and options give the same labels. ``progress(done, total)`` is called as rows are
    clustered. ``contingency`` (counts of the rows to cluster, built from ``data`` when not
    given) is decremented as classes form, as in :func:`.sbca`. ``pool``, ``wide``,
    ``window`` (default ``max(16, 2k)``), ``passes`` and ``rounds`` (default
    :func:`resplit_rounds`) tune the switches. ``stop`` (one
    boolean) is the flag the kernels read: set it from another thread to stop them at their
    next check, and this call raises KeyboardInterrupt (see :mod:`.compiled`). ``rule``: the
    criteria every class keeps besides k (needs ``data.sensitive``); rows no class can take
    with them are ``SUPPRESSED``, and ``leftover="last"`` then places as ``nearest`` does.
    ``limits``: per-column limits every class keeps (``growth`` only); rows that fit no class
    are ``SUPPRESSED``, and ``leftover="last"`` places as ``nearest`` does.
    ``target_weight`` W (with ``data.target``, ``growth`` only): classes minimize their
    information loss plus W x sum_q w_q for each row outside their majority label, i.e.
    total NCP + W x CM (see the module docstring).

    Rows that stand for several source rows (``data.multiplicity``: distinct QI tuples and
    their counts; ``growth`` only) are clustered whole: a row standing for k or more is a
    class of its own at no loss (the first class ids, in row order), and the others grow
    into classes until their multiplicities add up to k; a class's loss is the rows it
    stands for times its NCP, in the growth, the leftovers and the refinement alike.
    """
    if k < 1:
        raise ValueError(f"k={k} must be at least 1")
    if seeds not in SEED_MODES:
        raise ValueError(f"unknown seeds mode {seeds!r}; choose one of {SEED_MODES}")
    if leftover not in LEFTOVER_MODES:
        raise ValueError(f"unknown leftover mode {leftover!r}; choose one of {LEFTOVER_MODES}")
    if order not in ORDERS:
        raise ValueError(f"unknown order {order!r}; choose one of {ORDERS}")
    for name, value in (
        ("pool", pool),
        ("wide", wide),
        ("passes", passes),
        ("rounds", 0 if rounds is None else rounds),
        ("window", 0 if window is None else window),
    ):
        if value < 0:
            raise ValueError(f"{name}={value} must not be negative")
    n_cat = sum(1 for q in range(data.n_qis) if not data.numeric[q])
    if n_cat > MAX_CATEGORICAL:
        raise ValueError(f"{n_cat} categorical QIs; SBCA+ takes at most {MAX_CATEGORICAL}")
    limits = limits.binding(data) if limits is not None else None
    if limits is not None and not limits.active:
        limits = None
    if limits is not None and not growth:
        raise ValueError("per-column limits are kept only with growth")
    if data.multiplicity is not None and not growth:
        raise ValueError("rows standing for several rows are clustered only with growth")
    n = data.n_rows
    labels = np.full(n, SUPPRESSED, dtype=np.int64)
    if n == 0:
        return labels
    stop = np.zeros(1, dtype=np.bool_) if stop is None else stop
    rows = coarse_order(data) if order == "coarse" else data.sort_order()
    wt = np.ascontiguousarray(data.weights_of_rows()[rows])
    # rows standing for k rows or more: classes of their own, before the greedy pass
    whole = wt >= k if data.multiplicity is not None else np.zeros(n, dtype=np.bool_)
    if contingency is not None:
        counts = contingency
    else:
        counts = Contingency(data.take(np.sort(rows[~whole])) if whole.any() else data)
    arr: dict[str, Any] = dict(_kernel_arrays(data, counts, rows, limits))
    arr.update(_target_arrays(data, rows, target_weight if growth else 0.0))
    crit = _criteria_arrays(data, rule, rows)
    if (crit["crit_i"].any() or limits is not None) and leftover == "last":
        leftover = "nearest"

    # the greedy pass, in slices of rows so that progress can be reported
    lab = np.full(n, _UNPLACED, dtype=np.int64)
    n_whole = int(whole.sum())
    lab[whole] = np.arange(n_whole, dtype=np.int64)
    alive = ~whole
    first = int(np.argmax(alive)) if n_whole < n else 0
    state = np.array([n, n - n_whole, n_whole, first, int(wt[alive].sum())], dtype=np.int64)
    pool_rows = max(int(pool) * k, POOL_MIN, k)
    values = {
        **arr,
        "raw": arr["raw"].copy(),
        "sc": arr["sc"].copy(),
        "cat": arr["cat"].copy(),
        "rid": np.arange(n, dtype=np.int64),
        "alive": alive,
        "dist": np.zeros(n, dtype=np.float64),
        "state": state,
        "labels": lab,
        "k": k,
        "growth": growth,
        "seed_rule": _SEED_RULES[seeds],
        "pool": pool_rows,
        "wide": max(int(wide) * k, pool_rows) if growth else 0,
        "budget": max(n // 32, k) if progress is not None else n,
        "stop": stop,
        "wt": wt,
        **crit,
    }
    while state[4] >= k and not stop[0]:
        kern.greedy_pass(values)
        if progress is not None:
            progress(n - int(state[1]), n)
    _stopped(stop)
    if contingency is not None:
        _write_back(counts, arr)
    n_classes = int(state[2])

    # leftovers (the paper's last step), then refinement
    if n_classes == 0 or leftover == "suppress":
        lab[lab == _UNPLACED] = SUPPRESSED
    elif leftover == "last":
        lab[lab == _UNPLACED] = n_classes - 1
    place = leftover == "nearest" and n_classes > 0
    n_passes = int(passes) if refine else 0
    n_rounds = (resplit_rounds(k) if rounds is None else int(rounds)) if refine else 0
    if n_classes > 0 and (place or n_passes > 0 or n_rounds > 0):
        win = max(WINDOW_MIN, 2 * k) if window is None else int(window)
        _finish(arr, crit, lab, wt, k, place, win, n_passes, n_rounds, stop)
    labels[rows] = lab
    if progress is not None:
        progress(n, n)
    return labels


def resplit_rounds(k: int, rounds: int = ROUNDS) -> int:
    """The rounds of pairs of classes split anew at this k: ``rounds`` from
    :data:`RESPLIT_MIN_K` up, else none."""
    return rounds if k >= RESPLIT_MIN_K else 0


def place_rows(
    data: QIData,
    labels: np.ndarray,
    rule: Rule | None = None,
    limits: Limits | None = None,
    stop: np.ndarray | None = None,
) -> np.ndarray:
    """Each row of ``data`` labelled ``SUPPRESSED`` in ``labels`` placed, in row order, in the
    class of ``labels`` whose information loss grows least with it among those that keep
    ``rule`` and ``limits`` with it (ties: the lower class id), each class's summaries kept
    up to date as rows join; a row no class can take stays ``SUPPRESSED``. Returns the new
    labels (class ids 0 .. n - 1, every id in use). The compiled twin of
    :func:`..rescue.rescue`'s placement (the refinement's first phase, without its passes)."""
    n = data.n_rows
    out = np.asarray(labels, dtype=np.int64).copy()
    if n == 0 or not (out >= 0).any() or not (out < 0).any():
        return out
    limits = limits.binding(data) if limits is not None else None
    stop = np.zeros(1, dtype=np.bool_) if stop is None else stop
    order = np.arange(n, dtype=np.int64)
    arr: dict[str, Any] = dict(
        _kernel_arrays(data, None, order, limits if limits is not None and limits.active else None)
    )
    arr.update(_target_arrays(data, order, 0.0))
    lab = out
    lab[lab < 0] = _UNPLACED
    wt = np.ascontiguousarray(data.weights_of_rows())
    _finish(arr, _criteria_arrays(data, rule, order), lab, wt, 1, True, WINDOW_MIN, 0, 0, stop)
    lab[lab < 0] = SUPPRESSED
    return lab


def _finish(
    arr: Mapping[str, Any],
    crit: Mapping[str, np.ndarray],
    lab: np.ndarray,
    wt: np.ndarray,
    k: int,
    place: bool,
    window: int,
    passes: int,
    rounds: int,
    stop: np.ndarray,
) -> None:
    """The placement of the rows labelled -2 (with ``place``), up to ``passes`` refinement
    passes and up to ``rounds`` rounds of pairs of classes split anew
    (:func:`.kernels.refine.finish`) on ``lab``, in place; the codes as int32 whatever the
    greedy pass got, so the kernel is compiled for one code type."""
    kern.finish(
        {
            **arr,
            "cat": arr["cat"].astype(np.int32),
            "lab": lab,
            "k": k,
            "place": place,
            "window": window,
            "max_passes": passes,
            "rounds": rounds,
            "stats": np.zeros(5, dtype=np.int64),
            "stop": stop,
            "wt": wt,
            **crit,
        }
    )
    _stopped(stop)


def _stopped(stop: np.ndarray) -> None:
    """A stopped kernel's labels are unfinished: they never leave this module."""
    if stop[0]:
        raise KeyboardInterrupt


def _criteria_arrays(data: QIData, rule: Rule | None, order: np.ndarray) -> dict[str, np.ndarray]:
    """The criteria as the kernels take them (:meth:`..sensitive.Rule.kernel_arrays`), the
    sensitive codes in the sorted domain; without criteria, empty arrays that ask none."""
    if rule is None or not rule.active:
        return {
            "scode": np.zeros((0, 0), dtype=np.int32),
            "soff": np.zeros(1, dtype=np.int64),
            "sp": np.zeros(0, dtype=np.float64),
            "sord": np.zeros(0, dtype=np.bool_),
            "crit_i": np.zeros(1, dtype=np.int64),  # a program of no criterion
            "crit_f": np.zeros(0, dtype=np.float64),
        }
    if data.sensitive is None:
        raise ValueError("criteria on sensitive values need QIData.sensitive")
    arr = rule.kernel_arrays(data.sensitive)
    arr["scode"] = np.ascontiguousarray(arr["scode"][:, order])
    return arr


#: the most target labels the kernels count per class
MAX_LABELS = 64


def _target_arrays(data: QIData, order: np.ndarray, weight: float) -> dict[str, object]:
    """The target labels in the sorted domain, their count and what one row outside its
    class's majority label costs (W x the sum of the QI weights); empty without a target."""
    if data.target is None or weight <= 0:
        return {"tgt": np.zeros(0, dtype=np.int32), "n_lab": 0, "tw": 0.0}
    n_lab = data.n_labels
    if n_lab > MAX_LABELS:
        raise ValueError(f"{n_lab} target labels; the clustering counts at most {MAX_LABELS}")
    tgt = np.ascontiguousarray(data.target[order], dtype=np.int32)
    return {"tgt": tgt, "n_lab": n_lab, "tw": float(weight) * float(sum(data.weights))}


def _kernel_arrays(
    data: QIData, counts: Contingency | None, order: np.ndarray, limits: Limits | None = None
) -> dict[str, np.ndarray]:
    """The QIs in the sorted domain as the kernels take them, with the contingency counts and
    the per-column limits (a limited QI is active even at weight 0: the kernels keep the
    bounds and value counts of active QIs only). Without ``counts`` (for the placement and
    the refinement, which read none) the counts are empty."""
    n = data.n_rows
    num_q = [q for q in range(data.n_qis) if data.numeric[q]]
    cat_q = list(counts.order) if counts is not None else data.categorical_order()
    raw = np.empty((len(num_q), n), dtype=np.float64)
    sc = np.empty((len(num_q), n), dtype=np.float64)
    span = np.zeros(len(num_q), dtype=np.float64)
    for j, q in enumerate(num_q):
        raw[j] = np.asarray(data.columns[q], dtype=np.float64)[order]
        sc[j] = data.scaled(q)[order]
        span[j] = data.span(q)
    card = np.array(
        [counts.card[q] if counts is not None else max(int(data.cardinality[q]), 1) for q in cat_q],
        dtype=np.int64,
    )
    # the narrowest codes halve the memory the distance sweeps read
    top = int(card.max()) if len(card) else 0
    code_type = np.uint8 if top <= 1 << 8 else np.uint16 if top <= 1 << 16 else np.int32
    cat = np.empty((len(cat_q), n), dtype=code_type)
    for u, q in enumerate(cat_q):
        cat[u] = data.columns[q][order]
    cnt_off = np.zeros(len(cat_q), dtype=np.int64)
    pair_off = np.zeros(len(cat_q), dtype=np.int64)
    cnt_parts, pair_parts = [], []
    c_off = p_off = 0
    for u, q in enumerate(cat_q):
        if counts is None:
            break
        cnt_off[u] = c_off
        cnt_parts.append(np.asarray(counts.counts[q], dtype=np.int64).ravel())
        c_off += int(card[u])
        if u > 0:
            pair_off[u] = p_off
            table = np.asarray(counts.pair[(cat_q[u - 1], q)], dtype=np.int64).ravel()
            pair_parts.append(table)
            p_off += len(table)
    wn = np.array([data.weights[q] for q in num_q], dtype=np.float64)
    wc = np.array([data.weights[q] for q in cat_q], dtype=np.float64)
    qkind = np.array([0 if data.numeric[q] else 1 for q in range(data.n_qis)], dtype=np.int64)
    qidx = np.array(
        [num_q.index(q) if data.numeric[q] else cat_q.index(q) for q in range(data.n_qis)], dtype=np.int64
    )
    lim = (limits or Limits()).kernel_arrays(data, num_q, cat_q)
    return {
        **lim,
        "raw": raw,
        "sc": sc,
        "span": span,
        "wn": wn,
        "num_act": (wn != 0) | (lim["wlim"] < np.inf),
        "cat": cat,
        "card": card,
        "wc": wc,
        "cat_act": ((wc != 0) | (lim["vlim"] < card)) & (card > 1),
        "pred": np.arange(-1, len(cat_q) - 1, dtype=np.int64),
        "cnt": np.concatenate(cnt_parts) if cnt_parts else np.zeros(0, dtype=np.int64),
        "cnt_off": cnt_off,
        "pair": np.concatenate(pair_parts) if pair_parts else np.zeros(0, dtype=np.int64),
        "pair_off": pair_off,
        "qkind": qkind,
        "qidx": qidx,
    }


def _write_back(counts: Contingency, arr: dict[str, np.ndarray]) -> None:
    """Copy the decremented kernel counts into the caller's Contingency (as sbca_paper.sbca does)."""
    cat_q = list(counts.order)
    for u, q in enumerate(cat_q):
        c = int(arr["card"][u])
        counts.counts[q][...] = arr["cnt"][arr["cnt_off"][u] : arr["cnt_off"][u] + c]
        if u > 0:
            m = cat_q[u - 1]
            size = counts.pair[(m, q)].size
            start = arr["pair_off"][u]
            table = counts.pair[(m, q)]
            table[...] = arr["pair"][start : start + size].reshape(table.shape)
