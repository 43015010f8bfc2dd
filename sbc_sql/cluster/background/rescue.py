"""Rescue: a row phase 2 left out joins the nearest class of its group that stays beta-like.

Nearest by the class's generalised values (numeric midpoints, categorical value sets;
see :meth:`.space.Space.representative_distances`), ties by class order. Adding a row keeps
k, and within a phase-1 group every pair stays within J, so only beta-likeness is checked.
A row no class can take stays out.
"""

from __future__ import annotations

import numpy as np

from .likeness import Likeness
from .space import Space, Stacked


def rescue(
    space: Space, classes: list[np.ndarray], left: np.ndarray, like: Likeness
) -> tuple[list[np.ndarray], np.ndarray]:
    """(classes with rescued rows added, rows still left)."""
    if not classes or not len(left):
        return classes, left
    stacked = Stacked([space.summary(c) for c in classes])
    members = [list(c) for c in classes]
    still = []
    for i in left:
        i = int(i)
        d = space.representative_distances(i, stacked)
        value = space.codes[i]
        for c in np.argsort(d, kind="stable"):
            counts = stacked.counts[c].copy()
            counts[value] += 1
            if like.ok(counts, int(stacked.size[c]) + 1):
                stacked.add(int(c), space.summary(np.array([i])))
                members[c].append(i)
                break
        else:
            still.append(i)
    return [np.sort(np.array(c, dtype=np.int64)) for c in members], np.array(still, dtype=np.int64)
