"""l-diversity, t-closeness and beta-likeness checked by verify on every declared sensitive
column: a release that does not hold one fails (exit 3), and a bad threshold is one Error
line (exit 1)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

import sbc_sql
from sbc_sql.errors import InputError


@pytest.fixture
def clinic(tmp_path: Path) -> Path:
    """A sensitive column dx of 4 values, 2 for each sex, and an insensitive ward."""
    path = tmp_path / "c.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute(
            "CREATE TABLE t AS SELECT 20 + i // 8 AS age, ['F', 'M'][1 + i % 2] AS sex, "
            "'dx' || (i % 4) AS dx, 'w' || (i // 40) AS ward FROM range(160) AS r(i)"
        )
        con.execute("COMMENT ON COLUMN t.dx IS 'sbc:sensitive'")
        con.execute("COMMENT ON COLUMN t.ward IS 'sbc:insensitive'")
        sbc_sql.anonymize(con, "t", 8, output="r", qi="age,sex", sensitive="dx", keep="ward")
    return path


def test_criteria_that_hold_pass_and_name_themselves(clinic, cli):
    res = cli(
        ["verify", "--db", clinic, "--original", "t", "--release", "r", "-k", "8", "--l-diversity", "2"]
    )
    assert res.exit_code == 0, res.stderr
    assert res.stdout.startswith("ok: 'r' is 8-anonymous, distinct l-diversity l=2, and complete")
    verdict = sbc_sql.verify(str(clinic), "t", "r", 8, l_diversity=2, l_model="entropy", t_closeness=0.9)
    assert verdict.ok, verdict.problems


def test_a_criterion_that_fails_is_a_failing_release(clinic, cli):
    verdict = sbc_sql.verify(str(clinic), "t", "r", 8, l_diversity=4, t_closeness=0.01, beta_likeness=0.01)
    assert not verdict.ok
    text = " ".join(verdict.problems)
    # a class is one sex, so it holds two of the four diagnoses: l=2 holds, l=4 does not
    assert "fewer than l=4 distinct values of 'dx'" in text
    assert "farther than t=0.01" in text and "above enhanced beta=0.01" in text
    res = cli(
        ["verify", "--db", clinic, "--original", "t", "--release", "r", "-k", "8"]
        + ["--t-closeness", "0.01", "--beta-likeness", "0.01", "--beta-basic"]
    )
    assert res.exit_code == 3
    assert "above beta=0.01" in res.stderr


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"l_diversity": 1}, "not a whole number of 2 or more"),
        ({"l_diversity": 2.5}, "not a whole number of 2 or more"),
        ({"l_diversity": 5}, "above the 4 distinct value(s) of the sensitive column 'dx'"),
        ({"l_diversity": 2, "l_model": "recursive"}, "'recursive' is not one of distinct, entropy"),
        ({"t_closeness": 0.0}, "outside (0, 1)"),
        ({"t_closeness": 1.0}, "outside (0, 1)"),
        ({"beta_likeness": 0.0}, "not above 0"),
        ({"beta_likeness": float("inf")}, "not above 0"),
    ],
)
def test_bad_thresholds(clinic, kwargs, message):
    with pytest.raises(InputError) as caught:
        sbc_sql.verify(str(clinic), "t", "r", 8, **kwargs)
    assert message in str(caught.value)


def test_a_criterion_needs_a_sensitive_column(tmp_path, cli):
    path = tmp_path / "n.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute(
            "CREATE TABLE t AS SELECT 20 + i // 4 AS age, 'x' || (i % 3) AS note FROM range(40) AS r(i)"
        )
        sbc_sql.anonymize(con, "t", 4, output="r", qi="age", keep="note")
    res = cli(["verify", "--db", path, "--original", "t", "--release", "r", "-k", "4", "--l-diversity", "2"])
    assert res.exit_code == 1
    assert "no column is declared sensitive" in res.stderr and "sbc:sensitive" in res.stderr
