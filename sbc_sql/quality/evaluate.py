"""Evaluate stage: information loss, risk and query accuracy of a release (docs/metrics.md's metrics).

:func:`evaluate` takes any original + release pair and reports, each computed by an SQL
aggregate in ``sql/eval_*.sql`` or in a privacy model's template (the release's format:
``eq_class``, ``c_min``/``c_max``/``c_has_null`` for a numeric QI, a sorted LIST for a
categorical one, the other columns verbatim; suppressed rows are simply absent):

* NCP per QI and total, and utility, as :func:`sbc_sql.stages.measure.measure_tables` computes
  them. **GCP is the total NCP**: the normalised GCP of docs/metrics.md, which charges a
  suppressed row 1 on every QI (the GCP of the background-knowledge paper, "Hierarchical
  anonymization algorithms against background knowledge attack in data releasing", charges
  it nothing; RGCP is its remedy).
* **RGCP** (the background-knowledge paper, Definition 2), normalised like GCP by n * (sum of QI weights):
  ``[sum over untouched classes |E| * NCP(E) + k_r * sum over virtual classes |g| * NCP(g)]
  / (n * d)``, with NCP(.) the weighted sum over QIs of a class's NCP per record. Each
  removed record joins its *nearest* class, the class whose summed NCP
  ``|E| * NCP(E)`` grows least when the record is added (the rule of ``--leftover
  nearest``; ties: the smaller NCP increase rounded to 1e-9, then the smaller eq_class);
  a class that some record joins becomes the virtual class g = E + its joiners. With no
  class at all, RGCP = ``n_r * n * NCP(gF) / (n * d)`` with gF one class of every input row.
* Which records were removed: the release has no row ids, so a record counts as removed
  when no class can hold it (no class's tuple covers its QI values while holding a row
  with its verbatim values). If the release holds fewer rows than that leaves (a
  suppressed record lay inside a class's box), those S - U *hidden* removed records are
  charged to the classes whose covered records outnumber their size (each covered record
  counted at its cheapest covering class), in eq_class order; they widen nothing, so they
  only grow g. This is exact when boxes holding the same verbatim values do not overlap.
* Discernibility ``DM = sum |E|^2 + |S| * n``; ``C_AVG = (n - |S|) / |E| / k`` with k the
  smallest class unless given; classes, smallest, mean and largest class; distinct
  generalized tuples; suppressed rows S = n - release rows.
* With a sensitive column (``sensitive``, or else the first the release's provenance
  declares and shows verbatim: :func:`recorded_sensitive`), the measures of the privacy models in
  :mod:`sbc_sql.privacy` (their definitions, read alike by verification): distinct
  l-diversity (fewest distinct values in a class; NULL is a value), t-closeness by the
  Earth Mover's Distance against the *input's* distribution (categorical or boolean: equal
  ground distance, 0.5 * sum |p - q|; numeric or temporal: ordered distance over the
  input's sorted distinct values, divided by m - 1), basic beta-likeness
  ``max (q - p) / p`` over classes and values with q > p, and enhanced beta-likeness
  ``max min((q - p) / p, -ln p)`` over the same (beta capped at -ln p for frequent
  values).
* **Record linkage** RL (the background-knowledge paper: P = 1/|E| when the record's
  nearest class is its own).
  Without row ids a record's own class is not visible, so the attacker, knowing a
  record's QI values, picks uniformly among the release rows of every class whose
  generalized tuple covers them: ``RL = sum over records r that some class can hold of
  1 / (rows in the classes covering r)``, which is that paper's 1/|E| when one class covers
  r; records no class can hold add 0. Reported as a count and as a share of n (a hidden
  removed record, see above, counts as if released, so RL is then an upper bound).
* **Aggregate query error** (the background-knowledge paper's AQA): for each target selectivity s, ``queries``
  random COUNT queries over every QI at once, each QI restricted to a fraction
  f = s^(1/d) of its input values: a numeric QI to the interval between the input's
  empirical quantiles u and u + f (u uniform in [0, 1 - f]), a categorical QI to a
  uniform random subset of round(f * cardinality) (at least 1) of its values (NULL among
  them). Expected selectivity per QI is about f, so about s overall when QIs are
  independent (``true_share`` reports what it was). True counts come from the input;
  estimates from the release, each class contributing |E| * the product over QIs of the
  overlap share (numeric: |[lo, hi] & [min, max]| / (max - min), a point class 1 if
  inside; the NULL part of a class is ignored; categorical: |set & query| / |set|). Mean
  relative error over the queries whose true count is above 0 (``used`` says how many).
  The queries come from numpy's generator seeded with ``seed``: same seed, same queries.
* With ``target`` given (a column released verbatim: a label, never a generalized QI), the
  **classification metric** ``CM = (released rows off their class's majority label +
  suppressed rows) / n`` (a class's majority label: its most frequent one, NULL a label of
  its own; on a tie any of them, the count is the same), and **class purity**, the mean over
  classes of the majority label's share of the class, beside the row-weighted purity, the
  share of released rows that hold their class's majority label (1 - CM counted over
  released rows only). With ``model`` also, the model utility of
  :mod:`sbc_sql.quality.model`: accuracy and F1 on the original's held-out rows of a
  classifier trained on the release against one trained on the original.

Sums run over DECIMAL(38, 18) terms in SQL, and in numpy as exactly rounded sums
(``math.fsum``), so every figure is the same bit for bit on every run (DuckDB's parallel
DOUBLE sums are not). Cost, near-linear in the rows: the coverage step finds the classes
that may cover a distinct input row by a hashed equality on per-QI keys (a numeric QI's
bucket, a categorical QI's value), then tests only those (:mod:`sbc_sql.quality.linkage`);
the query step reads the input's distinct QI tuples and the classes once and scores a batch
of queries per numpy pass over them (queries x (tuples + classes) operations). Temporary
tables ``sbc_eval_<hex>_*`` are made for the run and dropped after it.
:func:`evaluation_sql` returns the statements.

This module holds the result and runs the steps in order; their expressions and statements
live beside the figures they make: coverage, record linkage and RGCP in
:mod:`sbc_sql.quality.linkage`, the query error in :mod:`sbc_sql.quality.queries`, CM and
class purity in :mod:`sbc_sql.quality.classification`, the temporary tables in
:mod:`sbc_sql.quality.scratch`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sqlglot import exp

from .. import engines
from ..api import _layout, _located, _tables
from ..engines.base import Engine
from ..errors import InputError
from ..model import Column
from ..privacy import PrivacyModel, registry
from ..sql.templates import render
from ..stages import measure as metrics
from ..stages.measure import Layout
from . import model as ml
from . import population_keys, scratch
from .classification import check_model, classification, classification_sql, model_fields, target_column
from .linkage import (
    classes_sql,
    coverage_sql,
    keys_sql,
    linkage_sql,
    rgcp_sql,
    source_stats_sql,
    tuples_sql,
    whole_sql,
)
from .population_keys import Basis, PopulationRisk
from .queries import (
    QueryError,
    domains,
    make_queries,
    query_classes_sql,
    query_error,
    query_rows_sql,
    value_counts_sql,
)

__all__ = ["DEFAULT_SELECTIVITIES", "Evaluation", "QueryError", "evaluate", "evaluation_sql"]


DEFAULT_SELECTIVITIES = (0.01, 0.05, 0.1)


#: the keys of the registered criteria's figures
_FIGURES = tuple(f.key for f in registry.figures())


@dataclass(frozen=True)
class Evaluation:
    """What :func:`evaluate` measured; ``as_dict()`` for JSON, ``rows()`` for a table."""

    n_rows: int
    released: int
    suppressed: int
    ncp: dict[str, float]
    total_ncp: float
    utility: float
    gcp: float
    rgcp: float
    k_r: float
    n_r: float
    removed_uncovered: int
    removed_hidden: int
    virtual_classes: int
    discernibility: int
    c_avg: float | None
    k: int
    classes: int
    smallest_class: int
    mean_class: float
    largest_class: int
    tuples: int
    record_linkage: float
    record_linkage_share: float
    sensitive: str | None = None
    #: with ``sensitive``: each registered criterion's figures on it, by key (l_diversity,
    #: t_closeness, ...: :func:`sbc_sql.privacy.registry.figures`), also read as attributes
    #: (``evaluation.l_diversity``; None when not measured)
    criteria: dict[str, float] = field(default_factory=dict)
    query_error: tuple[QueryError, ...] = field(default_factory=tuple)
    seed: int = 0
    #: the GCP that charges a removed row nothing (the background-knowledge paper's), beside
    #: ``gcp`` (which charges it 1 per QI) and ``rgcp`` (which charges its nearest class)
    gcp_released: float = 0.0
    #: suppressed rows per reason, as the run recorded them in its provenance (None: none
    #: recorded)
    suppressed_by: dict[str, int] | None = None
    #: with a beta: per value of the sensitive column, by frequency rank ("#1 of 14, 4,038
    #: rows"), the smallest class that may hold one of its rows under beta-likeness
    forced_class: dict[str, int] | None = None
    forced_beta: float | None = None
    #: with a target: the classification metric and class purity (this module's docstring)
    target: str | None = None
    cm: float | None = None
    misclassified: int | None = None
    class_purity: float | None = None
    row_purity: float | None = None
    #: with a target and model: the model utility (sbc_sql.quality.model)
    model_classifier: str | None = None
    model_seed: int | None = None
    model_train_original: int | None = None
    model_train_release: int | None = None
    model_test: int | None = None
    model_accuracy_original: float | None = None
    model_accuracy_release: float | None = None
    model_accuracy_ratio: float | None = None
    model_f1_average: str | None = None
    model_f1_original: float | None = None
    model_f1_release: float | None = None
    model_f1_ratio: float | None = None
    #: with a sampling fraction or weights: the release's risk in the population, its
    #: classes' generalized tuples the keys (None: not asked)
    population: PopulationRisk | None = None

    def __getattr__(self, name: str) -> Any:
        # a registered criterion's figure (only names that are no field reach here)
        if name in _FIGURES:
            return self.__dict__.get("criteria", {}).get(name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values, each criterion's figures beside the sensitive column."""
        out: dict[str, Any] = {}
        for key, value in asdict(self).items():
            if key == "criteria":
                out.update({f: value.get(f) for f in _FIGURES})
            elif key == "population":
                # flat beside the others; its records are the released rows
                out.update({k: v for k, v in (value or {}).items() if k != "records"})
            else:
                out[key] = value
        out["query_error"] = [asdict(q) for q in self.query_error]
        return out

    def rows(self) -> list[tuple[str, Any]]:
        """(metric, value) pairs, one a line; the query error one triple per selectivity."""
        out: list[tuple[str, Any]] = []
        for key, value in self.as_dict().items():
            if key == "ncp":
                out += [(f"ncp[{q}]", v) for q, v in value.items()]
            elif key == "query_error":
                for q in value:
                    s = q["selectivity"]
                    out += [
                        (f"query_error@{s:g}", q["relative_error"]),
                        (f"query_used@{s:g}", q["used"]),
                        (f"query_true_share@{s:g}", q["true_share"]),
                    ]
            elif value is not None:
                out.append((key, value))
        return out


#: a step's progress: (the step's name, done, total)
Progress = Callable[[str, int, int], None]


class _Steps:
    """Says each step as it starts and ends, with its seconds, and hands a long step's
    progress (its statements, its batches of queries) to ``progress``: a silent step looks
    hung."""

    def __init__(self, log: Callable[[str], None] | None, progress: Progress | None = None) -> None:
        self.log = log
        self.progress = progress
        self.name = ""
        self.started = 0.0

    def tick(self, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(self.name, done, total)

    def begin(self, name: str) -> None:
        self.name, self.started = name, time.perf_counter()
        if self.log is not None:
            self.log(f"evaluate: {name} ...")

    def end(self) -> None:
        if self.log is not None:
            self.log(f"evaluate: {self.name} done in {time.perf_counter() - self.started:.1f} s")

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        self.begin(name)
        yield
        self.end()


# ---------------------------------------------------------------------------------------
# the statements of the other steps: the class figures, attribute disclosure


def class_stats_sql(layout: Layout, release: str) -> exp.Expression:
    return render("eval_class_stats", release=release, qicol=layout.qi_columns())


def sensitive_models(sensitive: Column) -> tuple[PrivacyModel, ...]:
    """The privacy models whose measures ``evaluate`` reports for a sensitive column, each
    registered criterion's that has one (distinct l-diversity, t-closeness, the EMD for the
    column's kind, and beta-likeness, basic and enhanced); the same definitions a check or an
    enforcement of them reads."""
    return tuple(m for kind in registry.criteria() if (m := kind.measured(sensitive)) is not None)


def sensitive_sql(original: str, release: str, sensitive: Column) -> list[exp.Expression]:
    """The measure query of each of :func:`sensitive_models`."""
    return [m.measure_sql(release, original) for m in sensitive_models(sensitive)]


# ---------------------------------------------------------------------------------------
# the run


def _as(kind: type, value: Any) -> Any:
    return None if value is None else kind(value)


def _check(k_r: float, n_r: float, queries: int, selectivities: Sequence[float], k: int | None) -> None:
    if not (math.isfinite(k_r) and math.isfinite(n_r) and n_r > k_r > 1):
        raise InputError(f"RGCP needs n_r > k_r > 1; got k_r={k_r}, n_r={n_r} (defaults: --k-r 2 --n-r 4)")
    if queries < 0:
        raise InputError(f"queries={queries} is negative; choose --queries 0 or more")
    bad = [s for s in selectivities if not (0 < float(s) <= 1)]
    if bad:
        raise InputError(f"selectivities must lie in (0, 1]; got {bad}; write e.g. --selectivity 0.05")
    if k is not None and k < 1:
        raise InputError(f"k={k} is below 1; choose --k 1 or more, or leave it out")


def _sensitive(layout: Layout, sensitive: str | None, original: str) -> Column | None:
    if sensitive is None:
        return None
    for c in layout.verbatim:
        if c.name == sensitive:
            return c
    if any(c.name == sensitive for c in layout.qis):
        raise InputError(
            f"'{sensitive}' is a generalized QI of the release, not a column "
            "released verbatim; pass a sensitive column with --sensitive"
        )
    raise InputError(
        f"'{sensitive}' is not a column of both '{original}' and the release; "
        "pass one of: " + ", ".join(c.name for c in layout.verbatim)
    )


def evaluation_sql(
    database_or_con: str | Path | Engine | Any,
    original: str,
    release: str,
    *,
    sensitive: str | None = None,
    weights: Mapping[str, float] | None = None,
    target: str | None = None,
    model: bool = False,
) -> list[str]:
    """The statements :func:`evaluate` runs, in order, without running them (the query
    bounds table is data, registered from Arrow under the name the last statement uses;
    NCP comes from :func:`sbc_sql.stages.measure.ncp_sql`; with ``model``, the two pulls of
    :mod:`sbc_sql.quality.model` come last)."""
    with engines.reading(database_or_con) as engine:
        return _evaluation_sql(
            engine, original, release, sensitive=sensitive, weights=weights, target=target, model=model
        )


def _evaluation_sql(
    engine: Engine,
    original: str,
    release: str,
    *,
    sensitive: str | None,
    weights: Mapping[str, float] | None,
    target: str | None = None,
    model: bool = False,
) -> list[str]:
    _tables(engine, original, release)
    recorded = _recorded(engine, original, release)
    if target is None:
        target = _recorded_target(recorded)
    if model and target is None:
        check_model(target, model, "gbt")
    layout = _layout(engine, original, release, weights)
    if sensitive is None:
        sensitive = recorded_sensitive(recorded, layout)
    sens = _sensitive(layout, sensitive, original)
    label = target_column(layout, target, original)
    names = scratch.Names.fresh()
    trees = [
        metrics.ncp_sql(layout, original, release),
        metrics.class_sizes_sql(release),
        class_stats_sql(layout, release),
        source_stats_sql(layout, original, names.src),
        classes_sql(layout, release, names),
        tuples_sql(layout, original, names),
        keys_sql(layout, names),
        coverage_sql(layout, release, names),
        linkage_sql(names),
        rgcp_sql(layout, names),
        whole_sql(layout, original, names),
    ]
    if sens is not None:
        trees += sensitive_sql(original, release, sens)
    trees += [value_counts_sql(c, original) for c in layout.qis]
    trees += [query_rows_sql(layout, original), query_classes_sql(layout, names)]
    trees += [scratch.drop(n) for n in names.created()]
    if label is not None:
        trees.append(classification_sql(original, release, label))
        if model:
            trees += [
                ml.rows_sql(layout, original, label, release=False),
                ml.rows_sql(layout, release, label, release=True),
            ]
    return [engine.sql(t) + ";" for t in trees]


def evaluate(
    database_or_con: str | Path | Engine | Any,
    original: str,
    release: str,
    *,
    sensitive: str | None = None,
    k_r: float = 2.0,
    n_r: float = 4.0,
    queries: int = 200,
    selectivities: Sequence[float] = DEFAULT_SELECTIVITIES,
    seed: int = 0,
    weights: Mapping[str, float] | None = None,
    k: int | None = None,
    log: Callable[[str], None] | None = None,
    attach: Iterable[str] = (),
    beta_likeness: float | None = None,
    beta_basic: bool = False,
    target: str | None = None,
    model: bool = False,
    classifier: str = "gbt",
    progress: Progress | None = None,
    sampling_fraction: float | None = None,
    sample_weights: str | None = None,
) -> Evaluation:
    """Information loss (NCP, GCP, RGCP, DM, C_AVG), class figures, record linkage, query
    error and, on a sensitive column, l-diversity, t-closeness and beta-likeness of
    ``release`` against ``original`` (definitions: this module's docstring).

    ``sensitive``: the column of those figures; without it, the first sensitive column the
    release's provenance declares (:func:`recorded_sensitive`), as the report does.

    ``k`` is the k of C_AVG (default: the smallest class). ``queries=0`` skips the query
    error. ``log`` receives a line as each step starts and ends (with its seconds).
    ``beta_likeness`` (default: the beta the run kept on ``sensitive``, from its provenance)
    adds, per sensitive value, the smallest class beta-likeness lets hold it (enhanced
    unless ``beta_basic``). Suppressed rows per reason come from the run's provenance.
    ``target`` (a column released verbatim) adds CM and class purity; ``model`` also trains
    a ``classifier`` (``gbt`` or ``logistic``; needs scikit-learn, ``sbc-sql[ml]``) on the
    original and on the release, split and seeded by ``seed``, and scores both on the
    original's test rows. Without ``target``, the target the run kept classes pure on
    (``anonymize --target``, from its provenance) is evaluated, when there is one.
    ``progress(step, done, total)`` follows the long steps: the coverage step's statements,
    the query error's batches of queries. ``sampling_fraction`` (the share of the population
    the original holds) or ``sample_weights`` (a column of per-record weights the release
    keeps as it is) adds the release's risk in the population
    (:mod:`sbc_sql.quality.population`), each distinct generalized QI tuple one key.
    """
    _check(k_r, n_r, queries, selectivities, k)
    b = population_keys.basis(sampling_fraction, sample_weights)
    check_model(target, model, classifier, recorded_allowed=True)
    with engines.reading(database_or_con, attach) as engine:
        original, release = _located(engine, original, release)
        return _evaluate(
            engine,
            original,
            release,
            sensitive,
            k_r,
            n_r,
            queries,
            selectivities,
            seed,
            weights,
            k,
            _Steps(log, progress),
            beta_likeness,
            beta_basic,
            target,
            model,
            classifier,
            b,
        )


def _evaluate(
    engine: Engine,
    original: str,
    release: str,
    sensitive: str | None,
    k_r: float,
    n_r: float,
    queries: int,
    selectivities: Sequence[float],
    seed: int,
    weights: Mapping[str, float] | None,
    k: int | None,
    step: _Steps,
    beta_likeness: float | None = None,
    beta_basic: bool = False,
    target: str | None = None,
    with_model: bool = False,
    classifier: str = "gbt",
    b: Basis | None = None,
) -> Evaluation:
    b = b or Basis()
    _tables(engine, original, release)
    recorded = _recorded(engine, original, release)
    if target is None:
        target = _recorded_target(recorded)
    check_model(target, with_model, classifier)
    layout = _layout(engine, original, release, weights)
    declared = sensitive is None
    if declared:
        sensitive = recorded_sensitive(recorded, layout)
    sens = _sensitive(layout, sensitive, original)
    label = target_column(layout, target, original)
    _check_weights(engine, layout, release, b)
    with step("information loss"):
        m = metrics.measure_tables(engine, layout, original, release)
        n = m.n_rows
        squares, tuples = engine.fetch_one(class_stats_sql(layout, release))
    wsum = sum(layout.weights)
    names = scratch.Names.fresh()
    with scratch.dropped(engine, names):
        with step("coverage and record linkage"):
            made = (
                source_stats_sql(layout, original, names.src),
                classes_sql(layout, release, names),
                tuples_sql(layout, original, names),
                keys_sql(layout, names),
                coverage_sql(layout, release, names),
            )
            for i, statement in enumerate(made):
                engine.execute(statement)
                step.tick(i + 1, len(made) + 1)
            _, uncovered, linkage = engine.fetch_one(linkage_sql(names))
            step.tick(len(made) + 1, len(made) + 1)
        uncovered = int(uncovered)
        hidden = max(m.suppressed - uncovered, 0)
        step.begin("RGCP")
        if m.classes:
            untouched, virtual, virtual_classes, _ = engine.fetch_one(
                rgcp_sql(layout, names), {"hidden": hidden}
            )
            cost = float(untouched) + k_r * float(virtual)
        else:
            (whole,) = engine.fetch_one(whole_sql(layout, original, names))
            virtual_classes = 0
            cost = n_r * n * float(whole or 0.0)
        rgcp = cost / (n * wsum) if n and wsum else 0.0
        step.end()
        privacy: dict[str, Any] = {}
        if sens is not None and m.classes:
            said = ", the sensitive column the release declares" if declared else ""
            with step(f"attribute disclosure of '{sens.name}'{said}"):
                for model in sensitive_models(sens):
                    privacy.update(model.measure(engine, release, original))
        errors: tuple[QueryError, ...] = ()
        if queries and selectivities:
            with step(f"query error ({queries} queries x {len(selectivities)} selectivities)"):
                table = make_queries(domains(engine, layout, original), selectivities, queries, seed)
                errors = query_error(engine, layout, original, names, table, step.tick)
    labelled: dict[str, Any] = {}
    if label is not None:
        with step(f"classification of '{label.name}'"):
            labelled = {"target": label.name, **classification(engine, original, release, label)}
        if with_model:
            with step(f"model utility ({classifier}, seed {seed})"):
                utility = ml.model_utility(engine, layout, original, release, label, classifier, seed)
            labelled.update(model_fields(utility))
    population = None
    if b.given and m.classes:
        with step("population risk"):
            population = population_keys.figures(engine, release, layout.qi_columns(), b)
    k_used = int(k) if k is not None else m.smallest
    c_avg = (n - m.suppressed) / m.classes / k_used if m.classes and k_used else None
    suppressed_by = {str(w): int(c) for w, c in recorded.get("rows", {}).get("suppressed_by", {}).items()}
    forced: dict[str, int] = {}
    if sens is not None:
        if beta_likeness is None:
            for model in recorded.get("privacy_models", []):
                if model.get("name") == "beta-likeness" and model.get("column") == sens.name:
                    beta_likeness = float(model["beta"])
                    beta_basic = not model.get("enhanced", True)
        if beta_likeness is not None:
            forced = _forced_classes(engine, sens, original, beta_likeness, not beta_basic)
    return Evaluation(
        n_rows=n,
        released=m.released,
        suppressed=m.suppressed,
        ncp=dict(m.ncp),
        total_ncp=m.total_ncp,
        utility=m.utility,
        gcp=m.total_ncp,
        rgcp=rgcp,
        k_r=k_r,
        n_r=n_r,
        removed_uncovered=uncovered,
        removed_hidden=hidden,
        virtual_classes=int(virtual_classes or 0),
        discernibility=int(squares) + m.suppressed * n,
        c_avg=c_avg,
        k=k_used,
        classes=m.classes,
        smallest_class=m.smallest,
        mean_class=m.mean,
        largest_class=m.largest,
        tuples=int(tuples),
        record_linkage=float(linkage),
        record_linkage_share=float(linkage) / n if n else 0.0,
        sensitive=sensitive,
        criteria={
            f.key: _as(int if f.whole else float, privacy[f.key])
            for f in registry.figures()
            if privacy.get(f.key) is not None
        },
        query_error=errors,
        seed=seed,
        gcp_released=m.total_ncp - (m.suppressed / n if n else 0.0),
        suppressed_by=suppressed_by or None,
        forced_class=forced or None,
        forced_beta=beta_likeness if forced else None,
        **labelled,
        population=population,
    )


def _check_weights(engine: Engine, layout: Layout, release: str, b: Basis) -> None:
    """The weights column is one the release shows as it is, and can weigh its records."""
    if b.weights is None:
        return
    verbatim = [c for c in layout.verbatim if c.name == b.weights]
    if not verbatim:
        shown = ", ".join(c.name for c in layout.verbatim) or "none"
        raise InputError(
            f"column '{b.weights}' given to {population_keys.WEIGHTS_FLAG} is not a column '{release}' "
            f"releases as it is (those are: {shown}); keep it in the release (anonymize --keep "
            f"{b.weights}), or give {population_keys.FRACTION_FLAG}"
        )
    population_keys.check_weights(engine, release, verbatim, b, release)


def recorded_sensitive(recorded: Mapping[str, Any], layout: Layout) -> str | None:
    """The sensitive column a release's provenance declares, the first of them the release
    shows verbatim (None: none declared, or no provenance): what ``evaluate`` and the report
    measure attribute disclosure on unless given another."""
    verbatim = {c.name for c in layout.verbatim}
    declared = (c.get("name") for c in recorded.get("columns", []) if c.get("role") == "sensitive")
    return next((name for name in declared if name in verbatim), None)


def _recorded_target(recorded: Mapping[str, Any]) -> str | None:
    """The target the run kept classes pure on (``anonymize --target``), None without one."""
    target = (recorded.get("options") or {}).get("target")
    return target if isinstance(target, str) else None


def _recorded(engine: Engine, original: str, release: str) -> dict[str, Any]:
    """The release's provenance document; empty when it has none (or one that cannot be read)."""
    from ..provenance import ProvenanceError
    from ..stages import audit

    try:
        prov = audit.read(engine, original, release).provenance
    except (ProvenanceError, InputError):
        return {}
    return dict(prov.document) if prov is not None else {}


def _forced_classes(
    engine: Engine, sens: Column, original: str, beta: float, enhanced: bool
) -> dict[str, int]:
    """Per value of ``sens``, by frequency rank, the smallest class beta-likeness lets
    hold one of its rows: ceil(1 / f(p)), f(p) = p (1 + min(beta, -ln p)) (enhanced) or
    p (1 + beta)."""
    from ..cluster.sensitive import beta_cap

    counts = sorted((int(c) for _, c in engine.fetch_all(value_counts_sql(sens, original))), reverse=True)
    total = sum(counts)
    if not total:
        return {}
    p = np.array(counts, dtype=np.float64) / total
    sizes = np.ceil(1.0 / beta_cap(p, beta, enhanced) - 1e-9)
    m = len(counts)
    return {
        f"#{i + 1} of {m} ({c:,} rows)": int(size)
        for i, (c, size) in enumerate(zip(counts, sizes, strict=True))
    }
