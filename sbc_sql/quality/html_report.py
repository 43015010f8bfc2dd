"""The release report: one self-contained HTML page on how a release was made, the risk
before and after it, what it cost and what each figure means.

:func:`report` reads a release beside its original and renders ``report.html`` (the page's
skeleton, shipped in this package) with:

1. the run's provenance, from the release's COMMENT (:mod:`sbc_sql.provenance`): version,
   algorithm, k, mode, criteria, every column's role, input / released / suppressed rows;
2. the **prosecutor risk** of the records before and after: on the raw QIs of the original
   a record's risk is 1 / its class's size (a class: the records with identical QI values,
   NULL equal to NULL, as :mod:`sbc_sql.quality.profile` defines it); in the release 1 / the
   number of released rows sharing its generalized QI tuple (an attacker cannot tell two
   classes with the same tuple apart). Records are counted in bands of class size: 1
   (100 %), 2 (50 %), 3-4 (25-33 %), 5-9 (11-20 %), 10-19 (5.3-10 %), 20 or more (5 % or
   less), so that the bands above 20 %, 10 % and 5 % add up to profile's figures;
3. NCP per QI and total, 4. the class-size histogram, 6. the sensitive column's diversity
   and 8. every metric's meaning, as :func:`sbc_sql.quality.evaluate.evaluate` measures
   them and :data:`sbc_sql.quality.report.GROUPS` explains them;
5. the total NCP against k: the original re-clustered at each k asked with the release's
   roles, algorithm, options and criteria, each written, verified and measured in a
   transaction that is rolled back (nothing kept), and the release's own k marked with
   its own figure;
7. suppressed rows per reason, as the run recorded them.

**No cell value** enters the page: only column names, counts and figures. The sensitive
column is shown as a histogram of its diversity per class (how many classes hold 1, 2,
... distinct values of it), never as its values. The page holds no script and loads
nothing: its CSS is inline, its charts are inline SVG (each mark carries its figure in
``data-*`` attributes), and it scales to a phone's width. It is written atomically: a
temporary file beside the target, renamed over it once complete.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import html
import importlib.resources
import math
import os
import secrets
import string
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import engines
from ..api import _layout, _located, _tables
from ..engines.base import Engine
from ..errors import InputError, OutputExistsError, SbcError
from ..plan import check_writable_path, same_file
from ..sql.templates import render
from . import report as meanings
from .evaluate import Evaluation, _recorded, evaluate

#: the k of the NCP-against-k curve unless asked otherwise
DEFAULT_CURVE_K = (2, 5, 10, 25, 50)
#: risk bands: label, the class sizes they hold (lowest, highest; None: no bound)
BANDS: tuple[tuple[str, int, int | None], ...] = (
    ("100 %", 1, 1),
    ("50 %", 2, 2),
    ("25-33 %", 3, 4),
    ("11-20 %", 5, 9),
    ("5.3-10 %", 10, 19),
    ("5 % or less", 20, None),
)
#: the roles as the page names them
ROLE_LABELS = (
    ("quasi-identifiers", "qi"),
    ("sensitive", "sensitive"),
    ("identifiers, not released", "identifier"),
    ("released as they are", "insensitive"),
)
#: at most this many bars in the class-size histogram (beyond, sizes are binned)
SIZE_BARS = 40


@dataclass(frozen=True)
class Band:
    label: str
    smallest: int
    largest: int | None
    records: int
    share: float

    @property
    def sizes(self) -> str:
        if self.largest is None:
            return f"{self.smallest} or more"
        return str(self.smallest) if self.smallest == self.largest else f"{self.smallest}-{self.largest}"


@dataclass(frozen=True)
class RiskFigures:
    """Prosecutor risk of records: per band of class size, highest and mean."""

    records: int
    classes: int
    highest: float | None
    mean: float | None
    bands: tuple[Band, ...]


@dataclass(frozen=True)
class CurvePoint:
    k: int
    ncp: float
    classes: int
    suppressed: int
    #: the release's own k (its own figure, not a re-clustering)
    own: bool = False


@dataclass(frozen=True)
class SizeBar:
    """Classes of sizes lo to hi."""

    lo: int
    hi: int
    classes: int


@dataclass
class Report:
    """What :func:`report` measured, the page and where it was written (None: not written)."""

    original: str
    release: str
    created: str
    provenance: dict[str, Any]
    evaluation: Evaluation
    risk_before: RiskFigures
    risk_after: RiskFigures
    class_sizes: list[SizeBar]
    sensitive: str | None
    diversity: list[tuple[int, int]]
    curve: list[CurvePoint]
    curve_note: str | None
    #: the k of the curve that gave no verified release, and why
    curve_failed: list[tuple[int, str]] = field(default_factory=list)
    html: str = ""
    path: Path | None = None
    seconds: dict[str, float] = field(default_factory=dict)


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


# ---------------------------------------------------------------------------------------
# figures


def _sizes(engine: Engine, source: str, columns: Sequence[str]) -> list[tuple[int, int]]:
    """(group size, groups of that size) of ``source`` grouped by ``columns``."""
    rows = engine.fetch_all(render("report_sizes", source=source, col=list(columns)))
    return [(int(size), int(groups)) for size, groups in rows]


def risk_of(sizes: Sequence[tuple[int, int]]) -> RiskFigures:
    """Prosecutor risk from a table's class sizes (size, classes of that size)."""
    records = sum(s * g for s, g in sizes)
    classes = sum(g for _, g in sizes)
    bands = []
    for label, lo, hi in BANDS:
        held = sum(s * g for s, g in sizes if s >= lo and (hi is None or s <= hi))
        bands.append(Band(label, lo, hi, held, held / records if records else 0.0))
    smallest = min((s for s, _ in sizes), default=None)
    return RiskFigures(
        records,
        classes,
        1.0 / smallest if smallest else None,
        classes / records if records else None,
        tuple(bands),
    )


def size_bars(sizes: Sequence[tuple[int, int]], most: int = SIZE_BARS) -> list[SizeBar]:
    """The class-size histogram: a bar per size from the smallest to the largest, or, with
    more sizes than ``most``, bins of equal width."""
    if not sizes:
        return []
    lo, hi = sizes[0][0], sizes[-1][0]
    width = max(1, math.ceil((hi - lo + 1) / most))
    bars = []
    for start in range(lo, hi + 1, width):
        end = min(start + width - 1, hi)
        bars.append(SizeBar(start, end, sum(g for s, g in sizes if start <= s <= end)))
    return bars


def _criteria_of(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The criteria the run kept (anonymize's keywords), from its privacy models."""
    out: dict[str, Any] = {}
    for m in doc.get("privacy_models", []):
        if m.get("name") == "l-diversity":
            out["l_diversity"], out["l_model"] = int(m["l"]), str(m.get("variant", "distinct"))
        elif m.get("name") == "t-closeness":
            out["t_closeness"] = float(m["t"])
        elif m.get("name") == "beta-likeness":
            out["beta_likeness"], out["beta_basic"] = float(m["beta"]), not m.get("enhanced", True)
    return out


def _curve_blocked(doc: Mapping[str, Any]) -> str | None:
    """Why the release cannot be re-clustered from its provenance (None: it can)."""
    from ..cluster import registry

    if not doc:
        return "the release has no provenance, so the run's roles and options are unknown"
    algorithm = str(doc.get("algorithm", ""))
    if algorithm not in registry.names():
        return f"its algorithm '{algorithm}' is not one this sbc-sql runs"
    chosen = registry.get(algorithm)
    # the default reads background knowledge only when asked, and then records the bound
    if "js_diameter" in doc.get("achieved", {}) or (chosen.background and algorithm != registry.DEFAULT):
        return "it was made with background-knowledge options, which the provenance does not record"
    if doc.get("options", {}).get("hierarchies"):
        return "it was made with hierarchy files, which the provenance names but does not hold"
    return None


def curve(
    engine: Engine,
    original: str,
    doc: Mapping[str, Any],
    ks: Sequence[int],
    own: CurvePoint,
    log: Callable[[str], None],
    failed: list[tuple[int, str]],
) -> list[CurvePoint]:
    """Total NCP at each k of ``ks`` (up to half the rows), the original re-clustered with
    the release's roles, algorithm, options and criteria, each release verified and measured
    in a transaction rolled back; ``own`` stands for the release's own k. A k without a
    verified release (criteria it cannot keep) is added to ``failed`` with the reason (the
    project's messages name columns and counts, never a value)."""
    from ..privacy.criteria import Criteria
    from ..run import make_options
    from ..run.cluster import cluster
    from ..run.prepare import prepare, ready
    from ..run.publish import publish

    options = doc.get("options", {})
    roles: dict[str, list[str]] = {"qi": [], "sensitive": [], "drop": [], "keep": []}
    of_role = {"qi": "qi", "sensitive": "sensitive", "identifier": "drop", "insensitive": "keep"}
    for c in doc.get("columns", []):
        roles[of_role[c["role"]]].append(c["name"])
    trial = f"sbc_report_{secrets.token_hex(4)}"
    wanted = sorted({k for k in ks if k >= 2 and k != own.k})
    if not wanted:
        return [own]
    run_options = make_options(
        wanted[0],
        **roles,
        output=trial,
        algorithm=str(doc["algorithm"]),
        mode=str(options.get("mode", "auto")),
        leftover=str(options.get("leftover", "nearest")),
        weights=dict(options.get("weights") or {}),
        max_suppression=float(options.get("max_suppression", 0.01)),
        block_rows=options.get("block_rows"),
        workers=options.get("workers"),
        criteria=Criteria(**_criteria_of(doc)),
        max_width=dict(options.get("max_width") or {}),
        max_values=dict(options.get("max_values") or {}),
        target=options.get("target"),
        target_weight=options.get("target_weight"),
    )
    # the run said its warnings when it made the release; the curve repeats none of them
    prepared = prepare(engine, original, run_options, log=lambda _: None)
    half = prepared.stats.n_rows // 2
    points = [own]
    for k in wanted:
        if k > half:
            log(f"report: k={k} skipped, above half the {prepared.stats.n_rows:,} rows")
            continue
        t = time.perf_counter()
        try:
            prepared = ready(prepared, prepared.plan_for(k, None, trial))
            result = publish(prepared, cluster(prepared), commit=False)
        except SbcError as err:  # e.g. criteria no release at this k keeps: a gap in the curve
            log(f"report: k={k} has no verified release: {err}")
            failed.append((k, str(err)))
            continue
        m = result.measures
        assert m is not None
        points.append(CurvePoint(k, m.total_ncp, m.classes, m.suppressed))
        log(f"report: k={k} NCP {m.total_ncp:.4f} in {time.perf_counter() - t:.1f} s")
    return sorted(points, key=lambda p: p.k)


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
        files = [engines.parse_attach(a) for a in attach]
        for file, name in files:
            engine.attach(file, name)
        # a file opened here is written by nothing: the curve's trials go to a scratch engine
        opened = engine is not database and isinstance(database, (str, Path)) and _is_duckdb(engine)
        scratch = functools.partial(_scratch, Path(database), files) if opened else None  # type: ignore[arg-type]
        found = _report(engine, original, release, ks, sensitive, say, scratch)
    finally:
        if engine is not database:  # an engine given is left open; a connection given stays open
            engine.close()
    found.html = render_page(found)
    if path is not None:
        found.path = write_atomically(path, found.html)
    return found


def _is_duckdb(engine: Engine) -> bool:
    from ..engines.duckdb import DuckDBEngine

    return isinstance(engine, DuckDBEngine)


#: the alias the curve's scratch engine reads the report's database file under
_SOURCE_ALIAS = "sbc_report_source"


@contextlib.contextmanager
def _scratch(
    path: Path, files: Sequence[tuple[Path, str]], engine: Engine, original: str
) -> Iterator[tuple[Engine, str]]:
    """An in-memory DuckDB that reads the report's database file (and the --attach files)
    read-only, and the original's name there: the curve writes its trial releases into it,
    never into the file, which therefore needs no write access."""
    from ..engines.duckdb import DuckDBEngine
    from ..names import Name

    scratch = DuckDBEngine.connect(None)
    try:
        scratch.attach(path, _SOURCE_ALIAS)
        for file, alias in files:
            scratch.attach(file, alias)
        catalog, schema = engine.working()
        named = engine.parse_name(original)
        where = _SOURCE_ALIAS if named.catalog in (None, catalog) else named.catalog
        yield scratch, str(Name(named.name, named.schema or schema, where))
    finally:
        scratch.close()


def _report(
    engine: Engine,
    original: str,
    release: str,
    ks: Sequence[int],
    sensitive: str | None,
    say: Callable[[str], None],
    scratch: Callable[[Engine, str], contextlib.AbstractContextManager[tuple[Engine, str]]] | None = None,
) -> Report:
    seconds: dict[str, float] = {}
    shown_original, shown_release = original, release
    original, release = _located(engine, original, release)
    _tables(engine, original, release)
    layout = _layout(engine, original, release, None)
    doc = _recorded(engine, original, release)
    if sensitive is None:
        declared = [c["name"] for c in doc.get("columns", []) if c.get("role") == "sensitive"]
        verbatim = {c.name for c in layout.verbatim}
        sensitive = next((name for name in declared if name in verbatim), None)

    t = time.perf_counter()
    say("report: evaluating the release ...")
    evaluation = evaluate(engine, original, release, sensitive=sensitive, queries=0)
    seconds["evaluate"] = time.perf_counter() - t

    t = time.perf_counter()
    before = risk_of(_sizes(engine, original, [c.name for c in layout.qis]))
    after = risk_of(_sizes(engine, release, layout.qi_columns()))
    classes = _sizes(engine, release, ["eq_class"])
    diversity: list[tuple[int, int]] = []
    if sensitive is not None and evaluation.classes:
        rows = engine.fetch_all(render("report_diversity", release=release, sensitive=sensitive))
        diversity = [(int(v), int(c)) for v, c in rows]
    seconds["risk"] = time.perf_counter() - t

    own = CurvePoint(
        int(doc.get("k") or evaluation.smallest_class),
        evaluation.total_ncp,
        evaluation.classes,
        evaluation.suppressed,
        own=True,
    )
    note = None
    points: list[CurvePoint] = []
    failed: list[tuple[int, str]] = []
    if ks:
        note = _curve_blocked(doc)
        if note is None:
            t = time.perf_counter()
            say(f"report: NCP against k, re-clustering at k = {', '.join(map(str, sorted(set(ks))))} ...")
            if scratch is None:
                points = curve(engine, original, doc, ks, own, say, failed)
            else:
                with scratch(engine, original) as (trials, source):
                    points = curve(trials, source, doc, ks, own, say, failed)
            seconds["curve"] = time.perf_counter() - t
        else:
            note = f"no curve: {note}"
    else:
        note = "no curve asked"
    return Report(
        original=shown_original,
        release=shown_release,
        created=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        provenance=doc,
        evaluation=evaluation,
        risk_before=before,
        risk_after=after,
        class_sizes=size_bars(classes),
        sensitive=sensitive,
        diversity=diversity,
        curve=points,
        curve_note=note,
        curve_failed=failed,
        seconds=seconds,
    )


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
