"""Incremental releases (``anonymize --incremental``, then ``refresh``): each version holds
its parent exactly, the rows one refresh adds are k-anonymous and keep the criteria on their
own, no pending row is published, and verification fails a version whose class changed or
whose added rows break k; on DuckDB and PostgreSQL, and on random tables and loads."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from helpers import assert_one_error, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sbc_sql
from sbc_sql.errors import InputError, VerificationError
from sbc_sql.run.refresh import refresh

not_spark = pytest.mark.notimpl(
    ["spark"], reason="a release on Spark is files, refreshed by anonymizing again"
)

K = 5
ROLES: dict[str, Any] = {"qi": "age,zip,sex", "sensitive": "dx", "drop": "pid"}


def people(n: int, seed: int, start: int = 0) -> pd.DataFrame:
    """``n`` rows of a population: an identifier, three QIs and a diagnosis."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "pid": np.arange(start, start + n, dtype=np.int64),
            "age": rng.integers(18, 90, n).astype(np.int64),
            "zip": [f"z{v}" for v in rng.integers(0, 12, n)],
            "sex": rng.choice(["F", "M"], n),
            "dx": [f"d{v}" for v in rng.integers(0, 4, n)],
        }
    )


def load(engine, database: Any, df: pd.DataFrame) -> None:
    """``df``'s rows appended to the table 't', as a daily load would."""
    engine.table(database, "sbc_load", df)
    engine.sql(database, 'INSERT INTO t SELECT * FROM "sbc_load"')
    engine.sql(database, 'DROP TABLE "sbc_load"')


def version_rows(engine, database: Any, release: str, upto: int) -> list[str]:
    """The release's rows of versions up to ``upto``, each with its class's generalization,
    as text, sorted: what a version published."""
    rows = engine.sql(
        database,
        f'SELECT r.*, c.age_min, c.age_max, c.age_has_null, c.zip, c.sex FROM "{release}_rows" AS r '
        f'JOIN "{release}_classes" AS c ON c.eq_class = r.eq_class WHERE r.release_version <= {upto}',
    )
    return sorted(repr(row) for row in rows)


def delta_sizes(engine, database: Any, release: str, version: int) -> list[int]:
    return [
        int(n)
        for (n,) in engine.sql(
            database,
            f'SELECT COUNT(*) FROM "{release}_rows" WHERE release_version = {version} GROUP BY eq_class',
        )
    ]


@not_spark
def test_a_refresh_adds_the_new_rows_and_keeps_every_published_class(engine) -> None:
    database = engine.frame(people(400, 1))
    first = sbc_sql.anonymize(database, "t", K, incremental=True, **ROLES)
    first.close()
    before = version_rows(engine, database, "t_k5", 1)
    load(engine, database, people(120, 2, start=400))
    done = refresh(database, "t_k5")
    assert (done.version, done.parent) == (2, 1)
    assert done.rows_added + done.pending == 120
    assert done.rows_added > 0
    # version 2 holds version 1 exactly
    assert version_rows(engine, database, "t_k5", 1) == before
    # what it added is k-anonymous on its own
    assert min(delta_sizes(engine, database, "t_k5", 2)) >= K
    # the ledger counts every released row, and with the pending rows every source row
    (seen,) = engine.one(database, 'SELECT SUM(sbc_rows) FROM "t_k5_seen"')
    (released,) = engine.one(database, 'SELECT COUNT(*) FROM "t_k5_rows"')
    (pending,) = engine.one(database, 'SELECT COALESCE(SUM(sbc_rows), 0) FROM "t_k5_pending"')
    assert int(seen) == int(released) and int(released) + int(pending) == 520
    verdict = sbc_sql.verify(database, "t", "t_k5", K)
    assert verdict.ok, verdict.problems
    # nothing new: the version stands
    again = refresh(database, "t_k5")
    assert (again.version, again.rows_added) == (2, 0)


@not_spark
def test_rows_that_cannot_form_a_class_wait_pending_and_are_placed_later(engine) -> None:
    database = engine.frame(people(300, 3))
    sbc_sql.anonymize(database, "t", K, incremental=True, **ROLES).close()
    # two rows far from every class, alike: fewer than k, they wait
    odd = people(2, 4, start=300).assign(age=200, zip="zz", sex="F")
    load(engine, database, odd)
    done = refresh(database, "t_k5")
    assert done.pending == 2 and done.rows_added == 0
    assert list(done.pending_by) == ["fewer than k new rows that could form a class keeping the criteria"]
    (published,) = engine.one(database, 'SELECT COUNT(*) FROM "t_k5" WHERE age_max >= 200')
    assert published == 0
    assert sbc_sql.verify(database, "t", "t_k5", K).ok
    # three more alike: five now, a class of their own
    load(engine, database, people(3, 5, start=302).assign(age=200, zip="zz", sex="F"))
    later = refresh(database, "t_k5")
    assert later.pending == 0 and later.rows_added == 5 and later.classes_added == 1
    assert sbc_sql.verify(database, "t", "t_k5", K).ok


@not_spark
def test_a_deleted_row_is_refused_and_nothing_is_written(engine) -> None:
    database = engine.frame(people(200, 6))
    sbc_sql.anonymize(database, "t", K, incremental=True, **ROLES).close()
    before = version_rows(engine, database, "t_k5", 9)
    engine.rewrite(database, "t", lambda df: df.iloc[1:])
    with pytest.raises(InputError, match=r"lacks 1 row\(s\) that release 't_k5' holds"):
        refresh(database, "t_k5")
    assert version_rows(engine, database, "t_k5", 9) == before


@not_spark
def test_a_class_changed_by_hand_fails_the_refresh_and_verify(engine) -> None:
    database = engine.frame(people(300, 7))
    sbc_sql.anonymize(database, "t", K, incremental=True, **ROLES).close()
    load(engine, database, people(60, 8, start=300))
    refresh(database, "t_k5")
    # a class widened by hand: the releases it was part of no longer hold what they recorded
    engine.sql(database, 'UPDATE "t_k5_classes" SET age_max = age_max + 1 WHERE eq_class = 0')
    verdict = sbc_sql.verify(database, "t", "t_k5", K)
    assert any("version 1 of 't_k5' no longer holds what it recorded" in p for p in verdict.problems)
    load(engine, database, people(60, 9, start=360))
    with pytest.raises(VerificationError, match="version 2 is not contained unchanged in version 3"):
        refresh(database, "t_k5")
    (last,) = engine.one(database, 'SELECT MAX(release_version) FROM "t_k5_rows"')
    assert last == 2


@not_spark
def test_verify_fails_a_version_whose_added_rows_break_k(engine) -> None:
    database = engine.frame(people(300, 10))
    sbc_sql.anonymize(database, "t", K, incremental=True, **ROLES).close()
    load(engine, database, people(80, 11, start=300))
    refresh(database, "t_k5")
    assert sbc_sql.verify(database, "t", "t_k5", K).ok
    # one class's rows of version 2 renumbered version 1 but one: version 2 adds a lone row
    (cls,) = engine.one(database, 'SELECT MIN(eq_class) FROM "t_k5_rows" WHERE release_version = 2')
    (row_dx,) = engine.one(
        database, f'SELECT MIN(dx) FROM "t_k5_rows" WHERE release_version = 2 AND eq_class = {cls}'
    )
    engine.sql(
        database,
        f'UPDATE "t_k5_rows" SET release_version = 1 WHERE release_version = 2 AND eq_class = {cls} '
        f"AND dx <> '{row_dx}'",
    )
    problems = sbc_sql.verify(database, "t", "t_k5", K).problems
    assert any(p.startswith("the rows version 2 adds, taken alone:") for p in problems), problems


def test_refresh_refuses_what_it_cannot_keep() -> None:
    con = __import__("duckdb").connect()
    con.register("src", people(200, 12))
    con.execute("CREATE TABLE t AS SELECT * FROM src")
    sbc_sql.anonymize(con, "t", K, **ROLES).close()
    with pytest.raises(InputError, match=r"keeps no ledger .* make it with anonymize --incremental"):
        refresh(con, "t_k5")
    sbc_sql.anonymize(con, "t", K, output="tc", incremental=True, t_closeness=0.5, **ROLES).close()
    with pytest.raises(InputError, match=r"t-closeness.*re-anonymize"):
        refresh(con, "tc")
    with pytest.raises(InputError, match="release 'nope' does not exist"):
        refresh(con, "nope")


def test_l_diversity_holds_in_every_refresh_alone() -> None:
    con = __import__("duckdb").connect()
    con.register("src", people(600, 13))
    con.execute("CREATE TABLE t AS SELECT * FROM src")
    sbc_sql.anonymize(con, "t", K, incremental=True, l_diversity=2, **ROLES).close()
    for day in range(3):
        con.register("day", people(150, 20 + day, start=600 + 150 * day))
        con.execute("INSERT INTO t SELECT * FROM day")
        refresh(con, "t_k5")
    for version in (2, 3, 4):
        worst = con.execute(
            "SELECT MIN(n) FROM (SELECT COUNT(DISTINCT dx) AS n FROM t_k5_rows WHERE release_version = ? "
            "GROUP BY eq_class)",
            [version],
        ).fetchone()[0]
        assert worst is None or worst >= 2
    assert sbc_sql.verify(con, "t", "t_k5", K, l_diversity=2).ok


@pytest.mark.slow
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    first=st.integers(20, 120),
    loads=st.lists(st.integers(0, 60), min_size=1, max_size=4),
    seed=st.integers(0, 10_000),
)
def test_every_version_contains_its_parent_and_every_delta_is_k_anonymous(
    first: int, loads: list[int], seed: int
) -> None:
    import duckdb

    con = duckdb.connect()
    con.register("src", people(first, seed))
    con.execute("CREATE TABLE t AS SELECT * FROM src")
    sbc_sql.anonymize(con, "t", K, incremental=True, **ROLES).close()
    start, version = first, 1
    for i, n in enumerate(loads):
        before = sorted(con.execute("SELECT * FROM t_k5_rows").fetchall(), key=repr)
        classes = sorted(con.execute("SELECT * EXCLUDE (class_size) FROM t_k5_classes").fetchall(), key=repr)
        con.register("day", people(n, seed + i + 1, start=start))
        con.execute("INSERT INTO t SELECT * FROM day")
        start += n
        done = refresh(con, "t_k5")
        if done.rows_added:
            version += 1
        assert done.version == version
        after = con.execute("SELECT * FROM t_k5_rows").fetchall()
        remaining = list(after)
        for row in before:  # the parent's rows, each still there
            remaining.remove(row)
        assert all(row[-1] == version for row in remaining)
        now = {repr(c) for c in con.execute("SELECT * EXCLUDE (class_size) FROM t_k5_classes").fetchall()}
        assert {repr(c) for c in classes} <= now
        sizes = con.execute(
            "SELECT COUNT(*) FROM t_k5_rows WHERE release_version = ? GROUP BY eq_class", [version]
        ).fetchall()
        assert all(s >= K for (s,) in sizes) or version == 1
        seen, released = con.execute(
            "SELECT (SELECT SUM(sbc_rows) FROM t_k5_seen), COUNT(*) FROM t_k5_rows"
        ).fetchone()
        (pending,) = con.execute("SELECT COALESCE(SUM(sbc_rows), 0) FROM t_k5_pending").fetchone()
        assert int(seen) == released and released + int(pending) == start
    assert sbc_sql.verify(con, "t", "t_k5", K).ok


def test_the_command_line_refreshes_and_says_so(tmp_path) -> None:
    import duckdb

    db = tmp_path / "clinic.duckdb"
    with duckdb.connect(str(db)) as con:
        con.register("src", people(200, 30))
        con.execute("CREATE TABLE t AS SELECT * FROM src")
    res = run_cli(
        [
            "anonymize",
            "--db",
            str(db),
            "-t",
            "t",
            "-k",
            "5",
            "--qi",
            "age,zip,sex",
            "--sensitive",
            "dx",
            "--drop",
            "pid",
            "--incremental",
        ]
    )
    assert res.exit_code == 0, res.stderr
    with duckdb.connect(str(db)) as con:
        con.register("day", people(80, 31, start=200))
        con.execute("INSERT INTO t SELECT * FROM day")
    res = run_cli(["refresh", "--db", str(db), "--release", "t_k5", "--json"])
    assert res.exit_code == 0, res.stderr
    doc = __import__("json").loads(res.stdout)
    assert doc["schema"] == "sbc-sql/refresh" and doc["release_version"] == 2 and doc["parent"] == 1
    res = run_cli(["refresh", "--db", str(db), "--release", "t"])
    assert_one_error(res, "release 't' keeps no ledger")


def test_an_interrupted_refresh_leaves_the_release_and_nothing_else(monkeypatch) -> None:
    import duckdb

    from sbc_sql.run import refresh as refreshing

    con = duckdb.connect()
    con.register("src", people(300, 40))
    con.execute("CREATE TABLE t AS SELECT * FROM src")
    sbc_sql.anonymize(con, "t", K, incremental=True, **ROLES).close()
    con.register("day", people(100, 41, start=300))
    con.execute("INSERT INTO t SELECT * FROM day")
    tables = sorted(con.execute("SELECT table_name FROM duckdb_tables()").fetchall())
    rows = sorted(con.execute("SELECT * FROM t_k5_rows").fetchall(), key=repr)
    ledger = sorted(con.execute("SELECT * FROM t_k5_seen").fetchall())

    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    # interrupted in the transaction, with the rows and the new classes written
    monkeypatch.setattr(refreshing, "_verify_and_record", interrupted)
    with pytest.raises(KeyboardInterrupt):
        refresh(con, "t_k5")
    assert sorted(con.execute("SELECT table_name FROM duckdb_tables()").fetchall()) == tables
    assert sorted(con.execute("SELECT * FROM t_k5_rows").fetchall(), key=repr) == rows
    assert sorted(con.execute("SELECT * FROM t_k5_seen").fetchall()) == ledger
    monkeypatch.undo()
    assert refresh(con, "t_k5").version == 2


def test_an_incremental_release_refuses_a_column_its_version_would_shadow() -> None:
    import duckdb

    con = duckdb.connect()
    con.register("src", people(100, 50).assign(release_version=1))
    con.execute("CREATE TABLE t AS SELECT * FROM src")
    with pytest.raises(
        InputError, match=r"column 'release_version' is released as it is.*drop it with drop="
    ):
        sbc_sql.anonymize(con, "t", K, incremental=True, keep="release_version", **ROLES)
    assert [n for (n,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()] == ["t"]
