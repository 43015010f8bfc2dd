"""Recursive (c,l)-diversity's compiled twin (see :mod:`.criteria`; the array rule is
:class:`sbc_sql.privacy.recursive_diversity.RecursiveDiversity`'s). Parameters:
``crit_i[io]`` = l, ``crit_f[fo]`` = c with the margin, c (1 - margin).

With a class's counts ranked r1 >= r2 >= ... >= rm, it keeps the criterion iff m >= l and
r1 < c (r_l + ... + r_m). Without sorting (no allocation per check): the l - 1 largest
counts are found by repeated passes, each taking the next smaller count with its
multiplicity, and the tail is the class's size less their sum.
"""

from __future__ import annotations

from numba import njit


@njit(cache=True, nogil=True)
def _top_and_tail(cnt, a, b, size, l_div):
    """(r1, r_l + ... + r_m) as floats, or (r1, -1) when the class holds fewer than l values."""
    top = 0.0
    head = 0.0
    taken = 0
    below = size + 1.0  # every count is below it
    while taken < l_div - 1:
        best = 0.0
        times = 0
        for v in range(a, b):
            c = float(cnt[v])
            if 0 < c < below:
                if c > best:
                    best = c
                    times = 1
                elif c == best:
                    times += 1
        if times == 0:
            return top, -1.0
        if taken == 0:
            top = best
        use = min(times, l_div - 1 - taken)
        head += use * best
        taken += use
        below = best
    present = 0
    for v in range(a, b):
        if cnt[v] > 0:
            present += 1
    if present < l_div:
        return top, -1.0
    return top, size - head


@njit(cache=True, nogil=True)
def ok(cnt, a, b, size, sp, ordered, crit_i, io, crit_f, fo):
    """r1 < c (r_l + ... + r_m), with at least l values in the class."""
    top, tail = _top_and_tail(cnt, a, b, size, crit_i[io])
    return tail >= 0 and top < crit_f[fo] * tail


@njit(cache=True, nogil=True)
def repair(cnt, a, b, size, sp, ordered, crit_i, io, crit_f, fo):
    """A class that fails: the rows of a value that is not the most frequent one (a count
    below r1) repair it; otherwise no say (-1)."""
    if ok(cnt, a, b, size, sp, ordered, crit_i, io, crit_f, fo):
        return -1
    top = 0
    for v in range(a, b):
        top = max(top, int(cnt[v]))
    return top
