"""The one envelope of every ``--json`` output, and of the summaries the SQL functions return.

Every document starts with the same three keys::

    {"schema": "sbc-sql/<command>", "version": N, "ok": true, ...the command's fields...}

and an error, under ``--json``, is a document too (on stdout, the exit code unchanged)::

    {"schema": "sbc-sql/<command>", "version": N, "ok": false,
     "error": {"kind": "input", "message": "the Error: line's text"}}

The JSON Schema of each command's document is ``sbc_sql/schemas/<command>.json``; docs/json.md
describes every key. ``version`` grows when a key is renamed, moved or removed (a key added
keeps it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .run import Result
    from .run.refresh import Refreshed

#: each command's document and its version (evaluate's and profile's were version 1 under
#: an integer "schema" before the envelope)
VERSIONS: dict[str, int] = {
    "anonymize": 1,
    "refresh": 1,
    "measure": 1,
    "verify": 1,
    "evaluate": 2,
    "profile": 2,
    "compare": 1,
    "suggest-k": 1,
    "cluster": 1,
}

#: what an error document's "kind" says, by what went wrong
KINDS = (
    "usage",  # an unknown option, a bad choice, conflicting flags (exit 2)
    "config",  # the --config file cannot be used (exit 2)
    "input",  # bad input: a missing table, a column in two roles, k too large (exit 1)
    "verification",  # the release fails verification (exit 1; verify: 3)
    "resource",  # the run would not fit in memory (exit 1)
    "engine",  # the database could not run it: a full disk, a locked file (exit 1)
    "interrupted",  # Ctrl-C or SIGTERM; nothing written (exit 130)
    "internal",  # a fault of sbc-sql's, named by its type only (exit 1)
)

SCHEMAS = Path(__file__).with_name("schemas")


def name(command: str) -> str:
    return f"sbc-sql/{command}"


def document(command: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """A command's result in the envelope."""
    return {"schema": name(command), "version": VERSIONS[command], "ok": True, **fields}


def error(command: str, kind: str, message: str, **fields: Any) -> dict[str, Any]:
    """A command's error in the envelope: its kind (one of :data:`KINDS`) and the line the
    command prints after ``Error:``."""
    assert kind in KINDS, kind
    return {
        "schema": name(command),
        "version": VERSIONS[command],
        "ok": False,
        **fields,
        "error": {"kind": kind, "message": message},
    }


def dumps(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, indent=2)


def schema(command: str) -> dict[str, Any]:
    """The JSON Schema of a command's document (the file shipped in the package)."""
    loaded: dict[str, Any] = json.loads((SCHEMAS / f"{command}.json").read_text(encoding="utf-8"))
    return loaded


# ---- the documents of a run, a measure and a verification


def summary_dict(result: Result) -> dict[str, object]:
    """The run's summary, ``anonymize --json``'s document (and what sbc.anonymize returns)."""
    m = result.measures
    assert m is not None
    return document(
        "anonymize",
        {
            "release": result.release,
            "view": result.view,
            "k": result.plan.k,
            "mode": result.mode,
            "tuples": result.tuples,
            **m.as_dict(),
            **_recode_dict(result),
            **({"criteria": _criteria_dict(result)} if result.criteria else {}),
            **_limits_dict(result),
            **_population_dict(result),
            **({"suppressed_by": result.suppressed_by} if result.suppressed_by else {}),
            "seconds": {s: round(t, 4) for s, t in result.timings.items()},
        },
    )


def _recode_dict(result: Result) -> dict[str, object]:
    """A microaggregated release's recode and each QI's aggregate (generalized: no key)."""
    if result.plan.options.recode == "generalize":
        return {}
    return {
        "recode": result.plan.options.recode,
        "aggregates": {c.name: c.aggregate for c in result.plan.qis},
    }


def _limits_dict(result: Result) -> dict[str, object]:
    """The per-column limits the release was verified to keep (none: no key)."""
    o = result.plan.options
    if not (o.max_width or o.max_values):
        return {}
    return {"limits": {"max_width": dict(o.max_width), "max_values": dict(o.max_values)}}


#: what a release achieves of k-map and delta-presence (privacy/population.py's figures)
POPULATION_FIGURES = ("fewest_population_matches", "smallest_delta", "largest_delta")


def _population_dict(result: Result) -> dict[str, object]:
    """k-map and delta-presence as asked and achieved (no --population: no key)."""
    p = result.plan.options.population
    if p.table is None:
        return {}
    asked: dict[str, object] = {} if p.k_map is None else {"k_map": p.k_map}
    if p.delta:
        asked["delta_min"], asked["delta_max"] = p.bounds
    achieved = {key: round(result.achieved[key], 6) for key in POPULATION_FIGURES if key in result.achieved}
    return {"population": {"table": p.table, "asked": asked, "achieved": achieved}}


def _criteria_dict(result: Result) -> dict[str, object]:
    c = result.criteria
    assert c is not None
    asked = {key: v for criterion in c.asked_on() for key, v in criterion.summary().items()}
    return {
        "asked": {key: v for key, v in asked.items() if v is not None},
        "sensitive": [col.name for col in result.plan.sensitive],
        "achieved": {key: round(v, 6) for key, v in result.achieved.items() if key not in POPULATION_FIGURES},
    }


def measure_dict(m: Any) -> dict[str, Any]:
    """``measure --json``'s document (and what sbc.measure returns)."""
    return document("measure", m.as_dict())


def verify_dict(verdict: Any) -> dict[str, Any]:
    """``verify --json``'s document (and what sbc.verify returns): ok false with an error of
    kind verification, whose message is the first problem, when the release fails."""
    fields = {
        "k": verdict.k,
        "problems": list(verdict.problems),
        "facts": dict(verdict.facts),
        "notes": list(verdict.notes),
    }
    if verdict.ok:
        return document("verify", fields)
    return error("verify", "verification", verdict.problems[0], **fields)


def refresh_dict(refreshed: Refreshed) -> dict[str, object]:
    """``refresh --json``'s document (and what sbc.refresh returns): the version made, the
    rows added and where, the rows pending and why."""
    return document("refresh", refreshed.as_dict())
