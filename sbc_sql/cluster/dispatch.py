"""Choose and run a clustering algorithm over a QIData.

Every algorithm returns a class id per row (-1 suppressed), so the release writer, the
verification and every metric apply to all of them.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ResourceError
from .blocks import block_bounds, blocked, choose_mode, estimate_memory
from .model import QIData
from .sbca_plus import compiled
from .sbca_plus.algorithm import PAPER, sbca_plus

if TYPE_CHECKING:
    from .baselines.fulldomain import Hierarchy

# the other algorithms' modules are imported when chosen: k-member's brings in numba,
# which the default does not need (see compiled.py)

Progress = Callable[[int, int], None]

ALGORITHMS = ("sbca", "sbca-paper", "mondrian", "kmember", "datafly", "incognito")
# block mode: rows are cut from SBCA+'s coarse order (blocks.coarse_order) into blocks of
# this size; one refinement pass there (further passes bought < 0.01 points of NCP at 1M
# rows). At k = 10 (blocks of 1,600 rows, see BLOCK_ROWS_PER_K) against 2,048: clustering
# 7 % faster at 1,000,000 rows, total NCP 2.48 against 2.45 % there, 4.88 against 4.86 % on
# the synthetic 50,000 rows, 4.18 against 4.17 % on Adult
BLOCK_ROWS = 1536
BLOCK_PASSES = 1
# larger k needs larger blocks: a block of b rows holds only b / k classes, and at k = 50 on
# 200,000 rows blocks of 2,048 cost 11 % NCP over one exact block, blocks of 8,192 under 3 %
BLOCK_ROWS_PER_K = 160


# in a block, a growing class chooses among (up to) this many rows: the whole block at
# k <= 12, and at larger k a pool refilled from the whole block (sbcx's ``wide`` set). On
# Adult, k = 10, it takes total NCP from 4.31 % (pool of 8 k rows) to 4.27 %, below greedy
# k-member's 4.31 %, for +18 % clustering time at 1,000,000 rows
BLOCK_POOL_ROWS = 2048


def default_block_rows(k: int) -> int:
    """Rows per block of the cluster-aware SBCA in block mode."""
    return max(BLOCK_ROWS, BLOCK_ROWS_PER_K * k)


def block_algorithm(k: int, leftover: str = "nearest", rows: int | None = None) -> Callable[..., np.ndarray]:
    """The cluster-aware SBCA as block mode runs it on each block. With ``rows`` (blocks of
    that many rows, chosen by the user) every row of a block is a candidate for each class."""
    pool = max(BLOCK_POOL_ROWS, rows or 0)
    return functools.partial(sbca_plus, leftover=leftover, passes=BLOCK_PASSES, pool=-(-pool // k))


@dataclass(frozen=True)
class ClusterRun:
    labels: np.ndarray
    algorithm: str
    mode: str
    detail: str


def run_clustering(
    data: QIData,
    k: int,
    *,
    algorithm: str = "sbca",
    mode: str = "auto",
    leftover: str = "nearest",
    workers: int | None = None,
    hierarchies: Mapping[str, Hierarchy] | None = None,
    max_suppression: float = 0.01,
    block_rows: int | None = None,
    progress: Progress | None = None,
) -> ClusterRun:
    """Class id per row (-1 suppressed) from the chosen algorithm and mode."""
    if algorithm in ("sbca", "sbca-paper"):
        if mode == "auto":
            # the default runs in blocks at every size (a small table is one block): on
            # Adult its blocks beat one exact block on NCP at every k and take a fifth of
            # the time; the paper's algorithm stays exact up to its threshold
            mode = "blocks" if algorithm == "sbca" else choose_mode(data.n_rows, k)
        check_memory(data, mode, workers)
        engine = f"{compiled.engine()} kernels"
        threads = f"{workers or os.cpu_count() or 1} worker(s)"
        if algorithm == "sbca-paper":
            # SBCA+ with every switch off gives the paper's labels
            paper = functools.partial(sbca_plus, leftover=leftover, **PAPER)
            if mode == "exact":
                labels = paper(data, k, progress=progress)
                return ClusterRun(labels, algorithm, "exact", f"the paper's SBCA, one block, {engine}")
            labels = blocked(data, k, paper, workers=workers, progress=progress)
            return ClusterRun(
                labels,
                algorithm,
                "blocks",
                f"the paper's SBCA in Hilbert-ordered blocks of about 4,096 rows, {engine}, {threads}",
            )
        if mode == "exact":
            labels = sbca_plus(data, k, leftover=leftover, progress=progress)
            return ClusterRun(
                labels,
                algorithm,
                "exact",
                "cluster-aware SBCA (growth, seeds "
                "far from the last class, refinement, coarse order), one block",
            )
        size = block_rows or default_block_rows(k)
        labels = blocked(
            data,
            k,
            block_algorithm(k, leftover, block_rows),
            block_size=size,
            workers=workers,
            progress=progress,
            categorical_by="coarse",
        )
        n_blocks = len(block_bounds(data.n_rows, k, size)) - 1
        return ClusterRun(
            labels,
            algorithm,
            "blocks",
            f"cluster-aware SBCA in {n_blocks:,} block(s) of at most {size:,} rows "
            f"of the coarse order, {threads}, {compiled.engine()} kernels",
        )
    if algorithm == "mondrian":
        from .baselines.mondrian import mondrian

        return ClusterRun(mondrian(data, k), algorithm, "exact", "strict median partitioning")
    if algorithm == "kmember":
        from .baselines.kmember import kmember

        return ClusterRun(kmember(data, k), algorithm, "exact", "greedy k-member clustering")
    if algorithm in ("datafly", "incognito"):
        from .baselines.fulldomain import datafly, incognito

        run = datafly if algorithm == "datafly" else incognito
        labels = run(data, k, dict(hierarchies or {}), max_suppression=max_suppression)
        return ClusterRun(
            labels, algorithm, "exact", f"full-domain recoding, suppression budget {max_suppression:g}"
        )
    raise ValueError(f"unknown algorithm {algorithm!r}")


def available_memory() -> int:
    """Bytes the system can still give this process (MemAvailable), or a large number."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 1 << 62


def check_memory(data: QIData, mode: str, workers: int | None) -> None:
    need = estimate_memory(data.n_rows, data.n_qis, mode, workers=workers)
    have = available_memory()
    if need > have:
        hint = "use --mode blocks" if mode == "exact" else "use fewer --workers or fewer rows"
        raise ResourceError(
            f"clustering {data.n_rows} rows in {mode} mode needs about "
            f"{need / 2**30:.1f} GiB but {have / 2**30:.1f} GiB is available; "
            f"{hint}"
        )
