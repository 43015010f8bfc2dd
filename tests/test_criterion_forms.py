"""Every registered privacy criterion, in its three forms, on random classes: the SQL check
verification runs (on DuckDB), the array rule a clustering keeps (one class from its value
counts, and every class of a labelling at once) and its compiled twin (the kernels' program).

The array rule and its twin agree exactly; a class they accept is one the SQL accepts; a
class the SQL accepts and they refuse is a tie at the clustering's margin, which a criterion
looser by a millionth accepts. The criteria and their thresholds come from the registry and
the options each declares, so a new criterion is held here without a line of its own.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sbc_sql import engines
from sbc_sql.cluster.sbca_plus.kernels import criteria as kernels
from sbc_sql.cluster.sensitive import Rule, Sensitive
from sbc_sql.model import Column
from sbc_sql.privacy import registry
from sbc_sql.privacy.criterion import Criterion
from sbc_sql.privacy.options import Option

DX = Column("dx", "VARCHAR", "sensitive", kind="categorical")
PAY = Column("pay", "INTEGER", "sensitive", kind="numeric")
DOMAINS = {"dx": ["a", "b", "c", "d", "e", None], "pay": [0, 1000, 2000, 3000, None]}
N_CLASSES = 12
#: how much looser a criterion accepts every class the SQL accepts: above the margin (1e-9)
LOOSER = 1e-6


def _value(option: Option) -> st.SearchStrategy[Any]:
    """A value the option's declaration allows (None for a threshold: the criterion unasked)."""
    if option.choices:
        return st.sampled_from(option.choices)
    if option.type is bool:
        return st.booleans()
    if option.minimum is not None:
        return st.integers(option.minimum, option.minimum + 3)
    low = option.above if option.above is not None else 0.0
    high = option.below if option.below is not None else low + 4.0
    return st.floats(low, high, exclude_min=True, exclude_max=True)


def _criterion(kind: type[Criterion]) -> st.SearchStrategy[Criterion]:
    """An instance of ``kind`` (no column) asked through its declared options."""
    if kind is registry.base():
        return st.integers(1, 6).map(kind)

    def make(values: dict[str, Any]) -> Criterion:
        criterion = kind.from_options(values)
        assert criterion is not None, values
        # the values a criterion says ask it ask it again, and its provenance record is it
        assert kind.from_options(criterion.option_values()) == criterion
        form = {a: getattr(criterion, a) for a in ("variant", "enhanced") if hasattr(criterion, a)}
        assert kind.from_record({"name": kind.name, **criterion.params(), **form}) == criterion
        return criterion

    return st.fixed_dictionaries({o.name: _value(o) for o in kind.options}).map(make)


def _looser(criterion: Criterion) -> Criterion:
    """Every float threshold a millionth looser (larger, relatively and absolutely); whole
    numbers as they are."""
    changes = {
        f.name: getattr(criterion, f.name) * (1 + LOOSER) + LOOSER
        for f in dataclasses.fields(criterion)
        if isinstance(getattr(criterion, f.name), float)
    }
    return dataclasses.replace(criterion, **changes)


@st.composite
def _tables(draw: st.DrawFn) -> tuple[dict[str, list[Any]], np.ndarray]:
    """An input of skewed sensitive columns (NULL among the values) and a labelling of it
    into classes."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n = int(rng.integers(40, 160))
    columns: dict[str, list[Any]] = {}
    for name, domain in DOMAINS.items():
        used = domain[: int(rng.integers(1, len(domain) + 1))] if rng.random() < 0.3 else domain
        weights = rng.dirichlet(np.full(len(used), 0.7))
        picks = rng.choice(len(used), size=n, p=weights)
        columns[name] = [used[i] for i in picks]
    # one class is the whole input (its shares are the input's); many make small classes,
    # of few equally frequent values
    labels = rng.integers(0, int(rng.integers(1, N_CLASSES + 1)), size=n)
    return columns, labels


def _sensitive(columns: dict[str, list[Any]]) -> Sensitive:
    """The columns as a clustering sees them: codes in value order, NULL last."""
    codes, counts = [], []
    for values in columns.values():
        domain = sorted({v for v in values if v is not None})
        if any(v is None for v in values):
            domain.append(None)
        code = {v: i for i, v in enumerate(domain)}
        c = np.array([code[v] for v in values], dtype=np.int32)
        codes.append(c)
        counts.append(np.bincount(c, minlength=len(domain)).astype(np.int64))
    return Sensitive(tuple(columns), tuple(codes), tuple(counts), (False, True))


def _sql_failing(con: duckdb.DuckDBPyConnection, criterion: Criterion, column: Column) -> set[int]:
    """The classes of release ``r`` that the criterion's SQL check says fail."""
    engine = engines.connect(con)
    reads_column = any(f.name == "column" for f in dataclasses.fields(criterion))
    model = dataclasses.replace(criterion, column=column) if reads_column else criterion
    per_class = engine.sql(model.per_class_sql("r", "t"))
    cond = engine.sql(model.violation())
    for name, value in model.params().items():
        cond = cond.replace(f"${name}", repr(float(value)))
    rows = con.execute(f"SELECT eq_class FROM ({per_class}) AS sbc_classes WHERE {cond}").fetchall()
    return {int(r[0]) for r in rows}


def _twin_ok(criterion: Criterion, counts: np.ndarray, size: int, p: np.ndarray, ordered: bool) -> bool:
    crit_i, crit_f = Rule((criterion,)).program([p])
    cnt = np.ascontiguousarray(counts, dtype=np.int64)
    return bool(kernels.column_ok(cnt, 0, len(p), size, p, ordered, crit_i, crit_f))


def _check(criterion: Criterion, table: tuple[dict[str, list[Any]], np.ndarray]) -> None:
    columns, labels = table
    con = duckdb.connect()
    con.register("t_arrow", pa.table({**columns, "eq_class": labels}))
    con.execute("CREATE TABLE t AS SELECT dx, pay FROM t_arrow")
    con.execute("CREATE TABLE r AS SELECT * FROM t_arrow")
    sens = _sensitive(columns)
    present = np.unique(labels)
    for s, column in enumerate((DX, PAY)):
        p = sens.shares(s)
        ordered = sens.ordered[s]
        failing = _sql_failing(con, criterion, column)
        counts = sens.class_counts(s, labels, N_CLASSES).astype(np.float64)
        size = np.bincount(labels, minlength=N_CLASSES).astype(np.float64)
        safe = np.where(size > 0, size, 1.0)
        many = criterion.classes_ok(counts, counts / safe[:, None], safe, p, ordered)
        looser = _looser(criterion)
        for c in present:
            one = criterion.class_ok(counts[c], int(size[c]), p, ordered)
            where = (criterion, column.name, int(c), counts[c].tolist(), p.tolist())
            assert bool(many[c]) == one, where
            assert _twin_ok(criterion, counts[c], int(size[c]), p, ordered) == one, where
            if one:
                assert c not in failing, ("the arrays accept a class the SQL refuses", *where)
            elif c not in failing:
                # a tie at the margin: a millionth looser, the arrays accept it too
                assert looser.class_ok(counts[c], int(size[c]), p, ordered), ("not a tie", *where)


SETTINGS = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


def test_every_criterion_is_registered_with_its_forms() -> None:
    """Each registered criterion names a kernel module that exists and declares its options."""
    from sbc_sql.cluster.sbca_plus.kernels import criterion_codes

    codes = criterion_codes()
    for kind in registry.registered():
        assert kind.kernel in codes, kind
        assert all(isinstance(o, Option) for o in kind.options)
    names = [o.name for o in registry.options()]
    assert len(names) == len(set(names)), "two criteria declare one option"
    assert math.isclose(kernels.MARGIN, 1e-9)


@SETTINGS
@given(data=st.data(), table=_tables())
def test_sql_arrays_and_kernels_agree(
    data: st.DataObject, table: tuple[dict[str, list[Any]], np.ndarray]
) -> None:
    for kind in registry.registered():
        _check(data.draw(_criterion(kind), label=kind.name), table)
