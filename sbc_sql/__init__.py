"""sbc-sql: k-anonymization inside DuckDB with Similarity-Based Clustering.

Public API: :func:`anonymize`, :func:`measure`, :func:`verify`, :func:`evaluate`.
"""

from .api import measure, verify
from .errors import SbcError
from .quality.evaluate import Evaluation, evaluate
from .session import Result, anonymize

__all__ = ["Evaluation", "Result", "SbcError", "anonymize", "evaluate", "measure", "verify"]
__version__ = "0.1.0"
