"""sbc-sql: k-anonymization inside DuckDB with Similarity-Based Clustering.

Public API: :func:`anonymize`, :func:`measure`, :func:`verify`.
"""

from .api import measure, verify
from .errors import SbcError
from .pipeline import Result, anonymize

__all__ = ["Result", "SbcError", "anonymize", "measure", "verify"]
__version__ = "0.1.0"
