"""beta-likeness's compiled twin (see :mod:`.criteria`; the array rule is
:class:`sbc_sql.privacy.beta_likeness.BetaLikeness`'s). Parameters: ``crit_f[fo + v]`` =
value v's cap f(p) on the one value axis, the margin included.
"""

from __future__ import annotations

from numba import njit


@njit(cache=True, nogil=True)
def ok(cnt, a, b, size, sp, ordered, crit_i, io, crit_f, fo):
    """No value of ``cnt[a:b]`` above both its input share and its cap."""
    for v in range(a, b):
        c = cnt[v]
        # only values above their input share are bounded (the cap is at least the share)
        if c > sp[v] * size and c > crit_f[fo + v] * size:
            return False
    return True
