#!/usr/bin/env bash
# sbc-sql on PostgreSQL, from the command line and from SQL, on the example database.
#
#   pip install '.[postgres]'      # in a checkout; the server needs PL/Python for step 4
#   SBC_SQL_DB=postgresql://admin@localhost/clinic examples/postgres_walkthrough.sh
#
# SBC_SQL_DB gives every sbc-sql command its --db (a superuser's URL: install-sql creates
# the PL/Python functions). The script writes the table patients and the releases
# patients_k5 and patients_sql_k5 there, replacing them if they exist, and the functions
# of schema sbc. SBC_SQL_PYTHON_PATH gives install-sql its --python-path where the server
# imports sbc-sql from elsewhere. PYTHON names the interpreter (default python3).
set -euo pipefail
: "${SBC_SQL_DB:?set SBC_SQL_DB to a postgresql:// URL of a database to write to, as a superuser}"
export SBC_SQL_DB
PY=${PYTHON:-python3}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sbc() { "$PY" -m sbc_sql "$@"; }
# run SQL statements on SBC_SQL_DB and print the last one's rows (the postgres extra's driver)
sql() {
    "$PY" - "$@" <<'PY'
import os, sys
import adbc_driver_postgresql.dbapi as adbc

with adbc.connect(os.environ["SBC_SQL_DB"], autocommit=True) as con, con.cursor() as cur:
    for statement in sys.argv[1:]:
        cur.execute(statement)
    if cur.description:
        print(" | ".join(d[0] for d in cur.description))
        for row in cur.fetchall():
            print(" | ".join(str(v) for v in row))
PY
}

echo "== 1. the example database's patients, copied into PostgreSQL with their role comments"
"$PY" "$here/make_clinic_db.py" --rows 500 --out "$work/clinic.duckdb" >/dev/null
"$PY" - "$work/clinic.duckdb" <<'PY'
import os, sys
import adbc_driver_postgresql.dbapi as adbc
import duckdb
import pyarrow as pa

con = duckdb.connect(sys.argv[1], read_only=True)
data = con.sql("SELECT * FROM patients").to_arrow_table()
data = pa.table([c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c for c in data.columns],
                names=data.column_names)
comments = con.execute("SELECT column_name, comment FROM duckdb_columns() "
                       "WHERE table_name = 'patients' AND comment IS NOT NULL").fetchall()
with adbc.connect(os.environ["SBC_SQL_DB"], autocommit=True) as pg, pg.cursor() as cur:
    cur.execute("DROP TABLE IF EXISTS patients CASCADE")
    cur.adbc_ingest("patients", data, mode="create")
    for column, text in comments:
        cur.execute(f"COMMENT ON COLUMN patients.{column} IS '{text}'")
PY
sql "SELECT count(*) AS patients FROM patients"

echo "== 2. anonymize from the command line (name and ssn: dropped, as their comments say)"
sbc anonymize -t patients -k 5 -o patients_k5 --replace -q \
    --qi birth_date,age,zip,sex --sensitive diagnosis --keep nationality

echo "== 3. verify it, as an auditor would"
sbc verify --original patients --release patients_k5 -k 5

echo "== 4. the SQL functions: install-sql, then sbc.anonymize(...) from SQL"
sbc install-sql
sql "SELECT sbc.anonymize(source => 'public.patients', k => 5, output => 'patients_sql_k5',
                          qi => ARRAY['birth_date', 'age', 'zip', 'sex'], sensitive => ARRAY['diagnosis'],
                          keep => ARRAY['nationality'], replace => true, l_diversity => 2)
            ->> 'classes' AS classes"
sql "SELECT sbc.verify('patients', 'patients_sql_k5', 5, l_diversity => 2) ->> 'ok' AS verified"

echo "== 5. query the release: each class's age range and zip set, never a patient's own"
readarray -d '' helpers < <("$PY" -c 'import sbc_sql.querying as q; print(*q.statements("postgres"), sep="\0", end="")')
sql "${helpers[@]}"   # the query helpers, sbc_sql.query_helpers("postgres"), made once
sql "SELECT diagnosis,
            count(*) FILTER (WHERE sbc_range_inside(age_min, age_max, age_has_null, 30, 40)) AS at_least,
            count(*) FILTER (WHERE sbc_range_overlaps(age_min, age_max, 30, 40)) AS at_most,
            round(sum(sbc_range_share(age_min, age_max, 30, 40))::numeric, 1) AS estimate
     FROM patients_k5 GROUP BY diagnosis ORDER BY at_most DESC LIMIT 5"
