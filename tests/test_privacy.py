"""The privacy-model seam: each model's violation check and measure over hand-made releases,
the measures against the figures evaluate() reported before they moved into models, and
verification reading the models."""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from test_evaluate import ORIGINAL, make_original, make_release, random_case

from sbc_sql import engines
from sbc_sql import plan as spec
from sbc_sql.model import Column
from sbc_sql.privacy import BetaLikeness, KAnonymity, LDiversity, TCloseness, check_all
from sbc_sql.quality.evaluate import evaluate
from sbc_sql.stages import measure as metrics
from sbc_sql.stages import verify as verification
from sbc_sql.stages import write as generalize

DISEASE = Column("disease", "VARCHAR", "sensitive")
SALARY = Column("salary", "INTEGER", "sensitive", kind="numeric")


@pytest.fixture
def con():
    connection = duckdb.connect()
    yield connection
    connection.close()


def hand(con) -> None:
    """tests/test_evaluate.py's hand tables: two classes of three; class 0 flu, flu, cold,
    class 1 flu, cancer, cold; input shares flu 1/2, cold 1/3, cancer 1/6."""
    make_original(con, ORIGINAL)
    make_release(con, "t", [0, 0, 0, 1, 1, 1])


# ---------------------------------------------------------------------------------------
# k-anonymity


def test_k_model_finds_a_class_of_k_minus_one_rows(con):
    k = 4
    # classes of 4, 4 and 3 (= k - 1) rows
    con.execute(
        "CREATE TABLE r AS SELECT CASE WHEN i < 4 THEN 0 WHEN i < 8 THEN 1 ELSE 2 END AS eq_class, "
        "i AS x FROM range(11) t(i)"
    )
    model = KAnonymity(k)
    sql = engines.connect(con).sql(model.violations_sql("r"))
    assert "$k" in sql and "4" not in sql  # k is a bound parameter
    assert engines.connect(con).fetch_one(model.violations_sql("r"), model.params()) == (1, 3)
    assert model.check(engines.connect(con), "r") == ["the smallest class has 3 rows, below k=4"]
    assert KAnonymity(3).check(engines.connect(con), "r") == []
    assert model.measure(engines.connect(con), "r") == {"smallest_class": 3}
    assert model.min_class_size == 4


def test_k_model_passes_an_empty_release(con):
    con.execute("CREATE TABLE r (eq_class BIGINT, x INTEGER)")
    assert KAnonymity(5).check(engines.connect(con), "r") == []


def test_verification_reads_the_k_model_with_the_same_words(built_release):
    con, layout = built_release
    verdict = verification.verify_with_labels(engines.connect(con), layout, "t", "labs", "rws", "cls", 5)
    assert verdict.problems == ("the smallest class has 4 rows, below k=5",)
    pair = verification.verify_pair(engines.connect(con), layout, "t", "rel", 5)
    assert pair.problems == ("the smallest class has 4 rows, below k=5",)
    assert verification.verify_with_labels(engines.connect(con), layout, "t", "labs", "rws", "cls", 4).ok


def test_a_release_passes_only_if_no_model_reports_a_violation(built_release):
    con, layout = built_release
    dis = Column("dis", "VARCHAR", "sensitive")
    # classes of four rows over d0, d1, d2: three distinct values in each
    models = (KAnonymity(4), LDiversity(dis, l=3))
    assert verification.verify_with_labels(
        engines.connect(con), layout, "t", "labs", "rws", "cls", 4, models
    ).ok
    models = (KAnonymity(4), LDiversity(dis, l=4))
    verdict = verification.verify_with_labels(
        engines.connect(con), layout, "t", "labs", "rws", "cls", 4, models
    )
    assert verdict.problems == ("3 class(es) hold fewer than l=4 distinct values of 'dis'",)
    pair = verification.verify_pair(engines.connect(con), layout, "t", "rel", 4, models)
    assert pair.problems == verdict.problems


@pytest.fixture
def built_release():
    """12 rows in three classes of four (as tests/test_verification.py builds them)."""
    con = duckdb.connect()
    rows = [(i, 20 + i, ["F", "M"][i % 2], f"d{i % 3}") for i in range(12)]
    con.execute("CREATE TABLE t (id INTEGER, age INTEGER, sex VARCHAR, dis VARCHAR)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", rows)
    engine = engines.connect(con)
    info = engine.open_source("t")
    plan = spec.make_plan(info, spec.Options(k=4, qi=("age", "sex"), sensitive=("dis",), drop=("id",)))
    row_id = con.execute("SELECT rowid FROM t").fetchnumpy()["rowid"]
    con.register("labs", pa.table({"row_id": row_id, "eq_class": np.arange(12) // 4}))
    engine.execute(generalize.create_classes_sql(plan, "cls", "labs", engine.row_id("s")))
    engine.execute(generalize.create_rows_sql(plan, "rws", "labs", engine.row_id("s")))
    engine.execute(generalize.create_release_view_sql(plan, "rel", "rws", "cls"))
    yield con, metrics.Layout(plan.qis, plan.verbatim, plan.weights)
    con.close()


# ---------------------------------------------------------------------------------------
# the sensitive models by hand


def test_l_diversity_distinct_and_entropy(con):
    hand(con)
    assert LDiversity(DISEASE).measure(engines.connect(con), "r") == {"l_diversity": 2}
    assert LDiversity(DISEASE, l=2).check(engines.connect(con), "r") == []
    assert LDiversity(DISEASE, l=3).check(engines.connect(con), "r") == [
        "1 class(es) hold fewer than l=3 distinct values of 'disease'"
    ]
    # class 0: -(2/3 ln 2/3 + 1/3 ln 1/3) = 0.6365 < ln 2; class 1: ln 3
    h0 = -(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3))
    entropy = LDiversity(DISEASE, variant="entropy")
    assert entropy.measure(engines.connect(con), "r")["entropy_l_diversity"] == pytest.approx(math.exp(h0))
    assert LDiversity(DISEASE, l=2, variant="entropy").check(engines.connect(con), "r") == [
        "1 class(es) hold fewer than l=2 values by entropy of 'disease'"
    ]
    # a class of exactly l equally frequent values passes entropy l-diversity
    assert LDiversity(DISEASE, l=1, variant="entropy").check(engines.connect(con), "r") == []
    con.execute("CREATE TABLE r3 AS SELECT * FROM r WHERE eq_class = 1")
    assert LDiversity(DISEASE, l=3, variant="entropy").check(engines.connect(con), "r3") == []
    assert LDiversity(DISEASE, l=3).min_class_size == 3
    with pytest.raises(ValueError, match="variant"):
        LDiversity(DISEASE, variant="recursive")


def test_t_closeness_and_beta_likeness(con):
    hand(con)
    assert float(TCloseness(DISEASE).measure(engines.connect(con), "r", "t")["t_closeness"]) == pytest.approx(
        1 / 6
    )
    assert TCloseness(DISEASE, t=0.2).check(engines.connect(con), "r", "t") == []
    assert TCloseness(DISEASE, t=0.1).check(engines.connect(con), "r", "t") == [
        "2 class(es) lie farther than t=0.1 from the input's distribution of 'disease'"
    ]
    figures = BetaLikeness(DISEASE).measure(engines.connect(con), "r", "t")
    assert figures == {"beta_likeness": pytest.approx(1.0), "enhanced_beta_likeness": pytest.approx(1.0)}
    # class 1 raises cancer from 1/6 to 1/3 (beta 1); class 0 flu from 1/2 to 2/3 (beta 1/3)
    assert BetaLikeness(DISEASE, beta=0.5).check(engines.connect(con), "r", "t") == [
        "1 class(es) raise a value of 'disease' above beta=0.5 over its input share"
    ]
    assert BetaLikeness(DISEASE, beta=0.2, enhanced=True).check(engines.connect(con), "r", "t") == [
        "2 class(es) raise a value of 'disease' above enhanced beta=0.2 over its input share"
    ]
    assert BetaLikeness(DISEASE, beta=1.0).check(engines.connect(con), "r", "t") == []
    with pytest.raises(ValueError, match="none was given"):
        check_all(engines.connect(con), [BetaLikeness(DISEASE)], "r", "t")


# ---------------------------------------------------------------------------------------
# the moved measures give evaluate() the figures it gave before, bit for bit

# (l-diversity, t-closeness, beta-likeness, enhanced beta-likeness) as evaluate() computed
# them in one query (sql/eval_sensitive.sql, sql/eval_emd_ordered.sql) before the models
BEFORE = {
    ("hand", "disease"): (2, 0.16666666666666669, 1.0, 1.0),
    ("capped", "disease"): (1, 0.5, 1.0, 0.6931471805599453),
    ("ordered", "salary"): (3, 0.3, 1.0, 1.0),
    (1, "disease"): (2, 0.6111111111111112, 2.24, 1.6863989535702288),
    (1, "salary"): (2, 0.35449735449735453, 12.5, 3.295836866004329),
    (2, "disease"): (1, 0.7230769230769231, 5.5, 2.5649493574615367),
    (2, "salary"): (1, 0.5142857142857143, 12.0, 2.7880929087757464),
    (3, "disease"): (1, 0.6875, 3.5714285714285716, 2.2129729343043585),
    (3, "salary"): (1, 0.3705357142857143, 11.8, 2.772588722239781),
    (4, "disease"): (1, 0.8032786885245902, 4.083333333333333, 2.501435951739211),
    (4, "salary"): (1, 0.4707259953161593, 6.624999999999999, 2.3191143949452564),
}


def make_case(con, case) -> None:
    """The tables of tests/test_evaluate.py: the hand ones, and random_case(seed)."""
    if case == "hand":
        hand(con)
    elif case == "capped":
        rows = [(a, s, "flu" if a < 30 else "cold") for a, s, _ in ORIGINAL]
        make_original(con, rows)
        make_release(con, "t", [0, 0, 0, 1, 1, 1])
    elif case == "ordered":
        con.execute("CREATE TABLE t (age INTEGER, salary INTEGER)")
        con.executemany(
            "INSERT INTO t VALUES (?, ?)",
            [(a, s) for a, s in zip([20, 22, 24, 40, 44, 50], range(1, 7), strict=True)],
        )
        con.execute("""CREATE TABLE r AS SELECT (salary > 3)::BIGINT AS eq_class,
                       MIN(age) OVER w AS age_min, MAX(age) OVER w AS age_max,
                       FALSE AS age_has_null, salary FROM t WINDOW w AS (PARTITION BY salary > 3)""")
    else:
        random_case(con, case)


@pytest.mark.parametrize(("case", "sensitive"), list(BEFORE))
def test_each_moved_measure_equals_the_old_figure(con, case, sensitive):
    make_case(con, case)
    column = DISEASE if sensitive == "disease" else SALARY
    got = {}
    for model in (LDiversity(column), TCloseness(column), BetaLikeness(column)):
        got.update(model.measure(engines.connect(con), "r", "t"))
    l_div, t_close, beta, enhanced = BEFORE[case, sensitive]
    assert int(got["l_diversity"]) == l_div
    assert float(got["t_closeness"]) == t_close
    assert float(got["beta_likeness"]) == beta
    assert float(got["enhanced_beta_likeness"]) == enhanced
    e = evaluate(con, "t", "r", sensitive=sensitive, queries=0)
    figures = (e.l_diversity, e.t_closeness, e.beta_likeness, e.enhanced_beta_likeness)
    assert figures == BEFORE[case, sensitive]
