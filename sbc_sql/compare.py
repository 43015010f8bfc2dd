"""Side-by-side runs: every (algorithm, k) on one table, measured the same way."""

from __future__ import annotations

import contextlib
import csv
import importlib.util
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from . import engines
from .cluster import registry
from .engines.paths import looks_like_file
from .errors import InputError, OutputExistsError
from .hierarchies import HierarchySpec
from .model import release_objects_of
from .plan import check_writable_path
from .run import make_options
from .run.cluster import cluster
from .run.lines import Log, notices
from .run.prepare import prepare, ready
from .run.publish import publish
from .stages.measure import Layout
from .stages.verify import tuple_sizes_sql
from .stages.write import drop_release_sql


@dataclass(frozen=True)
class CompareRow:
    algorithm: str
    k: int
    ncp: float
    utility: float
    classes: int
    tuples: int
    suppressed: int
    seconds: float


def compare(
    database: Any,
    table: str,
    ks: Sequence[int],
    algorithms: Sequence[str] | None = None,
    *,
    keep_releases: bool = False,
    on_row: Callable[[CompareRow], None] | None = None,
    hierarchies: Mapping[str, HierarchySpec] | None = None,
    log: Log | None = None,
    **options: Any,
) -> list[CompareRow]:
    """Anonymize ``table`` with every algorithm at every k; releases are dropped unless kept.

    ``algorithms``: names from the registry (default: every one that runs with the criteria
    asked, in its order: without criteria, those that run on k alone; with criteria, those
    that keep them); an unknown name, or one that cannot keep the criteria asked, is refused
    before anything runs. The table is planned, profiled and pulled once; each (algorithm,
    k) is then clustered, written, verified and measured. A release is counted only once
    verified; its time is its clustering and publishing. ``log`` receives the clustering's
    warnings and the notice that a first run compiles the kernels (None: nothing).
    """
    criteria = options.get("criteria")
    asked = criteria is not None and criteria.asked
    if algorithms is None:
        algorithms = registry.runnable(criteria.rule() if criteria is not None else None)
    algorithms = tuple(algorithms)
    for name in algorithms:
        if asked and not registry.get(name).criteria:
            assert criteria is not None
            raise InputError(
                f"--algorithms names {name}, which clusters for k alone and cannot keep "
                f"{criteria.describe()}; compare those that keep it: {', '.join(registry.with_criteria())}"
            )
    engine = engines.connect(database)
    stem = Path(table).stem if looks_like_file(table) else table

    def output_of(algorithm: str, k: int) -> str:
        return f"{stem}_{algorithm}_k{k}"

    # compare writes only names it creates: any of them taken already is refused up front
    wanted = [name for a in algorithms for k in ks for name in release_objects_of(output_of(a, k))]
    taken = sorted(engine.object_kinds(wanted))
    if taken:
        shown = ", ".join(f"'{n}'" for n in taken[:4]) + (
            f" and {len(taken) - 4} more" if len(taken) > 4 else ""
        )
        raise OutputExistsError(
            f"compare writes its releases under names that exist already: {shown}; "
            "drop or rename them first (compare never replaces what it did not create)"
        )
    first_output = output_of(algorithms[0], ks[0]) if algorithms and ks else None
    first = {"algorithm": algorithms[0]} if algorithms else {}
    run_options = make_options(ks[0] if ks else 2, output=first_output, **first, **options)
    prepared = prepare(engine, table, run_options, hierarchies=hierarchies)
    said = notices(log)
    rows: list[CompareRow] = []
    for algorithm in algorithms:
        for k in ks:
            output = output_of(algorithm, k)
            started = time.perf_counter()
            plan = prepared.plan_for(k, algorithm, output)
            prepared = ready(prepared, plan)
            result = publish(prepared, cluster(prepared, log=said))
            seconds = time.perf_counter() - started
            m = result.measures
            assert m is not None
            names = plan.release_objects
            try:
                layout = Layout(plan.qis, plan.verbatim, plan.weights)
                tuples = int(engine.fetch_one(tuple_sizes_sql(layout, output))[0])
                row = CompareRow(
                    algorithm, k, m.total_ncp, m.utility, m.classes, tuples, m.suppressed, seconds
                )
                rows.append(row)
                if on_row is not None:
                    on_row(row)
            except BaseException:
                # a release counted nowhere is not left behind (an error or Ctrl-C here)
                if not keep_releases:
                    with contextlib.suppress(Exception):
                        _drop(engine, names)
                raise
            if not keep_releases:
                _drop(engine, names)
    return rows


def _drop(engine: engines.Engine, names: Sequence[str]) -> None:
    for tree in drop_release_sql(engine.object_kinds(names), names):
        engine.execute(tree)


def check_outputs(csv_path: str | Path | None, plot_path: str | Path | None) -> None:
    """Before any work: ``--csv`` and ``--plot`` go to files in folders that exist and can
    be written, and ``--plot`` has matplotlib (the optional extra 'plot')."""
    if csv_path:
        check_writable_path(csv_path, "--csv")
    if plot_path:
        check_writable_path(plot_path, "--plot")
        if importlib.util.find_spec("matplotlib") is None:
            raise InputError(
                "--plot needs matplotlib, which is not installed; install it with "
                "pip install 'sbc-sql[plot]', or leave --plot out"
            )


def parse_ks(text: str) -> list[int]:
    """'2,5,10' -> [2, 5, 10]; anything else is an InputError naming the part."""
    ks = []
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        if not part.isdigit():
            raise InputError(f"--k '{text}': '{part}' is not a whole number; write e.g. --k 2,5,10")
        ks.append(int(part))
    if not ks:
        raise InputError(f"--k '{text}' names no k; write e.g. --k 2,5,10")
    return ks


def write_csv(rows: Iterable[CompareRow], path: str | Path) -> None:
    rows = list(rows)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(CompareRow.__dataclass_fields__))
        writer.writeheader()
        for row in rows:
            writer.writerow(asdict(row))


def plot(rows: Iterable[CompareRow], path: str | Path, title: str = "") -> None:
    """NCP against k, one line per algorithm (needs matplotlib: pip install 'sbc-sql[plot]')."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(rows)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for algorithm in dict.fromkeys(r.algorithm for r in rows):
        mine = sorted((r for r in rows if r.algorithm == algorithm), key=lambda r: r.k)
        ax.plot([r.k for r in mine], [100 * r.ncp for r in mine], marker="o", label=algorithm)
    ax.set_xlabel("k")
    ax.set_ylabel("total NCP (%)")
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def table_text(rows: Iterable[CompareRow]) -> str:
    lines = [
        f"{'algorithm':<12}{'k':>5}{'NCP':>9}{'utility':>9}{'classes':>9}{'tuples':>8}"
        f"{'suppr.':>8}{'seconds':>9}"
    ]
    lines.extend(
        f"{r.algorithm:<12}{r.k:>5}{r.ncp:>9.4f}{r.utility:>9.4f}{r.classes:>9,}"
        f"{r.tuples:>8,}{r.suppressed:>8,}{r.seconds:>9.2f}"
        for r in rows
    )
    return "\n".join(lines)
