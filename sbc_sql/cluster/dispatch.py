"""Choose and run a clustering algorithm over a QIData."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .model import QIData
from .sbca import sbca

Progress = Callable[[int, int], None]

ALGORITHMS = ("sbca",)


@dataclass(frozen=True)
class ClusterRun:
    labels: np.ndarray
    algorithm: str
    mode: str
    detail: str


def run_clustering(data: QIData, k: int, *, algorithm: str = "sbca", mode: str = "auto",
                   leftover: str = "nearest", workers: int | None = None,
                   progress: Progress | None = None) -> ClusterRun:
    """Class id per row (-1 suppressed) from the chosen algorithm and mode."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}")
    labels = sbca(data, k, leftover=leftover, progress=progress)
    return ClusterRun(labels, algorithm, "exact", "one block, numpy")
