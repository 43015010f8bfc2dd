"""Every option of every command, declared once: its keyword, type, default, help, flags and
choices, and where it exists: the command line (``cli``), its environment variable
(``env``, ``SBC_SQL_<LONG OPTION>``), the Python API (``api``) and the SQL functions
``install-sql`` creates (``sql``), with the reason where it does not.

The surfaces come from here: the command line's typer parameters (:mod:`sbc_sql.cli`), the
``--config`` file's keys (read off those parameters, :mod:`sbc_sql.config`), the variables
the command line reads (:mod:`sbc_sql.cli.environment`), the SQL functions' argument order
(``sbc_sql.server.PARAMETERS``) and the option reference in docs/options.md; tests/test_options.py holds
the API's keywords and ``sql/functions/install.sql`` to it.

Pure data on :mod:`sbc_sql.choices`, which imports nothing: the command line reads this
table at every start, and ``--help`` loads no more than typer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from .. import choices
from ..privacy import registry as criteria

#: the surfaces an option may exist in
SURFACES = ("cli", "env", "api", "sql")

#: what every option's environment variable starts with: ``SBC_SQL_`` and the long option in
#: capitals, dashes as underscores (``--max-suppression``: ``SBC_SQL_MAX_SUPPRESSION``)
ENV_PREFIX = "SBC_SQL_"

#: the other variables sbc-sql reads, none an option's: what each does
OTHER_VARIABLES: Mapping[str, str] = {
    "SBC_SQL_KERNELS": "jit: run the default sbca on numba's JIT instead of the kernels compiled at install",
}


#: the value an option that declares no metavar shows in --help, by its kind
KIND_METAVARS: Mapping[type, str] = {str: "TEXT", int: "INTEGER", float: "NUMBER"}


@dataclass(frozen=True)
class Option:
    """One option of one or more commands, as every surface spells it."""

    #: the command function's keyword (``as_json`` for ``--json``)
    name: str
    #: one value's type: str, int, float or bool (object: a Python value no flag carries)
    kind: type
    help: str = ""
    #: the flags typer is given (() : ``--<name with dashes>``), e.g. ("--k", "-k") or
    #: ("--csv-header/--no-csv-header",)
    flags: tuple[str, ...] = ()
    default: object = None
    required: bool = False
    #: repeatable (a list)
    multiple: bool = False
    choices: tuple[str, ...] = ()
    metavar: str | None = None
    show_default: bool = True
    #: the API's keyword and the SQL function's argument, where they differ from ``name``
    api: str = ""
    sql: str = ""
    #: why the option is not in a surface ("" : it is)
    no_cli: str = ""
    no_env: str = ""
    no_api: str = ""
    no_sql: str = ""
    #: the commands that take it, filled in from :data:`COMMANDS`
    commands: tuple[str, ...] = ()

    @property
    def decls(self) -> tuple[str, ...]:
        return self.flags or ("--" + self.name.replace("_", "-"),)

    @property
    def long(self) -> str:
        """The long flag (``--csv-header`` of ``--csv-header/--no-csv-header``)."""
        return self.decls[0].split("/")[0]

    @property
    def env(self) -> str:
        """The environment variable that sets the option: ``SBC_SQL_`` and the long option
        (``--json``: ``SBC_SQL_JSON``, ``--csv-header/--no-csv-header``: ``SBC_SQL_CSV_HEADER``)."""
        return ENV_PREFIX + self.long[2:].upper().replace("-", "_")

    @property
    def api_name(self) -> str:
        return self.api or self.name

    @property
    def sql_name(self) -> str:
        return self.sql or self.name

    @property
    def shown_metavar(self) -> str | None:
        """What ``--help`` shows for the option's value: its own metavar, else a word for its
        kind, never a Python type (None: a flag, or a choice, whose choices are shown)."""
        if self.metavar is not None:
            return self.metavar
        if self.choices or self.kind is bool:
            return None
        return KIND_METAVARS[self.kind]

    def absent(self, surface: str) -> str:
        """Why the option is not in ``surface`` ("" : it is)."""
        if surface == "env":
            return self.no_cli or self.no_env
        return {"cli": self.no_cli, "api": self.no_api, "sql": self.no_sql}[surface]


def _columns(name: str, role: str, example: str) -> Option:
    """A role option: column names, repeatable or comma-separated."""
    flag = "--" + name
    return Option(
        name,
        str,
        help=f"{role} (repeatable or comma-separated), e.g. {flag} {example}.",
        multiple=True,
        metavar="COLUMNS",
        show_default=False,
    )


# ---- why an option is missing from a surface ----

#: the command's own output, which the API returns as objects
PRINTED = "how the command prints; the API returns the result as an object"
#: the lines a command prints on stderr, which the API hands to a callback
LOGGED = "the API hands the lines to its log= callback (None: none)"
#: a callback: what it receives, the command prints
CALLBACK = "a callback of the API: the command prints what it would receive"
#: the engine flags: the command builds the engine the API takes as its database
ENGINE_BUILT = "the command builds a Spark engine from it, which the API takes as its database"
#: the SQL functions run inside the server, in the caller's database and transaction
IN_SERVER = "the SQL functions run in the caller's PostgreSQL database and transaction"
#: nor read nor write the server's files
NO_FILES = "the SQL functions never read or write the server's files"
#: and answer in jsonb
JSONB = "the SQL functions return their summary as jsonb and print nothing"
#: an option the SQL function does not take yet
NOT_IN_SQL_YET = "not an argument of the SQL function yet"
#: the run's options object that the warehouse commands and compare build from their flags
OPTIONS_OBJECT = "the run's options (sbc_sql.run.make_options): the command builds them from its flags"

#: the options that name what a run reads or writes: no variable sets them
THE_DATA = (
    "names the data the command reads, which each run names itself: a variable left set would "
    "point a later command at a table it was not given"
)
WHAT_IT_WRITES = (
    "names what the run writes, which each run names itself: a variable left set would give "
    "every later run the same name"
)
#: a switch that overwrites or removes
OVERWRITES = (
    "overwrites or removes what exists: only this run's flag or --config file asks that, never a "
    "variable left set"
)

# ---- where the data is ----

TABLE_READ = Option(
    "table",
    str,
    help="Table or view to anonymize, or a CSV/Parquet path, e.g. -t patients.",
    flags=("--table", "-t"),
    required=True,
    no_env=THE_DATA,
)
DB_READ = Option(
    "db",
    str,
    help="DuckDB database file (or a postgresql:// URL).",
    show_default=False,
    api="database",
    no_sql=IN_SERVER,
)
DB_WAREHOUSE = Option(
    "db", str, help="DuckDB database file, read only, e.g. --db clinic.duckdb.", api="database"
)
ORIGINAL = Option(
    "original", str, help="The input table (with --engine spark: or a path).", required=True, no_env=THE_DATA
)
RELEASE = Option(
    "release",
    str,
    help="The release (view or table; with --engine spark: or a path).",
    required=True,
    no_env=THE_DATA,
)
ATTACH_READ = Option(
    "attach",
    str,
    help="Another DuckDB file to read from, read-only (repeatable), as FILE or FILE:ALIAS, "
    "e.g. --attach clinic.duckdb with --original clinic.main.patients.",
    multiple=True,
    metavar="FILE[:ALIAS]",
    no_sql=IN_SERVER,
)
ENGINE = Option(
    "engine",
    str,
    help="Where the SQL runs: duckdb (--db; a postgresql:// URL is PostgreSQL) or spark "
    "(Apache Spark: tables are Parquet/CSV paths or tables of its catalog).",
    flags=("--engine",),
    default="duckdb",
    choices=choices.ENGINES,
    no_api=ENGINE_BUILT,
    no_sql=IN_SERVER,
)
SPARK_MASTER = Option(
    "spark_master",
    str,
    help="With --engine spark: the master to run on (default local[*]), e.g. --spark-master "
    "local[4] or spark://host:7077.",
    show_default=False,
    no_api=ENGINE_BUILT,
    no_sql=IN_SERVER,
)
SPARK_CONF = Option(
    "spark_conf",
    str,
    help="With --engine spark: a Spark property (repeatable), e.g. --spark-conf spark.driver.memory=4g.",
    multiple=True,
    metavar="KEY=VALUE",
    show_default=False,
    no_api=ENGINE_BUILT,
    no_sql=IN_SERVER,
)
#: the engine options, alike wherever a command reads through an engine
ENGINE_OPTIONS = (ENGINE, SPARK_MASTER, SPARK_CONF)

# ---- the columns' roles ----

QI = _columns("qi", "Quasi-identifiers", "age,zip")
SENSITIVE = _columns("sensitive", "Sensitive columns, released as they are", "diagnosis")
DROP = dataclasses.replace(
    _columns("drop", "Direct identifiers, never released", "name,ssn"), sql="drop_columns"
)
KEEP = _columns("keep", "Insensitive columns, released as they are", "visit_id")
ALLOW_DETERMINANT = _columns(
    "allow_determinant",
    "Kept columns let to determine a quasi-identifier, released with a warning; any other kept "
    "column whose value gives a QI's on 99% of the rows is refused, as it would publish that QI "
    "as it is",
    "education_num",
)
#: the role options, alike wherever a table is anonymized
ROLE_OPTIONS = (QI, SENSITIVE, DROP, KEEP, ALLOW_DETERMINANT)

# ---- how a run clusters ----

K = Option("k", int, help="Minimum class size, 2 or more, e.g. -k 5.", flags=("--k", "-k"), required=True)
LEFTOVER = Option(
    "leftover",
    str,
    help="Rows left when fewer than k remain: join the nearest class, the last, or suppress.",
    default="nearest",
    choices=choices.LEFTOVER_MODES,
)
WEIGHTS = Option(
    "weights", str, help="Per-QI weights; only their ratios matter, e.g. --weights age=2,zip=0.5."
)
ALGORITHM = Option(
    "algorithm",
    str,
    help=choices.algorithms_help(),
    default=choices.DEFAULT_ALGORITHM,
    choices=tuple(choices.ALGORITHMS),
)
MAX_SUPPRESSION = Option(
    "max_suppression",
    float,
    help="Share of rows that may be suppressed: by datafly/incognito, or where the criteria "
    "cannot place them, e.g. --max-suppression 0.05.",
    default=0.01,
)
MAX_SUPPRESSION_CRITERIA = Option(
    "max_suppression",
    float,
    help="Share of rows that may be suppressed where the criteria cannot place them.",
    default=0.01,
)
MAX_WIDTH = Option(
    "max_width",
    str,
    help="The widest range a class may span on a numeric QI, in the column's units (days for a "
    "date or timestamp), repeatable or comma-separated, e.g. --max-width age=10,birth_date=365. "
    "Rows that fit no class are suppressed (within --max-suppression).",
    flags=("--max-width",),
    multiple=True,
    metavar="COLUMN=WIDTH",
    no_sql=NOT_IN_SQL_YET,
)
MAX_VALUES = Option(
    "max_values",
    str,
    help="The most values a class's set may hold on a categorical QI, e.g. --max-values "
    "nationality=3. Rows that fit no class are suppressed (within --max-suppression).",
    flags=("--max-values",),
    multiple=True,
    metavar="COLUMN=COUNT",
    no_sql=NOT_IN_SQL_YET,
)
POPULATION_OPTIONS = (
    Option(
        "population",
        str,
        help="A population table (or CSV/Parquet file) holding the QIs under the same names: "
        "the people the table was drawn from, whom --k-map and --delta-max match each class "
        "against, e.g. --population residents.",
    ),
    Option(
        "k_map",
        int,
        help="k-map (with --population): every class matches at least K population rows "
        "(inside its ranges and sets), e.g. --k-map 10.",
        metavar="K",
    ),
    Option(
        "delta_min",
        float,
        help="delta-presence (with --population): every class's rows are at least D of the "
        "population rows it matches (default 0), e.g. --delta-min 0.01.",
        metavar="D",
    ),
    Option(
        "delta_max",
        float,
        help="delta-presence (with --population): every class's rows are at most D of the "
        "population rows it matches (default 1), e.g. --delta-max 0.5.",
        metavar="D",
    ),
)
RECODE = Option(
    "recode",
    str,
    help="How each class's QIs are released: generalize (numeric QIs as ranges, categorical "
    "QIs as value sets) or microaggregate (one value per QI: see --aggregate and "
    "--aggregate-categorical).",
    default="generalize",
    choices=choices.RECODES,
)
AGGREGATE = Option(
    "aggregate",
    str,
    help="With --recode microaggregate: each class's numeric QIs released as their mean "
    "(rounded to the column's type), median (the lower middle value) or mode (default: mean).",
    choices=choices.AGGREGATES,
)
AGGREGATE_CATEGORICAL = Option(
    "aggregate_categorical",
    str,
    help="With --recode microaggregate: each class's categorical QIs released as their mode "
    "(ties: the smallest value) or values, their value set as generalized (default: mode).",
    choices=choices.CATEGORICAL_AGGREGATES,
)
MODE_WAREHOUSE = Option(
    "mode",
    str,
    help="auto, exact (one block), blocks, or streamed (blocks streamed from the database).",
    default="auto",
    choices=choices.MODES,
)
ROW_ID = Option(
    "row_id",
    str,
    help="An integer key column (unique, never NULL) that names each row for the warehouse "
    "(default: the row's position in the source, which the warehouse must then hold in a "
    "column sbc_row_id), e.g. --row-id patient_id.",
)
TABLE_WAREHOUSE = Option(
    "table",
    str,
    help="Table or view to anonymize, or a CSV/Parquet path, e.g. -t patients.",
    flags=("--table", "-t"),
    required=True,
    no_env=THE_DATA,
)

# ---- the privacy criteria on the sensitive columns, beside k ----


def _criterion_option(declared: criteria.Option) -> Option:
    """A registered criterion's option (:mod:`sbc_sql.privacy.registry`) on every surface."""
    return Option(
        declared.name,
        declared.type,
        help=declared.help,
        default=declared.default,
        choices=declared.choices,
        metavar=declared.metavar or None,
    )


#: the registered criteria's options, one block wherever a command keeps or checks them
CRITERIA_OPTIONS = tuple(_criterion_option(o) for o in criteria.options())
#: beta-likeness's form, which evaluate's figure of the classes beta-likeness forces reads too
(BETA_BASIC,) = (o for o in CRITERIA_OPTIONS if o.name == "beta_basic")

# ---- what a command prints ----

AS_JSON_SUMMARY = Option(
    "as_json",
    bool,
    help="Print the summary as JSON.",
    flags=("--json",),
    default=False,
    no_api=PRINTED,
    no_sql=JSONB,
)
AS_JSON = Option(
    "as_json", bool, help="Print JSON.", flags=("--json",), default=False, no_api=PRINTED, no_sql=JSONB
)

# ---- what only the API takes ----

LOG = Option(
    "log", object, help="Receives each line a command prints on stderr.", no_cli=CALLBACK, no_sql=JSONB
)
PROGRESS = Option(
    "progress", object, help="Receives (done, total) as the clustering goes.", no_cli=CALLBACK, no_sql=JSONB
)
#: evaluate's and report's long steps: (step, done, total), which the command shows as bars
STEP_PROGRESS = Option(
    "progress",
    object,
    help="Receives (step, done, total) as a long step goes (coverage, query batches, the curve's k).",
    no_cli=CALLBACK,
)
RUN_OPTIONS = Option("options", object, help="The run's options (make_options).", no_cli=OPTIONS_OBJECT)


def _in_api(option: Option, api: str = "") -> Option:
    """``option`` as a command whose API takes it (under the keyword ``api``) declares it."""
    return dataclasses.replace(option, no_api="", api=api or option.api)


ANONYMIZE = (
    Option(
        "table",
        str,
        help="Table or view to anonymize ([database.][schema.]name), or a CSV/Parquet path, "
        "e.g. -t patients or -t ward.main.patients.",
        flags=("--table", "-t"),
        required=True,
        sql="source",
        no_env=THE_DATA,
    ),
    K,
    Option(
        "db",
        str,
        help="DuckDB database file (created for a file input), e.g. --db clinic.duckdb.",
        api="database",
        no_sql=IN_SERVER,
    ),
    *ROLE_OPTIONS,
    Option(
        "output",
        str,
        help="Release name (default <table>_k<k>): the view <output> over the tables <output>_rows "
        "and <output>_classes, and the text view <output>_view. E.g. -o patients_public.",
        flags=("--output", "-o"),
        no_env=WHAT_IT_WRITES,
    ),
    Option(
        "replace",
        bool,
        help="Overwrite an existing release of that name (or --out-file).",
        flags=("--replace",),
        default=False,
        no_env=OVERWRITES,
    ),
    Option(
        "incremental",
        bool,
        help="Keep the release open to refresh: the run also writes <output>_seen (a "
        "fingerprint of each released row) and <output>_pending (the rows not released yet), "
        "neither of them published, and numbers the released rows version 1 "
        "(release_version); sbc-sql refresh then adds the source's new rows without "
        "changing a published class.",
        flags=("--incremental",),
        default=False,
    ),
    LEFTOVER,
    RECODE,
    AGGREGATE,
    AGGREGATE_CATEGORICAL,
    WEIGHTS,
    Option(
        "out_file",
        str,
        help="Also export the release; the ending picks the format: .parquet (value sets as "
        "lists), .csv (the readable text view), .json (an array) or .ndjson (a row a line). "
        "E.g. --out-file release.parquet.",
        no_sql=NO_FILES,
        no_env=WHAT_IT_WRITES,
    ),
    Option(
        "sql",
        bool,
        help="Print the run's SQL; write nothing.",
        flags=("--sql",),
        default=False,
        api="sql_only",
        no_sql=NOT_IN_SQL_YET,
    ),
    Option(
        "mode",
        str,
        help="auto (sbca: blocks at every size, streamed from the database above --held-rows; "
        "sbca-paper: blocks above a size threshold), exact (one block), blocks, or streamed "
        "(sbca's blocks streamed from the database a run of blocks at a time, at any size).",
        default="auto",
        choices=choices.MODES,
    ),
    Option(
        "exact",
        bool,
        help="Cluster the whole table as one block (same as --mode exact).",
        flags=("--exact",),
        default=False,
        no_api="the API takes mode='exact'",
        no_sql="the SQL function takes mode => 'exact'",
    ),
    Option(
        "workers",
        int,
        help="Threads for block mode (default: all cores), e.g. --workers 2.",
        no_sql="the SQL function clusters on one thread, inside the server's process",
    ),
    Option(
        "block_rows",
        int,
        help="Rows per block of the default sbca (default: max(1536, 160 k)). Every row of a "
        "block is a candidate for each class: larger blocks lower NCP, at a cost "
        "quadratic in the block size. E.g. --block-rows 4096.",
        no_sql=NOT_IN_SQL_YET,
    ),
    Option(
        "held_rows",
        int,
        help="The most rows the default sbca holds in memory at once (default: 1,000,000). "
        "A larger table is clustered in block mode streamed from the database, a run of "
        "blocks at a time, while the database sorts and holds the rows (spilling to disk as "
        "its memory limit asks). E.g. --held-rows 500000.",
        no_sql="inside PostgreSQL the function holds the rows it clusters: run the command "
        "line or the Python API for a table larger than memory",
    ),
    ALGORITHM,
    Option(
        "paper",
        bool,
        help="The paper's SBCA exactly (same as --algorithm sbca-paper).",
        flags=("--paper",),
        default=False,
        no_api="the API takes algorithm='sbca-paper'",
        no_sql="the SQL function takes algorithm => 'sbca-paper'",
    ),
    Option(
        "hierarchy",
        str,
        help="ARX-layout hierarchy for datafly/incognito (repeatable), e.g. --hierarchy age=age.csv.",
        multiple=True,
        metavar="COLUMN=FILE",
        api="hierarchies",
        no_sql=NO_FILES,
    ),
    MAX_SUPPRESSION,
    Option(
        "memory_limit",
        str,
        help="Cap DuckDB's memory for the run (it spills to disk beyond), e.g. --memory-limit 2GB.",
        no_sql="DuckDB's setting; inside PostgreSQL the server's own settings hold",
    ),
    Option(
        "csv_delimiter",
        str,
        help="The field delimiter of a CSV input (default: sniffed), e.g. --csv-delimiter ';'.",
        no_sql=NO_FILES,
    ),
    Option(
        "csv_header",
        bool,
        help="Whether a CSV input's first line names its columns (default: sniffed).",
        flags=("--csv-header/--no-csv-header",),
        show_default=False,
        no_sql=NO_FILES,
    ),
    Option(
        "attach",
        str,
        help="Another DuckDB file to read the table from, read-only (repeatable), as FILE or "
        "FILE:ALIAS; then -t ALIAS.main.t. E.g. --attach ward.duckdb:ward.",
        multiple=True,
        metavar="FILE[:ALIAS]",
        no_sql=NO_FILES,
    ),
    Option(
        "target_db",
        str,
        help="Write the release into this DuckDB file (created if missing) instead of --db, "
        "so that it can be shipped alone; --db is then opened read-only. E.g. --target-db "
        "release.duckdb.",
        no_sql=NO_FILES,
    ),
    *CRITERIA_OPTIONS,
    Option(
        "bk_threshold",
        float,
        help="Background knowledge: the largest Jensen-Shannon divergence (bits, in (0, 1]) between "
        "two members' beliefs about their sensitive value (kinc, kagg, beta-ge; default 0.8; "
        "with the default algorithm, each group of alike beliefs is clustered alone), e.g. "
        "--bk-threshold 0.5.",
        no_sql=NOT_IN_SQL_YET,
    ),
    Option(
        "bk_estimator",
        str,
        help="How the background knowledge is estimated from the table: nb (naive Bayes, the "
        "default), combo (each QI combination's shares shrunk toward nb) or kernel.",
        no_sql=NOT_IN_SQL_YET,
    ),
    Option(
        "bk",
        str,
        help="The background knowledge as a table or CSV/Parquet file: QI key columns, then one "
        "column per sensitive value (or sensitive_value, probability), e.g. --bk priors.csv.",
        flags=("--bk",),
        no_sql=NOT_IN_SQL_YET,
    ),
    Option("seed", int, help="Seed of beta-ge's random choices (default 0), e.g. --seed 7."),
    MAX_WIDTH,
    MAX_VALUES,
    *POPULATION_OPTIONS,
    Option(
        "target",
        str,
        help="A label column released as it is (e.g. income) that the classes are kept pure "
        "on, for a release meant to train models; never a QI. E.g. --target income.",
        no_sql=NOT_IN_SQL_YET,
    ),
    Option(
        "target_weight",
        float,
        help="With --target: how many points of total NCP one point of CM (rows outside their "
        "class's majority label) is worth (default 0.03). E.g. --target-weight 0.1.",
        no_sql=NOT_IN_SQL_YET,
    ),
    Option(
        "rows",
        bool,
        help="Cluster every row, not the distinct QI tuples each standing for its rows (the "
        "default's way on k alone in DuckDB, when the table repeats its tuples).",
        flags=("--rows",),
        default=False,
        api="tuples",
        no_sql=NOT_IN_SQL_YET,
    ),
    _in_api(ENGINE),
    SPARK_MASTER,
    SPARK_CONF,
    Option(
        "report_file",
        str,
        help="Also write the release's HTML report (as 'sbc-sql report' does, at its default "
        "--curve-k) once it is verified; an existing file only with --replace. E.g. --report "
        "report.html.",
        flags=("--report",),
        no_api="the API's report() writes the page of a release once it is made",
        no_sql=NO_FILES,
        no_env=WHAT_IT_WRITES,
    ),
    AS_JSON_SUMMARY,
    Option(
        "quiet",
        bool,
        help="Print only the summary and errors: no roles, no progress.",
        flags=("--quiet", "-q"),
        default=False,
        no_api=LOGGED,
        no_sql=JSONB,
    ),
    Option(
        "verbose",
        bool,
        help="Also print every SQL statement to stderr as it runs.",
        flags=("--verbose", "-v"),
        default=False,
        no_api="the API hands each statement to its trace= callback",
        no_sql=JSONB,
    ),
    LOG,
    PROGRESS,
    Option("trace", object, help="Receives each statement's SQL as it runs.", no_cli=CALLBACK, no_sql=JSONB),
)

MEASURE = (
    ORIGINAL,
    RELEASE,
    DB_READ,
    ATTACH_READ,
    *ENGINE_OPTIONS,
    AS_JSON,
    Option(
        "weights",
        str,
        help="Per-QI weights (default: the run's, from the release's provenance).",
        no_cli="not a flag of measure yet: the release's provenance gives the run's weights",
    ),
    Option(
        "ranges",
        object,
        help="A numeric QI's domain, overriding the source's, e.g. {'age': (10, 100)}.",
        no_cli="a mapping of ranges, which no flag carries yet",
        no_sql="a mapping of ranges, which no SQL argument carries yet",
    ),
)


VERIFY = (
    ORIGINAL,
    RELEASE,
    Option("k", int, help="The k to check, e.g. -k 5.", flags=("--k", "-k"), required=True),
    DB_READ,
    ATTACH_READ,
    *CRITERIA_OPTIONS,
    Option(
        "max_suppression",
        float,
        help="Share of the input rows a release without provenance may lack (default 0: a "
        "deleted class is not a suppression); over a provenance, a bound on the suppression "
        "it records beside the run's own, e.g. --max-suppression 0.01.",
        flags=("--max-suppression",),
    ),
    _columns("qi", "The auditor's quasi-identifiers (win over comments and provenance)", "age,zip"),
    _columns("identifier", "The auditor's identifiers, refused in any release", "ssn"),
    _columns("sensitive", "The auditor's sensitive columns", "diagnosis"),
    _columns("keep", "Columns the auditor accepts released as they are (an identifier included)", "visit_id"),
    _columns(
        "allow_determinant",
        "Kept columns the auditor accepts determining a quasi-identifier; any other is a problem, "
        "as it publishes that QI as it is",
        "education_num",
    ),
    *POPULATION_OPTIONS,
    *ENGINE_OPTIONS,
    Option(
        "as_json",
        bool,
        help="Print the verdict as JSON.",
        flags=("--json",),
        default=False,
        no_api=PRINTED,
        no_sql=JSONB,
    ),
)

#: the population the table or release was drawn from (quality/population_keys.py)
SAMPLING_FRACTION = Option(
    "sampling_fraction",
    float,
    help="The share of the population the table holds, in (0, 1]: adds the population risk "
    "(population uniques, individual risk), e.g. --sampling-fraction 0.01.",
    metavar="SHARE",
)
SAMPLE_WEIGHTS = Option(
    "sample_weights",
    str,
    help="A numeric column of per-record weights (the people each record stands for, 1 or "
    "more): adds the population risk, e.g. --sample-weights w.",
    metavar="COLUMN",
)

EVALUATE = (
    ORIGINAL,
    RELEASE,
    _in_api(DB_READ, "database_or_con"),
    Option(
        "sensitive",
        str,
        help="Sensitive column: adds l-diversity, t-closeness and beta-likeness (default: the "
        "first the release's provenance declares).",
    ),
    Option("k_r", float, help="RGCP weight of virtual classes.", flags=("--k-r",), default=2.0),
    Option("n_r", float, help="RGCP weight when no class exists.", flags=("--n-r",), default=4.0),
    Option("queries", int, help="Random COUNT queries per selectivity (0: no query error).", default=200),
    Option(
        "selectivity",
        float,
        help="Target query selectivity, repeatable (default 0.01, 0.05, 0.1).",
        multiple=True,
        metavar="SHARE",
        api="selectivities",
    ),
    Option("seed", int, help="Seed of the random queries and of --model's split and classifier.", default=0),
    Option("k", int, help="k of C_AVG (default: smallest class)."),
    Option("weights", str, help="Per-QI weights, e.g. age=2,zip=0.5."),
    SAMPLING_FRACTION,
    SAMPLE_WEIGHTS,
    AS_JSON,
    Option(
        "sql",
        bool,
        help="Print the SQL; run nothing.",
        flags=("--sql",),
        default=False,
        no_api="the API's evaluation_sql() returns the statements",
    ),
    Option(
        "quiet",
        bool,
        help="Print only the figures: no step lines on stderr.",
        flags=("--quiet", "-q"),
        default=False,
        no_api=LOGGED,
    ),
    ATTACH_READ,
    Option(
        "beta_likeness",
        float,
        help="With --sensitive: the smallest class each value may sit in under this beta "
        "(default: the beta the run kept), e.g. --beta-likeness 1.",
    ),
    BETA_BASIC,
    Option(
        "target",
        str,
        help="A label column released verbatim (kept or sensitive): adds CM and class purity, "
        "e.g. --target income.",
        show_default=False,
    ),
    Option(
        "model",
        bool,
        help="With --target: train a classifier on the release and one on the original, score both "
        "on the original's held-out rows (needs pip install 'sbc-sql[ml]').",
        flags=("--model",),
        default=False,
    ),
    Option(
        "classifier",
        str,
        help="--model's classifier: gbt (gradient-boosted trees) or logistic (regression).",
        default="gbt",
        choices=choices.CLASSIFIERS,
    ),
    *ENGINE_OPTIONS,
    LOG,
    STEP_PROGRESS,
)

PROFILE = (
    Option(
        "table",
        str,
        help="Table or view to profile ([database.][schema.]name), or a CSV/Parquet path, e.g. -t patients.",
        flags=("--table", "-t"),
        required=True,
        no_env=THE_DATA,
    ),
    DB_READ,
    *ROLE_OPTIONS,
    SAMPLING_FRACTION,
    SAMPLE_WEIGHTS,
    AS_JSON,
    Option(
        "quiet",
        bool,
        help="Print only the profile: no step lines on stderr.",
        flags=("--quiet", "-q"),
        default=False,
        no_api=LOGGED,
    ),
    ATTACH_READ,
    *ENGINE_OPTIONS,
    LOG,
)

REPORT = (
    ORIGINAL,
    RELEASE,
    Option(
        "output",
        str,
        help="The HTML file to write, e.g. -o report.html.",
        flags=("--output", "-o"),
        required=True,
        no_env=WHAT_IT_WRITES,
    ),
    DB_READ,
    Option(
        "curve_k",
        str,
        help="The k the original is re-clustered at for the NCP-against-k curve (nothing is "
        "kept), or 'none', e.g. --curve-k 2,5,10.",
        default="2,5,10,25,50",
    ),
    Option("sensitive", str, help="The sensitive column shown (default: the first the release declares)."),
    SAMPLING_FRACTION,
    SAMPLE_WEIGHTS,
    Option(
        "replace",
        bool,
        help="Overwrite an existing --output file.",
        flags=("--replace",),
        default=False,
        no_env=OVERWRITES,
    ),
    ATTACH_READ,
    Option(
        "quiet", bool, help="No step lines on stderr.", flags=("--quiet", "-q"), default=False, no_api=LOGGED
    ),
    *ENGINE_OPTIONS,
    LOG,
    STEP_PROGRESS,
)

COMPARE = (
    Option("db", str, help="DuckDB database file.", required=True, api="database"),
    Option(
        "table",
        str,
        help="Table to anonymize, e.g. -t patients.",
        flags=("--table", "-t"),
        required=True,
        no_env=THE_DATA,
    ),
    Option(
        "k",
        str,
        help="Comma-separated k values, e.g. -k 2,5,10.",
        flags=("--k", "-k"),
        required=True,
        api="ks",
    ),
    Option(
        "algorithms",
        str,
        help="Comma-separated algorithms (default: all, or all that keep the criteria asked), "
        "e.g. --algorithms sbca,mondrian.",
        show_default=False,
    ),
    *ROLE_OPTIONS,
    Option(
        "hierarchy",
        str,
        help="col=path.csv hierarchy for datafly/incognito (repeatable).",
        multiple=True,
        metavar="COLUMN=FILE",
        api="hierarchies",
    ),
    MAX_SUPPRESSION,
    Option(
        "plot",
        str,
        help="Write NCP against k as a PNG.",
        no_api="the API returns the rows; compare.plot draws them",
        no_env=WHAT_IT_WRITES,
    ),
    Option(
        "csv_path",
        str,
        help="Write the rows as CSV.",
        flags=("--csv",),
        no_api="the API returns the rows; compare.write_csv writes them",
        no_env=WHAT_IT_WRITES,
    ),
    Option(
        "keep_releases",
        bool,
        help="Keep every release.",
        flags=("--keep-releases/--no-keep-releases",),
        default=False,
    ),
    *CRITERIA_OPTIONS,
    Option(
        "as_json",
        bool,
        help="Print the rows as one JSON document at the end, no table.",
        flags=("--json",),
        default=False,
        no_api=PRINTED,
    ),
    Option("on_row", object, help="Receives each row as it is measured.", no_cli=CALLBACK),
    Option(
        "log",
        object,
        help="Receives the clustering's warnings and the notice that a first run compiles the kernels.",
        no_cli="the command prints the lines the API hands to log= on stderr",
    ),
    RUN_OPTIONS,
)

SUGGEST_K = (
    Option(
        "table",
        str,
        help="Table or view to anonymize, or a CSV/Parquet path.",
        flags=("--table", "-t"),
        required=True,
        no_env=THE_DATA,
    ),
    DB_READ,
    *ROLE_OPTIONS,
    Option("max_loss", float, help="The largest total NCP allowed (0 no loss, 1 all), e.g. --max-loss 0.05."),
    Option(
        "domain",
        str,
        help="The data's domain (with --purpose and --criticality).",
        choices=tuple(choices.DOMAIN),
    ),
    Option("purpose", str, help="What the release is for.", choices=tuple(choices.PURPOSE)),
    Option(
        "criticality",
        str,
        help="How identifying and sensitive its columns are.",
        choices=tuple(choices.CRITICALITY),
    ),
    Option("k_min", int, help="The smallest k tried, e.g. --k-min 5.", default=2),
    Option("k_max", int, help="The largest k tried (default: half the rows), e.g. --k-max 50."),
    Option(
        "apply",
        bool,
        help="Write the chosen k's verified release, as anonymize does.",
        flags=("--apply",),
        default=False,
        no_env=OVERWRITES,
    ),
    Option(
        "output",
        str,
        help="With --apply: the release's name (default <table>_k<k>).",
        flags=("--output", "-o"),
        no_env=WHAT_IT_WRITES,
    ),
    ALGORITHM,
    MAX_SUPPRESSION_CRITERIA,
    *CRITERIA_OPTIONS,
    MAX_WIDTH,
    MAX_VALUES,
    *ENGINE_OPTIONS,
    Option("as_json", bool, help="Print one JSON object.", flags=("--json",), default=False, no_api=PRINTED),
    Option(
        "quiet",
        bool,
        help="No line per k tried on stderr.",
        flags=("--quiet", "-q"),
        default=False,
        no_api="the API hands each k tried to its on_step= callback",
    ),
    Option(
        "hierarchies",
        object,
        help="Generalization hierarchies for datafly/incognito, by column.",
        no_cli="not a flag of suggest-k yet (anonymize and compare take --hierarchy)",
    ),
    Option("on_step", object, help="Receives each k tried.", no_cli=CALLBACK),
    LOG,
)

SQL = (
    TABLE_WAREHOUSE,
    K,
    Option(
        "dialect",
        str,
        help="The warehouse's SQL dialect.",
        required=True,
        choices=choices.DIALECTS,
        api="dialect_name",
    ),
    DB_WAREHOUSE,
    *ROLE_OPTIONS,
    ROW_ID,
    Option(
        "labels",
        str,
        help="The warehouse table the class ids are loaded into, e.g. --labels sbc_labels.",
        default="sbc_labels",
    ),
    Option(
        "source",
        str,
        help="The source table's name in the warehouse (default: --table, or a file's name "
        "without its ending), e.g. --source analytics.patients.",
    ),
    Option(
        "output",
        str,
        help="Release name (default <table>_k<k>).",
        flags=("--output", "-o"),
        no_env=WHAT_IT_WRITES,
    ),
    ALGORITHM,
    MODE_WAREHOUSE,
    LEFTOVER,
    WEIGHTS,
    MAX_SUPPRESSION_CRITERIA,
    *CRITERIA_OPTIONS,
    LOG,
    RUN_OPTIONS,
)

CLUSTER = (
    TABLE_WAREHOUSE,
    K,
    Option(
        "out",
        str,
        help="Where to write (row_id, eq_class): .parquet or .csv.",
        required=True,
        no_env=WHAT_IT_WRITES,
    ),
    DB_WAREHOUSE,
    *ROLE_OPTIONS,
    ROW_ID,
    ALGORITHM,
    MODE_WAREHOUSE,
    LEFTOVER,
    WEIGHTS,
    MAX_SUPPRESSION_CRITERIA,
    Option("workers", int, help="Threads for block mode (default: all cores)."),
    *CRITERIA_OPTIONS,
    Option(
        "quiet",
        bool,
        help="Print only the summary and errors.",
        flags=("--quiet", "-q"),
        default=False,
        no_api=LOGGED,
    ),
    AS_JSON_SUMMARY,
    LOG,
    PROGRESS,
    RUN_OPTIONS,
)

REFRESH = (
    Option(
        "release",
        str,
        help="The incremental release to refresh (made with anonymize --incremental), e.g. "
        "--release patients_k5.",
        required=True,
        no_env=THE_DATA,
    ),
    Option(
        "db",
        str,
        help="DuckDB database file (or a postgresql:// URL) holding the release and its source.",
        show_default=False,
        api="database",
        no_sql=IN_SERVER,
    ),
    AS_JSON_SUMMARY,
    LOG,
)

INSTALL_SQL = (
    Option(
        "db",
        str,
        help="The PostgreSQL database, e.g. postgresql://admin@host/clinic.",
        required=True,
        api="url",
    ),
    Option(
        "python_path",
        str,
        help="A directory the server's Python imports sbc-sql and its packages from, as the "
        "server sees it; repeatable (default: where this sbc-sql runs from). It and the "
        "directories above it must be writable only by root or the server's user.",
        flags=("--python-path",),
        multiple=True,
        metavar="DIR",
    ),
    Option(
        "grant",
        str,
        help="A role that may call the functions, repeatable (default: superusers only).",
        multiple=True,
        metavar="ROLE",
    ),
    Option(
        "uninstall",
        bool,
        help="Remove what install-sql created, and nothing else.",
        flags=("--uninstall",),
        default=False,
        no_api="install_sql.uninstall(url) is a function of its own",
        no_env=OVERWRITES,
    ),
)


@dataclass(frozen=True)
class Command:
    """One command: its options in the order ``--help`` lists them, the Python function it
    wraps and the SQL function that runs it inside PostgreSQL."""

    name: str
    options: tuple[Option, ...]
    #: the API function, as ``module:name``
    api: str
    #: callables whose keywords the API function takes inside its ``options=`` argument
    api_options: tuple[str, ...] = ()
    #: the SQL function (``sbc.<sql>``) and its arguments in declared order, which
    #: positional callers rely on
    sql: str | None = None
    sql_arguments: tuple[str, ...] = ()

    def cli_options(self) -> tuple[Option, ...]:
        return tuple(o for o in self.options if not o.no_cli)


#: where the warehouse commands and compare find the keywords of their options= argument
_RUN_OPTIONS = ("sbc_sql.plan:Options", "sbc_sql.privacy.criteria:Criteria")

_DECLARED = (
    Command(
        "anonymize",
        ANONYMIZE,
        "sbc_sql.run:anonymize",
        sql="anonymize",
        sql_arguments=(
            *("source", "k", "output", "qi", "sensitive", "drop_columns", "keep", "replace", "leftover"),
            *("weights", "algorithm", "mode", "max_suppression"),
            *(o.name for o in CRITERIA_OPTIONS),
            "seed",
            "allow_determinant",
            "incremental",
            *("recode", "aggregate", "aggregate_categorical"),
            *(o.name for o in POPULATION_OPTIONS),
        ),
    ),
    Command(
        "measure",
        MEASURE,
        "sbc_sql.api:measure",
        sql="measure",
        sql_arguments=("original", "release", "weights"),
    ),
    Command(
        "verify",
        VERIFY,
        "sbc_sql.api:verify",
        sql="verify",
        sql_arguments=(
            *("original", "release", "k"),
            *(o.name for o in CRITERIA_OPTIONS),
            *("max_suppression", "qi", "identifier", "sensitive", "keep", "allow_determinant"),
            *(o.name for o in POPULATION_OPTIONS),
        ),
    ),
    Command("refresh", REFRESH, "sbc_sql.run.refresh:refresh", sql="refresh", sql_arguments=("release",)),
    Command("evaluate", EVALUATE, "sbc_sql.quality.evaluate:evaluate"),
    Command("profile", PROFILE, "sbc_sql.quality.profile:profile"),
    Command("report", REPORT, "sbc_sql.quality.html_report:report"),
    Command("compare", COMPARE, "sbc_sql.compare:compare", api_options=_RUN_OPTIONS),
    Command("suggest-k", SUGGEST_K, "sbc_sql.quality.suggest:suggest_k"),
    Command("sql", SQL, "sbc_sql.warehouse:print_sql", api_options=_RUN_OPTIONS),
    Command("cluster", CLUSTER, "sbc_sql.warehouse:cluster_ids", api_options=_RUN_OPTIONS),
    Command("install-sql", INSTALL_SQL, "sbc_sql.install_sql:install"),
)


def _with_commands(declared: tuple[Command, ...]) -> dict[str, Command]:
    """Each command with its options, each option naming every command that takes it."""
    takers: dict[Option, list[str]] = {}
    for command in declared:
        for option in command.options:
            takers.setdefault(option, []).append(command.name)
    named = {option: dataclasses.replace(option, commands=tuple(names)) for option, names in takers.items()}
    return {c.name: dataclasses.replace(c, options=tuple(named[o] for o in c.options)) for c in declared}


#: every command by name, in the order the app lists them
COMMANDS: Mapping[str, Command] = _with_commands(_DECLARED)
#: every option, once (an option shared by several commands is one entry)
OPTIONS: tuple[Option, ...] = tuple(dict.fromkeys(o for c in COMMANDS.values() for o in c.options))


#: the SQL type of one value of each kind (a repeatable option: an array of it)
SQL_TYPES: Mapping[type, str] = {str: "text", int: "integer", float: "double precision", bool: "boolean"}


def sql_argument(command: Command, argument: str) -> Option:
    """The option behind one argument of the command's SQL function."""
    found = [o for o in command.options if not o.no_sql and o.sql_name == argument]
    if len(found) != 1:
        raise LookupError(f"{command.name}: {len(found)} options are the SQL argument {argument}, not 1")
    return found[0]


def sql_type(option: Option) -> str:
    return SQL_TYPES[option.kind] + ("[]" if option.multiple else "")


def sql_signatures() -> tuple[str, ...]:
    """Each SQL function as PostgreSQL names it by its types, e.g. ``measure(text, text, text)``."""
    out = []
    for function, arguments in sql_parameters().items():
        command = COMMANDS.get(function)
        types = [sql_type(sql_argument(command, a)) for a in arguments] if command else []
        out.append(f"{function}({', '.join(types)})")
    return tuple(out)


def sql_literal(option: Option) -> str:
    """The option's default as the SQL function declares it."""
    value = option.default
    if value is None or (option.multiple and not value):
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value)


def sql_declaration(function: str) -> str:
    """The SQL function's arguments as CREATE FUNCTION declares them, one a line: name, type
    and, unless the option is required, its default."""
    command = next(c for c in COMMANDS.values() if c.sql == function)
    lines = []
    for argument in command.sql_arguments:
        option = sql_argument(command, argument)
        default = "" if option.required else f" DEFAULT {sql_literal(option)}"
        lines.append(f"    {argument} {sql_type(option)}{default}")
    return ",\n".join(lines)


#: the SQL functions, in the order sql/functions/install.sql creates them
SQL_FUNCTIONS = ("anonymize", "refresh", "verify", "measure", "version")


def sql_parameters() -> dict[str, tuple[str, ...]]:
    """Each SQL function's arguments in declared order (``sbc.version()`` takes none)."""
    declared = {c.sql: c.sql_arguments for c in COMMANDS.values() if c.sql is not None}
    return {function: declared.get(function, ()) for function in SQL_FUNCTIONS}


def _in_markdown(text: str) -> str:
    """Text as a Markdown table's cell shows it: no HTML tag (<table>), no cell break (|)."""
    return text.replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")


def markdown() -> str:
    """docs/options.md's reference of every command's options: a table per command, each option with
    its environment variable, then why the options without one have none."""
    lines: list[str] = []
    unread: dict[str, dict[str, None]] = {}
    for command in COMMANDS.values():
        lines += [
            "",
            f"`sbc-sql {command.name}`",
            "",
            "| flag | variable | default | meaning |",
            "|---|---|---|---|",
        ]
        for option in command.cli_options():
            flags = ", ".join(f"`{flag}`" for decl in option.decls for flag in decl.split("/"))
            if option.choices:
                flags += " " + "\\|".join(option.choices)
            if option.required:
                default = "required"
            elif option.default is None or (option.kind is bool and option.default is False):
                default = ""
            else:
                default = f"`{option.default}`"
            variable = f"`{option.env}`" if not option.no_env else "none"
            if option.no_env:
                unread.setdefault(option.no_env, {})[f"`{option.long}`"] = None
            lines.append(f"| {flags} | {variable} | {default} | {_in_markdown(option.help)} |")
    lines += ["", "No variable sets:", ""]
    lines += [f"- {', '.join(flags)}: it {reason}." for reason, flags in unread.items()]
    lines += ["", "Other variables sbc-sql reads:", ""]
    lines += [f"- `{name}`: {meaning}." for name, meaning in OTHER_VARIABLES.items()]
    return "\n".join(lines[1:]) + "\n"
