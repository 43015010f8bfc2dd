"""Phase 1: the rows grouped by how alike their background knowledge is.

Dissimilarity: the Jensen-Shannon divergence in bits (0 for equal beliefs, 1 for beliefs
on disjoint values). Complete-linkage clustering cut at J (every merge height <= J) gives
groups whose every pair of members is within J, since a complete-linkage merge height is
the diameter of the merged group. A group of fewer than k rows is not released.

Only the distinct beliefs are clustered: copies of one belief are at divergence 0 and
complete linkage merges them first, and a group of copies has the same distances as one
of them, so the cut is the one over every row. Beyond :data:`MAX_DISTINCT` distinct
beliefs (the condensed matrix grows as their square) the connected components of the
graph "divergence <= J" are clustered one by one, which is still exact; a component
larger than the cap is cut into chunks along the first principal axis of the beliefs'
square roots and each chunk clustered alone. Every group then still has diameter <= J;
only the partition differs from the global one, and a warning says so.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

log = logging.getLogger(__name__)

#: the most distinct beliefs one complete linkage clusters
MAX_DISTINCT = 20_000
#: the most cells (rows x beliefs x values) of one block of divergences in memory
BLOCK_CELLS = 1 << 23
#: beliefs equal after rounding to this are one
ROUND = 1e-12


def entropy_bits(p: np.ndarray) -> np.ndarray:
    """Shannon entropy in bits of each row (0 log 0 = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log2(np.where(p > 0, p, 1.0)), 0.0)
    out: np.ndarray = -terms.sum(axis=-1)
    return out


def js_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Jensen-Shannon divergence in bits of every row of ``a`` with every row of ``b``
    (an (len(a), len(b)) matrix in [0, 1])."""
    a = np.atleast_2d(a)
    b = np.atleast_2d(b)
    mid = (a[:, None, :] + b[None, :, :]) / 2
    d = entropy_bits(mid) - (entropy_bits(a)[:, None] + entropy_bits(b)[None, :]) / 2
    out: np.ndarray = np.clip(d, 0.0, 1.0)
    return out


def js_matrix(w: np.ndarray) -> np.ndarray:
    """The symmetric divergence matrix of the rows of w, zero diagonal."""
    v = len(w)
    out = np.empty((v, v))
    h = entropy_bits(w)
    step = _block_rows(w)
    for a in range(0, v, step):
        blk = w[a : a + step]
        mid = (blk[:, None, :] + w[None, :, :]) / 2
        out[a : a + step] = entropy_bits(mid) - (h[a : a + step, None] + h[None, :]) / 2
    out = np.clip(np.maximum(out, out.T), 0.0, 1.0)
    np.fill_diagonal(out, 0.0)
    return out


def _block_rows(w: np.ndarray) -> int:
    return max(1, BLOCK_CELLS // max(int(w.shape[0]) * int(w.shape[1]), 1))


@dataclass(frozen=True)
class Phase1:
    """Groups as row-index arrays (ordered by their first row's position), each row's group
    (-1 for a row of a group under k), and whether the cut was approximated."""

    groups: tuple[np.ndarray, ...]
    group: np.ndarray
    small: np.ndarray
    distinct: int
    approximate: bool
    #: the beliefs some row holds, and each row's one of them (for verification)
    beliefs: np.ndarray | None = None
    belief: np.ndarray | None = None


def complete_linkage(w: np.ndarray, threshold: float) -> np.ndarray:
    """Flat cluster labels (0-based) of the rows of w: complete linkage cut at ``threshold``."""
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    if len(w) == 1:
        return np.zeros(1, dtype=np.int64)
    condensed = squareform(js_matrix(w), checks=False)
    z = linkage(condensed, method="complete")
    labels: np.ndarray = fcluster(z, t=threshold, criterion="distance").astype(np.int64) - 1
    return labels


def components(w: np.ndarray, threshold: float) -> np.ndarray:
    """Connected components of the graph joining beliefs within ``threshold``, computed a
    block of rows at a time (never the whole matrix)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    v = len(w)
    label = np.arange(v, dtype=np.int64)
    step = _block_rows(w)
    for a in range(0, v, step):
        d = js_bits(w[a : a + step], w)
        i, j = np.nonzero(d <= threshold)
        # the components found so far enter as an edge from each row to its component's
        # first row, so each block's graph has at most v edges besides its own
        _, rep = np.unique(label, return_index=True)
        rows = np.concatenate([i + a, np.arange(v)])
        cols = np.concatenate([j, rep[label]])
        graph = coo_matrix((np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(v, v))
        _, label = connected_components(graph, directed=False)
        label = label.astype(np.int64)
    return label


def cluster_beliefs(w: np.ndarray, threshold: float, cap: int = MAX_DISTINCT) -> tuple[np.ndarray, bool]:
    """Flat labels of distinct beliefs w: exact complete linkage, per connected component
    beyond ``cap`` rows, in chunks (approximate, still within ``threshold``) beyond that."""
    v = len(w)
    if v <= cap:
        return complete_linkage(w, threshold), False
    comp = components(w, threshold)
    labels = np.empty(v, dtype=np.int64)
    next_label = 0
    approximate = False
    for c in np.unique(comp):
        members = np.nonzero(comp == c)[0]
        chunks = [members]
        if len(members) > cap:
            approximate = True
            chunks = _chunks(w, members, cap)
        for chunk in chunks:
            sub = complete_linkage(w[chunk], threshold)
            labels[chunk] = sub + next_label
            next_label += int(sub.max()) + 1
    if approximate:
        log.warning(
            "phase 1: more than %s distinct beliefs in one component; clustered in chunks along "
            "their first principal axis (each group still within the threshold, the grouping "
            "approximate)",
            f"{cap:,}",
        )
    return labels, approximate


def _chunks(w: np.ndarray, members: np.ndarray, cap: int) -> list[np.ndarray]:
    """Members cut into consecutive runs of at most ``cap`` along the first principal axis
    of the square-root (Hellinger) embedding; ties by index."""
    x = np.sqrt(w[members])
    x = x - x.mean(axis=0)
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    axis = vt[0] * (1.0 if vt[0][np.argmax(np.abs(vt[0]))] >= 0 else -1.0)
    order = members[np.lexsort((members, x @ axis))]
    return [np.sort(order[i : i + cap]) for i in range(0, len(order), cap)]


def phase1(
    beliefs: np.ndarray,
    key: np.ndarray,
    position: np.ndarray,
    threshold: float,
    k: int,
    cap: int = MAX_DISTINCT,
) -> Phase1:
    """Group the rows (``key[i]``: row i's row of ``beliefs``) by complete linkage on the
    distinct beliefs cut at ``threshold``; groups under k rows are marked ``small``."""
    n = len(key)
    # only the beliefs some row holds: another would be a point of the dendrogram
    used, key = np.unique(key, return_inverse=True)
    key = key.reshape(-1)
    beliefs = beliefs[used]
    rounded = np.round(beliefs / ROUND) * ROUND
    distinct, first, inv = np.unique(rounded, axis=0, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    w = beliefs[first]
    labels, approximate = cluster_beliefs(w, threshold, cap)
    row_label = labels[inv[key]]
    n_labels = int(row_label.max()) + 1 if n else 0
    size = np.bincount(row_label, minlength=n_labels)
    first_pos = np.full(n_labels, np.iinfo(np.int64).max)
    np.minimum.at(first_pos, row_label, position)
    kept = [lab for lab in np.argsort(first_pos, kind="stable") if size[lab] >= k]
    group = np.full(n, -1, dtype=np.int64)
    remap = np.full(n_labels, -1, dtype=np.int64)
    remap[kept] = np.arange(len(kept))
    group = remap[row_label] if n else group
    order = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[order], np.arange(len(kept) + 1))
    groups = tuple(order[bounds[g] : bounds[g + 1]] for g in range(len(kept)))
    return Phase1(groups, group, group < 0, len(distinct), approximate, beliefs, key.astype(np.int64))
