"""Coverage, record linkage and RGCP of a release (their definitions: the docstring of
:mod:`sbc_sql.quality.evaluate`).

The expressions cost a class and grow its generalized tuple by a record or by the records
that join it; the statements make the run's temporary tables (the input's statistics, the
release's classes, the input's distinct rows, the classes covering each) and read record
linkage and RGCP from them. The classes table is read by the query error too
(:mod:`sbc_sql.quality.queries`).
"""

from __future__ import annotations

from sqlglot import exp

from ..model import Column
from ..sql.matching import inside
from ..sql.nodes import alias, as_number, conj, list_has_null, list_size, or_false, ref, same_key, text_list
from ..sql.templates import render
from ..stages.measure import Layout, cost_expression
from .scratch import Names

# ---------------------------------------------------------------------------------------
# expressions


def weighted_cost(layout: Layout) -> exp.Expression:
    """Sum over QIs of weight * NCP of one class (over alias r and src)."""
    out: exp.Expression | None = None
    for c, w in zip(layout.qis, layout.weights, strict=True):
        term: exp.Expression = exp.Mul(
            this=exp.Literal.number(w), expression=exp.Paren(this=cost_expression(c))
        )
        out = term if out is None else exp.Add(this=out, expression=term)
    return out if out is not None else exp.Literal.number(0.0)


def _lesser(a: exp.Expression, b: exp.Expression, *, greater: bool = False) -> exp.Expression:
    """The smaller (or greater) of two values, either of which may be NULL."""
    cmp = exp.GT if greater else exp.LT
    return exp.Case(
        ifs=[
            exp.If(this=exp.Is(this=a, expression=exp.Null()), true=b),
            exp.If(this=exp.Is(this=b, expression=exp.Null()), true=a),
            exp.If(this=cmp(this=a, expression=b), true=a),
        ],
        default=b,
    )


def extend_columns(layout: Layout, rec: str = "l", cls: str = "g") -> list[exp.Expression]:
    """Class cls's generalized tuple with the input record rec added, named like the release."""
    out: list[exp.Expression] = []
    for c in layout.qis:
        if c.kind == "numeric":
            v = ref(c.name, rec)
            out += [
                alias(_lesser(ref(c.name + "_min", cls), v), c.name + "_min"),
                alias(_lesser(ref(c.name + "_max", cls), v, greater=True), c.name + "_max"),
                alias(
                    exp.or_(or_false(ref(c.name + "_has_null", cls)), exp.Is(this=v, expression=exp.Null())),
                    c.name + "_has_null",
                ),
            ]
        else:
            grown = exp.ArrayAppend(this=ref(c.name, cls), expression=ref(c.name, rec))
            out.append(
                alias(
                    exp.Case(
                        ifs=[exp.If(this=or_false(inside(c, rec, cls)), true=ref(c.name, cls))],
                        default=grown,
                    ),
                    c.name,
                )
            )
    return out


def union_columns(layout: Layout, cls: str = "g", add: str = "a") -> list[exp.Expression]:
    """Class cls's tuple with the records aggregated in add (``_lo``/``_hi``/``_null``,
    ``_vals``/``_null``) added: the virtual class's generalized tuple."""
    out: list[exp.Expression] = []
    for c in layout.qis:
        if c.kind == "numeric":
            out += [
                alias(_lesser(ref(c.name + "_min", cls), ref(c.name + "_lo", add)), c.name + "_min"),
                alias(
                    _lesser(ref(c.name + "_max", cls), ref(c.name + "_hi", add), greater=True),
                    c.name + "_max",
                ),
                alias(
                    exp.or_(or_false(ref(c.name + "_has_null", cls)), or_false(ref(c.name + "_null", add))),
                    c.name + "_has_null",
                ),
            ]
        else:
            values = ref(c.name, cls)
            added = exp.Coalesce(this=ref(c.name + "_vals", add), expressions=[exp.Array(expressions=[])])
            merged = exp.ArrayDistinct(this=exp.ArrayConcat(this=values, expressions=[added]))
            with_null = exp.ArrayAppend(this=merged.copy(), expression=exp.Null())
            out.append(
                alias(
                    exp.Case(
                        ifs=[
                            exp.If(
                                this=exp.or_(list_has_null(values), or_false(ref(c.name + "_null", add))),
                                true=with_null,
                            )
                        ],
                        default=merged,
                    ),
                    c.name,
                )
            )
    return out


def _uid(layout: Layout) -> exp.Expression:
    keys = [ref(c.name) for c in (*layout.qis, *layout.verbatim)]
    order = exp.Order(expressions=[exp.Ordered(this=k, nulls_first=False) for k in keys])
    return exp.Window(this=exp.RowNumber(), order=order)


# ---------------------------------------------------------------------------------------
# statements


def source_stats_sql(layout: Layout, original: str, target: str) -> exp.Expression:
    return render(
        "eval_source_stats",
        target=target,
        original=original,
        num=[c.name for c in layout.qis if c.kind == "numeric"],
        cat=[c.name for c in layout.qis if c.kind == "categorical"],
    )


def classes_sql(layout: Layout, release: str, names: Names) -> exp.Expression:
    return render(
        "eval_classes",
        target=names.classes,
        release=release,
        src=names.src,
        qicol=layout.qi_columns(),
        cost=weighted_cost(layout),
    )


def tuples_sql(layout: Layout, original: str, names: Names) -> exp.Expression:
    return render(
        "eval_tuples",
        target=names.tuples,
        original=original,
        col=[c.name for c in (*layout.qis, *layout.verbatim)],
        uid=_uid(layout),
    )


# The coverage join's keys. Each QI gives a class a few keys: a numeric QI the buckets
# FLOOR(value / width) its range spans, a categorical one its values as text, and either
# the sentinel of NULL when the class holds NULL. A numeric QI's width is the classes' mean
# range on it times a power of 8, the least (up to 8^6) that holds the class's range, so
# that the range spans at most three buckets (two, but for rounding); a class narrower than
# the mean is found in fine buckets, a wide one in coarse ones. A categorical QI keys a class
# holding at most two values (NULL counts as one), and the class's largest set of at most
# eight values is keyed too (the first of the largest, in the QIs' order): a class gives at
# most eight keys on one categorical QI and two on each other, while a row meets only the
# classes holding its value on their wide sets (keyed on none, a QI that classes hold three
# values of matched a row with every class around it: at 1,000,000 rows 37 candidates per
# covering class). Elsewhere a class takes one constant on the QI, and the rows probing it
# take the same constant. A row is probed once per combination of widths and keyed QIs the
# classes use, and finds, by equality on every QI's key, the classes that may cover it; the
# ranges and sets are tested after. A sentinel that also names a value only
# adds candidates, which the test then drops: the keys decide the cost, never the result.

#: the key of NULL on a numeric QI (a bucket number no value of a real table reaches)
_NULL_BUCKET = -1.0e300
#: the key of NULL on a categorical QI, and the constant of a QI a class is not keyed on
_NULL_TEXT = ""
#: the most values of a categorical QI for a class to be keyed on it, on every such QI
_KEYS_PER_QI = 2
#: the most values of the one further categorical QI a class is keyed on (its largest set)
_KEYS_LARGEST = 8
#: a numeric QI's bucket widths: the mean range times 8^0 .. 8^_LEVELS
_LEVEL_STEP = 8
_LEVELS = 6


def _key_flag(i: int) -> str:
    return f"sbc_inc_{i}"


def _key(i: int) -> str:
    return f"sbc_key_{i}"


def _width(i: int) -> str:
    return f"sbc_w_{i}"


def _level(i: int) -> str:
    return f"sbc_wl_{i}"


def _bucket(value: exp.Expression, c: Column, width: exp.Expression) -> exp.Expression:
    return exp.Floor(this=exp.Div(this=as_number(value, c), expression=width))


def _widths(layout: Layout) -> list[exp.Expression]:
    """Per numeric QI, its base bucket width: the classes' mean range (1 where that is 0 or
    NULL)."""
    out: list[exp.Expression] = []
    for i, c in enumerate(layout.qis):
        if c.kind == "numeric":
            extent = exp.Sub(
                this=as_number(ref(c.name + "_max", "g"), c),
                expression=as_number(ref(c.name + "_min", "g"), c),
            )
            mean = exp.Nullif(this=exp.Avg(this=extent), expression=exp.Literal.number(0))
            out.append(alias(exp.Coalesce(this=mean, expressions=[exp.Literal.number(1.0)]), _width(i)))
    return out or [alias(exp.Literal.number(1.0), _width(len(layout.qis)))]


def _class_keys(layout: Layout) -> tuple[list[exp.Expression], list[exp.Expression]]:
    """Per QI, over class g and base widths w: whether the class is keyed on it (and, on a
    numeric QI, the width it is keyed at: 0 when not keyed), and its keys."""
    flags: list[exp.Expression] = []
    cands: list[exp.Expression] = []
    cats = [i for i, c in enumerate(layout.qis) if c.kind == "categorical"]
    for i, c in enumerate(layout.qis):
        if c.kind == "numeric":
            w = ref(_width(i), "w")
            lo_n, hi_n = as_number(ref(c.name + "_min", "g"), c), as_number(ref(c.name + "_max", "g"), c)
            extent = exp.Sub(this=hi_n, expression=lo_n)
            steps = []
            for level in range(_LEVELS + 1):
                width = exp.Mul(this=w.copy(), expression=exp.Literal.number(_LEVEL_STEP**level))
                steps.append(exp.If(this=exp.LTE(this=extent.copy(), expression=width), true=width.copy()))
            wl: exp.Expression = exp.Case(
                ifs=[
                    exp.If(this=exp.Is(this=ref(c.name + "_min", "g"), expression=exp.Null()), true=w.copy())
                ]
                + steps,
                default=exp.Literal.number(0.0),
            )
            flags.append(alias(wl, _level(i)))
            level_ref = ref(_level(i), "l")
            lo, hi = (
                _bucket(ref(c.name + "_min", "l"), c, level_ref),
                _bucket(ref(c.name + "_max", "l"), c, level_ref.copy()),
            )
            one, two = exp.Literal.number(1), exp.Literal.number(2)
            keys: exp.Expression = exp.Array(
                expressions=[
                    lo.copy(),
                    exp.Case(
                        ifs=[
                            exp.If(
                                this=exp.GTE(
                                    this=hi.copy(), expression=exp.Add(this=lo.copy(), expression=one)
                                ),
                                true=exp.Add(this=lo.copy(), expression=one.copy()),
                            )
                        ]
                    ),
                    exp.Case(
                        ifs=[
                            exp.If(
                                this=exp.GTE(
                                    this=hi.copy(), expression=exp.Add(this=lo.copy(), expression=two)
                                ),
                                true=hi.copy(),
                            )
                        ]
                    ),
                    exp.Case(
                        ifs=[
                            exp.If(
                                this=or_false(ref(c.name + "_has_null", "l")),
                                true=exp.Literal.number(_NULL_BUCKET),
                            )
                        ]
                    ),
                ]
            )
            flag: exp.Expression = exp.GT(this=level_ref.copy(), expression=exp.Literal.number(0))
            constant: exp.Expression = exp.Literal.number(0.0)
        else:
            values = ref(c.name, "l")
            keyed = exp.or_(
                exp.LTE(this=list_size(ref(c.name, "g")), expression=exp.Literal.number(_KEYS_PER_QI)),
                _largest(layout, cats, i),
            )
            flags.append(alias(exp.Coalesce(this=keyed, expressions=[exp.false()]), _key_flag(i)))
            null_key = exp.Case(
                ifs=[exp.If(this=or_false(list_has_null(values.copy())), true=exp.Literal.string(_NULL_TEXT))]
            )
            keys = exp.ArrayConcat(
                this=exp.cast(values.copy(), text_list()), expressions=[exp.Array(expressions=[null_key])]
            )
            flag = ref(_key_flag(i), "l")
            constant = exp.Literal.string(_NULL_TEXT)
        chosen = exp.Case(ifs=[exp.If(this=flag, true=keys)], default=exp.Array(expressions=[constant]))
        cands.append(alias(chosen, _key(i) + "_list"))
    return flags, cands


def _keyable(c: Column) -> exp.Expression:
    """Class g's set size on categorical QI c when it is at most _KEYS_LARGEST, else 0."""
    size = list_size(ref(c.name, "g"))
    return exp.Coalesce(
        this=exp.Case(
            ifs=[
                exp.If(
                    this=exp.LTE(this=size, expression=exp.Literal.number(_KEYS_LARGEST)), true=size.copy()
                )
            ],
            default=exp.Literal.number(0),
        ),
        expressions=[exp.Literal.number(0)],
    )


def _largest(layout: Layout, cats: list[int], i: int) -> exp.Expression:
    """Class g's set on categorical QI i is its largest of at most _KEYS_LARGEST values (the
    first of the largest in the QIs' order)."""
    mine = _keyable(layout.qis[i])
    out: exp.Expression = exp.GT(this=mine.copy(), expression=exp.Literal.number(0))
    for j in cats:
        if j != i:
            cmp = exp.LT if j < i else exp.LTE
            out = exp.And(this=out, expression=cmp(this=_keyable(layout.qis[j]), expression=mine.copy()))
    return out


def _signature(layout: Layout) -> list[str]:
    """The columns a class's keys are made under: per numeric QI its width, per categorical
    QI whether it is keyed."""
    return [_level(i) if c.kind == "numeric" else _key_flag(i) for i, c in enumerate(layout.qis)]


def keys_sql(layout: Layout, names: Names) -> exp.Expression:
    """The classes under their join keys (eval_keys): eval_class_keys exploded one QI at a
    time."""
    flags, cands = _class_keys(layout)
    widths = _widths(layout)
    level: exp.Expression = render(
        "eval_class_keys",
        classes=names.classes,
        width=widths,
        inc=flags,
        cands=cands,
    )
    for i in range(len(layout.qis)):
        level = render("eval_key_unnest", level=level, list=ref(_key(i) + "_list", "l"), key=_key(i))
    return render(
        "eval_keys",
        target=names.keys,
        exploded=level,
        sig=_signature(layout),
        key=[_key(i) for i in range(len(layout.qis))],
    )


def _probe(layout: Layout) -> list[exp.Expression]:
    """Per QI, row t's key under signature s (its widths and keyed QIs)."""
    out: list[exp.Expression] = []
    for i, c in enumerate(layout.qis):
        value = ref(c.name, "t")
        if c.kind == "numeric":
            keyed: exp.Expression = exp.GT(this=ref(_level(i), "s"), expression=exp.Literal.number(0))
            key: exp.Expression = exp.Coalesce(
                this=_bucket(value, c, ref(_level(i), "s")), expressions=[exp.Literal.number(_NULL_BUCKET)]
            )
            constant: exp.Expression = exp.Literal.number(0.0)
        else:
            keyed = ref(_key_flag(i), "s")
            key = exp.Coalesce(this=exp.cast(value, "VARCHAR"), expressions=[exp.Literal.string(_NULL_TEXT)])
            constant = exp.Literal.string(_NULL_TEXT)
        out.append(alias(exp.Case(ifs=[exp.If(this=keyed, true=key)], default=constant), _key(i)))
    return out


def coverage_sql(layout: Layout, release: str, names: Names) -> exp.Expression:
    covers = conj([inside(c, "t", "g") for c in layout.qis])
    same = conj([same_key(ref(c.name, "t"), ref(c.name, "cv"), c) for c in layout.verbatim])
    sig = _signature(layout)
    match = conj(
        [exp.EQ(this=ref(f, "p"), expression=ref(f, "k")) for f in sig]
        + [exp.EQ(this=ref(_key(i), "p"), expression=ref(_key(i), "k")) for i in range(len(layout.qis))]
    )
    return render(
        "eval_coverage",
        target=names.cov,
        tuples=names.tuples,
        classes=names.classes,
        keys=names.keys,
        release=release,
        verb=[c.name for c in layout.verbatim],
        sig=sig,
        probe=_probe(layout),
        match=match,
        inside=covers,
        same=same,
    )


def linkage_sql(names: Names) -> exp.Expression:
    return render("eval_linkage", cov=names.cov)


def rgcp_sql(layout: Layout, names: Names) -> exp.Expression:
    return render(
        "eval_rgcp",
        tuples=names.tuples,
        cov=names.cov,
        classes=names.classes,
        src=names.src,
        num=[c.name for c in layout.qis if c.kind == "numeric"],
        cat=[c.name for c in layout.qis if c.kind == "categorical"],
        extend=extend_columns(layout),
        union=union_columns(layout),
        cost=weighted_cost(layout),
    )


def whole_sql(layout: Layout, original: str, names: Names) -> exp.Expression:
    return render(
        "eval_whole",
        original=original,
        src=names.src,
        num=[c.name for c in layout.qis if c.kind == "numeric"],
        cat=[c.name for c in layout.qis if c.kind == "categorical"],
        cost=weighted_cost(layout),
    )
