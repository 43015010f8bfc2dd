"""sbc-sql: k-anonymization inside DuckDB, PostgreSQL or Apache Spark with Similarity-Based
Clustering.

Public API: :func:`anonymize`, :func:`refresh` (an incremental release's new rows),
:func:`measure`, :func:`verify`, :func:`evaluate`, :func:`profile`, :func:`suggest_k`,
:func:`report` (a release's HTML report), their
:class:`Result`, :class:`Evaluation`, :class:`Profile`, :class:`Suggestion` and
:class:`Report`, and the errors they raise. Their errors speak in keywords (``k=2``); the
command line calls the same functions and speaks in flags.

The names are imported on first use: importing the package itself loads nothing heavy, so
the command line can install its signal handlers before DuckDB, numpy and the kernels load
(about a second), and Ctrl-C at start-up stops it as cleanly as later.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .version import __version__

if TYPE_CHECKING:
    from .api import measure, verify
    from .errors import (
        EngineError,
        InputError,
        OutputExistsError,
        ResourceError,
        RoleError,
        SbcError,
        VerificationError,
    )
    from .quality.evaluate import Evaluation, evaluate
    from .quality.html_report import Report, report
    from .quality.profile import Profile, profile
    from .quality.suggest import Suggestion, suggest_k
    from .querying import query_helpers
    from .run import Result, anonymize
    from .run.refresh import Refreshed, refresh

__all__ = [
    "EngineError",
    "Evaluation",
    "InputError",
    "OutputExistsError",
    "Profile",
    "Refreshed",
    "Report",
    "ResourceError",
    "Result",
    "RoleError",
    "SbcError",
    "Suggestion",
    "VerificationError",
    "__version__",
    "anonymize",
    "evaluate",
    "measure",
    "profile",
    "query_helpers",
    "refresh",
    "report",
    "suggest_k",
    "verify",
]

#: each public name and the module it lives in
_HOMES = {
    "Evaluation": "quality.evaluate",
    "Profile": "quality.profile",
    "Report": "quality.html_report",
    "Result": "run",
    "Suggestion": "quality.suggest",
    "suggest_k": "quality.suggest",
    "anonymize": "run",
    "refresh": "run.refresh",
    "Refreshed": "run.refresh",
    "evaluate": "quality.evaluate",
    "measure": "api",
    "profile": "quality.profile",
    "query_helpers": "querying",
    "report": "quality.html_report",
    "verify": "api",
    **dict.fromkeys(
        (
            "EngineError",
            "InputError",
            "OutputExistsError",
            "ResourceError",
            "RoleError",
            "SbcError",
            "VerificationError",
        ),
        "errors",
    ),
}
#: the functions whose errors are reworded in a Python caller's terms
_FUNCTIONS = ("anonymize", "evaluate", "measure", "profile", "refresh", "report", "suggest_k", "verify")


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        value = getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
        if name in _FUNCTIONS:
            from .api import speaks_python

            value = speaks_python(value)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
