"""Where a run's lines go: the log (one line per role and step) and the clustering's
progress, and the log a Python caller gets without one of its own."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable

from ..errors import in_python_terms

Log = Callable[[str], None]
Progress = Callable[[int, int], None]

#: what the cluster step says before a run whose kernels numba compiles first, rather than
#: look hung for the seconds that takes
COMPILING = "compiling the clustering kernels (first run only: 20 to 30 s, cached afterwards)"


def notices(log: Log | None) -> Log | None:
    """The log of a command that prints no steps (compare): only the warnings and the notice
    that the kernels compile reach ``log``."""
    if log is None:
        return None
    said = log

    def told(line: str) -> None:
        if line.startswith("warning: ") or line == COMPILING:
            said(line)

    return told


def warnings_only(line: str) -> None:
    """Without a log, warnings still reach a Python caller (as Python warnings)."""
    if line.startswith("warning: "):
        # attributed to the caller's line, the first frame outside this package
        frame, level = sys._getframe(1), 2
        while frame.f_back is not None and frame.f_globals.get("__name__", "").startswith("sbc_sql"):
            frame, level = frame.f_back, level + 1
        # in a Python caller's terms: keep=[...], not --keep
        warnings.warn(in_python_terms(line.removeprefix("warning: ")), UserWarning, stacklevel=level)
