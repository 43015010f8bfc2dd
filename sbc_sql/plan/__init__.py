"""Plan a run: everything decided before the data is read.

* :mod:`.options`: what the user asked for and the options' own limits;
* :mod:`.roles`: each column's role (flags win over comments; with no QI named anywhere an
  undeclared column is a QI; with QIs named an undeclared column is an error naming the
  flags that declare it), and the direct identifiers refused unless declared;
* :mod:`.make`: :func:`make_plan`, the roles resolved and every check that needs no data;
* :mod:`.checks`: the checks against the algorithm, the catalog and the row count;
* :mod:`.paths`: the local files a run writes;
* :mod:`.decided`: the :class:`Plan` itself.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..model import ROLES, Column, release_objects_of
    from .checks import RESERVED, Identities, check_output, check_rows
    from .decided import CLASS_SIZE, Plan, release_names, scaled_weights
    from .make import make_plan
    from .options import (
        MEMORY_LIMIT,
        MEMORY_UNITS,
        MIN_MEMORY_LIMIT,
        MODES,
        Background,
        Options,
        Population,
        check_csv_options,
        check_memory_limit,
        machine_memory,
        memory_bytes,
        parse_limits,
        parse_weights,
        split_names,
        whole_k,
    )
    from .paths import (
        EXPORT_FORMATS,
        check_out_file,
        check_target_db,
        check_writable_path,
        export_format,
        same_file,
        target_alias,
    )
    from .roles import (
        COMMENT_PREFIX,
        FLAG_OF_ROLE,
        IDENTIFIER_MIN_ROWS,
        IDENTIFIER_SHARE,
        IDENTIFIER_WORDS,
        check_identifiers,
        comment_role,
        declared_roles,
        identifier_evidence,
        identifier_word,
        name_words,
    )

#: where the names below live, searched in this order on first use: importing the package
#: loads none of them, so that :mod:`.catalogue` (the options, read by the command line at
#: every start) comes without numpy, Arrow or sqlglot
_HOMES = ("..model", ".checks", ".decided", ".make", ".options", ".paths", ".roles")

__all__ = [
    "CLASS_SIZE",
    "COMMENT_PREFIX",
    "EXPORT_FORMATS",
    "FLAG_OF_ROLE",
    "IDENTIFIER_MIN_ROWS",
    "IDENTIFIER_SHARE",
    "IDENTIFIER_WORDS",
    "MEMORY_LIMIT",
    "MEMORY_UNITS",
    "MIN_MEMORY_LIMIT",
    "MODES",
    "RESERVED",
    "ROLES",
    "Background",
    "Column",
    "Identities",
    "Options",
    "Plan",
    "Population",
    "check_csv_options",
    "check_identifiers",
    "check_memory_limit",
    "check_out_file",
    "check_output",
    "check_rows",
    "check_target_db",
    "check_writable_path",
    "comment_role",
    "declared_roles",
    "export_format",
    "identifier_evidence",
    "identifier_word",
    "machine_memory",
    "make_plan",
    "memory_bytes",
    "name_words",
    "parse_limits",
    "parse_weights",
    "release_names",
    "release_objects_of",
    "same_file",
    "scaled_weights",
    "split_names",
    "target_alias",
    "whole_k",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        for home in _HOMES:
            module = importlib.import_module(home, __name__)
            if hasattr(module, name):
                value = getattr(module, name)
                globals()[name] = value
                return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
