"""Hypothesis strategies: small tables of numeric (INTEGER, DOUBLE, DATE) and VARCHAR columns
with NULLs, cardinalities 1..8, 1..60 rows, and k in 2..6.

A generated table has its QI columns, ``sid`` (a unique row number, declared sensitive, so
each released row can be traced to its input row) and ``dis`` (a sensitive text column).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pandas as pd
from hypothesis import strategies as st

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
