"""The release report's page: the figures of :mod:`sbc_sql.quality.report_figures`
rendered by the Jinja2 templates in ``templates/`` (shipped in this package):

- ``report.html``: the page: a verdict first (:mod:`sbc_sql.quality.verdict`: the
  guarantees asked and whether they hold, the warnings against its thresholds), then
  sections: 1. how the release was made (its provenance and
  every column's role), 2. the prosecutor risk before and after (and, given a sampling
  fraction or weights, the risk in the population before and after), 3. NCP per QI and total,
  4. the class-size histogram, 5. the total NCP against k, 6. the sensitive column's
  diversity, 7. suppressed rows per reason, 8. every figure of ``evaluate``'s JSON
  document, the query accuracy included, with its meaning as
  :data:`sbc_sql.quality.report.GROUPS` explains it (:func:`metric_tables`);
- ``tables.html``: the table every section lays its rows in;
- ``charts.html``: the inline SVG charts (bars, a histogram, the curve), each mark carrying
  its figure in ``data-*`` attributes; a bar chart's room for its labels and figures is
  reserved from their estimated width (:func:`text_width`, :func:`bar_chart`), so no text
  runs past its edge, and the NCP chart is scaled to its largest figure
  (:func:`ncp_chart`).

The templates receive names, counts and figures as data, and the environment escapes every
value they print (autoescape; :func:`_escaped`): only the templates' own markup is markup.
**No cell value** reaches them. The page holds no script and loads nothing: its CSS is
inline, its charts are SVG, and it scales to a phone's width.
"""

from __future__ import annotations

import functools
import html
import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import jinja2
from markupsafe import Markup

from ..privacy import registry
from . import report as meanings
from .evaluate import Evaluation
from .report_figures import ReportFigures, SizeBar
from .verdict import THRESHOLDS, verdict

#: the roles as the page names them
ROLE_LABELS = (
    ("quasi-identifiers", "qi"),
    ("sensitive", "sensitive"),
    ("identifiers, not released", "identifier"),
    ("released as they are", "insensitive"),
)


class Bar(NamedTuple):
    """A bar of a horizontal bar chart: its value from 0 to 1 sets its length."""

    label: str
    value: float
    #: the value as the bar's text shows it
    shown: str
    #: the figures its mark carries as data-* attributes
    data: Mapping[str, Any]
    #: the series it belongs to, the class that colours its mark ("": the one series)
    series: str = ""


#: a chart's text size in px (svg.chart text in report.html's CSS)
TEXT_PX = 12.0
#: the width of a character as a share of the text size: generous enough for the widest
#: common sans-serif (DejaVu Sans, which a browser without the system's own font picks), so
#: that the room a chart reserves for a label holds it in any of them
_EM = {
    **dict.fromkeys("mwMW%@", 1.0),
    **dict.fromkeys(" .,:;'!|iljI", 0.34),
    **dict.fromkeys("()[]-ftr", 0.45),
}


def text_width(text: str, px: float = TEXT_PX) -> float:
    """An estimate, from above, of how wide ``text`` is drawn at ``px`` pixels."""
    em = 0.0
    for ch in text:
        if ch in _EM:
            em += _EM[ch]
        elif ch.isdigit() or ch.islower():
            em += 0.66
        elif ch.isascii():
            em += 0.76
        else:  # a wide script's character
            em += 1.0
    return em * px


#: a bar chart's room: the bars' full length, the gap between a label and its bar, and the
#: margin at each edge (in px of the viewBox)
BAR_LENGTH, BAR_GAP, BAR_MARGIN = 330.0, 6.0, 6.0


class BarChart(NamedTuple):
    """A horizontal bar chart's rows and room: the labels' column as wide as the widest
    label, the bars, then a column as wide as the widest value shown after its bar, so no
    text runs past the chart's edge; ``scale`` is the value of a full bar, ``axis`` the
    figure an axis under the bars shows at its end ('': no axis, the bars are shares of 1)."""

    rows: list[Bar]
    label_w: float
    bar_w: float
    value_w: float
    scale: float = 1.0
    axis: str = ""

    @property
    def width(self) -> float:
        return self.label_w + self.bar_w + self.value_w


def bar_chart(rows: list[Bar], scale: float = 1.0, axis: str = "") -> BarChart:
    """The chart of ``rows``, its columns wide enough for their longest label and value
    (and the axis's figure, centred under the bars' end)."""
    label_w = max((text_width(r.label) for r in rows), default=0.0) + BAR_GAP + BAR_MARGIN
    value_w = max(
        max((text_width(r.shown) for r in rows), default=0.0) + BAR_GAP - 2,
        text_width(axis) / 2 if axis else 0.0,
    )
    return BarChart(rows, label_w, BAR_LENGTH, value_w + BAR_MARGIN, scale, axis)


def round_above(value: float) -> float:
    """The round figure at or just above ``value`` (1, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a
    power of ten), at most 1: the scale of the NCP chart; 1 for no value above 0."""
    if not value > 0 or value >= 1:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    for step in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if round(step * power, 12) >= value:
            return min(1.0, round(step * power, 12))
    return 1.0


class Column(NamedTuple):
    """A bar of a histogram: the number of classes it counts sets its height."""

    label: str
    classes: int
    data: Mapping[str, Any]


def render_page(r: ReportFigures) -> str:
    """The page: ``report.html`` given the figures, every name and figure escaped."""
    e = r.evaluation
    return (
        environment()
        .get_template("report.html")
        .render(
            r=r,
            e=e,
            doc=r.provenance,
            facts=provenance_facts(r.provenance) if r.provenance else [],
            risk_bars=bar_chart(risk_bars(r)),
            ncp_chart=ncp_chart(e),
            size_columns=size_columns(r.class_sizes),
            sizes_binned=any(b.lo != b.hi for b in r.class_sizes),
            diversity_columns=[Column(str(v), c, {"values": v, "classes": c}) for v, c in r.diversity],
            sensitive_figures=sensitive_figures(e),
            declared=declared(r.provenance, r.sensitive),
            metrics=metric_tables(e),
            population=population_rows(r),
            verdict=verdict(r),
            thresholds=THRESHOLDS,
        )
    )


@functools.cache
def environment() -> jinja2.Environment:
    """The templates of ``templates/``, escaping every value they print."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("sbc_sql.quality", "templates"),
        autoescape=True,
        finalize=_escaped,
        # a name a template misspells is an error, not an empty string on the page
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        pct=pct, fixed=fixed, thousands=thousands, shown=meanings._shown, text_width=text_width
    )
    return env


def _escaped(value: Any) -> Any:
    """A value a template prints, escaped as :func:`html.escape` escapes it (a quote as
    ``&#x27;``), so the page is the same bytes whichever markupsafe is installed; the
    templates' own markup (a macro's output) is left as it is."""
    if hasattr(value, "__html__"):
        return value
    return Markup(html.escape(str(value), quote=True))


# ---------------------------------------------------------------------------------------
# how figures are written


def pct(value: float | None, digits: int = 1) -> str:
    """A share as a percentage; None (no record): '-'."""
    return "-" if value is None else f"{100 * value:.{digits}f} %"


def fixed(value: float, digits: int) -> str:
    return f"{value:.{digits}f}"


def thousands(value: float, digits: int | None = None) -> str:
    """A count (or with ``digits`` a figure) with thousands separated: 12,345."""
    return f"{value:,}" if digits is None else f"{value:,.{digits}f}"


# ---------------------------------------------------------------------------------------
# what each section lists


def provenance_facts(doc: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """How the release was made, as (what, its value), from its provenance."""
    rows = doc.get("rows", {})
    models = []
    for m in doc.get("privacy_models", []):
        params = ", ".join(f"{key} {value}" for key, value in m.items() if key != "name")
        models.append(f"{m.get('name')} ({params})" if params else str(m.get("name")))
    options = doc.get("options", {})
    return [
        ("sbc-sql version", doc.get("sbc_sql")),
        ("source", doc.get("source")),
        ("release", (doc.get("release") or {}).get("view")),
        ("algorithm", doc.get("algorithm")),
        ("k", doc.get("k")),
        ("mode", doc.get("mode")),
        ("criteria", "; ".join(models) or "k-anonymity"),
        ("leftover rows", options.get("leftover")),
        ("max suppression", options.get("max_suppression")),
        *(
            (label, ", ".join(f"{name}={value:g}" for name, value in limits.items()))
            for label, key in (("max width", "max_width"), ("max values", "max_values"))
            if (limits := options.get(key) or {})
        ),
        *(
            (f"{label} ({len(names)})", ", ".join(names))
            for label, role in ROLE_LABELS
            if (names := [str(c.get("name")) for c in doc.get("columns", []) if c.get("role") == role])
        ),
        ("rows in", rows.get("input")),
        ("rows released", rows.get("released")),
        ("rows suppressed", rows.get("suppressed")),
        ("classes", doc.get("classes")),
        ("seconds", ", ".join(f"{s} {t}" for s, t in (doc.get("seconds") or {}).items())),
    ]


def risk_bars(r: ReportFigures) -> list[Bar]:
    """A bar per risk band before, then after: the share of records in it."""
    return [
        Bar(
            f"{b.label} ({name})",
            b.share,
            f"{pct(b.share)} ({b.records:,})",
            {"series": name, "band": b.label, "records": b.records, "share": b.share},
            name,
        )
        for before, after in zip(r.risk_before.bands, r.risk_after.bands, strict=True)
        for name, b in (("before", before), ("after", after))
    ]


class PopulationRow(NamedTuple):
    """A row of section 2's population table: the figure, before, after, what it means."""

    key: str
    label: str
    before: str
    after: str
    meaning: str


def population_rows(r: ReportFigures) -> list[PopulationRow]:
    """The population-risk figures before and after (empty: not asked)."""
    b, a = r.population_before, r.population_after
    if b is None or a is None:
        return []

    def count(value: float | None) -> str:
        return "no answer" if value is None else thousands(value, 1)

    return [
        PopulationRow(
            "population",
            "population",
            thousands(b.population, 0),
            thousands(a.population, 0),
            "people the records stand for",
        ),
        PopulationRow(
            "sample_uniques",
            "sample uniques",
            thousands(b.sample_uniques),
            thousands(a.sample_uniques),
            "keys of one record",
        ),
        PopulationRow(
            "population_uniques",
            "population uniques",
            f"{count(b.population_uniques)} ({b.model})",
            f"{count(a.population_uniques)} ({a.model})",
            "people alone in the population on the QIs, by the decision rule's estimator",
        ),
        PopulationRow(
            "population_unique_share",
            "population unique share",
            pct(b.population_unique_share, 3),
            pct(a.population_unique_share, 3),
            "that / the population",
        ),
        PopulationRow(
            "global_risk",
            "individual risk, global",
            pct(b.global_risk, 2),
            pct(a.global_risk, 2),
            "mean over records of their Benedetti-Franconi risk",
        ),
        PopulationRow(
            "highest_individual_risk",
            "individual risk, highest",
            pct(b.highest_individual_risk),
            pct(a.highest_individual_risk),
            "the riskiest record's",
        ),
        PopulationRow(
            "expected_reidentifications",
            "expected re-identifications",
            thousands(b.expected_reidentifications, 1),
            thousands(a.expected_reidentifications, 1),
            "sum of the records' risks: correct matches an intruder may expect",
        ),
    ]


def ncp_bars(e: Evaluation) -> list[Bar]:
    """A bar per QI, the most generalized first: its NCP."""
    return [
        Bar(q, v, _ncp_shown(v), {"qi": q, "value": v})
        for q, v in sorted(e.ncp.items(), key=lambda kv: -kv[1])
    ]


def _ncp_shown(value: float) -> str:
    """An NCP as the page prints it: 4 decimals, or 2 significant digits below 0.0001."""
    return f"{value:.2g}" if 0 < value < 1e-4 else f"{value:.4f}"


def ncp_chart(e: Evaluation) -> BarChart:
    """NCP per QI on a scale of 0 to the round figure just above the largest (at most 1), so
    that small losses are bars, not slivers; the axis states the scale."""
    bars = ncp_bars(e)
    scale = round_above(max((b.value for b in bars), default=0.0))
    return bar_chart(bars, scale, f"{scale:g}")


def size_columns(bars: Sequence[SizeBar]) -> list[Column]:
    """The class-size histogram's bars, labelled by the sizes each covers."""
    return [
        Column(
            str(b.lo) if b.lo == b.hi else f"{b.lo}-{b.hi}",
            b.classes,
            {"lo": b.lo, "hi": b.hi, "classes": b.classes},
        )
        for b in bars
    ]


def sensitive_figures(e: Evaluation) -> list[tuple[str, float]]:
    """The privacy models' figures on the sensitive column that were measured."""
    return [(f.label, e.criteria[f.key]) for f in registry.figures() if f.key in e.criteria]


def declared(doc: Mapping[str, Any], sensitive: str | None) -> str:
    """The privacy models the run declared on ``sensitive``, with their parameters ('': none)."""
    if sensitive is None:
        return ""
    return "; ".join(
        f"{m['name']} " + ", ".join(f"{key} {v}" for key, v in m.items() if key not in ("name", "column"))
        for m in doc.get("privacy_models", [])
        if m.get("column") == sensitive
    )


class Figure(NamedTuple):
    """A row of section 8: where the figure is in ``evaluate``'s JSON document (its group,
    its metric, and the QI or selectivity of a figure given per one; '' for none), its
    label, value, which way is better and what it means."""

    group: str
    metric: str
    part: str
    label: str
    value: Any
    better: str
    meaning: str


def metric_tables(e: Evaluation) -> list[tuple[str, list[Figure]]]:
    """Every figure of ``evaluate``'s JSON document (:func:`sbc_sql.quality.report.grouped`),
    per group of :data:`sbc_sql.quality.report.GROUPS` measured and then the query accuracy:
    its title and a row per figure (a per-QI metric has a row per QI, the query error a row
    per metric and selectivity)."""
    doc = meanings.grouped(e)
    out = []
    for key, title, metrics in meanings.GROUPS:
        if key not in doc:
            continue
        rows = []
        for m in metrics:
            entry = doc[key].get(m.key)
            if entry is None:
                continue
            better = f"{m.better} is better" if m.better else ""
            if isinstance(entry, dict) and "value" not in entry:
                prefix = "NCP" if m.key == "ncp" else m.label
                rows += [
                    Figure(key, m.key, q, f"{prefix} {q}", v["value"], better, m.meaning)
                    for q, v in entry.items()
                ]
            else:
                rows.append(Figure(key, m.key, "", m.label, entry["value"], better, m.meaning))
        out.append((title, rows))
    queries = doc.get("query_accuracy")
    if queries:
        rows = [Figure("query_accuracy", "seed", "", "query seed", queries["seed"], "", meanings.QUERY_SEED)]
        for selectivity, entry in queries.items():
            if selectivity == "seed":
                continue
            rows += [
                Figure(
                    "query_accuracy",
                    selectivity,
                    m.key,
                    f"{m.label} @{selectivity}",
                    entry[m.key]["value"],
                    f"{m.better} is better" if m.better else "",
                    m.meaning,
                )
                for m in meanings.QUERY_METRICS
            ]
        out.append(("Query accuracy", rows))
    return out
