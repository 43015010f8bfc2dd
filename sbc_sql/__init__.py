"""sbc-sql: k-anonymization inside DuckDB with Similarity-Based Clustering.

Public API: :func:`anonymize`, :func:`measure`, :func:`verify`, :func:`evaluate`.
"""

from . import api, quality, session
from .errors import InputError, OutputExistsError, ResourceError, RoleError, SbcError, VerificationError
from .quality.evaluate import Evaluation
from .session import Result

# the public functions; their errors speak in keywords (k=2), the command line's in flags
anonymize = api.speaks_python(session.anonymize)
measure = api.speaks_python(api.measure)
verify = api.speaks_python(api.verify)
evaluate = api.speaks_python(quality.evaluate.evaluate)

__all__ = [
    "Evaluation",
    "InputError",
    "OutputExistsError",
    "ResourceError",
    "Result",
    "RoleError",
    "SbcError",
    "VerificationError",
    "anonymize",
    "evaluate",
    "measure",
    "verify",
]
__version__ = "0.1.0"
