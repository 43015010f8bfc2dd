"""sbc-sql: k-anonymization inside DuckDB with Similarity-Based Clustering.

Public API: :func:`anonymize`, :func:`measure`, :func:`verify`, :func:`evaluate`.

The names are imported on first use: importing the package itself loads nothing heavy, so
the command line can install its signal handlers before DuckDB, numpy and the kernels load
(about a second), and Ctrl-C at start-up stops it as cleanly as later.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .api import measure, verify
    from .errors import SbcError
    from .quality.evaluate import Evaluation, evaluate
    from .session import Result, anonymize

__all__ = ["Evaluation", "Result", "SbcError", "anonymize", "evaluate", "measure", "verify"]
__version__ = "0.1.0"

#: each public name and the module it lives in
_HOMES = {
    "Evaluation": "quality.evaluate",
    "Result": "session",
    "SbcError": "errors",
    "anonymize": "session",
    "evaluate": "quality.evaluate",
    "measure": "api",
    "verify": "api",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        value = getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
