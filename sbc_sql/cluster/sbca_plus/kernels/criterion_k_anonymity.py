"""k-anonymity's compiled twin (see :mod:`.criteria`): a class of at least k rows.

The kernels keep k by construction; this states the condition as the other criteria do, for
the test that holds every criterion's three forms together. Parameters: ``crit_i[io]`` = k.
"""

from __future__ import annotations

from numba import njit


@njit(cache=True, nogil=True)
def ok(cnt, a, b, size, sp, ordered, crit_i, io, crit_f, fo):
    return size >= crit_i[io]
