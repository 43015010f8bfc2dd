"""l-diversity, t-closeness and beta-likeness checked by verify on every declared sensitive
column: a release that does not hold one fails (exit 3), and a bad threshold is one Error
line (exit 1)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import numpy as np
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
        ({"beta_likeness": 0.0}, "not a finite number above 0"),
        ({"beta_likeness": float("inf")}, "is not a finite number above 0"),
        ({"beta_likeness": float("nan")}, "is not a finite number above 0"),
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


# ---------------------------------------------------------------------------------------
# anonymize and compare with criteria: the plumbing around any algorithm that keeps them,
# shown with two stand-in algorithms registered for the test: one class of every row (it
# keeps every criterion), and classes of one sex (they break l = 3 on dx)


def _one_class(data, k, options, progress):
    from sbc_sql.cluster.registry import ClusterRun

    assert data.sensitive is not None and options.rule.active
    return ClusterRun(np.zeros(data.n_rows, dtype=np.int64), "whole", "exact", "one class")


def _by_sex(data, k, options, progress):
    from sbc_sql.cluster.registry import ClusterRun

    sex = data.names.index("sex")
    return ClusterRun(data.columns[sex].astype(np.int64), "by-sex", "exact", "one class per sex")


@pytest.fixture
def stand_ins(monkeypatch):
    from sbc_sql.cluster import registry

    for name, runner in (("whole", _one_class), ("by-sex", _by_sex)):
        monkeypatch.setitem(registry.REGISTRY, name, registry.Clusterer(name, name, runner, criteria=True))
    monkeypatch.setattr(
        registry,
        "CLUSTERERS",
        (*registry.CLUSTERERS, registry.REGISTRY["whole"], registry.REGISTRY["by-sex"]),
    )


def test_anonymize_verifies_the_criteria_and_reports_them(clinic, stand_ins):
    with duckdb.connect(str(clinic)) as con:
        result = sbc_sql.anonymize(
            con,
            "t",
            8,
            output="w",
            qi="age,sex",
            sensitive="dx",
            keep="ward",
            algorithm="whole",
            l_diversity=3,
            t_closeness=0.3,
            beta_likeness=1.0,
        )
        assert result.achieved["l_diversity"] == 4
        assert result.achieved["t_closeness"] == pytest.approx(0.0, abs=1e-9)
        assert result.achieved["beta_likeness"] == pytest.approx(0.0, abs=1e-9)
        comment = con.execute("SELECT comment FROM duckdb_views() WHERE view_name = 'w'").fetchone()[0]
        recorded = json.loads(comment)["privacy_models"]
        assert {"name": "l-diversity", "l": 3, "column": "dx", "variant": "distinct"} in recorded
        assert {"name": "beta-likeness", "beta": 1.0, "column": "dx", "enhanced": True} in recorded


def test_a_clustering_that_breaks_a_criterion_writes_nothing(clinic, stand_ins):
    with duckdb.connect(str(clinic)) as con:
        with pytest.raises(sbc_sql.VerificationError, match="fewer than l=3 distinct values of 'dx'"):
            sbc_sql.anonymize(
                con,
                "t",
                8,
                output="s",
                qi="age,sex",
                sensitive="dx",
                keep="ward",
                algorithm="by-sex",
                l_diversity=3,
            )
        assert (
            con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE 's%'").fetchone()[0] == 0
        )


def test_summary_and_json_name_the_criteria(clinic, stand_ins):
    from sbc_sql.cli import summary_text
    from sbc_sql.documents import summary_dict

    with duckdb.connect(str(clinic)) as con:
        result = sbc_sql.anonymize(
            con,
            "t",
            8,
            output="w1",
            qi="age,sex",
            sensitive="dx",
            keep="ward",
            algorithm="whole",
            l_diversity=3,
            beta_likeness=1.0,
        )
        text = summary_text(result)
        assert (
            "verified distinct l-diversity l=3, enhanced beta-likeness beta=1 on 'dx': "
            "achieved distinct l 4, beta 0.0000" in text
        )
        summary = json.loads(json.dumps(summary_dict(result)))
        assert summary["criteria"]["asked"] == {
            "l_diversity": 3,
            "l_model": "distinct",
            "beta_likeness": 1.0,
            "beta_model": "enhanced",
        }
        assert summary["criteria"]["achieved"]["l_diversity"] == 4
        assert summary["criteria"]["sensitive"] == ["dx"]


def test_the_paper_algorithm_refuses_criteria_in_one_line(clinic, cli):
    res = cli(
        ["anonymize", "--db", clinic, "-t", "t", "-k", "8", "--qi", "age,sex", "--sensitive", "dx"]
        + ["--keep", "ward", "-o", "bad", "--algorithm", "sbca-paper", "--l-diversity", "2"]
    )
    assert res.exit_code == 1, res.stdout
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("Error: --algorithm sbca-paper is the paper's algorithm, for k alone,")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"l_diversity": 5}, "above the 4 distinct value(s) of the sensitive column 'dx'"),
        ({"t_closeness": 0.0}, "t_closeness=0.0 is outside (0, 1)"),
        ({"beta_likeness": -1.0}, "beta_likeness=-1.0 is not a finite number above 0"),
        ({"l_diversity": 5, "l_model": "entropy"}, "above the 4 distinct value(s)"),
        ({"l_diversity": 2, "sensitive": (), "keep": "dx,ward"}, "no column is declared sensitive"),
    ],
)
def test_bad_criteria_are_one_error_and_write_nothing(clinic, stand_ins, kwargs, message):
    given = {"qi": "age,sex", "sensitive": "dx", "keep": "ward", **kwargs}
    with duckdb.connect(str(clinic)) as con:
        with pytest.raises(InputError) as err:
            sbc_sql.anonymize(con, "t", 8, output="bad", algorithm="whole", **given)
        assert message in str(err.value) and "\n" not in str(err.value)
        assert (
            con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE 'bad%'").fetchone()[0]
            == 0
        )


def test_entropy_l_above_the_input_is_refused(tmp_path, stand_ins):
    with duckdb.connect(str(tmp_path / "e.duckdb")) as con:
        # dx: 90 'a', 5 'b', 5 'c': its entropy l is 1.4, below 2
        con.execute(
            "CREATE TABLE t AS SELECT i AS age, "
            "CASE WHEN i < 90 THEN 'a' WHEN i < 95 THEN 'b' ELSE 'c' END AS dx FROM range(100) r(i)"
        )
        with pytest.raises(
            InputError, match="entropy l-diversity l=2 is above what the whole of 'dx' reaches"
        ):
            sbc_sql.anonymize(
                con, "t", 5, qi="age", sensitive="dx", algorithm="whole", l_diversity=2, l_model="entropy"
            )


def test_compare_refuses_an_algorithm_without_criteria(clinic, stand_ins):
    from sbc_sql.compare import compare

    with pytest.raises(InputError, match="sbca-paper, which clusters for k alone"):
        compare(
            str(clinic),
            "t",
            [8],
            ["whole", "sbca-paper"],
            qi="age,sex",
            sensitive="dx",
            keep="ward",
            criteria=sbc_sql.privacy.criteria.Criteria(l_diversity=2),
        )
    rows = compare(
        str(clinic),
        "t",
        [8],
        ["whole"],
        qi="age,sex",
        sensitive="dx",
        keep="ward",
        criteria=sbc_sql.privacy.criteria.Criteria(l_diversity=2),
    )
    assert [r.algorithm for r in rows] == ["whole"]


def test_rare_values_are_suppressed_with_a_reason_evaluate_reads(tmp_path, stand_ins):
    from sbc_sql.quality import report
    from sbc_sql.quality.evaluate import evaluate

    path = tmp_path / "r.duckdb"
    with duckdb.connect(str(path)) as con:
        # dx: 150 'a', 49 'b' and one 'c', which under beta = 1 needs a class of 100 rows
        con.execute(
            "CREATE TABLE t AS SELECT i % 50 AS age, "
            "CASE WHEN i < 150 THEN 'a' WHEN i < 199 THEN 'b' ELSE 'c' END AS dx FROM range(200) r(i)"
        )
        result = sbc_sql.anonymize(
            con, "t", 5, output="w", qi="age", sensitive="dx", algorithm="whole", beta_likeness=1.0
        )
        assert result.suppressed_by == {"rare_value": 1}
        assert result.measures.suppressed == 1
    e = evaluate(str(path), "t", "w", sensitive="dx", queries=0)
    assert e.suppressed_by == {"rare_value": 1}
    assert e.forced_beta == 1.0
    # 'c' (share 0.005): f = 0.01, a class of 100 rows; 'a' (0.75): f = 0.75 (1 + ln 4/3): 2
    assert e.forced_class == {"#1 of 3 (150 rows)": 2, "#2 of 3 (49 rows)": 3, "#3 of 3 (1 rows)": 100}
    assert e.gcp_released == pytest.approx(e.gcp - 1 / 200)
    text = report.text(e)
    assert "suppressed rare_value" in text and "forced class #3 of 3 (1 rows)" in text
    # one whole class holds every value at its input share: nothing to suppress
    with duckdb.connect(str(path)) as con:
        whole = sbc_sql.anonymize(
            con,
            "t",
            5,
            output="w2",
            qi="age",
            sensitive="dx",
            algorithm="whole",
            beta_likeness=1.0,
            max_suppression=0.0,
        )
        assert whole.measures.suppressed == 0


def test_more_suppression_than_the_budget_is_one_error(tmp_path, stand_ins, monkeypatch):
    from sbc_sql.cluster import registry

    def nothing(data, k, options, progress):
        return registry.ClusterRun(np.full(data.n_rows, -1, dtype=np.int64), "none", "exact", "")

    monkeypatch.setitem(registry.REGISTRY, "none", registry.Clusterer("none", "none", nothing, criteria=True))
    with duckdb.connect(str(tmp_path / "b.duckdb")) as con:
        con.execute(
            "CREATE TABLE t AS SELECT i % 50 AS age, "
            "CASE WHEN i < 150 THEN 'a' ELSE 'b' END AS dx FROM range(200) r(i)"
        )
        with pytest.raises(InputError) as err:
            sbc_sql.anonymize(con, "t", 5, qi="age", sensitive="dx", algorithm="none", l_diversity=2)
        message = str(err.value)
        assert message.startswith(
            "200 rows (100.00%) cannot be placed in classes that keep distinct l-diversity, "
            "above max_suppression=0.01 (2 rows); most hold the 1st most frequent value of 'dx' "
            "(150 rows in the input)"
        ), message
        assert "'a'" not in message and "\n" not in message
        assert (
            con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE 't_k5%'").fetchone()[0]
            == 0
        )


def test_the_background_bound_is_verified_in_sql(tmp_path, monkeypatch):
    """A clustering whose class holds two beliefs farther apart than J writes nothing; one
    that keeps them reports the largest divergence, as numpy computes it."""
    from sbc_sql.cluster import registry
    from sbc_sql.cluster.background.options import Knowledge
    from sbc_sql.cluster.background.phase1 import js_bits

    beliefs = np.array([[0.9, 0.1], [0.8, 0.2], [0.1, 0.9]])

    def stand_in(far: bool):
        def run(data, k, options, progress):
            n = data.n_rows
            # rows alternate beliefs 0 and 1 (close); with far, the first row holds belief 2
            belief = np.arange(n, dtype=np.int64) % 2
            if far:
                belief[0] = 2
            return registry.ClusterRun(
                np.zeros(n, dtype=np.int64), "bk", "exact", "", knowledge=Knowledge(belief, beliefs, 0.5)
            )

        return run

    with duckdb.connect(str(tmp_path / "j.duckdb")) as con:
        con.execute("CREATE TABLE t AS SELECT i AS age, ['a', 'b'][1 + i % 2] AS dx FROM range(20) r(i)")
        for name, far in (("near", False), ("far", True)):
            monkeypatch.setitem(
                registry.REGISTRY, name, registry.Clusterer(name, name, stand_in(far), criteria=True)
            )
        result = sbc_sql.anonymize(con, "t", 5, qi="age", sensitive="dx", algorithm="near", l_diversity=2)
        assert result.achieved["js_diameter"] == pytest.approx(
            float(js_bits(beliefs[0], beliefs[1])[0, 0]), abs=1e-9
        )
        with pytest.raises(sbc_sql.VerificationError, match=r"farther apart than J=0\.5 bits"):
            sbc_sql.anonymize(
                con, "t", 5, qi="age", sensitive="dx", algorithm="far", l_diversity=2, output="f"
            )
        assert (
            con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE 'f%'").fetchone()[0] == 0
        )
