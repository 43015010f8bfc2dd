"""sbc-sql suggest-k: the largest k under a loss threshold, checked against anonymize run
independently at the k chosen and at the next k tried; the threshold's score by hand."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from helpers import adult_file, load_example

import sbc_sql
from sbc_sql.errors import InputError
from sbc_sql.quality.suggest import score, suggest_k, threshold_of

datasets = load_example("benchmarks/datasets.py")


@pytest.fixture(scope="module")
def adult_db(tmp_path_factory) -> Path:
    return adult_file(tmp_path_factory.mktemp("adult"), datasets.ADULT_QIS_8)


def adult_roles() -> dict[str, list[str]]:
    return {"qi": datasets.ADULT_QIS_8}


@pytest.fixture
def small_db(tmp_path: Path) -> Path:
    """400 people over two numeric QIs and a categorical one."""
    rng = np.random.default_rng(7)
    frame = pd.DataFrame(
        {
            "age": rng.integers(18, 90, 400),
            "zip": rng.integers(10000, 10100, 400),
            "sex": rng.choice(["F", "M"], 400),
            "dx": rng.choice(["a", "b", "c", "d"], 400),
        }
    )
    path = tmp_path / "small.duckdb"
    with duckdb.connect(str(path)) as con:
        con.register("frame", frame)
        con.execute("CREATE TABLE people AS SELECT * FROM frame")
    return path


ROLES = ["--qi", "age,zip,sex", "--keep", "dx"]


def tables(path: Path) -> list[str]:
    with duckdb.connect(str(path), read_only=True) as con:
        return sorted(
            r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
        )


def test_adult_at_0_05_is_under_and_the_next_k_tried_is_over(adult_db):
    before = tables(adult_db)
    found = suggest_k(str(adult_db), "adult", max_loss=0.05, **adult_roles())
    assert tables(adult_db) == before  # the search wrote nothing
    assert not found.at_limit and found.next_k is not None and found.next_k > found.k
    # the next larger k tried is the bisection's end: k + 1
    assert found.next_k == found.k + 1
    assert min(s.k for s in found.steps if s.k > found.k) == found.next_k
    # computed independently: anonymize at the two k and read the measures
    for k, under in ((found.k, True), (found.next_k, False)):
        with sbc_sql.anonymize(str(adult_db), "adult", k, output=f"adult_check_k{k}", **adult_roles()) as r:
            assert r.measures is not None
            ncp = r.measures.total_ncp
        assert (ncp <= 0.05) is under, (k, ncp)
        assert ncp == pytest.approx(found.step(k).ncp, abs=1e-9)
    # the curve: the risk at each k is 1 / its smallest class, the mean at most that
    for s in found.curve:
        assert s.smallest >= s.k and s.risk_highest == pytest.approx(1 / s.smallest)
        assert 0 < s.risk_mean <= s.risk_highest


def test_a_threshold_below_k2_is_refused_with_the_ncp_at_k2(small_db, cli):
    res = cli(["suggest-k", "--db", small_db, "-t", "people", *ROLES, "--max-loss", "0.0001", "-q"])
    assert res.exit_code == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: no k >= 2 stays under the threshold 0.0001")
    assert "at k=2 loses NCP" in lines[0] and "--max-loss" in lines[0]
    assert tables(small_db) == ["people"]


def test_a_threshold_above_every_k_returns_the_limit_and_says_so(small_db, cli):
    found = sbc_sql.suggest_k(str(small_db), "people", max_loss=0.99, k_max=20, qi="age,zip,sex", keep="dx")
    assert found.k == 20 and found.at_limit and found.next_k is None and found.limit == 20
    assert [s.k for s in found.steps] == [2, 4, 8, 16, 20]
    res = cli(["suggest-k", "--db", small_db, "-t", "people", *ROLES, "--max-loss", "0.99", "-q"])
    assert res.exit_code == 0
    assert "suggested k = 200" in res.stdout and "the limit, 200" in res.stdout  # half of 400 rows


@pytest.mark.parametrize(
    ("domain", "purpose", "criticality", "expected"),
    [
        ("sports", "review", "low", 25.0),  # everything lowest: 0.2*25 + 0.5*25 + 0.3*25
        ("financial", "data-mining", "very-high", 100.0),
        ("medical", "statistics", "high", 62.5),  # 15 + 25 + 22.5
        ("military", "review", "very-high", 57.5),  # 15 + 12.5 + 30
        ("sales", "complex-statistics", "middle", 62.5),  # 10 + 37.5 + 15
        ("public", "statistics", "low", 37.5),  # 5 + 25 + 7.5
    ],
)
def test_the_score_and_its_threshold_by_hand(domain, purpose, criticality, expected):
    assert score(domain, purpose, criticality) == pytest.approx(expected)
    threshold, how = threshold_of(domain=domain, purpose=purpose, criticality=criticality)
    assert threshold == pytest.approx(expected / 500)
    assert how["from"] == "score" and how["score"] == pytest.approx(expected)


def test_a_more_sensitive_input_allows_more_loss():
    base = threshold_of(domain="sales", purpose="statistics", criticality="middle")[0]
    assert threshold_of(domain="financial", purpose="statistics", criticality="middle")[0] > base
    assert threshold_of(domain="sales", purpose="data-mining", criticality="middle")[0] > base
    assert threshold_of(domain="sales", purpose="statistics", criticality="high")[0] > base


@pytest.mark.parametrize(
    ("given", "words"),
    [
        ({"domain": "medical", "purpose": "review"}, "--criticality missing"),
        ({"max_loss": 0.1, "domain": "medical"}, "both set the threshold"),
        ({"max_loss": 1.5}, "outside (0, 1)"),
        ({}, "needs --max-loss"),
    ],
)
def test_threshold_inputs_are_checked(given, words):
    with pytest.raises(InputError, match=words.replace("(", r"\(").replace(")", r"\)")):
        threshold_of(**given)


def test_apply_writes_the_release_as_anonymize_does_and_nothing_without_it(small_db, tmp_path, cli):
    res = cli(["suggest-k", "--db", small_db, "-t", "people", *ROLES, "--max-loss", "0.1", "-q", "--json"])
    assert res.exit_code == 0, res.stderr
    k = json.loads(res.stdout)["k"]
    assert tables(small_db) == ["people"]
    res = cli(["suggest-k", "--db", small_db, "-t", "people", *ROLES, "--max-loss", "0.1", "-q", "--apply"])
    assert res.exit_code == 0, res.stderr
    assert f"release written: people_k{k}" in res.stdout
    assert {f"people_k{k}", f"people_k{k}_rows", f"people_k{k}_classes", f"people_k{k}_view"} <= set(
        tables(small_db)
    )
    assert sbc_sql.verify(str(small_db), "people", f"people_k{k}", k).ok
    # the same figures as anonymize's release at that k
    applied = sbc_sql.measure(str(small_db), "people", f"people_k{k}")
    with sbc_sql.anonymize(
        str(small_db), "people", k, output="by_anonymize", qi="age,zip,sex", keep="dx"
    ) as r:
        assert r.measures is not None
        assert applied.total_ncp == pytest.approx(r.measures.total_ncp)
    # --output names it; taken already, it is refused as anonymize refuses it
    res = cli(
        [
            "suggest-k",
            "--db",
            small_db,
            "-t",
            "people",
            *ROLES,
            "--max-loss",
            "0.1",
            "--apply",
            "-o",
            "by_anonymize",
        ]
    )
    assert res.exit_code == 1 and res.stderr.startswith("Error:")


def test_the_command_line_text_and_json(small_db, cli):
    args = ["suggest-k", "--db", small_db, "-t", "people", *ROLES]
    args += ["--domain", "sports", "--purpose", "review", "--criticality", "low"]
    res = cli(args)
    assert res.exit_code == 0, res.stderr
    assert "threshold: total NCP <= 0.0500 (score 25 = 0.2 x domain sports" in res.stdout
    assert "suggested k = " in res.stdout and "nothing written" in res.stdout
    assert "k=2: NCP" in res.stderr  # a line per k tried, unless --quiet
    res = cli([*args, "--json", "-q"])
    assert res.exit_code == 0 and res.stderr == ""
    out = json.loads(res.stdout)
    assert set(out) == {
        "schema",
        "version",
        "ok",
        "k",
        "threshold",
        "derivation",
        "limit",
        "at_limit",
        "next_k",
        "ncp",
        "next_ncp",
        "runs",
        "applied",
        "seconds",
        "curve",
    }
    assert out["threshold"] == pytest.approx(0.05) and out["derivation"]["score"] == 25
    assert out["ncp"] <= 0.05 < out["next_ncp"]
    assert out["runs"] == len(out["curve"]) and out["applied"] is None
    assert [c["k"] for c in out["curve"]] == sorted(c["k"] for c in out["curve"])
    assert set(out["curve"][0]) >= {"k", "ncp", "under", "risk_highest", "risk_mean", "seconds"}


def test_bad_k_bounds_are_refused(small_db, cli):
    res = cli(["suggest-k", "--db", small_db, "-t", "people", *ROLES, "--max-loss", "0.1", "--k-min", "1"])
    assert res.exit_code == 1 and "--k-min 1 is below 2" in res.stderr
    res = cli(
        [
            "suggest-k",
            "--db",
            small_db,
            "-t",
            "people",
            *ROLES,
            "--max-loss",
            "0.1",
            "--k-max",
            "3",
            "--k-min",
            "5",
        ]
    )
    assert res.exit_code == 1 and "--k-max 3 is below --k-min 5" in res.stderr
    res = cli(["suggest-k", "--db", small_db, "-t", "people", *ROLES, "--max-loss", "0.1", "-o", "x"])
    assert res.exit_code == 1 and "add --apply" in res.stderr


def test_an_unknown_input_is_named():
    with pytest.raises(InputError, match="--domain 'space' is not one of medical, financial"):
        score("space", "review", "low")


def test_criteria_apply_as_in_anonymize(small_db):
    found = sbc_sql.suggest_k(
        str(small_db), "people", max_loss=0.2, qi="age,zip,sex", sensitive="dx", l_diversity=3, apply=True
    )
    assert found.applied == f"people_k{found.k}" and found.next_k == found.k + 1
    assert sbc_sql.verify(str(small_db), "people", found.applied, found.k, l_diversity=3).ok
    assert found.step(found.k).ncp <= 0.2 < found.step(found.k + 1).ncp
