"""Verification must catch every kind of broken release, not only pass good ones."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import sbc_sql
from sbc_sql import db, generalize, metrics, spec, verification

ROWS = [(i, 20 + i, ["F", "M"][i % 2], f"d{i % 3}") for i in range(12)]


@pytest.fixture
def built():
    """A release built from hand-made labels (3 classes of 4), with the labels kept."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t (id INTEGER, age INTEGER, sex VARCHAR, dis VARCHAR)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", ROWS)
    info = db.open_source(con, "t")
    plan = spec.make_plan(info, spec.Options(k=4, qi=("age", "sex"), sensitive=("dis",),
                                             drop=("id",)))
    row_id = con.execute("SELECT rowid FROM t").fetchnumpy()["rowid"]
    labels = pa.table({"row_id": row_id, "eq_class": np.arange(12) // 4})
    con.register("labs", labels)
    db.execute(con, generalize.create_release_sql(plan, "rel", "labs"))
    layout = metrics.Layout(plan.qis, plan.verbatim, plan.weights)
    return con, layout


def check(con, layout, k=4):
    return verification.verify_with_labels(con, layout, "t", "labs", "rel", k)


def test_a_good_release_passes(built):
    con, layout = built
    verdict = check(con, layout)
    assert verdict.ok, verdict.problems
    assert verdict.facts["classes"] == 3 and verdict.facts["smallest_class"] == 4


def test_a_class_below_k_fails(built):
    con, layout = built
    assert not check(con, layout, k=5).ok


def test_a_value_outside_its_range_fails(built):
    con, layout = built
    con.execute("UPDATE rel SET age_max = age_max - 1 WHERE eq_class = 1")
    verdict = check(con, layout)
    assert verdict.facts["outside"] == 1
    assert any("outside" in p for p in verdict.problems)


def test_a_value_missing_from_its_set_fails(built):
    con, layout = built
    con.execute("UPDATE rel SET sex = ['F'] WHERE eq_class = 2")
    verdict = check(con, layout)
    assert verdict.facts["outside"] == 2


def test_a_class_with_two_tuples_fails(built):
    con, layout = built
    con.execute("UPDATE rel SET age_min = age_min - 1 WHERE eq_class = 0 AND dis = 'd0'")
    verdict = check(con, layout)
    assert verdict.facts["mixed_classes"] == 1


@pytest.mark.parametrize("value", ["list_append(sex, 'X')", "list_append(sex, NULL)", "NULL"])
def test_a_class_with_two_value_sets_fails(built, value):
    # value-set columns are compared by a distinct count, NULL lists by the NULL count
    con, layout = built
    con.execute(f"UPDATE rel SET sex = {value} WHERE eq_class = 0 AND dis = 'd0'")
    verdict = check(con, layout)
    assert verdict.facts["mixed_classes"] == 1


def test_a_lost_row_fails(built):
    con, layout = built
    con.execute("DELETE FROM rel WHERE rowid = (SELECT MIN(rowid) FROM rel)")
    verdict = check(con, layout)
    assert verdict.facts["missing"] == 1
    assert not verdict.ok


def test_a_changed_sensitive_value_fails(built):
    con, layout = built
    con.execute("UPDATE rel SET dis = 'other' WHERE rowid = (SELECT MIN(rowid) FROM rel)")
    verdict = check(con, layout)
    assert (verdict.facts["missing"], verdict.facts["extra"]) == (1, 1)


def test_a_duplicated_row_fails(built):
    con, layout = built
    con.execute("INSERT INTO rel SELECT * FROM rel WHERE rowid = (SELECT MIN(rowid) FROM rel)")
    verdict = check(con, layout)
    assert (verdict.facts["missing"], verdict.facts["extra"]) == (0, 1)
    assert not verdict.ok


def test_verify_of_a_pair_catches_an_uncovered_row(built):
    con, _ = built
    assert sbc_sql.verify(con, "t", "rel", 4).ok
    con.execute("UPDATE rel SET age_min = age_min + 1, age_max = age_max WHERE eq_class = 0")
    assert not sbc_sql.verify(con, "t", "rel", 4).ok
