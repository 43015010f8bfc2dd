"""Generalization hierarchies for the full-domain baselines (Datafly, Incognito).

Read from CSV files in ARX's layout (``--hierarchy col=path``) and mapped onto the QI's
codes; QIs without a file get the default built by the algorithm (numeric intervals
doubling in width, categorical value -> ``*``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

import numpy as np

from .cluster.model import QIData
from .errors import InputError
from .stages.stats import Stats

if TYPE_CHECKING:
    from .cluster.baselines.fulldomain import Hierarchy

#: a hierarchy as a caller gives it, a CSV file or one built; written as a string so that a
#: run without hierarchies (every run but datafly's and incognito's) never loads their module
HierarchySpec: TypeAlias = "str | Path | Hierarchy"


def parse_hierarchy_options(values: list[str] | None) -> dict[str, str]:
    """['age=age.csv', 'zip=zip.csv'] -> {'age': 'age.csv', 'zip': 'zip.csv'}."""
    out: dict[str, str] = {}
    for value in values or ():
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise InputError(f"--hierarchy '{value}' is not of the form column=path.csv")
        out[name.strip()] = path.strip()
    return out


def resolve(data: QIData, stats: Stats, specs: Mapping[str, HierarchySpec] | None) -> dict[str, Hierarchy]:
    """Hierarchy objects by QI name, reading the files given."""
    if not specs:
        return {}
    from .cluster.baselines.fulldomain import Hierarchy, hierarchy_from_csv

    out: dict[str, Hierarchy] = {}
    for name, spec in (specs or {}).items():
        if name not in data.names:
            raise InputError(
                f"--hierarchy names '{name}', which is not a quasi-identifier; "
                f"give hierarchies for QIs only ({', '.join(data.names)})"
            )
        if isinstance(spec, Hierarchy):
            out[name] = spec
            continue
        path = Path(spec)
        if not path.is_file():
            raise InputError(
                f"hierarchy file '{path}' for '{name}' does not exist; pass an "
                "existing CSV file (one row per value, one column per level)"
            )
        q = data.names.index(name)
        if data.numeric[q]:
            col = data.columns[q]
            values = np.unique(col[~np.isnan(col)])
            labels: list[str | None] = [_number_text(v) for v in values] + [None]
            out[name] = hierarchy_from_csv(path, labels, values=values)
        else:
            domain = [None if v is None else str(v) for v in stats.domains[name].to_pylist()]
            if data.cardinality[q] > len(domain):
                domain.append(None)
            out[name] = hierarchy_from_csv(path, domain)
    return out


def _number_text(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))
