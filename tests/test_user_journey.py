"""A new user's journey: a first run on the example database with no flag but k, a table of
another schema or database, a release written into a file of its own, and the Python API
as a notebook uses it (data as a DataFrame, an Arrow table or a DuckDB relation, a Result
that closes what it opened, errors in keywords rather than flags)."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pytest
from helpers import file_catalog, load_example

import sbc_sql


@pytest.fixture
def frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "age": [20 + (i * 7) % 40 for i in range(300)],
            "sex": ["F", "M", "X"][0:2] * 150,
            "dx": ["flu", "hiv", "cold", "none", "flu"] * 60,
        }
    )


@pytest.mark.parametrize("kind", ["pandas", "arrow", "relation"])
def test_data_in_memory_is_anonymized_in_an_in_memory_database(frame, kind):
    data = {
        "pandas": lambda: frame,
        "arrow": lambda: pa.Table.from_pandas(frame),
        "relation": lambda: duckdb.from_df(frame),
    }[kind]()
    with sbc_sql.anonymize(data, k=5, qi="age,sex", sensitive="dx") as result:
        assert result.release == "data_k5"
        assert result.measures is not None and result.measures.smallest >= 5
        released = result.to_pandas()
        assert len(released) == 300
        assert sorted(released["dx"]) == sorted(frame["dx"])
        assert sbc_sql.verify(result.engine, "data", "data_k5", 5).ok


def test_k_may_be_given_by_position_and_the_table_named(frame):
    assert sbc_sql.anonymize(frame, 4, qi="age,sex", sensitive="dx").release == "data_k4"
    result = sbc_sql.anonymize(frame, table="people", k=4, qi=["age", "sex"], sensitive=["dx"])
    assert (result.release, result.plan.k) == ("people_k4", 4)
    text = repr(result)
    assert text.startswith("<Result 'people_k4': k=4, 300 rows -> 300 in ")
    assert "total NCP 0." in text and "\n" not in text


def test_a_result_closes_the_file_it_opened_and_leaves_a_callers_connection_open(frame, tmp_path):
    path = tmp_path / "db.duckdb"
    with duckdb.connect(str(path)) as con:
        con.from_df(frame).create("t")
    with sbc_sql.anonymize(str(path), "t", 5, qi="age,sex", sensitive="dx") as result:
        assert result.to_arrow().num_rows == 300
    with pytest.raises(sbc_sql.InputError, match=r"^the result of 't_k5' is closed"):
        result.con.execute("SELECT 1")
    # the file is free for another connection once the result is closed
    with duckdb.connect(str(path), read_only=True) as other:
        assert other.execute("SELECT count(*) FROM t_k5").fetchone() == (300,)
    con = duckdb.connect()
    con.from_df(frame).create("t")
    mine = sbc_sql.anonymize(con, "t", 5, qi="age,sex", sensitive="dx")
    mine.close()
    assert con.execute("SELECT count(*) FROM t_k5").fetchone() == (300,)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"k": 1}, sbc_sql.InputError, "choose k=2 or more"),
        (
            {"k": 5, "qi": "age"},
            sbc_sql.RoleError,
            "declare it with qi=..., sensitive=..., keep=... or drop=...",
        ),
        (
            {"k": 5, "qi": "age,sex", "sensitive": "dx", "weights": "age=x"},
            sbc_sql.InputError,
            "weights='age=2'",
        ),
        ({"k": 5, "qi": "age,nope"}, sbc_sql.InputError, "column 'nope' given to qi=... does not exist"),
    ],
)
def test_errors_speak_in_keywords_in_python(frame, kwargs, error, message):
    with pytest.raises(error) as caught:
        sbc_sql.anonymize(frame, **kwargs)
    assert message in str(caught.value)
    assert "--" not in str(caught.value)


def test_the_error_types_are_exported():
    assert issubclass(sbc_sql.InputError, sbc_sql.SbcError)
    assert issubclass(sbc_sql.VerificationError, sbc_sql.SbcError)
    assert {"InputError", "VerificationError", "RoleError", "OutputExistsError"} <= set(sbc_sql.__all__)


def test_a_table_of_another_schema_or_database_keeps_its_roles(tmp_path, cli):
    """`-t schema.t` and `--attach FILE[:ALIAS]` with `-t ALIAS.schema.t`: read once into the
    run, the column comments (the roles) kept; verify and measure read the same names."""
    main, ward = tmp_path / "main.duckdb", tmp_path / "ward.duckdb"
    with duckdb.connect(str(ward)) as con:
        con.execute("CREATE SCHEMA clinic")
        con.execute(
            "CREATE TABLE clinic.visits AS SELECT 'SECRET-' || i AS name, 20 + i % 40 AS age, "
            "['F', 'M'][1 + i % 2] AS sex, 'dx' || (i % 5) AS dx FROM range(300) AS r(i)"
        )
        con.execute("COMMENT ON COLUMN clinic.visits.name IS 'sbc:identifier'")
        con.execute("COMMENT ON COLUMN clinic.visits.dx IS 'sbc:sensitive'")
    duckdb.connect(str(main)).close()
    res = cli(["anonymize", "--db", main, "--attach", f"{ward}:ward", "-t", "ward.clinic.visits", "-k", "5"])
    assert res.exit_code == 0, res.stderr
    assert "column 'name' (VARCHAR): identifier [comment]" in res.stderr
    assert res.stdout.startswith("release 'visits_k5' (view 'visits_k5_view'): verified 5-anonymous")
    with duckdb.connect(str(main)) as con:
        columns = [d[0] for d in con.execute("SELECT * FROM visits_k5 LIMIT 0").description]
    assert "name" not in columns and "dx" in columns
    with duckdb.connect(str(ward)) as con:  # the attached file is read, never written
        assert [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()] == ["visits"]
    # a schema of the same database, and the reading commands on it
    with duckdb.connect(str(main)) as con:
        con.execute("CREATE SCHEMA s")
        con.execute(f"ATTACH '{ward}' AS ward (READ_ONLY)")
        con.execute("CREATE TABLE s.people AS SELECT * FROM ward.clinic.visits")
        con.execute("COMMENT ON COLUMN s.people.name IS 'sbc:identifier'")
        con.execute("COMMENT ON COLUMN s.people.dx IS 'sbc:sensitive'")
    res = cli(["anonymize", "--db", main, "-t", "s.people", "-k", "4", "-q"])
    assert res.exit_code == 0, res.stderr
    assert res.stdout.startswith("release 'people_k4'")
    res = cli(["verify", "--db", main, "--original", "s.people", "--release", "people_k4", "-k", "4"])
    assert res.exit_code == 0, res.stderr
    res = cli(["measure", "--db", main, "--original", "s.people", "--release", "people_k4"])
    assert res.exit_code == 0 and res.stdout.startswith("rows 300, released 300"), res.stderr
    # a release written into a schema of its own, and read back there
    res = cli(["anonymize", "--db", main, "-t", "s.people", "-k", "4", "-o", "s.people_k4", "-q"])
    assert res.exit_code == 0, res.stderr
    assert res.stdout.startswith("release 's.people_k4' (view 's.people_k4_view')")
    with duckdb.connect(str(main)) as con:
        placed = con.execute(
            "SELECT schema_name, table_name FROM duckdb_tables() WHERE table_name LIKE 'people_k4%' "
            "ORDER BY ALL"
        ).fetchall()
    assert placed == [
        ("main", "people_k4_classes"),
        ("main", "people_k4_rows"),
        ("s", "people_k4_classes"),
        ("s", "people_k4_rows"),
    ]
    res = cli(["verify", "--db", main, "--original", "s.people", "--release", "s.people_k4", "-k", "4"])
    assert res.exit_code == 0, res.stderr


@pytest.fixture
def clinic(tmp_path: Path) -> Path:
    path = tmp_path / "clinic.duckdb"
    load_example("examples/make_clinic_db.py").main(["--out", str(path), "--rows", "600"])
    return path


def test_a_first_run_needs_nothing_but_k(clinic, cli):
    res = cli(["anonymize", "--db", clinic, "-t", "patients", "-k", "5"])
    assert res.exit_code == 0, res.stderr
    assert res.stdout.startswith("release 'patients_k5' (view 'patients_k5_view'): verified 5-anonymous")
    assert "note: 'patients' still holds identifiers (name, ssn)" in res.stdout
    res = cli(["verify", "--db", clinic, "--original", "patients", "--release", "patients_k5", "-k", "5"])
    assert res.exit_code == 0, res.stderr


def test_the_release_in_a_file_of_its_own(clinic, cli, tmp_path):
    """--target-db: the release alone in a new file; the source, opened read-only, may be a
    file nobody may write, and is left as it was."""
    os.chmod(clinic, 0o444)
    before = file_catalog(clinic)
    shipped = tmp_path / "out" / "release.duckdb"
    shipped.parent.mkdir()
    res = cli(["anonymize", "--db", clinic, "-t", "patients", "-k", "5", "--target-db", shipped])
    assert res.exit_code == 0, res.stderr
    assert f"sbc-sql evaluate --db {shipped} --attach {clinic} --original clinic.main.patients" in res.stdout
    assert file_catalog(clinic) == before
    with duckdb.connect(str(shipped), read_only=True) as con:
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        views = {
            r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()
        }
        assert con.execute("SELECT count(*) FROM patients_k5").fetchone() == (600,)
    assert tables == {"patients_k5_rows", "patients_k5_classes"}
    assert views == {"patients_k5", "patients_k5_view"}
    res = cli(
        ["verify", "--db", shipped, "--attach", clinic, "--original", "clinic.main.patients"]
        + ["--release", "patients_k5", "-k", "5"]
    )
    assert res.exit_code == 0, res.stderr
    # in Python too, and a failing or dry run leaves no file behind
    result = sbc_sql.anonymize(str(clinic), "patients", 4, target_db=tmp_path / "py.duckdb", output="p4")
    with result:
        assert result.to_arrow().num_rows == 600
    res = cli(
        [*map(str, ["anonymize", "--db", clinic, "-t", "patients", "-k", "5", "--sql"])]
        + ["--target-db", str(tmp_path / "dry2.duckdb")]
    )
    statements = [line for line in res.stdout.splitlines() if not line.startswith("-- ")]
    assert res.exit_code == 0 and statements[0].startswith("ATTACH "), res.stderr
    assert not (tmp_path / "dry2.duckdb").exists()
    res = cli(
        [
            "anonymize",
            "--db",
            clinic,
            "-t",
            "patients",
            "-k",
            "9999",
            "--target-db",
            tmp_path / "failed.duckdb",
        ]
    )
    assert res.exit_code == 1
    assert not (tmp_path / "failed.duckdb").exists() and not (tmp_path / "failed.duckdb.wal").exists()
    res = cli(["anonymize", "--db", clinic, "-t", "patients", "-k", "5", "--target-db", clinic])
    assert res.exit_code == 1 and "which the run reads" in res.stderr


def test_a_release_of_its_own_through_a_read_only_connection(clinic, tmp_path):
    con = duckdb.connect(str(clinic), read_only=True)
    with pytest.raises(sbc_sql.InputError, match="k=9999 is larger"):
        sbc_sql.anonymize(con, "patients", 9999, target_db=tmp_path / "failed.duckdb")
    # a failed run leaves the caller's connection where it was, and no file
    assert con.execute("SELECT current_database(), current_schema()").fetchone() == ("clinic", "main")
    assert not (tmp_path / "failed.duckdb").exists()
    result = sbc_sql.anonymize(con, "patients", 5, target_db=tmp_path / "shipped.duckdb")
    assert result.to_arrow().num_rows == 600
    con.close()
    with duckdb.connect(str(tmp_path / "shipped.duckdb"), read_only=True) as shipped:
        assert shipped.execute("SELECT count(*) FROM patients_k5").fetchone() == (600,)
