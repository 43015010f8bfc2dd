"""Plan a run: options, column roles (flags, comments, defaults) and validation.

Roles (see the README's options): flags win over comments; with no QI named anywhere an
undeclared column is a QI; with QIs named an undeclared column is an error naming the flags
that declare it.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .cluster import registry
from .cluster.leftover import LEFTOVER_MODES
from .engines.base import TableInfo
from .errors import InputError, OutputExistsError, RoleError

ROLES = ("qi", "sensitive", "identifier", "insensitive")
FLAG_OF_ROLE = {"qi": "--qi", "sensitive": "--sensitive", "identifier": "--drop", "insensitive": "--keep"}
COMMENT_PREFIX = "sbc:"
MODES = ("auto", "exact", "blocks")
# the class table's size column (beside eq_class and the QIs' release columns)
CLASS_SIZE = "class_size"
# working names of the release's SQL and of verification's (a tuple of a release or of its
# source, the QI values it joins them on); a source column may not take them
RESERVED = ("sbc_eq_class", "sbc_size", "sbc_rows", "sbc_tuple", "sbc_key", "sbc_key2")


@dataclass(frozen=True)
class Options:
    """What the user asked for; defaults are the product's defaults."""

    k: int
    qi: tuple[str, ...] = ()
    sensitive: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()
    output: str | None = None
    replace: bool = False
    leftover: str = "nearest"
    weights: Mapping[str, float] = field(default_factory=dict)
    mode: str = "auto"
    workers: int | None = None
    algorithm: str = "sbca"
    max_suppression: float = 0.01
    # rows per block of the default's block mode (None: max(1,536, 160 k))
    block_rows: int | None = None


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    role: str
    # 'numeric' or 'categorical' as the engine reads the column's type (every QI has one;
    # None: no QI can have that type)
    kind: str | None = None
    # for numeric columns stored as DATE or TIMESTAMP: 'date' or 'timestamp'
    temporal: str | None = None
    # where the role came from: 'flag', 'comment' or 'default'
    origin: str = "default"

    @property
    def release_columns(self) -> list[str]:
        """Its columns in the release: a numeric QI's range and NULL flag, else its name."""
        if self.role == "qi" and self.kind == "numeric":
            return [self.name + s for s in ("_min", "_max", "_has_null")]
        return [self.name]


def release_objects_of(output: str) -> tuple[str, str, str, str]:
    """The names a release called ``output`` writes: the release view, its row and class
    tables, and the text view."""
    return (output, f"{output}_rows", f"{output}_classes", f"{output}_view")


@dataclass(frozen=True)
class Plan:
    source: TableInfo
    display_name: str
    columns: tuple[Column, ...]
    options: Options
    output: str
    view: str
    weights: tuple[float, ...]

    @property
    def k(self) -> int:
        return self.options.k

    @property
    def rows_table(self) -> str:
        """The release's row table: class id and verbatim columns, a row per released row."""
        return f"{self.output}_rows"

    @property
    def classes_table(self) -> str:
        """The release's class table: a row per class, its size and generalization."""
        return f"{self.output}_classes"

    @property
    def release_objects(self) -> tuple[str, ...]:
        """Everything a release writes: the release view, its two tables, the text view."""
        return release_objects_of(self.output)

    @property
    def qis(self) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if c.role == "qi")

    @property
    def numeric_qis(self) -> tuple[Column, ...]:
        return tuple(c for c in self.qis if c.kind == "numeric")

    @property
    def categorical_qis(self) -> tuple[Column, ...]:
        return tuple(c for c in self.qis if c.kind == "categorical")

    @property
    def verbatim(self) -> tuple[Column, ...]:
        """Columns released as they are: sensitive and insensitive."""
        return tuple(c for c in self.columns if c.role in ("sensitive", "insensitive"))


def split_names(values: Iterable[str] | None) -> tuple[str, ...]:
    """Repeatable, comma-separated column lists: ('a,b', 'c') -> ('a', 'b', 'c')."""
    out: list[str] = []
    for value in values or ():
        out.extend(part.strip() for part in value.split(",") if part.strip())
    return tuple(out)


def parse_weights(text: str | Iterable[str] | None) -> dict[str, float]:
    """'age=2,zip=0.5' -> {'age': 2.0, 'zip': 0.5}."""
    items = split_names([text] if isinstance(text, str) else text)
    weights: dict[str, float] = {}
    for item in items:
        name, sep, value = item.rpartition("=")
        if not sep or not name:
            raise InputError(f"weight '{item}' is not of the form qi=number; write e.g. --weights age=2")
        try:
            w = float(value)
        except ValueError:
            raise InputError(
                f"weight of '{name}' is '{value}', not a number; write e.g. --weights {name}=2"
            ) from None
        if not math.isfinite(w) or w < 0:
            raise InputError(f"weight of '{name}' is {value}; weights must be finite and >= 0")
        weights[name] = w
    return weights


def comment_role(comment: str | None) -> str | None:
    if not comment:
        return None
    text = comment.strip().lower()
    if not text.startswith(COMMENT_PREFIX):
        return None
    role = text[len(COMMENT_PREFIX) :].strip()
    return role if role in ROLES else None


MEMORY_LIMIT = re.compile(r"\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KIB|MIB|GIB|TIB)", re.IGNORECASE)


def check_memory_limit(value: str | None) -> None:
    """A DuckDB memory size such as 2GB or 512MiB (None: DuckDB's own setting)."""
    if value is not None and not MEMORY_LIMIT.fullmatch(value.strip()):
        raise InputError(
            f"--memory-limit '{value}' is not a size; give a number and a unit, e.g. --memory-limit 2GB"
        )


def make_plan(info: TableInfo, options: Options, *, display_name: str | None = None) -> Plan:
    """Resolve every column's role and check everything that needs no data."""
    name = display_name or info.name
    if options.k < 2:
        raise InputError(
            f"k={options.k} is below 2; k-anonymity needs at least 2 rows per class: choose --k 2 or more"
        )
    if options.leftover not in LEFTOVER_MODES:
        raise InputError(f"--leftover '{options.leftover}' is not one of {', '.join(LEFTOVER_MODES)}")
    registry.get(options.algorithm)  # an unknown name is an InputError naming the choices
    if not 0.0 <= options.max_suppression < 1.0:
        raise InputError(
            f"--max-suppression {options.max_suppression} is outside [0, 1); give "
            "a share of rows such as 0.01"
        )
    if options.mode not in MODES:
        raise InputError(f"--mode '{options.mode}' is not one of {', '.join(MODES)}")
    _check_block_rows(options)
    if not info.columns:
        raise InputError(f"table '{name}' has no columns")
    for c in info.columns:
        # the SQL stages key rows by DuckDB's rowid, which a column of that name hides
        if c.name.lower() == "rowid":
            raise InputError(
                f"column '{c.name}' of '{name}' hides DuckDB's row position; rename "
                "it in the source (e.g. ALTER TABLE ... RENAME COLUMN)"
            )
    roles = _resolve_roles(info, options, name)
    columns = []
    for c in info.columns:
        role, origin = roles[c.name]
        kind, temporal = c.kind, c.temporal
        if role == "qi" and kind is None:
            raise InputError(
                f"column '{c.name}' of type {c.type} cannot be a quasi-identifier; "
                "declare it with --drop, --keep or --sensitive"
            )
        columns.append(Column(c.name, c.type, role, kind, temporal, origin))
    if not any(c.role == "qi" for c in columns):
        raise RoleError(f"no quasi-identifier is left in '{name}'; name at least one with --qi")
    weights = _weights(columns, options.weights)
    output = options.output or _default_output(name, options.k)
    plan = Plan(info, name, tuple(columns), options, output, release_objects_of(output)[3], weights)
    _check_release_names(plan)
    _check_categorical_count(plan)
    return plan


def _resolve_roles(info: TableInfo, options: Options, name: str) -> dict[str, tuple[str, str]]:
    known = [c.name for c in info.columns]
    flagged: dict[str, str] = {}
    for role, names in (
        ("qi", options.qi),
        ("sensitive", options.sensitive),
        ("identifier", options.drop),
        ("insensitive", options.keep),
    ):
        for col in names:
            if col not in known:
                raise InputError(
                    f"column '{col}' given to {FLAG_OF_ROLE[role]} does not exist in "
                    f"'{name}'; its columns are: {', '.join(known)}"
                )
            if col in flagged and flagged[col] != role:
                raise RoleError(
                    f"column '{col}' is given two roles ({FLAG_OF_ROLE[flagged[col]]} "
                    f"and {FLAG_OF_ROLE[role]}); give it one"
                )
            flagged[col] = role
    roles: dict[str, tuple[str, str]] = {}
    for c in info.columns:
        if c.name in flagged:
            roles[c.name] = (flagged[c.name], "flag")
        elif (commented := comment_role(c.comment)) is not None:
            roles[c.name] = (commented, "comment")
    qi_named = any(role == "qi" for role, _ in roles.values())
    undeclared = [c for c in known if c not in roles]
    if qi_named and undeclared:
        raise RoleError(
            f"column '{undeclared[0]}' has no role while quasi-identifiers are named; "
            f"declare it with --qi, --sensitive, --keep or --drop "
            f"({len(undeclared)} undeclared column(s): {', '.join(undeclared)})"
        )
    for col in undeclared:
        roles[col] = ("qi", "default")
    return roles


def _weights(columns: list[Column], given: Mapping[str, float]) -> tuple[float, ...]:
    qis = [c.name for c in columns if c.role == "qi"]
    for col, w in given.items():
        if col not in qis:
            raise InputError(
                f"--weights names '{col}', which is not a quasi-identifier; "
                f"weight only QIs ({', '.join(qis)})"
            )
        if not math.isfinite(w) or w < 0:
            raise InputError(f"weight of '{col}' is {w}; weights must be finite and >= 0")
    weights = tuple(float(given.get(q, 1.0)) for q in qis)
    if sum(weights) <= 0:
        raise InputError("every QI weight is 0; give at least one QI a weight above 0")
    return weights


def _default_output(name: str, k: int) -> str:
    stem = re.sub(
        r"(\.csv|\.tsv|\.parquet|\.pq)(\.gz)?$",
        "",
        name.replace("\\", "/").split("/")[-1],
        flags=re.IGNORECASE,
    )
    return f"{stem}_k{k}"


def release_names(plan: Plan) -> list[str]:
    """Column names of the release view, in order (see README's release schema)."""
    return ["eq_class"] + [n for c in plan.columns if c.role != "identifier" for n in c.release_columns]


def _check_block_rows(options: Options) -> None:
    rows = options.block_rows
    if rows is None:
        return
    if not registry.get(options.algorithm).block_rows or options.mode == "exact":
        raise InputError(
            f"--block-rows {rows} sizes the blocks of the default sbca in block "
            "mode; drop it, or drop --exact / --algorithm"
        )
    if rows < max(options.k, 2):
        raise InputError(
            f"--block-rows {rows} is below k={options.k}; a block must hold at "
            f"least one class: give {max(options.k, 2)} or more"
        )


def _check_categorical_count(plan: Plan) -> None:
    n = len(plan.categorical_qis)
    chosen = registry.get(plan.options.algorithm)
    limit = chosen.max_categorical
    if limit is not None and n > limit:
        who = f"the default {chosen.name}" if chosen.name == registry.DEFAULT else chosen.name
        other = next(c.name for c in registry.CLUSTERERS if c.max_categorical is None)
        raise InputError(
            f"{n} categorical quasi-identifiers; {who} takes at most "
            f"{limit}: declare some with --keep or --drop, or use "
            f"--algorithm {other}"
        )


def _check_release_names(plan: Plan) -> None:
    class_names = ["eq_class", CLASS_SIZE] + [n for c in plan.qis for n in c.release_columns]
    for names in (release_names(plan), class_names):
        seen: set[str] = set()
        for n in names:
            if n.lower() in seen:
                raise InputError(
                    f"the release would have two columns named '{n}'; rename the "
                    "source column or declare it with --drop"
                )
            seen.add(n.lower())
    for c in plan.columns:
        if c.name.lower() in RESERVED:
            raise InputError(f"column '{c.name}' is reserved by sbc-sql; rename it in the source")


def check_output(plan: Plan, taken: Mapping[str, str]) -> None:
    """The release must not overwrite anything unless --replace, and never the source.

    ``taken``: those of the release's names that exist already, and their kind ('TABLE' or
    'VIEW', as an engine's object_kinds gives them)."""
    existing = [n for n in plan.release_objects if n in taken]
    if plan.source.from_file is None and plan.source.name in plan.release_objects:
        raise InputError(
            f"--output '{plan.output}' would overwrite the source table "
            f"'{plan.source.name}' (a release writes {', '.join(plan.release_objects)}); "
            "choose another name"
        )
    if taken.get(plan.view) == "TABLE":
        raise OutputExistsError(
            f"'{plan.view}' exists and is not a view; drop or rename it, or choose another --output"
        )
    if existing and not plan.options.replace:
        raise OutputExistsError(
            f"'{existing[0]}' already exists; pass --replace to "
            "overwrite the release or --output to choose another name"
        )


def check_rows(plan: Plan, n_rows: int) -> None:
    if n_rows == 0:
        raise InputError(f"table '{plan.display_name}' is empty; there is nothing to anonymize")
    if plan.k > n_rows:
        raise InputError(
            f"k={plan.k} is larger than the {n_rows} rows of '{plan.display_name}'; choose k <= {n_rows}"
        )


def check_identifiers(plan: Plan, n_rows: int, distinct: Mapping[str, int]) -> None:
    """An undeclared column distinct on every row looks like a direct identifier."""
    if n_rows < 2:
        return
    for c in plan.columns:
        if c.origin == "default" and distinct.get(c.name) == n_rows:
            raise RoleError(
                f"column '{c.name}' is distinct on all {n_rows} rows and looks like a "
                "direct identifier; declare it with --drop (or --qi / --keep if it "
                "is not one)"
            )


def check_out_file(out_file: str | Path, *, protected: Iterable[str | Path], replace: bool) -> Path:
    """The export's path, once it is known to replace nothing it must not: never one of the
    ``protected`` files (the database's files, the input file), and an existing file only
    under ``--replace``."""
    path = Path(out_file)
    target = path.resolve()
    for other in protected:
        kept = Path(other)
        if kept.resolve() == target or (path.exists() and kept.exists() and os.path.samefile(path, kept)):
            raise InputError(
                f"--out-file '{path}' is '{kept}', which the run reads or writes; choose another --out-file"
            )
    if path.is_dir():
        raise InputError(f"--out-file '{path}' is a folder; give a file path ending in .parquet or .csv")
    if path.exists() and not replace:
        raise OutputExistsError(
            f"--out-file '{path}' already exists; pass --replace to overwrite it or choose another --out-file"
        )
    return path
