"""Every command's --json document validates against its JSON Schema (sbc_sql/schemas),
its errors included, and docs/json.md names every key the schemas define."""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import jsonschema
import pytest
from helpers import run_cli
from test_cli import make_clinic

from sbc_sql import documents

ROOT = Path(__file__).resolve().parents[1]
ROLES = ["--qi", "age,zip,sex", "--sensitive", "diagnosis", "--drop", "name,ssn"]
ROLES += ["--keep", "birth_date,nationality"]


def check(command: str, stdout: str) -> dict:
    doc = json.loads(stdout)
    jsonschema.Draft202012Validator(documents.schema(command)).validate(doc)
    assert (doc["schema"], doc["version"]) == (f"sbc-sql/{command}", documents.VERSIONS[command])
    return doc


@pytest.fixture(scope="module")
def clinic(tmp_path_factory) -> Path:
    path = make_clinic(tmp_path_factory.mktemp("json") / "clinic.duckdb")
    res = run_cli(["anonymize", "--db", path, "-t", "patients", "-k", 5, "-o", "rel", *ROLES, "-q"])
    assert res.exit_code == 0, res.stderr
    return path


def test_every_schema_is_a_valid_json_schema_with_one_error_shape() -> None:
    errors = set()
    for command in documents.VERSIONS:
        schema = documents.schema(command)
        jsonschema.Draft202012Validator.check_schema(schema)
        errors.add(json.dumps(schema["$defs"]["error"], sort_keys=True))
        assert schema["$defs"]["error"]["properties"]["kind"]["enum"] == list(documents.KINDS)
    assert len(errors) == 1
    shipped = {p.stem for p in documents.SCHEMAS.glob("*.json")}
    assert shipped == set(documents.VERSIONS)


def test_anonymize_with_criteria_validates(clinic) -> None:
    args = ["anonymize", "--db", clinic, "-t", "patients", "-k", 5, "-o", "rel_l", *ROLES]
    doc = check("anonymize", run_cli([*args, "--l-diversity", 2, "--json", "-q"]).stdout)
    assert doc["ok"] is True and doc["release"] == "rel_l" and doc["criteria"]["asked"]["l_diversity"] == 2


def test_the_reading_commands_validate(clinic) -> None:
    pair = ["--db", clinic, "--original", "patients", "--release", "rel"]
    check("measure", run_cli(["measure", *pair, "--json"]).stdout)
    ok = run_cli(["verify", *pair, "-k", 5, "--json"])
    assert ok.exit_code == 0 and check("verify", ok.stdout)["problems"] == []
    evaluated = run_cli(["evaluate", *pair, "--sensitive", "diagnosis", "--queries", 5, "--json", "-q"])
    doc = check("evaluate", evaluated.stdout)
    assert doc["information_loss"]["total_ncp"]["better"] == "lower" and "query_accuracy" in doc
    profiled = run_cli(["profile", "--db", clinic, "-t", "patients", *ROLES, "--json", "-q"])
    assert check("profile", profiled.stdout)["qis"] == ["age", "zip", "sex"]


def test_compare_suggest_k_and_cluster_validate(clinic, tmp_path) -> None:
    table = ["--db", clinic, "-t", "patients", *ROLES]
    compared = run_cli(["compare", *table, "-k", "5,10", "--algorithms", "sbca,mondrian", "--json"])
    assert compared.exit_code == 0, compared.stderr
    assert len(check("compare", compared.stdout)["rows"]) == 4  # the JSON alone on stdout, no table
    found = run_cli(["suggest-k", *table, "--max-loss", "0.05", "--k-max", 12, "--json", "-q"])
    assert found.exit_code == 0, found.stderr
    assert check("suggest-k", found.stdout)["curve"]
    ids = tmp_path / "ids.parquet"
    clustered = run_cli(["cluster", *table, "-k", 5, "--out", ids, "--json", "-q"])
    assert check("cluster", clustered.stdout)["rows"] == 400


@pytest.mark.parametrize(
    ("args", "kind", "code"),
    [
        (["anonymize", "-t", "missing", "-k", 5], "input", 1),
        (["anonymize", "-t", "patients", "-k", 5, "--mode", "sideways"], "usage", 2),
        (["anonymize", "-t", "patients", "-k", 1000], "input", 1),
        (["profile", "-t", "missing"], "input", 1),
        (["suggest-k", "-t", "patients", "--max-loss", "2"], "input", 1),
        (["measure", "--original", "patients", "--release", "missing"], "input", 1),
        (["evaluate", "--original", "patients", "--release", "missing", "-q"], "input", 1),
        (["cluster", "-t", "missing", "-k", 5, "--out", "ids.parquet"], "input", 1),
        (["compare", "-t", "patients", "-k", "1"], "input", 1),
    ],
)
def test_an_error_under_json_is_a_document_too(clinic, args, kind, code) -> None:
    res = run_cli([*args, "--db", clinic, "--json"])
    assert res.exit_code == code
    doc = check(args[0], res.stdout)
    assert doc["ok"] is False and doc["error"]["kind"] == kind
    line = next(line for line in res.stderr.splitlines() if line.startswith("Error: "))
    assert line == f"Error: {doc['error']['message']}"


def test_a_failed_verification_is_a_document_with_every_problem(clinic) -> None:
    pair = ["--db", clinic, "--original", "patients", "--release", "rel"]
    res = run_cli(["verify", *pair, "-k", 6, "--json"])
    assert res.exit_code == 3
    doc = check("verify", res.stdout)
    assert doc["ok"] is False and doc["error"]["kind"] == "verification"
    assert doc["error"]["message"] == doc["problems"][0] and f"Error: {doc['problems'][0]}" in res.stderr


def test_no_cell_value_reaches_an_error_document(clinic) -> None:
    with duckdb.connect(str(clinic)) as con:
        con.execute("CREATE TABLE twice AS SELECT 'CELL-' || name AS who, age FROM patients")
    res = run_cli(["anonymize", "--db", clinic, "-t", "twice", "-k", 5, "--qi", "age", "--json"])
    assert res.exit_code == 1 and "CELL-" not in res.stdout + res.stderr
    assert check("anonymize", res.stdout)["error"]["kind"] == "input"


def test_the_sql_functions_return_the_command_lines_documents() -> None:
    """sbc.anonymize, sbc.verify and sbc.measure return what anonymize, verify and measure
    --json print: the server and the command line build them with the same functions."""
    from sbc_sql import cli, documents, server

    for builder in ("summary_dict", "verify_dict", "measure_dict"):
        assert hasattr(documents, builder)
        for module in (server, cli):
            assert f"documents.{builder}(" in Path(module.__file__).read_text(), (module, builder)


def test_docs_name_every_key_of_every_schema() -> None:
    text = (ROOT / "docs" / "json.md").read_text()
    named = set(re.findall(r"`([a-z_0-9.-]+)`", text))

    def keys(node: object) -> set[str]:
        found: set[str] = set()
        if isinstance(node, dict):
            found |= set(node.get("properties", {}))
            for value in node.values():
                found |= keys(value)
        elif isinstance(node, list):
            for value in node:
                found |= keys(value)
        return found

    for command in documents.VERSIONS:
        missing = keys(documents.schema(command)) - named
        assert not missing, (command, missing)


@pytest.mark.parametrize(
    ("raised", "kind", "code"),
    [(KeyboardInterrupt(), "interrupted", 130), (RuntimeError("CELL-secret"), "internal", 1)],
)
def test_an_interruption_and_a_fault_under_json_are_documents(
    clinic, monkeypatch, raised, kind, code
) -> None:
    def stop(*args, **kwargs):
        raise raised

    monkeypatch.setattr("sbc_sql.quality.profile.profile", stop)
    res = run_cli(["profile", "--db", clinic, "-t", "patients", "--json"])
    assert res.exit_code == code
    doc = check("profile", res.stdout)
    assert doc["error"]["kind"] == kind and "CELL" not in res.stdout + res.stderr


def test_a_usage_error_in_a_commands_body_and_a_config_asking_json(clinic, tmp_path) -> None:
    pair = ["--db", clinic, "--original", "patients", "--release", "rel"]
    res = run_cli(["measure", *pair, "--spark-master", "local[1]", "--json"])
    assert res.exit_code == 2 and check("measure", res.stdout)["error"]["kind"] == "usage"
    bad = tmp_path / "bad.toml"
    bad.write_text("json = true\n[measure]\nqi = []\n")  # json asked in the file that fails
    res = run_cli(["measure", "--config", bad, *pair])
    assert res.exit_code == 2 and check("measure", res.stdout)["error"]["kind"] == "config"
