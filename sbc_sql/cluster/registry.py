"""The clustering algorithms by name: one table, read by the CLI, the plan, compare and run.

Every algorithm returns a class id per row (-1 suppressed), so the release writer, the
verification and every metric apply to all of them. An entry says what the algorithm
accepts (modes, hierarchies, a suppression budget, block sizes, how many categorical QIs)
and where its runner lives, beside the algorithm; the CLI's help, the plan's validation,
``compare``'s default list and docs/options.md's list of algorithms (a test compares them) all
come from :data:`CLUSTERERS`.

A runner's module is imported when it runs (:func:`.runs.load`), as k-member's brings in
numba, which the default does not need (see ``sbca_plus/compiled.py``). What the runners
share (their options, their result, the suppression budget) is :mod:`.runs`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import choices
from ..errors import InputError
from .background.options import BackgroundOptions
from .hierarchy import Hierarchy
from .limits import Limits
from .model import QIData
from .runs import (
    DEFAULT_TARGET_WEIGHT,
    ClusterOptions,
    ClusterRun,
    Progress,
    Runner,
    describe_limits,
    load,
    run_kept,
)
from .sbca_plus import compiled
from .sbca_plus.algorithm import MAX_CATEGORICAL
from .sbca_plus.run import block_algorithm
from .sensitive import Rule

__all__ = [
    "CLUSTERERS",
    "DEFAULT",
    "DEFAULT_TARGET_WEIGHT",
    "REGISTRY",
    "ClusterOptions",
    "ClusterRun",
    "Clusterer",
    "Progress",
    "Runner",
    "asked",
    "block_algorithm",
    "choices_help",
    "compiles_first",
    "describe",
    "describe_limits",
    "get",
    "names",
    "run_clustering",
    "runnable",
    "with_criteria",
]

#: the algorithm a run uses unless told otherwise
DEFAULT = choices.DEFAULT_ALGORITHM


@dataclass(frozen=True)
class Clusterer:
    """One algorithm: its name, a one-line description, what it accepts, and how it runs.

    ``modes``: the modes it runs in (an algorithm with only ``exact`` ignores ``--mode``);
    ``hierarchies`` / ``suppression``: it reads ``--hierarchy`` / ``--max-suppression``;
    ``block_rows``: it takes ``--block-rows``; ``max_categorical``: the most categorical QIs
    it takes (None: any number); ``criteria``: it keeps l-diversity, t-closeness and
    beta-likeness on the sensitive columns while it clusters (``ClusterOptions.rule``);
    ``presuppress``: the rows of sensitive values that force huge classes are suppressed
    before it runs (see :func:`.sensitive.rare_values`), when it does not decide that itself;
    ``requires``: the criteria it cannot run without, ``only``: the criteria it can keep
    (None: every one; names as :func:`asked` gives them); ``background``: it reads
    ``ClusterOptions.background``; ``limits``: it keeps ``ClusterOptions.limits``;
    ``target``: it keeps classes pure on ``QIData.target`` (``ClusterOptions.target_weight``);
    ``tuples``: on k alone it clusters distinct QI tuples whole, each standing for its rows
    (``QIData.multiplicity``), so the run pulls tuples rather than rows."""

    name: str
    description: str
    #: its runner, or where it lives: ``module:name`` under ``sbc_sql.cluster``, imported
    #: when it runs (see :func:`.runs.load`)
    runner: Runner | str
    modes: tuple[str, ...] = ("exact",)
    hierarchies: bool = False
    suppression: bool = False
    block_rows: bool = False
    max_categorical: int | None = None
    criteria: bool = False
    presuppress: bool = True
    requires: tuple[str, ...] = ()
    only: tuple[str, ...] | None = None
    background: bool = False
    limits: bool = False
    target: bool = False
    tuples: bool = False

    def refusal(self, *, limits: Limits, target: bool) -> str | None:
        """Why it cannot run with these per-column limits or a target label (None: it can);
        the plan asks before the run, the run again for callers of the registry."""
        if target and not self.target:
            return (
                f"--algorithm {self.name} does not read --target; use one of "
                f"{', '.join(c.name for c in CLUSTERERS if c.target)}"
            )
        if limits.active and not self.limits:
            return (
                f"--algorithm {self.name} does not keep per-column limits ({describe_limits(limits)}); "
                f"use --algorithm {DEFAULT}, which does"
            )
        return None

    def accepts(self, rule: Rule) -> bool:
        """Whether it runs with the criteria of ``rule`` (none: on k alone)."""
        want = asked(rule)
        if want and not self.criteria:
            return False
        return set(self.requires) <= want and (self.only is None or want <= set(self.only))

    def run(
        self,
        data: QIData,
        k: int,
        options: ClusterOptions | None = None,
        progress: Progress | None = None,
    ) -> ClusterRun:
        """Class id per row (-1 suppressed), every class of at least k rows (and keeping
        ``options.rule`` on the sensitive columns)."""
        options = options or ClusterOptions()
        refused = self.refusal(limits=options.limits, target=data.target is not None)
        if refused:
            raise InputError(refused)
        if options.rule.active and not self.criteria:
            raise InputError(
                f"--algorithm {self.name} clusters for k alone and cannot keep {describe(options.rule)}; "
                f"use --algorithm {DEFAULT} (or one of {', '.join(with_criteria())})"
            )
        runner = load(self.runner) if isinstance(self.runner, str) else self.runner
        return run_kept(runner, self.presuppress, data, k, options, progress)


def describe(rule: Rule) -> str:
    """The criteria in words, as the flags name them."""
    return rule.describe()


def with_criteria() -> tuple[str, ...]:
    """The algorithms that keep the criteria while they cluster."""
    return tuple(c.name for c in CLUSTERERS if c.criteria)


def asked(rule: Rule) -> set[str]:
    """The criteria a rule asks, by name: ``l``, ``t``, ``beta``."""
    return rule.asked()


def runnable(rule: Rule | None = None) -> tuple[str, ...]:
    """The algorithms that run with the criteria of ``rule`` (None: on k alone), in the
    table's order (``compare``'s default list)."""
    rule = rule or Rule()
    return tuple(c.name for c in CLUSTERERS if c.accepts(rule))


def compiles_first(algorithm: str) -> bool:
    """Whether this run's kernels will be compiled by numba's JIT, their cache being empty:
    the first run of k-member, or of SBCA without the module built at install, spends 20 to
    30 s compiling before it places a row, and is said so rather than looking hung."""
    here = Path(__file__).resolve().parent
    stems: tuple[str, ...]
    if algorithm == "kmember":
        folder, stems = here / "baselines", ("kmember",)
    elif algorithm in ("sbca", "sbca-paper") and compiled.engine() == "jit":
        folder = here / "sbca_plus" / "kernels"
        stems = tuple(p.stem for p in folder.glob("*.py") if p.stem != "__init__")
    else:
        return False
    if os.environ.get("NUMBA_CACHE_DIR"):
        return False  # cached elsewhere: nothing to tell
    cache = folder / "__pycache__"
    return not any(next(cache.glob(f"{stem}.*.nbi"), None) for stem in stems)


#: every algorithm, in the order the CLI, compare and docs/options.md list them
#: what the background-knowledge algorithms (kinc, kagg, beta-ge) declare alike: they need
#: beta-likeness (and keep it alone), read the background options and remove rows themselves
BACKGROUND: dict[str, Any] = {
    "criteria": True,
    "presuppress": False,
    "requires": ("beta",),
    "only": ("beta",),
    "background": True,
}

CLUSTERERS: tuple[Clusterer, ...] = (
    Clusterer(
        DEFAULT,
        "cluster-aware SBCA",
        "sbca_plus.run:run_sbca",
        modes=("exact", "blocks", "streamed"),
        block_rows=True,
        max_categorical=MAX_CATEGORICAL,
        criteria=True,
        background=True,
        limits=True,
        target=True,
        tuples=True,
    ),
    Clusterer("sbca-paper", "the paper's SBCA", "sbca_paper:run_sbca_paper", modes=("exact", "blocks")),
    Clusterer(
        "mondrian",
        "strict multidimensional median partitioning",
        "baselines.mondrian:run_mondrian",
        criteria=True,
        target=True,
    ),
    Clusterer(
        "kmember", "greedy k-member clustering", "baselines.kmember:run_kmember", criteria=True, target=True
    ),
    Clusterer(
        "datafly",
        "full-domain recoding, Datafly",
        "baselines.fulldomain:run_datafly",
        hierarchies=True,
        suppression=True,
        criteria=True,
    ),
    Clusterer(
        "incognito",
        "full-domain recoding, Incognito",
        "baselines.fulldomain:run_incognito",
        hierarchies=True,
        suppression=True,
        criteria=True,
    ),
    Clusterer(
        "kinc",
        "background knowledge bound J, k-anonymity first, incremental post-processing",
        "background.run:run_kinc",
        **BACKGROUND,
    ),
    Clusterer(
        "kagg",
        "background knowledge bound J, k-anonymity first, agglomerative post-processing",
        "background.run:run_kagg",
        **BACKGROUND,
    ),
    Clusterer(
        "beta-ge",
        "background knowledge bound J, beta-likeness first (buckets, splits, Hilbert order)",
        "background.run:run_beta_ge",
        **BACKGROUND,
    ),
)

REGISTRY: dict[str, Clusterer] = {c.name: c for c in CLUSTERERS}


def names() -> tuple[str, ...]:
    """Every algorithm's name, in the table's order."""
    return tuple(REGISTRY)


def get(name: str) -> Clusterer:
    """The algorithm called ``name``; an unknown name is an InputError naming the choices."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise InputError(f"--algorithm '{name}' is not one of {', '.join(names())}") from None


def choices_help() -> str:
    """The ``--algorithm`` help: every name, the default with its description (read by the
    command line from :mod:`sbc_sql.choices`, whose table equals this one's)."""
    return choices.algorithms_help()


def run_clustering(
    data: QIData,
    k: int,
    *,
    algorithm: str = DEFAULT,
    mode: str = "auto",
    leftover: str = "nearest",
    workers: int | None = None,
    hierarchies: Mapping[str, Hierarchy] | None = None,
    max_suppression: float = 0.01,
    block_rows: int | None = None,
    rule: Rule | None = None,
    background: BackgroundOptions | None = None,
    progress: Progress | None = None,
    limits: Limits | None = None,
    target_weight: float = 0.0,
) -> ClusterRun:
    """Class id per row (-1 suppressed) from the named algorithm and mode."""
    options = ClusterOptions(
        mode,
        leftover,
        workers,
        dict(hierarchies or {}),
        max_suppression,
        block_rows,
        rule or Rule(),
        background,
        limits or Limits(),
        target_weight,
    )
    return get(algorithm).run(data, k, options, progress)
