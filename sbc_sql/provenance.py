"""A release's provenance: one JSON document saying how the release was made.

``publish`` stores it as the COMMENT of the release view and of its row and class tables,
inside the run's transaction, so it is logged with the run's other statements and rolled
back with them. ``verify`` and ``measure`` read it back to take the run's roles, layout and
weights instead of guessing them from column names, and to hold the release to the counts
the run recorded (a class deleted from both tables is not a suppressed row: the run says
how many it suppressed).

The document holds the sbc-sql version, the algorithm, k, the mode it ran in, every option,
the role of every source column and where that role came from (flag, comment, default),
the QI weights, the privacy models checked, the input, released and suppressed row counts,
the number of classes, the measures and the seconds of each stage so far. It never holds a
cell value: no minimum, maximum or value set of any column, only names, types, counts and
figures over the whole release. Apart from the seconds, the same run gives the same
document (keys in a fixed order, figures rounded to 10 decimals).

The comment is a string literal in the statement (DuckDB's COMMENT takes no bound
parameter); it holds names and figures, never data.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .model import ROLES, Column
from .plan import Plan

#: what the document's "schema" key says, so a comment of one's own is not mistaken for one
SCHEMA = "sbc-sql/provenance"
#: the document's layout; a reader refuses a newer one rather than misread it
SCHEMA_VERSION = 1
DIGITS = 10


class ProvenanceError(ValueError):
    """A comment claims to be a provenance document but is not a valid one."""


@dataclass(frozen=True)
class Provenance:
    """The parts of the document that are read back, checked for their types (``document``
    is all of it)."""

    columns: tuple[Column, ...]
    weights: Mapping[str, float]
    k: int
    input_rows: int
    released: int
    suppressed: int
    classes: int
    document: Mapping[str, Any]


def document(
    plan: Plan,
    *,
    version: str,
    algorithm: str,
    mode: str,
    models: Sequence[Mapping[str, Any]],
    facts: Mapping[str, int],
    measures: Mapping[str, Any] | None,
    timings: Mapping[str, float],
    hierarchies: Sequence[str] = (),
    achieved: Mapping[str, float] | None = None,
    suppressed_by: Mapping[str, int] | None = None,
    views: bool = True,
) -> dict[str, Any]:
    """The provenance of the release ``plan`` describes. ``views``: the engine keeps the
    release's row table and text view (without them, as Spark writes a release, the release
    is its rows and its class table, and the document names only those). ``facts``: the verified counts
    (source_rows, released, suppressed, classes); ``models``: each privacy model checked, its
    name and thresholds (and sensitive column); ``measures``: the measure stage's figures
    (None in a dry run); ``achieved``: what the release achieves of the criteria asked on top
    of k; ``suppressed_by``: suppressed rows per reason."""
    o = plan.options
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "sbc_sql": version,
        "source": plan.display_name,
        "release": {
            "view": plan.output,
            "rows": plan.rows_table if views else None,
            "classes": plan.classes_table,
            "text_view": plan.view if views else None,
        },
        "algorithm": algorithm,
        "k": plan.k,
        "mode": mode,
        "options": {
            "qi": list(o.qi),
            "sensitive": list(o.sensitive),
            "drop": list(o.drop),
            "keep": list(o.keep),
            "allow_determinant": list(o.allow_determinant),
            "output": o.output,
            "replace": o.replace,
            "leftover": o.leftover,
            "weights": {name: float(w) for name, w in o.weights.items()},
            "mode": o.mode,
            "workers": o.workers,
            "algorithm": o.algorithm,
            "max_suppression": o.max_suppression,
            "block_rows": o.block_rows,
            "hierarchies": sorted(hierarchies),
            "max_width": {name: float(w) for name, w in o.max_width.items()},
            "max_values": {name: int(v) for name, v in o.max_values.items()},
            "target": o.target,
            "target_weight": o.target_weight,
            # a microaggregated release's recode: absent from a generalized one's
            **(
                {
                    "recode": o.recode,
                    "aggregate": o.aggregate,
                    "aggregate_categorical": o.aggregate_categorical,
                }
                if o.recode != "generalize"
                else {}
            ),
        },
        "columns": [
            {
                "name": c.name,
                "type": c.type,
                "role": c.role,
                "kind": c.kind,
                "temporal": c.temporal,
                "origin": c.origin,
                # how a microaggregated release shows the QI (absent: generalized)
                **({"aggregate": c.aggregate} if c.aggregate is not None else {}),
            }
            for c in plan.columns
        ],
        "weights": {c.name: w for c, w in zip(plan.qis, plan.weights, strict=True)},
        "privacy_models": [dict(m) for m in models],
        "achieved": _rounded(achieved) if achieved else {},
        "rows": {
            "input": facts.get("source_rows"),
            "released": facts.get("released"),
            "suppressed": facts.get("suppressed"),
            "suppressed_by": dict(suppressed_by or {}),
        },
        "classes": facts.get("classes"),
        "measures": _rounded(measures) if measures is not None else None,
        "seconds": {stage: round(t, 4) for stage, t in timings.items()},
    }


def to_json(doc: Mapping[str, Any]) -> str:
    """One line, keys in the document's order."""
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def parse(text: str | None) -> Provenance | None:
    """The provenance in a comment; None when the comment is not one (absent, or a comment
    of the user's own). Raises :class:`ProvenanceError` when it claims to be one and is not."""
    if not text or SCHEMA not in text:
        return None
    try:
        doc = json.loads(text)
    except ValueError:
        raise ProvenanceError("its provenance comment is not valid JSON") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        return None
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise ProvenanceError(
            f"its provenance has schema version {doc.get('schema_version')!r}; this sbc-sql "
            f"reads version {SCHEMA_VERSION}"
        )
    try:
        columns = tuple(_column(c) for c in doc["columns"])
        rows = doc["rows"]
        weights = {str(name): float(w) for name, w in doc["weights"].items()}
        return Provenance(
            columns=columns,
            weights=weights,
            k=int(doc["k"]),
            input_rows=int(rows["input"]),
            released=int(rows["released"]),
            suppressed=int(rows["suppressed"]),
            classes=int(doc["classes"]),
            document=doc,
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        raise ProvenanceError(
            "its provenance lacks a field verification reads, or holds a wrong type"
        ) from None


def _column(entry: Mapping[str, Any]) -> Column:
    role = entry["role"]
    if role not in ROLES:
        raise ValueError(role)
    kind = entry.get("kind")
    if role == "qi" and kind not in ("numeric", "categorical"):
        raise ValueError(kind)
    return Column(
        str(entry["name"]),
        str(entry["type"]),
        role,
        kind,
        entry.get("temporal"),
        str(entry.get("origin", "default")),
        _aggregate(entry.get("aggregate"), role, kind),
    )


#: how a microaggregated release may show a QI, by its kind
AGGREGATES = {"numeric": ("mean", "median", "mode"), "categorical": ("mode", "values")}


def _aggregate(value: Any, role: str, kind: str | None) -> str | None:
    """A recorded column's aggregate (None: generalized): one its kind takes, on a QI."""
    if value is None:
        return None
    if role != "qi" or value not in AGGREGATES.get(str(kind), ()):
        raise ValueError(value)
    return str(value)


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, DIGITS)
    if isinstance(value, Mapping):
        return {key: _rounded(v) for key, v in value.items()}
    return value
