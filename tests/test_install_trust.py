"""install-sql in a shared database: it trusts a schema sbc by who owns it and what is in it,
never by its comment (anyone with CREATE on the database can write that)."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator

import pytest
from helpers import run_cli, run_module
from test_plpython import server_path, sql

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
