"""How ``evaluate``'s figures are read: each metric in its group, with its meaning and which
way is better. The text table and the JSON document (schema below) both come from
:data:`GROUPS`, so they never disagree.

JSON (``sbc-sql evaluate --json``, in the envelope of :mod:`sbc_sql.documents`: schema
"sbc-sql/evaluate", version 2; docs/json.md)::

    {"rows":                 {"n_rows": {"value": 2000, "better": null, "meaning": "..."}, ...},
     "information_loss":     {"total_ncp": {...}, "ncp": {"age": {...}, ...}, ...},
     "risk":                 {...},
     "population_risk":      {"population": {...}, ...},   (with a sampling fraction or weights)
     "attribute_disclosure": {"sensitive": {...}, "l_diversity": {...}, ...},   (with a sensitive column)
     "classification":       {"target": {...}, "cm": {...}, ...},   (with a target; model_* with --model)
     "query_accuracy":       {"0.01": {"relative_error": {...}, "used": {...}, ...}, ...}}

Each metric is ``{"value": number or string, "better": "lower" | "higher" | null, "meaning":
one line}``; a group with nothing measured is left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..privacy import registry as criteria
from .population_keys import NOT_ASKED

if TYPE_CHECKING:
    from .evaluate import Evaluation


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    better: str | None
    meaning: str


GROUPS: tuple[tuple[str, str, tuple[Metric, ...]], ...] = (
    (
        "rows",
        "Rows",
        (
            Metric("n_rows", "rows in", None, "rows of the original"),
            Metric("released", "rows released", "higher", "rows in the release"),
            Metric("suppressed", "rows suppressed", "lower", "rows of the original left out of the release"),
            Metric(
                "suppressed_by", "suppressed", None, "rows suppressed for that reason, as the run recorded"
            ),
        ),
    ),
    (
        "information_loss",
        "Information loss",
        (
            Metric(
                "total_ncp",
                "total NCP",
                "lower",
                "weighted mean over QIs of the share of a QI's domain a released value covers "
                "(0 exact, 1 nothing left)",
            ),
            Metric("ncp", "NCP", "lower", "that share for one QI; a suppressed row counts 1"),
            Metric("utility", "utility", "higher", "1 - total NCP"),
            Metric("gcp", "GCP", "lower", "global certainty penalty: the total NCP over every input row"),
            Metric(
                "gcp_released",
                "GCP, removals free",
                "lower",
                "GCP charging a removed row nothing (what RGCP corrects)",
            ),
            Metric(
                "rgcp",
                "RGCP",
                "lower",
                "GCP with every removed row charged to the class it would join (weights k_r, n_r)",
            ),
            Metric("k_r", "RGCP k_r", None, "RGCP's weight of a class that removed rows join"),
            Metric("n_r", "RGCP n_r", None, "RGCP's weight when no class exists"),
            Metric("removed_uncovered", "removed, uncovered", "lower", "removed rows no class can hold"),
            Metric("removed_hidden", "removed, hidden", "lower", "removed rows inside some class's ranges"),
            Metric("virtual_classes", "virtual classes", None, "classes that removed rows join for RGCP"),
            Metric(
                "discernibility", "discernibility", "lower", "sum of squared class sizes + suppressed x rows"
            ),
            Metric("c_avg", "C_AVG", "lower", "mean class size / k (1 is the least loss k allows)"),
        ),
    ),
    (
        "risk",
        "Re-identification risk",
        (
            Metric("k", "k", "higher", "the k of C_AVG (the smallest class unless given)"),
            Metric("classes", "classes", None, "equivalence classes"),
            Metric(
                "smallest_class", "smallest class", "higher", "rows in the smallest class: the k achieved"
            ),
            Metric("mean_class", "mean class", None, "mean rows per class"),
            Metric("largest_class", "largest class", None, "rows in the largest class"),
            Metric("tuples", "distinct tuples", None, "distinct generalized QI tuples"),
            Metric(
                "record_linkage",
                "record linkage",
                "lower",
                "expected rows an attacker knowing a person's QIs links to the right release row",
            ),
            Metric("record_linkage_share", "record linkage share", "lower", "record linkage / rows in"),
        ),
    ),
    (
        "population_risk",
        "Risk in the population",
        (
            Metric("basis", "population given by", None, "'sampling fraction' or 'weights'"),
            Metric("weights_column", "weights column", None, "the column of the records' weights"),
            Metric("sampling_fraction", "sampling fraction", None, "released records / the population"),
            Metric("population", "population", None, "people the released records stand for"),
            Metric("sample_uniques", "sample uniques", "lower", "generalized QI tuples of one released row"),
            Metric("zayatz", "uniques, Zayatz", "lower", "population uniques by Zayatz's estimator"),
            Metric("pitman", "uniques, Pitman", "lower", "population uniques by Pitman's sampling formula"),
            Metric("snb", "uniques, SNB", "lower", "population uniques by the slide negative binomial"),
            Metric("model", "decision rule", None, "the estimator Dankar et al.'s rule chose"),
            Metric(
                "population_uniques",
                "population uniques",
                "lower",
                "people alone in the population on the released QIs (the rule's estimate)",
            ),
            Metric("population_unique_share", "population unique share", "lower", "that / the population"),
            Metric(
                "global_risk",
                "individual risk, global",
                "lower",
                "mean over released rows of their Benedetti-Franconi risk",
            ),
            Metric(
                "expected_reidentifications",
                "expected re-identifications",
                "lower",
                "sum of the released rows' risks: correct matches an intruder may expect",
            ),
            Metric("highest_individual_risk", "individual risk, highest", "lower", "the riskiest row's"),
            Metric("individual_above_20", "rows at risk > 20 %", "lower", "share of released rows"),
            Metric("individual_above_10", "rows at risk > 10 %", "lower", "share of released rows"),
            Metric("individual_above_5", "rows at risk > 5 %", "lower", "share of released rows"),
        ),
    ),
    (
        "attribute_disclosure",
        "Attribute disclosure",
        (
            Metric("sensitive", "sensitive column", None, "the column the figures below are about"),
            *(Metric(f.key, f.label, f.better, f.meaning) for f in criteria.figures()),
            Metric(
                "forced_beta", "beta for the sizes below", None, "the beta the forced class sizes are for"
            ),
            Metric(
                "forced_class",
                "forced class",
                None,
                "smallest class that may hold a row of that value (by frequency rank) under beta",
            ),
        ),
    ),
    (
        "classification",
        "Classification",
        (
            Metric(
                "target", "target column", None, "the label column (released verbatim) the figures are about"
            ),
            Metric(
                "cm",
                "CM",
                "lower",
                "classification metric: rows off their class's majority label, a suppressed row "
                "counting 1, / rows in",
            ),
            Metric(
                "misclassified",
                "rows off the majority",
                "lower",
                "released rows off their class's majority label",
            ),
            Metric(
                "class_purity",
                "class purity",
                "higher",
                "mean over classes of the majority label's share of the class (each class counts once)",
            ),
            Metric(
                "row_purity",
                "row purity",
                "higher",
                "share of released rows holding their class's majority label (row-weighted purity, 1 - CM "
                "over released rows)",
            ),
            Metric(
                "model_classifier", "model", None, "the classifier trained on the release and on the original"
            ),
            Metric("model_seed", "model seed", None, "seed of the 70/30 split and of the classifier"),
            Metric(
                "model_train_original",
                "training rows, original",
                None,
                "input rows the original's model learns from",
            ),
            Metric(
                "model_train_release",
                "training rows, release",
                None,
                "release rows of the same training rows (suppressed rows left out)",
            ),
            Metric(
                "model_test", "test rows", None, "held-out rows of the original both models are scored on"
            ),
            Metric(
                "model_accuracy_original",
                "accuracy, original",
                "higher",
                "share of test rows the model trained on the original labels right",
            ),
            Metric(
                "model_accuracy_release",
                "accuracy, release",
                "higher",
                "share of test rows the model trained on the release labels right",
            ),
            Metric(
                "model_accuracy_ratio",
                "accuracy ratio",
                "higher",
                "accuracy of the release's model / the original's (1: nothing a model uses is lost)",
            ),
            Metric(
                "model_f1_average",
                "F1 averaging",
                None,
                "binary (the rarer label positive) for two labels, else macro",
            ),
            Metric(
                "model_f1_original", "F1, original", "higher", "F1 of the original's model on the test rows"
            ),
            Metric("model_f1_release", "F1, release", "higher", "F1 of the release's model on the test rows"),
            Metric("model_f1_ratio", "F1 ratio", "higher", "F1 of the release's model / the original's"),
        ),
    ),
)

QUERY_METRICS = (
    Metric("relative_error", "query error", "lower", "mean relative error of random COUNT queries"),
    Metric("used", "queries used", None, "queries with a true count above 0"),
    Metric("true_share", "true selectivity", None, "mean share of rows the queries selected"),
)
#: what the query accuracy's seed means
QUERY_SEED = "seed of the random queries: the same seed draws the same queries"


def _entry(metric: Metric, value: Any) -> dict[str, Any]:
    return {"value": value, "better": metric.better, "meaning": metric.meaning}


def grouped(evaluation: Evaluation) -> dict[str, Any]:
    """The evaluation as the JSON document of the module's docstring."""
    flat = evaluation.as_dict()
    out: dict[str, Any] = {}
    for key, _, metrics in GROUPS:
        group: dict[str, Any] = {}
        for m in metrics:
            value = flat.get(m.key)
            if value is None:
                continue
            if isinstance(value, dict):
                group[m.key] = {q: _entry(m, v) for q, v in value.items()}
            else:
                group[m.key] = _entry(m, value)
        if group:
            out[key] = group
    queries = {
        f"{q['selectivity']:g}": {m.key: _entry(m, q[m.key]) for m in QUERY_METRICS}
        for q in flat.get("query_error", [])
    }
    if queries:
        out["query_accuracy"] = {"seed": flat.get("seed"), **queries}
    return out


def _shown(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.4f}"
    return str(value)


def text(evaluation: Evaluation) -> str:
    """The evaluation as a table: a heading per group, a line per metric with its value,
    which way is better and what it means."""
    doc = grouped(evaluation)
    lines: list[tuple[str, str, str, str]] = []
    headings: dict[int, str] = {}
    for key, title, metrics in GROUPS:
        if key not in doc:
            continue
        headings[len(lines)] = title
        for m in metrics:
            entry = doc[key].get(m.key)
            if entry is None:
                continue
            if isinstance(entry, dict) and "value" not in entry:
                prefix = "NCP" if m.key == "ncp" else m.label
                for q, e in entry.items():
                    lines.append((f"{prefix} {q}", _shown(e["value"]), m.better or "", m.meaning))
            else:
                lines.append((m.label, _shown(entry["value"]), m.better or "", m.meaning))
    if "query_accuracy" in doc:
        seed = doc["query_accuracy"]["seed"]
        headings[len(lines)] = f"Query accuracy (seed {seed})"
        for selectivity, entry in doc["query_accuracy"].items():
            if selectivity == "seed":
                continue
            for m in QUERY_METRICS:
                label = f"{m.label} @{selectivity}"
                lines.append((label, _shown(entry[m.key]["value"]), m.better or "", m.meaning))
    width = max(len(label) for label, *_ in lines)
    number = max(len(value) for _, value, *_ in lines)
    out: list[str] = []
    for i, (label, value, better, meaning) in enumerate(lines):
        if i in headings:
            out.append(("" if not out else "\n") + headings[i])
        direction = f"{better} is better" if better else ""
        out.append(f"  {label:<{width}}  {value:>{number}}  {direction:<16}  {meaning}".rstrip())
    if "population_risk" not in doc:
        out += ["", NOT_ASKED]
    return "\n".join(out)
