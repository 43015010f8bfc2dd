"""The command line's plumbing: the app, its commands' class and how every way a command
can end becomes what the user reads.

Every command runs inside :func:`reported`, the one place where what went wrong becomes
what the user reads: an sbc-sql error is one ``Error:`` line and exit code 1; Ctrl-C or
SIGTERM (raised as KeyboardInterrupt by the entry point, ``__main__.py``) is one line and
exit code 130, once the run has rolled back and removed what it made; any other exception
is one ``Error: internal error`` line naming its type, never its message (which may quote
the data). ``--debug`` adds the stack. Exit codes: 0 success, 1 error, 2 usage, 130
interrupted. Under ``--json`` each of those ends is also a JSON document on stdout
(:mod:`sbc_sql.documents`).

Every command is an :class:`SbcCommand`: it takes ``--config FILE.toml``, whose values
become the command's defaults (:mod:`sbc_sql.config`), so a flag given wins over the file;
beneath the file's, the defaults the environment's ``SBC_SQL_<OPTION>`` variables give
(:mod:`.environment`). Which value wins: a flag, the file, the environment, the default.

The options are declared in :mod:`sbc_sql.plan.catalogue` (:mod:`.options` turns them into
typer's parameters), which imports nothing heavy; a command imports what it runs (DuckDB,
Arrow, numpy, sqlglot, the kernels) in its body, inside :func:`reported`, so ``--help`` and
``--version`` load none of it and Ctrl-C while a command loads is one line like any other.
"""

# No `from __future__ import annotations` in the command line: typer reads every command's
# annotations at each start, and postponed ones are strings it would compile and evaluate
# anew; these are evaluated once, at import.
import contextlib
import enum
import functools
import gc
import os
import re
import traceback
import typing
from collections.abc import Iterator
from typing import Annotated, Any

import typer
import typer.core
import typer.main

from .. import documents
from ..errors import INTERRUPTED, EngineError, ResourceError, SbcError, VerificationError
from ..plan import catalogue
from ..version import version_line

#: the run's switches that are not a command's options: --debug (the app's callback), the
#: command running and whether it answers in JSON (set as its options are read)
_settings: dict[str, Any] = {"debug": False, "command": None, "json": False, "own_process": False}

#: click's base of every usage error, from the click that this typer runs on
_ClickException: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"
)


class OneLineError(typer.BadParameter):
    """A usage error told in one ``Error:`` line (no usage text), exit code 2."""

    def format_message(self) -> str:
        return self.message

    def show(self, file: Any = None) -> None:
        typer.echo(f"Error: {self.message}", err=True)


class ConfigFileError(OneLineError):
    """The --config file cannot be used."""


class VariableValueError(OneLineError):
    """An option's environment variable cannot be used."""


def _read_environment(ctx: typer.Context) -> None:
    """The values of the command's ``SBC_SQL_<OPTION>`` variables become its defaults,
    beneath a --config file's."""
    from . import environment

    try:
        given = environment.values(str(ctx.command.name), os.environ)
    except environment.VariableError as err:
        _settings["json"] = _settings["json"] or environment.asks_json(str(ctx.command.name), os.environ)
        raise VariableValueError(str(err)) from None
    ctx.default_map = {**given, **(ctx.default_map or {})}
    if given.get("as_json") is True:
        _settings["json"] = True


def _load_config(ctx: typer.Context, value: str | None) -> None:
    """--config's callback, run before the other options are read (whether or not --config
    is given, after --help): the environment's values and over them the file's become the
    command's defaults (click's default_map), so a flag given wins over both."""
    _read_environment(ctx)
    if value is None:
        return
    from .. import config  # TOML and the checks of its keys, loaded only for a --config

    group = ctx.parent.command if ctx.parent is not None else None
    commands = getattr(group, "commands", None) or {ctx.command.name: ctx.command}
    known = {name: config.settings(command.params) for name, command in commands.items()}
    try:
        given = config.default_map(value, str(ctx.command.name), known)
    except config.ConfigError as err:
        _settings["json"] = _settings["json"] or config.asks_json(value, str(ctx.command.name))
        raise ConfigFileError(str(err)) from None
    ctx.default_map = {**(ctx.default_map or {}), **given}
    if given.get("as_json") is True:
        _settings["json"] = True


@functools.cache
def _config_option() -> Any:
    """The --config option every command takes, made by typer as any other option, once:
    the commands share it (a click option keeps no state of its own between runs)."""
    holder = typer.Typer()

    @holder.command()
    def _holder(
        config: Annotated[
            str | None,
            typer.Option(
                "--config",
                metavar="FILE.toml",
                is_eager=True,
                expose_value=False,
                callback=_load_config,
                help="Read options from a TOML file: keys named as the long options (k = 5, "
                'qi = ["age", "zip"]), shared at the top or in a [command] table; flags given '
                "win over the file, the file over SBC_SQL_<OPTION> variables. E.g. --config sbc.toml.",
            ),
        ] = None,
    ) -> None:
        pass

    return typer.main.get_command(holder).params[0]


#: a whole number or a decimal as written on a command line (no sign +, exponent or "_")
_DECIMAL = re.compile(r"-?(0|[1-9][0-9]{0,17})(\.[0-9]{1,17})?")
#: what _Coercion.quick cannot answer: typer's own coercion does
_TYPERS = object()


class _Coercion:
    """typer's coercion of one option's value, answered without typer where it is plain.

    typer (0.2x on) turns every value through a pydantic adapter; building the first one
    loads pydantic and costs about 80 ms of every run (two of the app's own options, the
    completion ones, are coerced even when not given). A value it would give back as it is
    (None, a default or a --config value already of the option's type, a str for a str
    option, an enum's own value) or as a plain ``int()``/``float()`` of a decimal is
    answered here; anything else (a bad value among them, so every error a user reads) goes
    to typer's own coercion, built on first need. tests/test_startup.py holds the two equal.
    """

    def __init__(self, param: Any) -> None:
        self.param = param
        self.typers: Any = None

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        quick = self.quick(value, ctx)
        if quick is not _TYPERS:
            return quick
        if self.typers is None:
            from typer._coercion import build_runtime_param

            self.typers = build_runtime_param(param.type_descriptor)
        return self.typers.coerce(value, param=param, ctx=ctx)

    def quick(self, value: Any, ctx: Any) -> Any:
        param = self.param
        descriptor = param.type_descriptor
        multiple = param.multiple or param.nargs == -1
        if value is None:
            return () if multiple else None
        info = descriptor.parameter_info
        if info.parser is not None or descriptor.is_ranged or descriptor.is_path or descriptor.is_file:
            return _TYPERS
        kind = descriptor.annotation
        if multiple:
            if typing.get_origin(kind) is not list or not isinstance(value, (list, tuple)):
                return _TYPERS
            (kind,) = typing.get_args(kind)
            items = [self.one(kind, item, info, ctx) for item in value]
            return _TYPERS if any(item is _TYPERS for item in items) else items
        return self.one(kind, value, info, ctx)

    @staticmethod
    def one(kind: Any, value: Any, info: Any, ctx: Any) -> Any:
        if kind in (str, int, float) and type(value) is kind:
            return value
        if kind in (int, float) and isinstance(value, str) and _DECIMAL.fullmatch(value):
            return kind(value) if kind is float or "." not in value else _TYPERS
        if isinstance(kind, type) and issubclass(kind, enum.Enum):
            if isinstance(value, kind):
                return value
            plain = info.case_sensitive and getattr(ctx, "token_normalize_func", None) is None
            if plain and isinstance(value, str):
                return next((m for m in kind if m.value == value), _TYPERS)
        return _TYPERS


def _coerce_plainly(params: Any) -> None:
    """Give each of typer's options a :class:`_Coercion` (a typer without runtime coercion,
    before 0.2x, keeps its own: its options have none to replace)."""
    for param in params:
        if getattr(param, "_runtime_param", False) is None and hasattr(param, "type_descriptor"):
            param._runtime_param = _Coercion(param)


class SbcGroup(typer.core.TyperGroup):
    """The app: its own options (--version, --debug, --help and typer's completion ones)
    coerced by :class:`_Coercion`, its commands listed in the catalogue's order."""

    def parse_args(self, ctx: Any, args: Any) -> Any:
        _coerce_plainly(self.get_params(ctx))
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: Any) -> list[str]:
        listed = super().list_commands(ctx)
        order = {name: at for at, name in enumerate(catalogue.COMMANDS)}
        return sorted(listed, key=lambda name: order.get(name, len(order)))


class SbcCommand(typer.core.TyperCommand):
    """Every command: --config added to its options, its options coerced by
    :class:`_Coercion`, and under --json an error that stops it before its body runs (a
    usage or config error) printed as a JSON document too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.params.append(_config_option())

    def parse_args(self, ctx: Any, args: Any) -> Any:
        _coerce_plainly(self.get_params(ctx))
        return super().parse_args(ctx, args)

    def make_context(self, info_name: Any, args: Any, parent: Any = None, **extra: Any) -> Any:
        _settings.update(command=self.name, json="--json" in args)
        try:
            return super().make_context(info_name, args, parent, **extra)
        except _ClickException as err:
            _usage_json(err)
            raise

    def invoke(self, ctx: Any) -> Any:
        _settings["json"] = bool(ctx.params.get("as_json"))
        try:
            return super().invoke(ctx)
        except _ClickException as err:
            _usage_json(err)
            raise


def _usage_json(err: Exception) -> None:
    kind = "config" if isinstance(err, ConfigFileError) else "usage"  # a variable's: usage
    message: str = err.format_message()  # type: ignore[attr-defined]
    _emit_error(kind, message)


def _emit_error(kind: str, message: str, **fields: Any) -> None:
    """Under --json, an error as the command's JSON document on stdout (its Error: line
    goes to stderr as always)."""
    command = _settings["command"]
    if _settings["json"] and command in documents.VERSIONS:
        typer.echo(documents.dumps(documents.error(command, kind, message, **fields)))


class SbcTyper(typer.Typer):
    """typer.Typer whose commands are :class:`SbcCommand`, so that a command added later
    takes --config and answers errors in JSON with no code of its own."""

    def command(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("cls", SbcCommand)
        return super().command(*args, **kwargs)


app = SbcTyper(
    cls=SbcGroup,
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    help="k-anonymize tables in DuckDB, PostgreSQL or Apache Spark with Similarity-Based Clustering (SBCA).",
    epilog=(
        "Exit codes: 0 success; 1 an error (bad input, nothing written); 2 a usage error; "
        "3 verify: the release fails verification; 130 interrupted (nothing written). Every "
        "option but those naming the data or overwriting it can be set by a variable "
        "SBC_SQL_<OPTION> (SBC_SQL_DB, SBC_SQL_K, SBC_SQL_MAX_SUPPRESSION); a flag wins over "
        "--config, --config over the environment."
    ),
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(version_line())
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
    debug: Annotated[
        bool,
        typer.Option(
            "--debug",
            hidden=True,
            help="Print the stack of any error (an internal error's message too, which may quote data).",
        ),
    ] = False,
) -> None:
    _settings["debug"] = debug


def own_process() -> None:
    """The app runs in the command's own process (``__main__.py`` says so; a library caller
    or a test that invokes the app in its own process does not): :func:`loading` may freeze."""
    _settings["own_process"] = True


@contextlib.contextmanager
def loading() -> Iterator[None]:
    """A command imports what it runs inside: DuckDB, Arrow, numpy, sqlglot and the stages,
    some 80,000 objects (their classes, functions and tables) that live until the process
    ends. In the command's own process the garbage collector does not run while they load
    (it would walk them again and again and free none), and they are then left out of every
    later pass and out of the passes at exit (``gc.freeze``); what the run itself makes is
    collected as before. In any other process this does nothing: an object frozen there
    would never be collected."""
    if not _settings["own_process"]:
        yield
        return
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was:
            gc.enable()


@contextlib.contextmanager
def reported(interrupted: str = INTERRUPTED) -> Iterator[None]:
    """The command's body inside: every way it can end becomes one line and an exit code
    (see the module docstring); ``interrupted`` is what Ctrl-C says."""
    try:
        yield
    except (typer.Exit, typer.Abort):
        raise
    except SbcError as err:
        _stack()
        typer.echo(f"Error: {err}", err=True)
        _emit_error(_kind(err), str(err))
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        _stack()
        typer.echo(interrupted, err=True)
        _emit_error("interrupted", interrupted)
        raise typer.Exit(130) from None
    except Exception as err:
        _stack()
        message = (
            f"internal error: {type(err).__name__}; rerun with --debug to see where it "
            "happened (its message is not shown, as it may quote the data)"
        )
        typer.echo(f"Error: {message}", err=True)
        _emit_error("internal", message)
        raise typer.Exit(1) from None


def _kind(err: SbcError) -> str:
    """An sbc-sql error's kind in a JSON error document."""
    for cls, kind in (
        (VerificationError, "verification"),
        (ResourceError, "resource"),
        (EngineError, "engine"),
    ):
        if isinstance(err, cls):
            return kind
    return "input"


def _stack() -> None:
    if _settings["debug"]:
        traceback.print_exc()
