"""t-closeness's compiled twin (see :mod:`.criteria`; the array rule is
:class:`sbc_sql.privacy.t_closeness.TCloseness`'s). Parameters: ``crit_f[fo]`` = t.
"""

from __future__ import annotations

from numba import njit

from .margins import MARGIN


@njit(cache=True, nogil=True)
def ok(cnt, a, b, size, sp, ordered, crit_i, io, crit_f, fo):
    """The EMD between the shares ``cnt[a:b] / size`` and the input's ``sp[a:b]`` (ordered
    or equal ground distance) at most t, by the margin."""
    d = 0.0
    if ordered:
        m = b - a
        if m > 1:
            run = 0.0
            for v in range(a, b):
                run += cnt[v] / size - sp[v]
                d += abs(run)
            d /= m - 1
    else:
        for v in range(a, b):
            d += abs(cnt[v] / size - sp[v])
        d *= 0.5
    return not d > crit_f[fo] - MARGIN
