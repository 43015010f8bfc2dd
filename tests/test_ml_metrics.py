"""evaluate --target: CM and class purity by hand and against pandas on Adult; --model's
accuracy ratio on Adult at k=10, its reproducibility, its rows; bad input; CLI text and JSON;
PostgreSQL equal to DuckDB; the SQL Spark runs.

The hand release: (age, sex) QIs, label verbatim, three classes and one suppressed row,
  class 0: ages 20, 22, 24; labels yes, yes, no      -> majority yes, 2 of 3
  class 1: ages 40, 44, 50, 52; labels no, no, no, yes -> majority no, 3 of 4
  class 2: ages 60, 61, 62; labels NULL, NULL, yes     -> majority NULL (a label), 2 of 3
  suppressed: age 90, label yes
n = 11, released 10, majority rows 7: misclassified 3, CM = (3 + 1) / 11,
class purity = (2/3 + 3/4 + 2/3) / 3 = 25/36, row purity = 7/10.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import duckdb
import jsonschema
import numpy as np
import pytest
import sqlglot
from helpers import load_example, run_cli, to_postgres

import sbc_sql
from sbc_sql import documents, engines
from sbc_sql.api import _layout
from sbc_sql.errors import InputError
from sbc_sql.quality import model as ml
from sbc_sql.quality import report
from sbc_sql.quality.classification import classification_sql, target_column
from sbc_sql.quality.evaluate import evaluate, evaluation_sql
from sbc_sql.sql.dialects.postgres import SbcPostgres
from sbc_sql.sql.dialects.spark import SbcSpark

datasets = load_example("benchmarks/datasets.py")

HAND = [
    (20, "M", "yes", 0),
    (22, "M", "yes", 0),
    (24, "F", "no", 0),
    (40, "F", "no", 1),
    (44, "F", "no", 1),
    (50, "F", "no", 1),
    (52, "M", "yes", 1),
    (60, "M", None, 2),
    (61, "F", None, 2),
    (62, "M", "yes", 2),
    (90, "M", "yes", -1),
]


def q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def make_pair(
    con: duckdb.DuckDBPyConnection, rows: list[tuple], original: str = "t", release: str = "r"
) -> None:
    """``original`` (age, sex, label) and its release for the class of each row (-1: suppressed)."""
    con.execute(f"CREATE TABLE {q(original)} (age INTEGER, sex VARCHAR, label VARCHAR)")
    con.executemany(f"INSERT INTO {q(original)} VALUES (?, ?, ?)", [r[:3] for r in rows])
    con.execute("CREATE TEMP TABLE lab (age INTEGER, sex VARCHAR, label VARCHAR, eq_class BIGINT)")
    con.executemany("INSERT INTO lab VALUES (?, ?, ?, ?)", rows)
    con.execute(f"""
        CREATE TABLE {q(release)} AS
        WITH x AS (SELECT * FROM lab WHERE eq_class >= 0),
        c AS (SELECT eq_class, MIN(age) AS age_min, MAX(age) AS age_max,
                     BOOL_OR(age IS NULL) AS age_has_null, list_sort(list(DISTINCT sex)) AS sex
              FROM x GROUP BY eq_class)
        SELECT c.eq_class, c.age_min, c.age_max, c.age_has_null, c.sex, x.label
        FROM x JOIN c USING (eq_class) ORDER BY c.eq_class, x.label""")
    con.execute("DROP TABLE lab")


def banded(n: int = 300, seed: int = 1) -> list[tuple]:
    """n rows, the label mostly age > 50, classes of 10 consecutive ages; every 30th row
    suppressed."""
    rng = np.random.default_rng(seed)
    ages = np.sort(rng.integers(20, 80, n))
    rows = []
    for i, age in enumerate(ages.tolist()):
        label = "hi" if (age > 50) != (rng.random() < 0.1) else "lo"
        sex = "F" if rng.random() < 0.5 else "M"
        rows.append((age, sex, label, -1 if i % 30 == 29 else i // 10))
    return rows


@pytest.fixture
def con():
    connection = duckdb.connect()
    yield connection
    connection.close()


# ---------------------------------------------------------------------------------------
# CM and purity


def test_cm_and_purity_by_hand(con) -> None:
    make_pair(con, HAND)
    e = evaluate(con, "t", "r", target="label", queries=0)
    assert (e.n_rows, e.released, e.suppressed) == (11, 10, 1)
    assert e.target == "label"
    assert e.misclassified == 3
    assert e.cm == pytest.approx(4 / 11, abs=1e-12)
    assert e.class_purity == pytest.approx(25 / 36, abs=1e-12)
    assert e.row_purity == pytest.approx(7 / 10, abs=1e-12)
    assert e.model_accuracy_ratio is None  # no --model
    plain = evaluate(con, "t", "r", queries=0)
    assert plain.cm is None and "classification" not in report.grouped(plain)


def test_a_tie_counts_one_majority(con) -> None:
    rows = [(20, "M", "a", 0), (21, "M", "b", 0), (30, "F", "a", 1), (31, "F", "a", 1)]
    make_pair(con, rows)
    e = evaluate(con, "t", "r", target="label", queries=0)
    assert (e.misclassified, e.cm, e.class_purity, e.row_purity) == (1, 0.25, 0.75, 0.75)


@pytest.fixture(scope="module")
def adult_db(tmp_path_factory) -> Path:
    """Adult's 8 QIs and income, and its release at k=10 with income kept."""
    path = tmp_path_factory.mktemp("ml") / "adult.duckdb"
    with duckdb.connect(str(path)) as con:
        datasets.load_adult(con, "adult", columns=[*datasets.ADULT_QIS_8, "income"])
        sbc_sql.anonymize(con, "adult", 10, qi=datasets.ADULT_QIS_8, keep=["income"], output="adult_k10")
    return path


def test_cm_equals_pandas_on_adult(adult_db: Path) -> None:
    e = evaluate(adult_db, "adult", "adult_k10", target="income", queries=0)
    with duckdb.connect(str(adult_db), read_only=True) as con:
        n = con.execute("SELECT COUNT(*) FROM adult").fetchall()[0][0]
        release = con.sql("SELECT eq_class, income FROM adult_k10").df()
    counts = release.groupby(["eq_class", "income"], dropna=False).size()
    majority = counts.groupby(level="eq_class").max()
    sizes = release.groupby("eq_class").size()
    assert e.n_rows == n and e.released == len(release)
    assert e.misclassified == len(release) - int(majority.sum())
    assert e.cm == pytest.approx((n - majority.sum()) / n, abs=1e-12)
    assert e.class_purity == pytest.approx(float((majority / sizes).mean()), abs=1e-12)
    assert e.row_purity == pytest.approx(majority.sum() / len(release), abs=1e-12)
    assert 0 < e.cm < 0.25  # Adult's income is 75 % one label: a class mixes few


# ---------------------------------------------------------------------------------------
# --model


@pytest.mark.slow
def test_model_on_adult_k10_keeps_accuracy_and_repeats(adult_db: Path) -> None:
    first = evaluate(adult_db, "adult", "adult_k10", target="income", model=True, queries=0)
    again = evaluate(adult_db, "adult", "adult_k10", target="income", model=True, queries=0)
    assert first.as_dict() == again.as_dict()
    assert first.model_classifier == "gbt" and first.model_seed == 0
    assert first.model_accuracy_ratio is not None and 0.8 < first.model_accuracy_ratio <= 1.05
    assert first.model_accuracy_ratio == pytest.approx(
        first.model_accuracy_release / first.model_accuracy_original, abs=1e-12
    )
    assert first.model_accuracy_original > 0.8  # a model of the original is a real model
    assert first.model_f1_average == "binary" and first.model_f1_ratio is not None
    assert first.model_test == round(first.n_rows * 0.3)
    assert first.model_train_original + first.model_test == first.n_rows
    # the release trains on the same rows but the suppressed ones
    assert 0 <= first.model_train_original - first.model_train_release <= first.suppressed
    other = evaluate(adult_db, "adult", "adult_k10", target="income", model=True, queries=0, seed=1)
    assert other.model_accuracy_original != first.model_accuracy_original  # another split
    logistic = evaluate(
        adult_db, "adult", "adult_k10", target="income", model=True, classifier="logistic", queries=0
    )
    assert logistic.model_accuracy_ratio is not None and 0.8 < logistic.model_accuracy_ratio <= 1.05


def test_every_release_row_stands_for_an_input_row_on_adult(adult_db: Path) -> None:
    """The release has no row ids: the matching pairs each of its rows with an input row."""
    with engines.reading(adult_db) as engine:
        layout = _layout(engine, "adult", "adult_k10", None)
        target = target_column(layout, "income", "adult")
        assert target is not None
        source = engine.fetch_arrow(ml.rows_sql(layout, "adult", target, release=False))
        release = engine.fetch_arrow(ml.rows_sql(layout, "adult_k10", target, release=True))
    data = ml._data(layout, source, release, target)
    assert data.unmatched == 0 and int(data.held.sum()) == release.num_rows


def test_model_leaves_suppressed_rows_out_of_the_release_training_set(con) -> None:
    rows = banded()
    make_pair(con, rows)
    e = evaluate(con, "t", "r", target="label", model=True, queries=0)
    suppressed = sum(r[3] < 0 for r in rows)
    assert e.suppressed == suppressed == 10
    assert e.model_train_original + e.model_test == len(rows)
    # every suppressed row is missing from the release's training rows, and no other
    held_out = e.model_train_original - e.model_train_release
    assert 0 < held_out <= suppressed
    assert e.model_accuracy_original > 0.75 and 0.8 < e.model_accuracy_ratio <= 1.05
    assert evaluate(con, "t", "r", target="label", model=True, queries=0).as_dict() == e.as_dict()
    with engines.reading(con) as engine:
        layout = _layout(engine, "t", "r", None)
        target = target_column(layout, "label", "t")
        assert target is not None
        source = engine.fetch_arrow(ml.rows_sql(layout, "t", target, release=False))
        release = engine.fetch_arrow(ml.rows_sql(layout, "r", target, release=True))
    data = ml._data(layout, source, release, target)
    assert data.unmatched == 0 and int((~data.held).sum()) == suppressed


def test_three_labels_score_macro_f1(con) -> None:
    rows = [(a, s, {"lo": "a", "hi": "b"}[lab] if a % 3 else "c", c) for a, s, lab, c in banded(seed=2)]
    make_pair(con, rows)
    e = evaluate(con, "t", "r", target="label", model=True, classifier="logistic", queries=0)
    assert e.model_f1_average == "macro" and e.model_classifier == "logistic"
    assert e.model_f1_original is not None and 0 < e.model_f1_original <= 1


# ---------------------------------------------------------------------------------------
# bad input


def test_target_that_is_a_qi_is_refused(con) -> None:
    make_pair(con, HAND)
    with pytest.raises(InputError, match=r"--target 'age' is a generalized QI.*--keep age"):
        evaluate(con, "t", "r", target="age", queries=0)


def test_missing_target_is_refused(con) -> None:
    make_pair(con, HAND)
    with pytest.raises(InputError, match=r"--target 'nope' is not a column .*pass one of: label"):
        evaluate(con, "t", "r", target="nope", queries=0)


def test_model_without_target_is_refused(con) -> None:
    make_pair(con, HAND)
    with pytest.raises(InputError, match=r"--model .* --target COLUMN"):
        evaluate(con, "t", "r", model=True, queries=0)


def test_model_without_scikit_learn_names_the_extra(con, monkeypatch) -> None:
    make_pair(con, HAND)
    monkeypatch.setitem(sys.modules, "sklearn", None)  # import sklearn raises ImportError
    with pytest.raises(InputError, match=r"pip install 'sbc-sql\[ml\]'"):
        evaluate(con, "t", "r", target="label", model=True, queries=0)


def test_a_label_of_one_row_cannot_be_split(con) -> None:
    make_pair(con, [(20, "M", "a", 0), (21, "M", "b", 0), (30, "F", "a", 1), (31, "F", "a", 1)])
    with pytest.raises(InputError, match=r"two rows of each label; 1 label\(s\) have one row"):
        evaluate(con, "t", "r", target="label", model=True, queries=0)


# ---------------------------------------------------------------------------------------
# CLI


@pytest.fixture
def hand_db(tmp_path: Path) -> Path:
    path = tmp_path / "hand.duckdb"
    with duckdb.connect(str(path)) as con:
        make_pair(con, HAND)
        make_pair(con, banded(), "b", "br")
    return path


def test_cli_text_and_json(hand_db: Path) -> None:
    pair = ["evaluate", "--db", hand_db, "--original", "t", "--release", "r", "--queries", 0, "-q"]
    res = run_cli([*pair, "--target", "label"])
    assert res.exit_code == 0, res.stderr
    assert "Classification" in res.stdout
    line = next(x for x in res.stdout.splitlines() if x.strip().startswith("CM "))
    assert "0.3636" in line and "lower is better" in line
    assert "class purity" in res.stdout and "row purity" in res.stdout
    res = run_cli([*pair, "--target", "label", "--json"])
    doc = json.loads(res.stdout)
    jsonschema.Draft202012Validator(documents.schema("evaluate")).validate(doc)
    group = doc["classification"]
    assert group["cm"]["value"] == pytest.approx(4 / 11) and group["cm"]["better"] == "lower"
    assert group["class_purity"]["value"] == pytest.approx(25 / 36)
    assert group["target"]["value"] == "label" and "model_accuracy_ratio" not in group


def test_cli_model_json(hand_db: Path) -> None:
    args = ["evaluate", "--db", hand_db, "--original", "b", "--release", "br", "--queries", 0, "-q"]
    res = run_cli([*args, "--target", "label", "--model", "--classifier", "logistic", "--seed", 3, "--json"])
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)
    jsonschema.Draft202012Validator(documents.schema("evaluate")).validate(doc)
    group = doc["classification"]
    assert group["model_classifier"]["value"] == "logistic" and group["model_seed"]["value"] == 3
    assert 0 < group["model_accuracy_ratio"]["value"] <= 1.05
    text = run_cli([*args, "--target", "label", "--model"])
    assert text.exit_code == 0 and "accuracy ratio" in text.stdout and "F1 ratio" in text.stdout
    for value in ("hi", "lo"):  # no label is ever shown
        assert f" {value} " not in text.stdout and f'"{value}"' not in res.stdout


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--target", "age"], "--target 'age' is a generalized QI"),
        (["--target", "nope"], "--target 'nope' is not a column"),
        (["--model"], "--model trains a classifier of a label"),
    ],
)
def test_cli_bad_input_is_one_error_line(hand_db: Path, extra: list[str], says: str) -> None:
    res = run_cli(["evaluate", "--db", hand_db, "--original", "t", "--release", "r", "-q", *extra])
    assert res.exit_code == 1 and res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and says in lines[0]


def test_cli_sql_prints_the_classification_and_the_pulls(hand_db: Path) -> None:
    args = ["evaluate", "--db", hand_db, "--original", "t", "--release", "r", "--target", "label"]
    res = run_cli([*args, "--model", "--sql"])
    assert res.exit_code == 0, res.stderr
    assert "sbc_majority" in res.stdout and 'AS TEXT[]) AS "sbc_' in res.stdout


# ---------------------------------------------------------------------------------------
# engines


def test_spark_and_postgres_render_the_sql(con) -> None:
    make_pair(con, HAND)
    with engines.reading(con) as engine:
        layout = _layout(engine, "t", "r", None)
    target = target_column(layout, "label", "t")
    assert target is not None
    for dialect, read in ((SbcSpark, "spark"), (SbcPostgres, "postgres")):
        cm = classification_sql("t", "r", target).sql(dialect=dialect)
        sqlglot.parse_one(cm, read=read)
        pull = ml.rows_sql(layout, "r", target, release=True).sql(dialect=dialect)
        sqlglot.parse_one(pull, read=read)
    spark = classification_sql("t", "r", target).sql(dialect=SbcSpark)
    assert "GROUP BY eq_class, `label`" in spark and "DECIMAL(38, 18)" in spark
    assert "ARRAY<STRING>" in ml.rows_sql(layout, "r", target, release=True).sql(dialect=SbcSpark)
    statements = evaluation_sql(con, "t", "r", target="label", model=True)
    assert any("sbc_majority" in s for s in statements)


@pytest.mark.postgres
def test_postgres_equals_duckdb(con, postgres_url: str) -> None:
    make_pair(con, HAND)
    make_pair(con, banded(), "b", "br")
    for table in ("t", "r", "b", "br"):
        to_postgres(con, table, postgres_url)
    got = evaluate(postgres_url, "t", "r", target="label", queries=0)
    want = evaluate(con, "t", "r", target="label", queries=0)
    assert (got.cm, got.misclassified, got.row_purity) == (want.cm, want.misclassified, want.row_purity)
    assert got.class_purity == pytest.approx(want.class_purity, abs=1e-12)
    got = evaluate(postgres_url, "b", "br", target="label", model=True, queries=0)
    want = evaluate(con, "b", "br", target="label", model=True, queries=0)
    fields = [k for k in want.as_dict() if k.startswith("model_") or k in ("cm", "row_purity")]
    assert {k: got.as_dict()[k] for k in fields} == {k: want.as_dict()[k] for k in fields}
