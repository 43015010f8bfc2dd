"""Every bad input: exit code 1, one stderr line 'Error: ...' naming the value and the fix,
nothing written, and never a cell value in the message (the data is private).
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from helpers import file_catalog

import sbc_sql
from sbc_sql.errors import InputError, OutputExistsError, RoleError

SECRETS = ("SECRET-VALUE-123", "secret-value-123", "SECRET-SSN-", "SECRET-TOKEN-", "SECRET-NOTE")


@pytest.fixture
def bad_db(tmp_path: Path) -> Path:
    path = tmp_path / "bad.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute(
            "CREATE TABLE patients (name VARCHAR, ssn VARCHAR, age INTEGER, zip VARCHAR, "
            "dis VARCHAR, photo BLOB, tags INTEGER[], score DOUBLE)"
        )
        con.execute(
            "INSERT INTO patients VALUES "
            "('SECRET-VALUE-123', 'SECRET-SSN-1', 30, '111', 'SECRET-NOTE', 'a'::BLOB, [1], 1.0), "
            "('SECRET-VALUE-123', 'SECRET-SSN-2', 31, '111', 'flu', 'b'::BLOB, [2], 2.0), "
            "('Bob', 'SECRET-SSN-3', 40, '222', 'flu', 'c'::BLOB, [3], 'nan'), "
            "('Cy', 'SECRET-SSN-4', 41, '222', 'hiv', 'd'::BLOB, [4], 4.0)"
        )
        con.execute("CREATE TABLE empty (a INTEGER, b VARCHAR)")
        con.execute("CREATE TABLE collated (c VARCHAR COLLATE NOCASE, dis VARCHAR)")
        con.execute(
            "INSERT INTO collated VALUES ('SECRET-VALUE-123', 'a'), ('secret-value-123', 'b'), ('x', 'c')"
        )
        con.execute("CREATE TABLE tokens (token VARCHAR, age INTEGER, dis VARCHAR)")
        con.execute("INSERT INTO tokens SELECT 'SECRET-TOKEN-' || i, 30 + i % 2, 'flu' FROM range(6) AS r(i)")
        con.execute("CREATE VIEW pv AS SELECT age, zip, dis FROM patients")
        con.execute("CREATE TABLE one (a INTEGER, dis VARCHAR)")
        con.execute("INSERT INTO one VALUES (1, 'SECRET-NOTE')")
        con.execute("CREATE TABLE dated (d DATE, dis VARCHAR)")
        con.execute(
            "INSERT INTO dated VALUES (DATE '2001-01-01', 'a'), (DATE 'infinity', 'b'), "
            "(DATE '2001-02-01', 'c'), (DATE '-infinity', 'd')"
        )
        con.execute(
            "CREATE TABLE nested AS SELECT 30 + i % 2 AS age, union_value(num := i)::UNION(num INTEGER, "
            "str VARCHAR) AS u, MAP {'a': i} AS m, {'x': i} AS s, 'flu' AS dis FROM range(6) AS r(i)"
        )
        con.execute("CREATE TABLE wide (x DOUBLE, dis VARCHAR)")
        con.execute("INSERT INTO wide VALUES (-1.7e308, 'a'), (1.7e308, 'b'), (0, 'c'), (1, 'd')")
        con.execute("CREATE SCHEMA other")
        con.execute("CREATE TABLE other.t (a INTEGER, dis VARCHAR)")
    return path


GOOD = ["--qi", "age,zip", "--drop", "name,ssn,photo,tags,score", "--sensitive", "dis"]

# (case, extra arguments after --db DB, substrings the message must hold)
CASES = [
    ("missing table", ["--table", "nope", "--k", "2"], ["'nope'", "--table"]),
    ("missing csv", ["--table", "missing.csv", "--k", "2"], ["missing.csv", "--table"]),
    ("missing column", ["--table", "patients", "--k", "2", "--qi", "age,nope"], ["'nope'", "--qi", "age"]),
    ("k below 2", ["--table", "patients", "--k", "1", *GOOD], ["k=1", "--k 2"]),
    (
        "beta infinite",
        ["--table", "patients", "--k", "2", *GOOD, "--beta-likeness", "inf"],
        ["--beta-likeness inf", "is not a finite number above 0", "--beta-likeness 1"],
    ),
    ("k above rows", ["--table", "patients", "--k", "9", *GOOD], ["k=9", "4 rows", "'patients'", "k <= 4"]),
    ("empty table", ["--table", "empty", "--k", "2"], ["'empty'", "empty"]),
    (
        "two roles",
        ["--table", "patients", "--k", "2", "--qi", "age", "--drop", "age"],
        ["'age'", "--qi", "--drop"],
    ),
    (
        "no qi left",
        [
            "--table",
            "patients",
            "--k",
            "2",
            "--drop",
            "name,ssn,age,zip,photo,tags,score",
            "--sensitive",
            "dis",
        ],
        ["no quasi-identifier", "--qi"],
    ),
    (
        "blob qi",
        [
            "--table",
            "patients",
            "--k",
            "2",
            "--qi",
            "age,photo",
            "--drop",
            "name,ssn,tags,zip,score",
            "--sensitive",
            "dis",
        ],
        ["'photo'", "BLOB", "--drop"],
    ),
    (
        "list qi",
        [
            "--table",
            "patients",
            "--k",
            "2",
            "--qi",
            "age,tags",
            "--drop",
            "name,ssn,photo,zip,score",
            "--sensitive",
            "dis",
        ],
        ["'tags'", "INTEGER[]", "--keep"],
    ),
    *(
        (
            f"{name} qi",
            [
                "--table",
                "nested",
                "--k",
                "2",
                "--qi",
                f"age,{column}",
                "--keep",
                others,
                "--sensitive",
                "dis",
            ],
            [
                f"column '{column}' of type {shown} cannot be a quasi-identifier",
                "--drop, --keep or --sensitive",
            ],
        )
        for name, column, shown, others in (
            ("union", "u", "UNION(num INTEGER, str VARCHAR)", "m,s"),
            ("map", "m", "MAP(VARCHAR, BIGINT)", "u,s"),
            ("struct", "s", "STRUCT(x BIGINT)", "u,m"),
        )
    ),
    (
        "unique undeclared",
        ["--table", "tokens", "--k", "2", "--sensitive", "dis"],
        ["'token'", "distinct on all 6 rows", "--drop"],
    ),
    (
        "undeclared with qi",
        ["--table", "patients", "--k", "2", "--qi", "age"],
        ["'name'", "--sensitive", "--keep", "--drop", "ssn, zip, dis"],
    ),
    (
        "nan in a qi",
        [
            "--table",
            "patients",
            "--k",
            "2",
            "--qi",
            "age,score",
            "--drop",
            "name,ssn,photo,tags,zip",
            "--sensitive",
            "dis",
        ],
        ["'score'", "NaN"],
    ),
    (
        "bad weight",
        ["--table", "patients", "--k", "2", *GOOD, "--weights", "age=heavy"],
        ["'age'", "'heavy'", "--weights"],
    ),
    (
        "weight on a non-qi",
        ["--table", "patients", "--k", "2", *GOOD, "--weights", "dis=2"],
        ["'dis'", "age, zip"],
    ),
    (
        "bad memory limit",
        ["--table", "patients", "--k", "2", *GOOD, "--memory-limit", "lots"],
        ["'lots'", "--memory-limit 2GB"],
    ),
    (
        "output is the source",
        ["--table", "patients", "--k", "2", *GOOD, "--output", "patients"],
        ["'patients'", "the input", "another --output"],
    ),
    (
        "output is the source in other case",
        ["--table", "patients", "--k", "2", *GOOD, "--output", "PATIENTS", "--replace"],
        ["'patients'", "the input", "another --output"],
    ),
    (
        "output is the source view",
        ["--table", "pv", "--k", "2", "--qi", "age,zip", "--sensitive", "dis", "--output", "pv", "--replace"],
        ["'pv'", "the input", "another --output"],
    ),
    (
        "output is a table the source view reads",
        [
            "--table",
            "pv",
            "--k",
            "2",
            "--qi",
            "age,zip",
            "--sensitive",
            "dis",
            "--output",
            "patients",
            "--replace",
        ],
        ["'patients'", "the input 'pv' reads", "another --output"],
    ),
    (
        "one row",
        ["--table", "one", "--k", "2", "--sensitive", "dis"],
        ["'one'", "has 1 row", "2 rows or more"],
    ),
    ("workers below 1", ["--table", "patients", "--k", "2", *GOOD, "--workers", "-3"], ["--workers -3", "1"]),
    (
        "a mode the algorithm lacks",
        ["--table", "patients", "--k", "2", *GOOD, "--algorithm", "mondrian", "--mode", "blocks"],
        ["--mode blocks", "mondrian", "exact"],
    ),
    (
        "infinite dates",
        ["--table", "dated", "--k", "2", "--qi", "d", "--sensitive", "dis"],
        ["'d'", "DATE", "2 infinite", "--keep/--drop"],
    ),
    (
        "a range wider than a double",
        ["--table", "wide", "--k", "2", "--qi", "x", "--sensitive", "dis"],
        ["'x'", "wider than the largest double", "rescale"],
    ),
    (
        "a missing table of another schema",
        ["--table", "other.nope", "--k", "2"],
        ["'other.nope'", "schema 'other'"],
    ),
    (
        "an output in a schema that does not exist",
        ["--table", "patients", "--k", "2", *GOOD, "--output", "nope.rel"],
        ["schema 'nope' does not exist", "CREATE SCHEMA"],
    ),
    (
        "a bad attach alias",
        ["--table", "patients", "--k", "2", "--attach", "x.duckdb:9x"],
        ["'9x'", "plain name"],
    ),
    (
        "a missing attached file",
        ["--table", "patients", "--k", "2", "--attach", "nope.duckdb"],
        ["nope.duckdb"],
    ),
    ("a table in no schema of the database", ["--table", "t", "--k", "2"], ["other.t", "--table schema.t"]),
]


def check_failure(res, needles, after_roles: bool = False) -> str:
    """Exit 1, nothing on stdout, one 'Error:' line on stderr; with after_roles the run got
    past planning, so the role log lines (and the clustering line) may come first."""
    assert res.exit_code == 1, (res.stdout, res.stderr)
    assert res.stdout == ""
    lines = res.stderr.strip().splitlines()
    if after_roles:
        assert all(re.match(r"column '.*' \(.*\): |clustering: ", x) for x in lines[:-1]), res.stderr
    else:
        assert len(lines) == 1, res.stderr
    line = lines[-1]
    assert line.startswith("Error: ")
    for needle in needles:
        assert needle in line, (needle, line)
    for secret in SECRETS:
        assert secret not in res.stderr
    return line


@pytest.mark.parametrize(("args", "needles"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_fails_cleanly(bad_db, cli, args, needles):
    before = file_catalog(bad_db)
    res = cli(["anonymize", "--db", bad_db, *args])
    check_failure(res, needles)
    assert file_catalog(bad_db) == before


def test_values_equal_under_a_collation(bad_db, cli):
    # found only once the rows are read, after the roles are logged
    before = file_catalog(bad_db)
    res = cli(
        ["anonymize", "--db", bad_db, "--table", "collated", "--k", "2", "--qi", "c", "--sensitive", "dis"]
    )
    check_failure(res, ["'c'", "COLLATE", "--keep"], after_roles=True)
    assert file_catalog(bad_db) == before


def test_missing_database_file_is_not_created(tmp_path, cli):
    path = tmp_path / "nope.duckdb"
    res = cli(["anonymize", "--db", path, "--table", "patients", "--k", "2"])
    check_failure(res, [str(path), "--db", "make_clinic_db.py"])
    assert not path.exists()


def test_a_file_that_is_not_a_database(tmp_path, cli):
    path = tmp_path / "notes.duckdb"
    path.write_text("SECRET-VALUE-123 is not a database\n")
    res = cli(["anonymize", "--db", path, "--table", "patients", "--k", "2"])
    check_failure(res, [str(path), "--db"])
    assert path.read_text() == "SECRET-VALUE-123 is not a database\n"


def test_no_database_and_no_out_file(cli, tmp_path):
    csv = tmp_path / "p.csv"
    csv.write_text("age,dis\n30,flu\n31,hiv\n")
    res = cli(["anonymize", "--table", csv, "--k", "2", "--qi", "age", "--sensitive", "dis"])
    check_failure(res, ["--db", "--out-file"])


def test_output_exists_without_replace_and_replace_works(bad_db, cli):
    res = cli(["anonymize", "--db", bad_db, "--table", "patients", "--k", "2", *GOOD])
    assert res.exit_code == 0, res.stderr
    with duckdb.connect(str(bad_db)) as con:
        first = con.execute("SELECT * FROM patients_k2 ORDER BY ALL").fetchall()
    before = file_catalog(bad_db)
    res = cli(
        ["anonymize", "--db", bad_db, "--table", "patients", "--k", "2", *GOOD, "--leftover", "suppress"]
    )
    check_failure(res, ["'patients_k2'", "already exists", "--replace", "--output"])
    assert file_catalog(bad_db) == before
    # --replace overwrites it (k = 3 on 4 rows with suppress releases 3 rows)
    res = cli(
        [
            "anonymize",
            "--db",
            bad_db,
            "--table",
            "patients",
            "--k",
            "3",
            *GOOD,
            "--output",
            "patients_k2",
            "--replace",
            "--leftover",
            "suppress",
        ]
    )
    assert res.exit_code == 0, res.stderr
    with duckdb.connect(str(bad_db)) as con:
        second = con.execute("SELECT * FROM patients_k2 ORDER BY ALL").fetchall()
        assert con.execute("SELECT count(*) FROM patients_k2_view").fetchone() == (3,)
    assert len(first) == 4 and len(second) == 3
    assert file_catalog(bad_db) == before


def test_a_table_in_the_view_name_is_refused(bad_db, cli):
    with duckdb.connect(str(bad_db)) as con:
        con.execute("CREATE TABLE patients_k2_view (x INTEGER)")
    before = file_catalog(bad_db)
    res = cli(["anonymize", "--db", bad_db, "--table", "patients", "--k", "2", *GOOD])
    check_failure(res, ["'patients_k2_view'", "not a view", "--output"])
    assert file_catalog(bad_db) == before


@pytest.mark.parametrize(
    ("command", "needles"),
    [
        (["verify", "--original", "patients", "--release", "nope", "--k", "2"], ["'nope'", "--release"]),
        (["verify", "--original", "nope", "--release", "patients", "--k", "2"], ["'nope'", "--original"]),
        (["verify", "--original", "patients", "--release", "patients", "--k", "1"], ["k=1", "--k 2"]),
        (["measure", "--original", "patients", "--release", "nope"], ["'nope'", "--release"]),
        (
            ["measure", "--original", "patients", "--release", "empty"],
            ["'empty'", "no generalized column", "'patients'"],
        ),
    ],
)
def test_measure_and_verify_errors(bad_db, cli, command, needles):
    before = file_catalog(bad_db)
    res = cli([command[0], "--db", bad_db, *command[1:]])
    check_failure(res, needles)
    assert file_catalog(bad_db) == before


def test_usage_errors_stay_exit_2(bad_db, cli):
    res = cli(["anonymize", "--db", bad_db, "--table", "patients"])
    assert res.exit_code == 2
    assert "--k" in res.stderr


def test_errors_are_typed_in_python(bad_db):
    with pytest.raises(RoleError):
        sbc_sql.anonymize(bad_db, "patients", 2, qi=["age"])
    with pytest.raises(InputError):
        sbc_sql.anonymize(bad_db, "patients", 1, qi=["age"])
    sbc_sql.anonymize(
        bad_db,
        "patients",
        2,
        qi=["age", "zip"],
        drop=["name", "ssn", "photo", "tags", "score"],
        sensitive=["dis"],
    )
    with pytest.raises(OutputExistsError):
        sbc_sql.anonymize(
            bad_db,
            "patients",
            2,
            qi=["age", "zip"],
            drop=["name", "ssn", "photo", "tags", "score"],
            sensitive=["dis"],
        )


def test_too_many_categorical_qis_for_the_default(tmp_path, cli):
    path = tmp_path / "wide.duckdb"
    cols = ", ".join(f"'v' || ((i + {j}) % 3) AS c{j}" for j in range(65))
    with duckdb.connect(str(path)) as con:
        con.execute(f"CREATE TABLE wide AS SELECT {cols}, 'flu' AS dis FROM range(8) AS r(i)")
    before = file_catalog(path)
    res = cli(["anonymize", "--db", path, "--table", "wide", "--k", "2", "--sensitive", "dis"])
    check_failure(res, ["65 categorical", "at most 64", "--keep", "sbca-paper"], after_roles=True)
    assert file_catalog(path) == before


@pytest.mark.parametrize(
    ("extra", "needles"),
    [
        (["--block-rows", "1"], ["--block-rows 1", "k=2", "2 or more"]),
        (["--block-rows", "4096", "--exact"], ["--block-rows 4096", "--exact"]),
        (["--block-rows", "4096", "--algorithm", "mondrian"], ["--block-rows 4096", "--algorithm"]),
    ],
)
def test_block_rows_errors(bad_db, cli, extra, needles):
    before = file_catalog(bad_db)
    res = cli(["anonymize", "--db", bad_db, "--table", "patients", "--k", "2", *GOOD, *extra])
    check_failure(res, needles)
    assert file_catalog(bad_db) == before


def test_the_export_never_replaces_the_database(bad_db, cli):
    before, catalog = bad_db.read_bytes(), file_catalog(bad_db)
    for target in (bad_db, Path(f"{bad_db}.wal")):
        res = cli(
            ["anonymize", "--db", bad_db, "--table", "patients", "--k", "2", *GOOD, "--out-file", target]
        )
        check_failure(res, [str(target), "--out-file"])
    res = cli(
        [
            "anonymize",
            "--db",
            bad_db,
            "--table",
            "patients",
            "--k",
            "2",
            *GOOD,
            "--out-file",
            bad_db,
            "--replace",
        ]
    )
    check_failure(res, [str(bad_db), "--out-file"])
    assert bad_db.read_bytes() == before
    assert file_catalog(bad_db) == catalog


def test_the_export_never_replaces_the_input_file(cli, tmp_path):
    csv = tmp_path / "p.csv"
    csv.write_text("age,dis\n30,flu\n31,hiv\n32,flu\n")
    before = csv.read_text()
    for flags in ([], ["--replace"]):
        args = ["anonymize", "--table", csv, "--k", "2", "--qi", "age", "--sensitive", "dis"]
        res = cli([*args, "--out-file", csv, *flags])
        check_failure(res, [str(csv), "--out-file"])
    assert csv.read_text() == before


def test_an_existing_export_is_replaced_only_under_replace(bad_db, cli, tmp_path):
    out = tmp_path / "release.csv"
    out.write_text("somebody's file\n")
    catalog = file_catalog(bad_db)
    args = ["anonymize", "--db", bad_db, "--table", "patients", "--k", "2", *GOOD, "--out-file", out]
    check_failure(cli(args), [str(out), "--replace"])
    assert out.read_text() == "somebody's file\n"
    assert file_catalog(bad_db) == catalog
    res = cli([*args, "--replace"])
    assert res.exit_code == 0, res.stderr
    assert out.read_text().startswith("eq_class,")


def test_one_row_does_not_suggest_k_below_2(bad_db, cli):
    res = cli(["anonymize", "--db", bad_db, "--table", "one", "--k", "2", "--sensitive", "dis"])
    assert "k <= 1" not in check_failure(res, ["has 1 row"])


def test_output_names_are_matched_whatever_their_case(bad_db, cli):
    res = cli(["anonymize", "--db", bad_db, "--table", "patients", "--k", "2", *GOOD])
    assert res.exit_code == 0, res.stderr
    before = file_catalog(bad_db)
    upper = ["anonymize", "--db", bad_db, "--table", "PATIENTS", "--k", "2", *GOOD, "--output", "Patients_K2"]
    check_failure(cli(upper), ["'Patients_K2'", "already exists", "--replace"])
    assert file_catalog(bad_db) == before
    res = cli([*upper, "--replace"])
    assert res.exit_code == 0, res.stderr
    with duckdb.connect(str(bad_db)) as con:
        names = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    assert {"patients_k2", "patients_k2_rows", "patients_k2_classes", "patients_k2_view"} <= {
        n.lower() for n in names
    }
    assert len([n for n in names if n.lower().startswith("patients_k2")]) == 4


@pytest.mark.parametrize(
    ("extra", "needles"),
    [
        (["--paper", "--algorithm", "mondrian"], ["--paper", "mondrian"]),
        (["--exact", "--mode", "blocks"], ["--exact", "--mode blocks"]),
    ],
)
def test_conflicting_flags_are_usage_errors(bad_db, cli, extra, needles):
    before = file_catalog(bad_db)
    res = cli(["anonymize", "--db", bad_db, "--table", "patients", "--k", "2", *GOOD, *extra])
    assert res.exit_code == 2, res.stderr
    for needle in needles:
        assert needle in res.stderr
    assert file_catalog(bad_db) == before


@pytest.mark.parametrize(("ks", "needle"), [("", "names no k"), ("2,x", "'x' is not a whole number")])
def test_compare_refuses_a_bad_k_list(bad_db, cli, ks, needle):
    before = file_catalog(bad_db)
    res = cli(["compare", "--db", bad_db, "--table", "patients", "--k", ks, *GOOD])
    assert needle in check_failure(res, ["--k"])
    assert file_catalog(bad_db) == before


@pytest.mark.parametrize("k", [2.9, 5.0, "5", True])
def test_python_k_must_be_a_whole_number(bad_db, k):
    with pytest.raises(InputError, match="is not a whole number"):
        sbc_sql.anonymize(bad_db, "patients", k, qi=["age"])


def test_a_ragged_csv_names_the_line_not_its_values(cli, tmp_path):
    lines = ["age,zip,dis", *(f"{20 + i % 9},{100 + i % 4},flu" for i in range(40))]
    lines[7] = "33,SECRET-VALUE-123"
    data = tmp_path / "ragged.csv"
    data.write_text("\n".join(lines) + "\n")
    res = cli(["anonymize", "--table", str(data), "--k", "2", "--out-file", str(tmp_path / "out.csv")])
    check_failure(res, ["ragged.csv", "line 8 has 2 field(s)", "header has 3", "fix or remove that line"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ragged.csv"]


def test_a_csv_line_over_duckdbs_line_size_names_that_line_and_the_option(cli, tmp_path):
    """A 10.8 MB cell on line 9: DuckDB counts it as line 1 of its buffer; the message names
    the file's line, the limit and the option that lifts it, and never the cell."""
    lines = ["age,zip,dis", *(f"{20 + i % 9},{100 + i % 4},flu" for i in range(40))]
    lines[8] = "33," + "SECRET-VALUE-123" * 675_000 + ",flu"
    data = tmp_path / "long.csv"
    data.write_text("\n".join(lines) + "\n")
    db = tmp_path / "new.duckdb"
    res = cli(["anonymize", "--db", db, "--table", data, "--k", "2"])
    line = check_failure(res, ["long.csv", "line 9 is 10,800,0", "line-size limit of 2,000,000 bytes"])
    assert "max_line_size=10800" in line and "line 1 " not in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["long.csv"]


def test_weights_as_large_as_a_double_weigh_by_their_ratio(tmp_path):
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT i % 50 AS a, (i * 7) % 13 AS b FROM range(120) AS r(i)")
    plain = sbc_sql.anonymize(con, "t", 3, output="plain").measures
    huge = sbc_sql.anonymize(con, "t", 3, weights={"a": 1e308, "b": 1e308}, output="huge").measures
    assert plain is not None and huge is not None
    assert huge.total_ncp == pytest.approx(plain.total_ncp) and huge.total_ncp > 0
    measured = sbc_sql.measure(con, "t", "huge", weights={"a": 1e308, "b": 1e308})
    assert measured.total_ncp == pytest.approx(plain.total_ncp)


@pytest.fixture
def people(tmp_path: Path) -> Path:
    """100 rows: a categorical column distinct on 60 of them, a near-unique birth date, an
    email column, and a role comment with a typo on a column of its own table."""
    path = tmp_path / "people.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute(
            "CREATE TABLE people AS SELECT 'SECRET-TOKEN-' || (i % 60) AS code, "
            "DATE '1950-01-01' + (i * 97)::INTEGER AS born, ['F', 'M'][1 + i % 2] AS sex, "
            "'SECRET-VALUE-123' || i || '@x.org' AS EMail, 'flu' AS dis FROM range(100) AS r(i)"
        )
        con.execute("COMMENT ON COLUMN people.dis IS 'sbc:sensitive'")
        con.execute("CREATE TABLE typo AS SELECT i % 9 AS age, 'flu' AS dis FROM range(30) AS r(i)")
        con.execute("COMMENT ON COLUMN typo.dis IS 'sbc:sensitve'")
    return path


@pytest.mark.parametrize(
    ("extra", "needles"),
    [
        (["--drop", "code"], ["'EMail'", "named like a direct identifier", "'mail'", "--drop"]),
        (["--drop", "EMail"], ["'code'", "60 distinct values in 100 rows", "60%", "--drop"]),
    ],
)
def test_undeclared_columns_that_look_like_identifiers_are_refused(people, cli, extra, needles):
    before = file_catalog(people)
    check_failure(cli(["anonymize", "--db", people, "--table", "people", "--k", "5", *extra]), needles)
    assert file_catalog(people) == before


def test_a_near_unique_date_is_a_quasi_identifier_and_a_kept_one_warns(people, cli):
    # the birth date is distinct on every 97th day: 100 values in 100 rows, but a number,
    # so only the rule "distinct on every row" applies, and --qi declares it
    res = cli(["anonymize", "--db", people, "--table", "people", "--k", "5", "--drop", "EMail,code"])
    assert "'born'" in check_failure(res, ["distinct on all 100 rows"])
    res = cli(
        ["anonymize", "--db", people, "--table", "people", "--k", "5", "--qi", "born,sex"]
        + ["--drop", "EMail", "--keep", "code"]
    )
    assert res.exit_code == 0, res.stderr
    assert "warning: column 'code' (--keep) is distinct on 60% of the rows" in res.stderr
    assert not any(secret in res.stderr for secret in SECRETS)
    # a Python caller reads it in keywords
    with pytest.warns(UserWarning, match="'code' \\(keep=...\\) is distinct on 60%"):
        sbc_sql.anonymize(people, "people", 5, qi="born,sex", drop="EMail", keep="code", output="again")


def test_a_role_comment_with_a_typo_is_an_error(people, cli):
    res = cli(["anonymize", "--db", people, "--table", "typo", "--k", "2"])
    check_failure(res, ["'dis'", "'sbc:sensitve'", "sbc:sensitive", "sbc:insensitive", "--sensitive"])
    # a flag gives the column its role: the comment is not read
    res = cli(["anonymize", "--db", people, "--table", "typo", "--k", "2", "--sensitive", "dis"])
    assert res.exit_code == 0, res.stderr


@pytest.mark.parametrize(
    ("extra", "needles"),
    [
        (["--leftover", "drop"], ["'drop' is not one of 'nearest', 'last', 'suppress'"]),
        (["--mode", "fast"], ["'fast' is not one of 'auto', 'exact', 'blocks'"]),
        (["--algorithm", "nope"], ["'nope' is not one of 'sbca', 'sbca-paper'"]),
        (["--hierarchy", "age=age.csv"], ["--hierarchy is read by datafly, incognito", "drop --hierarchy"]),
    ],
)
def test_choices_are_usage_errors_naming_the_choices(bad_db, cli, extra, needles):
    before = file_catalog(bad_db)
    res = cli(["anonymize", "--db", bad_db, "--table", "patients", "--k", "2", *GOOD, *extra])
    assert res.exit_code == 2, res.stderr
    flat = " ".join(res.stderr.split())
    for needle in needles:
        assert needle in flat
    assert file_catalog(bad_db) == before


# ---- what the engine reports, read at the boundary: one line, no value, nothing left ----


def ragged_csv(path: Path, last: str) -> Path:
    """A CSV whose one bad line comes after DuckDB's sniffing sample."""
    path.write_text("age,zip,dis\n" + "".join(f"{30 + i % 40},{i % 7},flu\n" for i in range(30000)) + last)
    return path


@pytest.mark.parametrize(
    ("last", "needles"),
    [
        ("31,3,SECRET-VALUE-123,extra\n", ["line 30002", "has 4 columns, expected 3", "--table"]),
        ("SECRET-VALUE-123,3,flu\n", ["line 30002", "column 'age'", "BIGINT", "--table"]),
    ],
    ids=["too many columns", "type broken late"],
)
def test_a_bad_csv_line_into_a_new_database(cli, tmp_path, last, needles):
    csv = ragged_csv(tmp_path / "p.csv", last)
    db = tmp_path / "new.duckdb"
    res = cli(["anonymize", "--db", db, "--table", csv, "--k", "2", "--sensitive", "dis"])
    check_failure(res, [f"CSV file '{csv}'", *needles])
    # the database file the run would have created is not left behind
    assert not db.exists() and not Path(f"{db}.wal").exists()


def test_a_view_whose_cast_fails(bad_db, cli):
    with duckdb.connect(str(bad_db)) as con:
        con.execute("CREATE VIEW casted AS SELECT CAST(name AS INTEGER) AS n, age, dis FROM patients")
    before = file_catalog(bad_db)
    res = cli(["anonymize", "--db", bad_db, "--table", "casted", "--k", "2", "--sensitive", "dis"])
    check_failure(res, ["view 'casted'", "column 'name'", "INT32", "fix or remove"])
    assert file_catalog(bad_db) == before


def test_enum_categories_are_never_shown(tmp_path, cli):
    path = tmp_path / "enum.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TYPE secret_kind AS ENUM ('SECRET-VALUE-123', 'SECRET-NOTE')")
        con.execute(
            "CREATE TABLE t AS SELECT 20 + i % 9 AS age, CAST(CASE WHEN i % 2 = 0 "
            "THEN 'SECRET-NOTE' ELSE 'SECRET-VALUE-123' END AS secret_kind) AS kind, "
            "{'k': CAST('SECRET-NOTE' AS secret_kind)} AS nested, 'flu' AS dis FROM range(40) r(i)"
        )
    # the roles are printed with the types: ENUM, STRUCT(k ENUM)
    res = cli(
        [
            "anonymize",
            "--db",
            path,
            "--table",
            "t",
            "--k",
            "2",
            "--qi",
            "age,kind",
            "--drop",
            "nested",
            "--sensitive",
            "dis",
        ]
    )
    assert res.exit_code == 0, res.stderr
    assert "column 'kind' (ENUM): categorical" in res.stderr
    assert "column 'nested' (STRUCT(k ENUM)): identifier" in res.stderr
    # and in an error
    res = cli(
        [
            "anonymize",
            "--db",
            path,
            "--table",
            "t",
            "--k",
            "2",
            "--qi",
            "age,nested",
            "--keep",
            "kind",
            "--sensitive",
            "dis",
            "--output",
            "other",
        ]
    )
    check_failure(res, ["'nested'", "STRUCT(k ENUM)", "--drop"])


@pytest.mark.parametrize(
    ("limit", "needles"),
    [
        ("1KB", ["'1KB'", "below 16MB", "--memory-limit 16MB"]),
        ("99999999TB", ["'99999999TB'", "above this machine's", "leave it out"]),
    ],
)
def test_memory_limits_out_of_range(bad_db, cli, limit, needles):
    before = file_catalog(bad_db)
    res = cli(
        ["anonymize", "--db", bad_db, "--table", "patients", "--k", "2", *GOOD, "--memory-limit", limit]
    )
    check_failure(res, needles)
    assert file_catalog(bad_db) == before


def test_a_memory_limit_too_small_for_the_table(tmp_path, cli):
    # above the floor, well below what this table needs (it runs at 64MB, not at 32MB): DuckDB's
    # out-of-memory error, read. A table that needs only a little more than the limit is flaky:
    # whether DuckDB spills in time depends on how its threads interleave under load.
    path = tmp_path / "big.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute(
            "CREATE TABLE t AS SELECT 20 + i % 60 AS age, 'z' || (i % 500) AS zip, "
            "'diagnosis-with-a-long-name-' || (i % 9) AS dis FROM range(1000000) r(i)"
        )
    before = file_catalog(path)
    res = cli(
        [
            "anonymize",
            "--db",
            path,
            "--table",
            "t",
            "--k",
            "5",
            "--sensitive",
            "dis",
            "--memory-limit",
            "16MB",
        ]
    )
    line = check_failure(res, ["ran out of memory", "--memory-limit"], after_roles=True)
    assert "MiB" in line
    assert file_catalog(path) == before


@pytest.mark.parametrize(
    ("content", "needles"),
    [
        (b"PAR1" + b"SECRET-VALUE-123" * 40, ["not a valid Parquet file"]),
        (b"PAR1", ["not a valid Parquet file"]),
    ],
    ids=["noise", "too short"],
)
def test_a_corrupt_parquet_input(cli, tmp_path, content, needles):
    parquet = tmp_path / "p.parquet"
    parquet.write_bytes(content)
    out = tmp_path / "release.csv"
    res = cli(["anonymize", "--table", parquet, "--k", "2", "--out-file", out])
    check_failure(res, [f"'{parquet}'", *needles])
    assert not out.exists() and not Path(f"{out}.sbc-partial").exists()


@pytest.mark.parametrize("command", ["anonymize", "measure", "verify", "evaluate"])
def test_a_corrupt_database(cli, tmp_path, command):
    path = tmp_path / "bad.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE patients AS SELECT range AS i FROM range(100000)")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    args = {
        "anonymize": ["--table", "patients", "--k", "2"],
        "measure": ["--original", "patients", "--release", "r"],
        "verify": ["--original", "patients", "--release", "r", "--k", "2"],
        "evaluate": ["--original", "patients", "--release", "r"],
    }[command]
    check_failure(cli([command, "--db", path, *args]), [f"--db '{path}'", "not a valid DuckDB database"])
    assert len(path.read_bytes()) == len(data) // 3


def full_device(path: Path) -> Path:
    """``path`` made a link to /dev/full, where every write fails with ENOSPC: a full disk
    for whatever writes there, for any user, in any CI."""
    path.symlink_to("/dev/full")
    return path


def test_a_full_disk_during_the_export(bad_db, cli, tmp_path):
    out = tmp_path / "release.csv"
    partial = full_device(Path(f"{out}.sbc-partial"))
    before = file_catalog(bad_db)
    res = cli(["anonymize", "--db", bad_db, "--table", "patients", "--k", "2", *GOOD, "--out-file", out])
    check_failure(res, ["No space left on device", "free space"], after_roles=True)
    assert not out.exists() and not partial.exists() and not partial.is_symlink()
    assert file_catalog(bad_db) == before


def test_a_full_disk_for_a_new_database(cli, tmp_path):
    csv = ragged_csv(tmp_path / "p.csv", "")
    db = tmp_path / "new.duckdb"
    wal = full_device(Path(f"{db}.wal"))  # the commit writes the log first
    res = cli(["anonymize", "--db", db, "--table", csv, "--k", "2", "--sensitive", "dis"])
    line = check_failure(res, ["committing", "No space left on device", "free space"], after_roles=True)
    assert "Traceback" not in res.stderr and line.count("Error") == 1
    # the database file the run made goes; the log it found there was not its own
    assert not db.exists() and wal.is_symlink()


def test_outputs_in_a_missing_folder_are_refused_before_any_work(bad_db, cli, tmp_path):
    before = file_catalog(bad_db)
    out = tmp_path / "nodir" / "release.parquet"
    res = cli(["anonymize", "--db", bad_db, "--table", "patients", "--k", "2", *GOOD, "--out-file", out])
    check_failure(res, ["--out-file", str(out.parent), "does not exist"])
    for flag in ("--csv", "--plot"):
        target = tmp_path / "nodir" / "ncp.out"
        res = cli(compare_args(bad_db, flag, target))
        check_failure(res, [flag, str(target.parent), "does not exist"])
    assert file_catalog(bad_db) == before


def compare_args(db: Path, *extra: object) -> list[object]:
    """A one-algorithm, one-k comparison of the patients table with the good roles."""
    return ["compare", "--db", db, "--table", "patients", "--k", "2", "--algorithms", "sbca", *GOOD, *extra]


def test_plot_without_matplotlib_names_the_extra(bad_db, cli, tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a)
    )
    before = file_catalog(bad_db)
    res = cli(compare_args(bad_db, "--plot", tmp_path / "ncp.png"))
    check_failure(res, ["--plot", "matplotlib", "pip install 'sbc-sql[plot]'"])
    assert file_catalog(bad_db) == before


def test_a_dry_run_creates_no_database(cli, tmp_path):
    csv = ragged_csv(tmp_path / "p.csv", "")
    db = tmp_path / "new.duckdb"
    res = cli(["anonymize", "--db", db, "--table", csv, "--k", "2", "--sensitive", "dis", "--sql"])
    assert res.exit_code == 0, res.stderr
    assert "CREATE TABLE" in res.stdout
    assert not db.exists() and not Path(f"{db}.wal").exists()


def test_an_internal_error_is_one_line_without_its_message(bad_db, cli, monkeypatch):
    from sbc_sql.stages import stats

    def broken(*args, **kwargs):
        raise ValueError("SECRET-VALUE-123 leaked by a bug")

    monkeypatch.setattr(stats, "collect_stats", broken)
    before = file_catalog(bad_db)
    res = cli(["anonymize", "--db", bad_db, "--table", "patients", "--k", "2", *GOOD])
    check_failure(res, ["internal error: ValueError", "--debug"])
    # --debug shows where, message included (the user asked for it)
    res = cli(["--debug", "anonymize", "--db", bad_db, "--table", "patients", "--k", "2", *GOOD])
    assert res.exit_code == 1
    assert "Traceback" in res.stderr and "collect_stats" in res.stderr
    assert res.stderr.strip().splitlines()[-1].startswith("Error: internal error: ValueError")
    assert file_catalog(bad_db) == before


def test_debug_shows_the_stack_of_an_engine_error_without_its_text(bad_db, cli):
    with duckdb.connect(str(bad_db)) as con:
        con.execute("CREATE VIEW casted AS SELECT CAST(name AS INTEGER) AS n, age, dis FROM patients")
    res = cli(["--debug", "anonymize", "--db", bad_db, "--table", "casted", "--k", "2", "--sensitive", "dis"])
    assert res.exit_code == 1
    assert "Traceback" in res.stderr and "open_source" in res.stderr
    for secret in SECRETS:
        assert secret not in res.stderr


def test_ctrl_c_inside_a_run_rolls_back_and_says_so(bad_db, cli, monkeypatch):
    from sbc_sql.stages import verify

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(verify, "verify_with_labels", interrupted)
    before = file_catalog(bad_db)
    res = cli(["anonymize", "--db", bad_db, "--table", "patients", "--k", "2", *GOOD])
    assert res.exit_code == 130
    assert res.stderr.strip().splitlines()[-1] == "Interrupted; nothing was written."
    assert "Traceback" not in res.stderr
    assert file_catalog(bad_db) == before


def test_an_unfinished_progress_line_is_ended_before_the_message(capsys):
    from sbc_sql.cli import ProgressBar

    def stopped_while_drawing() -> None:
        with ProgressBar("clustering", enabled=True) as bar:
            bar(3, 10)
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        stopped_while_drawing()
    assert capsys.readouterr().err.endswith("eta   0.0s\n")


@contextlib.contextmanager
def held_read_only(path: Path) -> Iterator[None]:
    """``path`` held open read-only by another process meanwhile: DuckDB then refuses any
    writer, root included, whom mode bits do not stop."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import duckdb, sys; c = duckdb.connect({str(path)!r}, read_only=True); "
            "print(1, flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "1"
        yield
    finally:
        holder.communicate("")


def read_only_copy(bad_db: Path, cli) -> Path:
    res = cli(["anonymize", "--db", bad_db, "--table", "patients", "--k", "2", *GOOD])
    assert res.exit_code == 0, res.stderr
    bad_db.chmod(0o444)
    return bad_db


@pytest.mark.parametrize(
    ("command", "expect"),
    [
        (["verify", "--original", "patients", "--release", "patients_k2", "--k", "2"], "ok: 'patients_k2'"),
        (["measure", "--original", "patients", "--release", "patients_k2"], "total NCP"),
        (
            ["evaluate", "--original", "patients", "--release", "patients_k2", "--sensitive", "dis"],
            "l-diversity",
        ),
        (["anonymize", "--table", "patients", "--k", "3", *GOOD, "--sql"], "CREATE TABLE"),
    ],
    ids=["verify", "measure", "evaluate", "sql"],
)
def test_reading_commands_work_on_a_file_nobody_may_write(bad_db, cli, command, expect):
    """Opened read-only: the file may be one the user cannot write (mode 0444), and one
    another process has open read-only (which excludes any writer: the test holds for root
    too, whom mode bits do not stop)."""
    path = read_only_copy(bad_db, cli)
    data = path.read_bytes()
    with held_read_only(path):
        res = cli([command[0], "--db", path, *command[1:]])
    assert res.exit_code == 0, res.stderr
    assert expect in res.stdout
    assert path.read_bytes() == data


def test_report_with_its_curve_works_on_a_file_nobody_may_write(cli, tmp_path):
    """report only reads the database: the file opened read-only (mode 0444, in a folder
    nobody may write, and held open read-only by another process, which excludes any writer
    even for root); its curve re-clusters the original elsewhere, and each k is drawn."""
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "p.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute(
            "CREATE TABLE people AS SELECT 18 + (i * 7919) % 83 AS age, 'z' || (i * 104729) % 50 AS zip, "
            "'d' || i % 13 AS dis FROM range(400) r(i)"
        )
    res = cli(["anonymize", "--db", path, "--table", "people", "--k", "5", "--sensitive", "dis"])
    assert res.exit_code == 0, res.stderr
    path.chmod(0o444)
    folder.chmod(0o555)
    data = path.read_bytes()
    out = tmp_path / "report.html"
    try:
        with held_read_only(path):
            res = cli(
                ["report", "--db", path, "--original", "people", "--release", "people_k5",
                 "--curve-k", "2,10", "-o", out]
            )  # fmt: skip
    finally:
        folder.chmod(0o755)
    assert res.exit_code == 0, res.stderr
    assert "report: k=2 NCP" in res.stderr and "report: k=10 NCP" in res.stderr
    assert out.exists()
    assert path.read_bytes() == data
    assert sorted(p.name for p in folder.iterdir()) == ["p.duckdb"]


@pytest.mark.parametrize("other", ["patients_k2_rows", "patients_k2_classes", "patients_k2_view"])
def test_replace_never_takes_a_part_of_another_release(bad_db, cli, other):
    assert cli(["anonymize", "--db", bad_db, "--table", "patients", "--k", "2", *GOOD]).exit_code == 0
    before = file_catalog(bad_db)
    res = cli(
        ["anonymize", "--db", bad_db, "--table", "patients", "--k", "2", *GOOD, "-o", other, "--replace"]
    )
    check_failure(res, [f"'{other}' belongs to the release 'patients_k2'", "another --output"])
    assert file_catalog(bad_db) == before
    res = cli(["anonymize", "--db", bad_db, "--table", "patients", "--k", "2", *GOOD, "-o", "patients_k2"])
    assert res.exit_code == 1  # the release itself: already exists, and --replace replaces it
    res = cli(
        [
            "anonymize",
            "--db",
            bad_db,
            "--table",
            "patients",
            "--k",
            "2",
            *GOOD,
            "-o",
            "patients_k2",
            "--replace",
        ]
    )
    assert res.exit_code == 0, res.stderr
