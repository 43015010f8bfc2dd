"""The privacy criteria on top of k, for one class, in the kernels (numba).

A run's criteria reach the kernels as a *program* (written by
:meth:`sbc_sql.cluster.sensitive.Rule.kernel_arrays`): ``crit_i[0]`` is the number C of
criteria asked (0: k alone, and the kernels never call in here); criterion e's entry
``crit_i[1 + 3 e: 4 + 3 e]`` is its code, the offset ``io`` of its integer parameters in
``crit_i`` and the offset ``fo`` of its float parameters in ``crit_f``. A class's value
counts ``cnt`` lie on one value axis of every sensitive column (column s's values at
``soff[s]`` .. ``soff[s + 1]``), beside the input shares ``sp`` and the ordered flags ``sord``.

Each criterion's compiled twin is its own module here, ``criterion_<name>.py``, with

* ``ok(cnt, a, b, size, sp, ordered, crit_i, io, crit_f, fo)``: whether a class of ``size``
  rows (at least 1) with counts ``cnt[a:b]`` of one column keeps the criterion, by the margin
  more than verification asks;
* optionally ``repair(...)`` (same arguments): which rows repair a class that fails, a bound
  b >= 0 (the rows of a value whose count is below b) or -1 (no say: the rows of a value
  below its input share).

Its code is its rank among those modules (:func:`criterion_codes`). The dispatch below is
built from them when this module loads, one numba function per criterion chained on the code,
so that a new criterion needs its module and nothing here; the entry kernels compile it in,
for the JIT (whose cache holds it with them) as for the ahead-of-time module. A test holds
every criterion's twin to its array rule and its SQL.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType

from numba import njit

from . import criterion_codes
from .margins import ENTROPY_TIE, MARGIN

__all__ = [
    "ENTROPY_TIE",
    "MARGIN",
    "active",
    "column_ok",
    "first_failing",
    "helpful",
    "members_ok",
    "rows_ok",
]

#: no say on the repair: the rows of a value below its input share repair the class
BELOW_SHARE = -1


def _twins() -> list[tuple[int, ModuleType]]:
    """(code, module) of every criterion's kernel module."""
    return [
        (code, importlib.import_module(f"{__package__}.{stem}")) for stem, code in criterion_codes().items()
    ]


@njit(nogil=True)
def _keeps(code, cnt, a, b, size, sp, ordered, crit_i, io, crit_f, fo):
    return True  # no criterion of that code


@njit(nogil=True)
def _no_say(code, cnt, a, b, size, sp, ordered, crit_i, io, crit_f, fo):
    return BELOW_SHARE


def _chain(twins: list[tuple[int, ModuleType]], name: str, last: Callable) -> Callable:
    """A numba function (code, *args) that calls ``module.<name>(*args)`` of the module with
    that code (``last`` for none, or a module without one)."""
    rest = last
    for code, module in reversed(twins):
        if hasattr(module, name):
            rest = _link(code, getattr(module, name), rest)
    return rest


def _link(code: int, fn: Callable, rest: Callable) -> Callable:
    @njit(nogil=True)
    def call(c, cnt, a, b, size, sp, ordered, crit_i, io, crit_f, fo):
        if c == code:
            return fn(cnt, a, b, size, sp, ordered, crit_i, io, crit_f, fo)
        return rest(c, cnt, a, b, size, sp, ordered, crit_i, io, crit_f, fo)

    return call


_TWINS = _twins()
#: criterion_ok(code, cnt, a, b, size, sp, ordered, crit_i, io, crit_f, fo)
criterion_ok = _chain(_TWINS, "ok", _keeps)
#: criterion_repair(code, ...): the repair bound of the criterion of that code
criterion_repair = _chain(_TWINS, "repair", _no_say)


@njit(cache=True, nogil=True, inline="always")
def active(crit_i):
    """Whether any criterion besides k is asked."""
    return crit_i[0] > 0


@njit(cache=True, nogil=True)
def column_ok(cnt, a, b, size, sp, ordered, crit_i, crit_f):
    """Whether a class of ``size`` rows with counts ``cnt[a:b]`` of one column's values keeps
    every criterion of the program."""
    if size <= 0:
        return False
    for e in range(crit_i[0]):
        at = 1 + 3 * e
        if not criterion_ok(
            crit_i[at], cnt, a, b, size, sp, ordered, crit_i, crit_i[at + 1], crit_f, crit_i[at + 2]
        ):
            return False
    return True


@njit(cache=True, nogil=True)
def first_failing(cnt, size, soff, sp, sord, crit_i, crit_f):
    """The first sensitive column the class fails, or -1 when it keeps every criterion."""
    for s in range(sord.shape[0]):
        if not column_ok(cnt, soff[s], soff[s + 1], size, sp, sord[s], crit_i, crit_f):
            return s
    return -1


@njit(cache=True, nogil=True)
def repair_bound(cnt, size, s, soff, sp, sord, crit_i, crit_f):
    """Which rows repair column s of the class: the first criterion's bound that has a say
    (see the module docstring), else -1 (the rows of a value below its input share)."""
    a = soff[s]
    b = soff[s + 1]
    for e in range(crit_i[0]):
        at = 1 + 3 * e
        bound = criterion_repair(
            crit_i[at], cnt, a, b, size, sp, sord[s], crit_i, crit_i[at + 1], crit_f, crit_i[at + 2]
        )
        if bound != BELOW_SHARE:
            return bound
    return BELOW_SHARE


@njit(cache=True, nogil=True, inline="always")
def helpful(v, cnt, size, bound, sp):
    """Whether a row of value v (on the failing column's axis) repairs the class, as
    :meth:`~sbc_sql.cluster.sensitive.Rule.helpful` says, given the column's
    :func:`repair_bound`."""
    if bound != BELOW_SHARE:
        return cnt[v] < bound
    return cnt[v] < sp[v] * max(size, 1)


@njit(cache=True, nogil=True)
def members_ok(head_c, nxt, out, inn, scode, scnt, soff, sp, sord, crit_i, crit_f):
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
    ok = first_failing(scnt, size, soff, sp, sord, crit_i, crit_f) < 0
    i = head_c
    while i >= 0:
        for s in range(scode.shape[0]):
            scnt[scode[s, i]] = 0
        i = nxt[i]
    if inn >= 0:
        for s in range(scode.shape[0]):
            scnt[scode[s, inn]] = 0
    return ok


@njit(cache=True, nogil=True)
def rows_ok(rows, a, b, scode, scnt, soff, sp, sord, crit_i, crit_f):
    """Whether the rows ``rows[a:b]`` as one class keep the criteria. ``scnt`` is zeros on
    entry and on return."""
    for t in range(a, b):
        for s in range(scode.shape[0]):
            scnt[scode[s, rows[t]]] += 1
    ok = first_failing(scnt, b - a, soff, sp, sord, crit_i, crit_f) < 0
    for t in range(a, b):
        for s in range(scode.shape[0]):
            scnt[scode[s, rows[t]]] = 0
    return ok
