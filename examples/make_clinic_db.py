"""Make a seeded synthetic clinic database to try sbc-sql on.

The table `patients` looks like a small hospital extract: direct identifiers
(name, ssn), quasi-identifiers with realistic skew (birth_date, age, zip, sex,
nationality) and a sensitive diagnosis that depends on age and sex. Column
comments mark the roles, so `sbc-sql` can read them without extra flags.

Every value is a function of `--seed`: the same seed gives the same table.

    python examples/make_clinic_db.py --rows 2000 --out clinic.duckdb

`--admit 200` appends a day's admissions instead: 200 more patients (drawn with `--seed`,
so give each day its own) added to the existing database's `patients`, as a daily load
would, for `sbc-sql refresh`:

    python examples/make_clinic_db.py --out clinic.duckdb --admit 200 --seed 8

`--residents 20000` adds the table `residents` to the existing database instead: the
region's people the patients were drawn from, on the patients' quasi-identifiers (every
patient, and 20,000 more people drawn alike with `--seed` + 1), the population of
`sbc-sql anonymize --population residents --k-map 20`:

    python examples/make_clinic_db.py --out clinic.duckdb --residents 20000

`--visits visits.csv` (or a `.parquet` path) also writes the patients' age, zip and
diagnosis (as `dx`) to a file, one row per patient: an input given as a path, with no
column comments, for `sbc-sql anonymize -t visits.csv` and the Spark engine.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

REFERENCE_DATE = np.datetime64("2026-01-01")

FEMALE_FIRST = """
Mary Patricia Jennifer Linda Elizabeth Barbara Susan Jessica Sarah Karen Lisa Nancy
Betty Margaret Sandra Ashley Kimberly Emily Donna Michelle Carol Amanda Dorothy Melissa
Deborah Stephanie Rebecca Sharon Laura Cynthia Kathleen Amy Angela Shirley Anna Brenda
Pamela Emma Nicole Helen Samantha Katherine Christine Debra Rachel Carolyn Janet Catherine
Maria Heather Diane Ruth Julie Olivia Joyce Virginia Victoria Kelly Lauren Christina Joan
Evelyn Judith Megan Andrea Cheryl Hannah Jacqueline Martha Gloria Teresa Ann Sara Madison
Frances Kathryn Janice Jean Abigail Alice Judy Sophia Grace Denise Amber Doris Marilyn
Danielle Beverly Isabella Theresa Diana Natalie Brittany Charlotte Marie Kayla Alexis Lori
""".split()  # noqa: SIM905 - a block of words; as a literal it formats to a name a line

MALE_FIRST = """
James Robert John Michael David William Richard Joseph Thomas Christopher Charles Daniel
Matthew Anthony Mark Donald Steven Andrew Paul Joshua Kenneth Kevin Brian George Timothy
Ronald Jason Edward Jeffrey Ryan Jacob Gary Nicholas Eric Jonathan Stephen Larry Justin
Scott Brandon Benjamin Samuel Gregory Alexander Patrick Frank Raymond Jack Dennis Jerry
Tyler Aaron Jose Adam Nathan Henry Zachary Douglas Peter Kyle Noah Ethan Jeremy Walter
Christian Keith Roger Terry Austin Sean Gerald Carl Harold Dylan Arthur Lawrence Jordan
Jesse Bryan Billy Bruce Gabriel Joe Logan Alan Juan Albert Willie Elijah Wayne Randy Vincent
Mason Roy Ralph Bobby Russell Bradley Philip Eugene Louis Harry Howard Fred Liam Lucas
""".split()  # noqa: SIM905 - a block of words; as a literal it formats to a name a line

SURNAMES = """
Smith Johnson Williams Brown Jones Garcia Miller Davis Rodriguez Martinez Hernandez Lopez
Gonzalez Wilson Anderson Thomas Taylor Moore Jackson Martin Lee Perez Thompson White Harris
Sanchez Clark Ramirez Lewis Robinson Walker Young Allen King Wright Scott Torres Nguyen Hill
Flores Green Adams Nelson Baker Hall Rivera Campbell Mitchell Carter Roberts Gomez Phillips
Evans Turner Diaz Parker Cruz Edwards Collins Reyes Stewart Morris Morales Murphy Cook Rogers
Gutierrez Ortiz Morgan Cooper Peterson Bailey Reed Kelly Howard Ramos Kim Cox Ward Richardson
Watson Brooks Chavez Wood James Bennett Gray Mendoza Ruiz Hughes Price Alvarez Castillo
Sanders Patel Myers Long Ross Foster Jimenez Powell Jenkins Perry Russell Sullivan Bell
Coleman Butler Henderson Barnes Gonzales Fisher Vasquez Simmons Romero Jordan Patterson
Alexander Hamilton Graham Reynolds Griffin Wallace Moreno West Cole Hayes Bryant Herrera
Gibson Ellis Tran Medina Aguilar Stevens Murray Ford Castro Marshall Owens Harrison Fernandez
McDonald Woods Washington Kennedy Wells Vargas Henry Chen Freeman Webb Tucker Guzman Burns
Crawford Olson Simpson Porter Hunter Gordon Mendez Silva Shaw Snyder Mason Dixon Munoz Hunt
Hicks Holmes Palmer Wagner Black Robertson Boyd Rose Stone Salazar Fox Warren Mills Meyer
Rice Schmidt Garza Daniels Ferguson Nichols Stephens Soto Weaver Ryan Gardner Payne Grant
Dunn Kelley Spencer Hawkins Arnold Pierce Vazquez Hansen Peters Santos Hart Bradley Knight
Elliott Cunningham Duncan Armstrong Hudson Carroll Lane Riley Andrews Alvarado Ray Delgado
Berry Perkins Hoffman Johnston Matthews Pena Richards Contreras Willis Carpenter Lawrence
O'Brien Sandoval Guerrero George Chapman Rios Estrada Ortega Watkins Greene Nunez Wheeler
Valdez Harper Burke Larson Santiago Maldonado Morrison Franklin Carlson Austin Dominguez
Carr Lawson Jacobs O'Connor Obrien Wong Kowalski Novak Schneider Ivanova Okafor Yamamoto
""".split()  # noqa: SIM905 - a block of words; as a literal it formats to a name a line

NATIONALITIES = [
    "United States",
    "Mexico",
    "India",
    "China",
    "Philippines",
    "El Salvador",
    "Vietnam",
    "Cuba",
    "Dominican Republic",
    "Guatemala",
    "South Korea",
    "Canada",
    "Jamaica",
    "Colombia",
    "Haiti",
    "Germany",
    "United Kingdom",
    "Brazil",
    "Honduras",
    "Poland",
    "Italy",
    "Peru",
    "Ecuador",
    "Iran",
    "Japan",
    "Russia",
    "Pakistan",
    "Nigeria",
    "Ireland",
    "Portugal",
]
HOME_COUNTRY_SHARE = 0.78

ZIP_PREFIXES = ["021", "024", "019", "018", "017", "020", "023", "022"]
ZIPS_PER_PREFIX = (25, 55)

# name, base weight, age peak, age spread, weight for F, weight for M
DIAGNOSES = [
    ("Hypertension", 10.0, 70, 15, 1.0, 1.1),
    ("Hyperlipidemia", 7.0, 62, 14, 0.9, 1.1),
    ("Type 2 diabetes", 6.0, 63, 15, 0.9, 1.1),
    ("Osteoarthritis", 5.0, 72, 12, 1.3, 0.8),
    ("Depression", 4.0, 40, 18, 1.6, 0.7),
    ("Anxiety disorder", 4.0, 32, 15, 1.5, 0.7),
    ("Asthma", 3.5, 15, 20, 1.0, 1.0),
    ("Migraine", 3.0, 35, 13, 2.5, 0.6),
    ("Coronary artery disease", 3.0, 74, 11, 0.6, 1.6),
    ("Acute otitis media", 3.0, 4, 4, 1.0, 1.1),
    ("COPD", 2.5, 70, 12, 0.9, 1.1),
    ("Hypothyroidism", 2.5, 50, 18, 2.0, 0.5),
    ("Influenza", 2.0, 30, 40, 1.0, 1.0),
    ("Osteoporosis", 2.0, 78, 10, 2.0, 0.25),
    ("Benign prostatic hyperplasia", 2.0, 72, 10, 0.0, 2.0),
]
DIAGNOSIS_FLOOR = 0.02

SSN_AREAS = np.array([a for a in range(1, 900) if a != 666])
SSN_PER_AREA = 99 * 9999
MAX_ROWS = 10_000_000

#: the visits file's columns, from the patients table: its QIs and its sensitive value
SELECT_VISITS = "SELECT age, zip, diagnosis AS dx FROM patients"
VISITS_FORMATS = (".csv", ".parquet")

ROLE_COMMENTS = {"name": "sbc:identifier", "ssn": "sbc:identifier", "diagnosis": "sbc:sensitive"}

SELECT_PATIENTS = """
SELECT
    first_name::VARCHAR || ' ' ||
        CASE WHEN initial < 26 THEN chr(65 + initial) || '. ' ELSE '' END ||
        surname::VARCHAR                                               AS name,
    lpad(ssn_area::VARCHAR, 3, '0') || '-' || lpad(ssn_group::VARCHAR, 2, '0') || '-' ||
        lpad(ssn_serial::VARCHAR, 4, '0')                              AS ssn,
    birth_date::DATE                                                   AS birth_date,
    age::INTEGER                                                       AS age,
    zip::VARCHAR                                                       AS zip,
    sex::VARCHAR                                                       AS sex,
    nationality::VARCHAR                                               AS nationality,
    diagnosis::VARCHAR                                                 AS diagnosis
FROM patients_source
"""


def zipf_weights(n: int, exponent: float) -> np.ndarray:
    """Probabilities proportional to 1/rank**exponent: the usual shape of real category counts."""
    w = 1.0 / np.arange(1, n + 1) ** exponent
    return w / w.sum()


def dictionary(codes: np.ndarray, values: list[str]) -> pa.DictionaryArray:
    """Codes plus a small value list, so strings are built once per value, not per row."""
    return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), pa.array(values))


def draw_sex(rng: np.random.Generator, rows: int) -> np.ndarray:
    """0 = F, 1 = M; women are a slight majority of patients."""
    return (rng.random(rows) >= 0.51).astype(np.int8)


def age_weights() -> np.ndarray:
    """Patients by age 0..104: a population pyramid times a visit rate that rises with age."""
    ages = np.arange(105, dtype=float)
    population = np.where(ages < 60, 1.0, np.exp(-(((ages - 60) / 20.0) ** 2)))
    visits = 0.6 + (ages / 45.0) ** 1.5 + np.where(ages < 5, 0.8, 0.0)
    w = population * visits
    return w / w.sum()


def draw_birth_dates(rng: np.random.Generator, rows: int) -> np.ndarray:
    """Birth dates strictly before the reference date, shaped by `age_weights`."""
    years = rng.choice(len(age_weights()), size=rows, p=age_weights())
    days_back = np.maximum(np.floor((years + rng.random(rows)) * 365.2425).astype(np.int64), 1)
    return REFERENCE_DATE - days_back.astype("timedelta64[D]")


def age_on(reference: np.datetime64, birth: np.ndarray) -> np.ndarray:
    """Completed years at `reference`, the way a clinic computes age."""

    def parts(d):
        year = d.astype("datetime64[Y]")
        month = d.astype("datetime64[M]")
        return (
            year.astype(np.int64) + 1970,
            (month - year).astype(np.int64) + 1,
            (d - month).astype(np.int64) + 1,
        )

    ry, rm, rd = parts(np.asarray(reference))
    by, bm, bd = parts(birth)
    before_birthday = (rm < bm) | ((rm == bm) & (rd < bd))
    return (ry - by - before_birthday).astype(np.int32)


def zip_codes(rng: np.random.Generator) -> tuple[list[str], np.ndarray]:
    """A few hundred zip codes under a handful of shared 3-digit prefixes, with skewed use.

    The first prefix is the clinic's own area and dominates; inside a prefix a few
    zips hold most patients. Shared prefixes are what makes zip generalizable.
    """
    prefix_p = zipf_weights(len(ZIP_PREFIXES), 1.3)
    codes, probs = [], []
    for prefix, p in zip(ZIP_PREFIXES, prefix_p, strict=True):
        n = int(rng.integers(*ZIPS_PER_PREFIX, endpoint=True))
        suffixes = np.sort(rng.choice(100, size=n, replace=False))
        within = zipf_weights(n, 1.0)[rng.permutation(n)]
        codes += [f"{prefix}{s:02d}" for s in suffixes]
        probs.append(p * within)
    return codes, np.concatenate(probs)


def nationality_weights() -> np.ndarray:
    """Most patients share one country; the rest follow a long Zipf tail."""
    tail = zipf_weights(len(NATIONALITIES) - 1, 1.1) * (1 - HOME_COUNTRY_SHARE)
    return np.concatenate([[HOME_COUNTRY_SHARE], tail])


def diagnosis_table(max_age: int) -> np.ndarray:
    """P(diagnosis | sex, age) as an array [sex, age, diagnosis]: each condition peaks at its own age."""
    ages = np.arange(max_age + 1, dtype=float)[:, None]
    base = np.array([d[1] for d in DIAGNOSES])
    peak = np.array([d[2] for d in DIAGNOSES], dtype=float)
    spread = np.array([d[3] for d in DIAGNOSES], dtype=float)
    by_sex = np.array([[d[4] for d in DIAGNOSES], [d[5] for d in DIAGNOSES]])
    shape = np.exp(-0.5 * ((ages - peak) / spread) ** 2) + DIAGNOSIS_FLOOR
    w = by_sex[:, None, :] * (base * shape)[None, :, :]
    return w / w.sum(axis=2, keepdims=True)


def draw_diagnoses(rng: np.random.Generator, sex: np.ndarray, age: np.ndarray) -> np.ndarray:
    """One diagnosis per patient by inverse CDF of P(diagnosis | sex, age).

    Each (sex, age) cell's CDF is shifted by the cell number into one increasing
    array, so a single searchsorted serves every row in O(rows) memory.
    """
    table = diagnosis_table(int(age.max(initial=0)))
    cells = table.shape[0] * table.shape[1]
    cdf = np.cumsum(table.reshape(cells, -1), axis=1)
    cdf[:, -1] = 1.0
    flat = (cdf + np.arange(cells)[:, None]).ravel()
    cell = sex.astype(np.int64) * table.shape[1] + age
    hit = np.searchsorted(flat, cell + rng.random(len(age)), side="right")
    return np.minimum(hit - cell * len(DIAGNOSES), len(DIAGNOSES) - 1)


def draw_ssns(rng: np.random.Generator, rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct SSN-shaped numbers (area, group, serial), never area 000, 666 or 9xx."""
    index = rng.choice(len(SSN_AREAS) * SSN_PER_AREA, size=rows, replace=False)
    area = SSN_AREAS[index // SSN_PER_AREA]
    group = (index % SSN_PER_AREA) // 9999 + 1
    serial = index % 9999 + 1
    return area.astype(np.int16), group.astype(np.int8), serial.astype(np.int16)


def draw_names(rng: np.random.Generator, sex: np.ndarray) -> dict[str, pa.Array]:
    """First name by sex, an optional middle initial and a surname, all with mild skew."""
    rows = len(sex)
    female = rng.choice(len(FEMALE_FIRST), size=rows, p=zipf_weights(len(FEMALE_FIRST), 0.6))
    male = rng.choice(len(MALE_FIRST), size=rows, p=zipf_weights(len(MALE_FIRST), 0.6))
    first = np.where(sex == 0, female, male + len(FEMALE_FIRST))
    surname = rng.choice(len(SURNAMES), size=rows, p=zipf_weights(len(SURNAMES), 0.5))
    initial = rng.integers(0, 34, size=rows)
    return {
        "first_name": dictionary(first, FEMALE_FIRST + MALE_FIRST),
        "initial": pa.array(initial.astype(np.int8)),
        "surname": dictionary(surname, SURNAMES),
    }


def patients_source(rows: int, seed: int) -> pa.Table:
    """All columns as compact arrays; strings are assembled later, inside DuckDB."""
    rng = np.random.default_rng(seed)
    sex = draw_sex(rng, rows)
    birth = draw_birth_dates(rng, rows)
    age = age_on(REFERENCE_DATE, birth)
    zips, zip_p = zip_codes(rng)
    area, group, serial = draw_ssns(rng, rows)
    columns = draw_names(rng, sex)
    columns.update(
        {
            "ssn_area": pa.array(area),
            "ssn_group": pa.array(group),
            "ssn_serial": pa.array(serial),
            "birth_date": pa.array(birth, type=pa.date32()),
            "age": pa.array(age),
            "zip": dictionary(rng.choice(len(zips), size=rows, p=zip_p), zips),
            "sex": dictionary(sex, ["F", "M"]),
            "nationality": dictionary(
                rng.choice(len(NATIONALITIES), size=rows, p=nationality_weights()), NATIONALITIES
            ),
            "diagnosis": dictionary(draw_diagnoses(rng, sex, age), [d[0] for d in DIAGNOSES]),
        }
    )
    return pa.table(columns)


def prepare_path(path: Path, replace: bool) -> None:
    """Refuse to overwrite a database unless asked; remove it and its WAL when asked."""
    if path.exists() and not replace:
        raise FileExistsError(f"{path} already exists; pass --replace to overwrite it")
    for stale in (path, path.with_name(path.name + ".wal")):
        stale.unlink(missing_ok=True)


def check_visits_path(path: Path, replace: bool) -> None:
    """A visits file is a CSV or a Parquet file, overwritten only when asked."""
    if path.suffix.lower() not in VISITS_FORMATS:
        raise ValueError(f"--visits {path} must end in .csv or .parquet, e.g. --visits visits.csv")
    if path.exists() and not replace:
        raise FileExistsError(f"{path} already exists; pass --replace to overwrite it")


def write_visits(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """The patients' age, zip and diagnosis (as dx), one row per patient, as CSV or Parquet."""
    visits = con.sql(SELECT_VISITS).to_arrow_table()
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".csv":
        pa_csv.write_csv(visits, path)
    else:
        pq.write_table(visits, path)


def write_patients(con: duckdb.DuckDBPyConnection, source: pa.Table) -> None:
    """Create `patients` from the source arrays and record column roles as comments."""
    con.register("patients_source", source)
    con.execute(f"CREATE TABLE patients AS {SELECT_PATIENTS}")
    con.unregister("patients_source")
    for column, role in ROLE_COMMENTS.items():
        con.execute(f"COMMENT ON COLUMN patients.{column} IS '{role}'")


def make_clinic_db(
    path: str | Path,
    rows: int = 2000,
    seed: int = 7,
    replace: bool = False,
    visits: str | Path | None = None,
) -> str:
    """Write the clinic database to `path` (and, given `visits`, the visits file) and return
    the database's path as a string. Both paths are checked before anything is written."""
    if not 0 <= rows <= MAX_ROWS:
        raise ValueError(f"rows must be between 0 and {MAX_ROWS:,}, got {rows:,}")
    path = Path(path)
    if visits is not None:
        check_visits_path(Path(visits), replace)
    prepare_path(path, replace)
    source = patients_source(rows, seed)
    with duckdb.connect(str(path)) as con:
        write_patients(con, source)
        if visits is not None:
            write_visits(con, Path(visits))
    return str(path)


def admit(path: str | Path, rows: int, seed: int) -> str:
    """Append ``rows`` new patients drawn with ``seed`` to the existing database at ``path``:
    a day's admissions. Returns the database's path as a string."""
    if not 0 <= rows <= MAX_ROWS:
        raise ValueError(f"rows must be between 0 and {MAX_ROWS:,}, got {rows:,}")
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist; make it first without --admit")
    with duckdb.connect(str(path)) as con:
        con.register("patients_source", patients_source(rows, seed))
        con.execute(f"INSERT INTO patients {SELECT_PATIENTS}")
        con.unregister("patients_source")
    return str(path)


#: the patients' quasi-identifiers, which the residents hold
RESIDENT_COLUMNS = "birth_date, age, zip, sex, nationality"


def add_residents(path: str | Path, rows: int, seed: int) -> str:
    """Write (or replace) the table ``residents`` of the existing database at ``path``: every
    patient and ``rows`` more people drawn with ``seed`` + 1, on the patients'
    quasi-identifiers. Returns the database's path as a string."""
    if not 0 <= rows <= MAX_ROWS:
        raise ValueError(f"rows must be between 0 and {MAX_ROWS:,}, got {rows:,}")
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist; make it first without --residents")
    with duckdb.connect(str(path)) as con:
        con.register("patients_source", patients_source(rows, seed + 1))
        con.execute(
            f"CREATE OR REPLACE TABLE residents AS SELECT {RESIDENT_COLUMNS} FROM patients "
            f"UNION ALL SELECT {RESIDENT_COLUMNS} FROM ({SELECT_PATIENTS})"
        )
        con.unregister("patients_source")
    return str(path)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options; the defaults give a small database that is quick to try."""
    parser = argparse.ArgumentParser(description="Make a seeded synthetic clinic database.")
    parser.add_argument("--rows", type=int, default=2000, help="number of patients (default 2000)")
    parser.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    parser.add_argument("--out", default="clinic.duckdb", help="database file (default clinic.duckdb)")
    parser.add_argument(
        "--visits",
        help="also write the patients' age, zip and diagnosis (as dx) to this .csv or .parquet file",
    )
    parser.add_argument("--replace", action="store_true", help="overwrite existing files")
    parser.add_argument(
        "--admit", type=int, help="append this many new patients to the existing --out instead (a daily load)"
    )
    parser.add_argument(
        "--residents",
        type=int,
        help="write the table residents into the existing --out instead: every patient and this many "
        "more people of the region, on the patients' quasi-identifiers",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Exit status 2 with a one-line message, not a traceback, for an existing file or bad size."""
    args = parse_args(argv)
    if args.residents is not None:
        try:
            path = add_residents(args.out, args.residents, args.seed)
        except (FileNotFoundError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"wrote the residents (every patient and {args.residents:,} more) to {path} (table residents)")
        return 0
    if args.admit is not None:
        try:
            path = admit(args.out, args.admit, args.seed)
        except (FileNotFoundError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"added {args.admit:,} patients to {path} (table patients)")
        return 0
    try:
        path = make_clinic_db(args.out, args.rows, args.seed, args.replace, args.visits)
    except (FileExistsError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.rows:,} patients to {path} (table patients)")
    if args.visits:
        print(f"wrote their visits to {args.visits} (age, zip, dx)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
