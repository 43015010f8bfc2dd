"""The release report (``sbc-sql report``, ``anonymize --report``, :func:`sbc_sql.report`):
one self-contained HTML page on how a release was made, the risk before and after it, what
it cost and what each figure means.

:func:`report` checks its arguments and the page's path before any work, opens the
database read-only, measures the page's figures (:mod:`sbc_sql.quality.report_figures`),
renders the page (below) and writes it atomically: a temporary file beside the target,
renamed over it once complete.

**No cell value** enters the page: only column names, counts and figures. The sensitive
column is shown as a histogram of its diversity per class, never as its values. The page
holds no script and loads nothing: its CSS is inline, its charts are inline SVG (each mark
carries its figure in ``data-*`` attributes), and it scales to a phone's width.
"""

from __future__ import annotations

import contextlib
import html
import importlib.resources
import math
import os
import string
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import engines
from ..engines.base import Engine
from ..errors import InputError, OutputExistsError
from ..plan import check_writable_path, same_file
from . import report as meanings
from .evaluate import Evaluation
from .report_figures import BANDS, DEFAULT_CURVE_K, CurvePoint, ReportFigures, measure, scratch_for

__all__ = ["BANDS", "DEFAULT_CURVE_K", "Report", "check_path", "parse_curve_k", "report", "write_atomically"]

#: the roles as the page names them
ROLE_LABELS = (
    ("quasi-identifiers", "qi"),
    ("sensitive", "sensitive"),
    ("identifiers, not released", "identifier"),
    ("released as they are", "insensitive"),
)


@dataclass
class Report(ReportFigures):
    """What :func:`report` measured, the page and where it was written (None: not written)."""

    html: str = ""
    path: Path | None = None


# ---------------------------------------------------------------------------------------
# the output file


def parse_curve_k(text: str) -> list[int]:
    """--curve-k '2,5,10' -> [2, 5, 10]; 'none' (or nothing) -> no curve."""
    if text.strip().lower() in ("", "none"):
        return []
    ks = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if not part.isdigit() or int(part) < 2:
            raise InputError(
                f"--curve-k '{text}': '{part}' is not a k of 2 or more; write e.g. --curve-k 2,5,10 "
                "(or --curve-k none for no curve)"
            )
        ks.append(int(part))
    return ks


def check_path(
    path: str | Path, *, replace: bool, flag: str = "--output", protected: Iterable[Any] = ()
) -> Path:
    """The page's path, checked before any work: an existing file only with ``--replace``,
    never one of the ``protected`` files (the database), in a folder that can be written."""
    path = Path(path)
    for other in protected:
        if isinstance(other, (str, Path)) and Path(other).exists() and same_file(path, Path(other)):
            raise InputError(f"{flag} '{path}' is '{other}', which the run reads; choose another {flag}")
    if path.exists() and not path.is_dir() and not replace:
        raise OutputExistsError(
            f"{flag} '{path}' already exists; pass --replace to overwrite it or choose another {flag}"
        )
    return check_writable_path(path, flag)


def write_atomically(path: str | Path, text: str) -> Path:
    """``text`` into ``path`` through a temporary file beside it, renamed over it once
    written: an interrupted run leaves the old file (or none), never half a page."""
    path = Path(path)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        # a temporary file is private; the page gets the mode any new file of this user gets
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(temp, 0o666 & ~mask)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return path


def report(
    database: str | Path | Engine | Any,
    original: str,
    release: str,
    output: str | Path | None = None,
    *,
    curve_k: Iterable[int] | None = DEFAULT_CURVE_K,
    sensitive: str | None = None,
    replace: bool = False,
    attach: Iterable[str] = (),
    log: Callable[[str], None] | None = None,
) -> Report:
    """The HTML report of ``release`` against ``original`` (contents: this module's
    docstring), written to ``output`` when given (an existing file only with ``replace``).

    ``curve_k``: the k of the NCP-against-k curve (None or empty: no curve). A database
    file is only read, opened read-only (it may be one the user cannot write, or one another
    process reads): the curve re-clusters the original in an in-memory database that reads
    the file (see :func:`_scratch`); nothing is kept. ``sensitive``: the column of the diversity figures
    (default: the first sensitive column the release declares). ``log`` receives a line per
    step.
    """
    say = log or (lambda _: None)
    ks = [int(k) for k in (curve_k or ())]
    bad = [k for k in ks if k < 2]
    if bad:
        raise InputError(
            f"curve_k holds {bad[0]}, below 2; give k values of 2 or more, e.g. curve_k=[2, 5, 10]"
        )
    path = check_path(output, replace=replace, protected=[database]) if output is not None else None
    engine = engines.connect(database, read_only=True)
    try:
        from ..plan import parse_attach

        files = [parse_attach(a) for a in attach]
        for file, name in files:
            engine.attach(file, name)
        # a file opened here is written by nothing: the curve's trials go to a scratch engine
        scratch = scratch_for(database, engine, files)
        found = Report(**vars(measure(engine, original, release, ks, sensitive, say, scratch)))
    finally:
        if engine is not database:  # an engine given is left open; a connection given stays open
            engine.close()
    found.html = render_page(found)
    if path is not None:
        found.path = write_atomically(path, found.html)
    return found


# ---------------------------------------------------------------------------------------
# the page


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _pct(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{100 * value:.{digits}f} %"


def _num(value: Any) -> str:
    return esc(meanings._shown(value))


def _attrs(**data: Any) -> str:
    return "".join(f' data-{name.replace("_", "-")}="{esc(v)}"' for name, v in data.items())


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], numeric: Sequence[bool] = ()) -> str:
    """A table; the cells are HTML already escaped."""
    right = list(numeric) + [False] * (len(header) - len(numeric))
    head = "".join(
        f"<th{' class=num' if r else ''}>{esc(h)}</th>" for h, r in zip(header, right, strict=True)
    )
    body = "".join(
        "<tr>"
        + "".join(f"<td{' class=num' if r else ''}>{c}</td>" for c, r in zip(row, right, strict=True))
        + "</tr>"
        for row in rows
    )
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _bars(
    chart: str,
    rows: Sequence[tuple[str, float, str, dict[str, Any]]],
    *,
    scale: float = 1.0,
    series: Sequence[str] = (),
) -> str:
    """A horizontal bar chart: per row (label, value, shown value, data attributes); rows of
    several series are drawn as groups (``series`` names the classes of the marks)."""
    label_w, bar_w, row_h = 170, 330, 22
    height = row_h * len(rows) + 10
    parts = [
        f'<svg class="chart" data-chart="{esc(chart)}" viewBox="0 0 {label_w + bar_w + 90} {height}" '
        f'role="img" preserveAspectRatio="xMinYMin meet">'
    ]
    for i, (label, value, shown, data) in enumerate(rows):
        y = 5 + i * row_h
        w = 0.0 if scale <= 0 else max(0.0, min(1.0, value / scale)) * bar_w
        cls = f"mark {series[i]}" if series else "mark"
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end">{esc(label)}</text>'
            f'<rect class="{cls}" x="{label_w}" y="{y + 3}" width="{w:.2f}" height="{row_h - 6}"'
            f"{_attrs(**data)}><title>{esc(label)}: {esc(shown)}</title></rect>"
            f'<text x="{label_w + w + 4:.2f}" y="{y + 15}" class="value">{esc(shown)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _columns_chart(chart: str, bars: Sequence[tuple[str, int, dict[str, Any]]], axis: str) -> str:
    """A vertical bar chart (a histogram): per bar (label, count, data attributes)."""
    n = max(len(bars), 1)
    width, height, left, bottom, top = 600, 240, 50, 40, 14
    plot_w, plot_h = width - left - 10, height - bottom - top
    most = max((c for _, c, _ in bars), default=0) or 1
    step = plot_w / n
    parts = [
        f'<svg class="chart" data-chart="{esc(chart)}" viewBox="0 0 {width} {height}" role="img" '
        'preserveAspectRatio="xMinYMin meet">',
        f'<line class="axis" x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}"/>',
        f'<text x="{left - 6}" y="{top + 10}" text-anchor="end">{most:,}</text>',
        f'<text x="{left - 6}" y="{top + plot_h}" text-anchor="end">0</text>',
        f'<text x="{left + plot_w / 2}" y="{height - 4}" text-anchor="middle">{esc(axis)}</text>',
    ]
    every = max(1, math.ceil(n / 10))
    for i, (label, count, data) in enumerate(bars):
        h = plot_h * count / most
        x = left + i * step
        parts.append(
            f'<rect class="mark" x="{x + step * 0.1:.2f}" y="{top + plot_h - h:.2f}" '
            f'width="{step * 0.8:.2f}" height="{h:.2f}"{_attrs(**data)}>'
            f"<title>{esc(label)}: {count:,}</title></rect>"
        )
        if i % every == 0:
            parts.append(
                f'<text x="{x + step / 2:.2f}" y="{top + plot_h + 14}" text-anchor="middle">'
                f"{esc(label.split('-')[0])}</text>"
            )
    parts.append("</svg>")
    return "".join(parts)


def _curve_chart(points: Sequence[CurvePoint]) -> str:
    width, height, left, bottom, top, right = 600, 260, 56, 40, 14, 20
    plot_w, plot_h = width - left - right, height - bottom - top
    ks = [p.k for p in points]
    lo_k, hi_k = min(ks), max(ks)
    top_ncp = max(max(p.ncp for p in points), 1e-9)

    def xy(p: CurvePoint) -> tuple[float, float]:
        x = left + (plot_w * (p.k - lo_k) / (hi_k - lo_k) if hi_k > lo_k else plot_w / 2)
        return x, top + plot_h - plot_h * p.ncp / top_ncp

    parts = [
        f'<svg class="chart" data-chart="curve" viewBox="0 0 {width} {height}" role="img" '
        'preserveAspectRatio="xMinYMin meet">',
        f'<line class="axis" x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}"/>',
        f'<line class="axis" x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}"/>',
        f'<text x="{left - 6}" y="{top + 10}" text-anchor="end">{top_ncp:.3f}</text>',
        f'<text x="{left - 6}" y="{top + plot_h}" text-anchor="end">0</text>',
        f'<text x="{left + plot_w / 2}" y="{height - 4}" text-anchor="middle">k</text>',
    ]
    line = " ".join(f"{x:.2f},{y:.2f}" for x, y in map(xy, points))
    parts.append(f'<polyline class="line" points="{line}"/>')
    for p in points:
        x, y = xy(p)
        cls = "mark own" if p.own else "mark"
        parts.append(
            f'<circle class="{cls}" cx="{x:.2f}" cy="{y:.2f}" r="{7 if p.own else 5}"'
            f"{_attrs(k=p.k, ncp=repr(p.ncp), own=int(p.own))}>"
            f"<title>k={p.k}: NCP {p.ncp:.4f}{' (this release)' if p.own else ''}</title></circle>"
            f'<text x="{x:.2f}" y="{top + plot_h + 14}" text-anchor="middle">{p.k}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _risk_section(r: Report) -> str:
    rows: list[tuple[str, float, str, dict[str, Any]]] = []
    series: list[str] = []
    for i, band in enumerate(r.risk_before.bands):
        for name, figures in (("before", r.risk_before), ("after", r.risk_after)):
            b = figures.bands[i]
            rows.append(
                (
                    f"{band.label} ({name})",
                    b.share,
                    f"{_pct(b.share)} ({b.records:,})",
                    {"series": name, "band": band.label, "records": b.records, "share": repr(b.share)},
                )
            )
            series.append(name)
    chart = _bars("risk", rows, series=series)
    table = _table(
        ("", "records", "groups", "highest", "mean"),
        [
            (
                esc(name),
                f"{f.records:,}",
                f"{f.classes:,}",
                f"<span{_attrs(risk=name, highest=repr(f.highest))}>{_pct(f.highest)}</span>",
                f"<span{_attrs(risk=name, mean=repr(f.mean))}>{_pct(f.mean, 2)}</span>",
            )
            for name, f in (
                ("before: the original on its raw QIs", r.risk_before),
                ("after: the release", r.risk_after),
            )
        ],
        (False, True, True, True, True),
    )
    bands = _table(
        ("risk band", "class sizes", "before", "after"),
        [
            (
                esc(b.label),
                esc(b.sizes),
                f"{_pct(b.share)} ({b.records:,})",
                f"{_pct(a.share)} ({a.records:,})",
            )
            for b, a in zip(r.risk_before.bands, r.risk_after.bands, strict=True)
        ],
        (False, True, True, True),
    )
    return chart + table + bands


def _provenance_section(r: Report) -> str:
    doc = r.provenance
    if not doc:
        return (
            "<p>The release has no provenance comment: how it was made is unknown. Its figures "
            "below are measured all the same.</p>"
        )
    rows = doc.get("rows", {})
    models = []
    for m in doc.get("privacy_models", []):
        params = ", ".join(f"{key} {value}" for key, value in m.items() if key != "name")
        models.append(f"{m.get('name')} ({params})" if params else str(m.get("name")))
    options = doc.get("options", {})
    facts = [
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
    listing = "".join(f"<dt>{esc(name)}</dt><dd>{_num(value)}</dd>" for name, value in facts)
    weights = doc.get("weights", {})
    columns = _table(
        ("column", "type", "role", "kind", "weight", "role from"),
        [
            (
                esc(c.get("name")),
                esc(c.get("type")),
                esc(c.get("role")),
                esc(c.get("kind") or ""),
                esc(f"{weights[c['name']]:g}" if c.get("name") in weights else ""),
                esc(c.get("origin")),
            )
            for c in doc.get("columns", [])
        ],
        (False, False, False, False, True, False),
    )
    return (
        f'<dl class="facts">{listing}</dl>'
        "<details><summary>Every column: its type, kind, weight and where its role came from</summary>"
        f"{columns}</details>"
    )


def _metrics_section(e: Evaluation) -> str:
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
                    (esc(f"{prefix} {q}"), _num(v["value"]), esc(better), esc(m.meaning))
                    for q, v in entry.items()
                ]
            else:
                rows.append((esc(m.label), _num(entry["value"]), esc(better), esc(m.meaning)))
        out.append(f"<h3>{esc(title)}</h3>" + _table(("metric", "value", "", "meaning"), rows, (False, True)))
    return "".join(out)


def render_page(r: Report) -> str:
    """The page: the template with every part filled, every name and figure escaped."""
    e = r.evaluation
    ncp_rows = [
        (q, v, f"{v:.4f}", {"qi": q, "value": repr(v)})
        for q, v in sorted(e.ncp.items(), key=lambda kv: -kv[1])
    ]
    ncp = _bars("ncp", ncp_rows) + (
        f'<p class="total">total NCP <strong{_attrs(total_ncp=repr(e.total_ncp))}>{e.total_ncp:.4f}</strong> '
        f"(utility {e.utility:.4f}): the QIs' weighted mean; 0 no loss, 1 everything generalized away. "
        "A suppressed row counts 1 on every QI.</p>"
    )
    sizes = _columns_chart(
        "sizes",
        [
            (
                str(b.lo) if b.lo == b.hi else f"{b.lo}-{b.hi}",
                b.classes,
                {"lo": b.lo, "hi": b.hi, "classes": b.classes},
            )
            for b in r.class_sizes
        ],
        "rows in the class (a bar covers the sizes from its label to the next)"
        if any(b.lo != b.hi for b in r.class_sizes)
        else "rows in the class",
    ) + (
        f"<p>{e.classes:,} classes: smallest {e.smallest_class:,} (the k achieved), mean "
        f"{e.mean_class:,.2f}, largest {e.largest_class:,}.</p>"
    )
    if r.curve:
        curve_html = _curve_chart(r.curve) + _table(
            ("k", "total NCP", "classes", "suppressed", ""),
            [
                (
                    str(p.k),
                    f"{p.ncp:.4f}",
                    f"{p.classes:,}",
                    f"{p.suppressed:,}",
                    "this release" if p.own else "re-clustered, not kept",
                )
                for p in r.curve
            ],
            (True, True, True, True, False),
        )
    else:
        curve_html = f"<p>{esc(r.curve_note or 'no curve')}.</p>"
    curve_html += "".join(f"<p>k = {k}: no verified release ({esc(why)}).</p>" for k, why in r.curve_failed)
    if r.sensitive is not None and r.diversity:
        figures = [
            (name, value)
            for name, value in (
                ("l-diversity", e.l_diversity),
                ("t-closeness", e.t_closeness),
                ("beta-likeness", e.beta_likeness),
                ("enhanced beta-likeness", e.enhanced_beta_likeness),
            )
            if value is not None
        ]
        declared = [
            f"{m['name']} " + ", ".join(f"{key} {v}" for key, v in m.items() if key not in ("name", "column"))
            for m in r.provenance.get("privacy_models", [])
            if m.get("column") == r.sensitive
        ]
        sensitive_html = (
            f"<p>Column <strong>{esc(r.sensitive)}</strong>: how many distinct values of it each class "
            "holds (NULL counts as a value). The values themselves are not shown.</p>"
            + _columns_chart(
                "diversity",
                [(str(v), c, {"values": v, "classes": c}) for v, c in r.diversity],
                "distinct sensitive values in the class",
            )
            + _table(
                ("figure", "value"),
                [(esc(n), f"<span{_attrs(figure=n, value=repr(v))}>{_num(v)}</span>") for n, v in figures],
                (False, True),
            )
            + (f"<p>The run declared: {esc('; '.join(declared))}.</p>" if declared else "")
        )
    elif r.sensitive is not None:
        sensitive_html = f"<p>Column <strong>{esc(r.sensitive)}</strong>: the release holds no class.</p>"
    else:
        sensitive_html = "<p>The release declares no sensitive column.</p>"
    by = e.suppressed_by or {}
    suppressed_html = (
        f"<p>{e.suppressed:,} of {e.n_rows:,} rows suppressed "
        f"({_pct(e.suppressed / e.n_rows if e.n_rows else 0.0, 2)}).</p>"
        + (
            _table(
                ("reason", "rows"),
                [(esc(why), f"<span{_attrs(reason=why, rows=n)}>{n:,}</span>") for why, n in by.items()],
                (False, True),
            )
            if by
            else "<p>The run recorded no reason per row (none suppressed, or an algorithm that "
            "gives none).</p>"
        )
    )
    doc = r.provenance
    subtitle = (
        f"k = {doc.get('k')}, {doc.get('algorithm')}, sbc-sql {doc.get('sbc_sql')}"
        if doc
        else "no provenance recorded"
    )
    values = {
        "title": esc(f"Release report: {r.release}"),
        "release": esc(r.release),
        "original": esc(r.original),
        "subtitle": esc(subtitle),
        "created": esc(r.created),
        "provenance": _provenance_section(r),
        "risk": _risk_section(r),
        "ncp": ncp,
        "sizes": sizes,
        "curve": curve_html,
        "sensitive": sensitive_html,
        "suppressed": suppressed_html,
        "metrics": _metrics_section(e),
    }
    return template().substitute(values)


def template() -> string.Template:
    """The page's skeleton, ``report.html`` of this package."""
    text = importlib.resources.files(__package__).joinpath("report.html").read_text(encoding="utf-8")
    return string.Template(text)
