"""SBC's categorical similarity, checked by hand on the paper's 20-row example.

Sex x Nationality contingency table (the SBC paper's Fig. 3 / Table 2):

            Japan  USA  Iran
    Male      4     4     1     (9 rows)
    Female    4     1     6     (11 rows)
    all       8     5     7

Sex has cardinality 2, so it comes first and Nationality's predecessor is Sex. The first
tuple is Male/Japan. Codes are chosen so that this tuple also sorts first:
Male = 0, Female = 1; Japan = 0, USA = 1, Iran = 2.
"""

from __future__ import annotations

import numpy as np
import pytest

from sbc_sql.cluster.model import QIData
from sbc_sql.cluster.sbca_paper import sbca
from sbc_sql.cluster.similarity import Contingency, rank_distances, similarity_order

MALE, FEMALE = 0, 1
JAPAN, USA, IRAN = 0, 1, 2
SEX, NAT = 0, 1

# (sex, nationality, count) in the paper's order: the first tuple is Male/Japan
CELLS = [
    (MALE, JAPAN, 4),
    (MALE, USA, 4),
    (MALE, IRAN, 1),
    (FEMALE, JAPAN, 4),
    (FEMALE, USA, 1),
    (FEMALE, IRAN, 6),
]


def paper_data(weights: tuple[float, float] = (1.0, 1.0)) -> QIData:
    sex = np.array([s for s, _, c in CELLS for _ in range(c)], dtype=np.int32)
    nat = np.array([n for _, n, c in CELLS for _ in range(c)], dtype=np.int32)
    return QIData(
        names=("sex", "nationality"),
        numeric=(False, False),
        columns=(sex, nat),
        lo=(float("nan"),) * 2,
        hi=(float("nan"),) * 2,
        cardinality=(2, 3),
        weights=weights,
    )


def rows_of(data: QIData, sex: int, nat: int) -> set[int]:
    return set(np.flatnonzero((data.columns[SEX] == sex) & (data.columns[NAT] == nat)).tolist())


def test_paper_table_is_the_contingency():
    data = paper_data()
    assert data.n_rows == 20
    cont = Contingency(data)
    assert cont.order == [SEX, NAT]
    assert cont.predecessor == {NAT: SEX}
    assert cont.pair[(SEX, NAT)].tolist() == [[4, 4, 1], [4, 1, 6]]
    assert cont.counts[NAT].tolist() == [8, 5, 7]
    assert cont.counts[SEX].tolist() == [9, 11]


def test_k3_orders_japan_usa_iran():
    # the Male row holds 9 >= 3 rows: P = 4/9, 4/9, 1/9; |P - P(Japan)| = 0, 0, 3/9
    table = Contingency(paper_data()).distance_table(NAT, {SEX: MALE, NAT: JAPAN}, k=3)
    assert table[[JAPAN, USA, IRAN]].tolist() == pytest.approx([0.0, 0.5, 1.0])


def test_k10_widens_the_male_row_and_orders_japan_iran_usa():
    # 9 Male rows < k = 10: use all rows, P = 8/20, 5/20, 7/20; |P - P(Japan)| = 0, 3/20, 1/20
    table = Contingency(paper_data()).distance_table(NAT, {SEX: MALE, NAT: JAPAN}, k=10)
    assert table[[JAPAN, IRAN, USA]].tolist() == pytest.approx([0.0, 0.5, 1.0])


def test_widening_starts_exactly_below_k():
    cont = Contingency(paper_data())
    seed = {SEX: MALE, NAT: JAPAN}
    assert cont.distance_table(NAT, seed, k=9)[USA] == pytest.approx(0.5)
    assert cont.distance_table(NAT, seed, k=10)[USA] == pytest.approx(1.0)


def test_female_seed_uses_its_own_row():
    # Female: Japan 4, USA 1, Iran 6 (11 rows >= 10); from Iran: Japan 2/11 away, USA 5/11
    table = Contingency(paper_data()).distance_table(NAT, {SEX: FEMALE, NAT: IRAN}, k=10)
    assert table[[IRAN, JAPAN, USA]].tolist() == pytest.approx([0.0, 0.5, 1.0])


def test_cardinality_two_is_equal_or_not():
    table = Contingency(paper_data()).distance_table(SEX, {SEX: FEMALE, NAT: JAPAN}, k=3)
    assert table.tolist() == [1.0, 0.0]


def test_first_categorical_above_two_uses_its_own_counts():
    # nationality alone: counts Japan 8, USA 5, Iran 7; from USA: Iran |7-5| = 2, Japan 3
    data = paper_data()
    alone = QIData(
        names=("nationality",),
        numeric=(False,),
        columns=(data.columns[NAT],),
        lo=(float("nan"),),
        hi=(float("nan"),),
        cardinality=(3,),
        weights=(1.0,),
    )
    table = Contingency(alone).distance_table(0, {0: USA}, k=3)
    assert table[[USA, IRAN, JAPAN]].tolist() == pytest.approx([0.0, 0.5, 1.0])


def test_ties_go_by_value_order_and_the_seed_is_first():
    key = np.array([0.2, 0.0, 0.2, 0.0])
    assert similarity_order(key, 1) == [1, 3, 0, 2]
    assert similarity_order(key, 2) == [2, 1, 3, 0]
    assert rank_distances(key, 2).tolist() == pytest.approx([1.0, 1 / 3, 0.0, 2 / 3])


def test_remove_updates_the_counts():
    data = paper_data()
    cont = Contingency(data)
    male_japan = np.array(sorted(rows_of(data, MALE, JAPAN)))
    cont.remove(data, male_japan)
    assert cont.pair[(SEX, NAT)].tolist() == [[0, 4, 1], [4, 1, 6]]
    assert cont.counts[NAT].tolist() == [4, 5, 7]
    # 5 Male rows left, fewer than k = 6: widen to (Japan 4, USA 5, Iran 7); from USA,
    # Iran is 2/16 away and Japan 1/16
    table = cont.distance_table(NAT, {SEX: MALE, NAT: USA}, k=6)
    assert table[[USA, JAPAN, IRAN]].tolist() == pytest.approx([0.0, 0.5, 1.0])


def test_sbca_first_class_holds_the_seed_k3():
    data = paper_data()
    labels = sbca(data, 3)
    assert labels[0] == 0
    assert set(np.flatnonzero(labels == 0).tolist()) == {0, 1, 2}


def test_sbca_first_class_follows_japan_usa_iran_k6():
    # from Male/Japan: Male/Japan 0, Male/USA 0.5, Male/Iran and Female/Japan 1, ...
    data = paper_data()
    labels = sbca(data, 6)
    first = set(np.flatnonzero(labels == labels[0]).tolist())
    male_usa = sorted(rows_of(data, MALE, USA))
    assert first == rows_of(data, MALE, JAPAN) | set(male_usa[:2])


def test_sbca_first_class_follows_the_widened_order_k10():
    # with Sex weighted 0 only Nationality counts: Japan 0 (8 rows), Iran 0.5, USA 1, so the
    # first class is the 8 Japan rows and the 2 Iran rows first in sort order (Male/Iran,
    # then the first Female/Iran); the unwidened order would take 2 USA rows instead
    data = paper_data(weights=(0.0, 1.0))
    labels = sbca(data, 10)
    first = set(np.flatnonzero(labels == labels[0]).tolist())
    japan = rows_of(data, MALE, JAPAN) | rows_of(data, FEMALE, JAPAN)
    iran = sorted(rows_of(data, MALE, IRAN)) + sorted(rows_of(data, FEMALE, IRAN))
    assert labels[0] == 0
    assert first == japan | set(iran[:2])


@pytest.mark.parametrize("k", [2, 3, 4, 5, 6, 7, 10])
def test_sbca_on_the_paper_table_forms_classes_of_k(k):
    labels = sbca(paper_data(), k)
    sizes = np.bincount(labels[labels >= 0])
    assert len(sizes) == 20 // k
    assert sizes.min() >= k
    assert sizes.sum() == 20
