"""Verify stage: a release is reported only once SQL has shown it k-anonymous and complete.

With the run's class labels (during ``anonymize``) the check is row-exact over the row and
class tables just written: every source row is labelled once, released once with its own
values, and lies inside its class's ranges and sets; every class has one tuple; and every
privacy model holds (k-anonymity by default: every class has >= k rows; each model's
violation check is its own query, see :mod:`sbc_sql.privacy`). With background knowledge,
every class's beliefs lie within the run's bound too (:func:`js_problems`).

For any other original + release pair there are no labels, and :func:`verify_pair` checks
the privacy models, one tuple per class, the counts the run recorded in its provenance, and
each class's released values against the source rows that lie inside its generalization
(:func:`class_values_sql`, joined on one or two QIs' values so that no class meets every
row); :func:`release_tables_problems` holds a release view to its row and class tables and
:func:`text_view_problems` its text view to the text they give. A release passes only if
no check reports a problem."""

from __future__ import annotations

import contextlib
import itertools
import math
import secrets
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from ..cluster.runs import suppression_budget
from ..engines.base import Engine
from ..model import Column, ledger_objects_of, release_objects_of
from ..privacy import KAnonymity, PrivacyModel, check_all
from ..provenance import Provenance
from ..sql.matching import KEYS, inside, pairs_match, pairs_sql, range_spans_sql, value_pairs_sql
from ..sql.nodes import as_number, conj, list_size, ref, same_key
from ..sql.templates import render
from . import ledger, write
from .measure import Layout, class_sizes_sql


@dataclass(frozen=True)
class Verdict:
    k: int
    problems: tuple[str, ...] = field(default_factory=tuple)
    facts: dict[str, int] = field(default_factory=dict)
    #: what the verdict rests on, e.g. roles inferred for want of provenance
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return not self.problems


def _same(c: Column, row: str, cls: str) -> exp.Expression:
    return same_key(ref(c.name, row), ref(c.name, cls), c)


def tuple_sizes_sql(layout: Layout, release: str) -> exp.Expression:
    return render("tuple_sizes", release=release, qicol=layout.qi_columns())


def one_tuple_condition(layout: Layout) -> exp.Expr:
    """Over a class's rows: every generalized QI column holds a single value (NULL included).

    Value-set (list) columns are counted distinct rather than compared by MIN and MAX: the
    same test, and half the time on 1,000,000 rows (0.6 s against 1.0 s for five lists)."""
    lists = {c.name for c in layout.qis if c.kind != "numeric"}
    parts: list[exp.Expr] = []
    for name in layout.qi_columns():
        c = ref(name)
        same: exp.Expr
        if name in lists:
            same = exp.LTE(
                this=exp.Count(this=exp.Distinct(expressions=[c])), expression=exp.Literal.number(1)
            )
        else:
            same = exp.NullSafeEQ(this=exp.Min(this=c), expression=exp.Max(this=c))
        count = exp.Count(this=c)
        uniform = exp.or_(
            exp.EQ(this=count, expression=exp.Literal.number(0)),
            exp.EQ(this=count, expression=exp.Count(this=exp.Star())),
        )
        parts.append(exp.and_(same, uniform))
    return conj(parts)


Models = Sequence[PrivacyModel]

#: a timestamp's range is measured in microseconds; its --max-width is given in days
MICROS_PER_DAY = 86_400_000_000


@dataclass(frozen=True)
class Limit:
    """A per-column limit on a release's classes: ``bound`` is the widest range of numeric QI
    ``column`` (as the user gave it: the column's units, days for a date or timestamp) or the
    most values of categorical QI ``column``."""

    column: Column
    bound: float

    @property
    def flag(self) -> str:
        return "--max-width" if self.column.kind == "numeric" else "--max-values"

    @property
    def scale(self) -> float:
        """Units of the figure per unit of the bound (a timestamp's microseconds per day)."""
        return MICROS_PER_DAY if self.column.temporal == "timestamp" else 1.0

    def figure(self) -> exp.Expression:
        """The class's range or set size, over its rows (one tuple per class)."""
        c = self.column
        if c.kind == "numeric":
            hi = as_number(exp.Max(this=ref(c.name + "_max")), c)
            lo = as_number(exp.Min(this=ref(c.name + "_min")), c)
            return exp.Sub(this=hi, expression=lo)
        return exp.Max(this=list_size(ref(c.name)))


def limits_of(
    qis: Sequence[Column], max_width: Mapping[str, float], max_values: Mapping[str, int]
) -> tuple[Limit, ...]:
    """The limits asked, in the QIs' order."""
    return tuple(
        Limit(c, float(max_width[c.name] if c.kind == "numeric" else max_values[c.name]))
        for c in qis
        if c.name in (max_width if c.kind == "numeric" else max_values)
    )


def _n(count: Any) -> str:
    """A count as a driver gives it (an int, a Decimal, None for none), as every line of
    sbc-sql prints one: 2,000."""
    return f"{int(count or 0):,}"


def limits_sql(limits: Sequence[Limit], relation: str) -> exp.Expression:
    """One row: per limit, the classes of ``relation`` over it, then per limit the widest
    range or largest set (see sql/templates/class_limits.sql)."""
    figures = [f"sbc_figure_{i}" for i in range(len(limits))]
    broken: list[exp.Expr] = [
        exp.Filter(
            this=exp.Count(this=exp.Star()),
            expression=exp.Where(this=exp.GT(this=ref(f), expression=exp.Placeholder(this=f"limit_{i}"))),
        )
        for i, f in enumerate(figures)
    ]
    worst: list[exp.Expr] = [exp.Max(this=ref(f)) for f in figures]
    return render(
        "class_limits", release=relation, figure=[lim.figure() for lim in limits], broken=broken, worst=worst
    )


def limits_params(limits: Sequence[Limit]) -> dict[str, float]:
    return {f"limit_{i}": lim.bound * lim.scale for i, lim in enumerate(limits)}


def limits_problems(
    engine: Engine, limits: Sequence[Limit], relation: str
) -> tuple[list[str], dict[str, int]]:
    """What the limits' check finds in ``relation`` (a class table or a release): classes
    wider than a --max-width or with more values than a --max-values, named by the column,
    its limit and the widest or largest found (a width or a count, never a value)."""
    if not limits:
        return [], {}
    row = engine.fetch_one(limits_sql(limits, relation), limits_params(limits))
    broken, worst = row[: len(limits)], row[len(limits) :]
    problems = []
    for lim, count, top in zip(limits, broken, worst, strict=True):
        if count:
            largest = float(top) / lim.scale
            what = "span more than" if lim.flag == "--max-width" else "hold more values than"
            problems.append(
                f"{int(count):,} class(es) {what} {lim.flag} {lim.column.name}={lim.bound:g} "
                f"(the {'widest' if lim.flag == '--max-width' else 'largest'}: {largest:g})"
            )
    return problems, {"limits_broken": sum(int(c or 0) for c in broken)}


def default_models(k: int) -> tuple[PrivacyModel, ...]:
    """The privacy models a release is verified against when none are named: k-anonymity."""
    return (KAnonymity(k),)


def check_release(
    engine: Engine,
    layout: Layout,
    release: str,
    k: int,
    models: Models | None = None,
    original: str | None = None,
) -> tuple[list[str], dict[str, int]]:
    """The privacy models (k-anonymity unless named) over the release alone, and one
    generalized tuple per class: with k-anonymity, every generalized tuple is shared by >= k
    rows. ``original`` is read by models that compare with the input's distribution."""
    problems = check_all(engine, models or default_models(k), release, original)
    classes, smallest, _, _, released = engine.fetch_one(class_sizes_sql(release))
    (mixed,) = engine.fetch_one(render("class_tuples", release=release, same=one_tuple_condition(layout)))
    facts = {
        "classes": int(classes or 0),
        "smallest_class": int(smallest or 0),
        "released": int(released or 0),
        "mixed_classes": int(mixed or 0),
    }
    return problems + class_problems(facts), facts


def class_problems(facts: dict[str, int]) -> list[str]:
    """What the class-level facts say is wrong: a class with two tuples (a class below k is
    the k-anonymity model's)."""
    problems: list[str] = []
    if facts["mixed_classes"]:
        problems.append(f"{facts['mixed_classes']:,} class(es) carry more than one generalized tuple")
    return problems


def rows_missing_sql(
    layout: Layout,
    source: str,
    labels: str,
    release: str,
    row_id: exp.Expression,
    labelled: str | None = None,
) -> exp.Expression:
    verb = [c.name for c in layout.verbatim]
    return render(
        "rows_missing",
        labelled=write.released_rows(source, labels, row_id, verb, labelled),
        release=release,
        verb=verb,
    )


def class_checks_sql(
    layout: Layout,
    source: str,
    labels: str,
    rows: str,
    classes: str,
    row_id: exp.Expression,
    labelled: str | None = None,
) -> exp.Expression:
    # a QI released as one value (microaggregated) is held to its class's aggregate by
    # aggregate_checks_sql, not to a range or a set
    cats = [c for c in layout.qis if c.kind != "numeric" and not c.one_value]
    qi = [c.name for c in layout.qis]
    return render(
        "class_checks",
        classes=classes,
        rows=rows,
        labelled=write.released_rows(source, labels, row_id, qi, labelled),
        qi=qi,
        inside=conj([inside(c, "s", "g") for c in layout.qis if c.kind == "numeric" and not c.one_value]),
        cat=[c.name for c in cats],
        same=[same_key(ref(c.name, "s"), exp.column("sbc_value", "u"), c) for c in cats],
    )


#: how far a floating-point mean may lie from its recomputation (a share of its size): the
#: engine may sum a class's values in another order
FLOAT_TOLERANCE = 1e-9


def _differs(c: Column, column_type: write.ColumnType) -> exp.Expr:
    """Over c (the class table) and g (the recomputation): the released value of QI ``c``
    is not its recomputed aggregate (NULL equal to NULL only); a floating-point mean within
    :data:`FLOAT_TOLERANCE` of it is equal."""
    released, again = ref(c.name, "c"), ref(c.name, "g")
    if c.aggregate != "mean" or not column_type(c.type).is_type(*_FLOATS):
        return exp.not_(exp.NullSafeEQ(this=released, expression=again))
    one_null = exp.NEQ(
        this=exp.Paren(this=exp.Is(this=released.copy(), expression=exp.Null())),
        expression=exp.Paren(this=exp.Is(this=again.copy(), expression=exp.Null())),
    )
    gap = exp.Abs(this=exp.Sub(this=released, expression=again))
    bound = exp.Mul(
        this=exp.Literal.number(FLOAT_TOLERANCE),
        expression=exp.Greatest(this=exp.Literal.number(1), expressions=[exp.Abs(this=again.copy())]),
    )
    return exp.or_(one_null, exp.GT(this=gap, expression=bound))


#: the floating-point types, whose means are compared within FLOAT_TOLERANCE
_FLOATS = (exp.DataType.Type.FLOAT, exp.DataType.Type.DOUBLE)


def aggregate_checks_sql(
    layout: Layout, classes: str, rows: exp.Query, column_type: write.ColumnType
) -> list[exp.Expression]:
    """The queries that hold a microaggregated class table to its classes: each mean and
    median recomputed from ``rows`` (the released rows with their classes and QIs) by the
    expression the class table was made with (class_aggregates.sql, one query), then each
    mode (mode_checks.sql, one query per QI). Each gives a count of classes whose released
    value is wrong. None when no QI is released as one value."""
    computed = [c for c in layout.qis if c.one_value and c.aggregate != "mode"]
    out: list[exp.Expression] = []
    if computed:
        out.append(
            render(
                "class_aggregates",
                classes=classes,
                labelled=rows.copy(),
                agg=[write.aggregate_sql(c, ref(c.name, "s"), column_type) for c in computed],
                one=[c.name for c in computed],
                differs=[_differs(c, column_type) for c in computed],
                wrong=[f"wrong_{i}" for i in range(len(computed))],
            )
        )
    out += [
        render("mode_checks", classes=classes, qi=c.name, modes=write.class_mode_sql(c, rows.copy()))
        for c in layout.qis
        if c.aggregate == "mode"
    ]
    return out


def aggregate_problems(
    engine: Engine,
    layout: Layout,
    source: str,
    labels: str,
    classes: str,
    row_id: exp.Expression,
    labelled: str | None,
) -> tuple[list[str], int]:
    """Problems with a microaggregated release's values: classes whose released mean,
    median or mode is not the one recomputed from their source rows; and their count."""
    rows = write.released_rows(source, labels, row_id, [c.name for c in layout.qis], labelled)
    wrong = 0
    for query in aggregate_checks_sql(layout, classes, rows, engine.column_type):
        wrong += sum(int(x or 0) for x in engine.fetch_one(query))
    if not wrong:
        return [], 0
    return [
        f"{wrong:,} released class value(s) are not their class's aggregate recomputed from its "
        "source rows (counted once per class and QI)"
    ], wrong


def label_coverage_sql(source: str, labelled: str) -> exp.Expression:
    return render("label_coverage", source=source, labelled=labelled)


def labelled_sql(
    layout: Layout,
    source: str,
    labels: str,
    labelled: str,
    row_id: exp.Expression,
    tuples: tuple[str, str] | None = None,
) -> exp.Expression:
    """The labelled source the checks read (:func:`sbc_sql.stages.write.labelled_sql`): the
    QIs and the verbatim columns, the verbatim only with ``tuples``."""
    columns = write.labelled_columns(layout.qis, layout.verbatim, tuples is not None)
    return write.labelled_sql(source, labels, labelled, row_id, columns)


@contextlib.contextmanager
def working_tables(engine: Engine, *names: str) -> Iterator[None]:
    """The working tables ``names`` (the labelled source, the population's figures: made
    inside the block, or not) dropped when the block ends, however it ends: after the
    block's transaction, which a failure has already rolled back (a statement in a failed
    transaction would fail too)."""
    try:
        yield
    finally:
        for name in names:
            engine.discard(name)


def label_checks_sql(
    layout: Layout,
    source: str,
    labels: str,
    rows: str,
    classes: str,
    row_id: exp.Expression,
    models: Models,
    tuples: tuple[str, str] | None = None,
    labelled: str | None = None,
) -> list[exp.Expression]:
    """The queries :func:`verify_with_labels` runs, in its order (a dry run shows them): each
    privacy model's violation check over the row table, then the row-exact checks, which
    read the run's labelled source ``labelled`` (:func:`labelled_sql`: the source joined to
    the labels once; None: the name a run alone gives it). With ``tuples`` (the distinct
    tuples' table and the tuples' labels, of a run that clustered tuples) the values are
    checked once per tuple against the classes; the rows' labels, and the rows released, row
    by row."""
    labelled = labelled or labelled_name(labels)
    if tuples is None:
        checks = class_checks_sql(layout, source, labels, rows, classes, row_id, labelled)
    else:
        checks = class_checks_sql(layout, tuples[0], tuples[1], rows, classes, row_id)
    return [m.violations_sql(rows, source) for m in models] + [
        checks,
        label_coverage_sql(source, labelled),
        rows_missing_sql(layout, source, labels, rows, row_id, labelled),
    ]


def labelled_name(labels: str) -> str:
    """The name of the labelled source of the labels ``labels``."""
    return f"{labels}_labelled"


def verify_with_labels(
    engine: Engine,
    layout: Layout,
    source: str,
    labels: str,
    rows: str,
    classes: str,
    k: int,
    models: Models | None = None,
    limits: Sequence[Limit] = (),
    tuples: tuple[str, str] | None = None,
    labelled: str | None = None,
) -> Verdict:
    """Row-exact verification of a release just built from ``labels`` as a row table and a
    class table (the release view joins them: it shows each row its class's one tuple).
    The privacy models (k-anonymity unless named) are checked over the row table, the
    per-column ``limits`` over the class table. ``tuples``: see :func:`label_checks_sql`.
    ``labelled``: the run's labelled source (:func:`labelled_sql`), which the checks read;
    without it, one is made for the checks and dropped after."""
    if labelled is None:
        made = labelled_name(labels)
        with working_tables(engine, made):
            engine.execute(labelled_sql(layout, source, labels, made, engine.row_id("s"), tuples))
            return verify_with_labels(
                engine, layout, source, labels, rows, classes, k, models, limits, tuples, made
            )
    models = models or default_models(k)
    problems = check_all(engine, models, rows, source)
    limit_problems, limit_facts = limits_problems(engine, limits, classes)
    problems += limit_problems
    *_, checks, coverage, missing_rows = label_checks_sql(
        layout, source, labels, rows, classes, engine.row_id("s"), models, tuples, labelled
    )
    n_classes, distinct, smallest, released, unmatched, *outside = engine.fetch_one(checks)
    facts = {
        "classes": int(n_classes or 0),
        "smallest_class": int(smallest or 0),
        "released": int(released or 0),
        "mixed_classes": int(n_classes or 0) - int(distinct or 0),
        "unmatched_classes": int(unmatched or 0),
        "outside": sum(int(x or 0) for x in outside),
        **limit_facts,
    }
    problems += class_problems(facts)
    if facts["unmatched_classes"]:
        problems.append(
            f"{facts['unmatched_classes']:,} class(es) differ between the class table "
            "and the row table (missing from one, or another size)"
        )
    if facts["outside"]:
        problems.append(
            f"{facts['outside']:,} QI value(s) lie outside their class's range or set "
            "(numeric QIs counted once per row)"
        )
    source_rows, n_labels, strays, suppressed, unlabelled = engine.fetch_one(coverage)
    facts.update(source_rows=int(source_rows), suppressed=int(suppressed))
    if n_labels != source_rows or strays or unlabelled:
        problems.append(
            f"{_n(source_rows)} source rows but {_n(n_labels)} labels ({_n(strays)} naming no source row, "
            f"{_n(unlabelled)} source rows unlabelled): each row must be labelled once"
        )
    if facts["released"] != source_rows - suppressed:
        problems.append(
            f"the release has {facts['released']:,} rows; expected "
            f"{_n(source_rows - suppressed)} ({_n(source_rows)} in, {_n(suppressed)} suppressed)"
        )
    if any(c.one_value for c in layout.qis):
        wrong, facts["wrong_aggregates"] = aggregate_problems(
            engine, layout, source, labels, classes, engine.row_id("s"), labelled
        )
        problems += wrong
    missing, extra = engine.fetch_one(missing_rows)
    facts.update(missing=int(missing), extra=int(extra))
    if missing or extra:
        problems.append(f"{_n(missing)} row(s) lost and {_n(extra)} row(s) added or changed in the release")
    return Verdict(k, tuple(problems), facts)


def js_diameter_sql(labels: str) -> exp.Expression:
    """One row: pairs of beliefs in one class farther apart than $j, and the largest."""
    return render("js_diameter", labels=labels, beliefs=f"{labels}_beliefs")


def js_problems(engine: Engine, labels: str, threshold: float) -> tuple[list[str], float]:
    """The background-knowledge bound checked on every class of the run's labels (uploaded
    with each row's belief, and the beliefs under ``<labels>_beliefs``): (problems, the
    diameter, the largest Jensen-Shannon divergence in bits of two beliefs in one class)."""
    violations, diameter = engine.fetch_one(js_diameter_sql(labels), {"j": threshold})
    problems = []
    if violations:
        problems.append(
            f"{_n(violations)} pair(s) of background-knowledge beliefs in one class lie farther apart "
            f"than J={threshold:g} bits"
        )
    return problems, float(diameter or 0.0)


def key_cost_sql(c: Column, original: str, release: str) -> exp.Expression:
    if c.kind == "numeric":
        spans = range_spans_sql(c, original, release)
        return render("key_cost_range", spans=spans, release=release, original=original, key=c.name)
    return render(
        "key_cost",
        pairs=value_pairs_sql(c, original, release),
        original=original,
        key=c.name,
        match=same_key(exp.column("sbc_key", "p"), exp.column("sbc_key", "n"), c),
    )


def join_keys(
    engine: Engine, layout: Layout, original: str, release: str, classes: int, n_rows: int
) -> tuple[Column, ...]:
    """The one or two QIs on whose values :func:`class_values_sql` joins the source to the
    classes: those of the lowest estimated work. Per QI, one query counts its (class, value)
    pairs and the source rows they meet; the estimate per released tuple is the pairs it
    is crossed with (the product of the QIs' pairs per class) plus the source rows that
    match them and its released values (as if the QIs and the values were independent). A
    skewed QI of many values can meet more rows than a numeric one of narrow ranges, and
    two QIs together usually meet far fewer than either: counting decides, not kinds."""
    if len(layout.qis) == 1 or classes <= 0 or n_rows <= 0:
        return layout.qis[:1]
    counted: dict[str, tuple[int, int]] = {}
    for c in layout.qis:
        pairs, met = engine.fetch_one(key_cost_sql(c, original, release))
        counted[c.name] = (int(pairs), int(met))
    (tuples,) = engine.fetch_one(
        render("verbatim_tuples", original=original, verb=[c.name for c in layout.verbatim])
    )
    rows_per_tuple = n_rows / max(int(tuples), 1)

    def estimate(chosen: tuple[Column, ...]) -> float:
        pairs = math.prod(counted[c.name][0] / classes for c in chosen)
        met = rows_per_tuple * math.prod(counted[c.name][1] / (classes * n_rows) for c in chosen)
        return pairs + met

    options: list[tuple[Column, ...]] = [(c,) for c in layout.qis]
    options += list(itertools.combinations(layout.qis, 2))
    return min(options, key=estimate)


def class_values_sql(layout: Layout, original: str, release: str, keys: Sequence[Column]) -> exp.Expression:
    return render(
        "class_values",
        release=release,
        original=original,
        pairs=pairs_sql(keys, original, release),
        keys=[ref(name, "p") for name in KEYS[: len(keys)]],
        match=conj([pairs_match(keys, "s", "r"), *(_same(c, "s", "r") for c in layout.verbatim)]),
        qi=[c.name for c in layout.qis],
        qicol=layout.qi_columns(),
        verb=[c.name for c in layout.verbatim],
        inside=conj([inside(c, "s", "r") for c in layout.qis]),
    )


def verify_pair(
    engine: Engine,
    layout: Layout,
    original: str,
    release: str,
    k: int,
    models: Models | None = None,
    recorded: Provenance | None = None,
    limits: Sequence[Limit] = (),
    max_suppression: float | None = None,
) -> Verdict:
    """Verification of any original + release pair (no class labels at hand) against the
    privacy models (k-anonymity unless named): one tuple per class, and each class's
    released values against the source rows inside its generalization. With the run's
    provenance (``recorded``) the release must hold exactly the rows and classes the run
    wrote, and its suppressed rows must fit the bound the run recorded; without it, an
    input row the release lacks is a problem unless the auditor allows it
    (``max_suppression``, a share of the input rows, 0 unless given). The auditor's bound
    holds over a recorded suppression too. The per-column ``limits`` are checked over the
    release's classes."""
    problems, facts = check_release(engine, layout, release, k, models, original)
    limit_problems, limit_facts = limits_problems(engine, limits, release)
    problems += limit_problems
    facts.update(limit_facts)
    (n_rows,) = engine.fetch_one(render("row_count", source=original))
    facts["source_rows"] = int(n_rows)
    if facts["released"] > n_rows:
        problems.append(f"the release has {facts['released']:,} rows, more than the {_n(n_rows)} input rows")
    if recorded is None:
        facts["suppressed"] = max(int(n_rows) - facts["released"], 0)
        problems += unrecorded_loss_problems(facts["suppressed"], int(n_rows), max_suppression or 0.0)
    else:
        problems += recorded_problems(recorded, facts)
        facts["suppressed"] = recorded.suppressed
        if max_suppression is not None:
            problems += suppression_bound_problems(
                recorded.suppressed, recorded.input_rows, max_suppression, "the auditor's --max-suppression"
            )
    if any(c.one_value for c in layout.qis):
        problems += micro_values_problems(engine, layout, original, release, facts)
    else:
        problems += values_problems(engine, layout, original, release, facts, int(n_rows))
    return Verdict(k, tuple(problems), facts)


def micro_values_sql(layout: Layout, original: str, release: str) -> exp.Expression:
    """The label-free checks of a microaggregated release's values (micro_values.sql)."""
    num = [c for c in layout.qis if c.kind == "numeric" and c.one_value]
    within = [
        exp.Case(
            ifs=[exp.If(this=exp.Is(this=ref(c.name, "t"), expression=exp.Null()), true=exp.true())],
            default=exp.Between(
                this=ref(c.name, "t"), low=ref(c.name + "_lo", "p"), high=ref(c.name + "_hi", "p")
            ),
        )
        for c in num
    ]
    return render(
        "micro_values",
        release=release,
        original=original,
        verb=[c.name for c in layout.verbatim],
        num=[c.name for c in num],
        lo=[c.name + "_lo" for c in num],
        hi=[c.name + "_hi" for c in num],
        inside=conj(within),
        mode=[c.name for c in layout.qis if c.kind != "numeric" and c.one_value],
        match=conj([_same(c, "r", "s") for c in layout.verbatim]),
    )


def micro_values_problems(
    engine: Engine, layout: Layout, original: str, release: str, facts: dict[str, int]
) -> list[str]:
    """What an auditor without the run's labels can hold a microaggregated release's values
    to (micro_values.sql): each class's numeric values within the range of the source rows
    that could be its rows, its categorical modes values the source holds, its verbatim rows
    the source's. ``facts`` gains the counts: outside, extra, unknown_modes."""
    problems: list[str] = []
    with engine.hashed_joins():
        outside, extra, *unknown = engine.fetch_one(micro_values_sql(layout, original, release))
    facts.update(outside=int(outside), extra=int(extra), unknown_modes=sum(int(x or 0) for x in unknown))
    if outside:
        problems.append(
            f"{_n(outside)} class(es) release a numeric value outside the range of the source rows "
            "that could be theirs (those holding their rows' verbatim values)"
        )
    if facts["unknown_modes"]:
        problems.append(
            f"{_n(facts['unknown_modes'])} class value(s) of a categorical QI are no value of the source"
        )
    if extra:
        problems.append(f"{_n(extra)} release row(s) carry released values that the input lacks")
    return problems


def values_problems(
    engine: Engine,
    layout: Layout,
    original: str,
    release: str,
    facts: dict[str, int],
    n_rows: int,
    keys: Sequence[Column] | None = None,
) -> list[str]:
    """Each class's released values against the source rows inside its generalization:
    none released more often than the source holds them there, none made up, and no more
    source rows outside every class than ``facts['suppressed']`` (``facts`` gains the
    counts: overdrawn, uncovered, extra). ``keys``: the QIs to join on, when the caller has
    chosen them (:func:`join_keys`)."""
    problems: list[str] = []
    if keys is None:
        keys = join_keys(engine, layout, original, release, facts["classes"], n_rows)
    with engine.hashed_joins():
        overdrawn, uncovered, extra = engine.fetch_one(class_values_sql(layout, original, release, keys))
    facts.update(overdrawn=int(overdrawn), uncovered=int(uncovered), extra=int(extra))
    if overdrawn:
        problems.append(
            f"{_n(overdrawn)} class(es) release values more often than the source has rows with "
            "those values inside the class's ranges and sets (values moved between classes, "
            "or made up)"
        )
    if uncovered > facts["suppressed"]:
        problems.append(
            f"{_n(uncovered)} input row(s) are covered by no class of the release, but "
            f"only {facts['suppressed']:,} are suppressed"
        )
    if extra:
        problems.append(f"{_n(extra)} release row(s) carry released values that the input lacks")
    return problems


#: the algorithms that leave rows out whatever --max-suppression says (cluster/background)
UNBOUNDED_ALGORITHMS = ("kagg", "kinc", "beta-ge")


def unrecorded_loss_problems(missing: int, n_rows: int, share: float) -> list[str]:
    """Input rows a release without provenance lacks: nothing records that a run suppressed
    them (a deleted class looks the same), so they are lost unless the auditor allows that
    many (``share`` of the input rows, as a run's --max-suppression counts them)."""
    allowed = suppression_budget(share, n_rows)
    if missing <= allowed:
        return []
    need = min(math.ceil(missing / n_rows * 10_000) / 10_000, 0.9999) if n_rows else 0.0
    return [
        f"the release lacks {missing:,} of the {n_rows:,} input rows, and no provenance records them "
        f"as suppressed (--max-suppression {share:g} allows {allowed:,}); a class may have been "
        f"deleted: verify against the run's release, or allow them with --max-suppression {need:g}"
    ]


def suppression_bound_problems(suppressed: int, n_rows: int, share: float, bound: str) -> list[str]:
    """More suppressed rows than ``share`` of the ``n_rows`` input rows allows (as a run
    counts its budget: the whole number of rows under the share)."""
    allowed = suppression_budget(share, n_rows)
    if suppressed <= allowed:
        return []
    return [
        f"the provenance records {suppressed:,} of {n_rows:,} input rows suppressed, above {bound} "
        f"{share:g} ({allowed:,} rows)"
    ]


def recorded_problems(recorded: Provenance, facts: dict[str, int]) -> list[str]:
    """The release against the counts its run recorded: a row or a class missing now was
    not suppressed by the run."""
    n, released, classes = facts["source_rows"], facts["released"], facts["classes"]
    problems: list[str] = []
    if recorded.input_rows != n:
        problems.append(
            f"the run read {recorded.input_rows:,} input rows; the source has {n:,}: verify against "
            "the table the release was made from"
        )
    if recorded.released + recorded.suppressed != recorded.input_rows:
        problems.append(
            f"the provenance records {recorded.released:,} released and {recorded.suppressed:,} "
            f"suppressed rows, which are not its {recorded.input_rows:,} input rows"
        )
    if released != recorded.released:
        problems.append(
            f"the release has {released:,} rows; the run released {recorded.released:,} and suppressed "
            f"{recorded.suppressed:,} of {recorded.input_rows:,} (a suppressed row must be recorded as "
            "suppressed by the run)"
        )
    if classes != recorded.classes:
        problems.append(f"the release has {classes:,} classes; the run wrote {recorded.classes:,}")
    options = recorded.document.get("options") or {}
    bound = options.get("max_suppression")
    if options.get("leftover") == "suppress" or options.get("algorithm") in UNBOUNDED_ALGORITHMS:
        pass  # leftover rows, and the rows background knowledge rules out, are outside the budget
    elif recorded.document.get("refreshed"):
        pass  # a refreshed release's rows not released yet wait, pending, and are reported
    elif isinstance(bound, (int, float)) and not isinstance(bound, bool):
        problems += suppression_bound_problems(
            recorded.suppressed, recorded.input_rows, float(bound), "the run's own --max-suppression"
        )
    else:
        problems.append(
            "the provenance records no --max-suppression, so its suppressed rows cannot be checked "
            "against the bound the run kept"
        )
    return problems


def same_rows_sql(expected: exp.Query, actual: str, columns: Sequence[str]) -> exp.Expression:
    return render("same_rows", expected=expected, actual=actual, col=list(columns))


def release_tables_problems(
    engine: Engine, columns: Sequence[Column], release: str, rows: str, classes: str
) -> list[str]:
    """A release view against its two tables: each class's stored size is its row count in
    the row table, the class ids of both tables agree, and the view shows exactly the row
    table joined to the class table."""
    n_classes, distinct, unmatched = engine.fetch_one(
        render("class_table_checks", classes=classes, rows=rows)
    )
    problems: list[str] = []
    if int(distinct or 0) < int(n_classes or 0):
        problems.append(
            f"{int(n_classes) - int(distinct):,} class id(s) occur twice in the class table '{classes}'"
        )
    if unmatched:
        problems.append(
            f"{_n(unmatched)} class(es) of '{classes}' disagree with '{rows}' (class_size is not the "
            "class's row count, or the class is in one table only)"
        )
    joined = _query(write.release_view_sql(columns, release, rows, classes))
    names = ["eq_class"] + [n for c in columns if c.role != "identifier" for n in c.release_columns]
    missing, extra = engine.fetch_one(same_rows_sql(joined, release, names))
    if missing or extra:
        problems.append(
            f"the release view '{release}' is not its row table joined to its class table "
            f"({_n(missing)} row(s) missing, {_n(extra)} row(s) beyond them)"
        )
    return problems


def text_view_problems(
    engine: Engine, columns: Sequence[Column], view: str, rows: str | None, classes: str | None, release: str
) -> list[str]:
    """The text view against the text its tables give (the release view's rows when the
    release is one table): each class's ranges and sets rendered again and compared, row for
    row, with what the view shows."""
    if rows is not None and classes is not None:
        source: exp.Query | str = _query(write.release_view_sql(columns, release, rows, classes))
    else:
        source = release
    expected = _query(write.text_view_sql(columns, view, source))
    names = ["eq_class"] + [c.name for c in columns if c.role != "identifier"]
    missing, extra = engine.fetch_one(same_rows_sql(expected, view, names))
    if missing or extra:
        return [
            f"the text view '{view}' does not show the text of its release ({_n(missing)} row(s) "
            f"missing, {_n(extra)} row(s) beyond them): it was redefined, or written by an earlier version"
        ]
    return []


def _query(create: exp.Expression) -> exp.Query:
    """The query of a CREATE VIEW statement: what the view must show."""
    query = create.args.get("expression")
    if not isinstance(query, exp.Query):
        raise TypeError("expected CREATE VIEW ... AS <query>")
    return query


@contextlib.contextmanager
def version_rows(
    engine: Engine, rows: str, classes: str, columns: Sequence[Column], version: int
) -> Iterator[str]:
    """The temporary table of the rows ``version`` of an incremental release added, alone, as
    a release of their own (:func:`~sbc_sql.stages.ledger.delta_sql`): its name, for the
    block; dropped after."""
    delta = f"sbc_delta_{secrets.token_hex(4)}"
    projection = write.release_projection(columns)
    engine.execute(ledger.delta_sql(delta, rows, classes, projection), {"version": version})
    try:
        yield delta
    finally:
        engine.discard(delta)


def version_problems(
    engine: Engine,
    columns: Sequence[Column],
    layout: Layout,
    original: str,
    release: str,
    document: Mapping[str, Any],
    k: int,
    models: Models | None = None,
) -> list[str]:
    """An incremental release against its version chain (:mod:`sbc_sql.stages.ledger`):
    each version as it stood still holds what it recorded (its digest: no class or row of
    it changed since, so each version contains its parent unchanged), the rows each version
    added are, taken alone, a release keeping k and the criteria, the row table numbers no
    version the chain lacks, and the ledger counts every released row and no row the source
    lacks."""
    rows, classes = release_objects_of(release)[1:3]
    seen, pending = ledger_objects_of(release)
    versions = list(document.get("versions") or ())
    problems: list[str] = []
    for name in (seen, pending):
        if not engine.table_exists(name):
            return [f"the ledger table '{name}' of incremental release '{release}' is missing"]
    for entry in versions:
        version = int(entry["version"])
        digest = ledger.digests(engine, rows, classes, columns, version, version)[1]
        if digest != entry.get("digest"):
            problems.append(
                f"version {version} of '{release}' no longer holds what it recorded (a class or a row of "
                "it changed since it was published)"
            )
        if version == 1:
            continue
        with version_rows(engine, rows, classes, columns, version) as delta:
            added, _ = check_release(engine, layout, delta, k, models, delta)
        problems += [f"the rows version {version} adds, taken alone: {p}" for p in added]
    counted, waiting, last = engine.fetch_one(ledger.totals_sql(seen, pending, rows))
    (released,) = engine.fetch_one(render("row_count", source=rows))
    if versions and last is not None and int(last) != int(versions[-1]["version"]):
        problems.append(
            f"'{rows}' numbers rows version {int(last)}; the provenance records versions up to "
            f"{int(versions[-1]['version'])}"
        )
    if int(counted) != int(released):
        problems.append(
            f"the ledger '{seen}' counts {int(counted):,} released rows; the release has {int(released):,}"
        )
    recorded = (document.get("rows") or {}).get("suppressed")
    if recorded is not None and int(waiting) != int(recorded):
        problems.append(
            f"the pending table '{pending}' counts {int(waiting):,} rows; the provenance records "
            f"{int(recorded):,} not released"
        )
    (gone,) = engine.fetch_one(ledger.gone_sql(original, seen, columns))
    if int(gone):
        problems.append(f"the source '{original}' lacks {int(gone):,} row(s) the release holds")
    return problems
