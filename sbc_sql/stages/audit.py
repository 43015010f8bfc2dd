"""How ``verify`` and ``measure`` read a release they did not make: its provenance, the roles
of the source's columns, its layout, the objects it is made of, and what its columns alone
show to be wrong.

Roles come from the release's provenance (the COMMENT ``publish`` stores, see
:mod:`sbc_sql.provenance`) and from the source's column comments (``sbc:identifier``,
``sbc:qi``, ``sbc:sensitive``, ``sbc:insensitive``), never from column names alone: a
comment declares the owner's role for a column, and stands unless the run recorded a flag
that overrode it. A release without provenance (made by an earlier version, or by hand)
is read as before, each QI recognized by its generalized columns, and the verdict says so.

What the columns show:

* a column of an identifier, in any object of the release, is refused;
* a QI published raw (its values as they are, beside or instead of its range or set) is
  refused;
* a column that is none of the layout's is refused (it could hold anything); a column of
  the layout that is missing stops the row checks, which could not run;
* with provenance, the source must be the one the run read (the same columns and types),
  and every object must carry the same provenance (a table replaced by hand loses it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..engines.base import Engine
from ..errors import InputError
from ..model import Column, ColumnInfo, release_objects_of
from ..plan import CLASS_SIZE, comment_role
from ..provenance import Provenance, ProvenanceError, parse
from .ledger import VERSION
from .measure import Layout, infer_layout

#: what the verdict says of a release whose roles were read off its columns
NO_PROVENANCE = "roles inferred; no provenance"


@dataclass(frozen=True)
class Release:
    """A release as verification reads it."""

    name: str
    layout: Layout
    #: every source column in order, each with the role the release gives it (an identifier,
    #: or a column it does not carry, has role 'identifier')
    columns: tuple[Column, ...]
    provenance: Provenance | None
    #: the row and class tables beside a release view, and its text view (None: absent)
    rows_table: str | None = None
    classes_table: str | None = None
    text_view: str | None = None
    problems: tuple[str, ...] = ()
    #: the row checks can run: every column they read is present, and the source is the
    #: run's (else they are not run)
    readable: bool = True
    notes: tuple[str, ...] = field(default_factory=tuple)


def read(
    engine: Engine,
    original: str,
    release: str,
    weights: Mapping[str, float] | None = None,
    auditor: Mapping[str, str] | None = None,
) -> Release:
    """The release ``release`` of ``original``: layout, roles, objects and the problems its
    columns show. ``weights`` (per QI) override those the run recorded; ``auditor``: the
    roles the auditor gives columns (verify --qi/--identifier/--sensitive/--keep), which win
    over the source's comments and the provenance alike."""
    source = engine.describe(original).columns
    problems: list[str] = []
    auditor = dict(auditor or {})
    unknown = sorted(set(auditor) - {c.name for c in source})
    if unknown:
        raise InputError(
            f"column '{unknown[0]}' given a role by verify is not a column of '{original}'; name "
            f"its columns ({', '.join(c.name for c in source)})"
        )
    try:
        recorded = parse(engine.comment(release))
    except ProvenanceError as err:
        problems.append(f"'{release}': {err}")
        recorded = None
    declared, overruled = _declared_roles(source, recorded, auditor, original)
    changed: list[str] = []
    if recorded is not None:
        changed = _source_problems(original, source, recorded)
        problems += changed
        columns = _recorded_columns(source, recorded)
        w = {**recorded.weights, **(weights or {})}
        notes: tuple[str, ...] = ()
    else:
        inferred = infer_layout(engine, original, release, weights)
        roles = {c.name: c for c in (*inferred.qis, *inferred.verbatim)}
        columns = tuple(roles.get(c.name, _not_released(c)) for c in source)
        w = dict(weights or {})
        notes = (NO_PROVENANCE,)
    notes = (*notes, *overruled)
    # a column declared an identifier is no part of the layout: any column of it is refused
    columns = tuple(
        _not_released(c) if declared.get(c.name, ("", ""))[0] == "identifier" else c for c in columns
    )
    # the auditor's word on a column released as it is: sensitive or not
    columns = tuple(
        dataclasses.replace(c, role=auditor[c.name])
        if auditor.get(c.name) in VERBATIM and c.role in VERBATIM
        else c
        for c in columns
    )
    qis = tuple(c for c in columns if c.role == "qi")
    verbatim = tuple(c for c in columns if c.role in ("sensitive", "insensitive"))
    layout = Layout(qis, verbatim, tuple(float(w.get(q.name, 1.0)) for q in qis))

    kinds = engine.object_kinds(release_objects_of(release))
    rows_table = classes_table = text_view = None
    if kinds.get(release) == "VIEW":
        rows_name, classes_name, view_name = release_objects_of(release)[1:]
        if kinds.get(rows_name) == "TABLE" and kinds.get(classes_name) == "TABLE":
            rows_table, classes_table = rows_name, classes_name
        elif recorded is not None:
            problems.append(
                f"the row table '{rows_name}' or the class table '{classes_name}' of '{release}' is "
                "missing; a release is its view and both tables"
            )
        if kinds.get(view_name) == "VIEW":
            text_view = view_name
        elif recorded is not None:
            problems.append(f"the text view '{view_name}' of '{release}' is missing")
    if recorded is not None:
        for name in (rows_table, classes_table):
            if name is not None and engine.comment(name) != engine.comment(release):
                problems.append(
                    f"'{name}' does not carry the provenance of '{release}' (the table was "
                    "replaced, or belongs to another run)"
                )

    released = [c for c in columns if c.role != "identifier"]
    expected = {
        release: ["eq_class"] + [n for c in released for n in c.release_columns],
        rows_table: ["eq_class"]
        + [c.name for c in released if c.role != "qi"]
        + ([VERSION] if recorded is not None and "versions" in recorded.document else []),
        classes_table: ["eq_class", CLASS_SIZE]
        + [n for c in released if c.role == "qi" for n in c.release_columns],
        text_view: ["eq_class"] + [c.name for c in released],
    }
    # another source than the run's: its rows cannot be held against the release
    readable = not changed
    for name, wanted in expected.items():
        if name is None:
            continue
        has = engine.describe(name).columns
        found = [c.name for c in has]
        problems += _column_problems(name, found, wanted, columns, declared, original, text=name == text_view)
        if recorded is not None:
            problems += _type_problems(name, has, columns, text=name == text_view)
        if any(n not in found for n in wanted):
            readable = False
    return Release(
        release,
        layout,
        columns,
        recorded,
        rows_table,
        classes_table,
        text_view,
        tuple(problems),
        readable,
        notes,
    )


def _source_problems(original: str, source: Sequence[ColumnInfo], recorded: Provenance) -> list[str]:
    """The source must be the table the run read: the same columns, in order, of the same types."""
    now = [c.name for c in source]
    then = [c.name for c in recorded.columns]
    if now != then:
        return [
            f"'{original}' has columns ({', '.join(now)}); the run read ({', '.join(then)}): "
            "pass the source the release was made from"
        ]
    return [
        f"column '{c.name}' of '{original}' is {c.type}; the run read it as {r.type}"
        for c, r in zip(source, recorded.columns, strict=True)
        if c.type != r.type
    ]


def _recorded_columns(source: Sequence[ColumnInfo], recorded: Provenance) -> tuple[Column, ...]:
    by_name = {c.name: c for c in recorded.columns}
    return tuple(by_name.get(c.name) or _not_released(c) for c in source)


def _not_released(c: ColumnInfo | Column) -> Column:
    """A source column the release must not carry (role 'identifier')."""
    return Column(c.name, c.type, "identifier", c.kind, c.temporal)


#: the roles of columns released as they are
VERBATIM = ("sensitive", "insensitive")


def _declared_roles(
    source: Sequence[ColumnInfo], recorded: Provenance | None, auditor: Mapping[str, str], original: str
) -> tuple[dict[str, tuple[str, str]], tuple[str, ...]]:
    """Each column's declared role and who declares it, and a note for each comment on the
    source that a role the run recorded outranks. The auditor's word wins over everything;
    then a comment declaring an identifier, whatever the run recorded (a provenance is a
    comment whoever owns the release can rewrite, its origins included); then a role the run
    set by a flag, said in a note where the source's comment differs; then the source's
    comment (the owner's current word) over a role the run took from a comment or by
    default; then the run's."""
    run = {c.name: c for c in recorded.columns} if recorded else {}
    roles: dict[str, tuple[str, str]] = {}
    notes: list[str] = []
    for c in source:
        commented = comment_role(c.comment)
        r = run.get(c.name)
        if c.name in auditor:
            roles[c.name] = (auditor[c.name], "the auditor")
        elif commented == "identifier":
            roles[c.name] = (commented, "its comment 'sbc:identifier'")
        elif r is not None and (r.origin == "flag" or commented is None):
            roles[c.name] = (r.role, "the run")
            if commented is not None and commented != r.role:
                notes.append(
                    f"column '{c.name}': the run's provenance records role '{r.role}' from a flag, "
                    f"over its comment 'sbc:{commented}' on '{original}' (the provenance is the "
                    f"release owner's word; pass verify --{_FLAGS[commented]} {c.name} to hold the "
                    "comment)"
                )
        elif commented is not None:
            roles[c.name] = (commented, f"its comment 'sbc:{commented}'")
    return roles, tuple(notes)


#: verify's option that gives a column each role
_FLAGS = {"qi": "qi", "identifier": "identifier", "sensitive": "sensitive", "insensitive": "keep"}


def _owner(column: str, columns: Sequence[Column]) -> Column | None:
    """The source column a release column comes from (c, c_min, c_max, c_has_null)."""
    for c in columns:
        if column == c.name or column in (c.name + "_min", c.name + "_max", c.name + "_has_null"):
            return c
    return None


def _column_problems(
    name: str,
    found: Sequence[str],
    wanted: Sequence[str],
    columns: Sequence[Column],
    declared: Mapping[str, tuple[str, str]],
    original: str,
    *,
    text: bool,
) -> list[str]:
    problems: list[str] = []
    for column in found:
        if column in wanted:
            continue
        owner = _owner(column, columns)
        role, who = declared.get(owner.name, ("", "")) if owner else ("", "")
        if owner is not None and role == "identifier":
            problems.append(
                f"'{name}' carries column '{column}' of '{original}'.'{owner.name}', which {who} "
                "declares an identifier; identifiers must be left out of a release (if publishing "
                f"it is meant, say so with verify --keep {owner.name} or --qi {owner.name})"
            )
        elif owner is not None and (
            role == "qi" or any(c.name == owner.name and c.role == "qi" for c in columns)
        ):
            problems.append(
                f"'{name}' publishes quasi-identifier '{owner.name}' raw in column '{column}' "
                "(its values as they are, not its class's range or set)"
            )
        else:
            problems.append(f"'{name}' has column '{column}', which is none of its release's columns")
    missing = [c for c in wanted if c not in found]
    if missing:
        problems.append(f"'{name}' lacks column(s) {', '.join(missing)} of its release")
    if not text:
        for c in columns:
            role, _ = declared.get(c.name, ("", ""))
            if role == "qi" and c.role != "qi" and c.name in found:
                problems.append(
                    f"'{name}' publishes quasi-identifier '{c.name}' raw (declared 'sbc:qi' "
                    f"in '{original}', released as it is)"
                )
    return problems


def _type_problems(
    name: str, has: Sequence[ColumnInfo], columns: Sequence[Column], *, text: bool
) -> list[str]:
    """With provenance the release's types are the run's: a numeric QI's range of the
    source's type and a BOOLEAN NULL flag, a value set a list of it, the other columns the
    source's type, and in the text view text; a QI microaggregated to one value, the
    source's type."""
    types: dict[str, str] = {}
    for c in columns:
        if c.role == "identifier":
            continue
        if c.role != "qi":
            types[c.name] = c.type
        elif text:
            types[c.name] = "VARCHAR"
        elif c.one_value:
            types[c.name] = c.type
        elif c.kind == "numeric":
            types.update({c.name + "_min": c.type, c.name + "_max": c.type, c.name + "_has_null": "BOOLEAN"})
        else:
            types[c.name] = c.type + "[]"
    return [
        f"column '{c.name}' of '{name}' is {c.type}; the run wrote {types[c.name]}"
        for c in has
        if c.name in types and c.type != types[c.name]
    ]
