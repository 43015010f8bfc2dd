"""Clustering algorithms over columnar QI arrays; no database access here."""

from .leftover import LEFTOVER_MODES
from .model import SUPPRESSED, QIData
from .sbca import sbca
from .similarity import Contingency

__all__ = ["LEFTOVER_MODES", "SUPPRESSED", "Contingency", "QIData", "sbca"]
