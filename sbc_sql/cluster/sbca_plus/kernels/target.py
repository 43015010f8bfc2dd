"""Target labels in the leftovers and the refinement (:mod:`.refine`): how many rows of each
class hold each label, its majority count, and how a row joining or leaving changes how
many rows lie outside that majority (each costs ``tw`` on top of the information loss)."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

#: ``tgt[i]`` row i's label (0 .. n_lab - 1; empty: none), ``tw`` what a row outside its
#: class's majority label costs, ``on`` whether labels count at all (labels given, ``tw`` >
#: 0), ``lc[c, m]`` how many rows of class c hold label m and ``lm[c]`` the most of any label.
Target = namedtuple("Target", ("tgt", "tw", "on", "lc", "lm"))


@njit(cache=True, nogil=True)
def open_target(tgt, n_lab, tw, lab, n_cls):
    """The label counts of the classes in ``lab`` (none when labels do not count)."""
    on = tgt.shape[0] > 0 and tw > 0
    tg = Target(
        tgt,
        tw,
        on,
        np.zeros((n_cls if on else 0, max(n_lab, 1)), dtype=np.int32),
        np.zeros(n_cls if on else 0, dtype=np.int32),
    )
    if on:
        for i in range(lab.shape[0]):
            if lab[i] >= 0:
                label_count(tg.lc, tg.lm, lab[i], tgt[i], 1)
    return tg


@njit(cache=True, nogil=True, inline="always")
def impurity_change(lc, lm, c, out_label, in_label):
    """How many more rows of class c lie outside its majority label once a row of
    ``out_label`` leaves it and one of ``in_label`` joins it (-1: none of either); ``lm[c]``
    is its current majority count."""
    if out_label == in_label:
        return 0
    if out_label < 0:
        # one joins: impurity grows unless its label is (one of) the majority
        return 0 if lc[c, in_label] == lm[c] else 1
    top = 0
    for m in range(lc.shape[1]):
        v = lc[c, m] - (1 if m == out_label else 0) + (1 if m == in_label else 0)
        if v > top:
            top = v
    size_change = (1 if in_label >= 0 else 0) - 1
    return size_change - (top - lm[c])


@njit(cache=True, nogil=True)
def label_count(lc, lm, c, label, step):
    """Class c's count of ``label`` moves by ``step``; its majority count follows."""
    lc[c, label] += step
    if step > 0:
        if lc[c, label] > lm[c]:
            lm[c] = lc[c, label]
    else:
        top = 0
        for m in range(lc.shape[1]):
            if lc[c, m] > top:
                top = lc[c, m]
        lm[c] = top
