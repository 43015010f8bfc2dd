"""The privacy criteria on top of k, for one class, in the kernels (numba).

The same conditions as :meth:`sbc_sql.cluster.sensitive.Rule.column_ok`, over the flat arrays
of :meth:`~sbc_sql.cluster.sensitive.Rule.kernel_arrays`: a class's value counts ``cnt`` on
one value axis of every sensitive column (column s's values at ``soff[s]`` .. ``soff[s + 1]``),
the input shares ``sp``, the beta caps ``scap`` (margin included; inf without beta), the
ordered flags ``sord``, ``crit_i`` = [l, entropy, t asked, beta asked], ``crit_f`` = [t, beta].
A test compares the two on random counts.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: the same margins as sbc_sql.cluster.sensitive (this folder imports nothing of the package;
#: a test checks that they agree)
MARGIN = 1e-9
ENTROPY_TIE = 1e-13


@njit(cache=True, nogil=True, inline="always")
def active(crit_i):
    """Whether any criterion besides k is asked."""
    return crit_i[0] > 0 or crit_i[2] != 0 or crit_i[3] != 0


@njit(cache=True, nogil=True)
def column_ok(cnt, a, b, size, sp, scap, ordered, crit_i, crit_f):
    """Whether a class of ``size`` rows with counts ``cnt[a:b]`` of one column's values keeps
    every criterion (by the margin more than verification asks)."""
    if size <= 0:
        return False
    l_div = crit_i[0]
    if l_div > 0:
        if crit_i[1] != 0:
            s = 0.0
            for v in range(a, b):
                c = cnt[v]
                if c > 0:
                    q = c / size
                    s += q * np.log(q)
            if -s < np.log(l_div) - ENTROPY_TIE:
                return False
        else:
            present = 0
            for v in range(a, b):
                if cnt[v] > 0:
                    present += 1
            if present < l_div:
                return False
    if crit_i[2] != 0:
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
        if d > crit_f[0] - MARGIN:
            return False
    if crit_i[3] != 0:
        for v in range(a, b):
            c = cnt[v]
            # only values above their input share are bounded (the cap is at least the share)
            if c > sp[v] * size and c > scap[v] * size:
                return False
    return True


@njit(cache=True, nogil=True)
def first_failing(cnt, size, soff, sp, scap, sord, crit_i, crit_f):
    """The first sensitive column the class fails, or -1 when it keeps every criterion."""
    for s in range(sord.shape[0]):
        if not column_ok(cnt, soff[s], soff[s + 1], size, sp, scap, sord[s], crit_i, crit_f):
            return s
    return -1


@njit(cache=True, nogil=True)
def lacking_mode(cnt, size, s, soff, crit_i):
    """Whether the rows that repair column s are those of a value the class lacks (distinct
    l-diversity short of l values), rather than those of a value below its input share."""
    if crit_i[0] <= 0 or crit_i[1] != 0:
        return False
    present = 0
    for v in range(soff[s], soff[s + 1]):
        if cnt[v] > 0:
            present += 1
    return present < crit_i[0]


@njit(cache=True, nogil=True, inline="always")
def helpful(v, cnt, size, lacking, sp):
    """Whether a row of value v (on the failing column's axis) repairs the class, as
    :meth:`~sbc_sql.cluster.sensitive.Rule.helpful` says."""
    if lacking:
        return cnt[v] == 0
    return cnt[v] < sp[v] * max(size, 1)


@njit(cache=True, nogil=True)
def members_ok(head_c, nxt, out, inn, scode, scnt, soff, sp, scap, sord, crit_i, crit_f):
    """Whether the class whose member list starts at ``head_c`` (linked by ``nxt``) keeps the
    criteria without row ``out`` and with row ``inn`` (-1: none). ``scnt`` is zeros on entry
    and on return."""
    size = 0
    i = head_c
    while i >= 0:
        if i != out:
            size += 1
            for s in range(scode.shape[0]):
                scnt[scode[s, i]] += 1
        i = nxt[i]
    if inn >= 0:
        size += 1
        for s in range(scode.shape[0]):
            scnt[scode[s, inn]] += 1
    ok = first_failing(scnt, size, soff, sp, scap, sord, crit_i, crit_f) < 0
    i = head_c
    while i >= 0:
        for s in range(scode.shape[0]):
            scnt[scode[s, i]] = 0
        i = nxt[i]
    if inn >= 0:
        for s in range(scode.shape[0]):
            scnt[scode[s, inn]] = 0
    return ok
