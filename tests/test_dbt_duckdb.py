"""The dbt package's Python side on dbt-duckdb (sbc_sql/dbt_duckdb.py), without dbt: what the
sbc_release materialization's job builds, what a failed build leaves, which options a model
may give, and the function sbc_verify the plugin registers (tests/test_dbt.py runs them
under dbt itself)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

import sbc_sql
from sbc_sql import dbt_duckdb
from sbc_sql.errors import InputError

OPTIONS = {"k": 5, "qi": ["age", "zip"], "sensitive": ["dx"], "drop": ["id"], "l_diversity": 2}

PEOPLE = (
    "SELECT i AS id, 20 + (i * 7) % 50 AS age, CAST(10000 + i % 13 AS VARCHAR) AS zip, "
    "['a', 'b', 'c'][1 + i % 3] AS dx FROM range({rows}) AS t(i)"
)


@pytest.fixture
def database(tmp_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect(str(tmp_path / "dbt.duckdb"))
    yield con
    con.close()


def _payload(sql: str, options: dict[str, object], identifier: str = "people_k5") -> dict[str, object]:
    return {"sql": sql, "database": "dbt", "schema": "main", "identifier": identifier, "options": options}


def _tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {name for (name,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}


def test_a_build_writes_the_release_of_the_models_query_over_the_last_one(database) -> None:
    summary = dbt_duckdb.build(database, _payload(PEOPLE.format(rows=300), OPTIONS))
    assert (summary["release"], summary["rows"]) == ("people_k5", 300)
    assert _tables(database) == {
        "people_k5",
        "people_k5_classes",
        "people_k5_rows",
        "people_k5_view",
        "people_k5__sbc_input",
    }
    assert sbc_sql.verify(database, "people_k5__sbc_input", "people_k5", 5, l_diversity=2).ok
    # the next build replaces both, from the query as it is now
    dbt_duckdb.build(database, _payload(PEOPLE.format(rows=200), OPTIONS))
    assert database.execute("SELECT count(*) FROM people_k5").fetchone() == (200,)
    assert sbc_sql.verify(database, "people_k5__sbc_input", "people_k5", 5, l_diversity=2).ok
    assert "people_k5__sbc_previous" not in _tables(database)


def test_a_failed_build_leaves_the_last_release_beside_its_input(database) -> None:
    dbt_duckdb.build(database, _payload(PEOPLE.format(rows=300), OPTIONS))
    # 40 rows cannot make classes of 50: nothing of this build is left
    with pytest.raises(ValueError, match=r"^Error: "):
        dbt_duckdb.build(database, _payload(PEOPLE.format(rows=40), {**OPTIONS, "k": 50}))
    assert database.execute("SELECT count(*) FROM people_k5__sbc_input").fetchone() == (300,)
    assert "people_k5__sbc_previous" not in _tables(database)
    assert sbc_sql.verify(database, "people_k5__sbc_input", "people_k5", 5, l_diversity=2).ok


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({**OPTIONS, "output": "elsewhere"}, "'output' is not an option of its sbc config on dbt-duckdb"),
        ({**OPTIONS, "out_file": "x.csv"}, "'out_file' is not an option of its sbc config on dbt-duckdb"),
        ({**OPTIONS, "l_diversty": 2}, "'l_diversty' is not an option of its sbc config on dbt-duckdb"),
        ({"qi": ["age"]}, "its sbc config has no k"),
        ({**OPTIONS, "k": "5"}, "its sbc config has no k"),
    ],
)
def test_an_option_a_model_may_not_give_is_refused_before_anything_is_written(
    database, options, message
) -> None:
    with pytest.raises(InputError, match=message):
        dbt_duckdb.build(database, _payload(PEOPLE.format(rows=300), options))
    assert _tables(database) == set()


def test_a_name_with_a_quote_and_a_dot_stays_one_name(database) -> None:
    odd = 'we"ird.k5'
    dbt_duckdb.build(database, _payload(PEOPLE.format(rows=100), OPTIONS, identifier=odd))
    assert {odd, odd + "_classes", odd + "_rows", odd + "__sbc_input"} <= _tables(database)


def test_sbc_verify_answers_what_verify_does(database) -> None:
    dbt_duckdb.build(database, _payload(PEOPLE.format(rows=300), OPTIONS))
    dbt_duckdb.Plugin("dbt_duckdb", {}).configure_connection(database)

    def verdict(options: dict[str, object]) -> dict[str, object]:
        (answer,) = database.execute(
            "SELECT sbc_verify('main.people_k5__sbc_input', 'main.people_k5', $options)",
            {"options": json.dumps(options)},
        ).fetchone()
        return json.loads(answer)

    # what only the build takes (the algorithm) is left out; drop is asked as identifiers
    assert verdict({"k": 5, "l_diversity": 2, "algorithm": "sbca", "identifier": ["id"]})["ok"] is True
    failed = verdict({"k": 50})
    assert failed["ok"] is False and failed["problems"]
    with pytest.raises(duckdb.Error, match="Error: "):
        verdict({"k": 5, "l_diversty": 2})


def test_an_incremental_model_is_refreshed_by_each_build_and_made_anew_by_a_full_refresh(database) -> None:
    options = {**OPTIONS, "incremental": True}
    dbt_duckdb.build(database, _payload(PEOPLE.format(rows=300), options))
    before = sorted(database.execute("SELECT * FROM people_k5_rows").fetchall(), key=repr)
    # the next build's query holds 150 more rows: they are added, nothing published changes
    summary = dbt_duckdb.build(database, _payload(PEOPLE.format(rows=450), options))
    assert (summary["schema"], summary["release_version"], summary["parent"]) == ("sbc-sql/refresh", 2, 1)
    assert summary["rows_added"] + summary["pending"] == 150
    after = database.execute("SELECT * FROM people_k5_rows").fetchall()
    for row in before:
        after.remove(row)
    assert all(row[-1] == 2 for row in after)
    assert sbc_sql.verify(database, "people_k5__sbc_input", "people_k5", 5, l_diversity=2).ok
    # a config that asks another k stops the build, which leaves the release as it was
    with pytest.raises(ValueError, match=r"asks k 7, its incremental release keeps 5.*--full-refresh"):
        dbt_duckdb.build(database, _payload(PEOPLE.format(rows=500), {**options, "k": 7}))
    assert database.execute("SELECT count(*) FROM people_k5__sbc_input").fetchone() == (450,)
    # a query that lost rows the release holds stops it too
    with pytest.raises(ValueError, match=r"lacks 100 row\(s\)"):
        dbt_duckdb.build(database, _payload(PEOPLE.format(rows=350), options))
    # --full-refresh: a new chain, version 1 of the rows as they are
    payload = {**_payload(PEOPLE.format(rows=350), options), "full_refresh": True}
    assert dbt_duckdb.build(database, payload)["schema"] == "sbc-sql/anonymize"
    assert database.execute("SELECT DISTINCT release_version FROM people_k5_rows").fetchall() == [(1,)]
