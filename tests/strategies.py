"""Hypothesis strategies of the test suite, all in one place.

SQL tables (``tables``, ``tables_and_k``): small tables of numeric (INTEGER, DOUBLE, DATE)
and VARCHAR columns with NULLs, cardinalities 1..8, 1..60 rows, and k in 2..6. A generated
table has its QI columns, ``sid`` (a unique row number, declared sensitive, so each released
row can be traced to its input row) and ``dis`` (a sensitive text column).

Clustering inputs (``QIData``, the arrays the clustering stage sees): ``kernel_tables`` for
the compiled kernels and blocks, ``sbca_plus_tables`` (with ``sbca_plus_ks`` and ``sbca_plus_flags``) for
SBCA+'s properties, ``baseline_tables`` for the baselines, ``criteria_tables`` (with
``rules``) for the baselines that keep privacy criteria on sensitive columns;
``data_from_arrays`` and ``data_from_lists`` build a QIData by hand the same way.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np
import pandas as pd
from hypothesis import strategies as st

from sbc_sql.cluster.model import QIData
from sbc_sql.cluster.sensitive import Sensitive
from sbc_sql.privacy.criteria import rule_of

QI_TYPES = ("INTEGER", "DOUBLE", "DATE", "VARCHAR")
NUMERIC_TYPES = ("INTEGER", "DOUBLE", "DATE")
# plain and awkward names: a space, a quote, a keyword
QI_NAMES = ("a", "b c", 'q"t', "select", "e")
BASE_DATE = dt.date(2000, 1, 1)

ks = st.integers(min_value=2, max_value=6)


@dataclass(frozen=True)
class TableCase:
    df: pd.DataFrame
    types: dict[str, str]
    qis: tuple[str, ...]

    @property
    def n(self) -> int:
        return len(self.df)

    def numeric_qis(self) -> list[str]:
        return [c for c in self.qis if self.types[c] in NUMERIC_TYPES]

    def categorical_qis(self) -> list[str]:
        return [c for c in self.qis if self.types[c] not in NUMERIC_TYPES]

    def __repr__(self) -> str:  # hypothesis prints this on failure
        return f"TableCase(types={self.types}, rows=\n{self.df.to_dict(orient='list')})"


def value_pool(sql_type: str, size: int) -> st.SearchStrategy[list]:
    """`size` distinct non-NULL values of one SQL type."""
    if sql_type == "INTEGER":
        elems = st.integers(min_value=-50, max_value=50)
    elif sql_type == "DOUBLE":
        elems = st.integers(min_value=-40, max_value=40).map(lambda i: i / 4)
    elif sql_type == "DATE":
        elems = st.integers(min_value=0, max_value=3650).map(
            lambda i: (BASE_DATE + dt.timedelta(days=i)).isoformat()
        )
    else:
        elems = st.text(alphabet="abcxyzé ", max_size=3)
    return st.lists(elems, min_size=size, max_size=size, unique=True)


@st.composite
def column_values(draw, sql_type: str, n: int) -> list:
    """n cells drawn from a pool of 1..8 values, NULLs allowed (cardinality 1..8 in all)."""
    with_null = draw(st.booleans())
    size = draw(st.integers(min_value=1 if not with_null else 0, max_value=8 - int(with_null)))
    pool = draw(value_pool(sql_type, size)) if size else []
    choices = pool + ([None] if with_null else [])
    if not choices:
        choices = [None]
    return draw(st.lists(st.sampled_from(choices), min_size=n, max_size=n))


@st.composite
def tables(draw, min_rows: int = 1, max_rows: int = 60, max_qis: int = 4) -> TableCase:
    n = draw(st.integers(min_value=min_rows, max_value=max_rows))
    n_qis = draw(st.integers(min_value=1, max_value=max_qis))
    names = draw(st.lists(st.sampled_from(QI_NAMES), min_size=n_qis, max_size=n_qis, unique=True))
    types = {name: draw(st.sampled_from(QI_TYPES)) for name in names}
    data: dict[str, list] = {name: draw(column_values(types[name], n)) for name in names}
    data["sid"] = list(range(n))
    data["dis"] = draw(st.lists(st.sampled_from(["flu", "cold", None, "x'y"]), min_size=n, max_size=n))
    types.update(sid="INTEGER", dis="VARCHAR")
    df = pd.DataFrame({c: pd.Series(v, dtype=object) for c, v in data.items()})
    return TableCase(df, types, tuple(names))


@st.composite
def tables_and_k(draw, max_rows: int = 60) -> tuple[TableCase, int]:
    """A table with at least k rows, and k."""
    k = draw(ks)
    return draw(tables(min_rows=k, max_rows=max_rows)), k


# ---------------------------------------------------------------------------------------
# clustering inputs (QIData)
# ---------------------------------------------------------------------------------------


def data_from_arrays(
    numerics: list[np.ndarray],
    cats: list[tuple[np.ndarray, int]],
    weights: list[float] | None = None,
    position: np.ndarray | None = None,
) -> QIData:
    """A QIData with table-wide ranges computed the way the stats step does."""
    cols = [np.asarray(x, dtype=np.float64) for x in numerics]
    lo = [float(np.nanmin(x)) if np.isfinite(x).any() else np.nan for x in cols]
    hi = [float(np.nanmax(x)) if np.isfinite(x).any() else np.nan for x in cols]
    cols += [np.asarray(c, dtype=np.int32) for c, _ in cats]
    d = len(cols)
    extra = {} if position is None else {"position": np.asarray(position, dtype=np.int64)}
    return QIData(
        tuple(f"q{i}" for i in range(d)),
        (True,) * len(numerics) + (False,) * len(cats),
        tuple(cols),
        tuple(lo) + (np.nan,) * len(cats),
        tuple(hi) + (np.nan,) * len(cats),
        (0,) * len(numerics) + tuple(card for _, card in cats),
        tuple(weights) if weights else (1.0,) * d,
        **extra,
    )


@st.composite
def kernel_tables(draw, max_rows: int = 300) -> QIData:
    """Small tables full of ties and NULLs: where tie-breaking and widening matter (the
    compiled kernels against their references, blocks, the row order)."""
    n = draw(st.integers(1, max_rows))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_num = draw(st.integers(0, 3))
    n_cat = draw(st.integers(0 if n_num else 1, 4))
    numerics = []
    for _ in range(n_num):
        levels = draw(st.sampled_from([1, 3, 10, 1000]))
        x = rng.integers(0, levels, n).astype(np.float64) * draw(st.sampled_from([1.0, 0.37]))
        x[rng.random(n) < draw(st.sampled_from([0.0, 0.1, 0.5, 1.0]))] = np.nan
        numerics.append(x)
    cats = []
    for _ in range(n_cat):
        card = draw(st.integers(1, 12))
        p = 1.0 / np.arange(1, card + 1) ** draw(st.sampled_from([0.0, 1.0, 2.0]))
        codes = rng.choice(card, n, p=p / p.sum())
        cats.append((codes, card))
    weights = None
    if draw(st.booleans()):
        weights = [draw(st.sampled_from([1.0, 0.5, 2.0, 0.0])) for _ in range(n_num + n_cat)]
    position = rng.permutation(n) * 3 if draw(st.booleans()) else None
    return data_from_arrays(numerics, cats, weights, position)


@st.composite
def sbca_plus_tables(draw, max_rows: int = 40) -> QIData:
    """SBCA+'s properties: 0-2 numeric QIs (NULLs allowed), 1-3 categorical QIs of 1-6 codes, few distinct
    values so that ties and duplicate rows are common."""
    n = draw(st.integers(1, max_rows))
    n_num = draw(st.integers(0, 2))
    n_cat = draw(st.integers(1, 3))
    names, numeric, columns, lo, hi, card, weights = [], [], [], [], [], [], []
    for q in range(n_num + n_cat):
        is_num = q < n_num
        names.append(f"q{q}")
        numeric.append(is_num)
        weights.append(draw(st.sampled_from([1.0, 1.0, 0.5, 2.0, 0.0])))
        if is_num:
            vals = draw(
                st.lists(st.one_of(st.integers(0, 6).map(float), st.just(np.nan)), min_size=n, max_size=n)
            )
            col = np.array(vals, dtype=np.float64)
            finite = col[~np.isnan(col)]
            columns.append(col)
            lo.append(float(finite.min()) if len(finite) else np.nan)
            hi.append(float(finite.max()) if len(finite) else np.nan)
            card.append(0)
        else:
            c = draw(st.integers(1, 6))
            codes = draw(st.lists(st.integers(0, c - 1), min_size=n, max_size=n))
            columns.append(np.array(codes, dtype=np.int32))
            lo.append(np.nan)
            hi.append(np.nan)
            card.append(c)
    return QIData(
        tuple(names), tuple(numeric), tuple(columns), tuple(lo), tuple(hi), tuple(card), tuple(weights)
    )


#: k for SBCA+'s properties, 1 included (every row its own class)
sbca_plus_ks = st.integers(1, 7)
#: SBCA+'s switches, any combination
sbca_plus_flags = st.fixed_dictionaries(
    {
        "growth": st.booleans(),
        "seeds": st.sampled_from(["class", "farthest", "first"]),
        "refine": st.booleans(),
    }
)


def data_from_lists(
    numeric: list[list[float | None]], categorical: list[list[int]], cards: list[int] | None = None
) -> QIData:
    """QIData from plain lists: numerics first (None is NULL), then categorical codes."""
    cols, num, lo, hi, card = [], [], [], [], []
    for values in numeric:
        col = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
        finite = col[~np.isnan(col)]
        cols.append(col)
        num.append(True)
        lo.append(float(finite.min()) if len(finite) else np.nan)
        hi.append(float(finite.max()) if len(finite) else np.nan)
        card.append(0)
    for i, codes in enumerate(categorical):
        col = np.array(codes, dtype=np.int32)
        cols.append(col)
        num.append(False)
        lo.append(np.nan)
        hi.append(np.nan)
        card.append(cards[i] if cards else int(col.max()) + 1)
    names = tuple(f"q{i}" for i in range(len(cols)))
    return QIData(names, tuple(num), tuple(cols), tuple(lo), tuple(hi), tuple(card), (1.0,) * len(cols))


@st.composite
def baseline_tables(draw: st.DrawFn) -> tuple[QIData, int]:
    """The baselines' properties: small tables (numerics with NULLs, categoricals of small
    cardinality) and a k."""
    n = draw(st.integers(1, 60))
    n_num = draw(st.integers(0, 2))
    n_cat = draw(st.integers(0 if n_num else 1, 2))
    value = st.one_of(st.none(), st.integers(0, 20).map(float))
    numeric = [draw(st.lists(value, min_size=n, max_size=n)) for _ in range(n_num)]
    cards = [draw(st.integers(1, 4)) for _ in range(n_cat)]
    categorical = [draw(st.lists(st.integers(0, c - 1), min_size=n, max_size=n)) for c in cards]
    return data_from_lists(numeric, categorical, cards), draw(st.integers(2, 6))


def sensitive_from_codes(columns: list[np.ndarray], ordered: list[bool] | None = None) -> Sensitive:
    """Sensitive columns from raw codes: each renumbered densely in value order, with the
    counts of the rows given (the whole input)."""
    codes, counts = [], []
    for col in columns:
        _, inverse, count = np.unique(np.asarray(col), return_inverse=True, return_counts=True)
        codes.append(inverse.reshape(-1).astype(np.int32))
        counts.append(count.astype(np.int64))
    names = tuple(f"s{i}" for i in range(len(columns)))
    return Sensitive(names, tuple(codes), tuple(counts), tuple(ordered or [False] * len(columns)))


#: one rule of each kind, and two together
rules = st.sampled_from(
    [
        rule_of(l_diversity=2),
        rule_of(l_diversity=3),
        rule_of(l_diversity=2, l_model="entropy"),
        rule_of(t_closeness=0.3),
        rule_of(t_closeness=0.2),
        rule_of(beta_likeness=1.0),
        rule_of(beta_likeness=2.0, beta_basic=True),
        rule_of(l_diversity=2, t_closeness=0.35, beta_likeness=3.0),
    ]
)


@st.composite
def criteria_tables(draw: st.DrawFn) -> tuple[QIData, int]:
    """The criteria's properties: 50-300 rows of 1-2 numeric QIs (NULLs allowed) and 1-2
    categorical ones, 1-2 skewed sensitive columns (3-8 values, the first one dominant; the
    second, when there is one, ordered), and k in 2..5."""
    n = draw(st.integers(50, 300))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    numerics = []
    for _ in range(draw(st.integers(1, 2))):
        x = rng.integers(0, draw(st.sampled_from([5, 30, 100])), n).astype(np.float64)
        x[rng.random(n) < draw(st.sampled_from([0.0, 0.05]))] = np.nan
        numerics.append(x)
    cats = []
    for _ in range(draw(st.integers(1, 2))):
        card = draw(st.integers(2, 6))
        cats.append((rng.integers(0, card, n), card))
    data = data_from_arrays(numerics, cats)
    columns = []
    n_sens = draw(st.integers(1, 2))
    for _ in range(n_sens):
        m = draw(st.integers(3, 8))
        p = 1.0 / np.arange(1, m + 1) ** draw(st.sampled_from([0.5, 1.0, 1.5]))
        values = rng.choice(m, n, p=p / p.sum())
        if draw(st.booleans()):
            # the sensitive value follows the first QI: neighbours share it, k alone rarely mixes
            values = np.sort(values)[
                np.argsort(np.argsort(np.nan_to_num(numerics[0], nan=-1.0), kind="stable"))
            ]
        columns.append(values)
    sens = sensitive_from_codes(columns, [False, True][:n_sens])
    return QIData(
        data.names,
        data.numeric,
        data.columns,
        data.lo,
        data.hi,
        data.cardinality,
        data.weights,
        sensitive=sens,
    ), draw(st.integers(2, 5))
