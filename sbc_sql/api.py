"""measure() and verify() for any original + release pair in a database."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from . import engines
from . import plan as planning
from .engines.base import Engine
from .errors import InputError, SbcError, in_python_terms
from .model import Column
from .plan import determinants, split_names
from .privacy.criteria import Criteria, check_sensitive, models, takes_criteria
from .stages import audit
from .stages import measure as metrics
from .stages import population as population_stage
from .stages.stats import distinct_and_nulls, kept_determinants
from .stages.verify import (
    Limit,
    Verdict,
    limits_of,
    release_tables_problems,
    text_view_problems,
    verify_pair,
    version_problems,
)

P = ParamSpec("P")
R = TypeVar("R")


def speaks_python(function: Callable[P, R]) -> Callable[P, R]:
    """The public function, its errors in a Python caller's terms (``k=2``, not ``--k 2``);
    the command line calls the undecorated one and speaks in flags."""

    @functools.wraps(function)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return function(*args, **kwargs)
        except SbcError as err:
            err.args = (in_python_terms(str(err)),)
            raise

    return call


def _located(engine: Engine, original: str, release: str) -> tuple[str, str]:
    """(original, release) as the engine reads them: a release of another schema
    (``--release s.t_k5``) makes that schema the working one, its original read where it was
    named (from the working schema before, unless qualified)."""
    rel = engine.parse_name(release)
    if not rel.qualified or engine.table_exists(release):
        return original, release
    orig = engine.parse_name(original)
    if not orig.qualified and not engine.table_exists(original):
        return original, release  # reported missing by _tables
    if not orig.qualified:
        original = str(orig.within(*engine.working()))
    if not engine.table_exists(original):
        engine.copy_in(original)
    engine.use(rel.catalog, rel.schema)
    return original, rel.name


def _distinct_values(engine: Engine, original: str, columns: Sequence[Column]) -> dict[str, int]:
    """Each column's distinct values in ``original``, NULL counted as one."""
    if not columns:
        return {}
    distinct, nulls = distinct_and_nulls(engine, original, columns)
    return {name: count + (1 if nulls[name] else 0) for name, count in distinct.items()}


def _tables(engine: Engine, original: str, release: str) -> None:
    if not engine.table_exists(original) and engine.parse_name(original).qualified:
        engine.copy_in(original)  # of another schema or attached database
    for name, flag in ((original, "--original"), (release, "--release")):
        if not engine.table_exists(name):
            raise InputError(
                f"table or view '{name}' does not exist in the database; pass an existing one with {flag}"
            )


def _layout(
    engine: Engine, original: str, release: str, weights: Mapping[str, float] | None
) -> metrics.Layout:
    """The release's layout: the run's roles and weights from its provenance, else read off
    its columns (``weights`` override either). A microaggregated release is refused: what
    reads a layout (measure, evaluate, the report) reads ranges and value sets."""
    read = _read(engine, original, release, weights)
    if not read.readable:
        raise InputError(
            f"'{release}' lacks columns of its release ({'; '.join(read.problems)}); run sbc-sql verify on it"
        )
    one = [c.name for c in read.layout.qis if c.one_value]
    if one:
        raise InputError(
            f"'{release}' is microaggregated (QI '{one[0]}' released as one value per class): its "
            "NCP, SSE and IL1s need the run's class labels, which a release does not keep; read "
            "them from the run's summary or its provenance (measures), and check it with sbc-sql verify"
        )
    return read.layout


def _recorded_limits(read: audit.Release) -> tuple[Limit, ...]:
    """The per-column limits the run recorded in its provenance (none without one)."""
    if read.provenance is None:
        return ()
    options = read.provenance.document.get("options", {})
    width, values = options.get("max_width") or {}, options.get("max_values") or {}
    if not isinstance(width, dict) or not isinstance(values, dict):
        return ()
    return limits_of(read.layout.qis, width, values)


def _read(
    engine: Engine,
    original: str,
    release: str,
    weights: Mapping[str, float] | None,
    auditor: Mapping[str, str] | None = None,
) -> audit.Release:
    read = audit.read(engine, original, release, weights, auditor)
    if not read.layout.qis:
        raise InputError(
            f"'{release}' has no generalized column of '{original}' (no c_min/c_max "
            "or value list); pass the release made from that original"
        )
    return read


def determinant_problems(
    engine: Engine, original: str, release: str, read: audit.Release, allowed: Sequence[str]
) -> list[str]:
    """A problem for each column the release carries as it is, not sensitive, that
    determines a QI in ``original`` (:mod:`sbc_sql.plan.determinants`), unless the auditor
    accepts it (``allowed``); one scan of ``original``, none without such a column."""
    kept = determinants.kept_columns(read.columns)
    if not kept or not read.layout.qis:
        return []
    found = kept_determinants(engine, original, kept, read.layout.qis, [c.name for c in read.columns])
    recorded = read.provenance.document.get("options", {}) if read.provenance is not None else {}
    let = recorded.get("allow_determinant") if isinstance(recorded, Mapping) else None
    run_let = {str(c) for c in let} if isinstance(let, list) else set()
    problems = []
    for d in determinants.determinants(found, [c.name for c in kept], [q.name for q in read.layout.qis]):
        if d.column in allowed:
            continue
        why = " (the run let it, with --allow-determinant)" if d.column in run_let else ""
        problems.append(
            f"column '{d.column}' is released as it is and determines {d.described()} of "
            f"'{original}', so '{release}' publishes {d.named} as it is, whatever its classes' "
            f"ranges and sets say{why}; if that is meant, pass verify --allow-determinant "
            f"{determinants.quoted(d.column)}"
        )
    return problems


def auditor_roles(**given: Iterable[str]) -> dict[str, str]:
    """The auditor's role for each column named (role: columns), one role a column."""
    roles: dict[str, str] = {}
    flags = {"insensitive": "keep"}
    for role, columns in given.items():
        for column in split_names(columns):
            if column in roles and roles[column] != role:
                raise InputError(
                    f"column '{column}' is given two roles (--{flags.get(roles[column], roles[column])} "
                    f"and --{flags.get(role, role)}); give it one"
                )
            roles[column] = role
    return roles


def measure(
    database: str | Path | Engine | Any,
    original: str,
    release: str,
    *,
    weights: Mapping[str, float] | None = None,
    ranges: Mapping[str, tuple[float, float]] | None = None,
    attach: Iterable[str] = (),
) -> metrics.Measures:
    """NCP per QI and total, utility and class sizes of ``release`` against ``original``.

    ``ranges`` overrides a numeric QI's domain (e.g. ``{"age": (10, 100)}``) when the
    denominator of its NCP should be a declared domain rather than the data's range.
    """
    with engines.reading(database, attach) as engine:
        original, release = _located(engine, original, release)
        _tables(engine, original, release)
        return metrics.measure_tables(
            engine, _layout(engine, original, release, weights), original, release, ranges
        )


@takes_criteria
def verify(
    database: str | Path | Engine | Any,
    original: str,
    release: str,
    k: int,
    *,
    attach: Iterable[str] = (),
    max_suppression: float | None = None,
    qi: Iterable[str] = (),
    identifier: Iterable[str] = (),
    sensitive: Iterable[str] = (),
    keep: Iterable[str] = (),
    allow_determinant: Iterable[str] = (),
    population: str | None = None,
    k_map: int | None = None,
    delta_min: float | None = None,
    delta_max: float | None = None,
    **criteria: Any,
) -> Verdict:
    """``release`` against ``original`` as an auditor: the roles the run recorded (or the
    source's comments), no identifier and no QI published raw, k-anonymity, each class's
    released values against the source, the class table against the rows, the release view
    against its tables and the text view against the text they give. ``l_diversity``
    (``l_model`` distinct or entropy), ``t_closeness`` and ``beta_likeness`` (enhanced unless
    ``beta_basic``) are checked too, on every sensitive column the release declares.
    ``max_suppression``: the share of the input rows the auditor allows to be missing from a
    release without provenance (0 unless given: a deleted class is not a suppression), and a
    bound over the suppression a provenance records, beside the run's own. ``qi``,
    ``identifier``, ``sensitive`` and ``keep`` (insensitive) are the auditor's own roles for
    those columns, which win over the source's comments and the provenance: a column the
    source declares an identifier is refused in a release unless the auditor names it so. A
    column released as it is (not sensitive) that determines a QI, its value giving the QI's
    on 99 % of the source's rows or more, is a problem, as the release publishes that QI as
    it is (:mod:`sbc_sql.plan.determinants`), unless the auditor accepts it in
    ``allow_determinant``. ``population`` (a table or view holding the QIs) with ``k_map``
    and ``delta_min`` / ``delta_max`` checks k-map and delta-presence against it
    (:mod:`sbc_sql.privacy.population`)."""
    if k < 2:
        raise InputError(f"k={k} is below 2; choose --k 2 or more")
    asked = Criteria(**criteria)
    asked.check()
    against = planning.Population(population, k_map, delta_min, delta_max)
    against.check()
    if max_suppression is not None and not 0.0 <= max_suppression < 1.0:
        raise InputError(
            f"--max-suppression {max_suppression} is outside [0, 1); give the share of input rows "
            "a release may lack, e.g. --max-suppression 0.01"
        )
    auditor = auditor_roles(qi=qi, identifier=identifier, sensitive=sensitive, insensitive=keep)
    allowed = split_names(allow_determinant)
    with engines.reading(database, attach) as engine:
        original, release = _located(engine, original, release)
        _tables(engine, original, release)
        read = _read(engine, original, release, None, auditor)
        known = [c.name for c in read.columns]
        for name in allowed:
            if name not in known:
                raise InputError(
                    f"column '{name}' given to --allow-determinant is not a column of '{original}'; "
                    f"name its columns ({', '.join(known)})"
                )
        declared = [c for c in read.columns if c.role == "sensitive"]
        check_sensitive(asked, declared, _distinct_values(engine, original, declared))
        problems = list(read.problems)
        facts: dict[str, int] = {}
        if read.readable:
            checked = models(k, asked, declared)
            if against.table is not None:
                population_stage.check_table(engine, against.table, read.layout.qis)
                checked = (*checked, *population_stage.models(engine, against, read.layout.qis, release))
            verdict = verify_pair(
                engine,
                read.layout,
                original,
                release,
                k,
                checked,
                recorded=read.provenance,
                limits=_recorded_limits(read),
                max_suppression=max_suppression,
            )
            problems += verdict.problems
            facts = verdict.facts
            if read.rows_table is not None and read.classes_table is not None:
                problems += release_tables_problems(
                    engine, read.columns, release, read.rows_table, read.classes_table
                )
            if read.text_view is not None:
                problems += text_view_problems(
                    engine, read.columns, read.text_view, read.rows_table, read.classes_table, release
                )
            problems += determinant_problems(engine, original, release, read, allowed)
            if read.provenance is not None and "versions" in read.provenance.document:
                problems += version_problems(
                    engine,
                    read.columns,
                    read.layout,
                    original,
                    release,
                    read.provenance.document,
                    k,
                    models(k, asked, declared),
                )
        return Verdict(k, tuple(problems), facts, read.notes)
