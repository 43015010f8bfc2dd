"""Benchmark inputs for sbc-sql: the UCI Adult data and a scalable synthetic population.

Adult is the standard k-anonymity benchmark; `load_adult` reproduces the usual
cleaning (drop every row with a `?`) and keeps file order, so "the first 5,000
clean rows" means the same rows everywhere. `make_synthetic` builds populations
of any size from a seed, to measure how runs scale with rows and cardinality.

    python benchmarks/datasets.py adult --db adult.duckdb --rows 5000
    python benchmarks/datasets.py synthetic --db synth.duckdb --rows 1000000
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

ADULT_ENV = "SBC_ADULT_PATH"
#: UCI Adult's training file, shipped gzip-compressed (see benchmarks/data/README.md)
ADULT_DEFAULT_PATH = Path(__file__).resolve().parent / "data" / "adult.data.gz"

ADULT_COLUMNS = {
    "age": "INTEGER",
    "workclass": "VARCHAR",
    "fnlwgt": "INTEGER",
    "education": "VARCHAR",
    "education_num": "INTEGER",
    "marital_status": "VARCHAR",
    "occupation": "VARCHAR",
    "relationship": "VARCHAR",
    "race": "VARCHAR",
    "sex": "VARCHAR",
    "capital_gain": "INTEGER",
    "capital_loss": "INTEGER",
    "hours_per_week": "INTEGER",
    "native_country": "VARCHAR",
    "income": "VARCHAR",
}
ADULT_MISSING = "?"

ADULT_QIS_PAPER = ["age", "sex", "native_country"]
ADULT_QIS_8 = [
    "age",
    "workclass",
    "education",
    "marital_status",
    "occupation",
    "race",
    "sex",
    "native_country",
]

SYNTH_QIS = ["age", "income", "visit_date", "sex", "region", "occupation", "employer", "zip3"]
SYNTH_SENSITIVE = "diagnosis"
SYNTH_IDENTIFIER = "person_id"
SYNTH_CHUNK_ROWS = 1_000_000

#: the wide table's cardinalities, cycled over its columns, and each column's share of NULL
WIDE_CARDINALITIES = (2, 3, 5, 8, 13, 20, 50)
WIDE_NULL_SHARE = 0.02

SYNTH_COLUMNS = {
    "person_id": "BIGINT",
    "age": "INTEGER",
    "income": "INTEGER",
    "visit_date": "DATE",
    "sex": "VARCHAR",
    "region": "VARCHAR",
    "occupation": "VARCHAR",
    "employer": "VARCHAR",
    "zip3": "VARCHAR",
    "diagnosis": "VARCHAR",
}

SEXES = ["F", "M"]
FEMALE_SHARE = 0.51

REGIONS = [
    "South Atlantic",
    "Pacific",
    "East North Central",
    "Middle Atlantic",
    "West South Central",
    "Mountain",
    "New England",
]

OCCUPATIONS = [
    "Office clerk",
    "Retail salesperson",
    "Registered nurse",
    "Cashier",
    "Teacher",
    "Truck driver",
    "Software developer",
    "Cook",
    "Janitor",
    "Customer service rep",
    "Warehouse worker",
    "Accountant",
    "Construction laborer",
    "Nursing assistant",
    "Electrician",
    "Manager",
    "Waiter",
    "Mechanic",
    "Security guard",
    "Carpenter",
    "Pharmacist",
    "Plumber",
    "Lawyer",
    "Physician",
    "Farmer",
    "Engineer",
    "Police officer",
    "Librarian",
    "Dentist",
    "Architect",
]

EMPLOYER_STEMS = [
    "Northwind",
    "Bluewater",
    "Summit",
    "Redwood",
    "Ironbridge",
    "Lakeside",
    "Granite",
    "Silverline",
    "Harbor",
    "Pinecrest",
    "Oakmont",
    "Brightpath",
    "Eastgate",
    "Westfield",
    "Crescent",
    "Keystone",
    "Meridian",
    "Riverbend",
    "Stonehill",
    "Clearview",
]
EMPLOYER_KINDS = [
    "Health",
    "Logistics",
    "Foods",
    "Bank",
    "Software",
    "Manufacturing",
    "Retail",
    "Energy",
    "Construction",
    "Schools",
]

DIAGNOSES = [
    "Hypertension",
    "Hyperlipidemia",
    "Type 2 diabetes",
    "Upper respiratory infection",
    "Back pain",
    "Anxiety disorder",
    "Depression",
    "Osteoarthritis",
    "Asthma",
    "Gastroesophageal reflux",
    "Obesity",
    "Allergic rhinitis",
    "Urinary tract infection",
    "Migraine",
    "Hypothyroidism",
    "Coronary artery disease",
    "COPD",
    "Atrial fibrillation",
    "Otitis media",
    "Dermatitis",
]
DIAGNOSIS_AGE_PEAKS = np.array(
    [68, 62, 62, 25, 45, 33, 40, 72, 15, 50, 45, 28, 35, 35, 55, 74, 70, 78, 4, 20], dtype=float
)
DIAGNOSIS_AGE_SPREAD = 22.0

VISIT_START = np.datetime64("2015-01-01")
VISIT_END = np.datetime64("2025-12-31")

PERSON_ID_BITS = 40
PERSON_ID_OFFSET = 1_000_000_000_000

GOLDEN_GAMMA = np.uint64(0x9E3779B97F4A7C15)
MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
MIX_2 = np.uint64(0x94D049BB133111EB)


def quote_ident(name: str) -> str:
    """A SQL identifier that survives any table name a caller passes."""
    return '"' + name.replace('"', '""') + '"'


def adult_path() -> Path:
    """Where adult.data lives: $SBC_ADULT_PATH, else the copy shipped in benchmarks/data."""
    return Path(os.environ.get(ADULT_ENV, ADULT_DEFAULT_PATH))


def adult_select(path: Path, columns: list[str]) -> str:
    """SQL reading adult.data as text, keeping clean rows only, typed as in ADULT_COLUMNS.

    Everything is read as VARCHAR first so a `?` in any column, numeric or not,
    drops the row instead of failing the cast.
    """
    as_text = ", ".join(f"'{c}': 'VARCHAR'" for c in ADULT_COLUMNS)
    clean = " AND ".join(f"{c} <> '{ADULT_MISSING}'" for c in ADULT_COLUMNS)
    typed = ", ".join(f"{c}::{ADULT_COLUMNS[c]} AS {c}" for c in columns)
    literal = str(path).replace("'", "''")
    return (
        f"SELECT {typed} FROM read_csv('{literal}', header = false, delim = ', ', "
        f"auto_detect = false, columns = {{{as_text}}}) WHERE {clean}"
    )


def load_adult(
    con: duckdb.DuckDBPyConnection,
    table: str = "adult",
    rows: int | None = None,
    columns: list[str] | None = None,
) -> int:
    """(Re)create `table` with the clean Adult rows in file order; return its row count.

    `rows` keeps only the first clean rows (the SBC paper uses 5,000); `columns`
    picks and orders a subset of ADULT_COLUMNS.
    """
    path = adult_path()
    if not path.is_file():
        raise FileNotFoundError(f"Adult data not found at {path}; set {ADULT_ENV} to its path")
    columns = list(ADULT_COLUMNS) if columns is None else list(columns)
    unknown = [c for c in columns if c not in ADULT_COLUMNS]
    if unknown:
        raise ValueError(f"unknown Adult columns {unknown}; choose from {list(ADULT_COLUMNS)}")
    if rows is not None and rows < 0:
        raise ValueError(f"rows must be non-negative, got {rows}")
    limit = "" if rows is None else f" LIMIT {int(rows)}"
    con.execute(f"CREATE OR REPLACE TABLE {quote_ident(table)} AS {adult_select(path, columns)}{limit}")
    return con.execute(f"SELECT count(*) FROM {quote_ident(table)}").fetchone()[0]


#: how the replicated Adult tables vary a replica: age moves within ADULT_AGE_RANGE
ADULT_AGE_RANGE = (17, 90)
#: adult33's replicas: replica r shifts every age by (r mod 5) - 2
ADULT_REPLICAS = 33
#: the growing replicas: each age moves by a uniform integer in [-7, 7], and each categorical
#: QI value is redrawn from Adult's marginal with this probability
GROWING_AGE_NOISE = 7
GROWING_REDRAW = 0.15


def _adult_qi_table(con: duckdb.DuckDBPyConnection) -> str:
    """A temporary table of Adult's 8 QIs and income with each row's file position."""
    path = adult_path()
    if not path.is_file():
        raise FileNotFoundError(f"Adult data not found at {path}; set {ADULT_ENV} to its path")
    columns = ADULT_QIS_8 + ["income"]
    con.execute(
        "CREATE OR REPLACE TEMP TABLE adult_source AS SELECT row_number() OVER () AS position, * "
        f"FROM ({adult_select(path, columns)})"
    )
    return "adult_source"


def make_adult_replicas(con: duckdb.DuckDBPyConnection, table: str, replicas: int = ADULT_REPLICAS) -> int:
    """(Re)create `table` with Adult's 8 QIs and income, replicated `replicas` times (replica
    by replica, each in file order); return the row count.

    Replica r adds (r mod 5) - 2 to age, clamped to Adult's 17..90, so the table has many
    rows per distinct QI tuple (59,456 tuples in 995,346 rows at 33 replicas): the shape of
    a large extract of a population with few distinct profiles, where a run's time should
    follow the distinct tuples more than the rows.
    """
    source = _adult_qi_table(con)
    low, high = ADULT_AGE_RANGE
    rest = ", ".join(ADULT_QIS_8[1:] + ["income"])
    con.execute(
        f"CREATE OR REPLACE TABLE {quote_ident(table)} AS SELECT "
        f"least(greatest(age + (r % 5) - 2, {low}), {high})::INTEGER AS age, {rest} "
        f"FROM {source} CROSS JOIN range({int(replicas)}) AS replica(r) ORDER BY r, position"
    )
    con.execute(f"DROP TABLE {source}")
    return con.execute(f"SELECT count(*) FROM {quote_ident(table)}").fetchone()[0]


def make_adult_growing(con: duckdb.DuckDBPyConnection, table: str, rows: int, seed: int = 11) -> int:
    """(Re)create `table` with `rows` rows of Adult's 8 QIs and income, replica after replica
    (the last one cut), each replica noised by its own seeded generator; return the count.

    Per replica every age moves by a uniform integer in [-7, 7] (clamped to 17..90) and each
    categorical QI value is replaced, with probability 0.15, by a draw from Adult's marginal
    of that QI. Unlike plain replicas the distinct tuples keep growing with the rows (about
    430,000 at 3,000,000 rows), so a table of N rows is a prefix of any larger one: the
    growth of a run's time from 1M to 3M rows is measured on the same population.
    """
    source = _adult_qi_table(con)
    adult = con.sql(f"SELECT * EXCLUDE (position) FROM {source} ORDER BY position").to_arrow_table()
    con.execute(f"DROP TABLE {source}")
    n = adult.num_rows
    categorical = ADULT_QIS_8[1:]
    age = adult["age"].to_numpy()
    codes, values, shares = {}, {}, {}
    for name in categorical:
        v, c, counts = np.unique(
            np.asarray(adult[name].to_pylist(), dtype=object), return_inverse=True, return_counts=True
        )
        values[name], codes[name], shares[name] = [str(x) for x in v], c.astype(np.int32), counts / n
    low, high = ADULT_AGE_RANGE
    ages, drawn = [], {name: [] for name in categorical}
    for r in range((rows + n - 1) // n):
        take = min(n, rows - r * n)
        rng = np.random.default_rng([seed, r])
        noise = rng.integers(-GROWING_AGE_NOISE, GROWING_AGE_NOISE + 1, n)
        ages.append(np.clip(age + noise, low, high).astype(np.int32)[:take])
        for name in categorical:
            redraw = rng.random(n) < GROWING_REDRAW
            replacement = rng.choice(len(values[name]), size=n, p=shares[name]).astype(np.int32)
            drawn[name].append(np.where(redraw, replacement, codes[name])[:take])
    columns = {"age": pa.array(np.concatenate(ages))}
    for name in categorical:
        codes_all = pa.array(np.concatenate(drawn[name]))
        columns[name] = pa.DictionaryArray.from_arrays(codes_all, pa.array(values[name])).cast(pa.string())
    replicas = (rows + n - 1) // n
    income = pa.concat_arrays([adult["income"].combine_chunks()] * replicas)[:rows]
    columns["income"] = income
    con.register("growing_rows", pa.table(columns))
    con.execute(f"CREATE OR REPLACE TABLE {quote_ident(table)} AS SELECT * FROM growing_rows")
    con.unregister("growing_rows")
    return rows


def splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64 output function: a strong 64-bit mix, so row i's draw needs no state."""
    with np.errstate(over="ignore"):
        z = x + GOLDEN_GAMMA
        z = (z ^ (z >> np.uint64(30))) * MIX_1
        z = (z ^ (z >> np.uint64(27))) * MIX_2
    return z ^ (z >> np.uint64(31))


def stream_key(seed: int, stream: int) -> np.uint64:
    """Independent key per (seed, column stream)."""
    base = np.array([seed & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64)
    return splitmix64(splitmix64(base) ^ np.uint64(stream))[0]


def uniforms(seed: int, stream: int, start: int, count: int) -> np.ndarray:
    """Uniform [0, 1) draws for rows start..start+count, a pure function of the row number.

    Counter-based draws make the table identical whatever the chunk size.
    """
    rows = np.arange(start, start + count, dtype=np.uint64)
    with np.errstate(over="ignore"):
        bits = splitmix64(rows * GOLDEN_GAMMA + stream_key(seed, stream))
    return (bits >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


def zipf_cdf(n: int, exponent: float) -> np.ndarray:
    """CDF of a Zipf law over n ranks: the skew seen in real categorical columns."""
    w = 1.0 / np.arange(1, n + 1) ** exponent
    cdf = np.cumsum(w / w.sum())
    cdf[-1] = 1.0
    return cdf


def inverse_cdf(cdf: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Category codes for uniforms u under a CDF."""
    return np.minimum(np.searchsorted(cdf, u, side="right"), len(cdf) - 1)


def age_cdf() -> np.ndarray:
    """Ages 0..99 shaped like a population pyramid: flat until 55, then thinning out."""
    ages = np.arange(100, dtype=float)
    w = np.where(ages < 55, 1.0 - ages / 400, 0.86 * np.exp(-(((ages - 55) / 22.0) ** 2)))
    cdf = np.cumsum(w / w.sum())
    cdf[-1] = 1.0
    return cdf


def employers() -> list[str]:
    """200 plausible company names."""
    return [f"{stem} {kind}" for stem in EMPLOYER_STEMS for kind in EMPLOYER_KINDS]


def zip3_codes() -> list[str]:
    """All 1,000 three-digit zip prefixes."""
    return [f"{z:03d}" for z in range(1000)]


def ranked(values: list[str], seed: int, stream: int) -> list[str]:
    """Values in a seeded order, so which one is most frequent depends on the seed."""
    order = np.argsort(splitmix64(np.arange(len(values), dtype=np.uint64) ^ stream_key(seed, stream)))
    return [values[i] for i in order]


def diagnosis_cdf_by_age() -> np.ndarray:
    """P(diagnosis | age) as stacked CDFs, each shifted by its age so one searchsorted serves all."""
    ages = np.arange(100, dtype=float)[:, None]
    base = 1.0 / np.arange(1, len(DIAGNOSES) + 1) ** 0.8
    w = base * (np.exp(-0.5 * ((ages - DIAGNOSIS_AGE_PEAKS) / DIAGNOSIS_AGE_SPREAD) ** 2) + 0.05)
    cdf = np.cumsum(w / w.sum(axis=1, keepdims=True), axis=1)
    cdf[:, -1] = 1.0
    return (cdf + np.arange(100)[:, None]).ravel()


def draw_income(age: np.ndarray, u1: np.ndarray, u2: np.ndarray) -> np.ndarray:
    """Yearly income: log-normal around an age curve peaking near 50, zero for children."""
    z = np.sqrt(-2.0 * np.log1p(-u1)) * np.cos(2.0 * np.pi * u2)
    mu = np.log(58_000.0) - 0.9 * ((age - 50.0) / 30.0) ** 2
    income = np.round(np.exp(mu + 0.7 * z), -2)
    income = np.where(age < 16, 0.0, np.where(age < 22, income * 0.35, income))
    return np.clip(income, 0, 5_000_000).astype(np.int32)


def draw_visit_dates(u: np.ndarray) -> np.ndarray:
    """Visit dates in 2015..2025, growing denser toward recent years."""
    days = (VISIT_END - VISIT_START).astype(np.int64) + 1
    offset = np.minimum(np.floor(days * u**0.8).astype(np.int64), days - 1)
    return VISIT_START + offset.astype("timedelta64[D]")


def person_ids(seed: int, start: int, count: int) -> np.ndarray:
    """Distinct 13-digit ids that look random.

    Multiplying by an odd number and xor-shifting are both bijections modulo
    2**40, so distinct row numbers always get distinct ids.
    """
    key = int(stream_key(seed, 0))
    bits = np.uint64(PERSON_ID_BITS)
    mask = np.uint64((1 << PERSON_ID_BITS) - 1)
    mult = np.uint64(key) & mask | np.uint64(1)
    z = np.arange(start, start + count, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for _ in range(3):
            z = (z * mult + (np.uint64(key) >> bits)) & mask
            z ^= z >> (bits // np.uint64(2))
    return z.astype(np.int64) + PERSON_ID_OFFSET


def dictionary(codes: np.ndarray, values: list[str]) -> pa.DictionaryArray:
    """Codes plus a small value list, so strings are built once per value, not per row."""
    return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), pa.array(values))


def synthetic_chunk(seed: int, start: int, count: int) -> pa.Table:
    """Rows start..start+count of the synthetic population, as an Arrow table."""

    def u(stream):
        return uniforms(seed, stream, start, count)

    age = inverse_cdf(age_cdf(), u(1)).astype(np.int32)
    diagnosis = np.searchsorted(diagnosis_cdf_by_age(), age + u(10), side="right") - age.astype(
        np.int64
    ) * len(DIAGNOSES)
    return pa.table(
        {
            "person_id": pa.array(person_ids(seed, start, count)),
            "age": pa.array(age),
            "income": pa.array(draw_income(age, u(2), u(3))),
            "visit_date": pa.array(draw_visit_dates(u(4)), type=pa.date32()),
            "sex": dictionary((u(5) >= FEMALE_SHARE).astype(np.int8), SEXES),
            "region": dictionary(inverse_cdf(zipf_cdf(len(REGIONS), 0.9), u(6)), REGIONS),
            "occupation": dictionary(
                inverse_cdf(zipf_cdf(len(OCCUPATIONS), 1.0), u(7)), ranked(OCCUPATIONS, seed, 7)
            ),
            "employer": dictionary(inverse_cdf(zipf_cdf(200, 1.0), u(8)), ranked(employers(), seed, 8)),
            "zip3": dictionary(inverse_cdf(zipf_cdf(1000, 0.7), u(9)), ranked(zip3_codes(), seed, 9)),
            "diagnosis": dictionary(np.clip(diagnosis, 0, len(DIAGNOSES) - 1), DIAGNOSES),
        }
    )


def create_synthetic_table(con: duckdb.DuckDBPyConnection, table: str) -> None:
    """Empty table with the synthetic schema, identifier and sensitive column marked by comments."""
    name = quote_ident(table)
    columns = ", ".join(f"{c} {t}" for c, t in SYNTH_COLUMNS.items())
    con.execute(f"CREATE OR REPLACE TABLE {name} ({columns})")
    con.execute(f"COMMENT ON COLUMN {name}.{SYNTH_IDENTIFIER} IS 'sbc:identifier'")
    con.execute(f"COMMENT ON COLUMN {name}.{SYNTH_SENSITIVE} IS 'sbc:sensitive'")


def make_synthetic(
    con: duckdb.DuckDBPyConnection, table: str, rows: int, seed: int = 11, chunk_rows: int = SYNTH_CHUNK_ROWS
) -> int:
    """(Re)create `table` with `rows` synthetic people; return the row count.

    Rows are generated and inserted `chunk_rows` at a time, so memory stays
    bounded; the content depends only on `seed` and `rows`.
    """
    if rows < 0 or chunk_rows < 1:
        raise ValueError(f"need rows >= 0 and chunk_rows >= 1, got {rows} and {chunk_rows}")
    create_synthetic_table(con, table)
    casts = ", ".join(f"{c}::{t}" for c, t in SYNTH_COLUMNS.items())
    for start in range(0, rows, chunk_rows):
        con.register("synthetic_chunk", synthetic_chunk(seed, start, min(chunk_rows, rows - start)))
        con.execute(f"INSERT INTO {quote_ident(table)} SELECT {casts} FROM synthetic_chunk")
        con.unregister("synthetic_chunk")
    return rows


def wide_columns(qis: int) -> dict[str, int]:
    """The wide table's categorical QIs, ``c000``, ``c001``..., each with its cardinality."""
    return {f"c{j:03d}": WIDE_CARDINALITIES[j % len(WIDE_CARDINALITIES)] for j in range(qis)}


def make_wide(con: duckdb.DuckDBPyConnection, table: str, rows: int, qis: int, seed: int = 11) -> int:
    """(Re)create `table` with `rows` rows of `qis` Zipf-skewed VARCHAR columns (2 to 50
    values, about 2 % NULL each); return the row count.

    The shape of a wide survey or claims extract: many categorical QIs and few rows, to
    measure how the SQL of a run grows with the number of QIs. The content depends only on
    `seed`, `rows` and `qis`.
    """
    if rows < 0 or qis < 1:
        raise ValueError(f"need rows >= 0 and qis >= 1, got {rows} and {qis}")
    columns = {}
    for j, (name, card) in enumerate(wide_columns(qis).items()):
        codes = inverse_cdf(zipf_cdf(card, 1.0), uniforms(seed, 100 + 2 * j, 0, rows))
        values = pa.array([f"{name}_v{v:02d}" for v in range(card)])
        missing = uniforms(seed, 101 + 2 * j, 0, rows) < WIDE_NULL_SHARE
        column = pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32), mask=missing), values)
        columns[name] = column.cast(pa.string())
    con.register("wide_rows", pa.table(columns))
    con.execute(f"CREATE OR REPLACE TABLE {quote_ident(table)} AS SELECT * FROM wide_rows")
    con.unregister("wide_rows")
    return rows


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """One subcommand per dataset, each writing into the database given by --db."""
    parser = argparse.ArgumentParser(description="Load benchmark tables into a DuckDB database.")
    sub = parser.add_subparsers(dest="dataset", required=True)
    adult = sub.add_parser("adult", help="the clean rows of UCI Adult, in file order")
    adult.add_argument("--db", required=True, help="DuckDB database file")
    adult.add_argument("--table", default="adult")
    adult.add_argument("--rows", type=int, default=None, help="keep only the first N clean rows")
    synth = sub.add_parser("synthetic", help="a seeded synthetic population")
    synth.add_argument("--db", required=True, help="DuckDB database file")
    synth.add_argument("--table", default="synthetic")
    synth.add_argument("--rows", type=int, required=True)
    synth.add_argument("--seed", type=int, default=11)
    synth.add_argument("--chunk-rows", type=int, default=SYNTH_CHUNK_ROWS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Exit status 2 with a one-line message, not a traceback, for a missing file or bad size."""
    args = parse_args(argv)
    try:
        with duckdb.connect(args.db) as con:
            if args.dataset == "adult":
                n = load_adult(con, args.table, args.rows)
            else:
                n = make_synthetic(con, args.table, args.rows, args.seed, args.chunk_rows)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {n:,} rows to {args.db} (table {args.table})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
