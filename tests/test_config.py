"""--config FILE.toml: the file gives the same release as the flags, a flag given wins over
it, and a file that cannot be used is one Error: line with nothing written."""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import pytest
import typer.main
from helpers import run_cli
from test_cli import make_clinic

from sbc_sql import config
from sbc_sql.cli import app

FLAGS = ["-t", "patients", "-k", "5", "--qi", "age,zip,sex", "--sensitive", "diagnosis"]
FLAGS += ["--drop", "name,ssn", "--keep", "birth_date,nationality", "--weights", "age=2,zip=0.5"]
FILE = """\
table = "patients"
k = 5
quiet = true

[anonymize]
qi = ["age", "zip", "sex"]
sensitive = "diagnosis"
drop = ["name", "ssn"]
keep = ["birth_date", "nationality"]
weights = {age = 2, zip = 0.5}
json = true
"""


@pytest.fixture(scope="module")
def clinic(tmp_path_factory) -> Path:
    return make_clinic(tmp_path_factory.mktemp("config") / "clinic.duckdb")


def write(tmp_path: Path, text: str, name: str = "sbc.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def objects(db: Path) -> list[str]:
    with duckdb.connect(str(db), read_only=True) as con:
        return sorted(
            r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()
        ) + sorted(
            r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()
        )


def rows(db: Path, release: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(f"SELECT * EXCLUDE (eq_class) FROM {release}_view ORDER BY ALL").fetchall()


def same_run(a: dict, b: dict) -> None:
    drop = {"release", "view", "seconds"}
    assert {k: v for k, v in a.items() if k not in drop} == {k: v for k, v in b.items() if k not in drop}


def test_a_config_gives_the_release_the_flags_give(clinic, tmp_path) -> None:
    by_flags = run_cli(["anonymize", "--db", clinic, *FLAGS, "-o", "by_flags", "--json", "-q"])
    assert by_flags.exit_code == 0, by_flags.stderr
    by_file = run_cli(["anonymize", "--config", write(tmp_path, FILE), "--db", clinic, "-o", "by_file"])
    assert by_file.exit_code == 0, by_file.stderr
    assert all(line.startswith("warning: ") for line in by_file.stderr.splitlines())  # quiet = true
    same_run(json.loads(by_flags.stdout), json.loads(by_file.stdout))
    assert rows(clinic, "by_flags") == rows(clinic, "by_file")


def test_a_flag_given_wins_over_the_file_and_a_table_over_the_top(clinic, tmp_path) -> None:
    text = FILE.replace("[anonymize]", 'output = "top"\n[anonymize]\noutput = "from_table"')
    path = write(tmp_path, text)
    res = run_cli(
        [
            "anonymize",
            "--config",
            path,
            "--db",
            clinic,
            "-k",
            "8",
            "--qi",
            "age,zip",
            "--keep",
            "birth_date,sex,nationality",
        ]
    )
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)
    assert (doc["k"], doc["release"], sorted(doc["ncp"])) == (8, "from_table", ["age", "zip"])
    # a switch from the file: replace = true lets the same run write over its release
    again = write(tmp_path, text.replace("quiet = true", "quiet = true\nreplace = true"), "again.toml")
    for _ in range(2):
        res = run_cli(["anonymize", "--config", again, "--db", clinic, "-o", "again"])
        assert res.exit_code == 0, res.stderr
        assert json.loads(res.stdout)["release"] == "again"


def test_shared_keys_serve_every_command_that_has_them(clinic, tmp_path) -> None:
    path = write(
        tmp_path, FILE.replace("[anonymize]", f'db = "{clinic}"\noriginal = "patients"\n[anonymize]')
    )
    assert run_cli(["anonymize", "--config", path, "-o", "shared"]).exit_code == 0
    checked = run_cli(["verify", "--config", path, "--release", "shared"])  # k and db from the top
    assert checked.exit_code == 0, checked.stderr
    assert checked.stdout.startswith("ok: 'shared' is 5-anonymous")
    measured = run_cli(["measure", "--config", path, "--release", "shared", "--json"])
    assert json.loads(measured.stdout)["classes"] >= 1
    compared = write(
        tmp_path,
        f'db = "{clinic}"\ntable = "patients"\n[compare]\nk = [5, 10]\nalgorithms = "mondrian"\n'
        'qi = ["age", "zip"]\ndrop = ["name", "ssn"]\nkeep = ["birth_date", "sex", "nationality"]\n'
        'sensitive = ["diagnosis"]\njson = true\n',
        "compare.toml",
    )
    res = run_cli(["compare", "--config", compared])
    assert res.exit_code == 0, res.stderr
    assert [r["k"] for r in json.loads(res.stdout)["rows"]] == [5, 10]


def test_every_command_takes_config_and_every_option_is_a_key() -> None:
    group = typer.main.get_command(app)
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        assert any("--config" in p.opts for p in command.params), name
        keys = config.settings(command.params)
        longs = {o[2:] for p in command.params for o in p.opts[:2] if o.startswith("--")} - {"config"}
        assert longs <= set(keys), (name, longs - set(keys))


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("k = 5\nqi = [age]\n", "sbc.toml: line 2, column 7: not valid TOML"),
        (
            "k = 5\n[anonymize]\nmax_suppresion = 0.1\n",
            "[anonymize] has no key 'max_suppresion' (did you "
            "mean 'max-suppression'?); the keys of anonymize: aggregate, aggregate-categorical, algorithm",
        ),
        ("kk = 5\n", "'kk' is no option of any command (did you mean 'k'?)"),
        ("[anonimize]\nk = 5\n", "[anonimize] is no command (did you mean 'anonymize'?)"),
        ('[anonymize]\nk = "five"\n', "[anonymize] k is a string; expected an integer"),
        ("k = 5.5\n", "k is a float; expected an integer"),
        ("[anonymize]\nreplace = 1\n", "replace is an integer; expected a boolean (true or false)"),
        ("[anonymize]\nqi = true\n", "qi is a boolean; expected a string, or an array of them"),
        ("[anonymize]\nweights = [[1]]\n", "weights is an array; expected a string"),
        ('[anonymize]\nalgorithm = "nope"\n', "algorithm 'nope' is not one of sbca, sbca-paper"),
        ("[verify]\ndrop = []\n", "[verify] has no key 'drop'"),  # another command's table is checked too
    ],
)
def test_a_bad_file_is_one_error_line_and_nothing_written(clinic, tmp_path, text, said) -> None:
    before = objects(clinic)
    res = run_cli(
        ["anonymize", "--config", write(tmp_path, text), "--db", clinic, "-t", "patients", "-o", "x"]
    )
    assert res.exit_code == 2
    (line,) = res.stderr.splitlines()
    assert line.startswith("Error: ") and said in line, line
    assert str(tmp_path / "sbc.toml") in line
    assert res.stdout == "" and objects(clinic) == before


def test_a_missing_file_and_an_error_under_json(clinic, tmp_path) -> None:
    res = run_cli(["profile", "--config", tmp_path / "none.toml", "--db", clinic, "-t", "patients"])
    assert res.exit_code == 2
    assert (
        res.stderr.strip()
        == f"Error: --config {tmp_path / 'none.toml'}: no such file; give the path of a TOML file"
    )
    res = run_cli(["anonymize", "--config", write(tmp_path, "kk = 1\n"), "--db", clinic, "--json"])
    assert res.exit_code == 2
    doc = json.loads(res.stdout)
    assert doc["ok"] is False and doc["error"]["kind"] == "config" and "'kk'" in doc["error"]["message"]


def test_a_password_in_the_file_is_never_printed(tmp_path) -> None:
    url = "postgresql://someone:s3cret-pw@127.0.0.1:1/nowhere"
    bad = write(tmp_path, f'db = "{url}"\n[profile]\ntable = 5.5\nqi = {{a = [1]}}\n')
    res = run_cli(["profile", "--config", bad])
    assert res.exit_code == 2 and "s3cret" not in res.stdout + res.stderr
    good = write(tmp_path, f'db = "{url}"\n[profile]\ntable = "t"\njson = true\n', "good.toml")
    res = run_cli(["profile", "--config", good])
    assert res.exit_code == 1, res.stderr
    assert "s3cret" not in res.stdout + res.stderr
    assert json.loads(res.stdout)["error"]["kind"] in ("engine", "input")


def test_the_options_pages_example_file_runs(clinic, tmp_path, monkeypatch) -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "options.md").read_text()
    example = re.search(r"## Config file.*?```toml\n(.*?)```", page, re.S)
    assert example is not None
    monkeypatch.chdir(tmp_path)  # the example's out-file is written beside it
    path = write(tmp_path, example.group(1).replace('"clinic.duckdb"', json.dumps(str(clinic))))
    made = run_cli(["anonymize", "--config", path, "-q"])
    assert made.exit_code == 0, made.stderr
    doc = json.loads(made.stdout)
    assert (doc["release"], doc["k"], doc["criteria"]["asked"]["l_diversity"]) == ("patients_public", 10, 3)
    assert (tmp_path / "patients_public.parquet").exists()
    checked = run_cli(["verify", "--config", path])
    assert checked.exit_code == 0, checked.stderr
    assert "10-anonymous, distinct l-diversity" in checked.stdout
