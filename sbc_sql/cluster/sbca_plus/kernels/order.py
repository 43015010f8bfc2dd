"""Hilbert keys: the coarse order's numeric part and block mode's curve (see
:mod:`sbc_sql.cluster.blocks`; an entry kernel)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _hilbert_key(x, bits, spread):
    """Hilbert index of one point (coordinates < 2**bits, d * bits <= 64); x is scratch.

    Skilling's transposition ("Programming the Hilbert curve", 2004) written without
    data-dependent branches, then the bits interleaved through ``spread`` (a byte's bits
    placed d apart), most significant first.
    """
    d = x.shape[0]
    one = np.uint64(1)
    zero = np.uint64(0)
    for level in range(bits - 1, 0, -1):
        q = one << np.uint64(level)
        p = q - one
        for j in range(d):
            m = zero - ((x[j] >> np.uint64(level)) & one)
            x[0] ^= p & m
            t = (x[0] ^ x[j]) & p & ~m
            x[0] ^= t
            x[j] ^= t
    for j in range(1, d):
        x[j] ^= x[j - 1]
    t = zero
    for level in range(bits - 1, 0, -1):
        m = zero - ((x[d - 1] >> np.uint64(level)) & one)
        t ^= ((one << np.uint64(level)) - one) & m
    key = zero
    for j in range(d):
        v = x[j] ^ t
        part = spread[v & np.uint64(255)]
        if bits > 8:
            # only then is 8 * d below 64: a wider shift is undefined in LLVM
            part |= spread[(v >> np.uint64(8)) & np.uint64(255)] << np.uint64(8 * d)
        key |= part << np.uint64(d - 1 - j)
    return key


@njit(cache=True, nogil=True)
def hilbert_keys(nums, lo, span, cats, rank, roff, card, bits, spread, start, end, keys):
    """Hilbert keys of rows start..end-1 into ``keys`` (see blocks._axis_levels for the axes)."""
    levels = 1 << bits
    n_num = nums.shape[0]
    x = np.empty(n_num + cats.shape[0], np.uint64)
    for i in range(start, end):
        for a in range(n_num):
            v = nums[a, i]
            if v != v:
                x[a] = np.uint64(levels - 1)
            else:
                lv = np.floor((v - lo[a]) / span[a] * (levels - 2) + 0.5)
                x[a] = np.uint64(min(max(lv, 0.0), levels - 2.0))
        for c in range(cats.shape[0]):
            r = rank[roff[c] + cats[c, i]]
            x[n_num + c] = np.uint64(r * (levels - 1) // (card[c] - 1))
        keys[i] = _hilbert_key(x, bits, spread)
