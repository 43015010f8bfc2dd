"""Options given as environment variables: ``SBC_SQL_<LONG OPTION>`` (``SBC_SQL_DB``,
``SBC_SQL_ENGINE``, ``SBC_SQL_K``, ``SBC_SQL_MAX_SUPPRESSION``), for jobs whose scheduler
or container hands them their settings, a database URL with its password among them.

Nothing here names an option: each command reads the variables of its options in
:mod:`sbc_sql.plan.catalogue` (``Option.env``), but those the catalogue excludes with a
reason (``Option.no_env``: the table a command reads, the names it writes, the switches
that overwrite). The values become the command's defaults beneath a ``--config`` file's
(:mod:`sbc_sql.cli.app`), so which value wins, first to last: a flag, the --config file,
the environment, the option's default. An empty variable is not set.

A value takes the option's type: a whole number, a number, a switch (1/0, true/false,
yes/no, on/off) or one of the option's choices; a repeatable option's variable holds its
values separated by spaces, quoted as in a shell where one has spaces
(``SBC_SQL_ATTACH="a.duckdb 'my ward.duckdb:ward'"``); a column option also takes them
comma-separated as its flag does. A value that is not of the option's type, or a variable
of an excluded option that is set, is one :class:`VariableError` naming the variable, what
is wrong and the fix, never the value (it may hold a password).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

from ..plan import catalogue

#: a switch's values, either way, as the variable may spell them (any case)
TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")


class VariableError(Exception):
    """An option's environment variable cannot be used; the message names the variable,
    what is wrong with it and the fix, never its value."""


def variables(command: str) -> dict[str, catalogue.Option]:
    """Every variable ``command`` knows: those of its options on the command line,
    excluded ones included (their being set is an error)."""
    declared = catalogue.COMMANDS.get(command)
    return {o.env: o for o in declared.cli_options()} if declared is not None else {}


def values(command: str, environ: Mapping[str, str]) -> dict[str, Any]:
    """The values ``environ`` gives ``command``'s options, keyed by parameter name (click's
    default_map) and typed as the option takes them; VariableError for the first variable
    that cannot be used, in the order the command lists its options."""
    out: dict[str, Any] = {}
    for name, option in variables(command).items():
        text = environ.get(name, "")
        if not text:
            continue
        if option.no_env:
            raise VariableError(
                f"{name} is set but never read: {option.long} {option.no_env}; give {option.long} "
                f"on the command line (or {option.long[2:]} in a --config file) and unset {name}"
            )
        out[option.name] = _value(name, option, text)
    return out


def asks_json(command: str, environ: Mapping[str, str]) -> bool:
    """Whether the environment asks ``command`` for JSON (``SBC_SQL_JSON=1``), so that an
    error in another variable is printed as a JSON document too."""
    option = variables(command).get(catalogue.ENV_PREFIX + "JSON")
    return option is not None and environ.get(option.env, "").strip().lower() in TRUE


def _value(name: str, option: catalogue.Option, text: str) -> Any:
    if not option.multiple:
        return _one(name, option, text.strip())
    try:
        items = shlex.split(text)
    except ValueError:
        raise VariableError(
            f"{name} has a quote that is not closed; separate {option.long}'s values with spaces "
            "and quote a value that has spaces, as in a shell, or unset it"
        ) from None
    return [_one(name, option, item, many=True) for item in items]


def _one(name: str, option: catalogue.Option, text: str, many: bool = False) -> Any:
    """One value as the option takes it."""
    subject = f"{name} holds a value that is" if many else f"{name} is"
    if option.kind is bool:
        if text.lower() in TRUE:
            return True
        if text.lower() in FALSE:
            return False
        raise VariableError(
            f"{subject} not a switch's value, which {option.long} is; set it to 1 or 0 "
            "(true/false, yes/no, on/off), or unset it"
        )
    if option.choices:
        if text in option.choices:
            return text
        raise VariableError(
            f"{subject} not one of {option.long}'s choices ({', '.join(option.choices)}); set it to "
            "one of them, or unset it"
        )
    if option.kind is int:
        try:
            return int(text)
        except ValueError:
            raise VariableError(
                f"{subject} not a whole number, which {option.long} takes; set it to one, or unset it"
            ) from None
    if option.kind is float:
        try:
            return float(text)
        except ValueError:
            raise VariableError(
                f"{subject} not a number, which {option.long} takes; set it to one (e.g. 0.05), or unset it"
            ) from None
    return text
