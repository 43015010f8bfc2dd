"""make_plan: resolve every column's role and check everything that needs no data."""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Callable, Mapping

from .. import names as table_names
from ..cluster import registry
from ..cluster.leftover import LEFTOVER_MODES
from ..cluster.limits import Limits
from ..errors import InputError, RoleError
from ..model import Column, TableInfo, release_objects_of
from .checks import (
    check_background,
    check_block_rows,
    check_categorical_count,
    check_criteria,
    check_held_rows,
    check_limits,
    check_population,
    check_release_names,
)
from .decided import Plan, scaled_weights
from .determinants import check_allowed
from .options import MODES, Options
from .recode import check_recode, recoded
from .roles import AS_ROLE, check_identifier_names, resolve_roles


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
    check_recode(options)
    check_block_rows(options)
    check_held_rows(options)
    if options.workers is not None and options.workers < 1:
        raise InputError(
            f"--workers {options.workers} is below 1; give a number of threads such as --workers 2, "
            "or leave it out to use every core"
        )
    if not info.columns:
        raise InputError(f"table '{name}' has no columns")
    roles = resolve_roles(info, options, name)
    check_identifier_names(roles)
    columns = []
    for c in info.columns:
        role, origin = roles[c.name]
        kind, temporal = c.kind, c.temporal
        if role != "identifier" and not c.equality:
            raise InputError(
                f"column '{c.name}' of type {c.type} cannot be {AS_ROLE[role]}: its values have no "
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
    columns = recoded(columns, options)
    if not any(c.role == "qi" for c in columns):
        raise RoleError(f"no quasi-identifier is left in '{name}'; name at least one with --qi")
    check_allowed(columns, options.allow_determinant, name)
    check_criteria(options, chosen, [c for c in columns if c.role == "sensitive"])
    check_background(options, chosen, [c for c in columns if c.role == "sensitive"])
    check_population(options)
    weights = qi_weights(columns, options.weights)
    check_limits(columns, options)
    limits = Limits(options.max_width, options.max_values)
    refused = chosen.refusal(limits=limits, target=options.target is not None)
    if refused:
        raise InputError(refused)
    if options.output and parse_name(options.output).qualified:
        raise InputError(
            f"--output '{options.output}' names a schema, which a comparison's releases cannot "
            f"take; give a name without one, e.g. --output {shlex.quote(parse_name(options.output).name)}"
        )
    output = options.output or default_output(name, options.k, info.output_folder)
    plan = Plan(info, name, tuple(columns), options, output, release_objects_of(output)[3], weights)
    check_release_names(plan)
    check_categorical_count(plan)
    return plan


def qi_weights(columns: list[Column], given: Mapping[str, float]) -> tuple[float, ...]:
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


def default_output(name: str, k: int, folder: str | None = None) -> str:
    """<table>_k<k>: a file's stem, or a (schema-qualified) table's own name; in ``folder``
    when the engine writes a file input's release beside it."""
    base = name.replace("\\", "/").rstrip("/").split("/")[-1]
    stem = re.sub(r"(\.csv|\.tsv|\.parquet|\.pq)(\.gz)?$", "", base, flags=re.IGNORECASE)
    if folder is not None:
        return f"{folder.rstrip('/')}/{stem}_k{k}"
    if stem == base:
        stem = table_names.parse(name).name
    return f"{stem}_k{k}"
