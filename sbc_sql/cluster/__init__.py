"""Clustering algorithms over columnar QI arrays; no database access here."""

from .blocks import blocked, choose_mode, estimate_memory, make_blocks
from .compiled import HAVE_NUMBA
from .leftover import LEFTOVER_MODES
from .model import SUPPRESSED, QIData
from .sbca import sbca
from .sbcx import sbca_plus
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
        from . import kernel

        return getattr(kernel, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
