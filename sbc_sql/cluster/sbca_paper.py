"""SBCA, the paper's greedy bottom-up Similarity-Based Clustering Algorithm.

The readable statement of the algorithm and the reference the compiled path is held to:
``sbca_plus`` with every switch off (``sbca_plus.algorithm.PAPER``) gives its labels.

Pure numpy over columnar arrays: no database, no per-row Python objects. The registry
runs it as :func:`run_sbca_paper`: SBCA+ with the paper's switches, exact or in blocks.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from .blocks import blocked, check_memory, choose_mode
from .leftover import place_leftovers
from .model import SUPPRESSED, QIData
from .runs import ClusterOptions, ClusterRun, threads
from .sbca_plus import compiled
from .sbca_plus.algorithm import PAPER, sbca_plus
from .similarity import Contingency

Progress = Callable[[int, int], None]


def nearest(dist: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k smallest distances; ties go to the smaller position."""
    if len(dist) <= k:
        return np.arange(len(dist))
    kth = np.partition(dist, k - 1)[k - 1]
    below = np.flatnonzero(dist < kth)
    equal = np.flatnonzero(dist == kth)[: k - len(below)]
    return np.concatenate([below, equal])


def sbca(
    data: QIData,
    k: int,
    leftover: str = "nearest",
    contingency: Contingency | None = None,
    progress: Progress | None = None,
) -> np.ndarray:
    """Cluster the rows of ``data`` into classes of at least k; returns a class id per row."""
    n = data.n_rows
    labels = np.full(n, SUPPRESSED, dtype=np.int64)
    if n == 0:
        return labels
    counts = contingency if contingency is not None else Contingency(data)
    order = data.sort_order()
    # remaining rows, kept compacted in sort order
    rem = order
    num_q = [q for q in range(data.n_qis) if data.numeric[q] and data.weights[q] != 0]
    cat_q = [q for q in counts.order if data.weights[q] != 0 and counts.card[q] > 1]
    scaled = {q: data.scaled(q) for q in num_q}
    rem_num = {q: scaled[q][rem] for q in num_q}
    rem_cat = {q: data.columns[q][rem] for q in cat_q}
    seed_all = dict.fromkeys(counts.order, 0)
    cls = 0
    while len(rem) >= k:
        seed = rem[0]
        dist = np.zeros(len(rem), dtype=np.float64)
        for q in num_q:
            x = rem_num[q]
            s = x[0]
            w = data.weights[q]
            if np.isnan(s):
                dist += w * np.where(np.isnan(x), 0.0, 1.0)
            else:
                d = np.abs(x - s)
                d[np.isnan(d)] = 1.0
                dist += w * d
        for q in counts.order:
            seed_all[q] = int(data.columns[q][seed])
        for q in cat_q:
            table = counts.distance_table(q, seed_all, k)
            dist += data.weights[q] * table[rem_cat[q]]
        pick = nearest(dist, k)
        members = rem[pick]
        labels[members] = cls
        counts.remove(data, members)
        keep = np.ones(len(rem), dtype=bool)
        keep[pick] = False
        rem = rem[keep]
        for q in num_q:
            rem_num[q] = rem_num[q][keep]
        for q in cat_q:
            rem_cat[q] = rem_cat[q][keep]
        cls += 1
        if progress is not None:
            progress(n - len(rem), n)
    place_leftovers(data, labels, rem, leftover, cls - 1)
    if progress is not None:
        progress(n, n)
    return labels


def run_sbca_paper(data: QIData, k: int, options: ClusterOptions, progress: Progress | None) -> ClusterRun:
    """The paper's SBCA (SBCA+ with every switch off gives its labels): exact up to
    ``choose_mode``'s size, else in Hilbert-ordered blocks."""
    mode = choose_mode(data.n_rows, k) if options.mode == "auto" else options.mode
    check_memory(data, mode, options.workers)
    engine = f"{compiled.engine()} kernels"
    paper = functools.partial(sbca_plus, leftover=options.leftover, **PAPER)
    if mode == "exact":
        labels = paper(data, k, progress=progress)
        return ClusterRun(labels, "sbca-paper", "exact", f"the paper's SBCA, one block, {engine}")
    stop = np.zeros(1, dtype=np.bool_)
    labels = blocked(
        data, k, functools.partial(paper, stop=stop), workers=options.workers, progress=progress, stop=stop
    )
    return ClusterRun(
        labels,
        "sbca-paper",
        "blocks",
        "the paper's SBCA in Hilbert-ordered blocks of about 4,096 rows, "
        f"{engine}, {threads(options.workers)}",
    )
