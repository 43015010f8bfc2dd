"""Each command's typer parameters, made from its options in :mod:`sbc_sql.plan.catalogue`.

typer reads a command's parameters off ``inspect.signature`` of its function; :func:`command`
gives the function the signature the catalogue declares (each option's flags, type, default,
help and choices) and registers it on the app, so that no option is declared here. The
command's body receives the values as one namespace (``o.k``, ``o.qi``), a choice as its
name.
"""

import enum
import functools
import inspect
from collections.abc import Callable
from types import SimpleNamespace
from typing import Annotated, Any, TypedDict

import typer

from ..plan import catalogue
from .app import app

Body = Callable[[SimpleNamespace], None]


@functools.cache
def choice_type(name: str, names: tuple[str, ...]) -> Any:
    """The enum typer offers an option's choices as (one per option name and choices)."""
    title = "".join(part[:1].upper() + part[1:] for part in name.split("_"))
    return enum.Enum(title, {n: n for n in names}, type=str)


def parameter(option: catalogue.Option) -> inspect.Parameter:
    """The option as the command function's keyword, annotated as typer reads it."""
    kind: Any = choice_type(option.name, option.choices) if option.choices else option.kind
    if option.multiple:
        kind = list[kind]
    if not option.required and option.default is None:
        kind = kind | None
    settings: dict[str, Any] = {"help": option.help}
    if option.shown_metavar is not None:
        settings["metavar"] = option.shown_metavar
    if not option.show_default:
        settings["show_default"] = False
    default: Any = inspect.Parameter.empty if option.required else option.default
    if option.choices and default is not None and default is not inspect.Parameter.empty:
        default = kind[default]
    return inspect.Parameter(
        option.name,
        inspect.Parameter.KEYWORD_ONLY,
        default=default,
        annotation=Annotated[kind, typer.Option(*option.decls, **settings)],
    )


def command(name: str) -> Callable[[Body], Callable[..., None]]:
    """Register ``body`` as the command ``name``, its parameters the catalogue's options."""
    declared = catalogue.COMMANDS[name]

    def register(body: Body) -> Callable[..., None]:
        @functools.wraps(body)
        def run(**values: Any) -> None:
            body(
                SimpleNamespace(**{k: v.value if isinstance(v, enum.Enum) else v for k, v in values.items()})
            )

        params = [parameter(option) for option in declared.cli_options()]
        del run.__wrapped__  # typer reads the signature below, not the body's
        run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in params}
        app.command(name)(run)
        return run

    return register


class Roles(TypedDict):
    qi: list[str]
    sensitive: list[str]
    drop: list[str]
    keep: list[str]
    allow_determinant: list[str]


def roles(o: SimpleNamespace) -> Roles:
    """The role flags as the API takes them (a flag not given: no column), with the kept
    columns let to determine a QI."""
    return {
        "qi": o.qi or [],
        "sensitive": o.sensitive or [],
        "drop": o.drop or [],
        "keep": o.keep or [],
        "allow_determinant": o.allow_determinant or [],
    }


def criteria(o: SimpleNamespace) -> dict[str, Any]:
    """The registered criteria's options given, as the API's keywords and
    :class:`~sbc_sql.privacy.criteria.Criteria` take them."""
    return {option.name: getattr(o, option.name) for option in catalogue.CRITERIA_OPTIONS}
