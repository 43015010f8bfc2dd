"""NCP of one QI of a class, for every algorithm's kernels (numba).

The information loss of a class G is ``|G| * sum_q w_q NCP_q(G)``: on a numeric QI its range
over the QI's range (1 when NULL mixes with numbers, 0 when all NULL), on a categorical QI
its distinct values over the QI's cardinality (0 for a single value). :mod:`sbc_sql.cluster.ncp`
is the numpy twin, with the same arithmetic in the same order, so both give the same floats.
"""

from __future__ import annotations

import numpy as np
from numba import njit

INF = np.inf
#: the least fall of the total cost a change of the classes must bring (the refinement's
#: moves and swaps, a pair of classes split anew)
EPS = 1e-9


@njit(cache=True, nogil=True, inline="always")
def num_ncp(lo, hi, nulls, size, span):
    """NCP of a numeric QI of ``size`` rows with bounds lo..hi over its numbers, ``nulls`` of
    them NULL; ``span`` is the QI's range (0 when constant)."""
    if nulls >= size:
        return 0.0  # all NULL (or empty)
    if nulls > 0:
        return 1.0  # NULL mixed with numbers
    if span > 0:
        return (hi - lo) / span
    return 0.0


@njit(cache=True, nogil=True, inline="always")
def num_ncp_with(lo, hi, nulls, size, span, x):
    """NCP of a numeric QI once value x (NaN for NULL) joins rows with these bounds and
    NULL count; ``size`` counts x."""
    if np.isnan(x):
        return num_ncp(lo, hi, nulls + 1, size, span)
    return num_ncp(min(lo, x), max(hi, x), nulls, size, span)


@njit(cache=True, nogil=True, inline="always")
def within_width(lo, hi, x, width):
    """Whether a class with bounds lo..hi (INF..-INF: no number yet) stays within ``width``
    (INF: no limit) once value x (NaN for NULL, which widens nothing) joins it."""
    return np.isnan(x) or max(hi, x) - min(lo, x) <= width


@njit(cache=True, nogil=True, inline="always")
def cat_ncp(distinct, card):
    """NCP of a categorical QI of ``card`` values on a class holding ``distinct`` of them."""
    if distinct > 1:
        return distinct / card
    return 0.0
