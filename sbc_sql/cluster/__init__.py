"""Clustering algorithms over columnar QI arrays; no database access here."""

from .blocks import blocked, choose_mode, estimate_memory, make_blocks
from .leftover import LEFTOVER_MODES
from .model import SUPPRESSED, QIData
from .sbca_paper import sbca
from .sbca_plus.algorithm import sbca_plus
from .similarity import Contingency

__all__ = [
    "LEFTOVER_MODES",
    "SUPPRESSED",
    "Contingency",
    "QIData",
    "blocked",
    "choose_mode",
    "estimate_memory",
    "make_blocks",
    "sbca",
    "sbca_plus",
]
