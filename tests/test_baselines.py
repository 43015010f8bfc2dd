"""Baselines (Mondrian, k-member, Datafly, Incognito): k-anonymity properties and hand checks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import baseline_tables as tables
from strategies import data_from_lists as make_data

from sbc_sql.cluster.baselines.fulldomain import (
    Hierarchy,
    datafly,
    default_hierarchy,
    hierarchy_from_csv,
    incognito,
    interval_hierarchy,
    minimal_nodes,
    nice_ceil,
    paper_age_hierarchy,
)
from sbc_sql.cluster.baselines.kmember import greedy_numpy, kernel_arrays, kmember
from sbc_sql.cluster.baselines.mondrian import mondrian
from sbc_sql.cluster.model import QIData
from sbc_sql.cluster.ncp import total_ncp
from sbc_sql.errors import InputError

try:
    import numba  # noqa: F401

    HAS_NUMBA = True
except ImportError:
    HAS_NUMBA = False


def check_release(labels: np.ndarray, n: int, k: int, max_suppressed: float) -> None:
    """One label per row, dense class ids, every class >= k, suppression within bounds."""
    assert labels.shape == (n,) and labels.dtype == np.int64
    kept = labels[labels >= 0]
    assert (labels >= -1).all()
    if len(kept):
        sizes = np.bincount(kept)
        assert (sizes >= k).all()
    suppressed = int((labels < 0).sum())
    if n < k:
        assert suppressed == n
    else:
        assert suppressed <= max_suppressed


PROPERTY = settings(max_examples=40, deadline=None)


@PROPERTY
@given(tables())
def test_mondrian_properties(table: tuple[QIData, int]) -> None:
    data, k = table
    labels = mondrian(data, k)
    check_release(labels, data.n_rows, k, 0)
    assert (mondrian(data, k) == labels).all()


@PROPERTY
@given(tables())
def test_kmember_properties(table: tuple[QIData, int]) -> None:
    data, k = table
    labels = kmember(data, k)
    check_release(labels, data.n_rows, k, 0)
    assert (kmember(data, k) == labels).all()
    assert (kmember(data, k, engine="numpy") == labels).all()


@PROPERTY
@given(tables(), st.sampled_from([0.0, 0.05, 0.2]))
def test_fulldomain_properties(table: tuple[QIData, int], budget: float) -> None:
    data, k = table
    for algorithm in (datafly, incognito):
        labels = algorithm(data, k, max_suppression=budget)
        check_release(labels, data.n_rows, k, budget * data.n_rows)
        assert (algorithm(data, k, max_suppression=budget) == labels).all()


def classes(labels: np.ndarray, values: list) -> list[set]:
    """The classes as sets of values, in class id order."""
    return [{values[i] for i in np.flatnonzero(labels == c)} for c in range(labels.max() + 1)]


def test_mondrian_cuts_at_the_lower_median() -> None:
    values = [1, 2, 3, 4, 5, 6, 7, 8]
    labels = mondrian(make_data([values], []), 2)
    assert classes(labels, values) == [{1, 2}, {3, 4}, {5, 6}, {7, 8}]


def test_mondrian_sorts_null_after_numbers() -> None:
    values = [None, 2.0, None, 1.0]
    labels = mondrian(make_data([values], []), 2)
    assert classes(labels, values) == [{None}, {1.0, 2.0}]


def test_mondrian_needs_k_rows() -> None:
    assert (mondrian(make_data([[1.0, 2.0]], []), 3) == -1).all()


def test_kmember_grows_from_the_farthest_row() -> None:
    # r = 0 (first in sort order); the farthest is 12, which gathers 11 and 10; r = 10,
    # the farthest left is 0, which gathers 1 and 2; 5 raises {0,1,2}'s loss by 14/12 and
    # {10,11,12}'s by 22/12
    values = [0.0, 1.0, 2.0, 10.0, 11.0, 12.0, 5.0]
    labels = kmember(make_data([values], []), 3)
    assert classes(labels, values) == [{10.0, 11.0, 12.0}, {0.0, 1.0, 2.0, 5.0}]


@pytest.mark.skipif(not HAS_NUMBA, reason="numba not installed")
def test_kmember_engines_agree() -> None:
    rng = np.random.default_rng(7)
    age = [float(v) if v >= 0 else None for v in rng.integers(-2, 40, 300)]
    data = make_data([age], [list(rng.integers(0, 3, 300)), list(rng.integers(0, 6, 300))])
    arrays = kernel_arrays(data, data.sort_order())
    labels = kmember(data, 7, engine="numba")
    assert (kmember(data, 7, engine="numpy") == labels).all()
    # clusters take k rows each while k remain: n mod k rows are left over
    assert (greedy_numpy(*arrays, 7) < 0).sum() == 300 % 7


def hand_table() -> QIData:
    """Ages 1,2,1,2,11,11 and sexes M,M,F,F,M,M (F=0, M=1)."""
    return make_data([[1.0, 2.0, 1.0, 2.0, 11.0, 11.0]], [[1, 1, 0, 0, 1, 1]])


def test_incognito_picks_the_minimal_node_with_least_ncp() -> None:
    # Minimal 2-anonymous nodes: (age, sex*) with NCP (0 + 4/6) / 2 = 1/3, found first, and
    # (age by decade, sex) with NCP (0.1 * 4 / 6 + 0) / 2 = 1/30.
    data = hand_table()
    hier = [interval_hierarchy(data, 0, [[(0, 10), (10, 20)]]), default_hierarchy(data, 1)]
    domain = [h.codes(data, q) for q, h in enumerate(hier)]
    assert minimal_nodes(data, hier, domain, 2, 0.0) == [(0, 1), (1, 0)]
    labels = incognito(data, 2, hier, max_suppression=0.0)
    assert labels.tolist() == [0, 0, 1, 1, 2, 2]
    assert total_ncp(data, labels) == pytest.approx(1 / 30)


def test_datafly_generalizes_the_qi_with_most_values_and_suppresses() -> None:
    # age has more distinct values than sex, so it goes to decades first; then only the
    # age 50 row is alone, within the budget of 0.2 * 7 rows
    data = make_data([[1.0, 2.0, 1.0, 2.0, 11.0, 11.0, 50.0]], [[1, 1, 0, 0, 1, 1, 0]])
    hier = [interval_hierarchy(data, 0, [[(0, 10), (10, 20)]]), None]
    labels = datafly(data, 2, hier, max_suppression=0.2)
    assert labels.tolist() == [0, 0, 1, 1, 2, 2, -1]
    assert (datafly(data, 2, hier, max_suppression=0.0) >= 0).all()


def test_default_numeric_hierarchy_doubles_and_keeps_null_apart() -> None:
    # span 63: width 1 (the identity, dropped), then 2, 4, ..., 32, and 64 is one group,
    # the only level where NULL (the last code) joins the numbers
    h = default_hierarchy(make_data([[0.0, 1.0, 3.0, 7.0, 15.0, 31.0, 63.0, None]], []), 0)
    assert h.height == 6
    assert h.levels[1].tolist() == [0, 0, 1, 2, 3, 4, 5, 6]
    assert h.levels[2].tolist() == [0, 0, 0, 1, 2, 3, 4, 5]
    assert h.levels[5].tolist() == [0, 0, 0, 0, 0, 0, 1, 2]
    assert (h.levels[6] == 0).all()
    assert [nice_ceil(x) for x in (100 / 64, 3.1, 7.0, 10.0)] == [2.0, 5.0, 10.0, 10.0]


def test_paper_age_hierarchy_levels() -> None:
    data = make_data([[5.0, 7.0, 15.0, 25.0, 55.0, 85.0, None]], [])
    h = paper_age_hierarchy(data, 0)
    assert h.height == 4
    assert h.levels[1].tolist() == [0, 0, 1, 2, 3, 4, 5]
    assert h.levels[2].tolist() == [0, 0, 0, 1, 2, 3, 4]
    assert h.levels[3].tolist() == [0, 0, 0, 0, 1, 1, 2]
    assert (h.levels[4] == 0).all()
    assert h.codes(data, 0).tolist() == [0, 1, 2, 3, 4, 5, 6]


def test_hierarchy_from_csv(tmp_path) -> None:
    path = tmp_path / "h.csv"
    path.write_text("a;x;*\nb;x;*\nc;y;*\n", encoding="utf-8")
    h = hierarchy_from_csv(path, ["a", "b", "c", None, "d"])
    assert h.levels.tolist() == [[0, 1, 2, 3, 4], [0, 0, 1, 2, 3], [0, 0, 0, 0, 0]]
    comma = tmp_path / "c.csv"
    comma.write_text("x,g\ny,g\nz,h\n", encoding="utf-8")
    h2 = hierarchy_from_csv(comma, ["z", "x", "y"])
    assert h2.levels.tolist() == [[0, 1, 2], [0, 1, 1], [0, 0, 0]]
    ragged = tmp_path / "r.csv"
    ragged.write_text("a;x;*\nb;*\n", encoding="utf-8")
    with pytest.raises(InputError):
        hierarchy_from_csv(ragged, ["a", "b"])


def test_hierarchy_levels_must_nest() -> None:
    with pytest.raises(InputError):
        Hierarchy(np.array([[0, 1, 2], [0, 0, 1], [0, 1, 1], [0, 0, 0]]))
