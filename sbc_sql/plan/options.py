"""What the user asked for: the run's options, parsed from flags, keywords or a config file, and
their own limits (those that need no table).
"""

from __future__ import annotations

import math
import numbers
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .. import choices
from ..cluster.background.options import ESTIMATORS
from ..errors import InputError
from ..privacy.criteria import Criteria

MODES = choices.MODES


@dataclass(frozen=True)
class Options:
    """What the user asked for; defaults are the product's defaults."""

    k: int
    qi: tuple[str, ...] = ()
    sensitive: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()
    # kept columns let to determine a quasi-identifier (plan.determinants)
    allow_determinant: tuple[str, ...] = ()
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
    # the most rows the default's block mode holds in this process at once: a table of
    # more is streamed from the database a run of blocks at a time (None: the default)
    held_rows: int | None = None
    # how a CSV input is read (None: sniffed)
    csv_delimiter: str | None = None
    csv_header: bool | None = None
    # l-diversity, t-closeness, beta-likeness on the sensitive columns (none by default)
    criteria: Criteria = field(default_factory=lambda: no_criteria())
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
    # write the ledger of the rows released and pending, so that refresh can add new rows
    incremental: bool = False
    # how each class's QIs are released: generalized (ranges, value sets) or
    # microaggregated (one value: the numeric QIs' ``aggregate``, the categorical QIs'
    # ``aggregate_categorical``)
    recode: str = "generalize"
    aggregate: str | None = None
    aggregate_categorical: str | None = None
    # k-map and delta-presence against a population table
    population: Population = field(default_factory=lambda: Population())


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


@dataclass(frozen=True)
class Population:
    """k-map and delta-presence as asked (:mod:`sbc_sql.privacy.population`): ``table`` the
    population (a table, or a CSV/Parquet file), ``k_map`` the fewest population rows a
    class must match, ``delta_min`` and ``delta_max`` the bounds of a class's rows over its
    matches (None: not given)."""

    table: str | None = None
    k_map: int | None = None
    delta_min: float | None = None
    delta_max: float | None = None

    @property
    def asked(self) -> bool:
        return self.table is not None

    @property
    def delta(self) -> bool:
        """Whether delta-presence is asked."""
        return self.delta_min is not None or self.delta_max is not None

    @property
    def bounds(self) -> tuple[float, float]:
        """delta-presence's bounds, a missing one 0 or 1."""
        low = 0.0 if self.delta_min is None else float(self.delta_min)
        return low, 1.0 if self.delta_max is None else float(self.delta_max)

    def describe(self) -> str:
        """The criteria asked, as a message names them."""
        asked = [] if self.k_map is None else [f"k-map k={self.k_map}"]
        if self.delta:
            low, high = self.bounds
            asked.append(f"delta-presence in [{low:g}, {high:g}]")
        return " and ".join(asked)

    def check(self) -> None:
        """The options' own limits: each asks for the others it needs."""
        given = [
            flag
            for flag, v in (
                ("--k-map", self.k_map),
                ("--delta-min", self.delta_min),
                ("--delta-max", self.delta_max),
            )
            if v is not None
        ]
        if self.table is None:
            if given:
                raise InputError(
                    f"{given[0]} is checked against a population table: give --population TABLE "
                    "(the people the input was drawn from, on the same QIs)"
                )
            return
        if not given:
            raise InputError(
                f"--population '{self.table}' is given without a criterion over it: give --k-map K "
                "(e.g. --k-map 10), --delta-max D (e.g. --delta-max 0.5) or both"
            )
        k_map = self.k_map
        if k_map is not None and (isinstance(k_map, bool) or not isinstance(k_map, int) or k_map < 2):
            raise InputError(f"--k-map {k_map} is not a whole number of 2 or more: give e.g. --k-map 10")
        for flag, v in (("--delta-min", self.delta_min), ("--delta-max", self.delta_max)):
            ok = isinstance(v, numbers.Real) and not isinstance(v, bool) and 0.0 <= float(v) <= 1.0
            if v is not None and not ok:
                raise InputError(
                    f"{flag} {v} is outside [0, 1]; it bounds the share of the population a class "
                    f"matches that is in the release: give e.g. {flag} 0.5"
                )
        low, high = self.bounds
        if self.delta and not low < high:
            raise InputError(
                f"--delta-min {low:g} is not below --delta-max {high:g}; give a lower --delta-min "
                "or a higher --delta-max"
            )
        if self.delta_max is not None and self.delta_max <= 0:
            raise InputError("--delta-max 0 leaves no class a row; give e.g. --delta-max 0.5")


def no_criteria() -> Criteria:
    return Criteria()


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
