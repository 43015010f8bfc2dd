"""Choose and run a clustering algorithm over a QIData.

Every algorithm returns a class id per row (-1 suppressed), so the release writer, the
verification and every metric apply to all of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from .fulldomain import Hierarchy, datafly, incognito
from .kmember import kmember
from .model import QIData
from .mondrian import mondrian
from .sbca import sbca

Progress = Callable[[int, int], None]

ALGORITHMS = ("sbca", "mondrian", "kmember", "datafly", "incognito")


@dataclass(frozen=True)
class ClusterRun:
    labels: np.ndarray
    algorithm: str
    mode: str
    detail: str


def run_clustering(data: QIData, k: int, *, algorithm: str = "sbca", mode: str = "auto",
                   leftover: str = "nearest", workers: int | None = None,
                   hierarchies: Mapping[str, Hierarchy] | None = None,
                   max_suppression: float = 0.01,
                   progress: Progress | None = None) -> ClusterRun:
    """Class id per row (-1 suppressed) from the chosen algorithm and mode."""
    if algorithm == "sbca":
        labels = sbca(data, k, leftover=leftover, progress=progress)
        return ClusterRun(labels, algorithm, "exact", "one block, numpy")
    if algorithm == "mondrian":
        return ClusterRun(mondrian(data, k), algorithm, "exact", "strict median partitioning")
    if algorithm == "kmember":
        return ClusterRun(kmember(data, k), algorithm, "exact", "greedy k-member clustering")
    if algorithm in ("datafly", "incognito"):
        run = datafly if algorithm == "datafly" else incognito
        labels = run(data, k, dict(hierarchies or {}), max_suppression=max_suppression)
        return ClusterRun(labels, algorithm, "exact",
                          f"full-domain recoding, suppression budget {max_suppression:g}")
    raise ValueError(f"unknown algorithm {algorithm!r}")
