"""The default path's kernels: from the module built at install, else numba's JIT.

:func:`greedy_pass`, :func:`finish` and :func:`hilbert_keys` run the kernels of
:mod:`.sbcx_kernels`. They call ``sbc_sql.cluster.sbca_plus._aot`` (compiled by ``pip install``, see
:mod:`.aot`) when it is there, was built from the kernels' current source and has the
arguments' types; otherwise numba's JIT, imported on first use. Both compile the same
source, so they give the same classes. ``SBC_SQL_KERNELS=jit`` in the environment forces
the JIT (to compare the two).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
from types import ModuleType

import numpy as np

from .aot import fingerprint

#: numba is importable (it is a dependency; without it the kernels run as Python)
HAVE_NUMBA = importlib.util.find_spec("numba") is not None

_CODE_TYPES = {np.dtype(np.uint8): "u1", np.dtype(np.uint16): "u2", np.dtype(np.int32): "i4"}


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
    """Which compiled code the default path runs: 'ahead-of-time', 'jit' or 'python'."""
    if ahead_of_time() is not None:
        return "ahead-of-time"
    return "jit" if HAVE_NUMBA else "python"


def _jit() -> ModuleType:
    from . import kernels as sbcx_kernels

    return sbcx_kernels


def _contiguous(args: tuple) -> bool:
    return all(a.flags.c_contiguous for a in args if isinstance(a, np.ndarray))


def _call(kernel: str, codes: int, args: tuple):
    """``kernel(*args)``: the export for the code type of ``args[codes]`` when there is one."""
    module = ahead_of_time()
    width = _CODE_TYPES.get(args[codes].dtype)
    fn = getattr(module, f"{kernel}_{width}", None) if module is not None and width else None
    if fn is None or not _contiguous(args):
        fn = getattr(_jit(), kernel)
    return fn(*args)


def greedy_pass(*args) -> int:
    return _call("greedy_pass", 5, args)


def finish(*args) -> None:
    _call("finish", 4, args)


def hilbert_keys(*args) -> None:
    _call("hilbert_keys", 3, args)
