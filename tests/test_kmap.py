"""k-map and delta-presence against a population table (--population, --k-map, --delta-min,
--delta-max): the population matches each class's generalization as counted by hand, in
numpy and in SQL on every engine; the clustering merges the classes that match too few
rows or too large a share, and suppresses those whose share stays below delta-min within
--max-suppression; verification fails a release whose population no longer fits it; bad
input is one Error: line and writes nothing."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pandas as pd
import pytest
from helpers import assert_one_error, connected, make_table, run_cli

import sbc_sql
from sbc_sql import provenance
from sbc_sql.cluster.model import QIData
from sbc_sql.cluster.population import Matcher, Population, boxes, enforce

# the sample: two classes at k = 3, {20-22, F} and {40-42, M}
SAMPLE = pd.DataFrame({"age": [20, 21, 22, 40, 41, 42], "sex": list("FFFMMM"), "dx": list("abcabc")})
SAMPLE_TYPES = {"age": "INTEGER", "sex": "VARCHAR", "dx": "VARCHAR"}
# the population: 4 people inside the first class, 10 inside the second, and 3 inside
# neither (a woman of 23, two women of 41), which one class of both matches too: 17
POPULATION = pd.DataFrame(
    {
        "age": [20, 20, 21, 22, 23, *([40] * 3), *([41] * 4), *([42] * 3), 41, 41],
        "sex": [*"FFFFF", *"MMM", *"MMMM", *"MMM", "F", "F"],
    }
)
POPULATION_TYPES = {"age": "INTEGER", "sex": "VARCHAR"}
ROLES = {"qi": "age,sex", "sensitive": "dx"}


def _database(engine):
    database = engine.frame(SAMPLE, SAMPLE_TYPES)
    engine.table(database, "p", POPULATION, POPULATION_TYPES)
    return database


@pytest.mark.parametrize(
    ("asked", "classes", "achieved"),
    [
        ({"k_map": 5}, 1, {"fewest_population_matches": 17}),
        ({"delta_max": 0.5}, 1, {"smallest_delta": 6 / 17, "largest_delta": 6 / 17}),
        (
            {"k_map": 4, "delta_max": 0.8},
            2,
            {"fewest_population_matches": 4, "smallest_delta": 3 / 10, "largest_delta": 3 / 4},
        ),
    ],
    ids=["merged", "delta-merged", "both-kept"],
)
def test_the_hand_computed_population_figures(engine, asked, classes, achieved) -> None:
    """Each class's matches as counted above: kept where they suffice, the two classes
    merged into one of 17 matches where 4 are too few for k-map 5 or 3 of 4 too large a
    share for delta-max 0.5; verified in the run and again by an auditor. The provenance
    records each criterion with its bounds and its population."""
    database = _database(engine)
    with sbc_sql.anonymize(database, "t", 3, **ROLES, population="p", output="r", **asked) as result:
        assert result.verdict is not None and result.verdict.ok
        assert result.measures is not None and result.measures.classes == classes
        for key, value in achieved.items():
            assert result.achieved[key] == pytest.approx(value)
    audit = sbc_sql.verify(database, "t", "r", 3, population="p", **asked)
    assert audit.ok, audit.problems
    with connected(database) as e:
        read = provenance.parse(e.comment("r"))
    assert read is not None
    recorded = [m for m in read.document["privacy_models"] if m["name"] != "k-anonymity"]
    expected = [] if "k_map" not in asked else [{"name": "k-map", "k_map": asked["k_map"], "population": "p"}]
    if "delta_max" in asked:
        expected.append(
            {"name": "delta-presence", "delta_min": 0.0, "delta_max": asked["delta_max"], "population": "p"}
        )
    assert recorded == expected


def test_a_population_that_no_longer_fits_fails_the_audit(engine) -> None:
    """Three of the four people inside the first class left the population (a census
    later): the release made against it fails k-map 4 against the smaller one, and
    delta-max 0.8 (3 rows over 1 match)."""
    database = _database(engine)
    later = POPULATION[~((POPULATION.sex == "F") & POPULATION.age.isin([20, 21]))]
    engine.table(database, "p_later", later, POPULATION_TYPES)
    with sbc_sql.anonymize(database, "t", 3, **ROLES, population="p", k_map=4, output="r"):
        pass
    assert sbc_sql.verify(database, "t", "r", 3, population="p", k_map=4, delta_max=0.8).ok
    audit = sbc_sql.verify(database, "t", "r", 3, population="p_later", k_map=4, delta_max=0.8)
    assert not audit.ok
    assert any(
        "1 class(es) match fewer than k-map=4 rows of the population 'p_later' (the fewest: 1)" in p
        for p in audit.problems
    ), audit.problems
    assert any("delta outside [0, 0.8]" in p for p in audit.problems), audit.problems


def test_a_class_that_keeps_too_small_a_share_is_suppressed() -> None:
    """delta-min 0.25: the second class, 3 rows of 10 matches, keeps it; with 13 more men of
    41 in the population it holds 3 of 23 (0.13) and its rows are suppressed, within
    --max-suppression 0.5, with their reason; too small a budget is one Error: line."""
    con = duckdb.connect()
    make_table(con, "t", SAMPLE, SAMPLE_TYPES)
    more = pd.concat([POPULATION, pd.DataFrame({"age": [41] * 13, "sex": ["M"] * 13})])
    make_table(con, "p", more, POPULATION_TYPES)
    with sbc_sql.anonymize(
        con, "t", 3, **ROLES, population="p", delta_min=0.25, max_suppression=0.5, output="r"
    ) as result:
        assert result.verdict is not None and result.verdict.ok
        assert result.suppressed_by == {"delta_min": 3}
        assert result.achieved["smallest_delta"] == pytest.approx(3 / 4)
    with pytest.raises(sbc_sql.InputError, match=r"delta_min=0.25: classes of 3 more row\(s\)"):
        sbc_sql.anonymize(con, "t", 3, **ROLES, population="p", delta_min=0.25, output="r2")
    assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE 'r2%'").fetchone() == (0,)


def _random(seed: int) -> tuple[QIData, Population]:
    rng = np.random.default_rng(seed)
    n, m = 300, 600
    age = rng.integers(18, 80, n).astype(np.float64)
    age[rng.random(n) < 0.05] = np.nan
    job = rng.integers(0, 6, n).astype(np.int32)
    data = QIData(("age", "job"), (True, False), (age, job), (18.0, 0.0), (79.0, 0.0), (0, 6), (1.0, 1.0))
    p_age = rng.integers(15, 85, m).astype(np.float64)
    p_age[rng.random(m) < 0.05] = np.nan
    p_job = rng.integers(-1, 6, m).astype(np.int32)  # -1: a job the sample lacks
    return data, Population((p_age, p_job), rng.integers(1, 4, m).astype(np.int64))


def _brute(data: QIData, population: Population, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each class's rows and population matches, one tuple at a time."""
    ids = np.unique(labels[labels >= 0])
    rows, matched = [], []
    for c in ids:
        members = labels == c
        age, job = data.columns[0][members], data.columns[1][members]
        lo, hi, null = (
            np.nanmin(age) if (~np.isnan(age)).any() else np.inf,
            np.nanmax(age) if (~np.isnan(age)).any() else -np.inf,
            np.isnan(age).any(),
        )
        jobs = set(job.tolist())
        count = 0
        for a, j, r in zip(population.columns[0], population.columns[1], population.rows, strict=True):
            inside_age = null if np.isnan(a) else lo <= a <= hi
            if inside_age and int(j) in jobs:
                count += int(r)
        rows.append(int(members.sum()))
        matched.append(count)
    return np.array(rows), np.array(matched)


@pytest.mark.parametrize("seed", range(4))
def test_the_merges_keep_k_map_and_delta_max_as_counted_one_by_one(seed: int) -> None:
    data, population = _random(seed)
    # classes of 5 rows in the order of (job, age): narrow, each matching few people
    labels = np.empty(data.n_rows, dtype=np.int64)
    labels[np.lexsort((data.columns[0], data.columns[1]))] = np.arange(data.n_rows) // 5
    rows, matched = _brute(data, population, labels)
    assert (
        Matcher(data, population).all_matches(boxes(data, labels, int(labels.max()) + 1)) == matched
    ).all()
    k_map, delta_max = 60, 0.5
    assert ((matched < k_map) | (rows > delta_max * matched)).any()  # the test asks something
    enforced = enforce(data, labels, population, k_map, delta_max)
    rows, matched = _brute(data, population, enforced.labels)
    assert (matched >= k_map).all() and (rows <= delta_max * matched).all()
    assert (rows >= 5).all() and (enforced.labels >= 0).all()
    assert (enforced.matched == matched).all()
    assert enforced.merged == int(labels.max()) + 1 - len(rows)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--k-map", "5"], "--k-map is checked against a population table: give --population TABLE"),
        (["--population", "p"], "--population 'p' is given without a criterion over it"),
        (
            ["--population", "nope", "--k-map", "4"],
            "--population 'nope' is not a table or view of the database",
        ),
        (["--population", "p_nosex", "--k-map", "4"], "--population 'p_nosex' has no column 'sex'"),
        (["--population", "p_text", "--k-map", "4"], "column 'age' of --population 'p_text' is VARCHAR"),
        (
            ["--population", "p", "--k-map", "40"],
            "--k-map 40: the whole table, as one class, matches 17 rows",
        ),
        (["--population", "p", "--delta-max", "0.2"], "--delta-max 0.2: the whole table's 6 rows are 0.3529"),
        (["--population", "p", "--k-map", "1"], "--k-map 1 is not a whole number of 2 or more"),
        (["--population", "p", "--delta-min", "0.6", "--delta-max", "0.5"], "--delta-min 0.6 is not below"),
        (["--population", "p", "--delta-max", "1.5"], "--delta-max 1.5 is outside [0, 1]"),
        (["--population", "p", "--k-map", "4", "--incremental"], "drop --incremental"),
        (["--population", "p", "--k-map", "4", "--max-width", "age=5"], "--max-width and --max-values"),
        (["--population", "p", "--k-map", "4", "--mode", "streamed"], "drop --mode streamed"),
    ],
)
def test_bad_input_is_one_error_and_writes_nothing(tmp_path, args, message) -> None:
    db = tmp_path / "k.duckdb"
    with duckdb.connect(str(db)) as con:
        make_table(con, "t", SAMPLE, SAMPLE_TYPES)
        make_table(con, "p", POPULATION, POPULATION_TYPES)
        make_table(con, "p_nosex", POPULATION[["age"]], {"age": "INTEGER"})
        make_table(con, "p_text", POPULATION, {"age": "VARCHAR", "sex": "VARCHAR"})
    res = run_cli(
        ["anonymize", "--db", db, "-t", "t", "-k", "3", "--qi", "age,sex", "--sensitive", "dx", *args]
    )
    assert_one_error(res, message)
    with duckdb.connect(str(db), read_only=True) as con:
        names = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert names == {"t", "p", "p_nosex", "p_text"}


def test_the_command_line_says_what_it_verified(tmp_path) -> None:
    db = tmp_path / "k.duckdb"
    with duckdb.connect(str(db)) as con:
        make_table(con, "t", SAMPLE, SAMPLE_TYPES)
        make_table(con, "p", POPULATION, POPULATION_TYPES)
    res = run_cli(
        ["anonymize", "--db", db, "-t", "t", "-k", "3", "--qi", "age,sex", "--sensitive", "dx"]
        + ["--population", "p", "--k-map", "5", "--json"]
    )
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["population"] == {
        "table": "p",
        "asked": {"k_map": 5},
        "achieved": {"fewest_population_matches": 17},
    }
    res = run_cli(
        ["anonymize", "--db", db, "-t", "t", "-k", "3", "--qi", "age,sex", "--sensitive", "dx", "-o", "r2"]
        + ["--population", "p", "--k-map", "5"]
    )
    assert (
        "verified k-map k=5 against the population 'p': each class matches at least 17 population rows"
        in res.stdout
    )
    assert "population 'p': 1 class(es) merged for k-map k=5" in res.stderr
    res = run_cli(
        [
            "verify",
            "--db",
            db,
            "--original",
            "t",
            "--release",
            "r2",
            "-k",
            "3",
            "--population",
            "p",
            "--k-map",
            "18",
        ]
    )
    assert res.exit_code == 3
    assert "match fewer than k-map=18 rows of the population 'p' (the fewest: 17)" in res.stderr
    res = run_cli(
        [
            "verify",
            "--db",
            db,
            "--original",
            "t",
            "--release",
            "r2",
            "-k",
            "3",
            "--population",
            "p",
            "--k-map",
            "17",
        ]
    )
    assert res.exit_code == 0, res.stderr
    assert res.stdout.startswith(
        "ok: 'r2' is 3-anonymous, k-map k=17 against the population 'p', and complete"
    )
