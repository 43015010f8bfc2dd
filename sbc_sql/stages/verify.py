"""Verify stage: a release is reported only once SQL has shown it k-anonymous and complete.

With the run's class labels (during ``anonymize``) the check is row-exact over the row and
class tables just written: every source row is labelled once, released once with its own
values, and lies inside its class's ranges and sets; every class has one tuple; and every
privacy model holds (k-anonymity by default: every class has >= k rows; each model's
violation check is its own query, see :mod:`sbc_sql.privacy`). For any other original +
release pair, :func:`verify_pair` checks the privacy models, one tuple per class, row
counts, released values and that every input row is covered by some class. A release
passes only if no check reports a problem.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlglot import exp

from ..engines.base import Engine
from ..plan import Column
from ..privacy import KAnonymity, PrivacyModel, check_all
from ..sql.nodes import conj, list_contains, list_has_null, ref
from ..sql.templates import render
from .measure import Layout, class_sizes_sql


@dataclass(frozen=True)
class Verdict:
    k: int
    problems: tuple[str, ...] = field(default_factory=tuple)
    facts: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems


def inside(c: Column, row: str, cls: str) -> exp.Expression:
    """The row's value of QI c lies within its class's range or set (NULL included)."""
    value = ref(c.name, row)
    is_null = exp.Is(this=value, expression=exp.Null())
    if c.kind == "numeric":
        in_range = exp.Between(this=value, low=ref(c.name + "_min", cls), high=ref(c.name + "_max", cls))
        return exp.Case(ifs=[exp.If(this=is_null, true=ref(c.name + "_has_null", cls))], default=in_range)
    values = ref(c.name, cls)
    has_null = list_has_null(values)
    contains = list_contains(values, value)
    return exp.Case(ifs=[exp.If(this=is_null, true=has_null)], default=contains)


def _same(c: Column, row: str, cls: str) -> exp.Expression:
    return exp.NullSafeEQ(this=ref(c.name, row), expression=ref(c.name, cls))


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
        problems.append(f"{facts['mixed_classes']} class(es) carry more than one generalized tuple")
    return problems


def rows_missing_sql(
    layout: Layout, source: str, labels: str, release: str, row_id: exp.Expression
) -> exp.Expression:
    return render(
        "rows_missing",
        source=source,
        row_id=row_id,
        labels=labels,
        release=release,
        verb=[c.name for c in layout.verbatim],
    )


def class_checks_sql(
    layout: Layout, source: str, labels: str, rows: str, classes: str, row_id: exp.Expression
) -> exp.Expression:
    return render(
        "class_checks",
        classes=classes,
        rows=rows,
        source=source,
        row_id=row_id,
        labels=labels,
        inside=conj([inside(c, "s", "g") for c in layout.qis if c.kind == "numeric"]),
        cat=[c.name for c in layout.qis if c.kind != "numeric"],
    )


def label_coverage_sql(source: str, labels: str, row_id: exp.Expression) -> exp.Expression:
    return render("label_coverage", source=source, row_id=row_id, labels=labels)


def label_checks_sql(
    layout: Layout,
    source: str,
    labels: str,
    rows: str,
    classes: str,
    row_id: exp.Expression,
    models: Models,
) -> list[exp.Expression]:
    """The queries :func:`verify_with_labels` runs, in its order (a dry run shows them): each
    privacy model's violation check over the row table, then the row-exact checks."""
    return [m.violations_sql(rows, source) for m in models] + [
        class_checks_sql(layout, source, labels, rows, classes, row_id),
        label_coverage_sql(source, labels, row_id),
        rows_missing_sql(layout, source, labels, rows, row_id),
    ]


def verify_with_labels(
    engine: Engine,
    layout: Layout,
    source: str,
    labels: str,
    rows: str,
    classes: str,
    k: int,
    models: Models | None = None,
) -> Verdict:
    """Row-exact verification of a release just built from ``labels`` as a row table and a
    class table (the release view joins them: it shows each row its class's one tuple).
    The privacy models (k-anonymity unless named) are checked over the row table."""
    models = models or default_models(k)
    problems = check_all(engine, models, rows, source)
    *_, checks, coverage, missing_rows = label_checks_sql(
        layout, source, labels, rows, classes, engine.row_id("s"), models
    )
    n_classes, distinct, smallest, released, unmatched, *outside = engine.fetch_one(checks)
    facts = {
        "classes": int(n_classes or 0),
        "smallest_class": int(smallest or 0),
        "released": int(released or 0),
        "mixed_classes": int(n_classes or 0) - int(distinct or 0),
        "unmatched_classes": int(unmatched or 0),
        "outside": sum(int(x or 0) for x in outside),
    }
    problems += class_problems(facts)
    if facts["unmatched_classes"]:
        problems.append(
            f"{facts['unmatched_classes']} class(es) differ between the class table "
            "and the row table (missing from one, or another size)"
        )
    if facts["outside"]:
        problems.append(
            f"{facts['outside']} QI value(s) lie outside their class's range or set "
            "(numeric QIs counted once per row)"
        )
    source_rows, n_labels, labelled, suppressed, unlabelled = engine.fetch_one(coverage)
    facts.update(source_rows=int(source_rows), suppressed=int(suppressed))
    if n_labels != source_rows or labelled != source_rows or unlabelled:
        problems.append(
            f"{source_rows} source rows but {labelled} labelled once "
            f"({n_labels} labels, {unlabelled} unlabelled)"
        )
    if facts["released"] != source_rows - suppressed:
        problems.append(
            f"the release has {facts['released']} rows; expected "
            f"{source_rows - suppressed} ({source_rows} in, {suppressed} suppressed)"
        )
    missing, extra = engine.fetch_one(missing_rows)
    facts.update(missing=int(missing), extra=int(extra))
    if missing or extra:
        problems.append(f"{missing} row(s) lost and {extra} row(s) added or changed in the release")
    return Verdict(k, tuple(problems), facts)


def verify_pair(
    engine: Engine, layout: Layout, original: str, release: str, k: int, models: Models | None = None
) -> Verdict:
    """Verification of any original + release pair (no class labels at hand) against the
    privacy models (k-anonymity unless named)."""
    problems, facts = check_release(engine, layout, release, k, models, original)
    (n_rows,) = engine.fetch_one(render("row_count", source=original))
    facts["source_rows"] = int(n_rows)
    if facts["released"] > n_rows:
        problems.append(f"the release has {facts['released']} rows, more than the {n_rows} input rows")
    facts["suppressed"] = max(int(n_rows) - facts["released"], 0)
    cover = conj(
        [inside(c, "sbc_s", "g") for c in layout.qis] + [_same(c, "sbc_s", "g") for c in layout.verbatim]
    )
    uncovered, extra = engine.fetch_one(
        render(
            "rows_uncovered",
            original=original,
            release=release,
            qicol=layout.qi_columns(),
            verb=[c.name for c in layout.verbatim],
            inside=cover,
        ),
    )
    facts.update(uncovered=int(uncovered), extra=int(extra))
    if uncovered > facts["suppressed"]:
        problems.append(
            f"{uncovered} input row(s) are covered by no class of the release, but "
            f"only {facts['suppressed']} are missing from it"
        )
    if extra:
        problems.append(f"{extra} release row(s) carry released values that the input lacks")
    return Verdict(k, tuple(problems), facts)
