"""The engine boundary: DuckDB's errors, provoked for real here, read into sbc-sql's own one
line (the operation, the cause, the fix) that never quotes a value; ENUM types shown
without their categories; a query Ctrl-C stopped comes back as KeyboardInterrupt.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from helpers import ctrl_c_after

from sbc_sql import engines
from sbc_sql.engines.duckdb_messages import display_type, explain, redact
from sbc_sql.errors import EngineError

SECRET = "SECRET-VALUE-123"


def duckdb_message(con: duckdb.DuckDBPyConnection, sql: str, params: dict | None = None) -> str:
    with pytest.raises(duckdb.Error) as caught:
        con.execute(sql, params).fetchall()
    return str(caught.value)


def lines_of(rows: int, row: str) -> str:
    return "age,dis\n" + "".join(f"{30 + i % 50},flu\n" for i in range(rows)) + row


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    yield connection
    connection.close()


def check(err: EngineError, kind: str, needles: list[str]) -> str:
    text = str(err)
    assert err.kind == kind, text
    assert "\n" not in text
    assert SECRET not in text
    for needle in needles:
        assert needle in text, (needle, text)
    return text


def test_a_csv_line_with_too_many_columns_names_the_line_not_its_content(con, tmp_path):
    # beyond the sniffer's sample, so the row is found while reading
    path = tmp_path / "ragged.csv"
    path.write_text(lines_of(30000, f"31,{SECRET},extra\n"))
    message = duckdb_message(con, "SELECT * FROM read_csv($p)", {"p": str(path)})
    assert SECRET in message  # DuckDB quotes the row: "Original Line: ..."
    check(
        explain(message, "reading CSV file 'x'"),
        "csv",
        [f"CSV file '{path}'", "line 30002", "has 3 columns, expected 2", "null_padding", "--table"],
    )


def test_a_csv_value_that_breaks_the_sniffed_type_names_the_column_and_type(con, tmp_path):
    path = tmp_path / "late.csv"
    path.write_text(lines_of(30000, f"{SECRET},flu\n"))
    message = duckdb_message(con, "SELECT * FROM read_csv($p)", {"p": str(path)})
    assert SECRET in message
    check(
        explain(message, "reading CSV file 'x'"),
        "csv",
        ["line 30002", "column 'age'", "BIGINT", "types=", "--table"],
    )


def test_a_csv_whose_layout_cannot_be_sniffed(con, tmp_path):
    path = tmp_path / "odd.csv"
    path.write_text(lines_of(3000, f"31,{SECRET},extra\n"))
    message = duckdb_message(con, "SELECT * FROM read_csv($p)", {"p": str(path)})
    check(explain(message, "reading"), "csv", [f"CSV file '{path}'", "could not detect its layout"])


def test_a_csv_line_that_is_not_utf8(con, tmp_path):
    path = tmp_path / "latin.csv"
    path.write_bytes(lines_of(30000, "").encode() + f"31,{SECRET}\xff\n".encode("latin-1"))
    message = duckdb_message(con, "SELECT * FROM read_csv($p)", {"p": str(path)})
    check(explain(message, "reading"), "csv", ["line 30002", "not UTF-8", "encoding"])


def test_a_failing_cast_in_a_view_names_the_column_and_type(con):
    con.execute(f"CREATE TABLE s AS SELECT * FROM (VALUES ('1'), ('{SECRET}')) t(x)")
    con.execute("CREATE VIEW v AS SELECT CAST(x AS INTEGER) AS x FROM s")
    message = duckdb_message(con, "SELECT * FROM v")
    assert SECRET in message
    text = check(
        explain(message, "reading view 'v'"), "conversion", ["reading view 'v'", "column 'x'", "INT32"]
    )
    assert "'...'" not in text


@pytest.mark.parametrize(
    ("sql", "type_name"),
    [
        (f"SELECT CAST('{SECRET}' AS INTEGER)", "INT32"),
        (f"SELECT CAST('2020-99-99{SECRET}' AS DATE)", "DATE"),
        (f"SELECT CAST('{SECRET}' AS TIMESTAMP)", "TIMESTAMP"),
        (f"SELECT CAST('{SECRET}' AS ENUM('HIV', 'flu'))", "ENUM"),
    ],
)
def test_every_conversion_names_the_type_never_the_value(con, sql, type_name):
    message = duckdb_message(con, sql)
    assert SECRET in message
    text = check(explain(message, "reading"), "conversion", [type_name])
    assert "HIV" not in text


def test_a_value_that_mimics_the_message_cannot_leak(con):
    # a value holding DuckDB's own words and quotes: only DuckDB's tail is read
    con.execute(
        "CREATE TABLE s AS SELECT 'a'' to BIGINT when casting from source column SECRET-VALUE-123' AS x"
    )
    message = duckdb_message(con, "SELECT CAST(x AS INTEGER) FROM s")
    check(explain(message, "reading"), "conversion", ["INT32"])


@pytest.mark.parametrize(
    ("sql", "cls"),
    [
        ("SELECT CAST(2147483647 AS INTEGER) + CAST(5 AS INTEGER)", "Out of Range"),
        ("INSERT INTO pk VALUES (77777)", "Constraint"),
    ],
)
def test_classes_that_quote_values_are_named_not_shown(con, sql, cls):
    con.execute("CREATE TABLE pk (a INTEGER PRIMARY KEY); INSERT INTO pk VALUES (77777)")
    message = duckdb_message(con, sql)
    text = check(explain(message, "writing 'pk'"), "other", [f"DuckDB {cls} error", "not shown"])
    assert "77777" not in text and "2147483647" not in text


def test_names_and_sql_keep_their_first_line_without_literals(con):
    con.execute("CREATE TYPE mood AS ENUM ('HIV', 'flu')")
    con.execute("CREATE TABLE e (m mood)")
    missing = check(explain(duckdb_message(con, "SELECT * FROM nope"), "reading 'nope'"), "other", ["nope"])
    assert "Did you mean" not in missing and "LINE" not in missing
    enum = check(explain(duckdb_message(con, "SELECT m + 1 FROM e"), "reading 'e'"), "other", ["Binder"])
    assert "HIV" not in enum and "flu" not in enum


@pytest.mark.parametrize(
    ("make", "what"),
    [
        (lambda p: p.write_bytes(b"PAR1" + SECRET.encode() * 50), "Parquet file"),
        (lambda p: p.write_bytes(b"PAR1"), "Parquet file"),
    ],
)
def test_a_corrupt_parquet_file(con, tmp_path, make, what):
    path = tmp_path / "bad.parquet"
    make(path)
    message = duckdb_message(con, "SELECT * FROM read_parquet($p)", {"p": str(path)})
    check(explain(message, "reading"), "corrupt", [f"'{path}'", what, "truncated or corrupt"])


def test_a_truncated_parquet_file(con, tmp_path):
    good, cut = tmp_path / "good.parquet", tmp_path / "cut.parquet"
    con.execute(f"COPY (SELECT range AS i, '{SECRET}' || range AS s FROM range(200000)) TO '{good}'")
    data = good.read_bytes()
    cut.write_bytes(data[: len(data) // 2] + data[-8:])
    message = duckdb_message(con, "SELECT sum(i) FROM read_parquet($p)", {"p": str(cut)})
    check(explain(message, "reading Parquet file 'cut.parquet'"), "corrupt", ["Parquet file"])


@pytest.mark.parametrize("damage", ["noise", "truncated"])
def test_a_corrupt_database_file(tmp_path, damage):
    path = tmp_path / "bad.duckdb"
    if damage == "noise":
        path.write_bytes(SECRET.encode() * 1000)
    else:
        with duckdb.connect(str(path)) as made:
            made.execute("CREATE TABLE x AS SELECT range AS i FROM range(100000)")
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 3])
    with pytest.raises(EngineError) as caught:
        engines.connect(path)
    check(caught.value, "corrupt", [f"--db '{path}'", "not a valid DuckDB database file"])


def test_no_space_left_on_device(con):
    message = duckdb_message(con, "COPY (SELECT range FROM range(1000000)) TO '/dev/full' (FORMAT CSV)")
    check(
        explain(message, "exporting"), "disk-full", ["No space left on device", "'/dev/full'", "free space"]
    )


def test_a_missing_folder_a_folder_and_a_lock(con, tmp_path):
    message = duckdb_message(con, f"COPY (SELECT 1) TO '{tmp_path}/nodir/x.csv'")
    check(explain(message, "exporting"), "missing", ["nodir/x.csv", "does not exist"])
    with pytest.raises(EngineError) as caught:
        engines.connect(tmp_path)
    check(caught.value, "missing", ["is a folder"])


def test_out_of_memory_keeps_the_sizes():
    con = duckdb.connect()
    con.execute("SET memory_limit = '32MB'")
    message = duckdb_message(con, "SELECT list(range) FROM range(100000000)")
    check(explain(message, "reading"), "memory", ["ran out of memory", "MiB", "--memory-limit"])


def test_enum_types_are_shown_without_their_categories():
    assert display_type("ENUM('HIV', 'flu')") == "ENUM"
    assert display_type("ENUM('a''b', 'c)')[]") == "ENUM[]"
    assert display_type("STRUCT(a ENUM('HIV'), \"ENUM(x\" INTEGER)") == 'STRUCT(a ENUM, "ENUM(x" INTEGER)'
    assert display_type("MAP(VARCHAR, ENUM('x'))") == "MAP(VARCHAR, ENUM)"
    assert display_type("UNION(a ENUM('1'), b INTEGER)") == "UNION(a ENUM, b INTEGER)"
    assert display_type("DECIMAL(9,2)") == "DECIMAL(9,2)"
    assert redact("types '+(ENUM('HIV', 'flu'), INTEGER)'") == "types '...'"


def test_describe_reads_kinds_from_the_full_type_and_shows_the_short_one(con):
    con.execute("CREATE TYPE mood AS ENUM ('HIV', 'flu')")
    con.execute("CREATE TABLE e (m mood, s STRUCT(a mood), l mood[])")
    columns = engines.connect(con).describe("e").columns
    assert [(c.type, c.kind) for c in columns] == [
        ("ENUM", "categorical"),
        ("STRUCT(a ENUM)", None),
        ("ENUM[]", None),
    ]


def test_the_engine_names_the_operation_from_the_statement(con):
    engine = engines.connect(con)
    assert engine.operation('CREATE TABLE "x y" AS SELECT * FROM "t"') == "creating table 'x y'"
    assert engine.operation('DROP VIEW "v"') == "dropping view 'v'"
    assert engine.operation('ALTER TABLE "a" RENAME TO "b"') == "renaming table 'a'"
    assert engine.operation("COPY (SELECT 1) TO 'o.csv' (FORMAT CSV)") == "exporting to 'o.csv'"
    assert engine.operation("COMMIT") == "committing the release"
    assert engine.operation("SELECT * FROM a JOIN b ON a.x = b.x WHERE a.y = 'secret'") == "reading 'a', 'b'"


def test_driver_errors_become_engine_errors_at_the_boundary(con):
    engine = engines.connect(con)
    con.execute(f"CREATE TABLE s AS SELECT '{SECRET}' AS x")
    with pytest.raises(EngineError) as caught:
        engine.fetch_all('SELECT CAST(x AS INTEGER) FROM "s"')
    check(caught.value, "conversion", ["reading 's'", "INT32"])
    assert caught.value.__suppress_context__  # DuckDB's text is not chained into a traceback
    # nested, the outermost names the operation
    with pytest.raises(EngineError, match=r"^reading the input: "), engine.driver_call("reading the input"):
        engine.fetch_all('SELECT CAST(x AS INTEGER) FROM "s"')
    # what is not the driver's passes through untouched
    with pytest.raises(ZeroDivisionError), engine.driver_call("dividing"):
        _ = 1 / 0


def test_a_query_stopped_by_ctrl_c_is_a_keyboard_interrupt(con):
    engine = engines.connect(con)
    timer = ctrl_c_after(0.3)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            engine.fetch_all("SELECT count(*) FROM range(100000000000)")
    finally:
        timer.cancel()
    assert engine.fetch_one("SELECT 42") == (42,)


def test_a_rollback_that_fails_does_not_hide_the_first_error(con):
    engine = engines.connect(con)

    def fill_the_disk() -> None:
        with engine.transaction():
            engine.execute("CREATE TABLE made_inside (x INTEGER)")
            engine.execute("COMMIT")  # the transaction is gone: the rollback fails too
            engine.execute("COPY (SELECT range FROM range(1000000)) TO '/dev/full' (FORMAT CSV)")

    with pytest.raises(EngineError, match="No space left on device"):
        fill_the_disk()


def test_a_database_another_process_holds(tmp_path):
    path = tmp_path / "held.duckdb"
    duckdb.connect(str(path)).close()
    import subprocess
    import sys

    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import duckdb, sys; c = duckdb.connect({str(path)!r}); print(1, flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "1"
        with pytest.raises(EngineError) as caught:
            engines.connect(path)
        check(caught.value, "locked", [f"PID {holder.pid}", f"'{path}'", "close it"])
    finally:
        holder.communicate("")
    assert Path(path).exists()
