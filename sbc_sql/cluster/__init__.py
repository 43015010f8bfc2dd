"""Clustering algorithms over columnar QI arrays; no database access here."""

from .blocks import blocked, choose_mode, estimate_memory, make_blocks
from .leftover import LEFTOVER_MODES
from .model import SUPPRESSED, QIData
from .sbca_paper import sbca
from .sbca_plus.algorithm import sbca_plus
from .sbca_plus.compiled import HAVE_NUMBA
from .similarity import Contingency

__all__ = [
    "HAVE_NUMBA",
    "LEFTOVER_MODES",
    "SUPPRESSED",
    "CompiledSBCA",
    "Contingency",
    "QIData",
    "blocked",
    "choose_mode",
    "estimate_memory",
    "make_blocks",
    "sbca",
    "sbca_compiled",
    "sbca_plus",
]


def __getattr__(name: str):
    # the paper's kernels (numba) load on first use, not with the package
    if name in ("CompiledSBCA", "sbca_compiled"):
        from . import sbca_paper_kernels as kernel

        return getattr(kernel, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
