"""verify as an independent auditor: roles from the run's provenance and from the source's
comments, and every tampering of a release that an adversary tried, each of which must fail.

Each tampering below passed verification before the audit: a release carrying an
identifier, a QI published raw, sensitive values moved between classes, a falsified class
size, a class deleted from both tables, and a text view that shows another column or
renders two different value sets alike. The property tests build random releases, tamper
with them in each of these ways and expect a failure, and expect an untampered release to
pass.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import duckdb
import pandas as pd
import pytest
from helpers import BANDED_TYPES as TYPES
from helpers import banded_patients as patients
from helpers import comment, make_table, q, rows
from hypothesis import HealthCheck, assume, given, settings
from strategies import NUMERIC_TYPES, TableCase, tables_and_k

import sbc_sql
from sbc_sql.cli import VERIFY_FAILED
from sbc_sql.model import Column
from sbc_sql.stages import audit
from sbc_sql.stages import write as generalize
from sbc_sql.stages.verify import Verdict

K = 3


def verdict(con: duckdb.DuckDBPyConnection, release: str = "rel", k: int = K) -> Verdict:
    return sbc_sql.verify(con, "t", release, k)


def fails_with(con: duckdb.DuckDBPyConnection, words: str, release: str = "rel") -> None:
    v = verdict(con, release)
    assert not v.ok
    assert any(words in p for p in v.problems), v.problems


def redefine(con: duckdb.DuckDBPyConnection, view: str, query: str, keep_comment: bool = True) -> None:
    """Replace a view, and put its provenance back on it as a careful forger would."""
    kept = comment(con, view)
    con.execute(f"CREATE OR REPLACE VIEW {q(view)} AS {query}")
    if keep_comment and kept is not None:
        literal = kept.replace("'", "''")
        con.execute(f"COMMENT ON VIEW {q(view)} IS '{literal}'")


# --------------------------------------------------------------------------- verify's verdicts


def test_an_untampered_release_passes_on_the_runs_roles(released):
    v = verdict(released)
    assert v.ok, v.problems
    assert v.notes == ()
    assert v.facts["released"] == 24 and v.facts["classes"] == 8


def test_a_release_without_provenance_is_verified_on_inferred_roles(released):
    for name, kind in (("rel", "VIEW"), ("rel_rows", "TABLE"), ("rel_classes", "TABLE")):
        released.execute(f"COMMENT ON {kind} {name} IS NULL")
    v = verdict(released)
    assert v.ok, v.problems
    assert v.notes == (audit.NO_PROVENANCE,)
    # without a record of what the run suppressed, a class deleted from both tables is rows
    # lost, unless the auditor allows that many missing
    released.execute("DELETE FROM rel_rows WHERE eq_class = 0")
    released.execute("DELETE FROM rel_classes WHERE eq_class = 0")
    v = verdict(released)
    assert not v.ok and v.facts["suppressed"] == 3 and v.notes == (audit.NO_PROVENANCE,)
    assert any("the release lacks 3 of the 24 input rows" in p for p in v.problems), v.problems
    v = sbc_sql.verify(released, "t", "rel", K, max_suppression=0.125)
    assert v.ok and v.facts["suppressed"] == 3, v.problems


# 1. an identifier, or a QI published raw


def test_a_release_carrying_an_identifier_fails(released):
    released.execute("ALTER TABLE rel_rows ADD COLUMN pid VARCHAR")
    fails_with(released, "'rel_rows' carries column 'pid'")


def test_a_view_redefined_to_carry_an_identifier_fails_on_the_source_comment(released):
    # the view loses its provenance with its definition; the source's comment still declares pid
    released.execute("CREATE TABLE rel_copy AS SELECT * FROM rel")
    released.execute("CREATE OR REPLACE VIEW rel AS SELECT r.*, 'p000' AS pid FROM rel_copy AS r")
    v = verdict(released)
    assert not v.ok and v.notes == (audit.NO_PROVENANCE,)
    assert any("'pid'" in p and "its comment 'sbc:identifier'" in p for p in v.problems), v.problems


def test_a_comment_added_after_the_run_is_the_owners_word(released):
    # zip was a QI by default; its owner now declares it an identifier: it must not be released
    released.execute("COMMENT ON COLUMN t.zip IS 'sbc:identifier'")
    fails_with(released, "'rel_classes' carries column 'zip'")


def test_a_qi_published_raw_fails(released):
    # a numeric QI beside its range, in the row table and in the view
    released.execute("ALTER TABLE rel_rows ADD COLUMN age INTEGER")
    fails_with(released, "publishes quasi-identifier 'age' raw in column 'age'")


def test_a_categorical_qi_published_raw_fails_in_a_flat_release(released):
    # one table, no provenance: zip declared a QI in the source's comments, released as text
    released.execute("COMMENT ON COLUMN t.zip IS 'sbc:qi'")
    released.execute("CREATE TABLE flat AS SELECT r.* EXCLUDE (zip), '90' AS zip FROM rel AS r")
    fails_with(released, "publishes quasi-identifier 'zip' raw", release="flat")


def test_a_raw_copy_of_a_numeric_qi_fails_without_provenance(released):
    released.execute("CREATE TABLE flat AS SELECT r.*, r.age_min AS age FROM rel AS r")
    fails_with(released, "publishes quasi-identifier 'age' raw in column 'age'", release="flat")


# 2. sensitive values swapped between classes


def test_sensitive_values_swapped_between_two_classes_fail(released):
    # the young band's classes hold flu and cold, the old band's gout and ache: swapping one
    # row's values between a young and an old class keeps every global count
    young, old = (
        released.execute(
            "SELECT rowid, dis FROM rel_rows WHERE eq_class = "
            f"(SELECT MIN(eq_class) FROM rel WHERE age_max {op} 50) ORDER BY rowid LIMIT 1"
        ).fetchone()
        for op in ("<", ">")
    )
    assert young[1] != old[1]
    for (row, _), (_, value) in ((young, old), (old, young)):
        released.execute("UPDATE rel_rows SET dis = ? WHERE rowid = ?", [value, row])
    v = verdict(released)
    assert not v.ok
    assert v.facts["extra"] == 0  # the global multiset is unchanged
    assert v.facts["overdrawn"] == 2
    assert any("values moved between classes" in p for p in v.problems)


# 3. the class table against the rows


def test_a_falsified_class_size_fails(released):
    released.execute("UPDATE rel_classes SET class_size = class_size + 1 WHERE eq_class = 0")
    fails_with(released, "class_size is not the class's row count")


def test_a_class_deleted_from_both_tables_fails(released):
    released.execute("DELETE FROM rel_rows WHERE eq_class = 0")
    released.execute("DELETE FROM rel_classes WHERE eq_class = 0")
    v = verdict(released)
    assert not v.ok
    assert any("a suppressed row must be recorded as suppressed by the run" in p for p in v.problems)
    assert any("the release has 7 classes; the run wrote 8" in p for p in v.problems)


def test_a_deleted_row_fails(released):
    released.execute("DELETE FROM rel_rows WHERE rowid = (SELECT MIN(rowid) FROM rel_rows)")
    fails_with(released, "disagree with 'rel_rows'")


def test_a_release_view_that_hides_a_class_fails(released):
    released.execute("CREATE TABLE rel_copy AS SELECT * FROM rel")
    redefine(released, "rel", "SELECT * FROM rel_copy WHERE eq_class <> 0")
    fails_with(released, "is not its row table joined to its class table")


def test_a_table_replaced_by_hand_loses_the_provenance(released):
    released.execute("CREATE OR REPLACE TABLE rel_classes AS SELECT * FROM rel_classes")
    fails_with(released, "'rel_classes' does not carry the provenance of 'rel'")


def test_the_source_changed_since_the_run_fails(released):
    released.execute("INSERT INTO t VALUES ('p999', 30, '91', 'flu')")
    fails_with(released, "the run read 24 input rows; the source has 25")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"schema":"sbc-sql/provenance", broken', "not valid JSON"),
        ('{"schema":"sbc-sql/provenance","schema_version":99}', "schema version 99"),
        ('{"schema":"sbc-sql/provenance","schema_version":1}', "lacks a field"),
    ],
)
def test_a_damaged_provenance_fails(released, text, words):
    released.execute(f"COMMENT ON VIEW rel IS '{text}'")
    fails_with(released, words)


def test_a_comment_of_ones_own_is_no_provenance(released):
    for name, kind in (("rel", "VIEW"), ("rel_rows", "TABLE"), ("rel_classes", "TABLE")):
        released.execute(f"COMMENT ON {kind} {name} IS 'published 2026 by the registry'")
    v = verdict(released)
    assert v.ok and v.notes == (audit.NO_PROVENANCE,)


# 4. the text view


def test_a_sensitive_column_named_like_the_text_stays_in_its_place(con):
    df = patients()
    df["age_sbc_text"] = [f"s{i}" for i in range(len(df))]
    make_table(con, "t", df, {**TYPES, "age_sbc_text": "VARCHAR"})
    sbc_sql.anonymize(con, "t", K, output="rel", drop=["pid"], sensitive=["dis", "age_sbc_text"])
    shown = rows(con, "SELECT age, age_sbc_text FROM rel_view ORDER BY eq_class LIMIT 1")[0]
    assert shown["age"].startswith("2") and shown["age_sbc_text"].startswith("s")
    assert verdict(con).ok
    # the view as it was defined before: the text computed beside r.*, where the sensitive
    # column named age_sbc_text stood in for the age's text
    redefine(
        con,
        "rel_view",
        "WITH t AS (SELECT r.*, CAST(r.age_min AS TEXT) || '-' || CAST(r.age_max AS TEXT) AS age_sbc_text, "
        "ARRAY_TO_STRING(r.zip, '|') AS zip_sbc_text FROM rel AS r) "
        "SELECT t.eq_class, t.age_sbc_text AS age, t.zip_sbc_text AS zip, t.dis, t.age_sbc_text FROM t",
    )
    shown = rows(con, "SELECT age FROM rel_view ORDER BY eq_class LIMIT 1")[0]
    assert shown["age"].startswith("s")
    fails_with(con, "the text view 'rel_view' does not show the text of its release")


AWKWARD = ["NULL", None, "a|b", "a", "b", "back\\slash", "\\NULL", "plain"]
# value sets and their text: 'NULL' is not NULL, 'a|b' is not {a, b}
RENDERED = [
    (["NULL"], "\\NULL"),
    ([None], "NULL"),
    (["a|b"], "a\\|b"),
    (["a", "b"], "a|b"),
    (["a", None], "a|NULL"),
    (["NULL", None], "\\NULL|NULL"),
    (["back\\slash"], "back\\\\slash"),
    (["\\NULL"], "\\\\NULL"),
    (["a\\", "b"], "a\\\\|b"),
    (["a\\|b"], "a\\\\\\|b"),
]


def decode(text: str) -> list[str | None]:
    """A value set's text read back as docs/release.md says: split on each '|' not escaped, then
    NULL is NULL and a backslash keeps the character after it."""
    values: list[str | None] = []
    part, escaped, raw = "", False, True
    for ch in text + "|":
        if escaped:
            part, escaped, raw = part + ch, False, False
        elif ch == "\\":
            escaped = True
        elif ch == "|":
            values.append(None if raw and part == "NULL" else part)
            part, raw = "", True
        else:
            part += ch
    return values


def test_value_sets_render_one_way_only(con):
    con.execute("CREATE TABLE rel (eq_class BIGINT, v VARCHAR[], dis VARCHAR)")
    con.executemany(
        "INSERT INTO rel VALUES (?, ?, 'x')", [(i, values) for i, (values, _) in enumerate(RENDERED)]
    )
    columns = [
        Column("v", "VARCHAR", "qi", "categorical"),
        Column("dis", "VARCHAR", "sensitive", "categorical"),
    ]
    con.execute(generalize.text_view_sql(columns, "rel_view", "rel").sql(dialect="duckdb"))
    shown = [r[0] for r in con.execute("SELECT v FROM rel_view ORDER BY eq_class").fetchall()]
    assert shown == [text for _, text in RENDERED]
    assert [decode(text) for text in shown] == [values for values, _ in RENDERED]


def test_a_text_view_rendered_the_old_way_fails(con):
    n = 32
    make_table(
        con,
        "t",
        pd.DataFrame(
            {"v": [AWKWARD[i % len(AWKWARD)] for i in range(n)], "dis": [f"d{i % 3}" for i in range(n)]},
            dtype=object,
        ),
        {"v": "VARCHAR", "dis": "VARCHAR"},
    )
    sbc_sql.anonymize(con, "t", 2, output="rel", qi=["v"], sensitive=["dis"])
    assert sbc_sql.verify(con, "t", "rel", 2).ok
    # the text as it was rendered before: the text 'NULL' and NULL alike, 'a|b' as {a, b}
    redefine(
        con,
        "rel_view",
        "SELECT eq_class, ARRAY_TO_STRING(LIST_TRANSFORM(v, LAMBDA x : COALESCE(x, 'NULL')), '|') AS v, dis "
        "FROM rel",
    )
    v = sbc_sql.verify(con, "t", "rel", 2)
    assert not v.ok and any("text view" in p for p in v.problems)


def test_a_text_view_showing_a_wrong_range_fails(released):
    redefine(
        released,
        "rel_view",
        "SELECT eq_class, CAST(age_min AS TEXT) AS age, ARRAY_TO_STRING(zip, '|') AS zip, dis FROM rel",
    )
    fails_with(released, "the text view 'rel_view' does not show the text of its release")


# --------------------------------------------------------------------------- exit codes


def test_verify_exit_codes(file_con, db_path, cli):
    make_table(file_con, "t", patients(), TYPES)
    file_con.execute("COMMENT ON COLUMN t.pid IS 'sbc:identifier'")
    sbc_sql.anonymize(file_con, "t", K, output="rel")
    file_con.close()
    path = db_path
    args = ["verify", "--db", path, "--original", "t"]
    ok = cli([*args, "--release", "rel", "--k", K])
    assert ok.exit_code == 0, ok.stderr
    assert ok.stdout.startswith(f"ok: 'rel' is {K}-anonymous and complete (")
    with duckdb.connect(str(path)) as con:
        con.execute("UPDATE rel_classes SET class_size = 1 WHERE eq_class = 0")
        for name, kind in (("rel", "VIEW"), ("rel_rows", "TABLE"), ("rel_classes", "TABLE")):
            con.execute(f"COMMENT ON {kind} {name} IS NULL")
    bad = cli([*args, "--release", "rel", "--k", K])
    assert bad.exit_code == VERIFY_FAILED == 3
    lines = bad.stderr.splitlines()
    assert lines[0] == f"note: {audit.NO_PROVENANCE}"
    assert lines[1:] and all(line.startswith("Error: ") for line in lines[1:])
    missing = cli([*args, "--release", "nothing", "--k", K])
    assert missing.exit_code == 1
    assert missing.stderr.startswith("Error: table or view 'nothing' does not exist")
    usage = cli([*args, "--release", "rel"])
    assert usage.exit_code == 2


# --------------------------------------------------------------------------- properties

PROPERTY = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


def build(case: TableCase, k: int) -> duckdb.DuckDBPyConnection:
    """A release 'rel' of the case with an identifier column 'who' (declared by comment) and
    sid (unique) and dis released verbatim."""
    con = duckdb.connect()
    df = case.df.copy()
    df["who"] = [f"person {i}" for i in range(case.n)]
    make_table(con, "t", df, {**case.types, "who": "VARCHAR"})
    con.execute("COMMENT ON COLUMN t.who IS 'sbc:identifier'")
    sbc_sql.anonymize(con, "t", k, qi=list(case.qis), sensitive=["sid", "dis"], output="rel")
    return con


def inside(value: Any, box: dict[str, Any], column: str, numeric: bool) -> bool:
    """The Python reading of 'this value lies inside the class's range or set'."""
    if numeric:
        if value is None:
            return bool(box[f"{column}_has_null"])
        return box[f"{column}_min"] is not None and box[f"{column}_min"] <= value <= box[f"{column}_max"]
    return value in box[column]


def detectable_move(con: duckdb.DuckDBPyConnection, case: TableCase) -> tuple[int, int] | None:
    """Two released rows of different classes whose exchange the release cannot explain: a
    row's QIs do not lie inside the other's class (its sid is unique, so no other source row
    can stand in for it). None when every such exchange is explainable."""
    source = {r["sid"]: r for r in rows(con, "SELECT * FROM t")}
    boxes = {r["eq_class"]: r for r in rows(con, "SELECT * FROM rel_classes")}
    placed = rows(con, "SELECT sid, eq_class FROM rel_rows ORDER BY eq_class, sid")

    def fits(sid: int, eq_class: int) -> bool:
        return all(
            inside(source[sid][c], boxes[eq_class], c, case.types[c] in NUMERIC_TYPES) for c in case.qis
        )

    for a in placed:
        for b in placed:
            if a["eq_class"] < b["eq_class"] and not (
                fits(a["sid"], b["eq_class"]) and fits(b["sid"], a["eq_class"])
            ):
                return a["sid"], b["sid"]
    return None


def move_rows(con: duckdb.DuckDBPyConnection, first: int, second: int) -> None:
    con.execute(
        "UPDATE rel_rows SET eq_class = CASE WHEN sid = ? THEN (SELECT eq_class FROM rel_rows WHERE sid = ?) "
        "ELSE (SELECT eq_class FROM rel_rows WHERE sid = ?) END WHERE sid IN (?, ?)",
        [first, second, first, first, second],
    )


def first_qi_raw(con: duckdb.DuckDBPyConnection, case: TableCase) -> None:
    c = case.qis[0]
    raw = c if case.types[c] in NUMERIC_TYPES else f"{c}_raw"
    con.execute(f"ALTER TABLE rel_rows ADD COLUMN {q(raw)} {case.types[c]}")
    con.execute(f"UPDATE rel_rows SET {q(raw)} = (SELECT t.{q(c)} FROM t WHERE t.sid = rel_rows.sid)")


def redefine_text_view(con: duckdb.DuckDBPyConnection, case: TableCase) -> None:
    c = case.qis[0]
    con.execute("CREATE TABLE shown AS SELECT * FROM rel_view")
    others = ", ".join(q(n) for n in ["eq_class", *case.qis[1:], "sid", "dis"])
    redefine(con, "rel_view", f"SELECT {others}, {q(c)} || '*' AS {q(c)} FROM shown")


def delete_a_class(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("DELETE FROM rel_rows WHERE eq_class = 0")
    con.execute("DELETE FROM rel_classes WHERE eq_class = 0")


TAMPERINGS: dict[str, Callable[[duckdb.DuckDBPyConnection, TableCase], None]] = {
    "identifier column added": lambda con, _: con.execute("ALTER TABLE rel_rows ADD COLUMN who VARCHAR"),
    "QI published raw": first_qi_raw,
    "class_size changed": lambda con, _: con.execute(
        "UPDATE rel_classes SET class_size = class_size + 1 WHERE eq_class = 0"
    ),
    "class deleted from both tables": lambda con, _: delete_a_class(con),
    "row deleted": lambda con, _: con.execute("DELETE FROM rel_rows WHERE rowid = 0"),
    "text view redefined": redefine_text_view,
}


@pytest.mark.slow
@PROPERTY
@given(tables_and_k(max_rows=40))
def test_every_tampering_fails_and_an_untampered_release_passes(case_k):
    case, k = case_k
    con = build(case, k)
    untampered = sbc_sql.verify(con, "t", "rel", k)
    assert untampered.ok, untampered.problems
    assert untampered.notes == ()
    for name, tamper in TAMPERINGS.items():
        con.execute("BEGIN TRANSACTION")
        tamper(con, case)
        assert not sbc_sql.verify(con, "t", "rel", k).ok, name
        con.execute("ROLLBACK")
    assert sbc_sql.verify(con, "t", "rel", k).ok
    con.close()


@pytest.mark.slow
@PROPERTY
@given(tables_and_k(max_rows=40))
def test_values_moved_between_classes_fail(case_k):
    case, k = case_k
    con = build(case, k)
    pair = detectable_move(con, case)
    assume(pair is not None)
    assert pair is not None
    move_rows(con, *pair)
    v = sbc_sql.verify(con, "t", "rel", k)
    assert not v.ok
    assert v.facts["overdrawn"] >= 1 and v.facts["extra"] == 0
    con.close()


# --------------------------------------------------------------------------- suppression


def forge(con: duckdb.DuckDBPyConnection, change: Callable[[dict[str, Any]], None]) -> None:
    """Rewrite the provenance on the release's three objects alike, as its owner could."""
    import json

    doc = json.loads(comment(con, "rel"))
    change(doc)
    literal = json.dumps(doc).replace("'", "''")
    for name, kind in (("rel", "VIEW"), ("rel_rows", "TABLE"), ("rel_classes", "TABLE")):
        con.execute(f"COMMENT ON {kind} {name} IS '{literal}'")


def flagged(column: str) -> Callable[[dict[str, Any]], None]:
    """A forgery: the provenance says a flag gave ``column`` its role."""

    def change(doc: dict[str, Any]) -> None:
        for c in doc["columns"]:
            if c["name"] == column:
                c["origin"] = "flag"

    return change


def _released_file(file_con, db_path) -> None:
    make_table(file_con, "t", patients(), TYPES)
    file_con.execute("COMMENT ON COLUMN t.pid IS 'sbc:identifier'")
    file_con.execute("COMMENT ON COLUMN t.dis IS 'sbc:sensitive'")
    sbc_sql.anonymize(file_con, "t", K, output="rel")


def test_a_recorded_suppression_above_the_runs_own_bound_fails(file_con, db_path, cli):
    """A class deleted from both tables, and the provenance rewritten to record its rows as
    suppressed: every count agrees, but the run kept --max-suppression 0.01 (0 of 24 rows)."""
    _released_file(file_con, db_path)
    (size,) = file_con.execute("SELECT class_size FROM rel_classes WHERE eq_class = 0").fetchone()
    file_con.execute("DELETE FROM rel_rows WHERE eq_class = 0")
    file_con.execute("DELETE FROM rel_classes WHERE eq_class = 0")

    def suppressed(doc: dict[str, Any]) -> None:
        doc["rows"]["released"] -= size
        doc["rows"]["suppressed"] += size
        doc["classes"] -= 1

    forge(file_con, suppressed)
    file_con.close()
    res = cli(["verify", "--db", db_path, "--original", "t", "--release", "rel", "--k", K])
    assert res.exit_code == VERIFY_FAILED, res.stdout
    assert (
        f"Error: the provenance records {size} of 24 input rows suppressed, above the run's own "
        "--max-suppression 0.01 (0 rows)"
    ) in res.stderr.splitlines()
    # the auditor's own bound is checked beside the run's
    with duckdb.connect(str(db_path)) as con:
        forge(con, lambda doc: doc["options"].update(max_suppression=0.5))
    ok = cli(["verify", "--db", db_path, "--original", "t", "--release", "rel", "--k", K])
    assert ok.exit_code == 0, ok.stderr
    strict = cli(
        [
            "verify",
            "--db",
            db_path,
            "--original",
            "t",
            "--release",
            "rel",
            "--k",
            K,
            "--max-suppression",
            "0.05",
        ]
    )
    assert strict.exit_code == VERIFY_FAILED
    assert "above the auditor's --max-suppression 0.05 (1 rows)" in strict.stderr


def test_a_copy_without_provenance_missing_a_class_fails_unless_the_auditor_allows_it(file_con, db_path, cli):
    """Without provenance nothing records a suppression: rows the release lacks are lost,
    not suppressed, unless the auditor says how many may be missing."""
    make_table(
        file_con,
        "t",
        pd.concat([patients()] * 5, ignore_index=True).assign(pid=lambda d: d.index.astype(str)),
        TYPES,
    )
    file_con.execute("COMMENT ON COLUMN t.pid IS 'sbc:identifier'")
    sbc_sql.anonymize(file_con, "t", K, output="rel")
    file_con.execute("CREATE TABLE c AS SELECT * FROM rel")
    (lost,) = file_con.execute(
        "SELECT COUNT(*) FROM c WHERE eq_class = (SELECT MIN(eq_class) FROM c)"
    ).fetchone()
    file_con.execute("DELETE FROM c WHERE eq_class = (SELECT MIN(eq_class) FROM c)")
    file_con.close()
    args = ["verify", "--db", db_path, "--original", "t", "--release", "c", "--k", K]
    whole = cli(["verify", "--db", db_path, "--original", "t", "--release", "rel", "--k", K])
    assert whole.exit_code == 0, whole.stderr
    res = cli(args)
    assert res.exit_code == VERIFY_FAILED, res.stdout
    assert f"Error: the release lacks {lost} of the 120 input rows, and no provenance records" in res.stderr
    allowed = cli([*args, "--max-suppression", "0.05"])
    assert allowed.exit_code == 0, allowed.stderr
    bad = cli([*args, "--max-suppression", "1.5"])
    assert bad.exit_code == 1
    assert bad.stderr.startswith("Error: --max-suppression 1.5 is outside [0, 1)")


# --------------------------------------------------------------------------- the auditor's word


def test_a_forged_origin_never_outranks_the_owners_identifier(file_con, db_path, cli):
    """The owner declares a released QI an identifier after the run; rewriting the release's
    provenance to say a flag made it a QI does not make the release pass. The auditor's own
    --qi does, and the auditor's --identifier fails a column nobody else declared."""
    _released_file(file_con, db_path)
    file_con.execute("COMMENT ON COLUMN t.zip IS 'sbc:identifier'")

    forge(file_con, flagged("zip"))
    file_con.close()
    args = ["verify", "--db", db_path, "--original", "t", "--release", "rel", "--k", K]
    res = cli(args)
    assert res.exit_code == VERIFY_FAILED, res.stdout
    assert "which its comment 'sbc:identifier' declares an identifier" in res.stderr
    assert "verify --keep zip or --qi zip" in res.stderr
    own = cli([*args, "--qi", "zip"])
    assert own.exit_code == 0, own.stderr
    age = cli([*args, "--qi", "zip", "--identifier", "age"])
    assert age.exit_code == VERIFY_FAILED
    assert "which the auditor declares an identifier" in age.stderr
    twice = cli([*args, "--qi", "zip", "--identifier", "zip"])
    assert twice.exit_code == 1
    assert twice.stderr.startswith("Error: column 'zip' is given two roles (--qi and --identifier)")
    unknown = cli([*args, "--keep", "nope"])
    assert unknown.exit_code == 1 and "column 'nope' given a role by verify" in unknown.stderr


def test_an_identifier_kept_by_the_run_is_a_problem_unless_the_auditor_keeps_it(file_con, db_path, cli):
    """--keep pid over the source's 'sbc:identifier': the run publishes it as asked, and verify
    says so, whatever the run's flags were, until the auditor accepts it with --keep."""
    make_table(file_con, "t", patients(), TYPES)
    file_con.execute("COMMENT ON COLUMN t.pid IS 'sbc:identifier'")
    file_con.execute("COMMENT ON COLUMN t.dis IS 'sbc:sensitive'")
    with pytest.warns(UserWarning, match="column 'pid' .* is distinct on 100% of the rows"):
        sbc_sql.anonymize(file_con, "t", K, output="rel", keep=["pid"])
    file_con.close()
    args = ["verify", "--db", db_path, "--original", "t", "--release", "rel", "--k", K]
    res = cli(args)
    assert res.exit_code == VERIFY_FAILED, res.stdout
    assert (
        "'rel' carries column 'pid' of 't'.'pid', which its comment 'sbc:identifier' declares" in res.stderr
    )
    ok = cli([*args, "--keep", "pid"])
    assert ok.exit_code == 0, ok.stderr


def test_a_flag_over_a_comment_on_the_source_is_said_in_a_note(released):
    """A role the run set by a flag outranks the owner's other comments, and verify says so."""
    released.execute("COMMENT ON COLUMN t.age IS 'sbc:sensitive'")

    forge(released, flagged("age"))
    v = verdict(released)
    assert v.ok, v.problems
    assert any("column 'age': the run's provenance records role 'qi' from a flag" in n for n in v.notes), (
        v.notes
    )
    assert any("verify --sensitive age" in n for n in v.notes)


def test_rows_a_run_left_over_and_suppressed_are_outside_its_budget(con):
    """--leftover suppress drops the rows left when fewer than k remain, beyond
    --max-suppression: such a release verifies (the auditor's own bound still holds)."""
    people = pd.concat([patients(), patients().head(1).assign(pid="p-extra")], ignore_index=True)
    make_table(con, "t", people, TYPES)
    con.execute("COMMENT ON COLUMN t.pid IS 'sbc:identifier'")
    sbc_sql.anonymize(con, "t", K, output="rel", leftover="suppress", max_suppression=0.0)
    v = verdict(con)
    assert v.ok, v.problems
    assert v.facts["suppressed"] > 0, v.facts
    strict = sbc_sql.verify(con, "t", "rel", K, max_suppression=0.0)
    assert not strict.ok and any("above the auditor's --max-suppression 0" in p for p in strict.problems)
