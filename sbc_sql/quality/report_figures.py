"""The release report's figures: everything the page shows, read from the database and
measured, as plain data (numbers, names and the run's provenance), nothing of the page.

:func:`measure` reads a release beside its original:

- the run's provenance, from the release's COMMENT (:mod:`sbc_sql.provenance`);
- the **prosecutor risk** of the records before and after: on the raw QIs of the original
  a record's risk is 1 / its class's size (a class: the records with identical QI values,
  NULL equal to NULL, as :mod:`sbc_sql.quality.profile` defines it); in the release 1 / the
  number of released rows sharing its generalized QI tuple (an attacker cannot tell two
  classes with the same tuple apart). Records are counted in bands of class size: 1
  (100 %), 2 (50 %), 3-4 (25-33 %), 5-9 (11-20 %), 10-19 (5.3-10 %), 20 or more (5 % or
  less), so that the bands above 20 %, 10 % and 5 % add up to profile's figures;
- every figure of :func:`sbc_sql.quality.evaluate.evaluate`, its query error included (its
  defaults); NCP per QI and total, the class sizes, the sensitive column's diversity per class and
  suppressed rows per reason, as :func:`sbc_sql.quality.evaluate.evaluate` measures them;
- the total NCP against k: the original re-clustered at each k asked with the release's
  roles, algorithm, options and criteria, each written, verified and measured in a
  transaction that is rolled back (nothing kept), and the release's own k with its own
  figure.

No cell value is read into the figures: only column names, counts and measures. The
sensitive column is read as its diversity per class (how many classes hold 1, 2, ...
distinct values of it), never as its values. :mod:`sbc_sql.quality.report_render` turns the
figures into the page.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import math
import secrets
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import engines
from ..api import _layout, _located, _tables
from ..engines.base import Engine
from ..errors import SbcError
from ..names import Name
from ..privacy.criteria import recorded_criteria
from ..sql.templates import render
from . import population_keys
from .evaluate import Evaluation, _recorded, evaluate, recorded_sensitive
from .population_keys import Basis, PopulationRisk

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
class ReportFigures:
    """What :func:`measure` read and measured: the names of the tables as the caller gave
    them, when, the run's provenance and every figure of the page."""

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
    seconds: dict[str, float] = field(default_factory=dict)
    #: with a sampling fraction or weights: the risk in the population of the original on
    #: its raw QIs and of the release (None: not asked)
    population_before: PopulationRisk | None = None
    population_after: PopulationRisk | None = None


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
    progress: Callable[[str, int, int], None] | None = None,
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
        allow_determinant=[str(c) for c in options.get("allow_determinant") or ()],
        output=trial,
        algorithm=str(doc["algorithm"]),
        mode=str(options.get("mode", "auto")),
        leftover=str(options.get("leftover", "nearest")),
        weights=dict(options.get("weights") or {}),
        max_suppression=float(options.get("max_suppression", 0.01)),
        block_rows=options.get("block_rows"),
        workers=options.get("workers"),
        criteria=Criteria(**recorded_criteria(doc)),
        max_width=dict(options.get("max_width") or {}),
        max_values=dict(options.get("max_values") or {}),
        target=options.get("target"),
        target_weight=options.get("target_weight"),
    )
    # the run said its warnings when it made the release; the curve repeats none of them
    prepared = prepare(engine, original, run_options, log=lambda _: None)
    half = prepared.stats.n_rows // 2
    points = [own]
    for i, k in enumerate(wanted):
        if progress is not None:
            progress("NCP against k", i, len(wanted))
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
    if progress is not None:
        progress("NCP against k", len(wanted), len(wanted))
    return sorted(points, key=lambda p: p.k)


#: a factory of the curve's engine: (the report's engine, the original) -> (the engine the
#: trial releases are written to, the original's name there)
Scratch = Callable[[Engine, str], contextlib.AbstractContextManager[tuple[Engine, str]]]


def scratch_for(database: Any, engine: Engine, files: Sequence[tuple[Path, str]]) -> Scratch | None:
    """Where the curve writes its trial releases when ``engine`` was opened here on a
    database file (it is opened read-only and written by nothing): an in-memory engine that
    reads the file (:func:`_scratch`); None: the engine itself, in a transaction rolled back.
    A URL names a server's database, which has no files (:meth:`Engine.database_files`)."""
    in_file = isinstance(database, (str, Path)) and bool(engine.database_files())
    opened = engine is not database and in_file
    return functools.partial(_scratch, Path(database), files) if opened else None


#: the alias the curve's scratch engine reads the report's database file under
_SOURCE_ALIAS = "sbc_report_source"


@contextlib.contextmanager
def _scratch(
    path: Path, files: Sequence[tuple[Path, str]], engine: Engine, original: str
) -> Iterator[tuple[Engine, str]]:
    """An in-memory engine that reads the report's database file (and the --attach files)
    read-only, and the original's name there: the curve writes its trial releases into it,
    never into the file, which therefore needs no write access."""
    scratch = engines.connect(None)
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


def measure(
    engine: Engine,
    original: str,
    release: str,
    ks: Sequence[int],
    sensitive: str | None,
    say: Callable[[str], None],
    scratch: Scratch | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    b: Basis | None = None,
) -> ReportFigures:
    """The figures of ``release`` against ``original`` (see this module's docstring);
    ``ks``: the k of the curve (empty: none), ``sensitive``: the column of the diversity
    figures (None: the first sensitive column the release declares and shows verbatim),
    ``say`` receives a line per step, ``scratch``: where the curve's trials are written
    (None: ``engine``), ``progress(step, done, total)`` follows the long steps, ``b`` the
    sampling fraction or weights of the population risk (None: not asked)."""
    b = b or Basis()
    seconds: dict[str, float] = {}
    shown_original, shown_release = original, release
    original, release = _located(engine, original, release)
    _tables(engine, original, release)
    layout = _layout(engine, original, release, None)
    doc = _recorded(engine, original, release)
    if sensitive is None:
        sensitive = recorded_sensitive(doc, layout)

    t = time.perf_counter()
    say("report: evaluating the release ...")
    # every figure evaluate gives, its query error with evaluate's defaults included
    evaluation = evaluate(
        engine,
        original,
        release,
        sensitive=sensitive,
        progress=progress,
        sampling_fraction=b.fraction,
        sample_weights=b.weights,
    )
    seconds["evaluate"] = time.perf_counter() - t

    t = time.perf_counter()
    before = risk_of(_sizes(engine, original, [c.name for c in layout.qis]))
    after = risk_of(_sizes(engine, release, layout.qi_columns()))
    classes = _sizes(engine, release, ["eq_class"])
    diversity: list[tuple[int, int]] = []
    if sensitive is not None and evaluation.classes:
        rows = engine.fetch_all(render("report_diversity", release=release, sensitive=sensitive))
        diversity = [(int(v), int(c)) for v, c in rows]
    population_before = None
    if b.given:
        weights = [c for c in layout.verbatim if c.name == b.weights]
        population_keys.check_weights(engine, original, weights, b, shown_original)
        population_before = population_keys.figures(engine, original, [c.name for c in layout.qis], b)
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
                points = curve(engine, original, doc, ks, own, say, failed, progress)
            else:
                with scratch(engine, original) as (trials, source):
                    points = curve(trials, source, doc, ks, own, say, failed, progress)
            seconds["curve"] = time.perf_counter() - t
        else:
            note = f"no curve: {note}"
    else:
        note = "no curve asked"
    return ReportFigures(
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
        population_before=population_before,
        population_after=evaluation.population,
    )
