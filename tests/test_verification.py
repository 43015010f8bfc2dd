"""Verification must catch every kind of broken release, not only pass good ones."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import sbc_sql
from sbc_sql import engines
from sbc_sql import plan as spec
from sbc_sql.stages import measure as metrics
from sbc_sql.stages import verify as verification
from sbc_sql.stages import write as generalize

ROWS = [(i, 20 + i, ["F", "M"][i % 2], f"d{i % 3}") for i in range(12)]


@pytest.fixture
def built():
    """A release built from hand-made labels (3 classes of 4), with the labels kept: class
    table cls, row table rws and the release view rel over them."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t (id INTEGER, age INTEGER, sex VARCHAR, dis VARCHAR)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", ROWS)
    engine = engines.connect(con)
    info = engine.open_source("t")
    plan = spec.make_plan(info, spec.Options(k=4, qi=("age", "sex"), sensitive=("dis",), drop=("id",)))
    row_id = con.execute("SELECT rowid FROM t").fetchnumpy()["rowid"]
    labels = pa.table({"row_id": row_id, "eq_class": np.arange(12) // 4})
    con.register("labs", labels)
    engine.execute(generalize.create_classes_sql(plan, "cls", "labs", engine.row_id("s")))
    engine.execute(generalize.create_rows_sql(plan, "rws", "labs", engine.row_id("s")))
    engine.execute(generalize.create_release_view_sql(plan, "rel", "rws", "cls"))
    layout = metrics.Layout(plan.qis, plan.verbatim, plan.weights)
    return con, layout


def check(con, layout, k=4):
    return verification.verify_with_labels(engines.connect(con), layout, "t", "labs", "rws", "cls", k)


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
    con.execute("UPDATE cls SET age_max = age_max - 1 WHERE eq_class = 1")
    verdict = check(con, layout)
    assert verdict.facts["outside"] == 1
    assert any("outside" in p for p in verdict.problems)


def test_a_value_missing_from_its_set_fails(built):
    con, layout = built
    con.execute("UPDATE cls SET sex = ['F'] WHERE eq_class = 2")
    verdict = check(con, layout)
    assert verdict.facts["outside"] == 2


def test_a_class_with_two_tuples_fails(built):
    # the view would show class 0's rows twice, once with each tuple
    con, layout = built
    con.execute(
        "INSERT INTO cls SELECT eq_class, class_size, age_min - 1, age_max, age_has_null, "
        "sex FROM cls WHERE eq_class = 0"
    )
    verdict = check(con, layout)
    assert verdict.facts["mixed_classes"] == 1
    assert not verdict.ok


def test_a_class_missing_from_the_class_table_fails(built):
    # the view's join would drop its rows; each of its 4 rows has its age and its sex outside
    con, layout = built
    con.execute("DELETE FROM cls WHERE eq_class = 1")
    verdict = check(con, layout)
    assert (verdict.facts["unmatched_classes"], verdict.facts["outside"]) == (1, 8)
    assert not verdict.ok


def test_a_wrong_stored_class_size_fails(built):
    con, layout = built
    con.execute("UPDATE cls SET class_size = 5 WHERE eq_class = 0")
    verdict = check(con, layout)
    assert verdict.facts["unmatched_classes"] == 1
    assert any("another size" in p for p in verdict.problems)


def test_measures_of_the_class_table_equal_those_of_the_view(built):
    # the pipeline measures the class table, each row weighted by its size
    con, layout = built
    by_class = metrics.measure_tables(engines.connect(con), layout, "t", "cls", size_column="class_size")
    by_row = metrics.measure_tables(engines.connect(con), layout, "t", "rel")
    assert by_class.ncp == pytest.approx(by_row.ncp, rel=1e-12)
    assert by_class.total_ncp == pytest.approx(by_row.total_ncp, rel=1e-12)
    assert (by_class.released, by_class.classes, by_class.smallest) == (12, 3, 4)


def test_a_lost_row_fails(built):
    con, layout = built
    con.execute("DELETE FROM rws WHERE rowid = (SELECT MIN(rowid) FROM rws)")
    verdict = check(con, layout)
    assert verdict.facts["missing"] == 1
    assert not verdict.ok


def test_a_changed_sensitive_value_fails(built):
    con, layout = built
    con.execute("UPDATE rws SET dis = 'other' WHERE rowid = (SELECT MIN(rowid) FROM rws)")
    verdict = check(con, layout)
    assert (verdict.facts["missing"], verdict.facts["extra"]) == (1, 1)


def test_a_duplicated_row_fails(built):
    con, layout = built
    con.execute("INSERT INTO rws SELECT * FROM rws WHERE rowid = (SELECT MIN(rowid) FROM rws)")
    verdict = check(con, layout)
    assert (verdict.facts["missing"], verdict.facts["extra"]) == (0, 1)
    assert not verdict.ok


def test_verify_of_a_pair_catches_an_uncovered_row(built):
    con, _ = built
    assert sbc_sql.verify(con, "t", "rel", 4).ok
    con.execute("UPDATE cls SET age_min = age_min + 1 WHERE eq_class = 0")
    assert not sbc_sql.verify(con, "t", "rel", 4).ok


@pytest.mark.parametrize("value", ["list_append(sex, 'X')", "list_append(sex, NULL)", "NULL"])
def test_a_flat_release_with_two_value_sets_in_a_class_fails(built, value):
    # a release from elsewhere, one table with a row per released row: value-set columns
    # are compared by a distinct count, NULL lists by the NULL count
    con, _ = built
    con.execute("CREATE TABLE flat AS SELECT * FROM rel")
    assert sbc_sql.verify(con, "t", "flat", 4).ok
    con.execute(f"UPDATE flat SET sex = {value} WHERE eq_class = 0 AND dis = 'd0'")
    verdict = sbc_sql.verify(con, "t", "flat", 4)
    assert verdict.facts["mixed_classes"] == 1


@pytest.mark.parametrize(
    ("row_ids", "says"),
    [
        # row 1 labelled twice, row 0 not at all: as many labels as rows
        ([1, 1, *range(2, 12)], "(0 naming no source row, 1 source rows unlabelled)"),
        # a label naming a row the source lacks, row 0 not labelled
        ([99, *range(1, 12)], "(1 naming no source row, 1 source rows unlabelled)"),
        # one label too many: row 5 twice
        ([*range(12), 5], "12 source rows but 13 labels (0 naming no source row, 0 source rows"),
    ],
)
def test_each_source_row_must_be_labelled_exactly_once(built, row_ids, says) -> None:
    # labels keep their classes (the class and row tables stay those of the good labels);
    # only which source row each label names is broken
    con, layout = built
    classes = [*(np.arange(12) // 4), 2][: len(row_ids)]
    con.register("labs", pa.table({"row_id": np.array(row_ids), "eq_class": np.array(classes)}))
    verdict = check(con, layout)
    assert not verdict.ok
    assert any(says in p and "each row must be labelled once" in p for p in verdict.problems), (
        verdict.problems
    )
