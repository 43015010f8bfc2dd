"""Profile stage: the re-identification risk of a table *before* release, and the role each
column seems to play.

:func:`profile` reads a table (or view, or CSV/Parquet path) and reports, every figure an SQL
aggregate of ``sql/profile_*.sql``:

* **Per column**: its type; its distinct non-NULL values; its NULL share; the share of rows
  on which its value is *unique* (appears on no other row; NULL is a value, so a lone NULL
  is unique); and a **role** with the reason. A role declared by a flag (``--qi``,
  ``--sensitive``, ``--drop``, ``--keep``) or a comment (``sbc:qi``...) wins and is
  reported as declared. An undeclared column is suggested by the rules ``anonymize``
  applies (:mod:`sbc_sql.plan`): a *direct identifier* when a word of its name says so
  (name, email, phone, ssn, address, ip...), when it is distinct on every row, or when it
  is categorical and distinct on more than half of 20 rows or more; *insensitive* when its
  type can be no quasi-identifier (nested, binary, interval); else a *QI*. A column is
  *sensitive* only when declared so: the data alone cannot tell. A kept column (declared
  insensitive) that *determines* a QI, its value giving the QI's on 99 % of the rows or more
  (:mod:`sbc_sql.plan.determinants`), says so, with the QIs and the fix: ``anonymize``
  refuses it unless ``--allow-determinant`` lets it.
* **Risk on the raw QIs**, the QIs as the roles give them: the declared QIs, or with none
  declared the undeclared columns suggested as QIs (what ``anonymize`` takes by default).
  An *equivalence class* is a group of records with identical QI values (NULL equal to
  NULL). With n records and a record's class of size f:

  - *unique share*: the share of records alone in their class (f = 1);
  - *prosecutor risk* of a record: 1 / f, the chance that an attacker who knows a person is
    in the table and knows their QIs picks their record. Reported: the highest (1 / the
    smallest class), the mean over records, and the share of records above 20 %, 10 % and
    5 % (f below 5, 10 and 20);
  - *marketer risk*: classes / n, the expected share of records an attacker who links
    every record of the table re-identifies. When the table is the whole population, as
    here, it equals the mean prosecutor risk (sum over classes of f * 1/f, over n).
* **Which QI combinations make most records unique**: every combination of 1 to 3 QIs with
  the share of records unique on it, ranked highest first, ties by the columns' order (the
  combinations' column positions compared in table order). Beyond 3 QIs, greedily: from the
  best 3-combination, add one at a time the QI that raises the unique share most (ties: the
  earlier column) until every QI is in.
* **Population risk**, with a sampling fraction or a column of per-record weights: what
  the records risk in the population the table was drawn from (population uniques by
  Zayatz, Pitman, SNB and the decision rule among them; the Benedetti-Franconi individual
  risk, its global mean and the expected re-identifications), over the keys the raw QIs
  make (:mod:`sbc_sql.quality.population`). The weights column is no QI.

The combinations are counted in one scan per query: ``GROUP BY GROUPING SETS``, one set per
combination (DuckDB, PostgreSQL and Spark have it), at most :data:`SETS_PER_QUERY` sets a
query. On Adult's 8 QIs (92 combinations) one such query took less time than 92 queries of
one ``GROUP BY`` each (``benchmarks/results/profile.md``). Nothing is written to the
database; messages name columns and counts, never a value.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sqlglot import exp

from .. import engines
from ..engines.base import Engine
from ..errors import InputError
from ..model import Column, ColumnInfo, TableInfo
from ..plan import (
    FLAG_OF_ROLE,
    declared_roles,
    determinants,
    identifier_evidence,
    identifier_word,
    split_names,
)
from ..plan.determinants import share_text
from ..sql.nodes import ref
from ..sql.templates import render
from ..stages.stats import kept_determinants
from . import population_keys
from .population_keys import Basis, PopulationRisk

#: the most grouping sets one query holds (Spark expands every row once per set)
SETS_PER_QUERY = 128
#: combinations of up to this many QIs are all counted; beyond, the greedy path
EXHAUSTIVE = 3
#: prosecutor-risk thresholds, as class sizes: 1/f above 20 %, 10 % and 5 %
THRESHOLDS = ((0.20, 5), (0.10, 10), (0.05, 20))
#: how many combinations the text shows (the JSON has them all)
SHOWN = 10


@dataclass(frozen=True)
class Determined:
    """A QI a kept column determines, and the share of rows on which its value gives the QI's."""

    qi: str
    share: float


@dataclass(frozen=True)
class ColumnProfile:
    """One column: its figures and its role (declared, or suggested and why)."""

    name: str
    type: str
    #: distinct non-NULL values (None: a type no QI can have, not counted)
    distinct: int | None
    null_share: float
    #: share of rows whose value no other row has (NULL a value; None: not counted)
    unique_share: float | None
    role: str
    declared: bool
    reason: str
    #: a kept column: the QIs it determines (anonymize refuses it unless let)
    determines: tuple[Determined, ...] = ()


@dataclass(frozen=True)
class SetFigures:
    """The equivalence classes of one set of columns."""

    classes: int
    records: int
    unique_records: int
    smallest: int | None
    #: records in classes of fewer than 5, 10, 20 rows
    above_20: int
    above_10: int
    above_5: int
    highest_risk: float | None
    mean_risk: float | None


@dataclass(frozen=True)
class Risk:
    """Re-identification risk of the records on the raw QIs (definitions: the module)."""

    qis: tuple[str, ...]
    records: int
    classes: int
    unique_records: int
    unique_share: float
    smallest_class: int | None
    prosecutor_highest: float | None
    prosecutor_mean: float | None
    #: share of records whose prosecutor risk is above 20 %, 10 %, 5 %
    prosecutor_above_20: float
    prosecutor_above_10: float
    prosecutor_above_5: float
    marketer: float | None


@dataclass(frozen=True)
class Combination:
    """A set of QIs and the records unique on it."""

    columns: tuple[str, ...]
    unique_records: int
    unique_share: float
    classes: int
    #: on the greedy path: the QI this step added
    added: str | None = None


@dataclass(frozen=True)
class Profile:
    """What :func:`profile` found; ``as_dict()`` for JSON, :func:`text` for a terminal."""

    table: str
    n_rows: int
    columns: tuple[ColumnProfile, ...]
    #: the raw QIs, in table order, and where they come from: 'declared' or 'default'
    qis: tuple[str, ...]
    qi_source: str
    risk: Risk | None
    #: every combination of 1 to 3 QIs, riskiest first
    combinations: tuple[Combination, ...] = ()
    #: beyond 3 QIs: the greedy path, one QI added per step
    greedy: tuple[Combination, ...] = ()
    #: seconds per step (columns, risk, combinations, greedy)
    seconds: dict[str, float] = field(default_factory=dict)
    #: with a sampling fraction or weights: the risk in the population (None: not asked)
    population: PopulationRisk | None = None

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values (the keys are listed in docs/risk.md)."""
        out = asdict(self)
        for column in out["columns"]:
            column["determines"] = list(column["determines"])
        for key in ("combinations", "greedy"):
            for item in out[key]:
                item["columns"] = list(item["columns"])
        if out["risk"] is not None:
            out["risk"]["qis"] = list(out["risk"]["qis"])
        out["qis"] = list(self.qis)
        return out


# ---------------------------------------------------------------------------------------
# SQL


@dataclass(frozen=True)
class WorkNames:
    """Working names of the sets query, none equal to a column's."""

    flag: str
    size: str

    @classmethod
    def avoiding(cls, columns: Iterable[str]) -> WorkNames:
        taken = {c.lower() for c in columns}
        stem = "sbc"
        while any(t.startswith(f"{stem}_") for t in taken):
            stem += "_"
        return cls(f"{stem}_flag", f"{stem}_size")


def nulls_sql(source: str, columns: Sequence[str]) -> exp.Expression:
    return render("profile_nulls", source=source, col=[ref(c) for c in columns])


def sets_sql(
    source: str, columns: Sequence[str], sets: Sequence[Sequence[int]], names: WorkNames
) -> tuple[exp.Expression, list[int]]:
    """The query of ``sets`` (each a tuple of positions in ``columns``), and the positions
    its flags stand for (the columns some set uses, in order)."""
    used = sorted({i for s in sets for i in s})
    grouping = exp.GroupingSets(
        expressions=[exp.Tuple(expressions=[ref(columns[i]) for i in s]) for s in sets]
    )
    tree = render(
        "profile_sets",
        source=source,
        col=[columns[i] for i in used],
        flag=[f"{names.flag}_{j}" for j in range(len(used))],
        sets=grouping,
        size=names.size,
    )
    return tree, used


def set_figures(
    engine: Engine, source: str, columns: Sequence[str], sets: Sequence[Sequence[int]], names: WorkNames
) -> dict[tuple[int, ...], SetFigures]:
    """The classes of each set of columns, :data:`SETS_PER_QUERY` sets a query (a set with
    no row, in an empty table, has no class)."""
    out: dict[tuple[int, ...], SetFigures] = {}
    wanted = [tuple(s) for s in sets]
    for start in range(0, len(wanted), SETS_PER_QUERY):
        chunk = wanted[start : start + SETS_PER_QUERY]
        tree, used = sets_sql(source, columns, chunk, names)
        of_flags = {tuple(0 if i in s else 1 for i in used): s for s in chunk}
        m = len(used)
        for row in engine.fetch_all(tree):
            s = of_flags[tuple(int(v) for v in row[:m])]
            classes, records, unique, smallest, a20, a10, a5, highest, mean = row[m:]
            out[s] = SetFigures(
                int(classes),
                int(records or 0),
                int(unique or 0),
                None if smallest is None else int(smallest),
                int(a20 or 0),
                int(a10 or 0),
                int(a5 or 0),
                None if highest is None else float(highest),
                None if mean is None else float(mean),
            )
    empty = SetFigures(0, 0, 0, None, 0, 0, 0, None, None)
    return {s: out.get(s, empty) for s in wanted}


# ---------------------------------------------------------------------------------------
# roles


def _declared_reason(role: str, origin: str) -> str:
    how = FLAG_OF_ROLE[role] if origin == "flag" else f"its comment 'sbc:{role}'"
    return f"declared by {how}"


def _role(
    c: ColumnInfo,
    declared: Mapping[str, tuple[str, str]],
    qi_named: bool,
    n_rows: int,
    distinct: int | None,
) -> tuple[str, bool, str]:
    """(role, declared, reason) of one column."""
    evidence = identifier_evidence(c.kind, n_rows, distinct) if c.kind is not None else None
    if c.name in declared:
        role, origin = declared[c.name]
        reason = _declared_reason(role, origin)
        if evidence and role != "identifier":
            reason += f"; note: it {evidence}"
        return role, True, reason
    if (word := identifier_word(c.name)) is not None:
        return "identifier", False, f"named like a direct identifier ('{word}')"
    if evidence:
        return "identifier", False, f"it {evidence}"
    if c.kind is None:
        return (
            "insensitive",
            False,
            f"its type {c.type} can be no quasi-identifier; whether it is sensitive the data alone "
            "cannot tell (declare it with --sensitive if it is)",
        )
    taken = (
        "undeclared (anonymize refuses it while QIs are named)"
        if qi_named
        else "undeclared: anonymize takes it as a QI"
    )
    return "qi", False, f"{taken}; no identifier by name or data; sensitive? the data alone cannot tell"


# ---------------------------------------------------------------------------------------
# the stage


def profile(
    database: str | Path | Engine | Any,
    table: str | None = None,
    *,
    qi: Iterable[str] | str = (),
    sensitive: Iterable[str] | str = (),
    drop: Iterable[str] | str = (),
    keep: Iterable[str] | str = (),
    allow_determinant: Iterable[str] | str = (),
    sampling_fraction: float | None = None,
    sample_weights: str | None = None,
    attach: Iterable[str] = (),
    log: Callable[[str], None] | None = None,
) -> Profile:
    """The risk profile of ``table`` before release (definitions: this module's docstring).

    ``qi``, ``sensitive``, ``drop`` and ``keep`` declare roles as ``anonymize`` takes them
    (lists, or names separated by commas); column comments ``sbc:ROLE`` count too;
    ``allow_determinant`` the kept columns anonymize is to let determine a QI. Nothing is
    written. ``log`` receives a line as each step ends, with its seconds. ``database``
    may be the data itself (a pandas or polars DataFrame, a pyarrow Table, a DuckDB
    relation), read in place as the table ``table`` (default 'data'), as ``anonymize``
    takes it. ``sampling_fraction`` (the share of the population the table holds, in
    (0, 1]) or ``sample_weights`` (a numeric column: the people each record stands for, 1
    or more) adds the population risk.
    """
    b = population_keys.basis(sampling_fraction, sample_weights)
    frame = engines.as_frame(database)
    if frame is not None:
        table = table or "data"
        database = engines.duckdb_from_frame(frame, table)
    if not table:
        raise InputError("no table given; pass the table (or view, or CSV/Parquet path) to profile")
    roles = {
        r: split_names([v] if isinstance(v, str) else v)
        for r, v in (
            ("qi", qi),
            ("sensitive", sensitive),
            ("drop", drop),
            ("keep", keep),
            ("allow_determinant", allow_determinant),
        )
    }
    with engines.reading(database, attach) as engine:
        info = engine.open_source(table)
        return _profile(engine, info, table, roles, log or (lambda _: None), b)


def _profile(
    engine: Engine,
    info: TableInfo,
    table: str,
    roles: Mapping[str, Sequence[str]],
    log: Callable[[str], None],
    b: Basis | None = None,
) -> Profile:
    b = b or Basis()
    if not info.columns:
        raise InputError(f"table '{table}' has no columns")
    declared = declared_roles(info, table, roles["qi"], roles["sensitive"], roles["drop"], roles["keep"])
    for c in info.columns:
        if declared.get(c.name, ("", ""))[0] == "qi" and c.kind is None:
            raise InputError(
                f"column '{c.name}' of type {c.type} cannot be a quasi-identifier; "
                "declare it with --drop, --keep or --sensitive"
            )
    names = [c.name for c in info.columns]
    work = WorkNames.avoiding(names)
    source = info.name
    seconds: dict[str, float] = {}

    t = time.perf_counter()
    row = engine.fetch_one(nulls_sql(source, names))
    n_rows, non_null = int(row[0]), [int(v) for v in row[1:]]
    counted = [i for i, c in enumerate(info.columns) if c.kind is not None]
    alone = set_figures(engine, source, names, [(i,) for i in counted], work)
    seconds["columns"] = time.perf_counter() - t
    log(f"profile: columns done in {seconds['columns']:.2f} s")

    qi_named = any(role == "qi" for role, _ in declared.values())
    if b.weights is not None and declared.get(b.weights, ("", ""))[0] == "qi":
        raise InputError(
            f"column '{b.weights}' is both a QI and the {population_keys.WEIGHTS_FLAG} column; "
            "weights are no quasi-identifier: drop it from --qi"
        )
    population_keys.check_weights(engine, source, info.columns, b, table)
    columns: list[ColumnProfile] = []
    for i, c in enumerate(info.columns):
        nulls = n_rows - non_null[i]
        figures = alone.get((i,))
        distinct = None if figures is None else figures.classes - (1 if nulls else 0)
        role, is_declared, reason = _role(c, declared, qi_named, n_rows, distinct)
        if c.name == b.weights and c.name not in declared:
            role, reason = "insensitive", f"the records' weights ({population_keys.WEIGHTS_FLAG}): no QI"
        columns.append(
            ColumnProfile(
                c.name,
                c.type,
                distinct,
                nulls / n_rows if n_rows else 0.0,
                None if figures is None else _share(figures.unique_records, n_rows),
                role,
                is_declared,
                reason,
            )
        )
    if qi_named:
        qis, qi_source = [c.name for c in columns if c.role == "qi" and c.declared], "declared"
    else:
        qis, qi_source = [c.name for c in columns if c.role == "qi"], "default"
    allowed = roles.get("allow_determinant", ())
    for name in allowed:
        if name not in names:
            raise InputError(
                f"column '{name}' given to --allow-determinant does not exist in '{table}'; its "
                f"columns are: {', '.join(names)}"
            )
    t = time.perf_counter()
    columns, ran = _determinants(engine, info, n_rows, columns, qis, allowed)
    if ran:
        seconds["determinants"] = time.perf_counter() - t
        log(f"profile: kept columns against the QIs done in {seconds['determinants']:.2f} s")
    if not qis:
        return Profile(table, n_rows, tuple(columns), (), qi_source, None, seconds=seconds)

    positions = [names.index(q) for q in qis]
    t = time.perf_counter()
    whole = set_figures(engine, source, names, [tuple(positions)], work)[tuple(positions)]
    seconds["risk"] = time.perf_counter() - t
    log(f"profile: risk on {len(qis)} QIs done in {seconds['risk']:.2f} s")
    risk = _risk(tuple(qis), whole, n_rows)
    population = None
    if b.given:
        t = time.perf_counter()
        population = population_keys.figures(engine, source, qis, b)
        seconds["population"] = time.perf_counter() - t
        log(f"profile: population risk done in {seconds['population']:.2f} s")

    t = time.perf_counter()
    combos = [
        s
        for size in range(1, min(EXHAUSTIVE, len(positions)) + 1)
        for s in itertools.combinations(positions, size)
    ]
    found = set_figures(engine, source, names, combos, work)
    ranked = sorted(combos, key=lambda s: (-found[s].unique_records, s))
    seconds["combinations"] = time.perf_counter() - t
    log(f"profile: {len(combos)} combinations done in {seconds['combinations']:.2f} s")

    greedy: list[Combination] = []
    if len(positions) > EXHAUSTIVE:
        t = time.perf_counter()
        current = next(s for s in ranked if len(s) == EXHAUSTIVE)
        while len(current) < len(positions):
            candidates = [tuple(sorted((*current, p))) for p in positions if p not in current]
            step = set_figures(engine, source, names, candidates, work)
            # the most unique records; ties: the earlier column added
            best = max(candidates, key=lambda s: (step[s].unique_records, -min(set(s) - set(current))))
            (added,) = set(best) - set(current)
            greedy.append(_combination(names, best, step[best], n_rows, names[added]))
            current = best
        seconds["greedy"] = time.perf_counter() - t
        log(f"profile: greedy path to {len(positions)} QIs done in {seconds['greedy']:.2f} s")

    return Profile(
        table,
        n_rows,
        tuple(columns),
        tuple(qis),
        qi_source,
        risk,
        tuple(_combination(names, s, found[s], n_rows) for s in ranked),
        tuple(greedy),
        seconds,
        population,
    )


def _determinants(
    engine: Engine,
    info: TableInfo,
    n_rows: int,
    columns: Sequence[ColumnProfile],
    qis: Sequence[str],
    allowed: Sequence[str],
) -> tuple[list[ColumnProfile], bool]:
    """The columns, each kept one (declared insensitive) that determines a QI saying so in
    its reason and its ``determines``; and whether the check ran (one scan, with a QI and a
    kept column the rule weighs)."""
    of = {c.name: c for c in info.columns}

    def column(p: ColumnProfile, role: str) -> Column:
        c = of[p.name]
        return Column(c.name, c.type, role, c.kind, c.temporal)

    kept = determinants.kept_columns(
        [
            column(p, "insensitive")
            for p in columns
            if p.role == "insensitive"
            and p.declared
            and p.distinct is not None
            and determinants.may_determine(p.distinct + (1 if p.null_share > 0 else 0), n_rows)
        ]
    )
    if not kept or not qis:
        return list(columns), False
    chosen = [column(p, "qi") for p in columns if p.name in qis]
    found = kept_determinants(engine, info.name, kept, chosen, list(of))
    hits = {d.column: d for d in determinants.determinants(found, [c.name for c in kept], qis)}
    out = []
    for p in columns:
        d = hits.get(p.name)
        if d is None:
            out.append(p)
            continue
        k = determinants.quoted(d.column)
        then = (
            f"anonymize releases it with a warning ({determinants.FLAG} {k})"
            if d.column in allowed
            else f"anonymize refuses it: declare it with --qi {k} or --drop {k}, or pass "
            f"{determinants.FLAG} {k} if releasing it as it is is meant"
        )
        published = "which the release would publish as it is"
        reason = f"{p.reason}; it determines {d.described()}, {published}: {then}"
        determined = tuple(Determined(q, s) for q, s in zip(d.qis, d.shares, strict=True))
        out.append(dataclasses.replace(p, reason=reason, determines=determined))
    return out, True


def _share(count: int, n: int) -> float:
    return count / n if n else 0.0


def _combination(
    names: Sequence[str], s: Sequence[int], f: SetFigures, n: int, added: str | None = None
) -> Combination:
    return Combination(
        tuple(names[i] for i in s), f.unique_records, _share(f.unique_records, n), f.classes, added
    )


def _risk(qis: tuple[str, ...], f: SetFigures, n: int) -> Risk:
    return Risk(
        qis=qis,
        records=f.records,
        classes=f.classes,
        unique_records=f.unique_records,
        unique_share=_share(f.unique_records, n),
        smallest_class=f.smallest,
        prosecutor_highest=f.highest_risk,
        prosecutor_mean=f.mean_risk,
        prosecutor_above_20=_share(f.above_20, n),
        prosecutor_above_10=_share(f.above_10, n),
        prosecutor_above_5=_share(f.above_5, n),
        marketer=f.mean_risk,
    )


# ---------------------------------------------------------------------------------------
# text


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f} %"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> list[str]:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)]
    out = []
    for line in (header, *rows):
        cells = [
            f"{cell:>{w}}" if r else f"{cell:<{w}}" for cell, w, r in zip(line, widths, right, strict=True)
        ]
        out.append(("  " + "  ".join(cells)).rstrip())
    return out


def _noted(reasons: Sequence[str]) -> tuple[list[str], list[str]]:
    """Each column's reason as its row shows it, and the notes under the table: a reason
    several columns share is said once, as a numbered note the rows refer to ("[1]")."""
    shared = [r for r in dict.fromkeys(reasons) if reasons.count(r) > 1]
    number = {r: f"[{i}]" for i, r in enumerate(shared, 1)}
    return [number.get(r, r) for r in reasons], [f"  {number[r]} {r}" for r in shared]


def text(p: Profile) -> str:
    """The profile as a few aligned tables."""
    out = [f"Table '{p.table}': {p.n_rows:,} rows, {len(p.columns)} columns", "", "Columns"]
    reasons, notes = _noted([c.reason for c in p.columns])
    out += _table(
        ("column", "type", "distinct", "NULL", "unique", "role", "reason"),
        [
            (
                c.name,
                c.type,
                "-" if c.distinct is None else f"{c.distinct:,}",
                _pct(c.null_share),
                _pct(c.unique_share),
                c.role + (" (declared)" if c.declared else ""),
                reason,
            )
            for c, reason in zip(p.columns, reasons, strict=True)
        ],
        (False, False, True, True, True, False, False),
    )
    out += notes
    undeclared = [c.name for c in p.columns if c.role == "identifier" and not c.declared]
    if undeclared:
        out.append(
            f"  anonymize refuses undeclared identifiers: declare them with --drop {','.join(undeclared)} "
            "(or give them another role)"
        )
    for c in p.columns:
        if c.determines:
            qis = ", ".join(f"'{d.qi}' ({share_text(d.share)} of the rows)" for d in c.determines)
            out.append(
                f"  kept column '{c.name}' determines {qis}, which a release would publish as it "
                "is: its reason says the fix"
            )
    out.append("")
    if p.risk is None:
        out.append("No quasi-identifier: declare one with --qi to see the risk on it.")
        return "\n".join(out)
    r = p.risk
    where = (
        "declared"
        if p.qi_source == "declared"
        else "undeclared columns suggested as QIs, as anonymize takes them"
    )
    out.append(f"Risk on the {len(r.qis)} quasi-identifiers ({where}): {', '.join(r.qis)}")
    out += _table(
        ("figure", "value", "meaning"),
        [
            ("equivalence classes", f"{r.classes:,}", "groups of records with identical QI values"),
            (
                "smallest class",
                "-" if r.smallest_class is None else f"{r.smallest_class:,}",
                "the k the raw table has",
            ),
            ("unique records", _pct(r.unique_share), f"{r.unique_records:,} records alone in their class"),
            ("prosecutor risk, highest", _pct(r.prosecutor_highest), "1 / the smallest class"),
            ("prosecutor risk, mean", _pct(r.prosecutor_mean), "mean over records of 1 / their class's size"),
            ("records at risk > 20 %", _pct(r.prosecutor_above_20), "in classes of fewer than 5"),
            ("records at risk > 10 %", _pct(r.prosecutor_above_10), "in classes of fewer than 10"),
            ("records at risk > 5 %", _pct(r.prosecutor_above_5), "in classes of fewer than 20"),
            ("marketer risk", _pct(r.marketer), "classes / records"),
        ],
        (False, True, False),
    )
    out.append("")
    if p.population is None:
        out.append(population_keys.NOT_ASKED)
    else:
        out.append("Risk in the population the table was drawn from")
        out += _table(
            ("figure", "value", "meaning"), population_keys.rows(p.population), (False, True, False)
        )
    if p.combinations:
        out += ["", f"Riskiest QI combinations ({min(SHOWN, len(p.combinations))} of {len(p.combinations)})"]
        out += _table(
            ("rank", "unique", "records", "columns"),
            [
                (str(i), _pct(c.unique_share), f"{c.unique_records:,}", ", ".join(c.columns))
                for i, c in enumerate(p.combinations[:SHOWN], 1)
            ],
            (True, True, True, False),
        )
    if p.greedy:
        out += ["", f"Beyond {EXHAUSTIVE} QIs, adding the QI that makes most records unique"]
        out += _table(
            ("QIs", "unique", "records", "added"),
            [
                (str(len(c.columns)), _pct(c.unique_share), f"{c.unique_records:,}", c.added or "")
                for c in p.greedy
            ],
            (True, True, True, False),
        )
    return "\n".join(out)
