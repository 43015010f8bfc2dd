"""The default path's kernels: from the module built at install, else numba's JIT.

:func:`greedy_pass`, :func:`finish` and :func:`hilbert_keys` run the entry kernels of
:mod:`.kernels`, each given a mapping of its arguments by name (:mod:`.args` declares them
and their order). They call ``sbc_sql.cluster.sbca_plus._aot`` (compiled by ``pip install``,
see :mod:`.aot`) when it is there, was built from the kernels' current source and has the
arguments' types; otherwise numba's JIT, imported on first use. Both compile the same
source, so they give the same classes. ``SBC_SQL_KERNELS=jit`` in the environment forces
the JIT (to compare the two).

Ctrl-C: a compiled kernel holds the thread that calls it until it returns, and Python runs
its signal handlers in the main thread only between its own steps. So a kernel that takes
a ``stop`` flag (``greedy_pass``, ``finish``), called from the main thread, runs on a helper
thread while the main thread waits; on KeyboardInterrupt (or any exception) the flag is
set, the kernel returns at its next check (the next class, the next row of a refinement
pass), and the exception goes on. Block mode's worker threads call the kernels directly and
share one flag, which :func:`..blocks.blocked` sets.
"""

from __future__ import annotations

import functools
import importlib
import os
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as wait_for
from types import ModuleType

import numpy as np

from .aot import fingerprint
from .args import KERNELS, call_args

_CODE_TYPES = {np.dtype(np.uint8): "u1", np.dtype(np.uint16): "u2", np.dtype(np.int32): "i4"}
#: kernel -> position of the argument whose dtype picks the export
_CODES_AT = {name: kernel.codes_index() for name, kernel in KERNELS.items()}


@functools.cache
def ahead_of_time() -> ModuleType | None:
    """The module built at install, if present, current and not switched off."""
    if os.environ.get("SBC_SQL_KERNELS", "").lower() == "jit":
        return None
    try:
        module = importlib.import_module(f"{__package__}._aot")
    except ImportError:  # not built (no compiler at install), or built for another numpy
        return None
    return module if module.fingerprint() == fingerprint() else None


def engine() -> str:
    """Which compiled code the default path runs: 'ahead-of-time' or 'jit'."""
    return "ahead-of-time" if ahead_of_time() is not None else "jit"


#: an entry kernel as called: its arguments in args.py's order; its result, a count or None
EntryKernel = Callable[..., int | None]


def jit_kernel(kernel: str) -> EntryKernel:
    """The numba dispatcher of an entry kernel (imports numba on first use)."""
    module = importlib.import_module(f"{__package__}.kernels.{KERNELS[kernel].module}")
    dispatcher: EntryKernel = getattr(module, kernel)
    return dispatcher


def _contiguous(args: tuple) -> bool:
    return all(a.flags.c_contiguous for a in args if isinstance(a, np.ndarray))


def _call(kernel: str, values: Mapping[str, object]) -> int | None:
    """``kernel`` on ``values``: the export for the arguments' code type when there is one."""
    args = call_args(kernel, values)
    module = ahead_of_time()
    width = _CODE_TYPES.get(args[_CODES_AT[kernel]].dtype)
    fn: EntryKernel | None = (
        getattr(module, f"{kernel}_{width}", None) if module is not None and width else None
    )
    if fn is None or not _contiguous(args):
        fn = jit_kernel(kernel)
    stop = values.get("stop")
    if isinstance(stop, np.ndarray) and threading.current_thread() is threading.main_thread():
        return _stoppable(fn, args, stop)
    return fn(*args)


@functools.cache
def _helper() -> ThreadPoolExecutor:
    """The thread the main thread's kernel calls run on (one: the main thread waits)."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="sbc-kernel")


def _stoppable(fn: EntryKernel, args: tuple, stop: np.ndarray) -> int | None:
    """``fn(*args)`` on the helper thread while this (the main) thread waits, so that Ctrl-C
    is seen at once: then ``stop[0]`` is set, the kernel returns at its next check, and the
    interruption goes on."""
    future = _helper().submit(fn, *args)
    try:
        return future.result()
    except BaseException:
        stop[0] = True
        wait_for([future])
        raise


def greedy_pass(values: Mapping[str, object]) -> int:
    placed = _call("greedy_pass", values)
    assert placed is not None  # greedy_pass returns an i8 (args.py)
    return placed


def finish(values: Mapping[str, object]) -> None:
    _call("finish", values)


def hilbert_keys(values: Mapping[str, object]) -> None:
    _call("hilbert_keys", values)
