"""Clustering algorithms over columnar QI arrays; no database access here."""

from .blocks import blocked, choose_mode, estimate_memory, make_blocks
from .kernel import HAVE_NUMBA, CompiledSBCA, sbca_compiled
from .leftover import LEFTOVER_MODES
from .model import SUPPRESSED, QIData
from .sbca import sbca
from .sbcx import sbca_plus
from .similarity import Contingency

__all__ = ["HAVE_NUMBA", "LEFTOVER_MODES", "SUPPRESSED", "CompiledSBCA", "Contingency", "QIData",
           "blocked", "choose_mode", "estimate_memory", "make_blocks", "sbca", "sbca_compiled", "sbca_plus"]
