"""The SQL aggregates of the statistics and pull stages against pandas, and golden SQL for every
template in sql/ rendered with hostile identifiers.

Golden files live in tests/golden/<template>.sql; after an intended change to a template or to
the SQL builders, regenerate them with ``SBC_UPDATE_GOLDEN=1 pytest tests/test_stats.py`` and
review the diff.
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import sqlglot
from helpers import as_number, connected, examples, q
from hypothesis import HealthCheck, given, settings
from sqlglot import exp
from strategies import NUMERIC_TYPES, TableCase, tables

from sbc_sql import engines
from sbc_sql import plan as spec
from sbc_sql.sql import templates
from sbc_sql.sql.nodes import alias, as_category, conj, ref, same_key, value_set
from sbc_sql.sql.nodes import as_number as sql_number
from sbc_sql.stages import measure as metrics
from sbc_sql.stages import pull, stats
from sbc_sql.stages import verify as verification
from sbc_sql.stages import write as generalize

GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("SBC_UPDATE_GOLDEN") == "1"


def make_plan(con, table: str, qis, sensitive=("dis",)) -> spec.Plan:
    return spec.make_plan(
        engines.connect(con).open_source(table), spec.Options(k=2, qi=tuple(qis), sensitive=tuple(sensitive))
    )


HAND = pd.DataFrame(
    {
        "n": pd.Series([3, None, 7, 7, -2, None, 3, 10], dtype=object),
        "f": pd.Series([0.5, 0.5, None, -1.25, 2.0, 2.0, 0.5, None], dtype=object),
        "d": pd.Series(
            ["2020-01-05", None, "2019-12-31", "2020-01-05", None, "2021-03-01", "2020-02-29", "2020-01-05"],
            dtype=object,
        ),
        "sex": pd.Series(["F", "M", "F", "F", "M", "M", "F", "M"], dtype=object),
        "city": pd.Series(["Oslo", None, "Rome", "Oslo", "Lima", None, "Rome", "Oslo"], dtype=object),
        "one": pd.Series(["x"] * 8, dtype=object),
        "flag": pd.Series([True, None, False, True, True, None, False, True], dtype=object),
        "dis": pd.Series(["a", "b", "c", "d", "e", "f", "g", "h"], dtype=object),
    }
)
HAND_TYPES = {
    "n": "INTEGER",
    "f": "DOUBLE",
    "d": "DATE",
    "sex": "VARCHAR",
    "city": "VARCHAR",
    "one": "VARCHAR",
    "flag": "BOOLEAN",
    "dis": "VARCHAR",
}
HAND_QIS = ("n", "f", "d", "sex", "city", "one", "flag")


@pytest.fixture
def hand(engine):
    """The hand table on the engine: the engine (open for the test: Spark's plan reads a view
    of the source that lives as long as it does), the plan and the statistics."""
    with connected(engine.frame(HAND, HAND_TYPES)) as eng:
        plan = make_plan(eng, "t", HAND_QIS)
        yield eng, plan, stats.collect_stats(eng, plan, len(HAND))


def python_values(df: pd.DataFrame, types: dict[str, str]) -> pd.DataFrame:
    out = df.copy()
    for c, t in types.items():
        if t == "DATE":
            out[c] = [None if v is None else dt.date.fromisoformat(v) for v in out[c]]
    return out


def expected_order(df: pd.DataFrame, cats: list[str]) -> list[str]:
    card = {c: df[c].nunique(dropna=True) + int(df[c].isna().any()) for c in cats}
    return sorted(cats, key=lambda c: (card[c], cats.index(c)))


def check_stats(con, df: pd.DataFrame, types: dict[str, str], qis, plan, st) -> None:
    """Every statistic against pandas on the same rows."""
    df = python_values(df, types)
    n = len(df)
    with connected(con) as eng:
        (count,) = eng.fetch_one(stats.row_count_sql(plan))
    assert count == st.n_rows == n
    for c in qis:
        present = [v for v in df[c] if v is not None]
        assert st.distinct[c] == len(set(present)), c
        assert st.nulls[c] == n - len(present), c
    numeric = [c for c in qis if types[c] in NUMERIC_TYPES]
    for c in numeric:
        nums = [as_number(v) for v in df[c] if v is not None]
        if nums:
            assert (st.lo[c], st.hi[c]) == (min(nums), max(nums)), c
        else:
            assert np.isnan(st.lo[c]) and np.isnan(st.hi[c]), c
    cats = [c for c in qis if types[c] not in NUMERIC_TYPES]
    order = expected_order(df, cats)
    assert [c.name for c in stats.categorical_order(plan, st.distinct, st.nulls)] == order
    for c in cats:
        domain = sorted({v for v in df[c] if v is not None})
        assert st.domains[c].to_pylist() == domain, c
        want = [sum(1 for v in df[c] if v == x) for x in domain]
        if df[c].isna().any():
            want.append(int(df[c].isna().sum()))
        assert st.value_counts[c].tolist() == want, c
        assert st.cardinality(c) == len(want)
    assert set(st.pair_counts) == set(itertools.pairwise(order))
    for m, k in itertools.pairwise(order):
        dm = st.domains[m].to_pylist()
        dk = st.domains[k].to_pylist()

        def code(v, domain):
            return len(domain) if v is None else domain.index(v)

        grid = np.zeros((st.cardinality(m), st.cardinality(k)), dtype=np.int64)
        for a, b in zip(df[m], df[k], strict=True):
            grid[code(a, dm), code(b, dk)] += 1
        assert st.pair_counts[(m, k)].tolist() == grid.tolist(), (m, k)


def check_pull(con, df: pd.DataFrame, types: dict[str, str], plan, st) -> None:
    """Pulled arrays decode back to the table's values, row by row in row id order (the
    order the rows were loaded in)."""
    df = python_values(df, types)
    with connected(con) as eng:
        data, row_id = pull.pull(eng, plan, st)
    assert len(set(row_id.tolist())) == len(row_id) == len(df)
    row_id = np.argsort(np.argsort(row_id))  # each row's position in the loaded order
    assert data.names == tuple(c.name for c in plan.qis)
    for i, c in enumerate(plan.qis):
        col = data.columns[i]
        for r, v in zip(row_id, col, strict=True):
            orig = df[c.name].iloc[int(r)]
            if c.kind == "numeric":
                assert np.isnan(v) if orig is None else v == as_number(orig), c.name
            else:
                domain = st.domains[c.name].to_pylist()
                assert (None if v == len(domain) else domain[v]) == orig, c.name


def test_stats_on_a_hand_table(hand):
    con, plan, st = hand
    check_stats(con, HAND, HAND_TYPES, HAND_QIS, plan, st)


def test_stats_hand_numbers(hand):
    # a few figures read off the table by eye, so the pandas reference is itself checked
    _, _, st = hand
    assert st.n_rows == 8
    assert (st.distinct["n"], st.nulls["n"], st.lo["n"], st.hi["n"]) == (4, 2, -2.0, 10.0)
    assert (st.lo["d"], st.hi["d"]) == (18261.0, 18687.0)  # 2019-12-31 and 2021-03-01 in days
    assert st.value_counts["city"].tolist() == [1, 3, 2, 2]  # Lima, Oslo, Rome, NULL
    assert st.domains["flag"].to_pylist() == [False, True]
    assert [c.name for c in stats.categorical_order(hand[1], st.distinct, st.nulls)] == [
        "one",
        "sex",
        "flag",
        "city",
    ]
    assert st.pair_counts[("sex", "flag")].tolist() == [[2, 2, 0], [0, 2, 2]]


def test_pull_on_a_hand_table(hand):
    con, plan, st = hand
    check_pull(con, HAND, HAND_TYPES, plan, st)


def test_stats_and_pull_match_pandas(engine):
    @settings(max_examples=examples(engine, 25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(tables())
    def matches(case: TableCase) -> None:
        with connected(engine(case)) as eng:
            plan = make_plan(eng, "t", case.qis, sensitive=("sid", "dis"))
            st = stats.collect_stats(eng, plan, case.n)
            check_stats(eng, case.df, case.types, case.qis, plan, st)
            check_pull(eng, case.df, case.types, plan, st)

    matches()


def test_timestamp_ranges_are_microseconds(engine):
    times = pd.DataFrame(
        {"ts": ["1970-01-01 00:00:01", "1970-01-02", None], "dis": ["a", "b", "c"]}, dtype=object
    )
    with connected(engine.frame(times, {"ts": "TIMESTAMP"})) as eng:
        plan = make_plan(eng, "t", ["ts"])
        st = stats.collect_stats(eng, plan, 3)
    assert (st.lo["ts"], st.hi["ts"], st.nulls["ts"]) == (1e6, 86_400e6, 1)


# ---------------------------------------------------------------------------- golden SQL

SOURCE = 'we"ird; drop table x'
RELEASE = 'rel"ease; drop table x'
VIEW = 'vi"ew; drop table x'
LABELS = 'lab"els; drop table x'
ROWS = 'ro"ws; drop table x'
CLASSES = 'cla"sses; drop table x'
LABELLED = 'lab"elled; drop table x'
NUM = 'se"l ect'
QUOTED = '"we""ird; drop table x"'


@pytest.fixture
def hostile(con):
    """A source with hostile table and column names, its labels, and a table named x."""
    con.execute("CREATE TABLE x (keep INTEGER)")
    con.execute("INSERT INTO x VALUES (42)")
    con.execute(
        f"CREATE TABLE {q(SOURCE)} ({q(NUM)} INTEGER, d DATE, {q('c at')} VARCHAR, c2 VARCHAR, dis VARCHAR)"
    )
    con.execute(
        f"INSERT INTO {q(SOURCE)} VALUES (1, '2020-01-01', 'a', 'u', 'p'), "
        "(2, NULL, 'a', 'v', 'q'), (NULL, '2020-01-03', 'b', 'u', 'r'), "
        "(4, '2020-01-04', NULL, 'w', 's')"
    )
    con.execute(
        f"CREATE TABLE {q(LABELS)} AS SELECT * FROM (VALUES (0, 0), (1, 0), (2, 1), "
        "(3, 1)) AS v(row_id, eq_class)"
    )
    plan = make_plan(con, SOURCE, [NUM, "d", "c at", "c2"])
    return con, plan


def slots(plan: spec.Plan) -> dict[str, dict]:
    """The slot values each template is rendered with (as the stages fill them, on DuckDB)."""
    row_id = exp.column("rowid", table="s")
    layout = metrics.Layout(plan.qis, plan.verbatim, plan.weights)
    numeric = [c.name for c in plan.numeric_qis]
    cats = [c.name for c in plan.categorical_qis]
    text_columns = [c.name for c in plan.columns]
    spans = templates.render("range_spans", release=RELEASE, original=SOURCE, key=NUM)
    range_pairs = templates.render(
        "value_pairs_range", release=RELEASE, original=SOURCE, key=NUM, spans=spans
    )
    set_pairs = templates.render("value_pairs_set", release=RELEASE, key="c at")
    joined = generalize.release_view_sql(plan.columns, RELEASE, ROWS, CLASSES).expression
    column = {c.name: c for c in plan.columns}
    return {
        "row_count": {"source": SOURCE},
        "distinct_counts": {
            "source": SOURCE,
            "col": [
                as_category(ref(c.name), c) if c.kind == "categorical" else ref(c.name) for c in plan.qis
            ],
        },
        "numeric_ranges": {"source": SOURCE, "num": [sql_number(ref(c.name), c) for c in plan.numeric_qis]},
        "categorical_counts": {
            "source": SOURCE,
            "cat": [ref(c) for c in cats],
            "m": [ref(cats[0])],
            "n": [ref(cats[1])],
        },
        "pull_rows": {
            "source": SOURCE,
            "row_id": row_id,
            "qi": [sql_number(ref(c.name), c) if c.kind == "numeric" else ref(c.name) for c in plan.qis],
        },
        "create_classes": {
            "classes": CLASSES,
            "labelled": generalize.labelled_join_sql(SOURCE, LABELS, row_id, [c.name for c in plan.qis]),
            "size": exp.Count(this=exp.Star()),
            "num": numeric,
            "cat": cats,
            "sets": [value_set(ref(c, "s"), len(cats)) for c in cats],
            "projection": generalize.classes_projection(plan),
        },
        "create_rows": {
            "rows": ROWS,
            "labelled": generalize.labelled_join_sql(SOURCE, LABELS, row_id, ["dis"]),
            "projection": [alias(ref(c.name, "s"), c.name) for c in plan.verbatim],
            "order": [ref(c.name, "s") for c in plan.verbatim],
        },
        "create_release_view": {
            "release": RELEASE,
            "rows": ROWS,
            "classes": CLASSES,
            "projection": generalize.release_projection(plan.columns),
        },
        "create_view": {
            "view": VIEW,
            "release": RELEASE,
            "num": [c.name for c in plan.numeric_qis if not c.temporal],
            "tnum": [c.name for c in plan.numeric_qis if c.temporal],
            "one": [],
            "mode": [],
            "cat": cats,
            "verb": ["dis"],
            "col": text_columns,
        },
        "labelled": {
            "labelled": LABELLED,
            "source": SOURCE,
            "row_id": row_id,
            "labels": LABELS,
            "col": [*(c.name for c in plan.qis), "dis"],
        },
        "label_coverage": {"source": SOURCE, "labelled": LABELLED},
        "class_sizes": {"release": RELEASE, "weight": metrics.row_weight(None)},
        "tuple_sizes": {"release": RELEASE, "qicol": layout.qi_columns()},
        "class_tuples": {"release": RELEASE, "same": verification.one_tuple_condition(layout)},
        "ncp": {
            "original": SOURCE,
            "release": CLASSES,
            "num": numeric,
            "cat": cats,
            "cost": [metrics.cost_expression(c) for c in layout.qis],
            "weight": metrics.row_weight(spec.CLASS_SIZE),
        },
        "class_checks": {
            "labelled": generalize.labelled_rows_sql(LABELLED, [c.name for c in layout.qis]),
            "rows": ROWS,
            "classes": CLASSES,
            "qi": [c.name for c in layout.qis],
            "inside": conj([verification.inside(c, "s", "g") for c in layout.qis if c.kind == "numeric"]),
            "cat": cats,
            "same": [same_key(ref(c, "s"), exp.column("sbc_value", "u"), column[c]) for c in cats],
        },
        "rows_missing": {
            "labelled": generalize.labelled_rows_sql(LABELLED, ["dis"]),
            "release": ROWS,
            "verb": ["dis"],
        },
        "k_anonymity": {"release": ROWS},
        "value_pairs_set": {"release": RELEASE, "key": "c at"},
        "range_spans": {"release": RELEASE, "original": SOURCE, "key": NUM},
        "value_pairs_range": {"release": RELEASE, "original": SOURCE, "key": NUM, "spans": spans},
        "value_pairs_two": {"first": range_pairs, "second": set_pairs},
        "key_cost": {
            "pairs": range_pairs,
            "original": SOURCE,
            "key": NUM,
            "match": same_key(exp.column("sbc_key", "p"), exp.column("sbc_key", "n"), column[NUM]),
        },
        "key_cost_range": {"spans": spans, "release": RELEASE, "original": SOURCE, "key": NUM},
        "verbatim_tuples": {"original": SOURCE, "verb": ["dis"]},
        "class_values": {
            "release": RELEASE,
            "original": SOURCE,
            "pairs": templates.render("value_pairs_two", first=range_pairs, second=set_pairs),
            "keys": [ref("sbc_key", "p"), ref("sbc_key2", "p")],
            "match": conj(
                [
                    same_key(ref(NUM, "s"), ref("sbc_key", "r"), column[NUM]),
                    same_key(ref("c at", "s"), ref("sbc_key2", "r"), column["c at"]),
                ]
                + [verification._same(c, "s", "r") for c in layout.verbatim]
            ),
            "qi": [c.name for c in plan.qis],
            "qicol": layout.qi_columns(),
            "verb": ["dis"],
            "inside": conj([verification.inside(c, "s", "r") for c in layout.qis]),
        },
        "class_table_checks": {"classes": CLASSES, "rows": ROWS},
        "same_rows": {
            "expected": joined,
            "actual": RELEASE,
            "col": ["eq_class", *layout.qi_columns(), "dis"],
        },
        # dis kept, against every QI (as stages.stats.kept_determinants_sql fills it)
        "kept_determinants": {
            "source": SOURCE,
            "kept": [ref("dis")],
            "flag": ["sbc_flag_0"],
            "sets": exp.GroupingSets(
                expressions=[exp.Tuple(expressions=[ref("dis")]), exp.Tuple(expressions=[])]
            ),
            "single": [stats.one_value(c) for c in plan.qis],
            "one": [f"sbc_one_{j}" for j in range(len(plan.qis))],
            "rows": "sbc_rows",
        },
    }


# the templates of the core pipeline (plan, stats, pull, generalize, verify, measure)
CORE_TEMPLATES = sorted(
    [
        "row_count",
        "distinct_counts",
        "numeric_ranges",
        "categorical_counts",
        "pull_rows",
        "create_classes",
        "create_rows",
        "create_release_view",
        "create_view",
        "labelled",
        "label_coverage",
        "class_sizes",
        "class_tuples",
        "tuple_sizes",
        "ncp",
        "class_checks",
        "rows_missing",
        "k_anonymity",
        "value_pairs_set",
        "range_spans",
        "value_pairs_range",
        "value_pairs_two",
        "key_cost",
        "key_cost_range",
        "verbatim_tuples",
        "class_values",
        "class_table_checks",
        "same_rows",
        "kept_determinants",
    ]
)


def test_every_core_template_has_a_golden_case(hostile):
    _, plan = hostile
    assert sorted(slots(plan)) == CORE_TEMPLATES
    on_disk = {p.stem for p in templates.sql_dir().glob("*.sql")}
    assert set(CORE_TEMPLATES) <= on_disk


# what one run of each read-only template returns on the hostile table
EXPECTED_ROWS = {
    "row_count": [(4,)],
    "class_sizes": [(2, 2, 2.0, 2, 2 * 2)],
    "label_coverage": [(4, 4, 0, 0, 0)],
    "class_checks": [(2, 2, 2, 4, 0, 0, 0, 0)],
    "class_tuples": [(0,)],
    "rows_missing": [(0, 0)],
    "key_cost": [(4, 4)],
    "key_cost_range": [(4, 4)],
    "verbatim_tuples": [(4,)],
    "class_values": [(0, 0, 0)],
    "class_table_checks": [(2, 2, 0)],
    "same_rows": [(0, 0)],
}


@pytest.mark.parametrize("name", CORE_TEMPLATES)
def test_golden_sql(hostile, name):
    con, plan = hostile
    sql = templates.render_sql(name, **slots(plan)[name])
    golden = GOLDEN / f"{name}.sql"
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        golden.write_text(sql + "\n", encoding="utf-8")
    assert golden.is_file(), f"no golden file; run with SBC_UPDATE_GOLDEN=1 to write {golden}"
    assert sql == golden.read_text(encoding="utf-8").rstrip("\n")
    # each hostile name is one quoted identifier: the SQL stays one statement, drops nothing
    quoted = [n for n in (SOURCE, RELEASE, VIEW, LABELS, ROWS, CLASSES, LABELLED) if q(n) in sql]
    assert quoted, "the template took no hostile name"
    assert sql.count("; drop table x") == sum(sql.count(q(n)) for n in quoted)
    statements = sqlglot.parse(sql, read=templates.DIALECT)
    assert len(statements) == 1
    assert statements[0] is not None and not list(statements[0].find_all(exp.Drop))
    needs = {
        "create_release_view": ["create_classes", "create_rows"],
        "class_checks": ["labelled", "create_classes", "create_rows"],
        "label_coverage": ["labelled"],
        "ncp": ["create_classes"],
        "rows_missing": ["labelled", "create_rows"],
        "k_anonymity": ["create_rows"],
        "class_table_checks": ["create_classes", "create_rows"],
    }
    for first in needs.get(
        name,
        ["create_classes", "create_rows", "create_release_view"]
        if name
        in (
            "create_view",
            "class_sizes",
            "class_tuples",
            "tuple_sizes",
            "value_pairs_set",
            "range_spans",
            "value_pairs_range",
            "value_pairs_two",
            "key_cost",
            "key_cost_range",
            "class_values",
            "same_rows",
        )
        else [],
    ):
        con.execute(templates.render_sql(first, **slots(plan)[first]))
    result = con.execute(sql).fetchall()
    if name in EXPECTED_ROWS:
        assert result == EXPECTED_ROWS[name]
    if name == "k_anonymity":
        assert sorted(result) == [(0, 2), (1, 2)]
    if name == "create_classes":
        assert con.execute(
            f"SELECT eq_class, class_size, {q(NUM + '_min')}, {q('c at')} FROM {q(CLASSES)}"
        ).fetchall() == [(0, 2, 1, ["a"]), (1, 2, 4, ["b", None])]
    if name == "create_rows":
        assert con.execute(f"SELECT * FROM {q(ROWS)}").fetchall() == [(0, "p"), (0, "q"), (1, "r"), (1, "s")]
    if name == "create_release_view":
        assert con.execute(f"SELECT count(*) FROM {q(RELEASE)}").fetchone() == (4,)
        assert con.execute(
            f"SELECT {q(NUM + '_min')}, {q(NUM + '_max')}, {q(NUM + '_has_null')}"
            f" FROM {q(RELEASE)} WHERE eq_class = 1 LIMIT 1"
        ).fetchone() == (4, 4, True)
    if name == "create_view":
        assert con.execute(
            f"SELECT {q(NUM)}, d, {q('c at')} FROM {q(VIEW)} ORDER BY eq_class LIMIT 1"
        ).fetchone() == ("1-2", "2020-01-01|NULL", "a")
    if name == "kept_determinants":
        # dis is distinct on the 4 rows: each group holds one value of every QI; over the whole
        # table (flag 1) no QI holds one value
        assert sorted(result) == [(0, 4, 4, 4, 4, 4, 4), (1, 1, 4, 0, 0, 0, 0)]
    if name == "value_pairs_two":
        assert sorted(result, key=repr) == sorted(
            [(0, 1, "a"), (0, 2, "a"), (1, 4, "b"), (1, 4, None), (1, None, "b"), (1, None, None)], key=repr
        )
    # the injected "drop table x" never ran
    assert con.execute("SELECT keep FROM x").fetchall() == [(42,)]


def test_quoted_hostile_source_name(hostile):
    _, _plan = hostile
    sql = templates.render_sql("row_count", source=SOURCE)
    assert QUOTED in sql
    assert sql == f"SELECT COUNT(*) AS n_rows FROM {QUOTED}"


def test_names_that_look_like_slots_stay_names():
    # a column named like a slot is filled in once, as that column
    sql = templates.render_sql("numeric_ranges", source="__source", num=[ref("__source")])
    assert sql.count('"__source"') == 4
    sql = templates.render_sql("row_count", source="__release")
    assert sql.endswith('FROM "__release"')


def test_a_table_slot_takes_a_query():
    # a slot in a table position bound to a query reads that query's result, under the alias
    pairs = templates.render("value_pairs_set", release="rel", key="c at")
    match = exp.NullSafeEQ(this=exp.column("sbc_key", "p"), expression=exp.column("sbc_key", "n"))
    sql = templates.render_sql("key_cost", pairs=pairs, original="src", key="c at", match=match)
    assert 'FROM (SELECT b.eq_class, UNNEST(b."c at") AS sbc_key FROM (SELECT DISTINCT' in sql
    assert ') AS p LEFT JOIN (SELECT "c at" AS sbc_key' in sql


def test_unbound_and_mismatched_slots_are_errors():
    with pytest.raises(KeyError, match="__source"):
        templates.render_sql("row_count")
    with pytest.raises(ValueError, match="different lengths"):
        templates.render_sql(
            "categorical_counts", source="t", cat=[ref("a"), ref("b")], m=[ref("a")], n=[ref("b"), ref("c")]
        )


def test_parsed_templates_are_kept_and_a_damaged_copy_is_parsed_again(tmp_path, monkeypatch):
    folder = tmp_path / "sql"
    folder.mkdir()
    (folder / "row_count.sql").write_text(templates.load("row_count"))
    monkeypatch.setattr(templates, "sql_dir", lambda: folder)
    templates.load.cache_clear()
    templates._parsed.cache_clear()
    try:
        fresh = templates.render_sql("row_count", source="t")
        (kept,) = (folder / "__pycache__").glob("row_count.*.pickle")
        templates._parsed.cache_clear()
        with monkeypatch.context() as m:
            m.setattr(templates.sqlglot, "parse_one", lambda *a, **k: pytest.fail("parsed again"))
            assert templates.render_sql("row_count", source="t") == fresh
        kept.write_bytes(b"not a pickle")
        templates._parsed.cache_clear()
        assert templates.render_sql("row_count", source="t") == fresh
        (folder / "row_count.sql").write_text(templates.load("row_count") + "\nWHERE 1 = 0")
        templates.load.cache_clear()
        templates._parsed.cache_clear()
        assert templates.render_sql("row_count", source="t") == fresh + " WHERE 1 = 0"
    finally:
        templates.load.cache_clear()
        templates._parsed.cache_clear()


def test_the_kept_determinants_golden_case_is_what_the_stage_renders(hostile):
    _, plan = hostile
    dis = spec.Column("dis", "VARCHAR", "insensitive", "categorical")
    rendered = stats.kept_determinants_sql(SOURCE, [dis], plan.qis)
    assert rendered.sql(dialect="duckdb") == templates.render(
        "kept_determinants", **slots(plan)["kept_determinants"]
    ).sql(dialect="duckdb")
    # working names that would begin a column's name take another stem
    assert stats.work_stem(["a", "sbc_one_0"]) == "sbc_"


@pytest.mark.parametrize("kind", ["INTEGER", "DATE"])
def test_a_numeric_qis_pairs_and_cost_are_those_of_a_range_join(engine, kind) -> None:
    """value_pairs_range and key_cost_range (no range join: the values numbered, the classes'
    bounds located among them by one sort) give the pairs and costs of the range join of
    every class with every distinct value: bounds between values, on values, outside them,
    inverted, NULL, a class in two rows of different bounds, NULL values."""
    rng = np.random.default_rng(5)
    values = [None if rng.random() < 0.1 else int(v) for v in rng.integers(0, 40, 300)]
    bounds = []
    for c in range(60):
        lo, hi = sorted(int(v) for v in rng.integers(-5, 45, 2))
        if c % 11 == 0:
            lo, hi = hi + 1, lo  # inverted: holds nothing
        nulls = c % 7 == 0
        bounds.append((c, None if c % 13 == 0 else lo, None if c % 13 == 0 else hi, nulls))
    bounds.append((3, 1, 2, False))  # class 3 in a second row
    as_kind = (
        (lambda v: v)
        if kind == "INTEGER"
        else (lambda v: None if v is None else dt.date(2020, 1, 1) + dt.timedelta(days=v))
    )
    source = pd.DataFrame({"v": [as_kind(v) for v in values]})
    release = pd.DataFrame(
        {
            "eq_class": [b[0] for b in bounds],
            "v_min": [as_kind(b[1]) for b in bounds],
            "v_max": [as_kind(b[2]) for b in bounds],
            "v_has_null": [b[3] for b in bounds],
        }
    )
    database = engine.frame(source, {"v": kind}, name="src")
    engine.table(
        database,
        "rel",
        release,
        {"eq_class": "BIGINT", "v_min": kind, "v_max": kind, "v_has_null": "BOOLEAN"},
    )
    distinct = sorted({v for v in values if v is not None})
    counts = {v: values.count(v) for v in distinct}
    expected = sorted(
        [(c, v) for c, lo, hi, _ in set(bounds) if lo is not None for v in distinct if lo <= v <= hi]
        + [(c, None) for c in {b[0] for b in bounds if b[3]}],
        key=lambda p: (p[0], -1 if p[1] is None else p[1]),
    )
    met = sum(counts.get(v, values.count(None)) if v is not None else values.count(None) for _, v in expected)
    spans = templates.render("range_spans", release="rel", original="src", key="v")
    pairs = templates.render("value_pairs_range", release="rel", original="src", key="v", spans=spans)
    cost = templates.render("key_cost_range", spans=spans, release="rel", original="src", key="v")
    with connected(database) as e:
        got = e.fetch_all(pairs)
        got_cost = e.fetch_one(cost)
    back = (
        (lambda v: v)
        if kind == "INTEGER"
        else (lambda v: None if v is None else (v - dt.date(2020, 1, 1)).days)
    )
    got = sorted(((int(c), back(v)) for c, v in got), key=lambda p: (p[0], -1 if p[1] is None else p[1]))
    assert got == expected
    assert (int(got_cost[0]), int(got_cost[1])) == (len(expected), met)
