"""``--config FILE.toml``: a command's options read from a file, for jobs that run the same
release again (an ETL step, a scheduled job).

The file sets any option of a command by its long name without the dashes (``k = 10``,
``qi = ["age", "zip"]``, ``max-suppression = 0.05``, ``json = true``): keys at the top level
are shared by every command that has that option, and a table named as a command
(``[anonymize]``, ``[suggest-k]``) holds keys for that command alone, which win over the top
level's. A flag given on the command line wins over both. Nothing here names an option: the
keys are read off the command's own options, so an option added to a command is settable
in the file with no change here.

Values take their TOML type: booleans for switches, integers and floats for numbers, strings
for the rest; an array is the repeated flag (``attach = ["a.duckdb", "b.duckdb"]``) or, for
an option that takes one comma-separated value, that value (``k = [2, 5, 10]`` for compare's
``-k 2,5,10``); a table is the ``name=value`` form (``weights = {age = 2}`` for ``--weights
age=2``, ``spark-conf = {"spark.driver.memory" = "4g"}`` for ``--spark-conf
spark.driver.memory=4g``).

A file that cannot be used is one error naming the file and what is wrong with it: the
line of a TOML syntax error, an unknown key (with the command's keys and the closest one),
a value of the wrong type (its type and the one expected). No message quotes a value but a
choice's, so a ``db`` URL with a password in the file is never printed.
"""

from __future__ import annotations

import difflib
import enum
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args, get_origin

#: what a TOML value is called in messages
_TOML_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "a boolean"),
    (int, "an integer"),
    (float, "a float"),
    (str, "a string"),
    (list, "an array"),
    (dict, "a table"),
)


class ConfigError(Exception):
    """The file named by --config cannot be used; the message names the file and what is
    wrong, never a value it holds."""


@dataclass(frozen=True)
class Setting:
    """One option of a command, as the file names it."""

    key: str  # the long flag without its dashes: 'max-suppression', 'json'
    param: str  # the command function's parameter: 'max_suppression', 'as_json'
    kind: type  # bool, int, float, str or an enum class
    multiple: bool  # a repeatable flag (a list)


def settings(params: Iterable[Any]) -> dict[str, Setting]:
    """The file's keys of a command: every option with a long name that reaches the
    command (not --help, not --config itself)."""
    out: dict[str, Setting] = {}
    for p in params:
        longs = [o for o in getattr(p, "opts", ()) if o.startswith("--")]
        if not longs or not getattr(p, "expose_value", False) or p.name is None:
            continue
        kind, multiple = _kind(p)
        out[longs[0][2:]] = Setting(longs[0][2:], p.name, kind, multiple)
    return out


def _kind(param: Any) -> tuple[type, bool]:
    """(scalar type, repeatable) of an option: from typer's annotation where there is one,
    else from click's flag and type."""
    descriptor = getattr(param, "type_descriptor", None)
    annotation = getattr(descriptor, "annotation", None)
    multiple = bool(getattr(param, "multiple", False))
    if annotation is not None:
        if get_origin(annotation) is list:
            (annotation,) = get_args(annotation)
        if isinstance(annotation, type):
            return annotation, multiple
    if getattr(param, "is_flag", False):
        return bool, multiple
    name = getattr(getattr(param, "type", None), "name", "")
    return {"integer": int, "float": float, "boolean": bool}.get(name, str), multiple


def read(path: str) -> dict[str, Any]:
    """The file parsed; ConfigError for a file that is missing, unreadable or not TOML."""
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"--config {path}: no such file; give the path of a TOML file") from None
    except IsADirectoryError:
        raise ConfigError(f"--config {path}: is a folder; give the path of a TOML file") from None
    except OSError as err:
        raise ConfigError(f"--config {path}: cannot be read ({err.strerror})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"--config {path}: is not UTF-8 text; save it as UTF-8") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        # tomllib's message is a description and '(at line L, column C)', never the text
        message = str(err)
        where = re.search(r"\(at line (\d+), column (\d+)\)", message)
        what = re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", message)
        place = f"line {where.group(1)}, column {where.group(2)}" if where else "at its end"
        raise ConfigError(
            f"{path}: {place}: not valid TOML ({what[:1].lower() + what[1:]}); fix the file's syntax"
        ) from None


def asks_json(path: str, command: str) -> bool:
    """Whether a file that cannot be used still says ``json = true`` for ``command`` (so
    that its error is printed as a JSON document): False when it cannot be read at all."""
    try:
        doc = read(path)
    except ConfigError:
        return False
    section = doc.get(command)
    value = section.get("json", doc.get("json")) if isinstance(section, dict) else doc.get("json")
    return value is True


def default_map(path: str, command: str, commands: Mapping[str, Mapping[str, Setting]]) -> dict[str, Any]:
    """The values the file gives ``command``, keyed by parameter name (click's default_map),
    the command's table over the top level. ``commands`` holds every command's settings, so
    that a key or table no command knows is an error whichever command runs."""
    doc = read(path)
    shared: dict[str, Any] = {}
    sections: dict[str, dict[str, Any]] = {}
    everywhere = {key for keys in commands.values() for key in keys}
    for key, value in doc.items():
        if key in commands and isinstance(value, dict):
            sections[key] = value
        elif key in everywhere:
            shared[key] = value
        elif isinstance(value, dict):
            raise ConfigError(
                f"{path}: [{key}] is no command{_closest(key, commands)}; a table is named as a "
                f"command: {', '.join(f'[{c}]' for c in sorted(commands))}"
            )
        else:
            raise ConfigError(
                f"{path}: '{key}' is no option of any command{_closest(key, everywhere)}; the keys "
                f"are the options' long names without dashes, e.g. k, qi, max-suppression"
            )
    for name, section in sections.items():  # every table checked, not only this command's
        for key in section:
            if key not in commands[name]:
                raise ConfigError(
                    f"{path}: [{name}] has no key '{key}'{_closest(key, commands[name])}; the keys "
                    f"of {name}: {', '.join(sorted(commands[name]))}"
                )
    mine = commands[command]
    given = {key: value for key, value in shared.items() if key in mine}
    given.update(sections.get(command, {}))
    out: dict[str, Any] = {}
    for key, value in given.items():
        where = f"[{command}] " if key in sections.get(command, {}) else ""
        out[mine[key].param] = _value(path, f"{where}{key}", value, mine[key])
    return out


def _closest(key: str, names: Iterable[str]) -> str:
    match = difflib.get_close_matches(key.replace("_", "-"), sorted(names), n=1, cutoff=0.6)
    return f" (did you mean '{match[0]}'?)" if match else ""


def _named(value: Any) -> str:
    return next((name for kind, name in _TOML_TYPES if isinstance(value, kind)), "a date or time")


def _expected(setting: Setting) -> str:
    if issubclass(setting.kind, enum.Enum):
        scalar = "a string, one of " + ", ".join(str(m.value) for m in setting.kind)
    elif setting.kind is bool:
        scalar = "a boolean (true or false)"
    elif setting.kind is int:
        scalar = "an integer"
    elif setting.kind is float:
        scalar = "a number"
    else:
        scalar = "a string"
    return f"{scalar}, or an array of them" if setting.multiple else scalar


def _value(path: str, key: str, value: Any, setting: Setting) -> Any:
    """The file's value as the option takes it (the flag's string form where it has one)."""

    def wrong() -> ConfigError:
        return ConfigError(f"{path}: {key} is {_named(value)}; expected {_expected(setting)}")

    if setting.multiple:
        if isinstance(value, dict):
            return [f"{name}={_scalar(v, setting, wrong, key, path)}" for name, v in value.items()]
        items = value if isinstance(value, list) else [value]
        return [_scalar(v, setting, wrong, key, path) for v in items]
    if setting.kind is str and isinstance(value, dict):
        return ",".join(f"{name}={_scalar(v, setting, wrong, key, path)}" for name, v in value.items())
    if setting.kind is str and isinstance(value, list):
        return ",".join(_scalar(v, setting, wrong, key, path) for v in value)
    if setting.kind is bool:
        if not isinstance(value, bool):
            raise wrong()
        return value
    if setting.kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise wrong()
        return value
    if setting.kind is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise wrong()
        return float(value)
    return _scalar(value, setting, wrong, key, path)


def _scalar(value: Any, setting: Setting, wrong: Any, key: str, path: str) -> str:
    """One value in the flag's text: a string, or a number where the option reads text."""
    if isinstance(value, bool | list | dict):
        raise wrong()
    if issubclass(setting.kind, enum.Enum):
        choices = [str(m.value) for m in setting.kind]
        if not isinstance(value, str):
            raise wrong()
        if value not in choices:
            raise ConfigError(f"{path}: {key} '{value}' is not one of {', '.join(choices)}; pick one of them")
        return value
    if setting.kind in (int, float) and setting.multiple:
        if not isinstance(value, int | float):
            raise wrong()
        return str(value)
    if not isinstance(value, str | int | float):
        raise wrong()
    return str(value)
