"""l-diversity's compiled twin (see :mod:`.criteria`; the array rule is
:class:`sbc_sql.privacy.l_diversity.LDiversity`'s). Parameters: ``crit_i[io]`` = l,
``crit_i[io + 1]`` = 1 for entropy l-diversity, 0 for distinct.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .margins import ENTROPY_TIE


@njit(cache=True, nogil=True)
def ok(cnt, a, b, size, sp, ordered, crit_i, io, crit_f, fo):
    """At least l distinct values among ``cnt[a:b]``, or an entropy of at least ln l."""
    l_div = crit_i[io]
    if crit_i[io + 1] != 0:
        s = 0.0
        for v in range(a, b):
            c = cnt[v]
            if c > 0:
                q = c / size
                s += q * np.log(q)
        return not -s < np.log(l_div) - ENTROPY_TIE
    present = 0
    for v in range(a, b):
        if cnt[v] > 0:
            present += 1
    return present >= l_div


@njit(cache=True, nogil=True)
def repair(cnt, a, b, size, sp, ordered, crit_i, io, crit_f, fo):
    """Distinct l-diversity short of l values: the rows of a value the class lacks (a count
    below 1); otherwise no say (-1)."""
    if crit_i[io + 1] != 0:
        return -1
    present = 0
    for v in range(a, b):
        if cnt[v] > 0:
            present += 1
    return 1 if present < crit_i[io] else -1
