"""``sbc-sql install-sql``: make sbc-sql callable from SQL in a PostgreSQL database.

It creates the schema ``sbc`` with the functions of sql/functions/install.sql
(``sbc.anonymize``, ``sbc.verify``, ``sbc.measure``, ``sbc.version``), which run
sbc_sql.server inside the server: each is PL/pgSQL over a PL/Python function of its own
(``sbc.python_anonymize`` ...), so that an error reaches the caller as a PostgreSQL error
carrying one line, without the Python traceback PL/Python would add. The server's Python
must import sbc_sql and its packages from where they are installed: by default where this
sbc-sql runs from (the server and this command on one machine), or the ``--python-path``
directories, as the server sees them.
Everything is done in one transaction that ends by calling ``sbc.version()`` in the server:
if the server cannot import sbc-sql, nothing stays.

It is idempotent (the functions are replaced, the grants added); ``--uninstall`` removes
what it created, the plpython3u extension too when it created it and nothing else uses it.
A schema ``sbc`` it did not create is never touched. The functions are not executable by
PUBLIC: plpython3u is an untrusted language, so ``--grant ROLE`` says who may call them.

Trust comes from ownership, never from the schema's comment (anyone who can create a schema
can write one): install-sql connects as a superuser, and refuses, before writing anything,
a schema ``sbc`` owned by a role that is not a superuser, one granting CREATE to such a role,
and any object in it (a function, a type, a table...) owned by one, since that role could
make a superuser's call run its code (sql/functions/untrusted.sql). It names its statements'
types and functions in pg_catalog only (search_path), whatever the role or database sets.
Each function checks, in the server and at every call, that no one but root and the
server's operating-system user can write to the directories it imports from
(sbc_sql/path_trust.py) before it puts them on ``sys.path``.
"""

from __future__ import annotations

import contextlib
import json
import re
import sysconfig
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from . import engines
from .engines.base import Engine, ServerError
from .engines.urls import looks_like_url, shown_url
from .errors import EngineError, InputError
from .plan import catalogue
from .sql import templates
from .sql.templates import ident
from .version import __version__

SCHEMA = "sbc"
#: what install-sql writes as the schema's comment: its mark, read before touching the schema
MARK = "sbc-sql install-sql"
#: the functions, each as PostgreSQL names it by its arguments' types (the options' catalogue)
FUNCTIONS = catalogue.sql_signatures()
#: the PL/Python function each of them calls, which answers an error as JSON for it to raise
#: (sql/functions/install.sql), named alike
PYTHON_PREFIX = "python_"
PYTHON_FUNCTIONS = tuple(PYTHON_PREFIX + f for f in FUNCTIONS)
_PLACEHOLDER = "__PRELUDE__"
#: the functions of the schema sbc, each as DROP FUNCTION names it (schema, name, types)
_SIGNATURES = (
    "SELECT p.oid::pg_catalog.regprocedure::text FROM pg_catalog.pg_proc p "
    "JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'sbc'"
)


def _drop_former_signatures(engine: Any) -> None:
    """Drop the functions an earlier install made whose arguments have changed since (a new
    argument of sbc.verify, say): CREATE OR REPLACE would leave the old one beside the new
    as an overload, callable and making a call ambiguous. Everything in the schema is a
    superuser's by then (_trusted)."""
    current = {f"{SCHEMA}.{f}".replace(", ", ",") for f in (*FUNCTIONS, *PYTHON_FUNCTIONS)}
    names = {f.split("(")[0] for f in (*FUNCTIONS, *PYTHON_FUNCTIONS)}
    for (signature,) in engine._fetch(_SIGNATURES, None):
        bare = str(signature).removeprefix(f"{SCHEMA}.")
        if bare.split("(")[0] in names and f"{SCHEMA}.{bare}".replace(", ", ",") not in current:
            engine._fetch(f"DROP FUNCTION {SCHEMA}.{bare}", None)


#: each PL/Python body's first lines: the directories checked (path_trust.py's text, then its
#: call: a refusal is answered as the error for the SQL function to raise, SQLSTATE 42501),
#: then sbc_sql importable from the path install-sql found, its directories first and in
#: its order even where the server's own PYTHONPATH already lists one of them
_PRELUDE = """{check}
sbc_refused = sbc_path_refusal({path!r})
if sbc_refused is not None:
    import json
    return json.dumps({{"sbc_error": {{"message": "Error: " + sbc_refused, "sqlstate": "42501"}}}})
import sys
sys.path[:] = {path!r} + [entry for entry in sys.path if entry not in {path!r}]
from sbc_sql.server import call"""
_QUOTE_TAG = "$sbc$"


@dataclass(frozen=True)
class Installed:
    """What install-sql did: the server's answer to ``sbc.version()``."""

    database: str
    server: dict[str, Any]
    created_extension: bool
    granted: tuple[str, ...]


def default_path() -> list[str]:
    """Where this sbc-sql and its packages are imported from: the directory holding the
    sbc_sql package, then the interpreter's site-packages."""
    package = Path(__file__).resolve().parent.parent
    paths = [str(package), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    return list(dict.fromkeys(paths))


def functions_sql(python_path: Sequence[str]) -> list[str]:
    """The statements creating the functions, the path written in as a Python list."""
    for path in python_path:
        if not Path(path).is_absolute() or _QUOTE_TAG in path or "\n" in path:
            raise InputError(
                f"--python-path '{path}' is not an absolute directory path (as the server sees "
                "it); give one like /opt/sbc-sql/lib/python3.11/site-packages"
            )
    pair = (templates.sql_root() / "functions" / "install.sql").read_text(encoding="utf-8")
    check = resources.files("sbc_sql").joinpath("path_trust.py").read_text().strip()
    prelude = _PRELUDE.format(check=check, path=list(python_path))
    statements: list[str] = []
    for function, arguments in catalogue.sql_parameters().items():
        declared = f"\n{catalogue.sql_declaration(function)}\n" if arguments else ""
        # each SQL function passes its arguments on to its PL/Python function, in order
        passed = ", ".join(f"${at}" for at in range(1, len(arguments) + 1))
        statements.extend(
            statement.replace("__ARGUMENTS__", declared)
            .replace("__PASSED__", passed)
            .replace("__NAME__", function)
            .replace(_PLACEHOLDER, prelude)
            for statement in templates.statements(pair)
        )
    return statements


@contextlib.contextmanager
def _connected(url: str) -> Iterator[Engine]:
    if not looks_like_url(url):
        raise InputError(
            f"--db '{url}' is not a PostgreSQL URL; install-sql installs into a PostgreSQL "
            "database: give --db postgresql://user@host:port/database"
        )
    engine = engines.connect(url)
    try:
        # install-sql's statements name types, functions and operators that must be
        # pg_catalog's: a search_path set for the role or the database (whose owner need not
        # be a superuser) could put someone else's first
        engine._fetch("SET search_path = pg_catalog, pg_temp", None)
        yield engine
    finally:
        engine.close()


def _trusted(engine: Engine) -> str:
    """The connected role, a superuser, when nothing in the schema sbc (if there is one) is
    another role's to change; else an InputError naming what, whose, and the fix."""
    who, superuser = engine._fetch(
        "SELECT rolname, rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user", None
    )[0]
    if not superuser:
        raise InputError(
            f"role '{who}' is not a superuser, and install-sql must connect as one: plpython3u is "
            "an untrusted language, whose functions only a superuser may create; give --db a "
            "superuser's URL (e.g. postgresql://postgres@host/database)"
        )
    text = (templates.sql_root() / "functions" / "untrusted.sql").read_text(encoding="utf-8")
    query = "\n".join(line for line in text.splitlines() if not line.startswith("--"))
    findings = engine._fetch(query, {"schema": SCHEMA})
    if not findings:
        return str(who)
    rank, what, role = findings[0]
    more = f" (and {len(findings) - 1} more not a superuser's)" if len(findings) > 1 else ""
    if rank == 1:
        raise InputError(
            f"schema '{SCHEMA}' is owned by role '{role}', which is not a superuser: it could "
            "replace the functions with its own, run by whoever calls them; drop the schema "
            f"(DROP SCHEMA {SCHEMA} CASCADE, after looking at what it holds) or, if it is to "
            f"stay, ALTER SCHEMA {SCHEMA} OWNER TO {engine.sql(ident(who))}; then run "
            "install-sql again"
        )
    if rank == 2:
        public = role == "PUBLIC"
        shown = "PUBLIC" if public else f"role '{role}'"
        grantee = "PUBLIC" if public else engine.sql(ident(role))
        raise InputError(
            f"schema '{SCHEMA}' grants CREATE to {shown}, which is not a superuser: it could add "
            f"functions that calls to sbc's would run instead{more}; REVOKE CREATE ON SCHEMA "
            f"{SCHEMA} FROM {grantee}, then run install-sql again"
        )
    kind = next((k for k in _DROPPABLE if what.startswith(k + " ")), None)
    if what.startswith(("operator class ", "operator family ")):  # DROP names them otherwise
        kind = None
    drop = f" ({'DROP ' + kind.upper() + what[len(kind) :]})" if kind else ""
    raise InputError(
        f"schema '{SCHEMA}' holds {what}, owned by role '{role}', which is not a superuser: it "
        f"could change what that does, and a superuser's call could run it{more}; drop it{drop} "
        "after looking at what it does, or move it out of the schema, then run install-sql again"
    )


#: the kinds of object pg_describe_object names as DROP names them (longest first)
_DROPPABLE = (
    "text search configuration",
    "text search dictionary",
    "materialized view",
    "foreign table",
    "conversion",
    "collation",
    "procedure",
    "aggregate",
    "extension",
    "function",
    "operator",
    "sequence",
    "table",
    "index",
    "view",
    "type",
)


def _mark(engine: Engine) -> dict[str, Any] | None:
    """The schema's install-sql record; None when there is no schema sbc. A schema sbc that
    install-sql did not make, or that is not only superusers' (:func:`_trusted`), is an
    InputError."""
    _trusted(engine)
    rows = engine._fetch(
        "SELECT pg_catalog.obj_description(oid, 'pg_namespace') FROM pg_catalog.pg_namespace "
        "WHERE nspname = $1",
        {"schema": SCHEMA},
    )
    if not rows:
        return None
    try:
        record = json.loads(rows[0][0] or "")
    except json.JSONDecodeError:
        record = None
    if not isinstance(record, dict) or record.get("made_by") != MARK:
        raise InputError(
            f"schema '{SCHEMA}' exists in the database and was not made by sbc-sql install-sql; "
            "rename or drop it, then run install-sql again"
        )
    return record


def _plpython(engine: Engine) -> bool:
    """Whether plpython3u is installed already; an InputError naming the package to install
    when the server does not have it at all."""
    rows = engine._fetch(
        "SELECT installed_version FROM pg_catalog.pg_available_extensions WHERE name = $1",
        {"name": "plpython3u"},
    )
    if not rows:
        major = engine._fetch("SELECT current_setting('server_version_num')::int / 10000", None)[0][0]
        raise InputError(
            "the PostgreSQL server has no plpython3u (PL/Python 3), which the SQL functions are "
            "written in; install it on the server (Debian, Ubuntu: apt-get install "
            f"postgresql-plpython3-{major}; RPM: postgresql{major}-plpython3), then run install-sql again"
        )
    return rows[0][0] is not None


def install(url: str, *, python_path: Sequence[str] | None = None, grant: Sequence[str] = ()) -> Installed:
    """Create (or replace) the schema sbc and its functions, then check in the server that
    they run; all in one transaction."""
    path = list(python_path) if python_path else default_path()
    statements = functions_sql(path)
    with _connected(url) as engine:
        record = _mark(engine) or {}
        had_extension = _plpython(engine)
        created = bool(record.get("created_extension")) or not had_extension
        mark = {"made_by": MARK, "version": __version__, "created_extension": created}
        try:
            with engine.transaction():
                if not had_extension:
                    engine._fetch("CREATE EXTENSION IF NOT EXISTS plpython3u", None)
                engine._fetch(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}", None)
                _trusted(engine)  # again, as it is now, in the transaction that replaces it
                engine._fetch(
                    f"COMMENT ON SCHEMA {SCHEMA} IS " + engine.sql(_literal(json.dumps(mark))), None
                )
                _drop_former_signatures(engine)
                for statement in statements:
                    engine._fetch(statement, None)
                for function in (*FUNCTIONS, *PYTHON_FUNCTIONS):
                    engine._fetch(f"REVOKE ALL ON FUNCTION {SCHEMA}.{function} FROM PUBLIC", None)
                for role in grant:
                    who = engine.sql(ident(role))
                    engine._fetch(f"GRANT USAGE ON SCHEMA {SCHEMA} TO {who}", None)
                    engine._fetch(f"GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA {SCHEMA} TO {who}", None)
                server = _probe(engine, path)
        except EngineError as err:
            raise _explained(err) from None
        return Installed(engine.working()[0], server, created, tuple(grant))


def _literal(text: str) -> Any:
    from sqlglot import exp

    return exp.Literal.string(text)


def _probe(engine: Engine, path: Sequence[str]) -> dict[str, Any]:
    """``sbc.version()`` run in the server: sbc-sql imports there, and is this version."""
    try:
        text = engine.server_value(f"SELECT {SCHEMA}.version()")
    except ServerError as err:
        refused = re.search(r"ERROR:\s+Error: ([^\n]*)", err.message)
        if err.sqlstate == "42501" and refused is not None:  # path_trust.py's refusal
            raise InputError(refused.group(1).split(". SQLSTATE")[0].strip()) from None
        said = _python_error(err.message)
        raise InputError(
            f"the server's Python cannot run sbc-sql from {', '.join(path)} ({said}); install "
            "sbc-sql where the server's operating-system user can read it, for the Python the "
            "server's plpython3u uses, and pass that site-packages with --python-path"
        ) from None
    server = json.loads(text) if isinstance(text, str) else dict(text)
    if server.get("sbc_sql") != __version__:
        raise InputError(
            f"the server imports sbc-sql {server.get('sbc_sql')} from {server.get('location')}, "
            f"not this sbc-sql {__version__}; pass --python-path to this one's site-packages, or "
            "upgrade the server's"
        )
    return server


def _python_error(text: str) -> str:
    """The Python exception line of a PL/Python error (an import failure: no data in it)."""
    match = re.search(r"ERROR:\s+(\w+(?:Error|Exception)[^\n]*)", text)
    if match is None:
        return "it failed to start"
    return match.group(1).split(". SQLSTATE")[0].strip()


def _explained(err: EngineError) -> EngineError:
    if err.kind == "permission":
        return EngineError(
            "installing the SQL functions: the database user lacks a privilege; plpython3u is an "
            "untrusted language, so install-sql must connect as a superuser",
            "permission",
        )
    return err


def uninstall(url: str) -> list[str]:
    """Drop what install-sql created: the functions, the schema, and the plpython3u extension
    when install-sql created it and no other function is written in it. What was dropped."""
    with _connected(url) as engine:
        record = _mark(engine)
        if record is None:
            return []
        dropped: list[str] = []
        with engine.transaction():
            for function in (*FUNCTIONS, *PYTHON_FUNCTIONS):
                engine._fetch(f"DROP FUNCTION IF EXISTS {SCHEMA}.{function}", None)
                dropped.append(f"function {SCHEMA}.{function.split('(')[0]}")
            others = engine._fetch(
                "SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
                "ON n.oid = c.relnamespace WHERE n.nspname = $1 UNION ALL SELECT p.proname "
                "FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace "
                "WHERE n.nspname = $1",
                {"schema": SCHEMA},
            )
            if others:
                raise InputError(
                    f"schema '{SCHEMA}' also holds {len(others)} object(s) install-sql did not create "
                    f"(e.g. '{others[0][0]}'); move or drop them, then run --uninstall again"
                )
            engine._fetch(f"DROP SCHEMA {SCHEMA}", None)
            dropped.append(f"schema {SCHEMA}")
            if record.get("created_extension"):
                users = engine._fetch(
                    "SELECT count(*) FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_language l "
                    "ON l.oid = p.prolang WHERE l.lanname = $1",
                    {"language": "plpython3u"},
                )[0][0]
                if users == 0:
                    engine._fetch("DROP EXTENSION IF EXISTS plpython3u", None)
                    dropped.append("extension plpython3u")
        return dropped


def described(url: str, installed: Installed) -> str:
    """The line install-sql prints."""
    s = installed.server
    grants = (
        f"; callable by {', '.join(installed.granted)}"
        if installed.granted
        else "; callable by its owner and superusers"
    )
    return (
        f"installed sbc.anonymize, sbc.verify, sbc.measure and sbc.version in database "
        f"'{installed.database}' at {shown_url(url)}: sbc-sql {s.get('sbc_sql')} on the server's "
        f"Python {s.get('python')}, from {s.get('location')}{grants}"
    )
