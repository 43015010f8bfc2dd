"""Verification must catch every kind of broken release, not only pass good ones: on each
engine that can alter a release's tables (Spark keeps a run's tables as cached views, which
take no UPDATE, INSERT or DELETE)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pytest
from helpers import EngineUnderTest, connected
from sqlglot import exp

import sbc_sql
from sbc_sql import plan as spec
from sbc_sql.stages import measure as metrics
from sbc_sql.stages import verify as verification
from sbc_sql.stages import write as generalize

ROWS = pd.DataFrame(
    {
        "id": range(12),
        "age": [20 + i for i in range(12)],
        "sex": [["F", "M"][i % 2] for i in range(12)],
        "dis": [f"d{i % 3}" for i in range(12)],
    }
)
TYPES = {"id": "INTEGER", "age": "INTEGER", "sex": "VARCHAR", "dis": "VARCHAR"}
READ_ONLY = pytest.mark.notimpl(
    ["spark"], reason="Spark keeps a run's tables as cached views, which take no UPDATE, INSERT or DELETE"
)


@dataclass
class Built:
    """A release of t built from hand-made labels: the engine, its database, the layout and
    the source's row ids in their order."""

    engine: EngineUnderTest
    database: Any
    layout: metrics.Layout
    row_ids: list[int]

    def sql(self, text: str) -> list[tuple]:
        return self.engine.sql(self.database, text)

    def label(self, row_ids, classes) -> None:
        """The labels table labs, made again: each row id with its class."""
        self.sql("DROP TABLE IF EXISTS labs")
        frame = pd.DataFrame({"row_id": list(row_ids), "eq_class": list(classes)})
        self.engine.table(self.database, "labs", frame, {"row_id": "BIGINT", "eq_class": "INTEGER"})


@pytest.fixture
def built(engine: EngineUnderTest) -> Built:
    """A release built from hand-made labels (3 classes of 4), with the labels kept: class
    table cls, row table rws and the release view rel over them."""
    database = engine.frame(ROWS, TYPES)
    with connected(database) as eng:
        info = eng.open_source("t")
        plan = spec.make_plan(info, spec.Options(k=4, qi=("age", "sex"), sensitive=("dis",), drop=("id",)))
        row_id = eng.row_id("s")
        ids = [r[0] for r in eng.fetch_all(exp.select(row_id).from_("t AS s").order_by(row_id))]
    built = Built(engine, database, metrics.Layout(plan.qis, plan.verbatim, plan.weights), ids)
    built.label(ids, np.arange(12) // 4)
    with connected(database) as eng:
        eng.execute(generalize.create_classes_sql(plan, "cls", "labs", eng.row_id("s")))
        eng.execute(generalize.create_rows_sql(plan, "rws", "labs", eng.row_id("s")))
        eng.execute(generalize.create_release_view_sql(plan, "rel", "rws", "cls"))
    return built


@pytest.mark.notimpl(
    ["spark"], reason="the built fixture reads the row ids of 't', which Spark gives a run's input only"
)
def test_verification_alone_makes_its_labelled_source_and_drops_it(built: Built) -> None:
    """Without a run's labelled source, verify_with_labels makes one for its checks (they
    read it, none joins the source to the labels again) and drops it."""
    with connected(built.database) as eng:
        assert verification.verify_with_labels(eng, built.layout, "t", "labs", "rws", "cls", 4).ok
        made = verification.labelled_name("labs")
        # made, read by the class checks, the label coverage and the rows' comparison, dropped
        assert sum(made in s for s in eng.statements()) == 5
        assert sum("labs" in s.replace(made, "") for s in eng.statements()) == 1
        assert not eng.table_exists(made)


def check(built: Built, k: int = 4) -> verification.Verdict:
    with connected(built.database) as eng:
        return verification.verify_with_labels(eng, built.layout, "t", "labs", "rws", "cls", k)


@READ_ONLY
def test_a_good_release_passes(built):
    verdict = check(built)
    assert verdict.ok, verdict.problems
    assert verdict.facts["classes"] == 3 and verdict.facts["smallest_class"] == 4


@READ_ONLY
def test_a_class_below_k_fails(built):
    assert not check(built, k=5).ok


@READ_ONLY
def test_a_value_outside_its_range_fails(built):
    built.sql("UPDATE cls SET age_max = age_max - 1 WHERE eq_class = 1")
    verdict = check(built)
    assert verdict.facts["outside"] == 1
    assert any("outside" in p for p in verdict.problems)


@READ_ONLY
def test_a_value_missing_from_its_set_fails(built):
    built.sql("UPDATE cls SET sex = ['F'] WHERE eq_class = 2")
    verdict = check(built)
    assert verdict.facts["outside"] == 2


@READ_ONLY
def test_a_class_with_two_tuples_fails(built):
    # the view would show class 0's rows twice, once with each tuple
    built.sql(
        "INSERT INTO cls SELECT eq_class, class_size, age_min - 1, age_max, age_has_null, "
        "sex FROM cls WHERE eq_class = 0"
    )
    verdict = check(built)
    assert verdict.facts["mixed_classes"] == 1
    assert not verdict.ok


@READ_ONLY
def test_a_class_missing_from_the_class_table_fails(built):
    # the view's join would drop its rows; each of its 4 rows has its age and its sex outside
    built.sql("DELETE FROM cls WHERE eq_class = 1")
    verdict = check(built)
    assert (verdict.facts["unmatched_classes"], verdict.facts["outside"]) == (1, 8)
    assert not verdict.ok


@READ_ONLY
def test_a_wrong_stored_class_size_fails(built):
    built.sql("UPDATE cls SET class_size = 5 WHERE eq_class = 0")
    verdict = check(built)
    assert verdict.facts["unmatched_classes"] == 1
    assert any("another size" in p for p in verdict.problems)


@READ_ONLY
def test_measures_of_the_class_table_equal_those_of_the_view(built):
    # the pipeline measures the class table, each row weighted by its size
    with connected(built.database) as eng:
        by_class = metrics.measure_tables(eng, built.layout, "t", "cls", size_column="class_size")
        by_row = metrics.measure_tables(eng, built.layout, "t", "rel")
    assert by_class.ncp == pytest.approx(by_row.ncp, rel=1e-12)
    assert by_class.total_ncp == pytest.approx(by_row.total_ncp, rel=1e-12)
    assert (by_class.released, by_class.classes, by_class.smallest) == (12, 3, 4)


@READ_ONLY
def test_a_lost_row_fails(built):
    built.engine.rewrite(built.database, "rws", lambda rows: rows.iloc[1:])
    verdict = check(built)
    assert verdict.facts["missing"] == 1
    assert not verdict.ok


@READ_ONLY
def test_a_changed_sensitive_value_fails(built):
    built.engine.rewrite(built.database, "rws", lambda rows: rows.assign(dis=["other", *rows["dis"][1:]]))
    verdict = check(built)
    assert (verdict.facts["missing"], verdict.facts["extra"]) == (1, 1)


@READ_ONLY
def test_a_duplicated_row_fails(built):
    built.engine.rewrite(built.database, "rws", lambda rows: pd.concat([rows, rows.iloc[:1]]))
    verdict = check(built)
    assert (verdict.facts["missing"], verdict.facts["extra"]) == (0, 1)
    assert not verdict.ok


@READ_ONLY
def test_verify_of_a_pair_catches_an_uncovered_row(built):
    assert sbc_sql.verify(built.database, "t", "rel", 4).ok
    built.sql("UPDATE cls SET age_min = age_min + 1 WHERE eq_class = 0")
    assert not sbc_sql.verify(built.database, "t", "rel", 4).ok


@pytest.mark.parametrize("value", ["list_append(sex, 'X')", "list_append(sex, NULL)", "NULL"])
@READ_ONLY
def test_a_flat_release_with_two_value_sets_in_a_class_fails(built, value):
    # a release from elsewhere, one table with a row per released row: value-set columns
    # are compared by a distinct count, NULL lists by the NULL count
    built.sql("CREATE TABLE flat AS SELECT * FROM rel")
    assert sbc_sql.verify(built.database, "t", "flat", 4).ok
    built.sql(f"UPDATE flat SET sex = {value} WHERE eq_class = 0 AND dis = 'd0'")
    verdict = sbc_sql.verify(built.database, "t", "flat", 4)
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
@READ_ONLY
def test_each_source_row_must_be_labelled_exactly_once(built, row_ids, says) -> None:
    # labels keep their classes (the class and row tables stay those of the good labels);
    # only which source row each label names is broken (a row id given as the row's
    # position; 99, one past the last row id, names no row)
    classes = [*(np.arange(12) // 4), 2][: len(row_ids)]
    beyond = max(built.row_ids) + 1
    built.label([beyond if i == 99 else built.row_ids[i] for i in row_ids], classes)
    verdict = check(built)
    assert not verdict.ok
    assert any(says in p and "each row must be labelled once" in p for p in verdict.problems), (
        verdict.problems
    )
