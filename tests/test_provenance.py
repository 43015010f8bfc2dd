"""A release's provenance: the JSON document stored as the comment of its view and tables,
saying how it was made, holding no cell value, the same on every run but for the seconds."""

from __future__ import annotations

import json
from typing import Any

from helpers import BANDED_TYPES as TYPES
from helpers import banded_patients as patients
from helpers import comment, make_table

import sbc_sql
from sbc_sql import provenance

K = 3


def test_the_release_records_how_it_was_made(released):
    text = comment(released, "rel")
    assert text is not None
    assert comment(released, "rel_rows") == comment(released, "rel_classes") == text
    doc = json.loads(text)
    assert (doc["schema"], doc["schema_version"]) == (provenance.SCHEMA, provenance.SCHEMA_VERSION)
    assert doc["sbc_sql"] == sbc_sql.__version__
    assert (doc["algorithm"], doc["k"], doc["mode"]) == ("sbca", K, "blocks")
    assert doc["options"]["leftover"] == "nearest" and doc["options"]["max_suppression"] == 0.01
    roles = {c["name"]: (c["role"], c["origin"]) for c in doc["columns"]}
    assert roles == {
        "pid": ("identifier", "comment"),
        "age": ("qi", "default"),
        "zip": ("qi", "default"),
        "dis": ("sensitive", "comment"),
    }
    assert doc["weights"] == {"age": 1.0, "zip": 1.0}
    assert doc["privacy_models"] == [{"name": "k-anonymity", "k": K}]
    assert doc["rows"] == {"input": 24, "released": 24, "suppressed": 0, "suppressed_by": {}}
    assert doc["achieved"] == {}
    assert doc["classes"] == 8
    assert set(doc["measures"]) >= {"total_ncp", "utility", "ncp", "smallest_class"}
    # tuples: the estimate of the distinct QI tuples and, as here, their GROUP BY
    stages = {"plan", "stats", "tuples", "pull", "cluster", "upload", "write", "verify", "measure"}
    assert set(doc["seconds"]) == stages


def string_leaves(value: Any) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return set().union(*(string_leaves(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(string_leaves(v) for v in value)) if value else set()
    return set()


def test_the_provenance_holds_no_cell_value_and_is_the_same_on_every_run(released):
    first = json.loads(comment(released, "rel"))
    cells = {str(v) for column in patients().to_dict(orient="list").values() for v in column}
    assert not string_leaves(first) & cells
    for value in ("20", "93", "flu"):  # nor any bound of a range or member of a set
        assert f'"{value}"' not in comment(released, "rel") and f":{value}," not in comment(released, "rel")
    sbc_sql.anonymize(released, "t", K, output="again")
    second = json.loads(comment(released, "again"))
    for doc in (first, second):
        doc.pop("seconds")
        doc.pop("release")
        doc["options"].pop("output")
    assert first == second


def test_the_provenance_takes_flags_weights_and_suppression(con):
    make_table(con, "t", patients(25), TYPES)
    sbc_sql.anonymize(
        con, "t", 4, output="rel", drop=["pid"], sensitive=["dis"], weights="age=2", leftover="suppress"
    )
    doc = json.loads(comment(con, "rel"))
    assert {c["name"]: c["origin"] for c in doc["columns"]} == {
        "pid": "flag",
        "age": "default",
        "zip": "default",
        "dis": "flag",
    }
    # the weights the run used (scaled so the largest is 1) beside the ones given
    assert doc["weights"] == {"age": 1.0, "zip": 0.5} and doc["options"]["weights"] == {"age": 2.0}
    assert doc["rows"] == {"input": 25, "released": 24, "suppressed": 1, "suppressed_by": {}}


def test_a_comment_of_the_runs_own_parses_back(released):
    read = provenance.parse(comment(released, "rel"))
    assert read is not None
    assert [(c.name, c.role) for c in read.columns] == [
        ("pid", "identifier"),
        ("age", "qi"),
        ("zip", "qi"),
        ("dis", "sensitive"),
    ]
    assert (read.k, read.input_rows, read.released, read.suppressed, read.classes) == (K, 24, 24, 0, 8)
    assert provenance.parse(None) is None and provenance.parse("a note of the owner's") is None


def test_a_dry_run_shows_the_comments_and_writes_none(con):
    make_table(con, "t", patients(), TYPES)
    con.execute("COMMENT ON COLUMN t.pid IS 'sbc:identifier'")
    shown = sbc_sql.anonymize(con, "t", K, output="rel", sql_only=True)
    comments = [s for s in shown.statements if s.startswith("COMMENT ON")]
    assert [s.split(" IS ")[0] for s in comments] == [
        'COMMENT ON VIEW "rel"',
        'COMMENT ON TABLE "rel_rows"',
        'COMMENT ON TABLE "rel_classes"',
    ]
    assert comment(con, "rel") is None
