"""Options from SBC_SQL_<OPTION> environment variables, end to end through the command line:
a variable's value takes effect, a flag and a --config file win over it, and a variable that
cannot be used is one Error: line naming it, never its value, with nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import run_cli
from test_cli import make_clinic
from test_config import objects, rows, write

ROLES = {"SBC_SQL_QI": "age zip sex", "SBC_SQL_SENSITIVE": "diagnosis", "SBC_SQL_DROP": "name,ssn"}
ROLES["SBC_SQL_KEEP"] = "birth_date nationality"
FLAGS = ["--qi", "age,zip,sex", "--sensitive", "diagnosis", "--drop", "name,ssn"]
FLAGS += ["--keep", "birth_date,nationality"]


@pytest.fixture(scope="module")
def clinic(tmp_path_factory) -> Path:
    return make_clinic(tmp_path_factory.mktemp("environment") / "clinic.duckdb")


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch):
    def set_all(**values: str) -> None:
        for name, value in values.items():
            monkeypatch.setenv(name, value)

    return set_all


def summary(res) -> dict:
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)


def test_the_environment_gives_the_release_the_flags_give(clinic, env) -> None:
    by_flags = run_cli(["anonymize", "--db", clinic, "-t", "patients", "-k", "5", *FLAGS, "-o", "f", "-q"])
    assert by_flags.exit_code == 0, by_flags.stderr
    env(SBC_SQL_DB=str(clinic), SBC_SQL_K="5", SBC_SQL_JSON="yes", SBC_SQL_QUIET="1", **ROLES)
    by_env = summary(run_cli(["anonymize", "-t", "patients", "-o", "e"]))
    assert by_env["k"] == 5 and by_env["release"] == "e"
    assert list(by_env["ncp"]) == ["age", "zip", "sex"]
    assert rows(clinic, "f") == rows(clinic, "e")


def test_a_flag_wins_over_the_environment(clinic, env) -> None:
    env(SBC_SQL_K="5", SBC_SQL_DB=str(clinic), SBC_SQL_QI="age", SBC_SQL_JSON="1", SBC_SQL_QUIET="on")
    env(SBC_SQL_SENSITIVE="diagnosis", SBC_SQL_DROP="name,ssn", SBC_SQL_KEEP="birth_date,nationality,sex")
    got = summary(run_cli(["anonymize", "-t", "patients", "-o", "flag", "-k", "7", "--qi", "age,zip"]))
    assert got["k"] == 7 and list(got["ncp"]) == ["age", "zip"]


def test_a_config_file_wins_over_the_environment_and_a_flag_over_both(clinic, env, tmp_path) -> None:
    env(SBC_SQL_K="5", SBC_SQL_DB=str(clinic), SBC_SQL_JSON="1", SBC_SQL_QUIET="1", **ROLES)
    env(SBC_SQL_MODE="exact")
    path = write(
        tmp_path, "k = 6\n[anonymize]\nqi = ['age', 'zip']\nkeep = ['birth_date', 'nationality', 'sex']\n"
    )
    got = summary(run_cli(["anonymize", "--config", path, "-t", "patients", "-o", "cfg"]))
    assert got["k"] == 6 and list(got["ncp"]) == ["age", "zip"]
    assert got["mode"] == "exact"  # what the file leaves, the environment gives
    got = summary(run_cli(["anonymize", "--config", path, "-t", "patients", "-o", "cfg2", "-k", "8"]))
    assert got["k"] == 8


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("SBC_SQL_K", "five", "SBC_SQL_K is not a whole number, which --k takes; set it to one, or unset it"),
        (
            "SBC_SQL_MAX_SUPPRESSION",
            "1%",
            "SBC_SQL_MAX_SUPPRESSION is not a number, which --max-suppression takes; set it to one "
            "(e.g. 0.05), or unset it",
        ),
        (
            "SBC_SQL_ENGINE",
            "postgres",
            "SBC_SQL_ENGINE is not one of --engine's choices (duckdb, spark); set it to one of them, "
            "or unset it",
        ),
        (
            "SBC_SQL_QUIET",
            "maybe",
            "SBC_SQL_QUIET is not a switch's value, which --quiet is; set it to 1 or 0 "
            "(true/false, yes/no, on/off), or unset it",
        ),
        (
            "SBC_SQL_ATTACH",
            "'ward.duckdb",
            "SBC_SQL_ATTACH has a quote that is not closed; separate --attach's values with spaces "
            "and quote a value that has spaces, as in a shell, or unset it",
        ),
        (
            "SBC_SQL_TABLE",
            "patients",
            "SBC_SQL_TABLE is set but never read: --table names the data the command reads",
        ),
        ("SBC_SQL_REPLACE", "1", "SBC_SQL_REPLACE is set but never read: --replace overwrites"),
    ],
)
def test_a_variable_that_cannot_be_used_is_one_error_line(clinic, env, variable, value, said) -> None:
    before = objects(clinic)
    env(**{variable: value})
    res = run_cli(["anonymize", "--db", clinic, "-t", "patients", "-k", "5", *FLAGS, "-o", "bad"])
    assert res.exit_code == 2
    (line,) = res.stderr.splitlines()
    assert line.startswith(f"Error: {said}")
    assert objects(clinic) == before


def test_no_error_shows_a_variables_value(clinic, env) -> None:
    """A password in SBC_SQL_DB is never printed, whichever variable is wrong."""
    env(SBC_SQL_DB="postgresql://analyst:hunter2-secret@127.0.0.1:1/clinic", SBC_SQL_WORKERS="hunter2-secret")
    res = run_cli(["anonymize", "-t", "patients", "-k", "5"])
    assert res.exit_code == 2 and "hunter2" not in res.stderr + res.stdout
    assert (
        res.stderr
        == "Error: SBC_SQL_WORKERS is not a whole number, which --workers takes; set it to one, or unset it\n"
    )
    env(SBC_SQL_WORKERS="", SBC_SQL_ATTACH="'hunter2-secret")  # an empty variable is not set
    res = run_cli(["anonymize", "-t", "patients", "-k", "5"])
    assert res.exit_code == 2 and "hunter2" not in res.stderr + res.stdout
    assert res.stderr.startswith("Error: SBC_SQL_ATTACH has a quote that is not closed")


def test_under_json_a_variables_error_is_a_document_too(clinic, env) -> None:
    env(SBC_SQL_JSON="1", SBC_SQL_ENGINE="sparky")
    res = run_cli(["anonymize", "--db", clinic, "-t", "patients", "-k", "5", *FLAGS])
    assert res.exit_code == 2
    doc = json.loads(res.stdout)
    assert doc["ok"] is False and doc["error"]["kind"] == "usage"
    assert doc["error"]["message"].startswith("SBC_SQL_ENGINE is not one of --engine's choices")


def test_help_is_shown_whatever_the_environment_holds(env) -> None:
    env(SBC_SQL_K="five")
    res = run_cli(["anonymize", "--help"])
    assert res.exit_code == 0 and "--config" in res.stdout
    res = run_cli(["--help"])
    assert res.exit_code == 0 and "SBC_SQL_<OPTION>" in res.stdout


def test_a_variable_of_another_commands_option_is_not_read(clinic, env) -> None:
    """SBC_SQL_PYTHON_PATH is install-sql's, so anonymize runs as it would without it;
    a variable is read by the command that has its option only."""
    env(SBC_SQL_PYTHON_PATH="'unclosed", SBC_SQL_K="5", SBC_SQL_JSON="1", SBC_SQL_QUIET="1")
    got = summary(run_cli(["anonymize", "--db", clinic, "-t", "patients", *FLAGS, "-o", "other"]))
    assert got["k"] == 5
