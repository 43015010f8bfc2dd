"""The sbc-sql command line (typer only: no SQL and no algorithm here).

Every command runs inside :func:`reported`, the one place where what went wrong becomes
what the user reads: an sbc-sql error is one ``Error:`` line and exit code 1; Ctrl-C or
SIGTERM (raised as KeyboardInterrupt by the entry point, ``__main__.py``) is one line and
exit code 130, once the run has rolled back and removed what it made; any other exception
is one ``Error: internal error`` line naming its type, never its message (which may quote
the data). ``--debug`` adds the stack. Exit codes: 0 success, 1 error, 2 usage, 130
interrupted. Under ``--json`` each of those ends is also a JSON document on stdout
(:mod:`sbc_sql.documents`).

Every command is an :class:`SbcCommand`: it takes ``--config FILE.toml``, whose values
become the command's defaults (:mod:`sbc_sql.config`), so a flag given wins over the file.

The options are declared from :mod:`sbc_sql.choices`, which imports nothing; a command
imports what it runs (DuckDB, Arrow, numpy, sqlglot, the kernels) in its body, inside
:func:`reported`, so ``--help`` and ``--version`` load none of it and Ctrl-C while a command
loads is one line like any other.
"""

# No `from __future__ import annotations` here: typer reads every command's annotations at
# each start, and postponed ones are strings it would compile and evaluate anew (several
# hundred, about 35 ms of every command and of --help); these are evaluated once, at import.
# The few names not defined yet where they are used are quoted.
import contextlib
import dataclasses
import enum
import functools
import json
import re
import shlex
import sys
import time
import traceback
import typing
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

import typer
import typer.core
import typer.main

from . import choices, documents
from .errors import INTERRUPTED, EngineError, ResourceError, SbcError, VerificationError
from .version import version_line

if TYPE_CHECKING:
    from .engines.base import Engine
    from .quality.suggest import Step
    from .run import Result

#: the run's switches that are not a command's options: --debug (the app's callback), the
#: command running and whether it answers in JSON (set as its options are read)
_settings: dict[str, Any] = {"debug": False, "command": None, "json": False}

#: click's base of every usage error, from the click that this typer runs on
_ClickException: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"
)


class ConfigFileError(typer.BadParameter):
    """The --config file cannot be used: one ``Error:`` line (no usage text), exit code 2."""

    def format_message(self) -> str:
        return self.message

    def show(self, file: Any = None) -> None:
        typer.echo(f"Error: {self.message}", err=True)


def _load_config(ctx: typer.Context, value: str | None) -> None:
    """--config's callback, run before the other options are read: the file's values become
    the command's defaults (click's default_map), so a flag given wins over the file."""
    if value is None:
        return
    from . import config  # TOML and the checks of its keys, loaded only for a --config

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
                "win over the file. E.g. --config sbc.toml.",
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
    coerced by :class:`_Coercion`."""

    def parse_args(self, ctx: Any, args: Any) -> Any:
        _coerce_plainly(self.get_params(ctx))
        return super().parse_args(ctx, args)


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
    kind = "config" if isinstance(err, ConfigFileError) else "usage"
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
    help="k-anonymize DuckDB tables with Similarity-Based Clustering (SBCA).",
    epilog=(
        "Exit codes: 0 success; 1 an error (bad input, nothing written); 2 a usage error; "
        "3 verify: the release fails verification; 130 interrupted (nothing written)."
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


def _spark_conf(values: list[str] | None) -> dict[str, str]:
    """--spark-conf key=value (repeatable) as a mapping."""
    conf: dict[str, str] = {}
    for value in values or ():
        key, sep, setting = value.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(
                f"'{value}' is not key=value; write e.g. --spark-conf spark.driver.memory=4g",
                param_hint="--spark-conf",
            )
        conf[key.strip()] = setting.strip()
    return conf


def _check_engine(engine: Any, db: str | None, master: str | None, conf: list[str] | None) -> dict[str, str]:
    """The engine options fit together (a usage error otherwise); the Spark properties."""
    if engine.value == "spark":
        if db is not None:
            raise typer.BadParameter(
                "--db names a DuckDB file or a PostgreSQL URL; with --engine spark tables are "
                "Parquet/CSV paths or tables of the Spark catalog: drop --db",
                param_hint="--db",
            )
        return _spark_conf(conf)
    if master is not None or conf:
        raise typer.BadParameter(
            "--spark-master and --spark-conf configure Apache Spark: add --engine spark, or drop them",
            param_hint="--engine",
        )
    return {}


@contextlib.contextmanager
def _database(
    engine: Any, db: str | None, master: str | None, conf: dict[str, str], *, needs_db: bool = True
) -> Iterator[Any]:
    """What the command reads and writes: --db, or with --engine spark a Spark engine (a
    session built here, stopped on the way out). Inside :func:`reported`."""
    if engine.value != "spark":
        if db is None and needs_db:
            raise SbcError("no --db given; pass the DuckDB file (or a postgresql:// URL) with --db")
        yield db
        return
    from .engines.spark import SparkEngine

    spark = SparkEngine.connect(master=master, conf=conf)
    try:
        yield spark
    finally:
        spark.close()


class ProgressBar:
    """A one-line bar with ETA on stderr, drawn only on a terminal. As a context manager it
    ends a line it left unfinished, so that an error or an interruption is read on a line
    of its own."""

    def __init__(self, label: str, enabled: bool | None = None) -> None:
        self.label = label
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        # the rate is measured from the first report on, so that a first run's compiling
        # (before any row is placed) does not inflate the estimate
        self.first: tuple[float, int] | None = None
        self.last = 0.0
        self.open_line = False

    def __enter__(self) -> "ProgressBar":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.open_line:
            sys.stderr.write("\n")
            self.open_line = False

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total <= 0:
            return
        now = time.perf_counter()
        if self.first is None:
            self.first = (now, done)
        if done < total and now - self.last < 0.1:
            return
        self.last = now
        frac = done / total
        started, done_then = self.first
        rate = (done - done_then) / (now - started) if now > started and done > done_then else 0.0
        eta = (total - done) / rate if rate > 0 else 0.0
        bar = "#" * int(frac * 30)
        sys.stderr.write(f"\r{self.label} [{bar:<30}] {frac:6.1%} {done}/{total} eta {eta:5.1f}s")
        self.open_line = done < total
        if not self.open_line:
            sys.stderr.write("\n")
        sys.stderr.flush()


Leftover = enum.Enum("Leftover", {m: m for m in choices.LEFTOVER_MODES}, type=str)  # type: ignore[misc]
Mode = enum.Enum("Mode", {m: m for m in choices.MODES}, type=str)  # type: ignore[misc]
Algorithm = enum.Enum("Algorithm", {n: n for n in choices.ALGORITHMS}, type=str)  # type: ignore[misc]
AlgorithmOption = Annotated[Algorithm, typer.Option(help=choices.algorithms_help())]


class _Roles(TypedDict):
    qi: list[str]
    sensitive: list[str]
    drop: list[str]
    keep: list[str]


def _roles(
    qi: list[str] | None, sensitive: list[str] | None, drop: list[str] | None, keep: list[str] | None
) -> _Roles:
    """The role flags as the API takes them (a flag not given: no column)."""
    return {"qi": qi or [], "sensitive": sensitive or [], "drop": drop or [], "keep": keep or []}


def _names(flag: str, short: str | None, role: str, example: str) -> Any:
    decls = [flag, short] if short else [flag]
    return typer.Option(
        *decls,
        show_default=False,
        metavar="COLUMNS",
        help=f"{role} (repeatable or comma-separated), e.g. {flag} {example}.",
    )


# the role options, alike wherever a table is anonymized
QiOption = Annotated[list[str] | None, _names("--qi", None, "Quasi-identifiers", "age,zip")]
SensitiveOption = Annotated[
    list[str] | None, _names("--sensitive", None, "Sensitive columns, released as they are", "diagnosis")
]
DropOption = Annotated[
    list[str] | None, _names("--drop", None, "Direct identifiers, never released", "name,ssn")
]
KeepOption = Annotated[
    list[str] | None, _names("--keep", None, "Insensitive columns, released as they are", "visit_id")
]
LModel = enum.Enum("LModel", {m: m for m in choices.L_VARIANTS}, type=str)  # type: ignore[misc]
#: the reading commands' --attach
ReadAttachOption = Annotated[
    list[str] | None,
    typer.Option(
        help="Another DuckDB file to read from, read-only (repeatable), as FILE or FILE:ALIAS, "
        "e.g. --attach clinic.duckdb with --original clinic.main.patients."
    ),
]


LDiversityOption = Annotated[
    int | None,
    typer.Option(
        help="l-diversity on every sensitive column: at least L distinct values per class "
        "(see --l-model), e.g. --l-diversity 3."
    ),
]
LModelOption = Annotated[LModel, typer.Option(help="Which l-diversity: distinct values or entropy.")]
TClosenessOption = Annotated[
    float | None,
    typer.Option(
        help="t-closeness on every sensitive column: each class's distribution within EMD T of "
        "the whole table's, e.g. --t-closeness 0.2."
    ),
]
BetaOption = Annotated[
    float | None,
    typer.Option(
        help="Enhanced beta-likeness on every sensitive column: no value's share in a class above "
        "its table share by more than min(B, -ln p) relatively, e.g. --beta-likeness 1."
    ),
]
BetaBasicOption = Annotated[
    bool, typer.Option("--beta-basic", help="The basic beta-likeness (B alone) instead of the enhanced one.")
]
BkThresholdOption = Annotated[
    float | None,
    typer.Option(
        help="Background knowledge: the largest Jensen-Shannon divergence (bits, in (0, 1]) between "
        "two members' beliefs about their sensitive value (kinc, kagg, beta-ge; default 0.8; "
        "with the default algorithm, each group of alike beliefs is clustered alone), e.g. "
        "--bk-threshold 0.5."
    ),
]
BkEstimatorOption = Annotated[
    str | None,
    typer.Option(
        help="How the background knowledge is estimated from the table: nb (naive Bayes, the "
        "default), combo (each QI combination's shares shrunk toward nb) or kernel."
    ),
]
BkOption = Annotated[
    str | None,
    typer.Option(
        "--bk",
        help="The background knowledge as a table or CSV/Parquet file: QI key columns, then one "
        "column per sensitive value (or sensitive_value, probability), e.g. --bk priors.csv.",
    ),
]
SeedOption = Annotated[
    int | None, typer.Option(help="Seed of beta-ge's random choices (default 0), e.g. --seed 7.")
]
MaxWidthOption = Annotated[
    list[str] | None,
    typer.Option(
        "--max-width",
        help="The widest range a class may span on a numeric QI, in the column's units (days for a "
        "date or timestamp), repeatable or comma-separated, e.g. --max-width age=10,birth_date=365. "
        "Rows that fit no class are suppressed (within --max-suppression).",
    ),
]
MaxValuesOption = Annotated[
    list[str] | None,
    typer.Option(
        "--max-values",
        help="The most values a class's set may hold on a categorical QI, e.g. --max-values "
        "nationality=3. Rows that fit no class are suppressed (within --max-suppression).",
    ),
]
EngineName = enum.Enum("EngineName", {n: n for n in choices.ENGINES}, type=str)  # type: ignore[misc]
EngineOption = Annotated[
    EngineName,
    typer.Option(
        "--engine",
        help="Where the SQL runs: duckdb (--db; a postgresql:// URL is PostgreSQL) or spark "
        "(Apache Spark: tables are Parquet/CSV paths or tables of its catalog).",
    ),
]
SparkMasterOption = Annotated[
    str | None,
    typer.Option(
        help="With --engine spark: the master to run on (default local[*]), e.g. --spark-master "
        "local[4] or spark://host:7077.",
        show_default=False,
    ),
]
SparkConfOption = Annotated[
    list[str] | None,
    typer.Option(
        help="With --engine spark: a Spark property (repeatable), e.g. --spark-conf spark.driver.memory=4g.",
        show_default=False,
    ),
]
#: the commands that read a release beside its input (measure, verify, evaluate)
OriginalOption = Annotated[str, typer.Option(help="The input table (with --engine spark: or a path).")]
ReleaseOption = Annotated[
    str, typer.Option(help="The release (view or table; with --engine spark: or a path).")
]
#: where the commands that only read find the data (None: the input is a file)
ReadDbOption = Annotated[
    str | None, typer.Option(help="DuckDB database file (or a postgresql:// URL).", show_default=False)
]


@app.command("anonymize")
def anonymize_cmd(
    table: Annotated[
        str,
        typer.Option(
            "--table",
            "-t",
            help="Table or view to anonymize ([database.][schema.]name), or a CSV/Parquet path, "
            "e.g. -t patients or -t ward.main.patients.",
        ),
    ],
    k: Annotated[int, typer.Option("--k", "-k", help="Minimum class size, 2 or more, e.g. -k 5.")],
    db: Annotated[
        str | None,
        typer.Option(help="DuckDB database file (created for a file input), e.g. --db clinic.duckdb."),
    ] = None,
    qi: QiOption = None,
    sensitive: SensitiveOption = None,
    drop: DropOption = None,
    keep: KeepOption = None,
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            help=(
                "Release name (default <table>_k<k>): the view <output> over the tables <output>_rows "
                "and <output>_classes, and the text view <output>_view. E.g. -o patients_public."
            ),
        ),
    ] = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="Overwrite an existing release of that name (or --out-file).")
    ] = False,
    leftover: Annotated[
        Leftover,
        typer.Option(
            help="Rows left when fewer than k remain: join the nearest class, the last, or suppress."
        ),
    ] = Leftover.nearest,  # type: ignore[attr-defined]
    weights: Annotated[
        str | None,
        typer.Option(help="Per-QI weights; only their ratios matter, e.g. --weights age=2,zip=0.5."),
    ] = None,
    out_file: Annotated[
        str | None,
        typer.Option(
            help="Also export the release; the ending picks the format: .parquet (value sets as "
            "lists), .csv (the readable text view), .json (an array) or .ndjson (a row a line). "
            "E.g. --out-file release.parquet."
        ),
    ] = None,
    sql: Annotated[bool, typer.Option("--sql", help="Print the run's SQL; write nothing.")] = False,
    mode: Annotated[
        Mode,
        typer.Option(
            help="auto (sbca: blocks at every size; sbca-paper: blocks above a size threshold), "
            "exact (one block) or blocks."
        ),
    ] = Mode.auto,  # type: ignore[attr-defined]
    exact: Annotated[
        bool, typer.Option("--exact", help="Cluster the whole table as one block (same as --mode exact).")
    ] = False,
    workers: Annotated[
        int | None, typer.Option(help="Threads for block mode (default: all cores), e.g. --workers 2.")
    ] = None,
    block_rows: Annotated[
        int | None,
        typer.Option(
            help="Rows per block of the default sbca (default: max(1536, 160 k)). Every row of a "
            "block is a candidate for each class: larger blocks lower NCP, at a cost "
            "quadratic in the block size. E.g. --block-rows 4096."
        ),
    ] = None,
    algorithm: AlgorithmOption = Algorithm[choices.DEFAULT_ALGORITHM],
    paper: Annotated[
        bool, typer.Option("--paper", help="The paper's SBCA exactly (same as --algorithm sbca-paper).")
    ] = False,
    hierarchy: Annotated[
        list[str] | None,
        typer.Option(
            help="ARX-layout hierarchy for datafly/incognito (repeatable), e.g. --hierarchy age=age.csv."
        ),
    ] = None,
    max_suppression: Annotated[
        float,
        typer.Option(
            help="Share of rows that may be suppressed: by datafly/incognito, or where the criteria "
            "cannot place them, e.g. --max-suppression 0.05."
        ),
    ] = 0.01,
    memory_limit: Annotated[
        str | None,
        typer.Option(
            help="Cap DuckDB's memory for the run (it spills to disk beyond), e.g. --memory-limit 2GB."
        ),
    ] = None,
    csv_delimiter: Annotated[
        str | None,
        typer.Option(help="The field delimiter of a CSV input (default: sniffed), e.g. --csv-delimiter ';'."),
    ] = None,
    csv_header: Annotated[
        bool | None,
        typer.Option(
            "--csv-header/--no-csv-header",
            help="Whether a CSV input's first line names its columns (default: sniffed).",
            show_default=False,
        ),
    ] = None,
    attach: Annotated[
        list[str] | None,
        typer.Option(
            help="Another DuckDB file to read the table from, read-only (repeatable), as FILE or "
            "FILE:ALIAS; then -t ALIAS.main.t. E.g. --attach ward.duckdb:ward."
        ),
    ] = None,
    target_db: Annotated[
        str | None,
        typer.Option(
            help="Write the release into this DuckDB file (created if missing) instead of --db, "
            "so that it can be shipped alone; --db is then opened read-only. E.g. --target-db "
            "release.duckdb."
        ),
    ] = None,
    l_diversity: LDiversityOption = None,
    l_model: LModelOption = LModel.distinct,  # type: ignore[attr-defined]
    t_closeness: TClosenessOption = None,
    beta_likeness: BetaOption = None,
    beta_basic: BetaBasicOption = False,
    bk_threshold: BkThresholdOption = None,
    bk_estimator: BkEstimatorOption = None,
    bk: BkOption = None,
    seed: SeedOption = None,
    max_width: MaxWidthOption = None,
    max_values: MaxValuesOption = None,
    target: Annotated[
        str | None,
        typer.Option(
            help="A label column released as it is (e.g. income) that the classes are kept pure "
            "on, for a release meant to train models; never a QI. E.g. --target income."
        ),
    ] = None,
    target_weight: Annotated[
        float | None,
        typer.Option(
            help="With --target: how many points of total NCP one point of CM (rows outside their "
            "class's majority label) is worth (default 0.03). E.g. --target-weight 0.1."
        ),
    ] = None,
    rows: Annotated[
        bool,
        typer.Option(
            "--rows",
            help="Cluster every row, not the distinct QI tuples each standing for its rows (the "
            "default's way on k alone in DuckDB, when the table repeats its tuples).",
        ),
    ] = False,
    engine: EngineOption = EngineName.duckdb,  # type: ignore[attr-defined]
    spark_master: SparkMasterOption = None,
    spark_conf: SparkConfOption = None,
    report_file: Annotated[
        str | None,
        typer.Option(
            "--report",
            help="Also write the release's HTML report (as 'sbc-sql report' does, at its default "
            "--curve-k) once it is verified; an existing file only with --replace. E.g. --report "
            "report.html.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Print only the summary and errors: no roles, no progress.")
    ] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Also print every SQL statement to stderr as it runs.")
    ] = False,
) -> None:
    """Write a verified k-anonymous release of TABLE into the database.

    Roles: --qi, --sensitive, --drop (identifiers), --keep (insensitive), repeatable or
    comma-separated, or column comments 'sbc:qi', 'sbc:sensitive', 'sbc:identifier',
    'sbc:insensitive'.

    Example: sbc-sql anonymize --db clinic.duckdb -t patients -k 5

    With Apache Spark: sbc-sql anonymize --engine spark -t data/visits.parquet -o out/visits_k10 -k 10
    """
    conf = _check_engine(engine, db, spark_master, spark_conf)
    with reported():  # what the run needs loads here: Ctrl-C meanwhile is one line too
        from .cluster import registry
        from .hierarchies import parse_hierarchy_options
        from .run import anonymize
    algorithm_name, mode_name = algorithm.value, mode.value
    if hierarchy and not registry.get(algorithm_name).hierarchies:
        raise typer.BadParameter(
            f"--hierarchy is read by {', '.join(c.name for c in registry.CLUSTERERS if c.hierarchies)}; "
            f"{algorithm_name} builds its own generalization: drop --hierarchy",
            param_hint="--hierarchy",
        )

    def log(line: str) -> None:
        if not quiet or line.startswith("warning: "):
            typer.echo(line, err=True)

    def trace(statement: str) -> None:
        typer.echo(statement, err=True)

    if paper and algorithm_name not in (choices.DEFAULT_ALGORITHM, "sbca-paper"):
        raise typer.BadParameter(
            f"--paper runs sbca-paper; it cannot be combined with --algorithm {algorithm_name}",
            param_hint="--paper",
        )
    if exact and mode_name not in ("auto", "exact"):
        raise typer.BadParameter(
            f"--exact is --mode exact; it cannot be combined with --mode {mode_name}", param_hint="--exact"
        )
    with (
        reported(),
        ProgressBar("clustering", enabled=False if quiet else None) as bar,
        _database(engine, db, spark_master, conf, needs_db=False) as database,
    ):
        if report_file is not None and not sql:  # checked before the run, written after it
            from .quality import html_report

            html_report.check_path(report_file, replace=replace, flag="--report", protected=[db, target_db])
        result = anonymize(
            database,
            table,
            k,
            **_roles(qi, sensitive, drop, keep),
            output=output,
            replace=replace,
            leftover=leftover.value,
            weights=weights,
            out_file=out_file,
            sql_only=sql,
            mode="exact" if exact else mode_name,
            workers=workers,
            algorithm="sbca-paper" if paper else algorithm_name,
            hierarchies=parse_hierarchy_options(hierarchy),
            max_suppression=max_suppression,
            memory_limit=memory_limit,
            block_rows=block_rows,
            csv_delimiter=csv_delimiter,
            csv_header=csv_header,
            attach=attach or (),
            target_db=target_db,
            l_diversity=l_diversity,
            l_model=l_model.value,
            t_closeness=t_closeness,
            beta_likeness=beta_likeness,
            beta_basic=beta_basic,
            bk_threshold=bk_threshold,
            bk_estimator=bk_estimator,
            bk=bk,
            seed=seed,
            max_width=max_width,
            max_values=max_values,
            target=target,
            target_weight=target_weight,
            tuples=not rows,
            log=log,
            progress=bar,
            trace=trace if verbose else None,
        )
        # the connection is closed once the summary is out (a server's, too, not left to exit)
        with result:
            if sql:
                typer.echo("\n".join(result.statements))
                return
            if as_json:
                typer.echo(json.dumps(documents.summary_dict(result), indent=2))
            else:
                # where the evaluate hint finds the release and its source
                where = {"db": target_db or db, "attach": db if target_db else None}
                if engine.value == "spark":
                    where = {"engine": "spark", "spark-master": spark_master}
                typer.echo(summary_text(result, {flag: str(v) for flag, v in where.items() if v}))
            if report_file is not None:
                page = html_report.report(
                    result.engine, result.plan.source.name, result.release, report_file, replace=replace
                )
                typer.echo(f"wrote the report of '{result.release}' to {page.path}", err=as_json)


def _criteria_lines(result: "Result") -> list[str]:
    """The criteria held and what the release achieves, worst over the sensitive columns."""
    a = result.achieved
    lines = []
    o = result.plan.options
    if o.max_width or o.max_values:
        limits = [f"{n}={w:g}" for n, w in o.max_width.items()] + [
            f"{n}={v}" for n, v in o.max_values.items()
        ]
        lines.append(f"  verified the per-column limits: {', '.join(limits)}")
    if "js_diameter" in a:
        lines.append(
            f"  verified the background-knowledge bound: beliefs in a class at most "
            f"{a['js_diameter']:.4f} bits apart"
        )
    if result.criteria is None:
        return lines
    shown = []
    for key, label, fmt in (
        ("l_diversity", "distinct l", "{:.0f}"),
        ("entropy_l_diversity", "entropy l", "{:.2f}"),
        ("t_closeness", "t", "{:.4f}"),
        ("beta_likeness", "beta", "{:.4f}"),
    ):
        if key in a:
            shown.append(f"{label} {fmt.format(a[key])}")
    columns = ", ".join(f"'{c.name}'" for c in result.plan.sensitive)
    return [f"  verified {result.criteria.describe()} on {columns}: achieved " + ", ".join(shown), *lines]


def _shown(database: str) -> str:
    """A database as messages name it: a URL without its password."""
    from .engines.urls import looks_like_url, shown_url

    return shown_url(database) if looks_like_url(database) else database


#: a name SQL reads as it is written, unquoted (any dialect folds other names or rejects them)
_PLAIN_NAME = re.compile(r"[a-z_][a-z0-9_]*")


def _sql_name(engine: "Engine", schema: str, name: str) -> str:
    """``schema.name`` (``name`` alone when no schema) as the engine's SQL reads it: each part
    an identifier, quoted unless it is a plain lower-case word (or the dialect reserves it),
    so a hint copied into SQL names that object and nothing else."""
    from sqlglot import exp

    parts = [schema, name] if schema else [name]
    return ".".join(
        exp.Identifier(this=part, quoted=not _PLAIN_NAME.fullmatch(part)).sql(dialect=engine.dialect)
        for part in parts
    )


def summary_text(result: "Result", where: Mapping[str, str] | None = None) -> str:
    m = result.measures
    assert m is not None
    stages = ("plan", "stats", "pull", "cluster", "upload", "write", "measure", "verify")
    plan = result.plan
    db = "".join(f" --{flag} {shlex.quote(_shown(value))}" for flag, value in (where or {}).items())
    exported = []
    if result.exported is not None:
        from .plan import export_format

        fmt = export_format(result.exported)
        exported.append(f"exported {m.released:,} rows to {result.exported} ({fmt})")
    schema = result.engine.working()[1]
    # a release of another schema is named with it, as it is queried (a path as it is)
    path = result.engine.parse_name(result.release).path
    prefix = f"{schema}." if schema != "main" and not path else ""
    release, view = prefix + result.release, prefix + result.view
    # an engine that writes the release's rows and its class table, without views
    views = result.engine.capabilities.release_views
    beside = f"view '{view}'" if views else f"classes '{prefix}{plan.classes_table}'"
    # the hint's SQL names each object as an identifier, however it is spelt
    # (a path, as it is)
    in_sql = functools.partial(_sql_name, result.engine, schema if prefix else "") if not path else str
    read = (
        f"SELECT * FROM {in_sql(result.view)} (readable) or {in_sql(result.release)} (ranges and sets)"
        if views
        else f"read {in_sql(result.release)} (ranges and sets) and "
        f"{in_sql(plan.classes_table)} (a row per class)"
    )
    lines = [
        f"release '{release}' ({beside}): verified {plan.k}-anonymous and complete",
        *_criteria_lines(result),
        f"  rows in {m.n_rows:,}, rows out {m.released:,}, suppressed {m.suppressed:,}"
        + (
            " (" + ", ".join(f"{why} {n:,}" for why, n in result.suppressed_by.items()) + ")"
            if result.suppressed_by
            else ""
        ),
        f"  classes {m.classes:,}: smallest {m.smallest:,}, mean {m.mean:,.2f}, largest {m.largest:,}",
        f"  total NCP {m.total_ncp:.4f}, utility {m.utility:.4f}  (mode: {result.mode})",
        "  NCP per QI: " + ", ".join(f"{q} {v:.4f}" for q, v in m.ncp.items()),
        "  seconds: " + ", ".join(f"{s} {result.timings.get(s, 0.0):.3f}" for s in stages),
        *exported,
        f"next: {read}; "
        f"sbc-sql evaluate{db} --original {shlex.quote(plan.display_name)} --release {shlex.quote(release)}"
        " for risk and loss",
    ]
    dropped = [c.name for c in plan.columns if c.role == "identifier"]
    held = f"identifiers ({', '.join(dropped)})" if dropped else "every original value"
    lines.append(f"note: '{plan.display_name}' still holds {held}; publish the release, not the source")
    return "\n".join(lines)


@app.command("measure")
def measure_cmd(
    original: OriginalOption,
    release: ReleaseOption,
    db: ReadDbOption = None,
    attach: ReadAttachOption = None,
    engine: EngineOption = EngineName.duckdb,  # type: ignore[attr-defined]
    spark_master: SparkMasterOption = None,
    spark_conf: SparkConfOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """NCP per QI and total, utility, classes and smallest class of a release.

    Example: sbc-sql measure --db clinic.duckdb --original patients --release patients_k5
    """
    conf = _check_engine(engine, db, spark_master, spark_conf)
    with reported(), _database(engine, db, spark_master, conf) as database:
        from . import api

        m = api.measure(database, original, release, attach=attach or ())
    if as_json:
        typer.echo(documents.dumps(documents.measure_dict(m)))
        return
    typer.echo(f"rows {m.n_rows}, released {m.released}, suppressed {m.suppressed}")
    typer.echo(f"classes {m.classes}, smallest {m.smallest}, mean {m.mean:.2f}, largest {m.largest}")
    typer.echo(f"total NCP {m.total_ncp:.4f}, utility {m.utility:.4f}")
    for q, v in m.ncp.items():
        typer.echo(f"  NCP {q}: {v:.4f}")


#: exit code of a release that fails verification (1 is bad input, 2 typer's usage errors)
VERIFY_FAILED = 3


@app.command("verify")
def verify_cmd(
    original: OriginalOption,
    release: ReleaseOption,
    k: Annotated[int, typer.Option("--k", "-k", help="The k to check, e.g. -k 5.")],
    db: ReadDbOption = None,
    attach: ReadAttachOption = None,
    l_diversity: LDiversityOption = None,
    l_model: LModelOption = LModel.distinct,  # type: ignore[attr-defined]
    t_closeness: TClosenessOption = None,
    beta_likeness: BetaOption = None,
    beta_basic: BetaBasicOption = False,
    max_suppression: Annotated[
        float | None,
        typer.Option(
            "--max-suppression",
            help="Share of the input rows a release without provenance may lack (default 0: a "
            "deleted class is not a suppression); over a provenance, a bound on the suppression "
            "it records beside the run's own, e.g. --max-suppression 0.01.",
        ),
    ] = None,
    qi: Annotated[
        list[str] | None,
        _names("--qi", None, "The auditor's quasi-identifiers (win over comments and provenance)", "age,zip"),
    ] = None,
    identifier: Annotated[
        list[str] | None,
        _names("--identifier", None, "The auditor's identifiers, refused in any release", "ssn"),
    ] = None,
    sensitive: Annotated[
        list[str] | None, _names("--sensitive", None, "The auditor's sensitive columns", "diagnosis")
    ] = None,
    keep: Annotated[
        list[str] | None,
        _names(
            "--keep",
            None,
            "Columns the auditor accepts released as they are (an identifier included)",
            "visit_id",
        ),
    ] = None,
    engine: EngineOption = EngineName.duckdb,  # type: ignore[attr-defined]
    spark_master: SparkMasterOption = None,
    spark_conf: SparkConfOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the verdict as JSON.")] = False,
) -> None:
    """Check RELEASE against ORIGINAL as an auditor: exit 0 if it passes, 3 if it fails
    (one Error line per problem), 1 on bad input (a missing database, table or view), 2 on a
    usage error.

    It reads the roles from the release's provenance and the source's column comments, and
    refuses identifiers and QIs published raw; checks k-anonymity, each class's released
    values against the source, the class table against the rows, the release view against
    its tables and the text view against the text they give. A release without provenance
    is checked on roles read off its columns, and the output says so.

    Example: sbc-sql verify --db clinic.duckdb --original patients --release patients_k5 --k 5
    """
    conf = _check_engine(engine, db, spark_master, spark_conf)
    with reported(), _database(engine, db, spark_master, conf) as database:
        from . import api
        from .privacy.criteria import Criteria

        verdict = api.verify(
            database,
            original,
            release,
            k,
            attach=attach or (),
            l_diversity=l_diversity,
            l_model=l_model.value,
            t_closeness=t_closeness,
            beta_likeness=beta_likeness,
            beta_basic=beta_basic,
            max_suppression=max_suppression,
            qi=qi or (),
            identifier=identifier or (),
            sensitive=sensitive or (),
            keep=keep or (),
        )
    notes = "".join(f"; {note}" for note in verdict.notes)
    if as_json:
        typer.echo(documents.dumps(documents.verify_dict(verdict)))
    if verdict.ok and as_json:
        return
    if verdict.ok:
        facts = ", ".join(f"{key} {value}" for key, value in verdict.facts.items())
        asked = Criteria(l_diversity, l_model.value, t_closeness, beta_likeness, beta_basic).describe()
        held = f", {asked}," if asked else ""
        typer.echo(f"ok: '{release}' is {k}-anonymous{held} and complete{notes} ({facts})")
        return
    for note in verdict.notes:
        typer.echo(f"note: {note}", err=True)
    for problem in verdict.problems:
        typer.echo(f"Error: {problem}", err=True)
    raise typer.Exit(VERIFY_FAILED)


#: evaluate --classifier's choices (sbc_sql.quality.model)
ClassifierName = enum.Enum("ClassifierName", {n: n for n in choices.CLASSIFIERS}, type=str)  # type: ignore[misc]


@app.command("evaluate")
def evaluate_cmd(
    original: OriginalOption,
    release: ReleaseOption,
    db: ReadDbOption = None,
    sensitive: Annotated[
        str | None, typer.Option(help="Sensitive column: adds l-diversity, t-closeness and beta-likeness.")
    ] = None,
    k_r: Annotated[float, typer.Option("--k-r", help="RGCP weight of virtual classes.")] = 2.0,
    n_r: Annotated[float, typer.Option("--n-r", help="RGCP weight when no class exists.")] = 4.0,
    queries: Annotated[
        int, typer.Option(help="Random COUNT queries per selectivity (0: no query error).")
    ] = 200,
    selectivity: Annotated[
        list[float] | None,
        typer.Option(help="Target query selectivity, repeatable (default 0.01, 0.05, 0.1)."),
    ] = None,
    seed: Annotated[
        int, typer.Option(help="Seed of the random queries and of --model's split and classifier.")
    ] = 0,
    k: Annotated[int | None, typer.Option(help="k of C_AVG (default: smallest class).")] = None,
    weights: Annotated[str | None, typer.Option(help="Per-QI weights, e.g. age=2,zip=0.5.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    sql: Annotated[bool, typer.Option("--sql", help="Print the SQL; run nothing.")] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Print only the figures: no step lines on stderr.")
    ] = False,
    attach: ReadAttachOption = None,
    beta_likeness: Annotated[
        float | None,
        typer.Option(
            help="With --sensitive: the smallest class each value may sit in under this beta "
            "(default: the beta the run kept), e.g. --beta-likeness 1."
        ),
    ] = None,
    beta_basic: BetaBasicOption = False,
    target: Annotated[
        str | None,
        typer.Option(
            help="A label column released verbatim (kept or sensitive): adds CM and class purity, "
            "e.g. --target income.",
            show_default=False,
        ),
    ] = None,
    model: Annotated[
        bool,
        typer.Option(
            "--model",
            help="With --target: train a classifier on the release and one on the original, score both "
            "on the original's held-out rows (needs pip install 'sbc-sql[ml]').",
        ),
    ] = False,
    classifier: Annotated[
        ClassifierName,
        typer.Option(help="--model's classifier: gbt (gradient-boosted trees) or logistic (regression)."),
    ] = ClassifierName.gbt,  # type: ignore[attr-defined]
    engine: EngineOption = EngineName.duckdb,  # type: ignore[attr-defined]
    spark_master: SparkMasterOption = None,
    spark_conf: SparkConfOption = None,
) -> None:
    """Information loss (NCP, GCP, RGCP, DM, C_AVG), record linkage, query error, with
    --sensitive l-diversity, t-closeness and beta-likeness, and with --target CM, class
    purity and (--model) model utility of a release; suppressed rows per reason when the
    run recorded them.

    Example: sbc-sql evaluate --db clinic.duckdb --original patients --release patients_k5
    --sensitive diagnosis
    """
    conf = _check_engine(engine, db, spark_master, spark_conf)
    with reported(), _database(engine, db, spark_master, conf) as database:
        from .plan import parse_weights
        from .quality import report
        from .quality.evaluate import evaluate, evaluation_sql

        w = parse_weights(weights) if weights else None
        if sql:
            statements = evaluation_sql(
                database, original, release, sensitive=sensitive, weights=w, target=target, model=model
            )
            typer.echo("\n".join(statements))
            return
        result = evaluate(
            database,
            original,
            release,
            sensitive=sensitive,
            k_r=k_r,
            n_r=n_r,
            queries=queries,
            selectivities=tuple(selectivity or (0.01, 0.05, 0.1)),
            seed=seed,
            weights=w,
            k=k,
            log=None if quiet else (lambda line: typer.echo(line, err=True)),
            attach=attach or (),
            beta_likeness=beta_likeness,
            beta_basic=beta_basic,
            target=target,
            model=model,
            classifier=classifier.value,
        )
    if as_json:
        typer.echo(documents.dumps(documents.document("evaluate", report.grouped(result))))
        return
    typer.echo(report.text(result))


@app.command("profile")
def profile_cmd(
    table: Annotated[
        str,
        typer.Option(
            "--table",
            "-t",
            help="Table or view to profile ([database.][schema.]name), or a CSV/Parquet path, "
            "e.g. -t patients.",
        ),
    ],
    db: ReadDbOption = None,
    qi: QiOption = None,
    sensitive: SensitiveOption = None,
    drop: DropOption = None,
    keep: KeepOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Print only the profile: no step lines on stderr.")
    ] = False,
    attach: ReadAttachOption = None,
    engine: EngineOption = EngineName.duckdb,  # type: ignore[attr-defined]
    spark_master: SparkMasterOption = None,
    spark_conf: SparkConfOption = None,
) -> None:
    """The re-identification risk of TABLE before release: per column its distinct values,
    NULLs, unique rows and a suggested role with the reason; on the QIs the equivalence
    classes, unique records, prosecutor and marketer risk; and the QI combinations that
    make most records unique. Reads only.

    Example: sbc-sql profile --db clinic.duckdb -t patients --drop ssn
    """
    conf = _check_engine(engine, db, spark_master, spark_conf)
    with reported(), _database(engine, db, spark_master, conf, needs_db=False) as database:
        from .quality.profile import profile
        from .quality.profile import text as profile_text

        result = profile(
            database,
            table,
            **_roles(qi, sensitive, drop, keep),
            attach=attach or (),
            log=None if quiet else (lambda line: typer.echo(line, err=True)),
        )
    if as_json:
        typer.echo(documents.dumps(documents.document("profile", result.as_dict())))
        return
    typer.echo(profile_text(result))


@app.command("report")
def report_cmd(
    original: OriginalOption,
    release: ReleaseOption,
    output: Annotated[
        str, typer.Option("--output", "-o", help="The HTML file to write, e.g. -o report.html.")
    ],
    db: ReadDbOption = None,
    curve_k: Annotated[
        str,
        typer.Option(
            help="The k the original is re-clustered at for the NCP-against-k curve (nothing is "
            "kept), or 'none', e.g. --curve-k 2,5,10."
        ),
    ] = "2,5,10,25,50",
    sensitive: Annotated[
        str | None,
        typer.Option(help="The sensitive column shown (default: the first the release declares)."),
    ] = None,
    replace: Annotated[bool, typer.Option("--replace", help="Overwrite an existing --output file.")] = False,
    attach: ReadAttachOption = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No step lines on stderr.")] = False,
) -> None:
    """One self-contained HTML page on a release: how it was made (its provenance), the
    prosecutor risk before and after, NCP per QI, class sizes, total NCP against k, the
    sensitive column's diversity per class, suppressed rows and what every figure means.
    Names, counts and figures only: no value of any row. No script, nothing loaded.

    Example: sbc-sql report --db clinic.duckdb --original patients --release patients_k5 -o report.html
    """
    with reported():
        from .quality import html_report

        if db is None:
            raise SbcError("no --db given; pass the DuckDB file (or a postgresql:// URL) with --db")
        found = html_report.report(
            db,
            original,
            release,
            output,
            curve_k=html_report.parse_curve_k(curve_k),
            sensitive=sensitive,
            replace=replace,
            attach=attach or (),
            log=None if quiet else (lambda line: typer.echo(line, err=True)),
        )
    typer.echo(f"wrote the report of '{release}' to {found.path}")


@app.command("compare")
def compare_cmd(
    db: Annotated[str, typer.Option(help="DuckDB database file.")],
    table: Annotated[str, typer.Option("--table", "-t", help="Table to anonymize, e.g. -t patients.")],
    k: Annotated[str, typer.Option("--k", "-k", help="Comma-separated k values, e.g. -k 2,5,10.")],
    algorithms: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated algorithms (default: all, or all that keep the criteria asked), "
            "e.g. --algorithms sbca,mondrian.",
            show_default=False,
        ),
    ] = None,
    qi: QiOption = None,
    sensitive: SensitiveOption = None,
    drop: DropOption = None,
    keep: KeepOption = None,
    hierarchy: Annotated[
        list[str] | None, typer.Option(help="col=path.csv hierarchy for datafly/incognito (repeatable).")
    ] = None,
    max_suppression: Annotated[
        float,
        typer.Option(
            help="Share of rows that may be suppressed: by datafly/incognito, or where the criteria "
            "cannot place them, e.g. --max-suppression 0.05."
        ),
    ] = 0.01,
    plot: Annotated[str | None, typer.Option(help="Write NCP against k as a PNG.")] = None,
    csv_path: Annotated[str | None, typer.Option("--csv", help="Write the rows as CSV.")] = None,
    keep_releases: Annotated[bool, typer.Option(help="Keep every release.")] = False,
    l_diversity: LDiversityOption = None,
    l_model: LModelOption = LModel.distinct,  # type: ignore[attr-defined]
    t_closeness: TClosenessOption = None,
    beta_likeness: BetaOption = None,
    beta_basic: BetaBasicOption = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the rows as one JSON document at the end, no table.")
    ] = False,
) -> None:
    """One row per (algorithm, k): NCP, utility, classes, distinct tuples, suppressed, time.

    Example: sbc-sql compare --db clinic.duckdb --table patients --k 2,5,10 --plot ncp.png
    """
    kept = "Interrupted; the releases finished before it are kept, the one under way was rolled back."
    with reported(kept if keep_releases else INTERRUPTED):
        from . import compare as cmp
        from .hierarchies import parse_hierarchy_options
        from .privacy.criteria import Criteria

        ks = cmp.parse_ks(k)
        # the outputs are checked before any work, so that none is lost for the want of one
        cmp.check_outputs(csv_path, plot)
        if not as_json:
            typer.echo(cmp.table_text([]).splitlines()[0])
        rows = cmp.compare(
            db,
            table,
            ks,
            None if algorithms is None else [a.strip() for a in algorithms.split(",") if a.strip()],
            keep_releases=keep_releases,
            criteria=Criteria(l_diversity, l_model.value, t_closeness, beta_likeness, beta_basic),
            **_roles(qi, sensitive, drop, keep),
            hierarchies=parse_hierarchy_options(hierarchy),
            max_suppression=max_suppression,
            on_row=None if as_json else (lambda r: typer.echo(cmp.table_text([r]).splitlines()[1])),
        )
        if csv_path:
            cmp.write_csv(rows, csv_path)
        if plot:
            cmp.plot(rows, plot, title=f"{table}: total NCP against k")
    if as_json:
        found = [dataclasses.asdict(r) for r in rows]
        typer.echo(documents.dumps(documents.document("compare", {"table": table, "rows": found})))


Domain = enum.Enum("Domain", {n: n for n in choices.DOMAIN}, type=str)  # type: ignore[misc]
Purpose = enum.Enum("Purpose", {n: n for n in choices.PURPOSE}, type=str)  # type: ignore[misc]
Criticality = enum.Enum("Criticality", {n: n for n in choices.CRITICALITY}, type=str)  # type: ignore[misc]


@app.command("suggest-k")
def suggest_k_cmd(
    table: Annotated[
        str, typer.Option("--table", "-t", help="Table or view to anonymize, or a CSV/Parquet path.")
    ],
    db: ReadDbOption = None,
    qi: QiOption = None,
    sensitive: SensitiveOption = None,
    drop: DropOption = None,
    keep: KeepOption = None,
    max_loss: Annotated[
        float | None,
        typer.Option(help="The largest total NCP allowed (0 no loss, 1 all), e.g. --max-loss 0.05."),
    ] = None,
    domain: Annotated[
        Domain | None, typer.Option(help="The data's domain (with --purpose and --criticality).")
    ] = None,
    purpose: Annotated[Purpose | None, typer.Option(help="What the release is for.")] = None,
    criticality: Annotated[
        Criticality | None, typer.Option(help="How identifying and sensitive its columns are.")
    ] = None,
    k_min: Annotated[int, typer.Option(help="The smallest k tried, e.g. --k-min 5.")] = 2,
    k_max: Annotated[
        int | None, typer.Option(help="The largest k tried (default: half the rows), e.g. --k-max 50.")
    ] = None,
    apply: Annotated[
        bool, typer.Option("--apply", help="Write the chosen k's verified release, as anonymize does.")
    ] = False,
    output: Annotated[
        str | None,
        typer.Option("--output", "-o", help="With --apply: the release's name (default <table>_k<k>)."),
    ] = None,
    algorithm: AlgorithmOption = Algorithm[choices.DEFAULT_ALGORITHM],
    max_suppression: Annotated[
        float, typer.Option(help="Share of rows that may be suppressed where the criteria cannot place them.")
    ] = 0.01,
    l_diversity: LDiversityOption = None,
    l_model: LModelOption = LModel.distinct,  # type: ignore[attr-defined]
    t_closeness: TClosenessOption = None,
    beta_likeness: BetaOption = None,
    beta_basic: BetaBasicOption = False,
    max_width: MaxWidthOption = None,
    max_values: MaxValuesOption = None,
    engine: EngineOption = EngineName.duckdb,  # type: ignore[attr-defined]
    spark_master: SparkMasterOption = None,
    spark_conf: SparkConfOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No line per k tried on stderr.")] = False,
) -> None:
    """The largest k whose verified release keeps its total NCP under a threshold: --max-loss,
    or one derived from the data's --domain, the release's --purpose and its --criticality.
    k is doubled from --k-min until over the threshold, then bisected; each k is clustered,
    verified and measured, and nothing is written without --apply.

    Example: sbc-sql suggest-k --db clinic.duckdb -t patients --max-loss 0.05

    With Apache Spark: sbc-sql suggest-k --engine spark -t data/visits.parquet --max-loss 0.1
    """
    conf = _check_engine(engine, db, spark_master, spark_conf)

    def step(s: "Step") -> None:
        if not quiet:
            typer.echo(
                f"k={s.k}: NCP {s.ncp:.4f} ({'under' if s.under else 'over'}), {s.seconds:.2f} s"
                if s.ncp is not None
                else f"k={s.k}: no release ({s.failed}), counted as over",
                err=True,
            )

    with reported(), _database(engine, db, spark_master, conf) as database:
        from .quality import suggest

        found = suggest.suggest_k(
            database,
            table,
            max_loss=max_loss,
            domain=None if domain is None else domain.value,
            purpose=None if purpose is None else purpose.value,
            criticality=None if criticality is None else criticality.value,
            k_min=k_min,
            k_max=k_max,
            apply=apply,
            output=output,
            **_roles(qi, sensitive, drop, keep),
            algorithm=algorithm.value,
            max_suppression=max_suppression,
            l_diversity=l_diversity,
            l_model=l_model.value,
            t_closeness=t_closeness,
            beta_likeness=beta_likeness,
            beta_basic=beta_basic,
            max_width=max_width,
            max_values=max_values,
            on_step=step,
            log=lambda line: typer.echo(line, err=True) if line.startswith("warning: ") else None,
        )
    if as_json:
        typer.echo(documents.dumps(documents.document("suggest-k", found.as_dict())))
        return
    typer.echo(suggest.text(found))


# ---- a run split with another warehouse (sbc_sql.warehouse) ----

RowIdOption = Annotated[
    str | None,
    typer.Option(
        help="An integer key column (unique, never NULL) that names each row for the warehouse "
        "(default: the row's position in the source, which the warehouse must then hold in a "
        "column sbc_row_id), e.g. --row-id patient_id."
    ),
]
WarehouseTable = Annotated[
    str,
    typer.Option(
        "--table", "-t", help="Table or view to anonymize, or a CSV/Parquet path, e.g. -t patients."
    ),
]
WarehouseK = Annotated[int, typer.Option("--k", "-k", help="Minimum class size, 2 or more, e.g. -k 5.")]
WarehouseDb = Annotated[
    str | None, typer.Option(help="DuckDB database file, read only, e.g. --db clinic.duckdb.")
]
WarehouseMode = Annotated[Mode, typer.Option(help="auto, exact (one block) or blocks.")]
WarehouseLeftover = Annotated[
    Leftover,
    typer.Option(help="Rows left when fewer than k remain: join the nearest class, the last, or suppress."),
]
WarehouseWeights = Annotated[
    str | None, typer.Option(help="Per-QI weights; only their ratios matter, e.g. --weights age=2,zip=0.5.")
]
WarehouseSuppression = Annotated[
    float,
    typer.Option(help="Share of rows that may be suppressed where the criteria cannot place them."),
]
Dialect = enum.Enum("Dialect", {n: n for n in choices.DIALECTS}, type=str)  # type: ignore[misc]


def _warehouse_options(**given: Any) -> dict[str, Any]:
    """The run options of the warehouse commands, as :func:`sbc_sql.run.make_options` takes them."""
    from .privacy.criteria import Criteria

    criteria = Criteria(
        given.pop("l_diversity"),
        given.pop("l_model").value,
        given.pop("t_closeness"),
        given.pop("beta_likeness"),
        given.pop("beta_basic"),
    )
    out: dict[str, Any] = dict(given)
    for name in ("qi", "sensitive", "drop", "keep"):
        out[name] = out[name] or ()
    for name in ("algorithm", "mode", "leftover"):
        out[name] = out[name].value
    return {**out, "criteria": criteria}


@app.command("sql")
def sql_cmd(
    table: WarehouseTable,
    k: WarehouseK,
    dialect: Annotated[Dialect, typer.Option(help="The warehouse's SQL dialect.")],
    db: WarehouseDb = None,
    qi: QiOption = None,
    sensitive: SensitiveOption = None,
    drop: DropOption = None,
    keep: KeepOption = None,
    row_id: RowIdOption = None,
    labels: Annotated[
        str, typer.Option(help="The warehouse table the class ids are loaded into, e.g. --labels sbc_labels.")
    ] = "sbc_labels",
    source: Annotated[
        str | None,
        typer.Option(
            help="The source table's name in the warehouse (default: --table, or a file's name "
            "without its ending), e.g. --source analytics.patients."
        ),
    ] = None,
    output: Annotated[
        str | None, typer.Option("--output", "-o", help="Release name (default <table>_k<k>).")
    ] = None,
    algorithm: AlgorithmOption = Algorithm[choices.DEFAULT_ALGORITHM],
    mode: WarehouseMode = Mode.auto,  # type: ignore[attr-defined]
    leftover: WarehouseLeftover = Leftover.nearest,  # type: ignore[attr-defined]
    weights: WarehouseWeights = None,
    max_suppression: WarehouseSuppression = 0.01,
    l_diversity: LDiversityOption = None,
    l_model: LModelOption = LModel.distinct,  # type: ignore[attr-defined]
    t_closeness: TClosenessOption = None,
    beta_likeness: BetaOption = None,
    beta_basic: BetaBasicOption = False,
) -> None:
    """Print a run's SQL for another warehouse: the release built from the class ids that
    'sbc-sql cluster' writes, its verification and NCP. The statistics are computed here.

    Example: sbc-sql sql --dialect snowflake --db clinic.duckdb -t patients -k 5 --row-id id
    """

    def warn(line: str) -> None:  # stdout holds the SQL alone
        if line.startswith("warning: "):
            typer.echo(line, err=True)

    with reported():
        from . import warehouse

        text = warehouse.print_sql(
            db,
            table,
            k,
            dialect.value,
            row_id=row_id,
            labels=labels,
            source=source,
            log=warn,
            **_warehouse_options(
                qi=qi,
                sensitive=sensitive,
                drop=drop,
                keep=keep,
                output=output,
                algorithm=algorithm,
                mode=mode,
                leftover=leftover,
                weights=weights,
                max_suppression=max_suppression,
                l_diversity=l_diversity,
                l_model=l_model,
                t_closeness=t_closeness,
                beta_likeness=beta_likeness,
                beta_basic=beta_basic,
            ),
        )
    typer.echo(text, nl=False)


@app.command("cluster")
def cluster_cmd(
    table: WarehouseTable,
    k: WarehouseK,
    out: Annotated[str, typer.Option(help="Where to write (row_id, eq_class): .parquet or .csv.")],
    db: WarehouseDb = None,
    qi: QiOption = None,
    sensitive: SensitiveOption = None,
    drop: DropOption = None,
    keep: KeepOption = None,
    row_id: RowIdOption = None,
    algorithm: AlgorithmOption = Algorithm[choices.DEFAULT_ALGORITHM],
    mode: WarehouseMode = Mode.auto,  # type: ignore[attr-defined]
    leftover: WarehouseLeftover = Leftover.nearest,  # type: ignore[attr-defined]
    weights: WarehouseWeights = None,
    max_suppression: WarehouseSuppression = 0.01,
    workers: Annotated[int | None, typer.Option(help="Threads for block mode (default: all cores).")] = None,
    l_diversity: LDiversityOption = None,
    l_model: LModelOption = LModel.distinct,  # type: ignore[attr-defined]
    t_closeness: TClosenessOption = None,
    beta_likeness: BetaOption = None,
    beta_basic: BetaBasicOption = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the summary and errors.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Cluster TABLE and write each row's class id (row_id, eq_class; eq_class < 0: suppressed)
    for the SQL that 'sbc-sql sql' prints; nothing is written to the database.

    Example: sbc-sql cluster --db clinic.duckdb -t patients -k 5 --row-id id --out ids.parquet
    """

    def log(line: str) -> None:
        if not quiet or line.startswith("warning: "):
            typer.echo(line, err=True)

    with reported(), ProgressBar("clustering", enabled=False if quiet else None) as bar:
        from . import warehouse

        rows, suppressed = warehouse.cluster_ids(
            db,
            table,
            k,
            out,
            row_id=row_id,
            log=log,
            progress=bar,
            **_warehouse_options(
                qi=qi,
                sensitive=sensitive,
                drop=drop,
                keep=keep,
                algorithm=algorithm,
                mode=mode,
                leftover=leftover,
                weights=weights,
                max_suppression=max_suppression,
                workers=workers,
                l_diversity=l_diversity,
                l_model=l_model,
                t_closeness=t_closeness,
                beta_likeness=beta_likeness,
                beta_basic=beta_basic,
            ),
        )
    if as_json:
        summary = {"out": out, "rows": rows, "suppressed": suppressed}
        typer.echo(documents.dumps(documents.document("cluster", summary)))
        return
    typer.echo(f"wrote {rows:,} class ids ({suppressed:,} rows suppressed) to {out}")


@app.command("install-sql")
def install_sql_cmd(
    db: Annotated[str, typer.Option(help="The PostgreSQL database, e.g. postgresql://admin@host/clinic.")],
    python_path: Annotated[
        list[str] | None,
        typer.Option(
            "--python-path",
            help="A directory the server's Python imports sbc-sql and its packages from, as the "
            "server sees it; repeatable (default: where this sbc-sql runs from). It and the "
            "directories above it must be writable only by root or the server's user.",
        ),
    ] = None,
    grant: Annotated[
        list[str] | None,
        typer.Option(help="A role that may call the functions, repeatable (default: superusers only)."),
    ] = None,
    uninstall: Annotated[
        bool, typer.Option("--uninstall", help="Remove what install-sql created, and nothing else.")
    ] = False,
) -> None:
    """Make sbc-sql callable from SQL in a PostgreSQL database: the schema sbc with
    sbc.anonymize(...), sbc.verify(...), sbc.measure(...) and sbc.version(), PL/Python
    functions (plpython3u) that run inside the server, in the caller's transaction. Needs a
    superuser, and sbc-sql installed where the server's Python can import it. Running it again
    replaces the functions; --uninstall removes them.

    Example: sbc-sql install-sql --db postgresql://postgres@localhost/clinic, then in SQL:
    SELECT sbc.anonymize(source => 'public.patients', k => 5, output => 'patients_k5');
    """
    with reported():
        from . import install_sql

        if uninstall:
            dropped = install_sql.uninstall(db)
            typer.echo("dropped " + ", ".join(dropped) if dropped else "nothing to uninstall: no schema sbc")
            return
        installed = install_sql.install(db, python_path=python_path, grant=grant or ())
    typer.echo(install_sql.described(db, installed))
