"""install-sql in a shared database: it trusts a schema sbc by who owns it and what is in it,
never by its comment (anyone with CREATE on the database can write that), and the server
imports sbc-sql only from directories no one but root and its own operating-system user can
change."""

from __future__ import annotations

import json
import logging
import os
import pwd
import shutil
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pg_cluster
import pytest
from helpers import run_cli, run_module
from test_plpython import failure, server_path, sql

import sbc_sql
from sbc_sql import install_sql

__all__ = ["server_path"]  # the fixture, imported for the tests here

#: the mark install-sql writes as the schema's comment, as a forger would copy it
FORGED = json.dumps({"made_by": install_sql.MARK, "version": sbc_sql.__version__, "created_extension": False})


@pytest.fixture
def eve(postgres_url: str) -> Iterator[tuple[str, str]]:
    """A role that is not a superuser and may create schemas in the test's database: its
    name and its URL."""
    name = f"eve_{uuid.uuid4().hex[:8]}"
    database = postgres_url.rsplit("/", 1)[1]
    sql(postgres_url, f"CREATE ROLE {name} LOGIN", f"GRANT CREATE ON DATABASE {database} TO {name}")
    try:
        yield name, postgres_url.replace("postgres@", f"{name}@", 1)
    finally:
        sql(postgres_url, f"DROP OWNED BY {name} CASCADE", f"DROP ROLE {name}")


def _functions(url: str) -> list[tuple]:
    """Every function in schema sbc: its signature, owner and body."""
    return sql(
        url,
        "SELECT p.oid::regprocedure::text, pg_get_userbyid(p.proowner), p.prosrc FROM pg_proc p "
        "WHERE p.pronamespace = 'sbc'::regnamespace ORDER BY 1",
    )


def _one_error(result, *said: str) -> str:
    assert result.exit_code == 1, result.stdout
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, result.stderr
    for words in said:
        assert words in result.stderr, result.stderr
    return result.stderr


def test_a_schema_another_role_made_with_the_mark_is_refused_and_left_alone(
    postgres_url: str, server_path: list[str], eve: tuple[str, str]
) -> None:
    name, eve_url = eve
    sql(
        eve_url,
        "CREATE SCHEMA sbc",
        f"COMMENT ON SCHEMA sbc IS '{FORGED}'",
        f"CREATE SCHEMA {name}",
        f"CREATE SEQUENCE {name}.calls",
        "CREATE FUNCTION sbc.version() RETURNS jsonb LANGUAGE sql AS $$ SELECT jsonb_build_object("
        f"'sbc_sql', '{sbc_sql.__version__}', 'calls', nextval('{name}.calls')) $$",
    )
    before = _functions(postgres_url), sql(postgres_url, "SELECT obj_description('sbc'::regnamespace)")
    paths = [f"--python-path={p}" for p in server_path]
    said = _one_error(
        run_cli(["install-sql", "--db", postgres_url, *paths]),
        "schema 'sbc'",
        f"owned by role '{name}'",
        "DROP SCHEMA sbc CASCADE",
    )
    assert 'ALTER SCHEMA sbc OWNER TO "postgres"' in said
    # nothing changed: her function is hers as it was, never called, and nothing was added
    after = _functions(postgres_url), sql(postgres_url, "SELECT obj_description('sbc'::regnamespace)")
    assert after == before
    assert sql(postgres_url, f"SELECT is_called FROM {name}.calls") == [(False,)]
    assert sql(postgres_url, "SELECT count(*) FROM pg_extension WHERE extname = 'plpython3u'") == [(0,)]
    # --uninstall does not touch it either
    _one_error(run_cli(["install-sql", "--db", postgres_url, "--uninstall"]), f"owned by role '{name}'")
    assert _functions(postgres_url) == before[0]
    # given to a superuser, the schema still holds her function: refused, naming it
    sql(postgres_url, "ALTER SCHEMA sbc OWNER TO postgres")
    _one_error(
        run_cli(["install-sql", "--db", postgres_url, *paths]),
        "function sbc.version()",
        f"owned by role '{name}'",
        "DROP FUNCTION sbc.version()",
    )
    assert _functions(postgres_url) == before[0]
    assert sql(postgres_url, f"SELECT is_called FROM {name}.calls") == [(False,)]


def test_a_function_another_role_made_in_the_installers_schema_is_refused(
    postgres_url: str, server_path: list[str], eve: tuple[str, str]
) -> None:
    name, eve_url = eve
    install_sql.install(postgres_url, python_path=server_path)
    installed = _functions(postgres_url)
    # a schema that lets another role create in it is refused while it does
    sql(postgres_url, f"GRANT CREATE ON SCHEMA sbc TO {name}")
    paths = [f"--python-path={p}" for p in server_path]
    _one_error(
        run_cli(["install-sql", "--db", postgres_url, *paths]),
        f"grants CREATE to role '{name}'",
        f'REVOKE CREATE ON SCHEMA sbc FROM "{name}"',
    )
    sql(postgres_url, "GRANT CREATE ON SCHEMA sbc TO PUBLIC")
    sql(postgres_url, f"REVOKE CREATE ON SCHEMA sbc FROM {name}")
    refused = run_cli(["install-sql", "--db", postgres_url, *paths])
    _one_error(refused, "grants CREATE to PUBLIC", "REVOKE CREATE ON SCHEMA sbc FROM PUBLIC")
    # an overload she made while she could (the exact call sbc.anonymize('t', 3) would pick
    # hers), and the revoke that came too late
    sql(postgres_url, f"GRANT CREATE ON SCHEMA sbc TO {name}")
    sql(
        eve_url,
        "CREATE FUNCTION sbc.anonymize(source text, k integer) RETURNS jsonb LANGUAGE sql "
        "AS $$ SELECT '{}'::jsonb $$",
    )
    sql(postgres_url, f"REVOKE CREATE ON SCHEMA sbc FROM PUBLIC, {name}")
    theirs = _functions(postgres_url)
    _one_error(
        run_cli(["install-sql", "--db", postgres_url, *paths]),
        "function sbc.anonymize(text,integer)",
        f"owned by role '{name}'",
    )
    assert _functions(postgres_url) == theirs and len(theirs) == len(installed) + 1


def test_a_type_the_database_owner_puts_first_on_the_search_path_is_not_used(
    postgres_url: str, server_path: list[str], eve: tuple[str, str]
) -> None:
    """A database's owner need not be a superuser, and sets its search_path: her schema
    before pg_catalog, holding a domain named jsonb whose check runs her function. The
    functions return pg_catalog's jsonb all the same, and nothing of hers runs."""
    name, eve_url = eve
    database = postgres_url.rsplit("/", 1)[1]
    sql(postgres_url, f"ALTER DATABASE {database} OWNER TO {name}")
    try:
        sql(
            eve_url,
            f"CREATE SCHEMA {name}",
            f"CREATE SEQUENCE {name}.calls",
            f"CREATE FUNCTION {name}.spy(pg_catalog.jsonb) RETURNS boolean LANGUAGE sql AS "
            f"$$ SELECT nextval('{name}.calls') > 0 $$",
            f"CREATE DOMAIN {name}.jsonb AS pg_catalog.jsonb CHECK ({name}.spy(VALUE))",
            f"ALTER DATABASE {database} SET search_path = {name}, pg_catalog",
        )
        installed = install_sql.install(postgres_url, python_path=server_path)
        assert installed.server["sbc_sql"] == sbc_sql.__version__
        returned = (
            "SELECT DISTINCT prorettype::regtype::text FROM pg_proc WHERE pronamespace = 'sbc'::regnamespace"
        )
        assert sql(postgres_url, "SET search_path = pg_catalog", returned) == [("jsonb",)]
        assert sql(postgres_url, f"SELECT is_called FROM {name}.calls") == [(False,)]
    finally:
        sql(postgres_url, f"ALTER DATABASE {database} RESET search_path")
        sql(postgres_url, f"ALTER DATABASE {database} OWNER TO postgres")


def test_a_legitimate_install_is_upgraded_by_its_owner_or_another_superuser(
    postgres_url: str, server_path: list[str]
) -> None:
    install_sql.install(postgres_url, python_path=server_path)
    assert install_sql.install(postgres_url, python_path=server_path).server["sbc_sql"] == sbc_sql.__version__
    admin = f"admin_{uuid.uuid4().hex[:8]}"
    sql(postgres_url, f"CREATE ROLE {admin} LOGIN SUPERUSER")
    try:
        other = postgres_url.replace("postgres@", f"{admin}@", 1)
        again = install_sql.install(other, python_path=server_path)
        assert again.server["sbc_sql"] == sbc_sql.__version__
    finally:
        sql(postgres_url, f"DROP ROLE {admin}")


def test_a_non_superusers_install_says_one_error_line_and_nothing_else(
    postgres_url: str, eve: tuple[str, str]
) -> None:
    """In a fresh interpreter: the command's own stderr, as a user sees it."""
    name, eve_url = eve
    done = run_module(["install-sql", "--db", eve_url])
    assert done.returncode == 1
    assert done.stderr.startswith("Error: ") and done.stderr.count("\n") == 1, done.stderr
    assert f"role '{name}' is not a superuser" in done.stderr
    assert sql(postgres_url, "SELECT count(*) FROM pg_namespace WHERE nspname = 'sbc'") == [(0,)]


def test_a_statement_sqlglot_cannot_parse_is_named_without_a_warning(caplog) -> None:
    """An error names its statement by parsing it; one sqlglot reads only as a command (and
    warns about, quoting it) is named quietly."""
    from sbc_sql.engines.postgres import PostgresEngine

    with caplog.at_level(logging.DEBUG):
        engine = object.__new__(PostgresEngine)
        said = PostgresEngine.operation(engine, "CREATE EXTENSION IF NOT EXISTS plpython3u")
    assert said and caplog.records == []


# ---- the directories the server imports sbc-sql from ----


@pytest.fixture
def dirs() -> Iterator[Path]:
    """A directory the server's user can reach: root's (or ours), 0755, under /tmp."""
    base = Path(tempfile.mkdtemp(prefix="sbc-path-", dir="/tmp"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base)


def _made(path: Path, mode: int) -> Path:
    path.mkdir()
    path.chmod(mode)
    return path


def _refused(url: str, given: Path, server_path: list[str], *said: str) -> None:
    """install-sql with ``given`` first on the path: refused with one line, nothing made."""
    paths = [f"--python-path={p}" for p in (str(given), *server_path)]
    _one_error(run_cli(["install-sql", "--db", url, *paths]), *said, "chmod go-w")
    assert sql(url, "SELECT count(*) FROM pg_namespace WHERE nspname = 'sbc'") == [(0,)]


def test_a_world_writable_python_path_is_refused(
    postgres_url: str, server_path: list[str], dirs: Path
) -> None:
    bad = _made(dirs / "open", 0o777)
    _refused(postgres_url, bad, server_path, f"'{bad}'", "mode 0777")


def test_a_group_writable_python_path_of_another_user_is_refused(
    postgres_url: str, server_path: list[str], dirs: Path
) -> None:
    bad = _made(dirs / "shared", 0o775)
    if os.geteuid() == 0:
        nobody = pwd.getpwnam("nobody")
        os.chown(bad, nobody.pw_uid, nobody.pw_gid)
    _refused(postgres_url, bad, server_path, f"'{bad}'")


def test_a_python_path_under_a_world_writable_parent_is_refused(
    postgres_url: str, server_path: list[str], dirs: Path
) -> None:
    parent = _made(dirs / "parent", 0o777)
    safe = _made(parent / "lib", 0o755)
    _refused(postgres_url, safe, server_path, f"'{parent / 'lib'}'", f"'{parent}'", "mode 0777")


def test_a_safe_python_path_is_used_and_checked_at_every_call(
    postgres_url: str, server_path: list[str], dirs: Path, postgres_cluster: pg_cluster.Cluster
) -> None:
    safe = _made(dirs / "lib", 0o755)
    install_sql.install(postgres_url, python_path=[str(safe), *server_path])
    (version,) = sql(postgres_url, "SELECT sbc.version()")[0]
    assert json.loads(version)["sbc_sql"] == sbc_sql.__version__
    # made world-writable after install-sql: the next call (a new session) refuses to import
    safe.chmod(0o777)
    state, message = failure(postgres_url, "SELECT sbc.version()")
    assert state == "42501"
    assert message.startswith(f"Error: '{safe}' is writable by others (mode 0777)")


def test_the_path_check_follows_links_and_judges_sticky_and_missing_directories(dirs: Path) -> None:
    """The check itself, as the server runs it: owners given, the server's user being us."""
    from sbc_sql.path_trust import sbc_unsafe_directory

    ours = frozenset((0, os.geteuid()))
    safe = _made(dirs / "lib", 0o755)
    assert sbc_unsafe_directory(str(safe), ours) is None
    # owned by a user who is neither root nor the server's
    said = sbc_unsafe_directory(str(safe), frozenset({os.geteuid() + 1}))
    assert said is not None and said.startswith(f"'{safe}' is owned by")
    # a link in a safe directory leads to one others can write to: the target is named
    open_ = _made(dirs / "open", 0o777)
    (dirs / "link").symlink_to(open_)
    said = sbc_unsafe_directory(str(dirs / "link"), ours)
    assert said is not None and said.startswith(f"'{open_}', on the path to '{dirs / 'link'}'")
    # a sticky directory (as /tmp): what exists in it is kept; what is missing, others could make
    sticky = _made(dirs / "sticky", 0o1777)
    kept = _made(sticky / "kept", 0o755)
    assert sbc_unsafe_directory(str(kept), ours) is None
    said = sbc_unsafe_directory(str(sticky / "missing" / "lib"), ours)
    assert said is not None and said.startswith(f"'{sticky / 'missing'}', on the path to")
    assert "does not exist" in said and f"create '{sticky / 'missing'}'" in said
    # a missing directory under a safe one is no one else's to make: Python skips it
    assert sbc_unsafe_directory(str(safe / "missing"), ours) is None


def test_the_functions_put_their_directories_first_in_their_order(tmp_path: Path) -> None:
    """The prelude of every PL/Python body puts install-sql's directories at the front of
    sys.path in the order given, even where the server's own path (its PYTHONPATH) already
    lists one of them further down, so that the copy of sbc-sql install-sql found is the one
    imported."""
    first, second = tmp_path / "first", tmp_path / "second"
    for d in (first, second):
        d.mkdir(mode=0o755)
    tmp_path.chmod(0o755)
    paths = [str(first), str(second), *install_sql.default_path()]
    check = (Path(sbc_sql.__file__).parent / "path_trust.py").read_text().strip()
    prelude = install_sql._PRELUDE.format(check=check, path=paths)
    indented = "\n".join("    " + line for line in prelude.splitlines())
    body = f"def prelude():\n{indented}\n    return None\n"
    saved = list(sys.path)
    try:
        sys.path[:] = ["/elsewhere", str(second), *saved]
        namespace: dict[str, object] = {}
        exec(body, namespace)
        assert namespace["prelude"]() is None
        assert sys.path[: len(paths)] == paths
        assert sys.path.count(str(second)) == 1
        assert "/elsewhere" in sys.path
    finally:
        sys.path[:] = saved
