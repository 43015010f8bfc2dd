"""Plan a run: options, column roles (flags, comments, defaults) and validation.

Roles (see the README's options): flags win over comments; with no QI named anywhere an
undeclared column is a QI; with QIs named an undeclared column is an error naming the flags
that declare it.
"""

from __future__ import annotations

import math
import numbers
import os
import re
import shlex
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from . import choices
from . import names as table_names
from .cluster import registry
from .cluster.background.options import ESTIMATORS
from .cluster.leftover import LEFTOVER_MODES
from .cluster.limits import Limits
from .errors import InputError, OutputExistsError, RoleError
from .model import ROLES, Column, TableInfo, release_objects_of
from .privacy.criteria import Criteria, require_sensitive

FLAG_OF_ROLE = {"qi": "--qi", "sensitive": "--sensitive", "identifier": "--drop", "insensitive": "--keep"}
COMMENT_PREFIX = "sbc:"
MODES = choices.MODES
# the class table's size column (beside eq_class and the QIs' release columns)
CLASS_SIZE = "class_size"
# working names of the release's SQL and of verification's (a tuple of a release or of its
# source, the QI values it joins them on); a source column may not take them
RESERVED = ("sbc_eq_class", "sbc_size", "sbc_rows", "sbc_tuple", "sbc_key", "sbc_key2", "sbc_count")


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
    # how a CSV input is read (None: sniffed)
    csv_delimiter: str | None = None
    csv_header: bool | None = None
    # l-diversity, t-closeness, beta-likeness on the sensitive columns (none by default)
    criteria: Criteria = field(default_factory=lambda: _no_criteria())
    # the background-knowledge bound (kinc, kagg, beta-ge; the default with it clusters
    # each group of alike beliefs alone)
    background: Background = field(default_factory=lambda: Background())
    # per-column limits: the widest range of a class on a numeric QI (its units; days for a
    # date or timestamp) and the most values of its set on a categorical QI
    max_width: Mapping[str, float] = field(default_factory=dict)
    max_values: Mapping[str, int] = field(default_factory=dict)
    # a label the release keeps verbatim and the clustering keeps classes pure on
    # (--target), and what purity is worth against information loss (None: the default)
    target: str | None = None
    target_weight: float | None = None
    # cluster the distinct QI tuples, each standing for its rows, where the algorithm and
    # the engine can (False: every row, as pulled)
    tuples: bool = True


@dataclass(frozen=True)
class Background:
    """The background-knowledge options as given (None: the algorithm's default):
    ``threshold`` J, ``estimator`` (nb, combo, kernel), ``table`` the user's knowledge (a
    table or a CSV/Parquet file), ``seed`` of beta-ge's random choices."""

    threshold: float | None = None
    estimator: str | None = None
    table: str | None = None
    seed: int | None = None

    @property
    def asked(self) -> bool:
        return any(v is not None for v in (self.threshold, self.estimator, self.table, self.seed))

    def check(self) -> None:
        """The options' own limits."""
        j = self.threshold
        if j is not None and not (isinstance(j, (int, float)) and math.isfinite(j) and 0 < j <= 1):
            raise InputError(
                f"--bk-threshold {j} is outside (0, 1]; it bounds the Jensen-Shannon divergence, in "
                "bits, between two members' background knowledge: give e.g. --bk-threshold 0.8"
            )
        if self.estimator is not None and self.estimator not in ESTIMATORS:
            raise InputError(f"--bk-estimator '{self.estimator}' is not one of {', '.join(ESTIMATORS)}")
        if self.estimator is not None and self.table is not None:
            raise InputError(
                "--bk gives the background knowledge and --bk-estimator estimates it: give one of them"
            )
        if self.seed is not None and (
            isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0
        ):
            raise InputError(f"--seed {self.seed} is not a whole number of 0 or more: give e.g. --seed 0")


def _no_criteria() -> Criteria:
    return Criteria()


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

    @property
    def sensitive(self) -> tuple[Column, ...]:
        """The sensitive columns, which the privacy criteria read."""
        return tuple(c for c in self.columns if c.role == "sensitive")

    @property
    def target(self) -> Column | None:
        """The --target column (released verbatim), None without one."""
        name = self.options.target
        return next((c for c in self.columns if c.name == name), None) if name else None


def split_names(values: Iterable[str] | None) -> tuple[str, ...]:
    """Repeatable, comma-separated column lists: ('a,b', 'c') -> ('a', 'b', 'c')."""
    out: list[str] = []
    if isinstance(values, str):  # 'age,zip' is one comma-separated list, not five letters
        values = [values]
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


def parse_limits(text: str | Iterable[str] | Mapping[str, float] | None, flag: str) -> dict[str, float]:
    """'age=10,birth_date=365' -> {'age': 10.0, 'birth_date': 365.0} for ``--max-width``;
    whole numbers of 1 or more for ``--max-values``. A mapping is checked as it is."""
    whole = flag == "--max-values"
    example = "nationality=3" if whole else "age=10"
    if isinstance(text, Mapping):
        pairs: list[tuple[str, object]] = [(str(n), v) for n, v in text.items()]
    else:
        pairs = []
        for item in split_names([text] if isinstance(text, str) else text):
            name, sep, value = item.rpartition("=")
            if not sep or not name:
                raise InputError(
                    f"{flag} '{item}' is not of the form column=number; write e.g. {flag} {example}"
                )
            pairs.append((name, value))
    limits: dict[str, float] = {}
    for name, given in pairs:
        try:
            number = float(given)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise InputError(
                f"{flag} of '{name}' is '{given}', not a number; write e.g. {flag} {example}"
            ) from None
        if whole and (not number.is_integer() or number < 1):
            raise InputError(
                f"{flag} of '{name}' is {given}; a class's value set holds a whole number of 1 or "
                f"more values: write e.g. {flag} {name}=3"
            )
        if not whole and not (math.isfinite(number) and number > 0):
            raise InputError(
                f"{flag} of '{name}' is {given}; a class's range must be allowed a finite width "
                f"above 0: write e.g. {flag} {name}=10"
            )
        limits[name] = int(number) if whole else number
    return limits


def comment_role(comment: str | None) -> str | None:
    """The role a column comment declares ('sbc:qi' ...), or None for any other comment."""
    role = _commented(comment)
    return role if role in ROLES else None


def _commented(comment: str | None) -> str | None:
    """What follows 'sbc:' in a comment, lower-cased (None: not a role comment)."""
    if not comment:
        return None
    text = comment.strip().lower()
    if not text.startswith(COMMENT_PREFIX):
        return None
    return text[len(COMMENT_PREFIX) :].strip()


#: a word of an undeclared column's name that says it holds a direct identifier
IDENTIFIER_WORDS = frozenset(
    {
        "name",
        "firstname",
        "lastname",
        "surname",
        "fullname",
        "username",
        "email",
        "mail",
        "phone",
        "telephone",
        "mobile",
        "fax",
        "ssn",
        "passport",
        "address",
        "street",
        "ip",
        "ipv4",
        "ipv6",
        "iban",
        "login",
    }
)
#: an undeclared categorical column with more distinct values than this share of the rows
#: looks like a direct identifier (numbers and dates are exempt: a birth date is a QI)
IDENTIFIER_SHARE = 0.5
#: below this many rows a share says little; only a column distinct on every row is refused
IDENTIFIER_MIN_ROWS = 20


def name_words(name: str) -> list[str]:
    """'PatientEmail', 'patient_e-mail' -> ['patient', 'email']: a name's words, lower-cased."""
    spaced = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name))
    return [w.replace("-", "").lower() for w in re.split(r"[^A-Za-z0-9-]+", spaced) if w]


def whole_k(k: object) -> int:
    """k as an int: a whole number only (k=2.9 is refused rather than run as 2)."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        shown = repr(k) if isinstance(k, (str, float, bool, numbers.Number)) else type(k).__name__
        raise InputError(f"k={shown} is not a whole number; give k as an integer of 2 or more, e.g. k=5")
    return int(k)


MEMORY_LIMIT = re.compile(r"(?P<number>\d+(\.\d+)?)\s*(?P<unit>B|KB|MB|GB|TB|KIB|MIB|GIB|TIB)", re.IGNORECASE)
#: bytes per unit of a memory size, as DuckDB reads them (KB = 1000 bytes, KiB = 1024)
MEMORY_UNITS = {
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
    "TIB": 2**40,
}
#: the least memory DuckDB runs a release in: 16MB ran a 20-row table and 8MB did not
#: (the 2,000-row example needs 40MB, 200,000 rows 96MB); above it a run that needs more
#: stops with DuckDB's out-of-memory error, read into one line
MIN_MEMORY_LIMIT = 16 * 10**6


def memory_bytes(value: str) -> int | None:
    """Bytes of a memory size such as 2GB or 512MiB; None when it is not one."""
    found = MEMORY_LIMIT.fullmatch(value.strip())
    if found is None:
        return None
    return int(float(found.group("number")) * MEMORY_UNITS[found.group("unit").upper()])


def machine_memory() -> int:
    """Bytes of physical memory on this machine (a large number where it cannot be read)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 1 << 62


def check_csv_options(table: str, delimiter: str | None, header: bool | None) -> str | None:
    """The CSV options fit the input: a CSV path, and a delimiter of one character ('\\t' for
    a tab). Returns the delimiter as the reader takes it."""
    if delimiter is None and header is None:
        return None
    if not table.lower().endswith((".csv", ".tsv", ".csv.gz", ".tsv.gz")):
        flag = "--csv-delimiter" if delimiter is not None else "--csv-header"
        raise InputError(f"{flag} reads a CSV file, and '{table}' is not one; drop {flag}")
    if delimiter is None:
        return None
    char = "\t" if delimiter in ("\\t", "tab") else delimiter
    if len(char) != 1:
        raise InputError(
            f"--csv-delimiter '{delimiter}' is not one character; give e.g. --csv-delimiter ';' "
            "(or '\\t' for a tab)"
        )
    return char


def check_target_db(target: str | Path, *, protected: Iterable[str | Path]) -> Path:
    """The release's own database file: never one of the ``protected`` files (the source
    database, the input file), and in a folder that exists and can be written."""
    path = Path(target)
    for other in protected:
        if same_file(path, Path(other)):
            raise InputError(f"--target-db '{path}' is '{other}', which the run reads; give another file")
    return check_writable_path(path, "--target-db")


def same_file(path: Path, other: Path) -> bool:
    """The two paths name one file (or would, once it exists)."""
    return path.resolve() == other.resolve() or (
        path.exists() and other.exists() and os.path.samefile(path, other)
    )


def target_alias(target: Path, source: str) -> str:
    """The name the release's database is attached under: its file's stem as a plain name,
    unless that is the source database's name."""
    stem = re.sub(r"\W", "_", target.stem) or "release"
    stem = stem if not stem[0].isdigit() else f"db_{stem}"
    return stem if stem.lower() != source.lower() else f"{stem}_release"


def check_memory_limit(value: str | None) -> None:
    """A DuckDB memory size such as 2GB or 512MiB (None: DuckDB's own setting), between the
    least DuckDB runs a release in and this machine's memory."""
    if value is None:
        return
    size = memory_bytes(value)
    if size is None:
        raise InputError(
            f"--memory-limit '{value}' is not a size; give a number and a unit, e.g. --memory-limit 2GB"
        )
    if size < MIN_MEMORY_LIMIT:
        raise InputError(
            f"--memory-limit '{value}' is below {MIN_MEMORY_LIMIT // 10**6}MB, the least DuckDB "
            f"runs a release in; give --memory-limit {MIN_MEMORY_LIMIT // 10**6}MB or more"
        )
    total = machine_memory()
    if size > total:
        raise InputError(
            f"--memory-limit '{value}' is above this machine's {total / 10**9:.1f}GB of memory; "
            f"give at most {total // 10**6}MB, or leave it out (DuckDB then takes 80% of it)"
        )


def make_plan(
    info: TableInfo,
    options: Options,
    *,
    display_name: str | None = None,
    parse_name: Callable[[str], table_names.Name] = table_names.parse,
) -> Plan:
    """Resolve every column's role and check everything that needs no data. ``parse_name``
    reads the output's name as the engine does (a path is one name to an engine that
    writes files)."""
    name = display_name or info.name
    if options.k < 2:
        raise InputError(
            f"k={options.k} is below 2; k-anonymity needs at least 2 rows per class: choose --k 2 or more"
        )
    if options.leftover not in LEFTOVER_MODES:
        raise InputError(f"--leftover '{options.leftover}' is not one of {', '.join(LEFTOVER_MODES)}")
    chosen = registry.get(options.algorithm)  # an unknown name is an InputError naming the choices
    if not 0.0 <= options.max_suppression < 1.0:
        raise InputError(
            f"--max-suppression {options.max_suppression} is outside [0, 1); give "
            "a share of rows such as 0.01"
        )
    if options.mode not in MODES:
        raise InputError(f"--mode '{options.mode}' is not one of {', '.join(MODES)}")
    if options.mode != "auto" and options.mode not in chosen.modes:
        raise InputError(
            f"--mode {options.mode} does not apply to {chosen.name}, which runs in "
            f"{' or '.join(chosen.modes)} mode only; drop --mode"
        )
    _check_block_rows(options)
    if options.workers is not None and options.workers < 1:
        raise InputError(
            f"--workers {options.workers} is below 1; give a number of threads such as --workers 2, "
            "or leave it out to use every core"
        )
    if not info.columns:
        raise InputError(f"table '{name}' has no columns")
    roles = _resolve_roles(info, options, name)
    _check_identifier_names(roles)
    columns = []
    for c in info.columns:
        role, origin = roles[c.name]
        kind, temporal = c.kind, c.temporal
        if role != "identifier" and c.type.upper() in _NO_EQUALITY:
            raise InputError(
                f"column '{c.name}' of type {c.type} cannot be {_AS_ROLE[role]}: its values have no "
                "equality to group or check them by; declare it with --drop, or read a view that "
                "casts it (e.g. to text) and name that view with --table"
            )
        if role == "qi" and kind is None:
            raise InputError(
                f"column '{c.name}' of type {c.type} cannot be a quasi-identifier; "
                "declare it with --drop, --keep or --sensitive, or read a view that casts it "
                "(e.g. to text) and name that view with --table"
            )
        columns.append(Column(c.name, c.type, role, kind, temporal, origin))
    if not any(c.role == "qi" for c in columns):
        raise RoleError(f"no quasi-identifier is left in '{name}'; name at least one with --qi")
    _check_criteria(options, chosen, [c for c in columns if c.role == "sensitive"])
    _check_background(options, chosen, [c for c in columns if c.role == "sensitive"])
    weights = _weights(columns, options.weights)
    _check_limits(columns, options)
    limits = Limits(options.max_width, options.max_values)
    refused = chosen.refusal(limits=limits, target=options.target is not None)
    if refused:
        raise InputError(refused)
    if options.output and parse_name(options.output).qualified:
        raise InputError(
            f"--output '{options.output}' names a schema, which a comparison's releases cannot "
            f"take; give a name without one, e.g. --output {shlex.quote(parse_name(options.output).name)}"
        )
    output = options.output or _default_output(name, options.k, info.output_folder)
    plan = Plan(info, name, tuple(columns), options, output, release_objects_of(output)[3], weights)
    _check_release_names(plan)
    _check_categorical_count(plan)
    return plan


def _check_criteria(options: Options, chosen: registry.Clusterer, sensitive: Sequence[Column]) -> None:
    """The criteria's thresholds, a sensitive column for them, and an algorithm that keeps
    them (the data's limits, such as l against the distinct values, come after the
    statistics)."""
    criteria = options.criteria
    criteria.check()
    if not criteria.asked:
        return
    require_sensitive(criteria, sensitive)
    if not chosen.criteria:
        what = (
            "is the paper's algorithm, for k alone,"
            if chosen.name == "sbca-paper"
            else "clusters for k alone"
        )
        others = ", ".join(registry.with_criteria()) or "none"
        raise InputError(
            f"--algorithm {chosen.name} {what} and cannot keep {criteria.describe()}; "
            f"use one that keeps them ({others})"
        )


def _check_background(options: Options, chosen: registry.Clusterer, sensitive: Sequence[Column]) -> None:
    """The background-knowledge options' limits, an algorithm that reads them, the
    criterion an algorithm needs, and the one sensitive column the knowledge is about."""
    bg = options.background
    bg.check()
    readers = ", ".join(c.name for c in registry.CLUSTERERS if c.background)
    if bg.asked and not chosen.background:
        raise InputError(
            f"--bk-threshold, --bk-estimator, --bk and --seed are read by {readers}; --algorithm "
            f"{chosen.name} does not read them: drop them or choose one of those"
        )
    if "beta" in chosen.requires and options.criteria.beta_likeness is None:
        raise InputError(
            f"--algorithm {chosen.name} needs --beta-likeness: its classes keep beta-likeness besides "
            "k and the background-knowledge bound; give e.g. --beta-likeness 3"
        )
    if (bg.asked or chosen.requires) and chosen.background and len(sensitive) != 1:
        raise InputError(
            "background knowledge is about one sensitive column; "
            + (
                f"{len(sensitive)} are declared ({', '.join(c.name for c in sensitive)}): keep one"
                if sensitive
                else "declare it (--sensitive, or the column comment 'sbc:sensitive')"
            )
        )


def declared_roles(
    info: TableInfo,
    name: str,
    qi: Iterable[str] = (),
    sensitive: Iterable[str] = (),
    drop: Iterable[str] = (),
    keep: Iterable[str] = (),
) -> dict[str, tuple[str, str]]:
    """The (role, origin) of every column whose role is declared: by a flag ('flag'), else by
    its comment ('comment'). A flag naming no column, a column given two roles or a comment
    'sbc:...' that is no role is an error naming it; undeclared columns are left out."""
    known = [c.name for c in info.columns]
    flagged: dict[str, str] = {}
    for role, names in (("qi", qi), ("sensitive", sensitive), ("identifier", drop), ("insensitive", keep)):
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
        elif (typo := _commented(c.comment)) is not None:
            raise RoleError(
                f"column '{c.name}' of '{name}' has the comment 'sbc:{typo}', which is no role; "
                f"write one of {', '.join(COMMENT_PREFIX + r for r in ROLES)} (COMMENT ON COLUMN), "
                f"or give the column a role with {', '.join(FLAG_OF_ROLE.values())}"
            )
    return roles


#: PostgreSQL's geometric types: no equality operator, so no value of one can be grouped into
#: classes, nor released verbatim and checked against its source
_NO_EQUALITY = {"POINT", "LINE", "LSEG", "BOX", "PATH", "POLYGON", "CIRCLE"}
_AS_ROLE = {"qi": "a quasi-identifier", "sensitive": "released as sensitive", "insensitive": "kept"}


def _resolve_roles(info: TableInfo, options: Options, name: str) -> dict[str, tuple[str, str]]:
    known = [c.name for c in info.columns]
    roles = declared_roles(info, name, options.qi, options.sensitive, options.drop, options.keep)
    _target_role(roles, known, options, name)
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


def _target_role(roles: dict[str, tuple[str, str]], known: list[str], options: Options, name: str) -> None:
    """The --target column is released verbatim: insensitive unless declared sensitive or
    insensitive (never a QI, never dropped); its weight is a number of 0 or more."""
    target = options.target
    w = options.target_weight
    if w is not None and (
        isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0
    ):
        raise InputError(
            f"--target-weight {w} is not a number of 0 or more; it says how many points of total NCP "
            "one point of label impurity is worth: give e.g. --target-weight 0.1"
        )
    if target is None:
        if w is not None:
            raise InputError("--target-weight weighs the labels of --target; give --target COLUMN too")
        return
    if target not in known:
        raise InputError(
            f"--target names '{target}', which is not a column of '{name}'; "
            f"its columns are: {', '.join(known)}"
        )
    role = roles.get(target, (None, ""))[0]
    if role == "qi":
        raise InputError(
            f"--target names '{target}', a quasi-identifier; the target label is released as it is, "
            f"so it cannot be generalized: drop it from --qi (or declare it --keep or --sensitive)"
        )
    if role == "identifier":
        raise InputError(
            f"--target names '{target}', which is declared an identifier and never released; "
            "declare it --keep or --sensitive"
        )
    if role is None:
        roles[target] = ("insensitive", "target")


def identifier_word(name: str) -> str | None:
    """The word of a column's name that says it holds a direct identifier (name, email,
    phone, ssn, address, ip...), or None."""
    words = sorted(IDENTIFIER_WORDS.intersection(name_words(name)))
    return words[0] if words else None


def _check_identifier_names(roles: Mapping[str, tuple[str, str]]) -> None:
    """An undeclared column named like a direct identifier is never a default QI."""
    for column, (_, origin) in roles.items():
        word = identifier_word(column)
        if origin == "default" and word:
            raise RoleError(
                f"column '{column}' has no declared role and is named like a direct identifier "
                f"('{word}'); declare it with --drop (or --qi / --keep / --sensitive if it is not one)"
            )


def _check_limits(columns: list[Column], options: Options) -> None:
    """Each limit names a QI of its kind: a width a numeric (or date) QI, a value count a
    categorical one."""
    qis = {c.name: c for c in columns if c.role == "qi"}
    for flag, given, kind, other in (
        ("--max-width", options.max_width, "numeric", "--max-values"),
        ("--max-values", options.max_values, "categorical", "--max-width"),
    ):
        for name in given:
            if name not in qis:
                raise InputError(
                    f"{flag} names '{name}', which is not a quasi-identifier; limit only QIs "
                    f"({', '.join(qis)})"
                )
            if qis[name].kind != kind:
                raise InputError(
                    f"{flag} names '{name}', a {qis[name].kind} quasi-identifier; {flag} limits "
                    f"{kind} QIs: use {other} {name}=... instead"
                )


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
    if max(weights) <= 0:
        raise InputError("every QI weight is 0; give at least one QI a weight above 0")
    return scaled_weights(weights)


def scaled_weights(weights: Sequence[float]) -> tuple[float, ...]:
    """Weights scaled so the largest is 1 (all 0 stay 0): only their ratios matter, and so
    weights as large as 1e308 neither overflow their sum nor a weighted cost."""
    top = max(weights, default=0.0)
    return tuple(w / top for w in weights) if top > 0 and top != 1.0 else tuple(weights)


def _default_output(name: str, k: int, folder: str | None = None) -> str:
    """<table>_k<k>: a file's stem, or a (schema-qualified) table's own name; in ``folder``
    when the engine writes a file input's release beside it."""
    base = name.replace("\\", "/").rstrip("/").split("/")[-1]
    stem = re.sub(r"(\.csv|\.tsv|\.parquet|\.pq)(\.gz)?$", "", base, flags=re.IGNORECASE)
    if folder is not None:
        return f"{folder.rstrip('/')}/{stem}_k{k}"
    if stem == base:
        stem = table_names.parse(name).name
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


def check_output(
    plan: Plan,
    taken: Mapping[str, str],
    owners: Mapping[str, str] | None = None,
    identities: Identities | None = None,
) -> None:
    """The release must not overwrite anything unless --replace, never the source, and never
    a part of another release.

    ``taken``: those of the release's names that exist already, and their kind ('TABLE' or
    'VIEW', as an engine's object_kinds gives them); ``owners``: of those, the ones that
    belong to a release, and its name (as its provenance records it); ``identities``: the
    engine's (see Engine.identities), which tells whether a name of the release is the
    input, or an object the input reads, however either is spelt or qualified (without it,
    names are compared lower-cased)."""
    existing = [n for n in plan.release_objects if n in taken]
    for n in existing:
        owner = (owners or {}).get(n)
        if owner is not None and owner.lower() != plan.output.lower():
            raise OutputExistsError(
                f"'{n}' belongs to the release '{owner}'; --output '{plan.output}' would "
                f"replace it even under --replace: choose another --output (or replace "
                f"'{owner}' itself with --output {shlex.quote(owner)})"
            )
    same = identities or _by_name
    reads = plan.source.reads
    read_ids = same(reads, output=False)
    read: dict[Hashable, str] = {}
    for r in reads:
        if r in read_ids:
            read.setdefault(read_ids[r], r)
    out_ids = same(plan.release_objects, output=True)
    for n in plan.release_objects:
        hit = read.get(out_ids[n]) if n in out_ids else None
        if hit is not None:
            how = (
                "the input"
                if read_ids[hit] == read_ids.get(reads[0])
                else f"a table or view the input '{plan.display_name}' reads"
            )
            raise InputError(
                f"--output '{plan.output}' would replace '{hit}', {how} (a release "
                f"writes {', '.join(plan.release_objects)}); choose another --output"
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


class Identities(Protocol):
    """An engine's identities method (see Engine.identities)."""

    def __call__(self, names: Sequence[str], *, output: bool = False) -> Mapping[str, Hashable]: ...


def _by_name(names: Sequence[str], *, output: bool = False) -> dict[str, Hashable]:
    return {n: n.lower() for n in names}


def check_rows(plan: Plan, n_rows: int) -> None:
    if n_rows == 0:
        raise InputError(f"table '{plan.display_name}' is empty; there is nothing to anonymize")
    if n_rows == 1:
        raise InputError(
            f"table '{plan.display_name}' has 1 row; a class of k >= 2 rows needs at least 2: "
            "anonymize a table of 2 rows or more"
        )
    if plan.k > n_rows:
        raise InputError(
            f"k={plan.k} is larger than the {n_rows} rows of '{plan.display_name}'; choose k <= {n_rows}"
        )


def identifier_evidence(kind: str | None, n_rows: int, distinct: int | None) -> str | None:
    """Why the data shows a column to be a direct identifier, or None: distinct on every row
    (``distinct``: its distinct non-NULL values), or categorical and distinct on more than
    half the rows (from 20 rows on)."""
    share = distinct / n_rows if distinct is not None and n_rows else 0.0
    if n_rows >= 2 and distinct == n_rows:
        return f"is distinct on all {n_rows:,} rows and looks like a direct identifier"
    if kind == "categorical" and n_rows >= IDENTIFIER_MIN_ROWS and share > IDENTIFIER_SHARE:
        return (
            f"has {distinct:,} distinct values in {n_rows:,} rows ({share:.0%}, above "
            f"{IDENTIFIER_SHARE:.0%}) and looks like a direct identifier"
        )
    return None


def check_identifiers(
    plan: Plan, n_rows: int, distinct: Mapping[str, int], log: Callable[[str], None]
) -> None:
    """An undeclared column that the data shows to be a direct identifier is refused as a
    default QI (:func:`identifier_evidence`; one named like an identifier is refused by the
    plan already). A column kept verbatim (--keep) that is that distinct is released as it
    is, with a warning."""
    for c in plan.columns:
        seen = distinct.get(c.name)
        share = seen / n_rows if seen is not None and n_rows else 0.0
        if c.origin == "default":
            why = identifier_evidence(c.kind, n_rows, seen)
            if why:
                raise RoleError(
                    f"column '{c.name}' has no declared role and {why}; declare it with --drop "
                    "(or --qi / --keep / --sensitive if it is not one)"
                )
        elif c.role == "insensitive" and n_rows >= IDENTIFIER_MIN_ROWS and share > IDENTIFIER_SHARE:
            log(
                f"warning: column '{c.name}' (--keep) is distinct on {share:.0%} of the rows and is "
                "released as it is; if it identifies people, declare it with --drop"
            )


#: the export's format by the file's ending: Parquet keeps value sets as lists; CSV holds the
#: readable text view ('25-40', 'F|M'); JSON an array of objects, NDJSON one object a line
EXPORT_FORMATS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".json": "json",
    ".ndjson": "ndjson",
    ".jsonl": "ndjson",
}


def export_format(path: str | Path) -> str:
    """'parquet', 'csv', 'json' or 'ndjson' by the file's ending; anything else an InputError."""
    suffix = Path(path).suffix.lower()
    if suffix not in EXPORT_FORMATS:
        raise InputError(
            f"--out-file '{path}' ends in '{suffix or '(nothing)'}'; give a file ending in "
            f"{', '.join(EXPORT_FORMATS)} (the ending picks the format)"
        )
    return EXPORT_FORMATS[suffix]


def check_writable_path(path: str | Path, flag: str) -> Path:
    """An output file's path, checked before any work: a file (not a folder) in a folder that
    exists and this user can write. ``flag`` names the option in the message."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{flag} '{path}' is a folder; give a file path in it")
    folder = path.parent
    if not folder.is_dir():
        raise InputError(
            f"{flag} '{path}': the folder '{folder}' does not exist; create it or give a "
            "path in an existing one"
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(
            f"{flag} '{path}': the folder '{folder}' is not writable for you; give a path in "
            "a folder you can write"
        )
    return path


def check_out_file(out_file: str | Path, *, protected: Iterable[str | Path], replace: bool) -> Path:
    """The export's path, once it is known to replace nothing it must not: never one of the
    ``protected`` files (the database's files, the input file), and an existing file only
    under ``--replace``; and in a folder that exists and can be written
    (:func:`check_writable_path`), so that a run never fails after its work for the want of
    one."""
    path = Path(out_file)
    export_format(path)
    for other in protected:
        kept = Path(other)
        if same_file(path, kept):
            raise InputError(
                f"--out-file '{path}' is '{kept}', which the run reads or writes; choose another --out-file"
            )
    if path.is_dir():
        raise InputError(
            f"--out-file '{path}' is a folder; give a file path ending in .parquet, .csv or .json"
        )
    if path.exists() and not replace:
        raise OutputExistsError(
            f"--out-file '{path}' already exists; pass --replace to overwrite it or choose another --out-file"
        )
    return check_writable_path(path, "--out-file")
