"""evaluate(): each figure by hand on tiny tables, each SQL aggregate against pandas.

The hand tables: six patients (age, sex; disease sensitive) in two classes of three,
  class 0: ages 20, 22, 24, sexes M, M, F -> [20, 24], {F, M}; diseases flu, flu, cold
  class 1: ages 40, 44, 50, all F        -> [40, 50], {F};    diseases flu, cancer, cold
age spans 50 - 20 = 30, sex has 2 values.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from sbc_sql import engines
from sbc_sql.errors import InputError
from sbc_sql.quality.evaluate import evaluate, evaluation_sql
from sbc_sql.quality.linkage import classes_sql, keys_sql, source_stats_sql
from sbc_sql.quality.queries import domains, make_queries, query_error
from sbc_sql.quality.scratch import Names
from sbc_sql.stages.measure import infer_layout

ORIGINAL = [
    (20, "M", "flu"),
    (22, "M", "flu"),
    (24, "F", "cold"),
    (40, "F", "flu"),
    (44, "F", "cancer"),
    (50, "F", "cold"),
]


def q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def make_original(con: duckdb.DuckDBPyConnection, rows: list[tuple], name: str = "t") -> None:
    con.execute(f"CREATE TABLE {q(name)} (age INTEGER, sex VARCHAR, disease VARCHAR)")
    con.executemany(f"INSERT INTO {q(name)} VALUES (?, ?, ?)", rows)


def make_release(con: duckdb.DuckDBPyConnection, source: str, labels: list[int], name: str = "r") -> None:
    """The release of ``source`` (age numeric, sex categorical, disease verbatim) for the
    labels, one per source row in insertion order; -1 suppresses."""
    con.execute("CREATE TEMP TABLE lab (rid BIGINT, eq_class BIGINT)")
    con.executemany("INSERT INTO lab VALUES (?, ?)", list(enumerate(labels)))
    con.execute(f"""
        CREATE TABLE {q(name)} AS
        WITH s AS (SELECT rowid AS rid, * FROM {q(source)}),
        x AS (SELECT l.eq_class, s.* FROM s JOIN lab l USING (rid) WHERE l.eq_class >= 0),
        c AS (SELECT eq_class, MIN(age) AS age_min, MAX(age) AS age_max,
                     BOOL_OR(age IS NULL) AS age_has_null,
                     CASE WHEN BOOL_OR(sex IS NULL)
                          THEN list_append(COALESCE(list_sort(list(DISTINCT sex)
                               FILTER (WHERE sex IS NOT NULL)), []), NULL)
                          ELSE list_sort(list(DISTINCT sex) FILTER (WHERE sex IS NOT NULL))
                     END AS sex
              FROM x GROUP BY eq_class)
        SELECT c.eq_class, c.age_min, c.age_max, c.age_has_null, c.sex, x.disease
        FROM x JOIN c USING (eq_class) ORDER BY c.eq_class, x.disease""")
    con.execute("DROP TABLE lab")


@pytest.fixture
def con():
    connection = duckdb.connect()
    yield connection
    connection.close()


def user_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    return sorted(
        r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE NOT internal").fetchall()
    )


# ---------------------------------------------------------------------------------------
# by hand


def test_hand_two_classes(con):
    make_original(con, ORIGINAL)
    make_release(con, "t", [0, 0, 0, 1, 1, 1])
    e = evaluate(con, "t", "r", sensitive="disease", queries=0)
    # NCP age: (3 * 4/30 + 3 * 10/30) / 6 = 7/30; sex: (3 * 2/2 + 3 * 0) / 6 = 1/2
    assert e.ncp["age"] == pytest.approx(7 / 30)
    assert e.ncp["sex"] == pytest.approx(0.5)
    assert e.total_ncp == e.gcp == pytest.approx(11 / 30)
    assert e.utility == pytest.approx(19 / 30)
    # nothing removed: RGCP = GCP
    assert e.rgcp == pytest.approx(11 / 30)
    assert (e.removed_uncovered, e.removed_hidden, e.virtual_classes) == (0, 0, 0)
    assert e.discernibility == 9 + 9
    assert (e.k, e.c_avg) == (3, pytest.approx(1.0))
    assert (e.classes, e.smallest_class, e.mean_class, e.largest_class) == (2, 3, 3.0, 3)
    assert e.tuples == 2
    assert (e.n_rows, e.released, e.suppressed) == (6, 6, 0)
    # one class covers each record: RL = 6 * 1/3
    assert e.record_linkage == pytest.approx(2.0)
    assert e.record_linkage_share == pytest.approx(1 / 3)
    # p: flu 1/2, cold 1/3, cancer 1/6; class 0 flu 2/3 cold 1/3; class 1 one each
    assert e.l_diversity == 2
    assert e.t_closeness == pytest.approx(1 / 6)  # 0.5 * (1/6 + 0 + 1/6) in both classes
    assert e.beta_likeness == pytest.approx(1.0)  # cancer in class 1: (1/3 - 1/6) / (1/6)
    assert e.enhanced_beta_likeness == pytest.approx(1.0)  # -ln(1/6) = 1.79 does not cap it
    assert e.query_error == ()
    assert user_tables(con) == ["r", "t"]  # the run's temporary tables are gone


def test_hand_suppressed_record_joins_nearest_class(con):
    make_original(con, ORIGINAL)
    make_release(con, "t", [0, 0, 0, 1, 1, -1])  # (50, F, cold) suppressed; class 1 = [40, 44], {F}
    e = evaluate(con, "t", "r", queries=0)
    assert (e.suppressed, e.removed_uncovered, e.removed_hidden) == (1, 1, 0)
    # NCP increase of adding (50, F): class 0 -> 4 * (30/30 + 1) - 3 * (4/30 + 1) = 4.6,
    # class 1 -> 3 * (10/30 + 0) - 2 * (4/30) = 0.733: it joins class 1, g = [40, 50], {F}
    # RGCP = (3 * (4/30 + 1) + 2 * 3 * 10/30) / (6 * 2) = 5.4 / 12
    assert e.virtual_classes == 1
    assert e.rgcp == pytest.approx(5.4 / 12)
    # GCP charges the suppressed row 1 per QI: age (3*4/30 + 2*4/30 + 1)/6, sex (3 + 0 + 1)/6
    assert e.gcp == pytest.approx(((20 / 30 + 1) / 6 + 4 / 6) / 2)
    assert e.discernibility == 9 + 4 + 1 * 6
    assert e.c_avg == pytest.approx(5 / 2 / 2)
    assert e.record_linkage == pytest.approx(3 * (1 / 3) + 2 * (1 / 2))
    assert e.rgcp > e.gcp * 0.5  # sanity: the penalty is not lost


def test_hand_kr_scales_virtual_classes(con):
    make_original(con, ORIGINAL)
    make_release(con, "t", [0, 0, 0, 1, 1, -1])
    e = evaluate(con, "t", "r", queries=0, k_r=3.0, n_r=5.0)
    assert e.rgcp == pytest.approx((3.4 + 3 * 3 * 10 / 30) / 12)


def test_hand_hidden_removed_record(con):
    # a 7th record (42, F, flu) lies inside class 1's box and a class-1 row is flu: the
    # release cannot say it was suppressed, so it is charged to class 1 (it widens nothing)
    make_original(con, ORIGINAL + [(42, "F", "flu")])
    make_release(con, "t", [0, 0, 0, 1, 1, 1, -1])
    e = evaluate(con, "t", "r", queries=0)
    assert (e.suppressed, e.removed_uncovered, e.removed_hidden) == (1, 0, 1)
    assert e.virtual_classes == 1
    # (3 * (4/30 + 1) + 2 * 4 * 10/30) / (7 * 2)
    assert e.rgcp == pytest.approx((3.4 + 8 / 3) / 14)
    # it counts as if released (RL is then an upper bound): 3 * 1/3 + 4 * 1/3
    assert e.record_linkage == pytest.approx(7 / 3)


def test_hand_no_class(con):
    make_original(con, ORIGINAL)
    make_release(con, "t", [-1] * 6)
    e = evaluate(con, "t", "r", queries=0, n_r=4.0)
    # gF = all rows: age [20, 50] -> 1, sex {F, M} -> 1; RGCP = 4 * 6 * 2 / (6 * 2)
    assert e.rgcp == pytest.approx(4.0)
    assert (e.classes, e.suppressed, e.discernibility, e.c_avg) == (0, 6, 36, None)
    assert e.record_linkage == 0.0
    assert e.gcp == pytest.approx(1.0)


def test_hand_enhanced_beta_caps_at_minus_ln_p(con):
    rows = [
        (20, "M", "flu"),
        (22, "M", "flu"),
        (24, "F", "flu"),
        (40, "F", "cold"),
        (44, "F", "cold"),
        (50, "F", "cold"),
    ]
    make_original(con, rows)
    make_release(con, "t", [0, 0, 0, 1, 1, 1])
    e = evaluate(con, "t", "r", sensitive="disease", queries=0)
    assert e.l_diversity == 1
    assert e.t_closeness == pytest.approx(0.5)  # 0.5 * (|1 - 1/2| + |0 - 1/2|)
    assert e.beta_likeness == pytest.approx(1.0)  # (1 - 1/2) / (1/2)
    assert e.enhanced_beta_likeness == pytest.approx(math.log(2))  # capped at -ln(1/2)


def test_hand_ordered_emd_for_numeric_sensitive(con):
    con.execute("CREATE TABLE t (age INTEGER, salary INTEGER)")
    con.executemany(
        "INSERT INTO t VALUES (?, ?)",
        [(a, s) for a, s in zip([20, 22, 24, 40, 44, 50], range(1, 7), strict=True)],
    )
    con.execute("""CREATE TABLE r AS SELECT (salary > 3)::BIGINT AS eq_class,
                   MIN(age) OVER w AS age_min, MAX(age) OVER w AS age_max,
                   FALSE AS age_has_null, salary FROM t WINDOW w AS (PARTITION BY salary > 3)""")
    e = evaluate(con, "t", "r", sensitive="salary", queries=0)
    # class {1, 2, 3}: r = 1/6 x3, -1/6 x3; running sums 1/6 2/6 3/6 2/6 1/6 0 -> 9/6 / (6 - 1)
    assert e.t_closeness == pytest.approx(0.3)
    assert e.l_diversity == 3


def test_hand_query_error(con):
    make_original(con, ORIGINAL)
    make_release(con, "t", [0, 0, 0, 1, 1, 1])
    engine = engines.connect(con)
    layout = infer_layout(engine, "t", "r")
    names = Names.fresh()
    engine.execute(source_stats_sql(layout, "t", names.src))
    engine.execute(classes_sql(layout, "r", names))
    queries = pa.table(
        {
            "sbc_qid": pa.array([0, 1, 2], pa.int64()),
            "sbc_sel": pa.array([0.05, 0.05, 0.05]),
            "age_lo": pa.array([20.0, 0.0, 30.0]),
            "age_hi": pa.array([22.0, 100.0, 35.0]),
            "sex_vals": pa.array([["M"], ["F"], ["M"]], pa.list_(pa.string())),
            "sex_null": pa.array([False, False, False]),
        }
    )
    (res,) = query_error(engines.connect(con), layout, "t", names, queries)
    # q0: true 2 (20 M, 22 M); estimate class 0: 3 * (2/4) * (1/2) = 0.75 -> error 0.625
    # q1: true 4 (the F rows); estimate 3 * 1 * 1/2 + 3 * 1 * 1 = 4.5 -> error 0.125
    # q2: true 0: not used
    assert (res.selectivity, res.queries, res.used) == (0.05, 3, 2)
    assert res.relative_error == pytest.approx((0.625 + 0.125) / 2)
    assert res.true_share == pytest.approx(6 / 3 / 6)


def test_queries_are_seeded_and_near_their_selectivity(con):
    rng = np.random.default_rng(7)
    n = 2000
    df = pd.DataFrame(
        {"age": rng.integers(0, 100, n), "sex": rng.choice(list("abcdefghij"), n), "disease": "x"}
    )
    con.register("df", df)
    con.execute("CREATE TABLE t AS SELECT age::INTEGER AS age, sex, disease FROM df")
    make_release(con, "t", [i // 4 for i in range(n)])
    layout = infer_layout(engines.connect(con), "t", "r")
    doms = domains(engines.connect(con), layout, "t")
    a = make_queries(doms, (0.01, 0.1), 50, seed=3)
    assert a.equals(make_queries(doms, (0.01, 0.1), 50, seed=3))
    assert not a.equals(make_queries(doms, (0.01, 0.1), 50, seed=4))
    e = evaluate(con, "t", "r", queries=50, selectivities=(0.01, 0.1), seed=3)
    assert e.query_error == evaluate(con, "t", "r", queries=50, selectivities=(0.01, 0.1), seed=3).query_error
    for res in e.query_error:
        assert res.queries == 50
        assert 0.4 * res.selectivity < res.true_share < 2.5 * res.selectivity
        assert res.relative_error is not None and res.relative_error >= 0


def test_rows_and_as_dict(con):
    make_original(con, ORIGINAL)
    make_release(con, "t", [0, 0, 0, 1, 1, 1])
    e = evaluate(con, "t", "r", sensitive="disease", queries=5)
    d = e.as_dict()
    assert d["rgcp"] == e.rgcp and len(d["query_error"]) == 3
    listed = dict(e.rows())
    assert listed["ncp[age]"] == pytest.approx(7 / 30)
    assert "query_error@0.05" in listed and listed["l_diversity"] == 2


def test_the_report_groups_every_figure_with_its_direction(con):
    from sbc_sql.quality import report

    make_original(con, ORIGINAL)
    make_release(con, "t", [0, 0, 0, 1, 1, 1])
    e = evaluate(con, "t", "r", sensitive="disease", queries=5)
    doc = report.grouped(e)
    assert list(doc) == [
        "rows",
        "information_loss",
        "risk",
        "attribute_disclosure",
        "query_accuracy",
    ]
    assert doc["information_loss"]["total_ncp"]["value"] == e.total_ncp
    assert doc["information_loss"]["total_ncp"]["better"] == "lower"
    assert doc["information_loss"]["ncp"]["age"]["value"] == pytest.approx(7 / 30)
    assert doc["attribute_disclosure"]["l_diversity"] == {
        "value": 2,
        "better": "higher",
        "meaning": "fewest distinct sensitive values in a class",
    }
    assert set(doc["query_accuracy"]) == {"seed", "0.01", "0.05", "0.1"}
    # every flat figure is in the document once
    placed = {key for group in doc.values() if isinstance(group, dict) for key in group}
    assert {k for k, v in e.as_dict().items() if v is not None} - {"query_error", "seed"} <= placed
    lines = report.text(e).splitlines()
    assert lines[0] == "Rows"
    assert {"Information loss", "Re-identification risk", "Attribute disclosure"} <= set(lines)
    assert any(line.split()[:3] == ["total", "NCP", f"{e.total_ncp:.4f}"] for line in lines)
    assert "lower is better" in next(line for line in lines if line.strip().startswith("total NCP"))
    # without a sensitive column or queries, those groups are left out
    plain = report.grouped(evaluate(con, "t", "r", queries=0))
    assert "attribute_disclosure" not in plain and "query_accuracy" not in plain


def test_bad_arguments(con):
    make_original(con, ORIGINAL)
    make_release(con, "t", [0, 0, 0, 1, 1, 1])
    with pytest.raises(InputError, match="not a column"):
        evaluate(con, "t", "r", sensitive="nope")
    with pytest.raises(InputError, match="generalized QI"):
        evaluate(con, "t", "r", sensitive="age")
    with pytest.raises(InputError, match="n_r > k_r > 1"):
        evaluate(con, "t", "r", k_r=5, n_r=4)
    with pytest.raises(InputError, match="does not exist"):
        evaluate(con, "t", "missing")


def test_sql_twin_and_hostile_names(con):
    src, rel, num, cat = 'we"ird; drop table x', 'rel"ease; drop table x', 'se"l ect', "c at"
    con.execute("CREATE TABLE x AS SELECT 42 AS keep")
    con.execute(f"CREATE TABLE {q(src)} ({q(num)} INTEGER, {q(cat)} VARCHAR, dis VARCHAR)")
    con.executemany(f"INSERT INTO {q(src)} VALUES (?, ?, ?)", ORIGINAL)
    con.execute(f"""CREATE TABLE {q(rel)} AS SELECT (rowid >= 3)::BIGINT AS eq_class,
        MIN({q(num)}) OVER w AS {q(num + "_min")}, MAX({q(num)}) OVER w AS {q(num + "_max")},
        FALSE AS {q(num + "_has_null")}, list_sort(list(DISTINCT {q(cat)}) OVER w) AS {q(cat)},
        dis FROM {q(src)} WINDOW w AS (PARTITION BY rowid >= 3
        ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)""")
    e = evaluate(con, src, rel, sensitive="dis", queries=3)
    assert e.ncp == {num: pytest.approx(7 / 30), cat: pytest.approx(0.5)}
    assert (e.l_diversity, e.record_linkage) == (2, pytest.approx(2.0))
    assert con.execute("SELECT * FROM x").fetchall() == [(42,)]  # one name, not SQL
    statements = evaluation_sql(con, src, rel, sensitive="dis")
    assert any(q(src) in st for st in statements) and any(q(num) in st for st in statements)
    assert all(st.endswith(";") for st in statements)


# ---------------------------------------------------------------------------------------
# pandas references on random tables

EPOCH = dt.date(1970, 1, 1)


def random_case(con: duckdb.DuckDBPyConnection, seed: int) -> None:
    """t: age INTEGER (some NULL), visit DATE, zip VARCHAR (some NULL), disease VARCHAR (some
    NULL), salary INTEGER; r: classes of 3 to 5 rows in a random order, about 12% of the
    rows suppressed, boxes made from the released rows only."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(40, 70))
    age = [None if rng.random() < 0.1 else int(v) for v in rng.integers(18, 80, n)]
    visit = [EPOCH + dt.timedelta(days=int(v)) for v in rng.integers(18000, 18400, n)]
    zip_ = [None if rng.random() < 0.1 else f"z{v}" for v in rng.integers(0, 6, n)]
    disease = [None if rng.random() < 0.1 else f"d{v}" for v in rng.integers(0, 4, n)]
    salary = [int(v) for v in rng.integers(1, 9, n)]
    con.execute("CREATE TABLE t (age INTEGER, visit DATE, zip VARCHAR, disease VARCHAR, salary INTEGER)")
    con.executemany(
        "INSERT INTO t VALUES (?, ?, ?, ?, ?)", list(zip(age, visit, zip_, disease, salary, strict=True))
    )
    order = rng.permutation(n)
    labels = np.empty(n, dtype=np.int64)
    cls, i = 0, 0
    while i < n:
        size = int(rng.integers(3, 6))
        labels[order[i : i + size]] = cls
        cls, i = cls + 1, i + size
    labels[rng.random(n) < 0.12] = -1
    con.execute("CREATE TEMP TABLE lab (rid BIGINT, eq_class BIGINT)")
    con.executemany("INSERT INTO lab VALUES (?, ?)", [(int(a), int(b)) for a, b in enumerate(labels)])
    con.execute("""
        CREATE TABLE r AS
        WITH s AS (SELECT rowid AS rid, * FROM t),
        x AS (SELECT l.eq_class, s.* FROM s JOIN lab l USING (rid) WHERE l.eq_class >= 0),
        c AS (SELECT eq_class, MIN(age) AS age_min, MAX(age) AS age_max,
                     BOOL_OR(age IS NULL) AS age_has_null,
                     MIN(visit) AS visit_min, MAX(visit) AS visit_max,
                     BOOL_OR(visit IS NULL) AS visit_has_null,
                     CASE WHEN BOOL_OR(zip IS NULL)
                          THEN list_append(COALESCE(list_sort(list(DISTINCT zip)
                               FILTER (WHERE zip IS NOT NULL)), []), NULL)
                          ELSE list_sort(list(DISTINCT zip) FILTER (WHERE zip IS NOT NULL))
                     END AS zip
              FROM x GROUP BY eq_class)
        SELECT c.eq_class, c.age_min, c.age_max, c.age_has_null, c.visit_min, c.visit_max,
               c.visit_has_null, c.zip, x.disease, x.salary
        FROM x JOIN c USING (eq_class) ORDER BY ALL""")
    con.execute("DROP TABLE lab")


NUM = ("age", "visit")
CAT = ("zip",)
VERB = ("disease", "salary")


def num(v: Any) -> float | None:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return float((v - EPOCH).days) if isinstance(v, dt.date) else float(v)


class Reference:
    """The definitions of sbc_sql.quality.evaluate, written again in plain Python over pandas."""

    def __init__(self, con: duckdb.DuckDBPyConnection, weights: dict[str, float]):
        self.orig = [
            dict(zip(("age", "visit", "zip", "disease", "salary"), r, strict=True))
            for r in con.execute("SELECT * FROM t").fetchall()
        ]
        cur = con.execute("SELECT * FROM r")
        names = [d[0] for d in cur.description]
        rel = pd.DataFrame(cur.fetchall(), columns=names, dtype=object)
        self.rel = rel
        self.w = {c: weights.get(c, 1.0) for c in (*NUM, *CAT)}
        self.n = len(self.orig)
        self.span = {}
        for c in NUM:
            vals = [num(r[c]) for r in self.orig if num(r[c]) is not None]
            self.span[c] = (max(vals) - min(vals)) if vals else 0.0
        self.card = {c: len({r[c] for r in self.orig}) for c in CAT}
        self.classes = []
        for eq, grp in rel.groupby("eq_class", sort=True):
            first = grp.iloc[0]
            box = {"eq": int(eq), "size": len(grp)}
            for c in NUM:
                box[c] = (num(first[c + "_min"]), num(first[c + "_max"]), bool(first[c + "_has_null"]))
            for c in CAT:
                box[c] = list(first[c])
            box["verb"] = {tuple(row) for row in grp[list(VERB)].itertuples(index=False)}
            box["cost"] = self.cost(box)
            self.classes.append(box)

    def ncp(self, box: dict, c: str) -> float:
        if c in NUM:
            lo, hi, has_null = box[c]
            if lo is None:
                return 0.0
            if has_null:
                return 1.0
            return (hi - lo) / self.span[c] if self.span[c] else 0.0
        size = len(box[c])
        return 0.0 if size <= 1 else size / self.card[c]

    def cost(self, box: dict) -> float:
        return sum(self.w[c] * self.ncp(box, c) for c in (*NUM, *CAT))

    @staticmethod
    def covers(box: dict, rec: dict) -> bool:
        for c in NUM:
            v, (lo, hi, has_null) = num(rec[c]), box[c]
            if v is None:
                if not has_null:
                    return False
            elif lo is None or not lo <= v <= hi:
                return False
        return all(rec[c] in box[c] for c in CAT)

    @staticmethod
    def extend(box: dict, recs: list[dict]) -> dict:
        out = dict(box)
        for c in NUM:
            lo, hi, has_null = box[c]
            vals = [num(r[c]) for r in recs]
            nums = [v for v in vals if v is not None]
            if nums:
                lo = min(nums) if lo is None else min(lo, *nums)
                hi = max(nums) if hi is None else max(hi, *nums)
            out[c] = (lo, hi, has_null or any(v is None for v in vals))
        for c in CAT:
            values = set(box[c]) | {r[c] for r in recs}
            out[c] = sorted(v for v in values if v is not None) + ([None] if None in values else [])
        return out

    def figures(self, k_r: float) -> dict[str, float]:
        homes, reach, lost = [], [], []
        for rec in self.orig:
            covering = [b for b in self.classes if self.covers(b, rec)]
            own = [b for b in covering if tuple(rec[v] for v in VERB) in b["verb"]]
            reach.append(sum(b["size"] for b in covering))
            home = min(own, key=lambda b: (round(b["cost"], 9), b["eq"])) if own else None
            homes.append(home)
            if home is None:
                lost.append(rec)
        released = len(self.rel)
        suppressed = self.n - released
        hidden = max(suppressed - len(lost), 0)
        rl = sum(1.0 / r for h, r in zip(homes, reach, strict=True) if h is not None)
        joined: dict[int, list[dict]] = {}
        for rec in lost:
            best = min(
                self.classes,
                key=lambda b: (
                    round((b["size"] + 1) * self.cost(self.extend(b, [rec])) - b["size"] * b["cost"], 9),
                    b["eq"],
                ),
            )
            joined.setdefault(best["eq"], []).append(rec)
        claimed: dict[int, int] = {}
        for h in homes:
            if h is not None:
                claimed[h["eq"]] = claimed.get(h["eq"], 0) + 1
        extra_hidden, left = {}, hidden
        for b in self.classes:
            take = min(max(claimed.get(b["eq"], 0) - b["size"], 0), left)
            extra_hidden[b["eq"]], left = take, left - take
        total = 0.0
        for b in self.classes:
            added = joined.get(b["eq"], [])
            count = len(added) + extra_hidden[b["eq"]]
            if count:
                total += k_r * (b["size"] + count) * self.cost(self.extend(b, added))
            else:
                total += b["size"] * b["cost"]
        wsum = sum(self.w.values())
        sizes = [b["size"] for b in self.classes]
        return {
            "rgcp": total / (self.n * wsum),
            "rl": rl,
            "uncovered": len(lost),
            "hidden": hidden,
            "dm": sum(s * s for s in sizes) + suppressed * self.n,
            "virtual": sum(1 for b in self.classes if joined.get(b["eq"]) or extra_hidden[b["eq"]]),
            "total_ncp": (sum(b["size"] * self.cost(b) for b in self.classes) + suppressed * wsum)
            / (self.n * wsum),
        }

    def sensitive(self, col: str) -> dict[str, float]:
        # NULL as a value of its own, spelt out (fillna on objects warns on pandas 2)
        p = pd.Series(["<NULL>" if pd.isna(r[col]) else r[col] for r in self.orig], dtype=object)
        pshare = p.value_counts(normalize=True)
        values = sorted(pshare.index, key=lambda v: (v == "<NULL>", v))
        ls, emds, ordered, betas, enhanced = [], [], [], [], []
        for _, grp in self.rel.groupby("eq_class"):
            qs = grp[col].astype(object).where(grp[col].notna(), "<NULL>").value_counts(normalize=True)
            ls.append(len(qs))
            emds.append(0.5 * sum(abs(qs.get(v, 0.0) - pshare[v]) for v in values))
            run, moved = 0.0, 0.0
            for v in values:
                run += qs.get(v, 0.0) - pshare[v]
                moved += abs(run)
            ordered.append(moved / (len(values) - 1) if len(values) > 1 else 0.0)
            for v, qv in qs.items():
                pv = pshare[v]
                if qv > pv:
                    betas.append((qv - pv) / pv)
                    enhanced.append(min((qv - pv) / pv, -math.log(pv)))
        return {
            "l": min(ls),
            "emd": max(emds),
            "ordered": max(ordered),
            "beta": max(betas, default=0.0),
            "enhanced": max(enhanced, default=0.0),
        }

    def query_error(self, queries: pa.Table) -> dict[float, tuple[int, float | None]]:
        out: dict[float, list[float]] = {}
        for qrow in queries.to_pylist():

            def hit(rec: dict, qrow: dict) -> bool:
                for c in NUM:
                    v = num(rec[c])
                    if v is None or qrow[c + "_lo"] is None or not qrow[c + "_lo"] <= v <= qrow[c + "_hi"]:
                        return False
                for c in CAT:
                    if rec[c] is None:
                        if not qrow[c + "_null"]:
                            return False
                    elif rec[c] not in qrow[c + "_vals"]:
                        return False
                return True

            true = sum(1 for rec in self.orig if hit(rec, qrow))
            est = 0.0
            for b in self.classes:
                share = 1.0
                for c in NUM:
                    lo, hi, _ = b[c]
                    qlo, qhi = qrow[c + "_lo"], qrow[c + "_hi"]
                    if lo is None or qlo is None:
                        share = 0.0
                    elif hi == lo:
                        share *= 1.0 if qlo <= lo <= qhi else 0.0
                    else:
                        share *= max(min(qhi, hi) - max(qlo, lo), 0.0) / (hi - lo)
                for c in CAT:
                    inter = len(set(b[c]) & set(qrow[c + "_vals"]))
                    inter += 1 if (qrow[c + "_null"] and None in b[c]) else 0
                    share *= inter / len(b[c])
                est += b["size"] * share
            if true > 0:
                out.setdefault(qrow["sbc_sel"], []).append(abs(est - true) / true)
            else:
                out.setdefault(qrow["sbc_sel"], [])
        return {s: (len(v), float(np.mean(v)) if v else None) for s, v in out.items()}


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_against_pandas(seed):
    con = duckdb.connect()
    try:
        random_case(con, seed)
        weights = {"age": 2.0} if seed % 2 else {}
        ref = Reference(con, weights)
        e = evaluate(
            con, "t", "r", sensitive="disease", queries=15, seed=seed, weights=weights, k_r=2.5, n_r=4.0
        )
        want = ref.figures(k_r=2.5)
        assert e.total_ncp == pytest.approx(want["total_ncp"])
        assert e.rgcp == pytest.approx(want["rgcp"])
        assert e.record_linkage == pytest.approx(want["rl"])
        assert (e.removed_uncovered, e.removed_hidden, e.virtual_classes) == (
            want["uncovered"],
            want["hidden"],
            want["virtual"],
        )
        assert e.discernibility == want["dm"]
        assert e.tuples == len(ref.classes)
        s = ref.sensitive("disease")
        assert e.l_diversity == s["l"]
        assert e.t_closeness == pytest.approx(s["emd"])
        assert e.beta_likeness == pytest.approx(s["beta"])
        assert e.enhanced_beta_likeness == pytest.approx(s["enhanced"])
        e2 = evaluate(con, "t", "r", sensitive="salary", queries=0)
        assert e2.t_closeness == pytest.approx(ref.sensitive("salary")["ordered"])
        assert_query_error(e, ref, con, weights, 15, seed)
    finally:
        con.close()


def assert_query_error(e, ref, con, weights, queries: int, seed: int) -> None:
    """evaluate's query error, per selectivity, is the reference's over the same seeded
    queries (made again from the DuckDB copy ``con`` of the table and its release)."""
    layout = infer_layout(engines.connect(con), "t", "r", weights)
    table = make_queries(domains(engines.connect(con), layout, "t"), (0.01, 0.05, 0.1), queries, seed)
    got = {r.selectivity: (r.used, r.relative_error) for r in e.query_error}
    for sel, (used, err) in ref.query_error(table).items():
        assert got[sel][0] == used
        assert (got[sel][1] is None) == (err is None)
        if err is not None:
            assert got[sel][1] == pytest.approx(err)


@pytest.mark.parametrize("seed", [5, 6, 7])
def test_keyed_coverage_and_batched_queries_match_brute_force(engine, seed):
    """Coverage, record linkage, RGCP and the query error (the coverage join through per-QI
    keys, the queries scored in numpy batches) against a brute-force computation on each
    engine, over random releases whose boxes overlap and vary in width (RGCP's virtual
    classes grow sets that hold NULL)."""
    con = duckdb.connect()
    try:
        random_case(con, seed)
        ref = Reference(con, {})
        if engine.name == "duckdb":
            database = con
        else:
            database = engine.fresh()
            engine.copy(database, con, "t")
            engine.copy(database, con, "r")
        e = evaluate(database, "t", "r", queries=12, seed=seed, k_r=2.0, n_r=4.0)
        want = ref.figures(k_r=2.0)
        assert e.record_linkage == pytest.approx(want["rl"])
        assert (e.removed_uncovered, e.removed_hidden) == (want["uncovered"], want["hidden"])
        assert e.virtual_classes == want["virtual"]
        assert e.rgcp == pytest.approx(want["rgcp"])
        assert_query_error(e, ref, con, {}, 12, seed)
    finally:
        con.close()


def test_coverage_keys_a_class_on_its_largest_set():
    """The coverage join keys a class on every categorical set of at most two values and on
    its largest set of at most eight (so a row meets only the classes holding its value
    there, not every class around it), one key per value and one for NULL."""
    con = duckdb.connect()
    try:
        random_case(con, 5)
        engine = engines.connect(con)
        layout = infer_layout(engine, "t", "r", {})
        zip_at = [c.name for c in layout.qis].index("zip")
        names = Names.fresh()
        for statement in (
            source_stats_sql(layout, "t", names.src),
            classes_sql(layout, "r", names),
            keys_sql(layout, names),
        ):
            engine.execute(statement)
        flag, key = f"sbc_inc_{zip_at}", f"sbc_key_{zip_at}"
        rows = con.execute(
            f"SELECT len(g.zip), k.{flag}, count(DISTINCT k.{key}) FROM {names.keys} k "
            f"JOIN {names.classes} g USING (eq_class) GROUP BY g.eq_class, len(g.zip), k.{flag}"
        ).fetchall()
        assert {size for size, _, _ in rows} >= {1, 2, 3, 4}
        for size, keyed, keys in rows:
            assert keyed
            assert keys == size
    finally:
        con.close()


def test_long_steps_report_their_progress(con):
    """The coverage step ticks per statement, the query error per batch of queries, each up
    to its total, and the command line's bars label each step (drawn on a terminal)."""
    from sbc_sql.cli.progress import StepBars
    from sbc_sql.quality.queries import BATCH

    make_original(con, ORIGINAL)
    make_release(con, "t", [0, 0, 0, 1, 1, 1])
    ticks: list[tuple[str, int, int]] = []
    evaluate(con, "t", "r", queries=30, selectivities=(0.05, 0.1), progress=lambda *a: ticks.append(a))
    coverage = [(d, t) for s, d, t in ticks if s == "coverage and record linkage"]
    assert coverage[-1][0] == coverage[-1][1] and len(coverage) == coverage[-1][1] > 1
    queries = [(d, t) for s, d, t in ticks if s.startswith("query error")]
    assert queries == [(min(i + BATCH, 60), 60) for i in range(0, 60, BATCH)]

    import io
    import sys

    err = io.StringIO()
    saved, sys.stderr = sys.stderr, err
    try:
        with StepBars("evaluate", enabled=True) as bars:
            for step, done, total in ticks:
                bars(step, done, total)
    finally:
        sys.stderr = saved
    shown = err.getvalue()
    assert "evaluate: coverage and record linkage [" in shown and "60/60" in shown


# ---------------------------------------------------------------------------------------
# the sensitive column the release's provenance declares


def declared_clinic(path) -> Any:
    """A database file with 't' (age, zip QIs; dx sensitive; ward kept) and its release 'r'
    made on the command line with dx declared sensitive and 2-diverse."""
    rng = np.random.default_rng(3)
    n = 120
    frame = pd.DataFrame(
        {
            "age": rng.integers(20, 80, n).astype(int),
            "zip": [f"z{z}" for z in rng.integers(0, 8, n)],
            "dx": [f"d{d}" for d in rng.integers(0, 5, n)],
            "ward": [f"w{w}" for w in rng.integers(0, 3, n)],
        }
    )
    with duckdb.connect(str(path)) as con:
        con.register("frame", frame)
        con.execute("CREATE TABLE t AS SELECT * FROM frame")
    return path


def test_evaluate_measures_the_sensitive_column_the_provenance_declares(cli, tmp_path):
    """Without --sensitive, evaluate measures attribute disclosure on the column the run
    declared sensitive (as the report does); an explicit --sensitive wins."""
    db = str(declared_clinic(tmp_path / "clinic.duckdb"))
    made = cli(
        ["anonymize", "--db", db, "-t", "t", "-k", "4", "--qi", "age,zip", "--sensitive", "dx"]
        + ["--keep", "ward", "--l-diversity", "2", "-o", "r", "-q"]
    )
    assert made.exit_code == 0, made.stderr
    base = ["evaluate", "--db", db, "--original", "t", "--release", "r", "--queries", "0"]
    found = cli([*base, "--json"])
    assert found.exit_code == 0, found.stderr
    figures = json.loads(found.stdout)["attribute_disclosure"]
    assert figures["sensitive"]["value"] == "dx"
    assert figures["l_diversity"]["value"] >= 2
    said = cli(base)
    assert (
        "evaluate: attribute disclosure of 'dx', the sensitive column the release declares ..." in said.stderr
    )
    assert "sensitive column" in said.stdout
    chosen = cli([*base, "--sensitive", "ward", "--json"])
    assert chosen.exit_code == 0, chosen.stderr
    assert json.loads(chosen.stdout)["attribute_disclosure"]["sensitive"]["value"] == "ward"
    # the statements --sql prints are those of the declared column too
    sql = cli(["evaluate", "--db", db, "--original", "t", "--release", "r", "--sql"])
    explicit = cli(
        ["evaluate", "--db", db, "--original", "t", "--release", "r", "--sql", "--sensitive", "dx"]
    )
    assert sql.exit_code == 0, sql.stderr
    assert sql.stdout.count(";") == explicit.stdout.count(";")
    plain = cli(["evaluate", "--db", db, "--original", "t", "--release", "r", "--sql", "--sensitive", "ward"])
    assert plain.stdout != sql.stdout
