"""The checks a plan must pass before anything is written: the criteria and background options
against the chosen algorithm, per-column limits, block sizes, the release's names against the
catalog (no output replaces an input or what another user owns) and the row count.
"""

from __future__ import annotations

import shlex
from collections.abc import Hashable, Mapping, Sequence
from typing import Protocol

from ..cluster import registry
from ..errors import InputError, OutputExistsError
from ..model import Column
from ..privacy.criteria import require_sensitive
from .decided import CLASS_SIZE, Plan, release_names
from .options import Options

# working names of the release's SQL and of verification's (a tuple of a release or of its
# source, the QI values it joins them on); a source column may not take them
RESERVED = ("sbc_eq_class", "sbc_size", "sbc_rows", "sbc_tuple", "sbc_key", "sbc_key2", "sbc_count")


def check_criteria(options: Options, chosen: registry.Clusterer, sensitive: Sequence[Column]) -> None:
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


def check_background(options: Options, chosen: registry.Clusterer, sensitive: Sequence[Column]) -> None:
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


def check_population(options: Options) -> None:
    """k-map and delta-presence's options (:class:`.options.Population`), and what they cannot
    go with: the clustering merges classes after it has formed them, which a per-column limit,
    a background-knowledge bound or a refresh (whose new rows join published classes as
    they are) would not survive, and a microaggregated class has no range or set to match."""
    population = options.population
    population.check()
    if not population.asked:
        return
    given = f"--population '{population.table}'"
    if options.max_width or options.max_values:
        raise InputError(
            f"{given} merges classes until each matches enough of the population, which "
            "--max-width and --max-values would not survive; drop one or the other"
        )
    if options.background.asked:
        raise InputError(
            f"{given} merges classes, which the background-knowledge bound would not survive; "
            "drop one or the other"
        )
    if options.incremental:
        raise InputError(
            f"{given} is checked over the whole release, which a refresh adds to class by class; "
            "drop --incremental, or re-run the release as the table grows"
        )
    if options.recode != "generalize":
        raise InputError(
            f"{given} counts the population inside each class's ranges and sets, which "
            f"--recode {options.recode} does not release; drop one or the other"
        )


def check_limits(columns: list[Column], options: Options) -> None:
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


def check_block_rows(options: Options) -> None:
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


def check_held_rows(options: Options) -> None:
    rows = options.held_rows
    if rows is None:
        return
    if options.algorithm != registry.DEFAULT or options.mode in ("exact", "blocks"):
        raise InputError(
            f"--held-rows {rows} bounds the rows the default sbca holds in --mode auto or "
            "streamed; drop it, or drop --exact / --mode blocks / --algorithm"
        )
    if options.background.asked:
        raise InputError(
            f"--held-rows {rows}: background knowledge groups the whole table's rows by their "
            "knowledge, which a run of blocks cannot; drop --held-rows or the background options"
        )
    if rows < 1:
        raise InputError(f"--held-rows {rows} holds no row; give a positive number, e.g. 500000")


def check_categorical_count(plan: Plan) -> None:
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


def check_release_names(plan: Plan) -> None:
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
    same = identities or by_name
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


def by_name(names: Sequence[str], *, output: bool = False) -> dict[str, Hashable]:
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
