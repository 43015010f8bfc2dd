"""The example and benchmark data generators: deterministic, well-typed, and faithful to Adult."""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import importlib.util
import re
import sys
from pathlib import Path

import duckdb
import pytest

ROOT = Path(__file__).resolve().parents[1]


def load_script(relative: str):
    """Import a script from examples/ or benchmarks/, which are not packages."""
    path = ROOT / relative
    name = f"sbc_script_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


clinic = load_script("examples/make_clinic_db.py")
datasets = load_script("benchmarks/datasets.py")


def digest(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    return hashlib.sha256(repr(con.execute(sql).fetchall()).encode()).hexdigest()


def column_info(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple]:
    return con.execute(
        "SELECT column_name, data_type, comment FROM duckdb_columns() "
        "WHERE table_name = ? ORDER BY column_index",
        [table],
    ).fetchall()


@pytest.fixture(scope="module")
def clinic_db(tmp_path_factory) -> Path:
    return Path(clinic.make_clinic_db(tmp_path_factory.mktemp("clinic") / "c.duckdb", 2000, 7))


def clinic_digest(path: Path) -> str:
    with duckdb.connect(str(path), read_only=True) as con:
        return digest(con, "SELECT * FROM patients ORDER BY ssn")


def test_clinic_is_deterministic_for_a_seed(clinic_db, tmp_path):
    again = clinic.make_clinic_db(tmp_path / "again.duckdb", 2000, 7)
    other = clinic.make_clinic_db(tmp_path / "other.duckdb", 2000, 8)
    assert clinic_digest(clinic_db) == clinic_digest(Path(again))
    assert clinic_digest(clinic_db) != clinic_digest(Path(other))


def test_clinic_columns_types_and_role_comments(clinic_db):
    with duckdb.connect(str(clinic_db), read_only=True) as con:
        assert column_info(con, "patients") == [
            ("name", "VARCHAR", "sbc:identifier"),
            ("ssn", "VARCHAR", "sbc:identifier"),
            ("birth_date", "DATE", None),
            ("age", "INTEGER", None),
            ("zip", "VARCHAR", None),
            ("sex", "VARCHAR", None),
            ("nationality", "VARCHAR", None),
            ("diagnosis", "VARCHAR", "sbc:sensitive"),
        ]
        assert con.execute("SELECT count(*) FROM patients").fetchone()[0] == 2000


def test_clinic_ages_match_birth_dates(clinic_db):
    ref = dt.date(2026, 1, 1)
    with duckdb.connect(str(clinic_db), read_only=True) as con:
        rows = con.execute("SELECT birth_date, age FROM patients").fetchall()
    for birth, age in rows:
        assert birth < ref
        assert age == ref.year - birth.year - ((ref.month, ref.day) < (birth.month, birth.day))


def test_clinic_ssns_unique_and_shaped(clinic_db):
    with duckdb.connect(str(clinic_db), read_only=True) as con:
        ssns = [r[0] for r in con.execute("SELECT ssn FROM patients").fetchall()]
        zips = [r[0] for r in con.execute("SELECT DISTINCT zip FROM patients").fetchall()]
        sexes = {r[0] for r in con.execute("SELECT DISTINCT sex FROM patients").fetchall()}
    assert len(set(ssns)) == len(ssns)
    assert all(re.fullmatch(r"\d{3}-\d{2}-\d{4}", s) for s in ssns)
    assert all(re.fullmatch(r"\d{5}", z) for z in zips)
    assert len({z[:3] for z in zips}) < len(zips) / 10
    assert sexes == {"F", "M"}


def test_clinic_refuses_to_overwrite_unless_asked(clinic_db, tmp_path):
    path = tmp_path / "c.duckdb"
    clinic.make_clinic_db(path, 10, 1)
    with pytest.raises(FileExistsError):
        clinic.make_clinic_db(path, 10, 1)
    assert clinic.main(["--out", str(path), "--rows", "10"]) == 2
    clinic.make_clinic_db(path, 20, 1, replace=True)
    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM patients").fetchone()[0] == 20


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_clinic_visits_file_holds_age_zip_and_dx_of_every_patient(tmp_path, suffix):
    visits = tmp_path / "data" / f"visits{suffix}"
    assert clinic.main(["--out", str(tmp_path / "c.duckdb"), "--rows", "50", "--visits", str(visits)]) == 0
    with duckdb.connect(str(tmp_path / "c.duckdb"), read_only=True) as con:
        read = "read_csv" if suffix == ".csv" else "read_parquet"
        got = con.execute(f"SELECT * FROM {read}(?) ORDER BY ALL", [str(visits)]).fetchall()
        want = con.execute("SELECT age, zip, diagnosis FROM patients ORDER BY ALL").fetchall()
        names = [d[0] for d in con.execute(f"SELECT * FROM {read}(?)", [str(visits)]).description]
    assert names == ["age", "zip", "dx"]
    assert got == want and len(got) == 50


def test_clinic_visits_refused_before_anything_is_written(tmp_path, capsys):
    db, visits = tmp_path / "c.duckdb", tmp_path / "visits.json"
    assert clinic.main(["--out", str(db), "--rows", "10", "--visits", str(visits)]) == 2
    assert "must end in .csv or .parquet" in capsys.readouterr().err
    assert not db.exists() and not visits.exists()
    visits = tmp_path / "visits.csv"
    visits.write_text("kept")
    assert clinic.main(["--out", str(db), "--rows", "10", "--visits", str(visits)]) == 2
    assert not db.exists() and visits.read_text() == "kept"
    assert clinic.main(["--out", str(db), "--rows", "10", "--visits", str(visits), "--replace"]) == 0
    assert visits.read_text().startswith('"age","zip","dx"')


def needs_adult(test):
    """Adult ships with the project (benchmarks/data); its absence is a failure."""

    def run(*args, **kwargs):
        assert datasets.adult_path().is_file(), (
            f"UCI Adult not found at {datasets.adult_path()}; set SBC_ADULT_PATH"
        )
        return test(*args, **kwargs)

    run.__name__ = test.__name__
    return run


def clean_adult_lines(limit: int) -> list[list[str]]:
    """The reference reading of adult.data: split on ', ', drop rows with a '?'."""
    rows = []
    path = datasets.adult_path()
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    for line in raw.decode().splitlines():
        fields = line.split(", ")
        if len(fields) == 15 and "?" not in fields:
            rows.append(fields)
            if len(rows) == limit:
                break
    return rows


ADULT_SHA256 = "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d"


def test_the_shipped_adult_is_the_published_file():
    path = datasets.ADULT_DEFAULT_PATH
    assert path.is_file(), f"UCI Adult is not shipped at {path}"
    assert hashlib.sha256(gzip.decompress(path.read_bytes())).hexdigest() == ADULT_SHA256


@needs_adult
def test_adult_full_clean_file():
    con = duckdb.connect()
    assert datasets.load_adult(con) == 30162
    assert [c[:2] for c in column_info(con, "adult")] == list(datasets.ADULT_COLUMNS.items())


@needs_adult
def test_adult_first_5000_match_the_paper_and_file_order():
    con = duckdb.connect()
    assert datasets.load_adult(con, "a5k", rows=5000) == 5000
    cards = con.execute(
        "SELECT count(DISTINCT age), count(DISTINCT sex), count(DISTINCT native_country) FROM a5k"
    ).fetchone()
    assert cards == (67, 2, 39)
    loaded = con.execute("SELECT * FROM a5k").fetchall()
    assert [[str(v) for v in row] for row in loaded] == clean_adult_lines(5000)


@needs_adult
def test_adult_column_subset():
    con = duckdb.connect()
    datasets.load_adult(con, "qi", rows=100, columns=datasets.ADULT_QIS_PAPER + ["income"])
    assert [c[:2] for c in column_info(con, "qi")] == [
        ("age", "INTEGER"),
        ("sex", "VARCHAR"),
        ("native_country", "VARCHAR"),
        ("income", "VARCHAR"),
    ]
    with pytest.raises(ValueError, match="unknown Adult columns"):
        datasets.load_adult(con, "bad", columns=["nope"])


@pytest.fixture(scope="module")
def synthetic():
    con = duckdb.connect()
    datasets.make_synthetic(con, "synth", 20_000, seed=11)
    return con


def test_synthetic_columns(synthetic):
    info = column_info(synthetic, "synth")
    assert [c[0] for c in info] == ["person_id", *datasets.SYNTH_QIS, datasets.SYNTH_SENSITIVE]
    assert [c[1] for c in info] == list(datasets.SYNTH_COLUMNS.values())
    assert len(datasets.SYNTH_QIS) == 8


def test_synthetic_cardinalities(synthetic):
    distinct = ", ".join(f"count(DISTINCT {c})" for c in datasets.SYNTH_COLUMNS)
    counts = dict(
        zip(
            datasets.SYNTH_COLUMNS, synthetic.execute(f"SELECT {distinct} FROM synth").fetchone(), strict=True
        )
    )
    assert counts["person_id"] == 20_000
    assert counts["sex"] == 2
    assert counts["region"] == 7
    assert 25 <= counts["occupation"] <= 30
    assert 150 <= counts["employer"] <= 200
    assert 900 <= counts["zip3"] <= 1000
    assert 15 <= counts["diagnosis"] <= 20
    assert 90 <= counts["age"] <= 100
    lo_age, hi_age, lo_day, hi_day, lo_inc = synthetic.execute(
        "SELECT min(age), max(age), min(visit_date), max(visit_date), min(income) FROM synth"
    ).fetchone()
    assert lo_age >= 0 and hi_age <= 99
    assert dt.date(2015, 1, 1) <= lo_day and hi_day <= dt.date(2025, 12, 31)
    assert lo_inc >= 0


def test_synthetic_independent_of_chunk_size(synthetic):
    datasets.make_synthetic(synthetic, "synth_chunked", 20_000, seed=11, chunk_rows=3_000)
    datasets.make_synthetic(synthetic, "synth_other", 20_000, seed=12)
    order = "ORDER BY person_id"
    assert digest(synthetic, f"SELECT * FROM synth {order}") == digest(
        synthetic, f"SELECT * FROM synth_chunked {order}"
    )
    assert digest(synthetic, f"SELECT * FROM synth {order}") != digest(
        synthetic, f"SELECT * FROM synth_other {order}"
    )


def test_wide_table_is_seeded_categorical_and_skewed():
    con = duckdb.connect()
    assert datasets.make_wide(con, "wide", 3000, 9, seed=11) == 3000
    datasets.make_wide(con, "again", 3000, 9, seed=11)
    datasets.make_wide(con, "other", 3000, 9, seed=12)
    everything = "SELECT * FROM {} ORDER BY ALL"
    assert digest(con, everything.format("wide")) == digest(con, everything.format("again"))
    assert digest(con, everything.format("wide")) != digest(con, everything.format("other"))
    info = column_info(con, "wide")
    assert [c[:2] for c in info] == [(name, "VARCHAR") for name in datasets.wide_columns(9)]
    for name, card in datasets.wide_columns(9).items():
        distinct, nulls, top = con.execute(
            f"SELECT count(DISTINCT {name}), count(*) - count({name}), max(n) "
            f"FROM (SELECT {name}, count(*) OVER (PARTITION BY {name}) AS n FROM wide)"
        ).fetchone()
        assert distinct == card  # 3,000 rows draw every value of up to 50
        assert 20 <= nulls <= 110  # about 2 %
        assert top > 3000 / card  # the most frequent value is above the uniform share
