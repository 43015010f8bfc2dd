"""The clustering algorithms by name: one table, read by the CLI, the plan, compare and run.

Every algorithm returns a class id per row (-1 suppressed), so the release writer, the
verification and every metric apply to all of them. An entry says what the algorithm
accepts (modes, hierarchies, a suppression budget, block sizes, how many categorical QIs)
and runs it; the CLI's help, the plan's validation, ``compare``'s default list and the
README's list of algorithms (a test compares them) all come from :data:`CLUSTERERS`.

Only SBCA+'s module is imported with this one (the paper's SBCA is SBCA+ with every switch
off): every other entry imports its module when it runs, as k-member's brings in numba,
which the default does not need (see ``sbca_plus/compiled.py``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .. import choices
from ..errors import InputError
from .background.options import BackgroundOptions, Knowledge
from .blocks import (
    BLOCK_PASSES,
    BLOCK_POOL_ROWS,
    TUPLE_BLOCK_PASSES,
    block_bounds,
    blocked,
    check_memory,
    choose_mode,
    default_block_rows,
)
from .limits import Limits
from .model import SUPPRESSED, QIData
from .rescue import rescue
from .sbca_plus import compiled
from .sbca_plus.algorithm import MAX_CATEGORICAL, PAPER, sbca_plus
from .sensitive import REASON_CODES, Rule, rare_values

if TYPE_CHECKING:
    from .baselines.fulldomain import Hierarchy

Progress = Callable[[int, int], None]

#: the algorithm a run uses unless told otherwise
DEFAULT = choices.DEFAULT_ALGORITHM
#: --target-weight when not given: total NCP + W x CM is minimized (see ClusterOptions)
DEFAULT_TARGET_WEIGHT = 0.03


@dataclass(frozen=True)
class ClusterRun:
    """What a clustering produced: a class id per row (-1 suppressed), the algorithm, the
    mode it ran in and one line saying how (the run summary prints it)."""

    labels: np.ndarray
    algorithm: str
    mode: str
    detail: str
    #: per row, why it is suppressed (a code of .sensitive.REASONS; 0 for a released row);
    #: None when the algorithm gives no reasons
    reasons: np.ndarray | None = None
    #: the sensitive values suppressed before clustering: (column, value code, class size
    #: that value forces)
    rare: tuple[tuple[str, int, int], ...] = ()
    #: the background knowledge the classes are bounded by (verified with the release)
    knowledge: Knowledge | None = None
    #: the engine clustered the rows in its own workers and keeps each row's class as this
    #: table (row_id, eq_class); ``labels`` is then empty
    table: str | None = None


@dataclass(frozen=True)
class ClusterOptions:
    """The run's options an algorithm may read; each entry says which it accepts.

    ``mode`` is auto, exact or blocks; ``hierarchies`` maps a QI to its generalization
    hierarchy; ``max_suppression`` is the share of rows an algorithm may suppress;
    ``block_rows`` sizes the blocks of block mode (None: the algorithm's own size)."""

    mode: str = "auto"
    leftover: str = "nearest"
    workers: int | None = None
    hierarchies: Mapping[str, Hierarchy] = field(default_factory=dict)
    max_suppression: float = 0.01
    block_rows: int | None = None
    #: the criteria on top of k to keep on the sensitive columns (QIData.sensitive)
    rule: Rule = field(default_factory=Rule)
    #: the background-knowledge bound (see .background): read by kinc, kagg and beta-ge
    #: (None: their defaults) and by the default, which then clusters each group of alike
    #: beliefs alone (None: no bound)
    background: BackgroundOptions | None = None
    #: per-column limits on the classes' ranges and value sets (read by the default only)
    limits: Limits = field(default_factory=Limits)
    #: W, what label purity is worth against information loss: the algorithms marked
    #: ``target`` (with QIData.target given) minimize total NCP + W x CM, CM the share of rows
    #: whose target label is not their class's majority label; in a class's cost, each such
    #: row adds W x sum_q w_q (the QIs' weights), on the scale of |G| x sum_q w_q NCP_q(G)
    target_weight: float = 0.0


Runner = Callable[[QIData, int, ClusterOptions, "Progress | None"], ClusterRun]


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
    runner: Runner
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
        rule = options.rule
        if not rule.active:
            run = self.runner(data, k, options, progress)
            if options.limits.active:
                run = dataclasses.replace(run, reasons=_reasons(run, data.n_rows, "limits"))
                _check_limits_budget(run, data, k, options)
            return run
        if not self.criteria:
            raise InputError(
                f"--algorithm {self.name} clusters for k alone and cannot keep {describe(rule)}; "
                f"use --algorithm {DEFAULT} (or one of {', '.join(with_criteria())})"
            )
        if data.sensitive is None:
            raise ValueError("criteria on sensitive values need QIData.sensitive")
        n = data.n_rows
        budget = int(options.max_suppression * n)
        rare = np.zeros(n, dtype=bool)
        chosen: list[tuple[str, int, int]] = []
        if self.presuppress:
            rare, chosen = rare_values(rule, data.sensitive, k, budget)
        if not rare.any():
            run = self.runner(data, k, options, progress)
            run = dataclasses.replace(run, reasons=_reasons(run, n), rare=tuple(chosen))
            _check_budget(run, data, rule, budget, options.max_suppression)
            return run
        keep = np.nonzero(~rare)[0]
        inner = dataclasses.replace(
            options, max_suppression=max(0.0, (budget - int(rare.sum())) / max(len(keep), 1))
        )
        run = self.runner(data.take(keep), k, inner, progress)
        labels = np.full(n, SUPPRESSED, dtype=np.int64)
        labels[keep] = run.labels
        reasons = np.full(n, REASON_CODES["rare_value"], dtype=np.int8)
        reasons[keep] = _reasons(run, len(keep))
        knowledge = None if run.knowledge is None else run.knowledge.expanded(keep, n)
        run = dataclasses.replace(
            run, labels=labels, reasons=reasons, rare=tuple(chosen), knowledge=knowledge
        )
        _check_budget(run, data, rule, budget, options.max_suppression)
        return run


def _check_budget(run: ClusterRun, data: QIData, rule: Rule, budget: int, share: float) -> None:
    """More rows suppressed than ``--max-suppression`` allows is an error naming the value
    most of them hold (by its column and frequency rank, never the value itself), the class
    size it forces, and a budget or beta that would do."""
    suppressed = run.labels < 0
    count = int(suppressed.sum())
    if count <= budget:
        return
    assert data.sensitive is not None
    sens = data.sensitive
    n = data.n_rows
    beta = rule.find("beta")
    worst = ""
    for s in range(sens.n_columns):
        codes = sens.codes[s][suppressed]
        if not len(codes):
            continue
        v = int(np.bincount(codes).argmax())
        order = np.argsort(-sens.counts[s], kind="stable")
        rank = int(np.nonzero(order == v)[0][0]) + 1
        forced = rule.forced_size(sens.shares(s))[v]
        worst = (
            f"; most hold the {_ordinal(rank)} most frequent value of '{sens.names[s]}' "
            f"({int(sens.counts[s][v]):,} rows in the input"
            + (f", which forces classes of at least {int(forced):,} rows" if beta is not None else "")
            + ")"
        )
        break
    need = _share_needed(count, n)
    hint = f"give --max-suppression {need:g}"
    if beta is not None:
        hint += f" or --beta-likeness {beta.threshold * 2:g}"
    if run.reasons is not None and np.isin(run.reasons, _GROUPED).any():
        # larger groups of alike background knowledge: fewer under k, fewer skewed
        hint += " or a larger --bk-threshold"
    raise InputError(
        f"{count:,} rows ({count / n:.2%}) cannot be placed in classes that keep {describe(rule)}, "
        f"above --max-suppression {share:g} ({budget:,} rows){worst}: {hint}"
    )


#: the reasons of rows left out by their group of background knowledge
_GROUPED = [REASON_CODES["bk_small"], REASON_CODES["lemma2"]]


def describe_limits(limits: Limits) -> str:
    """The limits as the flags give them: ``--max-width age=5 --max-values education=2``."""
    parts = []
    if limits.width:
        parts.append("--max-width " + ",".join(f"{n}={limits.given_width(n):g}" for n in limits.width))
    if limits.values:
        parts.append("--max-values " + ",".join(f"{n}={v}" for n, v in limits.values.items()))
    return " ".join(parts)


def _check_limits_budget(run: ClusterRun, data: QIData, k: int, options: ClusterOptions) -> None:
    """More rows left out by the limits than ``--max-suppression`` allows is an error: the
    limits cannot hold on this table at this k."""
    n = data.n_rows
    count = int((run.labels < 0).sum())
    budget = int(options.max_suppression * n)
    if count <= budget:
        return
    need = _share_needed(count, n)
    raise InputError(
        f"{count:,} rows ({count / n:.2%}) fit no class of k={k} rows within "
        f"{describe_limits(options.limits)}, "
        f"above --max-suppression {options.max_suppression:g} ({budget:,} rows): give wider limits, "
        f"a smaller k or --max-suppression {need:g}"
    )


def _share_needed(count: int, n: int) -> float:
    """The --max-suppression that lets ``count`` of ``n`` rows go, rounded up to 0.001."""
    return math.ceil(count / n * 1000) / 1000


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _reasons(run: ClusterRun, n: int, reason: str = "unplaced") -> np.ndarray:
    """The run's reasons per row, ``reason`` for a suppressed row it gave none for."""
    if run.reasons is not None:
        return run.reasons.astype(np.int8, copy=False)
    return np.where(run.labels < 0, REASON_CODES[reason], 0).astype(np.int8)


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


def block_algorithm(
    k: int,
    leftover: str = "nearest",
    rows: int | None = None,
    stop: np.ndarray | None = None,
    rule: Rule | None = None,
    limits: Limits | None = None,
    target_weight: float = 0.0,
    tuples: bool = False,
) -> Callable[..., np.ndarray]:
    """The cluster-aware SBCA as block mode runs it on each block. With ``rows`` (blocks of
    that many rows, chosen by the user) every row of a block is a candidate for each class;
    ``stop`` is the flag that stops its kernels (see :func:`.blocks.blocked`); ``rule``: the
    criteria each block's classes keep, against the whole input's shares; ``limits``: the
    per-column limits they keep; ``tuples``: the rows are distinct tuples standing for their
    rows (:data:`.blocks.TUPLE_BLOCK_PASSES`)."""
    pool = max(BLOCK_POOL_ROWS, rows or 0)
    return functools.partial(
        sbca_plus,
        leftover=leftover,
        passes=TUPLE_BLOCK_PASSES if tuples else BLOCK_PASSES,
        pool=-(-pool // k),
        stop=stop,
        rule=rule,
        limits=limits,
        target_weight=target_weight,
    )


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


def _threads(workers: int | None) -> str:
    return f"{workers or os.cpu_count() or 1} worker(s)"


def _run_sbca(data: QIData, k: int, options: ClusterOptions, progress: Progress | None) -> ClusterRun:
    if options.background is not None:
        return _sbca_per_group(data, k, options)
    # the default runs in blocks at every size (a small table is one block): on Adult its
    # blocks beat one exact block on NCP at every k and take a fifth of the time
    mode = "blocks" if options.mode == "auto" else options.mode
    rule = options.rule if options.rule.active else None
    limits = options.limits if options.limits.active else None
    if options.mode == "auto" and rule is not None and rule.reads_input:
        # every class near the input's distribution: a block of similar rows is far from it
        # and leaves many rows to the others, so one exact block while it fits (on Adult
        # t = 0.2 costs 16 % exact, 22 % in blocks: benchmarks/results/criteria.md)
        mode = choose_mode(data.n_rows, k)
    check_memory(data, mode, options.workers)
    if mode == "exact":
        labels = sbca_plus(
            data,
            k,
            leftover=options.leftover,
            progress=progress,
            rule=rule,
            limits=limits,
            target_weight=options.target_weight,
        )
        return ClusterRun(
            labels,
            "sbca",
            "exact",
            "cluster-aware SBCA (growth, seeds far from the last class, refinement, coarse order), one block",
            reasons=_unplaced(labels, rule, limits),
        )
    size = options.block_rows or default_block_rows(k)
    stop = np.zeros(1, dtype=np.bool_)
    labels = blocked(
        data,
        k,
        block_algorithm(
            k,
            options.leftover,
            options.block_rows,
            stop,
            rule,
            limits,
            options.target_weight,
            tuples=data.multiplicity is not None,
        ),
        block_size=size,
        workers=options.workers,
        progress=progress,
        categorical_by="coarse",
        stop=stop,
    )
    n_blocks = len(block_bounds(data.n_rows, k, size)) - 1
    detail = (
        f"cluster-aware SBCA in {n_blocks:,} block(s) of at most {size:,} rows "
        f"of the coarse order, {_threads(options.workers)}, {compiled.engine()} kernels"
    )
    if rule is not None or limits is not None:
        detail += _across_blocks(data, k, labels, rule, limits, options, stop)
    return ClusterRun(labels, "sbca", "blocks", detail, reasons=_unplaced(labels, rule, limits))


#: block mode with criteria: rounds that cluster the rows the blocks left, pooled
POOLED_ROUNDS = 2


def _across_blocks(
    data: QIData,
    k: int,
    labels: np.ndarray,
    rule: Rule | None,
    limits: Limits | None,
    options: ClusterOptions,
    stop: np.ndarray,
) -> str:
    """Place the rows block mode's blocks left (in ``labels``, in place): a block's rows
    are not the input's distribution, so the rows of its over-represented values may find
    no class there (and a row at a block's edge may find no class within the per-column
    limits). Pooled over the blocks they are clustered again, in blocks of the
    same size (at most :data:`POOLED_ROUNDS` rounds, while a round places rows); then each
    row still left joins a class of the table where the criteria survive
    (:func:`.rescue.rescue`). Returns what was done, for the run's detail line."""
    size = options.block_rows or default_block_rows(k)
    algorithm = block_algorithm(
        k, options.leftover, options.block_rows, stop, rule, limits, options.target_weight
    )
    pooled = 0
    for _ in range(POOLED_ROUNDS):
        left = np.flatnonzero(labels < 0)
        if len(left) < max(k, rule.min_size if rule is not None else k):
            break
        sub = blocked(
            data.take(left),
            k,
            algorithm,
            block_size=size,
            workers=options.workers,
            categorical_by="coarse",
            stop=stop,
        )
        placed = sub >= 0
        if not placed.any():
            break
        labels[left[placed]] = sub[placed] + int(labels.max()) + 1
        pooled += int(placed.sum())
    rescued = rescue(data, labels, rule, limits)
    parts = [f"{pooled:,} row(s) the blocks left clustered together"] if pooled else []
    parts += [f"{rescued:,} placed in other blocks' classes"] if rescued else []
    return "".join(f"; {p}" for p in parts)


def _unplaced(labels: np.ndarray, rule: Rule | None, limits: Limits | None = None) -> np.ndarray | None:
    """With criteria or limits, the reason of every suppressed row: no class keeps them
    with it (``unplaced``; ``limits`` when only limits are asked)."""
    if rule is None and limits is None:
        return None
    reason = "unplaced" if rule is not None else "limits"
    return np.where(labels < 0, REASON_CODES[reason], 0).astype(np.int8)


def _sbca_per_group(data: QIData, k: int, options: ClusterOptions) -> ClusterRun:
    """The default on each group of alike background knowledge alone (see .background)."""
    from .background.run import per_group

    assert options.background is not None
    inner = dataclasses.replace(options, background=None)
    runs: list[ClusterRun] = []

    def cluster(part: QIData) -> tuple[np.ndarray, np.ndarray | None]:
        runs.append(_run_sbca(part, k, inner, None))
        return runs[-1].labels, runs[-1].reasons

    labels, reasons, groups, knowledge = per_group(data, k, options.background, cluster)
    small = int((reasons == REASON_CODES["bk_small"]).sum())
    budget = int(options.max_suppression * data.n_rows)
    if small > budget:
        need = _share_needed(small, data.n_rows)
        raise InputError(
            f"{small:,} rows ({small / data.n_rows:.2%}) are in groups of alike background knowledge "
            f"of fewer than k rows, above --max-suppression {options.max_suppression:g} ({budget:,} rows): "
            f"give --max-suppression {need:g} or a larger --bk-threshold"
        )
    how = runs[0].detail if runs else "no group of k rows"
    bg = options.background
    return ClusterRun(
        labels,
        "sbca",
        runs[0].mode if runs else "exact",
        f"{how}; in each of {groups:,} group(s) of background knowledge within J={bg.threshold:g} bits "
        f"({bg.source})",
        reasons,
        knowledge=knowledge,
    )


def _background(name: str) -> Runner:
    def run(data: QIData, k: int, options: ClusterOptions, progress: Progress | None) -> ClusterRun:
        from .background.run import background_run

        labels, reasons, detail, knowledge = background_run(
            name, data, k, options.rule, options.background or BackgroundOptions()
        )
        return ClusterRun(labels, name, "exact", detail, reasons, knowledge=knowledge)

    return run


def _background_entry(name: str, description: str) -> Clusterer:
    """One of the background-knowledge algorithms: they need beta-likeness (and keep it
    alone), read the background options and remove rows themselves."""
    return Clusterer(
        name,
        f"background knowledge bound J, {description}",
        _background(name),
        criteria=True,
        presuppress=False,
        requires=("beta",),
        only=("beta",),
        background=True,
    )


def _run_sbca_paper(data: QIData, k: int, options: ClusterOptions, progress: Progress | None) -> ClusterRun:
    """The paper's SBCA (SBCA+ with every switch off gives its labels): exact up to
    ``choose_mode``'s size, else in Hilbert-ordered blocks."""
    mode = choose_mode(data.n_rows, k) if options.mode == "auto" else options.mode
    check_memory(data, mode, options.workers)
    engine = f"{compiled.engine()} kernels"
    paper = functools.partial(sbca_plus, leftover=options.leftover, **PAPER)
    if mode == "exact":
        labels = paper(data, k, progress=progress)
        return ClusterRun(labels, "sbca-paper", "exact", f"the paper's SBCA, one block, {engine}")
    stop = np.zeros(1, dtype=np.bool_)
    labels = blocked(
        data, k, functools.partial(paper, stop=stop), workers=options.workers, progress=progress, stop=stop
    )
    return ClusterRun(
        labels,
        "sbca-paper",
        "blocks",
        "the paper's SBCA in Hilbert-ordered blocks of about 4,096 rows, "
        f"{engine}, {_threads(options.workers)}",
    )


def _run_mondrian(data: QIData, k: int, options: ClusterOptions, progress: Progress | None) -> ClusterRun:
    from .baselines.mondrian import mondrian

    if data.target is not None and options.target_weight > 0:
        if options.rule.active:
            raise InputError(
                "--algorithm mondrian keeps --target or the privacy criteria, not both; "
                "use the default algorithm (sbca), which keeps both"
            )
        return ClusterRun(
            mondrian(data, k, target_weight=options.target_weight),
            "mondrian",
            "exact",
            "strict median partitioning, cuts weighing label purity "
            f"(target weight {options.target_weight:g})",
        )
    return ClusterRun(mondrian(data, k, rule=options.rule), "mondrian", "exact", "strict median partitioning")


def _run_kmember(data: QIData, k: int, options: ClusterOptions, progress: Progress | None) -> ClusterRun:
    from .baselines.kmember import kmember

    if data.target is not None and options.target_weight > 0:
        return ClusterRun(
            kmember(data, k, rule=options.rule, target_weight=options.target_weight),
            "kmember",
            "exact",
            f"class-aware k-member clustering (DPPSCT), target weight {options.target_weight:g}",
        )
    return ClusterRun(kmember(data, k, rule=options.rule), "kmember", "exact", "greedy k-member clustering")


def _full_domain(name: str) -> Runner:
    def run(data: QIData, k: int, options: ClusterOptions, progress: Progress | None) -> ClusterRun:
        from .baselines import fulldomain

        recode = getattr(fulldomain, name)
        labels = recode(
            data, k, dict(options.hierarchies), max_suppression=options.max_suppression, rule=options.rule
        )
        detail = f"full-domain recoding, suppression budget {options.max_suppression:g}"
        # every row these suppress is the node's own suppression, within the budget
        reasons = np.where(labels < 0, REASON_CODES["budget"], 0).astype(np.int8)
        return ClusterRun(labels, name, "exact", detail, reasons if (labels < 0).any() else None)

    return run


#: every algorithm, in the order the CLI, compare and the README list them
CLUSTERERS: tuple[Clusterer, ...] = (
    Clusterer(
        DEFAULT,
        "cluster-aware SBCA",
        _run_sbca,
        modes=("exact", "blocks"),
        block_rows=True,
        max_categorical=MAX_CATEGORICAL,
        criteria=True,
        background=True,
        limits=True,
        target=True,
        tuples=True,
    ),
    Clusterer("sbca-paper", "the paper's SBCA", _run_sbca_paper, modes=("exact", "blocks")),
    Clusterer(
        "mondrian", "strict multidimensional median partitioning", _run_mondrian, criteria=True, target=True
    ),
    Clusterer("kmember", "greedy k-member clustering", _run_kmember, criteria=True, target=True),
    Clusterer(
        "datafly",
        "full-domain recoding, Datafly",
        _full_domain("datafly"),
        hierarchies=True,
        suppression=True,
        criteria=True,
    ),
    Clusterer(
        "incognito",
        "full-domain recoding, Incognito",
        _full_domain("incognito"),
        hierarchies=True,
        suppression=True,
        criteria=True,
    ),
    *(
        _background_entry(name, description)
        for name, description in (
            ("kinc", "k-anonymity first, incremental post-processing"),
            ("kagg", "k-anonymity first, agglomerative post-processing"),
            ("beta-ge", "beta-likeness first (buckets, splits, Hilbert order)"),
        )
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
