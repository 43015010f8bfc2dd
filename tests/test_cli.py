"""The command line end to end on the seeded clinic database of examples/make_clinic_db.py.

400 patients and k = 5: SBCA forms 80 classes of exactly 5 rows, so verify passes at k = 5
and fails at k = 6.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from helpers import load_example, run_cli, run_module, snapshot

ROWS, K = 400, 5
RELEASE_COLUMNS = [
    ("eq_class", "BIGINT"),
    ("birth_date_min", "DATE"),
    ("birth_date_max", "DATE"),
    ("birth_date_has_null", "BOOLEAN"),
    ("age_min", "INTEGER"),
    ("age_max", "INTEGER"),
    ("age_has_null", "BOOLEAN"),
    ("zip", "VARCHAR[]"),
    ("sex", "VARCHAR[]"),
    ("nationality", "VARCHAR[]"),
    ("diagnosis", "VARCHAR"),
]
VIEW_COLUMNS = ["eq_class", "birth_date", "age", "zip", "sex", "nationality", "diagnosis"]


def make_clinic(path: Path) -> Path:
    clinic = load_example("examples/make_clinic_db.py")
    return Path(clinic.make_clinic_db(path, ROWS, 7))


@pytest.fixture(scope="module")
def clinic(tmp_path_factory) -> dict:
    """The clinic database after one `anonymize --k 5` run, and what that run printed."""
    path = make_clinic(tmp_path_factory.mktemp("clinic") / "clinic.duckdb")
    with duckdb.connect(str(path)) as con:
        source_before = snapshot(con, "patients")
    res = run_cli(["anonymize", "--db", path, "--table", "patients", "--k", K])
    return {"path": path, "run": res, "source_before": source_before}


def describe(path: Path, table: str) -> list[tuple[str, str]]:
    with duckdb.connect(str(path)) as con:
        return [
            (r[0], r[1])
            for r in con.execute(
                "SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = ? "
                "ORDER BY column_index",
                [table],
            ).fetchall()
        ]


def test_anonymize_succeeds_and_says_verified(clinic):
    res = clinic["run"]
    assert res.exit_code == 0, res.stderr
    first = res.stdout.splitlines()[0]
    assert (
        first == f"release 'patients_k{K}' (view 'patients_k{K}_view'): verified {K}-anonymous and complete"
    )
    assert f"rows in {ROWS:,}, rows out {ROWS:,}, suppressed 0" in res.stdout
    assert f"classes {ROWS // K:,}: smallest {K}" in res.stdout
    *_, next_step, note = res.stdout.splitlines()
    assert next_step.startswith(f"next: SELECT * FROM patients_k{K}_view (readable)")
    assert f"sbc-sql evaluate --db {clinic['path']} --original patients --release patients_k{K}" in next_step
    assert note == "note: 'patients' still holds identifiers (name, ssn); publish the release, not the source"
    # roles come from the column comments, logged on stderr
    assert "column 'name' (VARCHAR): identifier [comment]" in res.stderr
    assert "column 'ssn' (VARCHAR): identifier [comment]" in res.stderr
    assert "column 'diagnosis' (VARCHAR): sensitive [comment]" in res.stderr
    assert "column 'zip' (VARCHAR): categorical quasi-identifier [default]" in res.stderr


def test_release_and_view_have_the_expected_columns(clinic):
    assert describe(clinic["path"], f"patients_k{K}") == RELEASE_COLUMNS
    assert [c for c, _ in describe(clinic["path"], f"patients_k{K}_view")] == VIEW_COLUMNS
    with duckdb.connect(str(clinic["path"])) as con:
        sizes = con.execute(f"SELECT count(*) FROM patients_k{K} GROUP BY eq_class").fetchall()
        view_rows = con.execute(f"SELECT count(*) FROM patients_k{K}_view").fetchone()
        # the readable view: '25-40' style ranges, '..' between dates, '|' between values
        age, birth = con.execute(
            f"SELECT age, birth_date FROM patients_k{K}_view WHERE age LIKE '%-%' LIMIT 1"
        ).fetchone()
    assert {s for (s,) in sizes} == {K}
    assert view_rows == (ROWS,)
    assert age.count("-") == 1 and ".." in birth


def test_identifiers_are_dropped_and_the_source_is_unchanged(clinic):
    with duckdb.connect(str(clinic["path"])) as con:
        identifiers = con.execute("SELECT name, ssn FROM patients").fetchall()
        released = str(con.execute(f"SELECT * FROM patients_k{K}").fetchall())
        assert snapshot(con, "patients") == clinic["source_before"]
    assert len(identifiers) == ROWS
    assert not any(name in released or ssn in released for name, ssn in identifiers)


def test_json_summary_parses_and_matches_measure(clinic, cli, tmp_path):
    path = clinic["path"]
    res = cli(["anonymize", "--db", path, "--table", "patients", "--k", "10", "--json", "--output", "p10"])
    assert res.exit_code == 0, res.stderr
    summary = json.loads(res.stdout)
    assert summary["release"] == "p10" and summary["view"] == "p10_view" and summary["k"] == 10
    assert (summary["rows"], summary["released"], summary["suppressed"]) == (ROWS, ROWS, 0)
    assert summary["smallest_class"] == 10
    assert set(summary["ncp"]) == {"birth_date", "age", "zip", "sex", "nationality"}
    assert 0 < summary["total_ncp"] < 1
    assert summary["utility"] == pytest.approx(1 - summary["total_ncp"])
    measured = cli(["measure", "--db", path, "--original", "patients", "--release", "p10", "--json"])
    assert measured.exit_code == 0, measured.stderr
    m = json.loads(measured.stdout)
    assert m["total_ncp"] == pytest.approx(summary["total_ncp"], abs=1e-12)
    assert m["ncp"] == pytest.approx(summary["ncp"], abs=1e-12)
    assert m["classes"] == ROWS // 10


def test_measure_prints_the_figures(clinic, cli):
    res = cli(["measure", "--db", clinic["path"], "--original", "patients", "--release", f"patients_k{K}"])
    assert res.exit_code == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == f"rows {ROWS}, released {ROWS}, suppressed 0"
    assert lines[1].startswith(f"classes {ROWS // K}, smallest {K}")
    assert lines[2].startswith("total NCP 0.")
    assert [line.split()[1] for line in lines[3:]] == ["birth_date:", "age:", "zip:", "sex:", "nationality:"]


def test_verify_passes_at_k_and_fails_above(clinic, cli):
    args = ["verify", "--db", clinic["path"], "--original", "patients", "--release", f"patients_k{K}"]
    ok = cli([*args, "--k", K])
    assert ok.exit_code == 0, ok.stderr
    assert ok.stdout.startswith(f"ok: 'patients_k{K}' is {K}-anonymous and complete")
    assert f"smallest_class {K}" in ok.stdout
    bad = cli([*args, "--k", K + 1])
    assert bad.exit_code == 3  # fails verification (1 is bad input)
    assert bad.stdout == ""
    assert f"Error: the smallest class has {K} rows, below k={K + 1}" in bad.stderr.splitlines()


def test_every_command_prints_a_count_as_anonymize_does(tmp_path, cli):
    """2,400 rows at k = 2 (1,200 classes of two): anonymize, measure, verify, compare and
    suggest-k write each count with its thousands separated, as 2,400, and so do verify's
    problems."""
    path = tmp_path / "counts.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE t AS SELECT i % 97 AS age, 'z' || (i % 41) AS zip FROM range(2400) r(i)")
    base = ["--db", path]
    made = cli(["anonymize", *base, "-t", "t", "-k", "2", "-q"])
    assert made.exit_code == 0, made.stderr
    assert "rows in 2,400, rows out 2,400" in made.stdout and "classes 1,200" in made.stdout
    pair = ["--original", "t", "--release", "t_k2"]
    res = cli(["measure", *base, *pair])
    assert res.exit_code == 0, res.stderr
    assert res.stdout.splitlines()[:2] == [
        "rows 2,400, released 2,400, suppressed 0",
        "classes 1,200, smallest 2, mean 2.00, largest 2",
    ]
    res = cli(["verify", *base, *pair, "-k", "2"])
    assert res.exit_code == 0, res.stderr
    assert "(classes 1,200, smallest_class 2, released 2,400," in res.stdout
    assert "source_rows 2,400" in res.stdout
    with duckdb.connect(str(path)) as con:  # a release that lost rows: its problems count so too
        con.execute("CREATE TABLE cut AS SELECT * FROM t_k2 WHERE eq_class >= 100")
    res = cli(["verify", *base, "--original", "t", "--release", "cut", "-k", "2"])
    assert res.exit_code == 3
    assert "Error: the release lacks 200 of the 2,400 input rows" in res.stderr
    res = cli(["compare", *base, "-t", "t", "-k", "2", "--algorithms", "sbca"])
    assert res.exit_code == 0, res.stderr
    assert res.stdout.splitlines()[1].split()[4:7] == ["1,200", "1,200", "0"]
    res = cli(["suggest-k", *base, "-t", "t", "--max-loss", "0.9", "--k-max", "2", "-q"])
    assert res.exit_code == 0, res.stderr
    assert res.stdout.splitlines()[2].split()[3] == "1,200"


def test_verify_catches_a_tampered_release(clinic, cli):
    path = clinic["path"]
    with duckdb.connect(str(path)) as con:
        con.execute(f"CREATE TABLE tampered AS SELECT * FROM patients_k{K}")
        # shrink one class's age range so some of its rows fall outside
        con.execute(
            "UPDATE tampered SET age_min = age_max WHERE eq_class = "
            "(SELECT min(eq_class) FROM tampered WHERE age_min < age_max)"
        )
    res = cli(["verify", "--db", path, "--original", "patients", "--release", "tampered", "--k", K])
    assert res.exit_code == 3
    assert "covered by no class" in res.stderr
    # a flat copy has no provenance: its roles are read off its columns, and it says so
    assert "note: roles inferred; no provenance" in res.stderr.splitlines()


@pytest.mark.slow
def test_help_in_a_fresh_interpreter():
    res = run_module(["--help"])
    assert res.returncode == 0, res.stderr
    for command in ("anonymize", "measure", "verify"):
        assert command in res.stdout


@pytest.mark.slow
def test_anonymize_in_a_fresh_interpreter(tmp_path):
    path = make_clinic(tmp_path / "fresh.duckdb")
    res = run_module(["anonymize", "--db", path, "--table", "patients", "--k", "4", "--json"])
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    assert summary["release"] == "patients_k4" and summary["smallest_class"] == 4
    res = run_module(
        ["verify", "--db", path, "--original", "patients", "--release", "patients_k4", "--k", "4"]
    )
    assert res.returncode == 0, res.stderr
    res = run_module(["anonymize", "--db", path, "--table", "patients", "--k", "4"])
    assert res.returncode == 1
    assert res.stderr.strip().splitlines() == [
        (
            "Error: 'patients_k4' already exists; pass --replace to overwrite the release or "
            "--output to choose another name"
        )
    ]


def test_short_flags_quiet_and_verbose(tmp_path, cli):
    path = make_clinic(tmp_path / "c.duckdb")
    res = cli(["anonymize", "--db", path, "-t", "patients", "-k", "4", "-o", "short", "-q"])
    assert res.exit_code == 0, res.stderr
    assert res.stderr == ""  # no role lines, no progress
    assert res.stdout.startswith("release 'short' (view 'short_view'): verified 4-anonymous")
    res = cli(["anonymize", "--db", path, "-t", "patients", "-k", "4", "-o", "traced", "-v"])
    assert res.exit_code == 0, res.stderr
    traced = [line for line in res.stderr.splitlines() if line.endswith(";")]
    assert any(line.startswith("CREATE TABLE") for line in traced)
    assert any(line.startswith('ALTER TABLE "sbc_tmp_traced_') for line in traced)
    res = cli(["verify", "--db", path, "--original", "patients", "--release", "short", "-k", "4"])
    assert res.exit_code == 0, res.stderr


def test_help_conventions(cli):
    res = cli(["-h"])
    assert res.exit_code == 0
    flat = " ".join(res.stdout.split())
    assert "--install-completion" in flat and "--version" in flat
    assert "Exit codes: 0 success; 1 an error" in flat and "130 interrupted" in flat
    res = cli(["anonymize", "-h"])
    assert "-t, --table" in res.stdout and "-k, --k" in res.stdout and "-o, --output" in res.stdout
    assert "<nearest|last|suppress>" in res.stdout and "-q, --quiet" in res.stdout
    # every option of every command says what it is for
    import typer

    from sbc_sql.cli import app

    group = typer.main.get_command(app)
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        for param in command.params:
            if param.param_type_name == "option":
                assert param.help, (name, param.name)


def test_the_progress_bar_measures_its_rate_from_the_first_report(capsys, monkeypatch):
    from sbc_sql import cli as cli_module

    now = [100.0]
    monkeypatch.setattr(cli_module.time, "perf_counter", lambda: now[0])
    bar = cli_module.ProgressBar("clustering", enabled=True)
    now[0] = 130.0  # compiling took 30 s before the first report
    bar(0, 1000)
    now[0] = 131.0  # 100 rows a second, 900 to go
    bar(100, 1000)
    line = capsys.readouterr().err.split("\r")[-1]
    assert line.endswith("100/1000 eta   9.0s")


def test_evaluate_says_each_step(tmp_path, cli):
    path = make_clinic(tmp_path / "c.duckdb")
    assert cli(["anonymize", "--db", path, "-t", "patients", "-k", "4", "-q"]).exit_code == 0
    args = ["evaluate", "--db", path, "--original", "patients", "--release", "patients_k4", "--queries", "5"]
    res = cli(args)
    assert res.exit_code == 0, res.stderr
    steps = res.stderr.splitlines()
    assert steps[0] == "evaluate: information loss ..."
    assert any(
        line.startswith("evaluate: query error (5 queries x 3 selectivities) done in ") for line in steps
    )
    assert cli([*args, "-q"]).stderr == ""
