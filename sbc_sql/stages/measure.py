"""Measure stage: information loss of a release, computed in SQL (docs/metrics.md).

Works for any original + release pair: the QIs are read off the release's columns
(``c_min``/``c_max`` for a numeric QI, a LIST column for a categorical one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sqlglot import exp

from ..engines.base import Engine
from ..model import Column
from ..plan import scaled_weights
from ..sql.nodes import as_number, list_size, ref
from ..sql.templates import render


@dataclass(frozen=True)
class Layout:
    """How a release relates to its original: the QIs and the columns released verbatim."""

    qis: tuple[Column, ...]
    verbatim: tuple[Column, ...]
    weights: tuple[float, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "weights", scaled_weights(self.weights))

    def qi_columns(self) -> list[str]:
        """The release's columns that hold generalized QIs."""
        return [n for c in self.qis for n in c.release_columns]


@dataclass(frozen=True)
class Measures:
    n_rows: int
    released: int
    suppressed: int
    ncp: dict[str, float]
    total_ncp: float
    classes: int = 0
    smallest: int = 0
    mean: float = 0.0
    largest: int = 0
    extra: dict[str, float] = field(default_factory=dict)
    #: a microaggregated release's loss on its numeric QIs (:func:`micro_loss`): SSE and
    #: IL1s summed over them, and each QI's; None for a generalized release
    sse: float | None = None
    il1s: float | None = None
    loss: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def utility(self) -> float:
        return 1.0 - self.total_ncp

    def as_dict(self) -> dict[str, object]:
        return {
            "rows": self.n_rows,
            "released": self.released,
            "suppressed": self.suppressed,
            "classes": self.classes,
            "smallest_class": self.smallest,
            "mean_class": round(self.mean, 4),
            "largest_class": self.largest,
            "total_ncp": self.total_ncp,
            "utility": self.utility,
            "ncp": dict(self.ncp),
            # a microaggregated release's loss on its numeric QIs (absent: generalized)
            **(
                {"sse": self.sse, "il1s": self.il1s, "loss": {q: dict(v) for q, v in self.loss.items()}}
                if self.sse is not None
                else {}
            ),
        }


def infer_layout(
    engine: Engine, original: str, release: str, weights: Mapping[str, float] | None = None
) -> Layout:
    """Read the QIs and verbatim columns off the two tables' schemas."""
    src = engine.describe(original)
    rel = {c.name: c.type for c in engine.describe(release).columns}
    if not src.columns or not rel:
        raise ValueError("original and release must both be tables with columns")
    qis: list[Column] = []
    verbatim: list[Column] = []
    for c in src.columns:
        if f"{c.name}_min" in rel and f"{c.name}_max" in rel and c.kind == "numeric":
            qis.append(Column(c.name, c.type, "qi", "numeric", c.temporal))
        elif c.name in rel and rel[c.name].endswith("[]") and not c.type.endswith("[]"):
            qis.append(Column(c.name, c.type, "qi", "categorical"))
        elif c.name in rel:
            verbatim.append(Column(c.name, c.type, "sensitive", c.kind, c.temporal))
    w = weights or {}
    return Layout(tuple(qis), tuple(verbatim), tuple(float(w.get(q.name, 1.0)) for q in qis))


def cost_expression(
    c: Column,
    ranges: Mapping[str, tuple[float, float]] | None = None,
    cards: Mapping[str, int] | None = None,
    span: str | None = None,
) -> exp.Expression:
    """NCP of one release row on QI c (over release alias r and input statistics src, or
    the input's range or cardinality when given)."""
    if c.kind == "numeric":
        denominator: exp.Expression
        if c.name in (ranges or {}):
            # a known range's width is a value derived from the data: a bound parameter
            denominator = exp.Placeholder(this=span or "span")
        else:
            denominator = exp.Sub(
                this=as_number(ref(c.name + "_hi", "src"), c),
                expression=as_number(ref(c.name + "_lo", "src"), c),
            )
        width = exp.Sub(
            this=as_number(ref(c.name + "_max", "r"), c), expression=as_number(ref(c.name + "_min", "r"), c)
        )
        ratio = exp.Coalesce(
            this=exp.Div(
                this=exp.Paren(this=width),
                expression=exp.Nullif(this=denominator, expression=exp.Literal.number(0)),
            ),
            expressions=[exp.Literal.number(0.0)],
        )
        return exp.Case(
            ifs=[
                exp.If(
                    this=exp.Is(this=ref(c.name + "_min", "r"), expression=exp.Null()),
                    true=exp.Literal.number(0.0),
                ),
                exp.If(this=ref(c.name + "_has_null", "r"), true=exp.Literal.number(1.0)),
            ],
            default=ratio,
        )
    size = list_size(ref(c.name, "r"))
    card = (cards or {}).get(c.name)
    denominator = exp.Literal.number(card) if card is not None else ref(c.name + "_card", "src")
    return exp.Case(
        ifs=[exp.If(this=exp.LTE(this=size, expression=exp.Literal.number(1)), true=exp.Literal.number(0.0))],
        default=exp.Div(
            this=exp.cast(size, "DOUBLE"),
            expression=exp.Nullif(this=denominator, expression=exp.Literal.number(0)),
        ),
    )


def row_weight(size_column: str | None) -> exp.Expression:
    """How many released rows one row of the table stands for: 1, or its class size."""
    return ref(size_column, "r") if size_column else exp.Literal.number(1)


def ncp_sql(
    layout: Layout,
    original: str,
    release: str,
    ranges: Mapping[str, tuple[float, float]] | None = None,
    size_column: str | None = None,
    cards: Mapping[str, int] | None = None,
) -> exp.Expression:
    """The NCP query; the input's ranges and cardinalities are aggregated over ``original``
    unless given (the pipeline passes those its statistics stage already computed)."""
    ranges, cards = ranges or {}, cards or {}
    return render(
        "ncp",
        original=original,
        release=release,
        num=[c.name for c in layout.qis if c.kind == "numeric" and c.name not in ranges],
        cat=[c.name for c in layout.qis if c.kind == "categorical" and c.name not in cards],
        cost=[cost_expression(c, ranges, cards, span=f"span_{i}") for i, c in enumerate(layout.qis)],
        weight=row_weight(size_column),
    )


def micro_loss_sql(layout: Layout, original: str, classes: str, rows: exp.Query) -> exp.Expression | None:
    """The SSE and IL1s query of a microaggregated release (micro_loss.sql) over its class
    table and its released rows with their classes (``rows``): None when no numeric QI is
    released as one value."""
    num = [c for c in layout.qis if c.kind == "numeric" and c.one_value]
    if not num:
        return None
    sqrt2 = exp.Sqrt(this=exp.Literal.number(2))

    def gap(c: Column) -> exp.Expression:
        return exp.Sub(this=as_number(ref(c.name, "s"), c), expression=as_number(ref(c.name, "c"), c))

    def deviation(c: Column) -> exp.Expression:
        return exp.Nullif(this=ref(c.name, "d"), expression=exp.Literal.number(0))

    return render(
        "micro_loss",
        original=original,
        labelled=rows,
        classes=classes,
        sd=[exp.StddevSamp(this=as_number(ref(c.name, "o"), c)) for c in num],
        num=[c.name for c in num],
        sse=[
            exp.Sum(
                this=exp.Pow(
                    this=exp.Div(this=exp.Paren(this=gap(c)), expression=deviation(c)),
                    expression=exp.Literal.number(2),
                )
            )
            for c in num
        ],
        sse_name=[f"sse_{i}" for i in range(len(num))],
        il1=[
            exp.Sum(
                this=exp.Div(
                    this=exp.Abs(this=gap(c)),
                    expression=exp.Paren(this=exp.Mul(this=deviation(c), expression=sqrt2.copy())),
                )
            )
            for c in num
        ],
        il1_name=[f"il1s_{i}" for i in range(len(num))],
    )


def micro_loss(
    engine: Engine, layout: Layout, original: str, classes: str, rows: exp.Query
) -> tuple[float, float, dict[str, dict[str, float]]] | None:
    """SSE and IL1s of a microaggregated release over its numeric QIs (summed over them),
    and each QI's (see micro_loss.sql); None when no numeric QI is released as one value."""
    query = micro_loss_sql(layout, original, classes, rows)
    if query is None:
        return None
    num = [c for c in layout.qis if c.kind == "numeric" and c.one_value]
    row = engine.fetch_one(query)
    sse = [float(x or 0.0) for x in row[: len(num)]]
    il1 = [float(x or 0.0) for x in row[len(num) :]]
    per = {c.name: {"sse": a, "il1s": b} for c, a, b in zip(num, sse, il1, strict=True)}
    return sum(sse), sum(il1), per


def ncp_params(layout: Layout, ranges: Mapping[str, tuple[float, float]] | None) -> dict[str, float]:
    """The NCP query's bound parameters: each known numeric range's width (``span_<i>``, i the
    QI's position)."""
    known = ranges or {}
    return {
        f"span_{i}": float(known[c.name][1]) - float(known[c.name][0])
        for i, c in enumerate(layout.qis)
        if c.kind == "numeric" and c.name in known
    }


def class_sizes_sql(release: str, size_column: str | None = None) -> exp.Expression:
    return render("class_sizes", release=release, weight=row_weight(size_column))


def measure_sql(
    layout: Layout,
    original: str,
    release: str,
    ranges: Mapping[str, tuple[float, float]] | None = None,
    size_column: str | None = None,
    cards: Mapping[str, int] | None = None,
) -> list[exp.Expression]:
    """The queries :func:`measure_tables` runs, in its order (a dry run shows them)."""
    return [
        ncp_sql(layout, original, release, ranges, size_column, cards),
        class_sizes_sql(release, size_column),
    ]


def measure_tables(
    engine: Engine,
    layout: Layout,
    original: str,
    release: str,
    ranges: Mapping[str, tuple[float, float]] | None = None,
    size_column: str | None = None,
    cards: Mapping[str, int] | None = None,
) -> Measures:
    """NCP per QI and total, utility and class sizes of a release (all aggregates in SQL).

    ``release`` is a table with a row per released row, or, with ``size_column``, a class
    table whose rows each stand for that many released rows. ``ranges`` and ``cards``: the
    input's numeric ranges and categorical cardinalities, when already known."""
    costs_query, sizes_query = measure_sql(layout, original, release, ranges, size_column, cards)
    row = engine.fetch_one(costs_query, ncp_params(layout, ranges))
    n_rows, released = int(row[0]), int(row[1])
    suppressed = n_rows - released
    costs: Sequence[float | None] = row[2:]
    ncp: dict[str, float] = {}
    for c, cost in zip(layout.qis, costs, strict=True):
        ncp[c.name] = ((cost or 0.0) + suppressed) / n_rows if n_rows else 0.0
    wsum = sum(layout.weights)
    total = (
        sum(w * ncp[c.name] for c, w in zip(layout.qis, layout.weights, strict=True)) / wsum if wsum else 0.0
    )
    classes, smallest, mean, largest, _ = engine.fetch_one(sizes_query)
    return Measures(
        n_rows,
        released,
        suppressed,
        ncp,
        total,
        int(classes or 0),
        int(smallest or 0),
        float(mean or 0.0),
        int(largest or 0),
    )
