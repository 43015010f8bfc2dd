"""Full-domain generalization over hierarchies: Datafly and Incognito, as baselines.

Both algorithms pick one generalization level per QI for the whole table (a node of the
generalization lattice); a class is then the set of rows that share one generalized tuple,
and the rows of classes smaller than k are suppressed, within a budget of
``max_suppression * n`` rows.

What is released differs from the textbook: sbc-sql releases every class by local recoding
i.e. as the [min, max] range and the value set of the class's actual
members, not as the hierarchy's interval or group label. So the hierarchy only decides who is
grouped with whom, and every NCP here (``ncp.total_ncp`` on the labels) charges the members'
own range, which is never wider than the hierarchy's label.

With privacy criteria on the sensitive columns (a :class:`~..sensitive.Rule`), a node's own
suppression also takes the classes that break the rule, and the node is accepted only when
everything it suppresses fits the budget: its released classes then keep k and the rule.

A :class:`Hierarchy` maps the *domain codes* of one QI (categorical: the QI's category codes;
numeric: the position of the value among the sorted distinct numbers, NULL last) to a group
id at each level: level 0 is the identity, the last level one group. Levels must nest (every
group of a level lies inside one group of the next): Incognito's pruning relies on it.
"""

from __future__ import annotations

import csv
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import InputError
from ..hierarchy import Hierarchy, first_appearance_ids
from ..model import SUPPRESSED, QIData
from ..ncp import total_ncp
from ..runs import ClusterOptions, ClusterRun, Progress, Runner
from ..sensitive import REASON_CODES, Rule
from .mondrian import first_position_labels

Interval = tuple[float, float]
Hierarchies = Sequence["Hierarchy | None"] | Mapping["str | int", "Hierarchy"] | None


def assemble(
    width: int, level_labels: Sequence[np.ndarray], outside: np.ndarray, values: np.ndarray | None
) -> Hierarchy:
    """Hierarchy from per-level labels (-1: the value is a group of its own at that level).

    ``outside`` marks codes the hierarchy does not describe (NULL, values missing from a
    file): they stay apart until a level puts every described value into one group, which
    becomes the top. Levels that group exactly like the level below are dropped, and a top
    level is appended when the last one given still has several groups.
    """
    levels = [np.arange(width)]
    for labels in level_labels:
        labels = np.asarray(labels, dtype=np.int64).copy()
        described = labels[~outside]
        if len(described) and (described >= 0).all() and (described == described[0]).all():
            labels[:] = 0
        own = labels < 0
        labels[own] = labels.max(initial=-1) + 1 + np.arange(int(own.sum()))
        level = first_appearance_ids(labels)
        if not (level == levels[-1]).all():
            levels.append(level)
    if (levels[-1] != 0).any():
        levels.append(np.zeros(width, dtype=np.int64))
    return Hierarchy(np.stack(levels), values)


def numeric_hierarchy(values: np.ndarray, interval_levels: Sequence[Sequence[Interval]]) -> Hierarchy:
    """Hierarchy of a numeric QI from explicit half-open intervals [lo, hi) per level.

    ``values``: the QI's numbers (NULLs and repeats are fine). A value that no interval of a
    level covers is a group of its own at that level; NULL is its own group until the top.
    """
    domain = np.unique(np.asarray(values, dtype=np.float64))
    domain = domain[~np.isnan(domain)]
    outside = np.zeros(len(domain) + 1, dtype=bool)
    outside[-1] = True
    level_labels = []
    for intervals in interval_levels:
        labels = np.full(len(domain) + 1, -1, dtype=np.int64)
        for i, (lo, hi) in enumerate(intervals):
            hit = (labels[:-1] < 0) & (domain >= lo) & (domain < hi)
            labels[:-1][hit] = i
        level_labels.append(labels)
    return assemble(len(domain) + 1, level_labels, outside, domain)


def interval_hierarchy(data: QIData, q: int, levels: Sequence[Sequence[Interval]]) -> Hierarchy:
    """Hierarchy of numeric QI q from explicit intervals per level (see numeric_hierarchy)."""
    if not data.numeric[q]:
        raise InputError(f"QI {data.names[q]!r} is categorical; intervals need a numeric QI")
    return numeric_hierarchy(data.columns[q], levels)


def paper_age_levels() -> list[list[Interval]]:
    """Age hierarchy of the reference experiment (the SBC paper's), over [0, 100).

    Level 1 decades; level 2 spans of 20 or 30 years, [0,20) [20,50) [50,80) [80,100): the
    paper names only their lengths, these boundaries are decade multiples so that the levels
    nest; level 3 [0,50) [50,100); the top ``*`` is appended by the builder.
    """
    decades = [(float(a), float(a + 10)) for a in range(0, 100, 10)]
    spans = [(0.0, 20.0), (20.0, 50.0), (50.0, 80.0), (80.0, 100.0)]
    halves = [(0.0, 50.0), (50.0, 100.0)]
    return [decades, spans, halves]


def paper_age_hierarchy(data: QIData, q: int) -> Hierarchy:
    """The reference experiment's age hierarchy over numeric QI q."""
    return interval_hierarchy(data, q, paper_age_levels())


def nice_ceil(x: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten that is at least x."""
    exp = math.floor(math.log10(x))
    for m in (1.0, 2.0, 5.0, 10.0):
        if m * 10.0**exp >= x * (1 - 1e-12):
            return m * 10.0**exp
    return 10.0 ** (exp + 1)


def default_hierarchy(data: QIData, q: int) -> Hierarchy:
    """Hierarchy used when none is given for QI q.

    Numeric: intervals whose width doubles from level to level, starting at
    max(1, span / 64) rounded up to a nice number and aligned on a multiple of it, until one
    interval covers [lo, hi] (all levels share one origin, so they nest). Categorical:
    value, then ``*``.
    """
    col = data.columns[q]
    if not data.numeric[q]:
        card = max(int(data.cardinality[q]), int(col.max()) + 1 if len(col) else 1)
        return assemble(card, [np.zeros(card, dtype=np.int64)], np.zeros(card, dtype=bool), None)
    domain = np.unique(col[~np.isnan(col)])
    outside = np.zeros(len(domain) + 1, dtype=bool)
    outside[-1] = True
    if len(domain) == 0:
        return assemble(1, [], outside, domain)
    lo, hi = float(domain[0]), float(domain[-1])
    w = nice_ceil(max(1.0, (hi - lo) / 64))
    origin = math.floor(lo / w) * w
    level_labels = []
    while True:
        group = np.floor((domain - origin) / w).astype(np.int64)
        level_labels.append(np.append(group, -1))
        if group[-1] == group[0]:
            break
        w *= 2
    return assemble(len(domain) + 1, level_labels, outside, domain)


def hierarchy_from_csv(
    path: str | Path, domain_values: Sequence[str | None], values: Sequence[float] | np.ndarray | None = None
) -> Hierarchy:
    """Hierarchy from an ARX-style CSV file: one row per value, one column per level.

    The first column is the original value, the others its generalization at levels 1, 2,
    ... (the last usually ``*``); ``;`` or ``,`` separates them. ``domain_values`` are the
    QI's original values as strings in code order (``None`` for NULL); a value the file does
    not list (NULL included) is a group of its own until the top level. For a numeric QI pass
    ``values``, its sorted distinct numbers in the order of ``domain_values``.
    """
    rows = read_hierarchy_rows(Path(path))
    depth = len(rows[0]) - 1
    by_value = {row[0]: row[1:] for row in rows}
    if len(by_value) != len(rows):
        raise InputError(f"hierarchy file {Path(path).name!r} lists a value twice")
    width = len(domain_values) + (1 if values is not None else 0)
    outside = np.ones(width, dtype=bool)
    level_labels = [np.full(width, -1, dtype=np.int64) for _ in range(depth)]
    names: list[dict[str, int]] = [{} for _ in range(depth)]
    for code, value in enumerate(domain_values):
        row = by_value.get(value) if value is not None else None
        if row is None:
            continue
        outside[code] = False
        for lv, label in enumerate(row):
            level_labels[lv][code] = names[lv].setdefault(label, len(names[lv]))
    numbers = None if values is None else np.asarray(values, dtype=np.float64)
    if numbers is not None and len(numbers) != len(domain_values):
        raise InputError(f"{len(numbers)} numbers given for {len(domain_values)} values")
    return assemble(width, level_labels, outside, numbers)


def read_hierarchy_rows(path: Path) -> list[list[str]]:
    """Non-empty rows of a hierarchy CSV, all of one length; the separator is sniffed."""
    text = path.read_text(encoding="utf-8-sig")
    first = next((line for line in text.splitlines() if line.strip()), "")
    sep = ";" if ";" in first else ","
    rows = [
        [cell.strip() for cell in row]
        for row in csv.reader(text.splitlines(), delimiter=sep)
        if any(cell.strip() for cell in row)
    ]
    if not rows:
        raise InputError(f"hierarchy file {path.name!r} is empty")
    if len({len(row) for row in rows}) != 1:
        raise InputError(
            f"hierarchy file {path.name!r} has rows with different numbers of "
            "levels; every row needs one column per level"
        )
    return rows


# ---------------------------------------------------------------------------------------
# the lattice


def resolve_hierarchies(data: QIData, hierarchies: Hierarchies) -> list[Hierarchy]:
    """One hierarchy per QI: by position, by QI name or index, default where none is given."""
    given: dict[int, Hierarchy | None] = {}
    if isinstance(hierarchies, Mapping):
        for key, h in hierarchies.items():
            if isinstance(key, str) and key not in data.names:
                raise InputError(
                    f"a hierarchy is given for {key!r}, which is not a QI; "
                    f"the QIs are {', '.join(data.names)}"
                )
            given[data.names.index(key) if isinstance(key, str) else int(key)] = h
    elif hierarchies is not None:
        if len(hierarchies) != data.n_qis:
            raise InputError(f"{len(hierarchies)} hierarchies given for {data.n_qis} QIs")
        given = dict(enumerate(hierarchies))
    return [given.get(q) or default_hierarchy(data, q) for q in range(data.n_qis)]


def tuple_keys(columns: Sequence[np.ndarray], sizes: Sequence[int], n: int) -> np.ndarray:
    """One int64 key per row for a tuple of small codes (mixed radix, densified if needed)."""
    key = np.zeros(n, dtype=np.int64)
    bound = 1
    for col, size in zip(columns, sizes, strict=True):
        if bound * size >= 2**62:
            key = np.unique(key, return_inverse=True)[1].reshape(-1).astype(np.int64)
            bound = int(key.max(initial=0)) + 1
        key = key * size + col
        bound *= size
    return key


@dataclass
class FrequencySet:
    """Distinct generalized tuples of a node (one column per QI) and their row counts."""

    codes: np.ndarray  # (d, m) group ids
    counts: np.ndarray  # (m,)

    def small_rows(self, k: int) -> int:
        """Rows in classes smaller than k: what the node would have to suppress."""
        return int(self.counts[self.counts < k].sum())


def frequency_set(codes: np.ndarray, counts: np.ndarray, sizes: Sequence[int]) -> FrequencySet:
    """Merge equal tuples of a (d, m) code block, adding their counts."""
    key = tuple_keys(list(codes), sizes, codes.shape[1])
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    merged = np.bincount(inverse.reshape(-1), weights=counts).astype(np.int64)
    return FrequencySet(codes[:, first], merged)


def node_columns(hier: list[Hierarchy], domain: list[np.ndarray], node: Sequence[int]) -> list[np.ndarray]:
    """Every row's group id per QI at a lattice node."""
    return [h.levels[lv][c] for h, lv, c in zip(hier, node, domain, strict=True)]


def node_sizes(hier: list[Hierarchy], node: Sequence[int]) -> list[int]:
    """Number of groups per QI at a lattice node (the radix of its tuple keys)."""
    return [h.groups(lv) for h, lv in zip(hier, node, strict=True)]


def node_labels(
    data: QIData,
    hier: list[Hierarchy],
    domain: list[np.ndarray],
    node: Sequence[int],
    k: int,
    budget: float,
    rule: Rule | None = None,
) -> np.ndarray:
    """Class per row at a lattice node; rows of classes below k (or breaking an active
    ``rule``) suppressed within budget.

    When those classes hold more rows than the budget allows (without a rule only possible
    when no node is k-anonymous, i.e. n < k), every row is suppressed.
    """
    group = node_classes(data, hier, domain, node, k, rule)
    if (group < 0).sum() > budget:
        return np.full(data.n_rows, SUPPRESSED, dtype=np.int64)
    return first_position_labels(group, data.position)


def node_classes(
    data: QIData,
    hier: list[Hierarchy],
    domain: list[np.ndarray],
    node: Sequence[int],
    k: int,
    rule: Rule | None = None,
) -> np.ndarray:
    """Every row's generalized tuple at a node as a class id, -1 for the rows the node
    suppresses: those of classes below k and, with an active ``rule``, of classes that break
    it on ``data.sensitive`` (checked on the classes of at least k rows)."""
    key = tuple_keys(node_columns(hier, domain, node), node_sizes(hier, node), data.n_rows)
    _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    group = np.where(counts[inverse] < k, -1, inverse)
    if rule is not None and rule.active and (group >= 0).any():
        if data.sensitive is None:
            raise ValueError("criteria on sensitive values need QIData.sensitive")
        good = rule.classes_ok(group, data.sensitive)
        group = np.where(good[np.maximum(group, 0)], group, -1)
    return group


def node_suppresses(
    data: QIData,
    hier: list[Hierarchy],
    domain: list[np.ndarray],
    node: Sequence[int],
    k: int,
    budget: float,
    rule: Rule | None,
    fs: FrequencySet,
) -> bool:
    """Whether a node suppresses more rows than the budget: its classes below k (read off
    its frequency set ``fs``), then, when those fit and a ``rule`` is active, with the
    classes that break the rule."""
    if fs.small_rows(k) > budget:
        return True
    if rule is None or not rule.active:
        return False
    return bool((node_classes(data, hier, domain, node, k, rule) < 0).sum() > budget)


def setup(
    data: QIData, k: int, hierarchies: Hierarchies, max_suppression: float
) -> tuple[list[Hierarchy], list[np.ndarray], float]:
    """Check the options; hierarchies, domain codes and the suppression budget in rows."""
    if k < 1:
        raise ValueError(f"k={k} must be at least 1")
    if not 0 <= max_suppression <= 1:
        raise ValueError(f"max_suppression={max_suppression} must lie in [0, 1]")
    hier = resolve_hierarchies(data, hierarchies)
    domain = [h.codes(data, q) for q, h in enumerate(hier)]
    return hier, domain, max_suppression * data.n_rows


# ---------------------------------------------------------------------------------------
# Datafly


def datafly(
    data: QIData,
    k: int,
    hierarchies: Hierarchies = None,
    max_suppression: float = 0.01,
    rule: Rule | None = None,
) -> np.ndarray:
    """Datafly (Sweeney 2002): generalize the QI with the most distinct values, level by level.

    Stops at the first node whose classes smaller than k (or breaking an active ``rule``)
    hold at most ``max_suppression * n`` rows, and suppresses those rows. Ties between QIs
    go to the first QI. Returns class ids 0..C-1 by first row position, -1 for suppressed
    rows.
    """
    hier, domain, budget = setup(data, k, hierarchies, max_suppression)
    n = data.n_rows
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    node = [0] * data.n_qis
    while True:
        fs = frequency_set(
            np.stack(node_columns(hier, domain, node)), np.ones(n, dtype=np.int64), node_sizes(hier, node)
        )
        if not node_suppresses(data, hier, domain, node, k, budget, rule, fs):
            break
        open_q = [q for q in range(data.n_qis) if node[q] < hier[q].height]
        if not open_q:
            break
        distinct = [len(np.unique(fs.codes[q])) for q in open_q]
        node[open_q[int(np.argmax(distinct))]] += 1
    return node_labels(data, hier, domain, node, k, budget, rule)


# ---------------------------------------------------------------------------------------
# Incognito


def incognito(
    data: QIData,
    k: int,
    hierarchies: Hierarchies = None,
    max_suppression: float = 0.01,
    rule: Rule | None = None,
) -> np.ndarray:
    """Incognito (LeFevre, DeWitt and Ramakrishnan 2005): the best minimal full-domain node.

    Finds every minimal node of the lattice (one level per QI) whose classes smaller than k
    (or breaking an active ``rule``) hold at most ``max_suppression * n`` rows, and releases
    the one whose labels have the least total NCP (``ncp.total_ncp``; ties: lower height,
    then lexicographic node order).
    """
    hier, domain, budget = setup(data, k, hierarchies, max_suppression)
    if data.n_rows == 0:
        return np.zeros(0, dtype=np.int64)
    minimal = minimal_nodes(data, hier, domain, k, budget, rule)
    if not minimal:
        return np.full(data.n_rows, SUPPRESSED, dtype=np.int64)
    # the first minimal node with the least NCP (an NCP is finite)
    best_labels = node_labels(data, hier, domain, minimal[0], k, budget, rule)
    best_ncp = total_ncp(data, best_labels)
    for node in minimal[1:]:
        labels = node_labels(data, hier, domain, node, k, budget, rule)
        ncp = total_ncp(data, labels)
        if ncp < best_ncp:
            best_labels, best_ncp = labels, ncp
    return best_labels


def minimal_nodes(
    data: QIData,
    hier: list[Hierarchy],
    domain: list[np.ndarray],
    k: int,
    budget: float,
    rule: Rule | None = None,
) -> list[tuple[int, ...]]:
    """All minimal anonymous nodes, by a bottom-up breadth-first search of the lattice.

    This is Incognito's lattice search over the full QI set, without its iteration over QI
    subsets: a node one step above an anonymous node is anonymous without being checked
    (generalization only merges classes, so the rows in small classes never grow: that is
    the monotonicity Incognito prunes with), and every other node is checked on a frequency
    set rolled up from a node one step below it (Incognito's rollup), never from the rows.
    The nodes found anonymous by a check are exactly the minimal ones. With an active
    ``rule`` a node must also keep it (see :func:`node_suppresses`). The criteria hold on a
    union of classes that each hold them, but a class that breaks one can spoil the class it
    merges into, so the rows a node suppresses may grow above an accepted node: such a node
    is skipped unchecked as before, and only checked nodes are ever released.
    """
    heights = [h.height for h in hier]
    bottom = tuple([0] * len(hier))
    base = frequency_set(np.stack(domain), np.ones(data.n_rows, dtype=np.int64), [h.groups(0) for h in hier])
    anonymous: set[tuple[int, ...]] = set()
    minimal: list[tuple[int, ...]] = []
    previous: dict[tuple[int, ...], FrequencySet] = {}
    for nodes in lattice_layers(heights):
        current: dict[tuple[int, ...], FrequencySet] = {}
        for node in nodes:
            below = [node[:q] + (node[q] - 1,) + node[q + 1 :] for q in range(len(node)) if node[q] > 0]
            if any(b in anonymous for b in below):
                anonymous.add(node)
                continue
            fs = base if node == bottom else rollup(hier, previous, below, node)
            if not node_suppresses(data, hier, domain, node, k, budget, rule, fs):
                anonymous.add(node)
                minimal.append(node)
            else:
                current[node] = fs
        previous = current
    return minimal


def lattice_layers(heights: Sequence[int]) -> list[list[tuple[int, ...]]]:
    """Lattice nodes grouped by height (sum of levels), each layer in lexicographic order."""
    layers: list[list[tuple[int, ...]]] = [[] for _ in range(sum(heights) + 1)]
    for node in itertools.product(*(range(h + 1) for h in heights)):
        layers[sum(node)].append(node)
    return layers


def rollup(
    hier: list[Hierarchy],
    previous: dict[tuple[int, ...], FrequencySet],
    below: list[tuple[int, ...]],
    node: tuple[int, ...],
) -> FrequencySet:
    """Frequency set of a node from the smallest one of the nodes one step below it."""
    src = min(below, key=lambda b: previous[b].counts.shape[0])
    q = next(i for i in range(len(node)) if src[i] != node[i])
    fs = previous[src]
    codes = fs.codes.copy()
    codes[q] = hier[q].step(src[q])[codes[q]]
    return frequency_set(codes, fs.counts, node_sizes(hier, node))


def _runner(name: str, recode: Callable[..., np.ndarray]) -> Runner:
    """The full-domain recoding ``recode`` as the registry runs it, named ``name``."""

    def run(data: QIData, k: int, options: ClusterOptions, progress: Progress | None) -> ClusterRun:
        labels = recode(
            data, k, dict(options.hierarchies), max_suppression=options.max_suppression, rule=options.rule
        )
        detail = f"full-domain recoding, suppression budget {options.max_suppression:g}"
        # every row these suppress is the node's own suppression, within the budget
        reasons = np.where(labels < 0, REASON_CODES["budget"], 0).astype(np.int8)
        return ClusterRun(labels, name, "exact", detail, reasons if (labels < 0).any() else None)

    return run


run_datafly = _runner("datafly", datafly)
run_incognito = _runner("incognito", incognito)
