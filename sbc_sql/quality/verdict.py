"""The release report's verdict: the guarantees the run asked and whether they hold, and the
warnings a demanding reader needs, each written from the report's figures
(:class:`sbc_sql.quality.report_figures.ReportFigures`) against a threshold of
:data:`THRESHOLDS`, the one place they are declared (docs/metrics.md's "The release report" lists
them; a test holds the two to each other).

A warning names columns, counts and figures, never a value of a row.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..privacy import registry
from .report_figures import ReportFigures


@dataclass(frozen=True)
class Threshold:
    """A figure's limit: crossing it is a warning of the verdict."""

    key: str
    value: float
    #: the figure it bounds and which side warns
    figure: str
    #: what crossing it means
    means: str

    @property
    def line(self) -> str:
        """The threshold as the report and docs/metrics.md state it."""
        return f"{self.figure}: {self.value:g}; {self.means}"


THRESHOLDS: tuple[Threshold, ...] = (
    Threshold(
        "t_closeness",
        0.5,
        "t-closeness distance of the sensitive column above, with no t-closeness asked",
        "some class's distribution of it is far from the whole table's, so placing a person "
        "in that class tells much about their value",
    ),
    Threshold(
        "l_diversity",
        2,
        "distinct l of the sensitive column at or below",
        "a person placed in a class is narrowed to that many values of it (1: given away): "
        "weak attribute protection",
    ),
    Threshold(
        "record_linkage_share",
        0.2,
        "record-linkage share above",
        "an attacker who knows a person's quasi-identifiers is expected to link more than "
        "that share of the records to their own row",
    ),
    Threshold(
        "suppressed_share",
        0.05,
        "share of the rows suppressed above",
        "the release leaves out enough rows to bias counts made from it",
    ),
)

#: the thresholds by key
LIMITS: Mapping[str, Threshold] = {t.key: t for t in THRESHOLDS}


@dataclass(frozen=True)
class Finding:
    """A line of the verdict: ``key`` says what it is about (a threshold's key, or
    ``k``, ``determinant``, ``provenance``, ``sensitive``)."""

    key: str
    text: str


@dataclass(frozen=True)
class Verdict:
    #: what the run asked, and whether it holds
    guarantees: tuple[Finding, ...]
    warnings: tuple[Finding, ...]
    #: what could not be judged (no provenance, no sensitive column)
    notes: tuple[Finding, ...]


def _described(record: Mapping[str, Any]) -> str:
    """A privacy model of the provenance as a message names it, with its column."""
    kinds = {kind.name: kind for kind in registry.criteria()}
    kind = kinds.get(str(record.get("name")))
    text = kind.from_record(record).describe() if kind is not None else str(record.get("name"))
    column = record.get("column")
    return f"{text} on '{column}'" if column else text


def verdict(r: ReportFigures) -> Verdict:
    """The guarantees, warnings and notes of the figures ``r`` (this module's docstring)."""
    e, doc = r.evaluation, r.provenance
    guarantees: list[Finding] = []
    warnings: list[Finding] = []
    notes: list[Finding] = []
    asked_k = doc.get("k") if doc else None
    if asked_k is None:
        notes.append(
            Finding(
                "provenance",
                "The release has no provenance: what its run asked is unknown; the figures "
                f"below are measured all the same (its smallest class holds {e.smallest_class:,} rows).",
            )
        )
    elif e.classes and e.smallest_class < int(asked_k):
        warnings.append(
            Finding(
                "k",
                f"k = {asked_k} was asked, but the smallest class holds {e.smallest_class:,} rows: "
                "the release no longer keeps it. Do not publish it; run anonymize again.",
            )
        )
    else:
        guarantees.append(
            Finding(
                "k",
                f"{asked_k}-anonymity: asked, verified by the run, and holding here (smallest class "
                f"{e.smallest_class:,} rows, highest prosecutor risk {_pct(r.risk_after.highest)}).",
            )
        )
    models = [m for m in doc.get("privacy_models", []) if m.get("name") != "k-anonymity"] if doc else []
    achieved = ", ".join(f"{key} {value:g}" for key, value in (doc.get("achieved") or {}).items())
    guarantees += [
        Finding(
            str(m.get("name")),
            f"{_described(m)}: asked and verified by the run before the release was written"
            + (f" (achieved: {achieved})." if achieved else "."),
        )
        for m in models
    ]
    sensitive = r.sensitive
    asked_on = {str(m.get("name")) for m in models if m.get("column") == sensitive}
    if sensitive is None:
        notes.append(
            Finding(
                "sensitive",
                "No sensitive column is declared: attribute disclosure (l-diversity, "
                "t-closeness) is not measured.",
            )
        )
    else:
        t = e.criteria.get("t_closeness")
        limit = LIMITS["t_closeness"]
        if t is not None and t > limit.value and "t-closeness" not in asked_on:
            warnings.append(
                Finding(
                    limit.key,
                    f"t-closeness distance {t:.2f} on '{sensitive}', above {limit.value:g}, and no "
                    f"t-closeness was asked: {limit.means}. Consider --t-closeness (e.g. 0.2).",
                )
            )
        distinct = e.criteria.get("l_diversity")
        limit = LIMITS["l_diversity"]
        if distinct is not None and distinct <= limit.value:
            given = " (as asked)" if "l-diversity" in asked_on else ""
            what = (
                "a class holds one value of it: its members' value is given away"
                if distinct <= 1
                else "weak attribute protection: a person placed in a class is narrowed to "
                f"{distinct:g} values of it"
            )
            warnings.append(
                Finding(
                    limit.key,
                    f"l = {distinct:g} on '{sensitive}'{given}, at or below {limit.value:g}: {what}. "
                    "Consider --l-diversity 3 or more.",
                )
            )
    limit = LIMITS["record_linkage_share"]
    if e.record_linkage_share > limit.value:
        warnings.append(
            Finding(
                limit.key,
                f"record-linkage share {_pct(e.record_linkage_share)}, above {_pct(limit.value)}: "
                f"{limit.means}. Consider a larger k.",
            )
        )
    limit = LIMITS["suppressed_share"]
    share = e.suppressed / e.n_rows if e.n_rows else 0.0
    if share > limit.value:
        warnings.append(
            Finding(
                limit.key,
                f"{e.suppressed:,} of {e.n_rows:,} rows suppressed ({_pct(share)}), above "
                f"{_pct(limit.value)}: {limit.means}.",
            )
        )
    allowed = [str(c) for c in ((doc.get("options") or {}).get("allow_determinant") or ())] if doc else []
    if allowed:
        names = ", ".join(f"'{c}'" for c in allowed)
        warnings.append(
            Finding(
                "determinant",
                f"Kept column{'s' if len(allowed) > 1 else ''} {names} allowed to determine a "
                "quasi-identifier (--allow-determinant): it is released as it is, so the QI can be "
                "read back from it and k-anonymity on the QIs does not hold against a reader who "
                "uses it.",
            )
        )
    return Verdict(tuple(guarantees), tuple(warnings), tuple(notes))


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f} %"
