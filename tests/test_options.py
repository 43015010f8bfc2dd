"""Every option is declared once, in sbc_sql/plan/catalogue.py: a test fails when an option
exists in one surface and not in another, unless the catalogue says why.

The surfaces: each command's options on the command line, their SBC_SQL_<OPTION>
environment variables, the keywords of the Python function it wraps, the keys of a --config
file, the arguments of the SQL functions
(sbc_sql.server.PARAMETERS, sbc_sql.install_sql.FUNCTIONS and the statements install-sql runs)
and the reference of every command's options in docs/options.md. Run this file as a script
(``PYTHONPATH=. python tests/test_options.py``) to rewrite that reference from the catalogue.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
import sys
from pathlib import Path

import pytest
import typer.main

from sbc_sql import config, install_sql, server
from sbc_sql.cli import app, environment
from sbc_sql.plan import catalogue
from sbc_sql.sql import templates

ROOT = Path(__file__).resolve().parent.parent
#: the page that holds the generated reference of every command's options, and the option table
OPTIONS_PAGE = ROOT / "docs" / "options.md"
#: the markers around the page's generated reference of every command's options
BEGIN = "<!-- options: generated from sbc_sql/plan/catalogue.py by python tests/test_options.py -->"
END = "<!-- end of options -->"

COMMANDS = list(catalogue.COMMANDS.values())


def clicks() -> dict[str, object]:
    return typer.main.get_command(app).commands  # type: ignore[attr-defined]


def api_keywords(path: str) -> list[str]:
    """The keywords of ``module:name``: a function's parameters, a dataclass's fields."""
    module, name = path.split(":")
    found = getattr(importlib.import_module(module), name)
    if dataclasses.is_dataclass(found):
        return [f.name for f in dataclasses.fields(found)]
    return list(inspect.signature(found).parameters)


def sql_declared() -> dict[str, list[tuple[str, str, str | None]]]:
    """Each function install-sql creates: its arguments as (name, type, default or None)."""
    text = "\n".join(install_sql.functions_sql(["/opt/sbc-sql"]))
    out = {}
    for name, arguments in re.findall(r"FUNCTION sbc\.(\w+)\((.*?)\) RETURNS", text, re.S):
        declared = []
        for argument in (a.strip() for a in arguments.split(",") if a.strip()):
            head, _, default = argument.partition(" DEFAULT ")
            word, kind = head.split(" ", 1)
            declared.append((word, kind, default or None))
        out[name] = declared
    return out


def sql_literal(option: catalogue.Option) -> str:
    """The option's default as install.sql writes it."""
    value = option.default
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"'{value}'"
    return repr(value)


def test_the_app_has_the_catalogues_commands_in_its_order():
    assert set(clicks()) == set(catalogue.COMMANDS)
    assert typer.main.get_command(app).list_commands(None) == list(catalogue.COMMANDS)  # type: ignore[attr-defined]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_the_command_line_takes_the_catalogues_options(command):
    params = [p for p in clicks()[command.name].params if p.name != "config"]  # type: ignore[attr-defined]
    assert [p.name for p in params] == [o.name for o in command.cli_options()]
    for param, option in zip(params, command.cli_options(), strict=True):
        flags = [f for decl in option.decls for f in decl.split("/")]
        assert [*param.opts, *param.secondary_opts] == flags, option.name
        assert param.help == option.help, option.name
        assert param.required == option.required, option.name
        assert bool(param.multiple) == option.multiple, option.name
        default = getattr(param.default, "value", param.default)
        assert default == (None if option.required else option.default), option.name
        if option.choices:
            assert [m.value for m in param.type_descriptor.annotation] == list(option.choices)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_the_config_file_takes_every_long_flag(command):
    keys = config.settings(clicks()[command.name].params)  # type: ignore[attr-defined]
    assert set(keys) == {o.long[2:] for o in command.cli_options()}
    for option in command.cli_options():
        assert keys[option.long[2:]].param == option.name


#: a value of each kind an option's variable takes, as the command then receives it
SAMPLES = {int: ("7", 7), float: ("0.25", 0.25), bool: ("yes", True), str: ("x", "x")}


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_the_environment_sets_every_option_but_those_said_not_to(command):
    """Each option on the command line has its variable, SBC_SQL_ and its long flag, read
    by the command, unless the catalogue says why not; a variable set of an option said not
    to be read is an error naming it."""
    readable = [o for o in command.cli_options() if not o.no_env]
    assert len({o.env for o in command.cli_options()}) == len(command.cli_options())
    environ, expected = {}, {}
    for option in readable:
        assert option.env == "SBC_SQL_" + option.long[2:].upper().replace("-", "_")
        text, value = (option.choices[-1], option.choices[-1]) if option.choices else SAMPLES[option.kind]
        environ[option.env] = f"{text} {text}" if option.multiple else text
        expected[option.name] = [value, value] if option.multiple else value
    assert environment.values(command.name, environ) == expected
    for option in command.cli_options():
        if option.no_env:
            with pytest.raises(environment.VariableError, match=rf"^{option.env} is set but never read: "):
                environment.values(command.name, {**environ, option.env: "x"})


def test_an_options_variable_says_the_same_in_every_command():
    """A variable read by one command is read by every command with that option; none is
    one of the other variables sbc-sql or its tests read."""
    by_variable: dict[str, set[str]] = {}
    for option in catalogue.OPTIONS:
        if option.no_cli:
            assert not option.no_env, f"{option.name}: not on the command line, so no variable to exclude"
            continue
        by_variable.setdefault(option.env, set()).add(option.no_env)
    assert all(len(reasons) == 1 for reasons in by_variable.values()), by_variable
    tests_own = {
        "SBC_SQL_REQUIRE_POSTGRES",
        "SBC_SQL_REQUIRE_SPARK",
        "SBC_SQL_REQUIRE_CHROMIUM",
        "SBC_SQL_REQUIRE_DBT",
        "SBC_SQL_TEST_DBT",
    }
    assert not set(by_variable) & {*catalogue.OTHER_VARIABLES, *tests_own, "SBC_SQL_PRINT_PINS"}


def test_every_variable_the_package_names_is_declared():
    """Every SBC_SQL_ name in the package's code is an option's variable or one of
    catalogue.OTHER_VARIABLES, which docs/options.md lists."""
    options = {o.env for o in catalogue.OPTIONS if not o.no_cli}
    named = set()
    for path in (ROOT / "sbc_sql").rglob("*.py"):
        named |= set(re.findall(r"\bSBC_SQL_[A-Z](?:[A-Z_]*[A-Z])?\b", path.read_text()))
    assert "SBC_SQL_KERNELS" in named
    assert named <= options | set(catalogue.OTHER_VARIABLES), sorted(
        named - options - set(catalogue.OTHER_VARIABLES)
    )
    for variable, meaning in catalogue.OTHER_VARIABLES.items():
        assert f"`{variable}`" in catalogue.markdown() and meaning in catalogue.markdown()


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_the_api_takes_what_the_catalogue_says(command):
    """The function a command wraps takes every option present in the API (through its
    options= argument where it has one), and nothing the catalogue does not declare."""
    own = api_keywords(command.api)
    inside = {k for path in command.api_options for k in api_keywords(path)}
    declared = {o.api_name for o in command.options if not o.no_api}
    for option in command.options:
        if option.no_api:
            assert option.api_name not in own, f"{option.name}: said not to be in {command.api}, and is"
        else:
            assert option.api_name in {*own, *inside}, f"{option.name}: not a keyword of {command.api}"
    assert set(own) <= declared, f"{command.api} takes {sorted(set(own) - declared)}, not in the catalogue"


def test_anonymize_takes_the_catalogues_keywords():
    from sbc_sql import anonymize

    declared = [o.api_name for o in catalogue.COMMANDS["anonymize"].options if not o.no_api]
    keywords = list(inspect.signature(anonymize).parameters)
    assert sorted(keywords) == sorted(declared)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_every_absence_has_a_reason_and_every_option_a_surface(command):
    for option in command.options:
        surfaces = ["cli", "env", "api"] + (["sql"] if command.sql else [])
        present = [s for s in surfaces if not option.absent(s)]
        assert present, f"{command.name} {option.name}: in no surface"
        assert option.help, option.name
        assert command.name in option.commands


def test_the_sql_functions_take_the_catalogues_arguments():
    """install.sql is one pair of functions whose arguments are left to the catalogue, which
    install-sql writes in for each SQL function: names, types, defaults and order."""
    template = (templates.sql_root() / "functions" / "install.sql").read_text()
    assert re.findall(r"FUNCTION sbc\.(\w+)\(__ARGUMENTS__\)", template) == ["python___NAME__", "__NAME__"]
    every = sql_declared()
    prefix = install_sql.PYTHON_PREFIX
    declared = {name: arguments for name, arguments in every.items() if not name.startswith(prefix)}
    assert list(declared) == list(catalogue.SQL_FUNCTIONS) == list(server.PARAMETERS)
    # each SQL function's PL/Python function declares the arguments it is passed, alike
    python = {
        name.removeprefix(prefix): arguments for name, arguments in every.items() if name.startswith(prefix)
    }
    assert python == declared
    text = "\n".join(install_sql.functions_sql(["/opt/sbc-sql"]))
    for function, arguments in declared.items():
        passed = ", ".join(f"${at}" for at in range(1, len(arguments) + 1))
        assert f"sbc.{prefix}{function}({passed});" in text, function
    assert catalogue.sql_parameters() == server.PARAMETERS
    assert catalogue.sql_signatures() == install_sql.FUNCTIONS
    assert tuple(prefix + f for f in install_sql.FUNCTIONS) == install_sql.PYTHON_FUNCTIONS
    for command in COMMANDS:
        if command.sql is None:
            continue
        present = {o.sql_name for o in command.options if not o.no_sql}
        assert set(command.sql_arguments) == present, command.name
        assert [name for name, _, _ in declared[command.sql]] == list(command.sql_arguments)
        for name, kind, default in declared[command.sql]:
            option = catalogue.sql_argument(command, name)
            assert kind == catalogue.sql_type(option), (command.name, name)
            assert default == (None if option.required else sql_literal(option)), (command.name, name)


#: an option's line in --help: its flags, then what its value looks like (none for a flag)
OPTION_LINE = re.compile(r"^  ((?:-\w, )?--[\w-]+(?: / --[\w-]+)?)(?: (\S+))?(?:  |$)")
#: a readable value: words in capitals with the marks that shape them (FILE[:ALIAS],
#: KEY=VALUE, FILE.toml), or the choices, <a|b>
READABLE = re.compile(r"[A-Z][A-Z_]*(?:[=:\[\].][A-Z_]*(?:toml)?\]?)*|<[\w.-]+(?:\|[\w.-]+)*>")
#: what a Python type's name looks like in a metavar (<list[str]>, <str>, <int>, dict[...])
PYTHON_TYPE = re.compile(r"\b(?:str|int|float|bool|list|dict|tuple|set|None|NoneType|Path)\b|\w\[\w")


@pytest.mark.parametrize(
    "args", [[], *([name] for name in catalogue.COMMANDS)], ids=lambda a: " ".join(a) or "app"
)
def test_no_metavar_shows_a_python_type(cli, args):
    """Every value an option takes reads as a word in --help (TEXT, COLUMN=FILE, the
    choices), never as the Python type typer would show (<list[str]>, <str>)."""
    res = cli([*args, "--help"])
    assert res.exit_code == 0, res.stderr
    shown = {}
    for line in res.stdout.splitlines():
        found = OPTION_LINE.match(line)
        if found is not None:
            shown[found.group(1)] = found.group(2)
    assert "--help" in " ".join(shown) and len(shown) > (2 if not args else 3)
    for flags, value in shown.items():
        if value is None:
            continue
        assert not PYTHON_TYPE.search(value), (args, flags, value)
        assert READABLE.fullmatch(value), (args, flags, value)
    if args:
        declared = {o.long for o in catalogue.COMMANDS[args[0]].cli_options() if o.kind is not bool}
        named = {flags.split(", ")[-1].split(" / ")[0] for flags, value in shown.items() if value}
        assert declared <= named, declared - named


def test_the_criteria_are_one_block():
    """The privacy criteria's options come together wherever a command takes them."""
    block = [o.name for o in catalogue.CRITERIA_OPTIONS]
    for command in COMMANDS:
        names = [o.name for o in command.options]
        if block[0] in names:
            at = names.index(block[0])
            assert names[at : at + len(block)] == block, command.name


def reference_section(text: str) -> str:
    assert BEGIN in text and END in text, "docs/options.md has lost its markers of the options' reference"
    return text.split(BEGIN, 1)[1].split(END, 1)[0]


def test_the_options_page_lists_every_option_of_every_command():
    assert reference_section(OPTIONS_PAGE.read_text()) == "\n" + catalogue.markdown() + "\n", (
        "docs/options.md's options differ from sbc_sql/plan/catalogue.py: "
        "run PYTHONPATH=. python tests/test_options.py"
    )


def test_every_flag_the_option_table_names_is_an_option():
    text = OPTIONS_PAGE.read_text()
    table = text.split("## Options", 1)[1].split("\n\n", 2)[1]
    flags = set(re.findall(r"`(-{1,2}[a-z][a-z-]*)", table))
    known = {f for o in catalogue.OPTIONS if not o.no_cli for d in o.decls for f in d.split("/")}
    assert flags - {"--config"} <= known, sorted(flags - known)


def rewrite_reference() -> None:
    text = OPTIONS_PAGE.read_text()
    old = reference_section(text)
    OPTIONS_PAGE.write_text(text.replace(BEGIN + old + END, BEGIN + "\n" + catalogue.markdown() + "\n" + END))


if __name__ == "__main__":
    rewrite_reference()
    sys.exit(0)
