"""sbc-sql called from SQL: ``sbc-sql install-sql`` makes the schema sbc of PL/Python
functions, and ``SELECT sbc.anonymize(...)`` writes, inside the server and the caller's
transaction, the release the command line writes; errors are PostgreSQL errors carrying the
same one line; install-sql is idempotent, undoes itself and refuses what it cannot do."""

from __future__ import annotations

import json
import re

import adbc_driver_manager
import adbc_driver_postgresql.dbapi as adbc
import duckdb
import pg_cluster
import pytest
from helpers import make_table, pg_rows, run_cli, to_postgres
from test_criteria_surfaces import CRITERIA, asking
from test_criteria_surfaces import table as criteria_table
from test_engines import ROLES, TYPES, people
from test_postgres import drop_trojan, plant_trojan, trojan_ran

import sbc_sql
from sbc_sql import install_sql, server


@pytest.fixture(scope="module")
def server_path(postgres_cluster: pg_cluster.Cluster) -> list[str]:
    """Where the server's Python finds sbc-sql; PL/Python installed when missing (CI fails
    without it, as without PostgreSQL)."""
    reason = pg_cluster.plpython(postgres_cluster)
    if reason is not None:
        pytest.fail(f"no PL/Python for the server: {reason}")
    return pg_cluster.python_path(postgres_cluster, install_sql.default_path())


@pytest.fixture
def pl(postgres_url: str, server_path: list[str]) -> str:
    """A fresh database holding the people table ``t`` and the functions of install-sql."""
    con = duckdb.connect()
    make_table(con, "t", people(), TYPES)
    to_postgres(con, "t", postgres_url)
    install_sql.install(postgres_url, python_path=server_path)
    return postgres_url


def sql(url: str, *statements: str) -> list[tuple]:
    """Run statements on one connection (one session, autocommit); the last one's rows."""
    rows: list[tuple] = []
    with adbc.connect(url, autocommit=True) as con, con.cursor() as cur:
        for statement in statements:
            cur.execute(statement)
            rows = [tuple(r) for r in cur.fetchall()] if cur.description else []
    return rows


def failure(url: str, *statements: str) -> tuple[str, str]:
    """The (SQLSTATE, message) the last statement fails with."""
    with pytest.raises(adbc_driver_manager.Error) as caught:
        sql(url, *statements)
    text = str(caught.value)
    message = re.search(r"ERROR:\s+(.*)", text)
    return str(caught.value.sqlstate), message.group(1) if message else text


ANONYMIZE = (
    "SELECT sbc.anonymize(source => 't', k => 3, output => 'r', qi => ARRAY['age', 'born', 'seen', "
    "'sex', 'zip'], sensitive => ARRAY['dis', 'pay'], drop_columns => ARRAY['id']{extra})"
)


def test_a_release_written_from_sql_is_the_one_the_command_line_writes(pl: str) -> None:
    (summary,) = sql(pl, ANONYMIZE.format(extra=""))[0]
    got = json.loads(summary)
    assert (got["release"], got["k"], got["rows"], got["suppressed"]) == ("r", 3, 60, 0)
    verdict = sbc_sql.verify(pl, "t", "r", 3)
    assert verdict.ok, verdict.problems
    # the same rows through the PostgreSQL engine from outside: the same release and figures
    with sbc_sql.anonymize(pl, "t", 3, output="outside", **ROLES) as outside:
        assert outside.measures is not None
        assert got["total_ncp"] == pytest.approx(outside.measures.total_ncp, rel=1e-12)
        assert got["classes"] == outside.measures.classes
    sizes = "SELECT count(*) FROM {} GROUP BY eq_class ORDER BY 1"
    assert sql(pl, sizes.format("r_rows")) == sql(pl, sizes.format("outside_rows"))
    # verify and measure from SQL agree with the command line's
    (checked,) = sql(pl, "SELECT sbc.verify('t', 'r', 3)")[0]
    assert json.loads(checked)["ok"] is True
    (measured,) = sql(pl, "SELECT sbc.measure('t', 'r')")[0]
    inside, outside_measures = json.loads(measured), sbc_sql.measure(pl, "t", "r").as_dict()
    assert (inside.pop("schema"), inside.pop("version"), inside.pop("ok")) == ("sbc-sql/measure", 1, True)
    assert inside.pop("ncp") == pytest.approx(outside_measures.pop("ncp"), rel=1e-12)
    assert inside == pytest.approx(outside_measures, rel=1e-12)


def test_criteria_are_kept_and_verified_inside_the_server(pl: str) -> None:
    (summary,) = sql(pl, ANONYMIZE.format(extra=", l_diversity => 2"))[0]
    got = json.loads(summary)
    assert got["criteria"]["asked"] == {"l_diversity": 2, "l_model": "distinct"}
    assert sbc_sql.verify(pl, "t", "r", 3, l_diversity=2).ok
    (checked,) = sql(pl, "SELECT sbc.verify('t', 'r', 3, l_diversity => 2)")[0]
    assert json.loads(checked)["ok"] is True
    (strict,) = sql(pl, "SELECT sbc.verify('t', 'r', 30)")[0]
    assert json.loads(strict)["ok"] is False and json.loads(strict)["problems"]


def _sql_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"'{value}'" if isinstance(value, str) else repr(value)


@pytest.mark.parametrize("registered", CRITERIA)
def test_every_criterion_is_an_argument_of_the_sql_functions(pl: str, registered) -> None:
    """Each registered criterion, asked by its options as named arguments, is kept by
    sbc.anonymize and checked by sbc.verify."""
    con = duckdb.connect()
    make_table(con, "c", criteria_table())
    to_postgres(con, "c", pl)
    values = asking(registered)
    named = "".join(f", {name} => {_sql_value(v)}" for name, v in values.items())
    call = "SELECT sbc.anonymize(source => 'c', k => 5, output => 'c5', qi => ARRAY['age', 'zip'], "
    (summary,) = sql(pl, f"{call}sensitive => ARRAY['dx']{named})")[0]
    criterion = registered.load().from_options(values)
    assert json.loads(summary)["criteria"]["asked"] == criterion.summary()
    (checked,) = sql(pl, f"SELECT sbc.verify('c', 'c5', 5{named})")[0]
    assert json.loads(checked)["ok"] is True, checked


def test_a_microaggregated_release_is_made_and_verified_inside_the_server(pl: str) -> None:
    extra = ", recode => 'microaggregate', aggregate => 'median', aggregate_categorical => 'values'"
    (summary,) = sql(pl, ANONYMIZE.format(extra=extra))[0]
    got = json.loads(summary)
    assert (got["ok"], got["recode"]) == (True, "microaggregate")
    assert got["aggregates"] == {
        "age": "median",
        "born": "median",
        "seen": "median",
        "sex": "values",
        "zip": "values",
    }
    assert got["sse"] > 0 and got["il1s"] > 0
    verdict = sbc_sql.verify(pl, "t", "r", 3)
    assert verdict.ok, verdict.problems
    state, message = failure(
        pl, ANONYMIZE.format(extra=", output => 'r2', aggregate => 'mode'").replace("output => 'r', ", "")
    )
    assert state == "22023" and "applies to a microaggregated release only" in message


def test_k_map_and_delta_presence_are_kept_and_verified_inside_the_server(pl: str) -> None:
    """The population a view of the people twice over (each class's delta then 1/2): each
    class matches at least 10 of them, and verifies; sbc.verify against a population some
    class matches too few of fails."""
    sql(
        pl,
        "CREATE VIEW pop AS SELECT age, born, seen, sex, zip FROM t "
        "UNION ALL SELECT age, born, seen, sex, zip FROM t",
        "CREATE TABLE few AS SELECT * FROM pop WHERE age < 40",
    )
    (summary,) = sql(pl, ANONYMIZE.format(extra=", population => 'pop', k_map => 10, delta_max => 0.9"))[0]
    got = json.loads(summary)
    assert got["ok"] and got["population"]["asked"] == {"k_map": 10, "delta_min": 0.0, "delta_max": 0.9}
    assert got["population"]["achieved"]["fewest_population_matches"] >= 10
    (checked,) = sql(pl, "SELECT sbc.verify('t', 'r', 3, population => 'pop', k_map => 10)")[0]
    assert json.loads(checked)["ok"]
    (strict,) = sql(pl, "SELECT sbc.verify('t', 'r', 3, population => 'few', k_map => 10)")[0]
    verdict = json.loads(strict)
    assert not verdict["ok"] and "rows of the population 'few'" in verdict["error"]["message"]


def test_an_incremental_release_is_refreshed_inside_the_server(pl: str) -> None:
    (summary,) = sql(pl, ANONYMIZE.format(extra=", incremental => true"))[0]
    assert json.loads(summary)["ok"] is True
    sql(pl, "INSERT INTO t SELECT id + 1000, age, born, seen, sex, zip, dis, pay FROM t")
    (refreshed,) = sql(pl, "SELECT sbc.refresh('r')")[0]
    got = json.loads(refreshed)
    assert (got["schema"], got["ok"]) == ("sbc-sql/refresh", True)
    assert (got["release_version"], got["parent"]) == (2, 1)
    assert got["rows_added"] + got["pending"] == 60
    verdict = sbc_sql.verify(pl, "t", "r", 3)
    assert verdict.ok, verdict.problems
    state, message = failure(pl, "SELECT sbc.refresh('t')")
    assert state == "22023" and "keeps no ledger" in message


def test_the_release_is_the_callers_transactions(pl: str) -> None:
    sql(pl, "BEGIN", ANONYMIZE.format(extra=""), "ROLLBACK")
    assert sql(
        pl, "SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relname LIKE 'r%'"
    ) == [(0,)]
    sql(pl, "BEGIN", ANONYMIZE.format(extra=""), "COMMIT")
    assert sbc_sql.verify(pl, "t", "r", 3).ok


def test_the_callers_session_is_left_as_it_was(pl: str) -> None:
    rows = sql(
        pl,
        "SET DateStyle = 'SQL, DMY'",
        "SET client_min_messages = notice",
        "SET jit = on",
        ANONYMIZE.format(extra=""),
        "SELECT current_setting('DateStyle'), current_setting('client_min_messages'), "
        "current_setting('search_path'), current_setting('jit'), (SELECT count(*) FROM pg_class "
        "WHERE relnamespace = pg_my_temp_schema())",
    )
    assert rows == [("SQL, DMY", "notice", '"$user", public', "on", 0)]


def test_errors_are_postgresql_errors_with_the_one_line_message(pl: str) -> None:
    state, message = failure(pl, ANONYMIZE.format(extra="").replace("k => 3", "k => 1"))
    assert state == "22023"
    assert message.startswith("Error: k=1 is below 2")  # the command line's line
    assert "k => 2 or more" in message and "--k" not in message
    state, message = failure(pl, "SELECT sbc.anonymize(source => 'missing', k => 3)")
    assert state == "22023" and "source => ..." in message
    sql(pl, ANONYMIZE.format(extra=""))
    state, message = failure(pl, ANONYMIZE.format(extra=""))
    assert state == "42P07" and "replace => true" in message
    # a failed call in a transaction the caller goes on with leaves nothing behind
    rows = sql(
        pl,
        "BEGIN",
        "SAVEPOINT s",
        "DO $$ BEGIN PERFORM sbc.anonymize(source => 't', k => 3, output => 'q', qi => "
        "ARRAY['age'], l_diversity => 99, sensitive => ARRAY['dis']); "
        "EXCEPTION WHEN invalid_parameter_value THEN NULL; END $$",
        "COMMIT",
        "SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relname LIKE 'q%'",
    )
    assert rows == [(0,)]


def test_a_streamed_run_is_refused_inside_the_server_where_no_second_connection_is(pl: str) -> None:
    state, message = failure(pl, ANONYMIZE.format(extra=", mode => 'streamed'"))
    assert state == "22023"
    assert "cannot open the second connection a streamed run reads through" in message
    assert message.startswith("Error: ") and message.count("Error:") == 1


@pytest.mark.parametrize(
    "call",
    [
        "SELECT sbc.anonymize(source => 't', k => 1)",
        "SELECT sbc.anonymize(source => 'missing', k => 3)",
        "SELECT sbc.verify('t', 'nope', 3)",
        "SELECT sbc.measure(NULL, 'r')",
    ],
)
def test_an_error_is_its_one_line_without_a_python_traceback(pl: str, call: str) -> None:
    """The error of a call made from SQL is the command line's line, raised by the SQL
    function: its CONTEXT is the one line PostgreSQL gives any function's error, never the
    Python traceback PL/Python gives an exception (where it was raised, line by line)."""
    with pytest.raises(adbc_driver_manager.Error) as caught:
        sql(pl, call)
    details = dict(caught.value.details)
    assert details[b"PG_DIAG_MESSAGE_PRIMARY"].decode().startswith("Error: ")
    assert details[b"PG_DIAG_SQLSTATE"] == b"22023"
    (context,) = details[b"PG_DIAG_CONTEXT"].decode().splitlines()
    assert re.fullmatch(r"PL/pgSQL function sbc\.(anonymize|verify|measure)\(.*\) line \d+ at RAISE", context)
    assert "Traceback" not in str(caught.value) and "PL/Python" not in str(caught.value)


def test_a_fault_is_named_by_its_type_and_place_never_its_text() -> None:
    try:
        int("Jane-4711")
    except ValueError as err:
        said = server.fault(err)
    assert said.startswith("sbc-sql failed with ValueError at test_plpython.py:")
    assert "Jane" not in said


def test_a_file_on_the_servers_disk_is_never_read(pl: str) -> None:
    state, message = failure(pl, "SELECT sbc.anonymize(source => '/etc/passwd.csv', k => 3)")
    assert state == "22023" and "never a file on the server's disk" in message


def test_install_is_idempotent_and_uninstall_removes_what_it_made(pl: str, server_path: list[str]) -> None:
    assert sql(pl, "SELECT extname FROM pg_extension WHERE extname = 'plpython3u'") == [("plpython3u",)]
    again = install_sql.install(pl, python_path=server_path)
    assert again.created_extension and again.server["sbc_sql"] == sbc_sql.__version__
    sql(pl, ANONYMIZE.format(extra=""))  # still works
    result = run_cli(["install-sql", "--db", pl, "--uninstall"])
    assert result.exit_code == 0, result.stderr
    assert "extension plpython3u" in result.stdout
    assert sql(pl, "SELECT count(*) FROM pg_namespace WHERE nspname = 'sbc'") == [(0,)]
    assert sql(pl, "SELECT count(*) FROM pg_extension WHERE extname = 'plpython3u'") == [(0,)]
    assert sbc_sql.verify(pl, "t", "r", 3).ok  # the releases stay
    result = run_cli(["install-sql", "--db", pl, "--uninstall"])
    assert result.exit_code == 0 and "nothing to uninstall" in result.stdout


def test_uninstall_keeps_an_extension_it_did_not_create(postgres_url: str, server_path: list[str]) -> None:
    sql(postgres_url, "CREATE EXTENSION plpython3u")
    assert not install_sql.install(postgres_url, python_path=server_path).created_extension
    assert "extension plpython3u" not in install_sql.uninstall(postgres_url)
    assert sql(postgres_url, "SELECT count(*) FROM pg_extension WHERE extname = 'plpython3u'") == [(1,)]


def test_install_refuses_a_schema_it_did_not_make(postgres_url: str, server_path: list[str]) -> None:
    sql(postgres_url, "CREATE SCHEMA sbc", "CREATE TABLE sbc.mine (a int)")
    paths = [f"--python-path={p}" for p in server_path]
    for argv in (
        ["install-sql", "--db", postgres_url, *paths],
        ["install-sql", "--db", postgres_url, "--uninstall"],
    ):
        result = run_cli(argv)
        assert result.exit_code == 1
        assert result.stderr.count("\n") == 1 and "was not made by sbc-sql install-sql" in result.stderr
    assert sql(postgres_url, "SELECT count(*) FROM sbc.mine") == [(0,)]


def test_install_that_cannot_import_sbc_sql_leaves_nothing(postgres_url: str) -> None:
    result = run_cli(["install-sql", "--db", postgres_url, "--python-path", "/nonexistent/site-packages"])
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: the server's Python cannot run sbc-sql from /nonexistent")
    assert "ModuleNotFoundError" in result.stderr and result.stderr.count("\n") == 1
    assert sql(postgres_url, "SELECT count(*) FROM pg_namespace WHERE nspname = 'sbc'") == [(0,)]
    assert sql(postgres_url, "SELECT count(*) FROM pg_extension WHERE extname = 'plpython3u'") == [(0,)]


def test_only_granted_roles_may_call_the_functions(postgres_url: str, server_path: list[str]) -> None:
    sql(postgres_url, "DROP ROLE IF EXISTS sbc_analyst", "CREATE ROLE sbc_analyst LOGIN")
    try:
        install_sql.install(postgres_url, python_path=server_path)
        analyst = postgres_url.replace("postgres@", "sbc_analyst@", 1)
        state, _ = failure(analyst, "SELECT sbc.version()")
        assert state == "42501"
        install_sql.install(postgres_url, python_path=server_path, grant=["sbc_analyst"])
        (version,) = sql(analyst, "SELECT sbc.version()")[0]
        assert json.loads(version)["sbc_sql"] == sbc_sql.__version__
        install_sql.uninstall(postgres_url)
    finally:
        sql(postgres_url, "DROP OWNED BY sbc_analyst", "DROP ROLE sbc_analyst")


def test_install_without_plpython_names_the_package(postgres_url: str, monkeypatch) -> None:
    """A server without PL/Python lists no plpython3u among its available extensions."""
    from sbc_sql.engines.postgres import PostgresEngine

    real = PostgresEngine._fetch

    def without(self, text, params):
        if "pg_available_extensions" in text:
            return []
        return real(self, text, params)

    monkeypatch.setattr(PostgresEngine, "_fetch", without)
    with pytest.raises(sbc_sql.InputError, match=r"apt-get install postgresql-plpython3-\d+"):
        install_sql.install(postgres_url)
    assert pg_rows(postgres_url, "SELECT count(*) FROM pg_namespace WHERE nspname = 'sbc'") == [(0,)]


def test_the_sql_functions_take_the_parameters_the_server_reads() -> None:
    text = "\n".join(install_sql.functions_sql(["/opt/sbc-sql"]))
    for name, parameters in server.PARAMETERS.items():
        declared = re.search(rf"FUNCTION sbc\.{name}\((.*?)\) RETURNS", text, re.S)
        assert declared is not None
        names = tuple(p.split()[0] for p in declared.group(1).split(",") if p.strip())
        assert names == parameters
        signature = next(f for f in install_sql.FUNCTIONS if f.startswith(name + "("))
        types = [t.strip() for t in signature[len(name) + 1 : -1].split(",") if t.strip()]
        assert len(types) == len(parameters)


def test_another_roles_overloads_of_built_ins_never_run_inside_the_server(pl: str) -> None:
    """The search_path trojan against the SQL functions: a role that may create in public
    overloads array_agg and = for the source's types; a superuser's sbc.anonymize,
    sbc.verify and sbc.measure run none of them, and the role stays without privileges."""
    role = plant_trojan(pl)
    try:
        (summary,) = sql(pl, ANONYMIZE.format(extra=""))[0]
        assert json.loads(summary)["release"] == "r"
        criteria = ", l_diversity => 2, t_closeness => 0.9, beta_likeness => 50"
        qualified = ANONYMIZE.format(extra=criteria).replace("'t'", "'public.t'").replace("'r'", "'r2'")
        (summary,) = sql(pl, qualified)[0]
        assert json.loads(summary)["release"] == "r2"
        (checked,) = sql(pl, "SELECT sbc.verify('t', 'r', 3)")[0]
        assert json.loads(checked)["ok"] is True
        (measured,) = sql(pl, "SELECT sbc.measure('public.t', 'r')")[0]
        assert json.loads(measured)["ok"] is True
        assert trojan_ran(pl, role) == ([], False)
    finally:
        drop_trojan(pl, role)


def test_every_sql_function_runs_with_pg_catalog_alone_on_its_search_path(pl: str) -> None:
    rows = sql(
        pl,
        "SELECT p.proname, p.proconfig FROM pg_catalog.pg_proc p "
        "WHERE p.pronamespace = 'sbc'::regnamespace ORDER BY 1",
    )
    assert [r[0] for r in rows] == [
        *("anonymize", "measure"),
        *("python_anonymize", "python_measure", "python_refresh", "python_verify", "python_version"),
        *("refresh", "verify", "version"),
    ]
    assert all(r[1] == ["search_path=pg_catalog, pg_temp"] for r in rows), rows


def each(url: str, *statements: str) -> list[list[tuple]]:
    """Run statements on one connection (one session, autocommit); every one's rows."""
    out: list[list[tuple]] = []
    with adbc.connect(url, autocommit=True) as con, con.cursor() as cur:
        for statement in statements:
            cur.execute(statement)
            out.append([tuple(r) for r in cur.fetchall()] if cur.description else [])
    return out


def test_the_sessions_python_path_is_left_as_it_was(pl: str) -> None:
    """After an sbc.* call (one that fails too) a plain PL/Python function of the same
    session sees the sys.path it saw before."""
    sql(
        pl,
        "CREATE FUNCTION public.python_path() RETURNS text LANGUAGE plpython3u AS "
        "$p$\nimport json, sys\nreturn json.dumps(sys.path)\n$p$",
    )
    before, _, after_version, _, after_run, _, after_failure = each(
        pl,
        "SELECT public.python_path()",
        "SELECT sbc.version()",
        "SELECT public.python_path()",
        ANONYMIZE.format(extra=""),
        "SELECT public.python_path()",
        "DO $$ BEGIN PERFORM sbc.anonymize(source => 't', k => 1); "
        "EXCEPTION WHEN invalid_parameter_value THEN NULL; END $$",
        "SELECT public.python_path()",
    )
    assert before == after_version == after_run == after_failure


@pytest.mark.parametrize(
    ("call", "said"),
    [
        ("sbc.anonymize('t', 3, keep => ARRAY[NULL]::text[])", "keep => holds 1 NULL"),
        ("sbc.anonymize('t', 3, qi => ARRAY['age', NULL])", "qi => holds 1 NULL"),
        ("sbc.anonymize('t', 3, sensitive => ARRAY[NULL]::text[])", "sensitive => holds 1 NULL"),
        ("sbc.anonymize('t', 3, drop_columns => ARRAY[NULL, 'id'])", "drop_columns => holds 1 NULL"),
        ("sbc.verify(NULL, 'r', 3)", "original => is NULL"),
        ("sbc.verify('t', NULL, 3)", "release => is NULL"),
        ("sbc.verify('t', 'r', NULL)", "k => is NULL"),
        ("sbc.measure(NULL, 'r')", "original => is NULL"),
        ("sbc.measure('t', NULL)", "release => is NULL"),
    ],
)
def test_a_null_argument_is_bad_input_in_one_line(pl: str, call: str, said: str) -> None:
    state, message = failure(pl, f"SELECT {call}")
    assert state == "22023", message
    assert message.startswith("Error: " + said) and message.count("Error:") == 1


def test_unqualified_names_are_read_in_the_schema_the_sessions_default_path_makes_current(
    pl: str,
) -> None:
    """The functions run with their own search_path, so an unqualified source or output is
    in the schema the session's default search_path (the server's, the database's or the
    role's setting) makes current: here the database's, work."""
    sql(
        pl,
        "CREATE SCHEMA work",
        "CREATE TABLE work.t AS SELECT * FROM public.t",
        "DO $$ BEGIN EXECUTE pg_catalog.format('ALTER DATABASE %I SET search_path = work, public', "
        "pg_catalog.current_database()); END $$",
    )
    (summary,) = sql(pl, ANONYMIZE.format(extra=""))[0]
    assert json.loads(summary)["release"] == "r"
    assert sql(pl, "SELECT count(*) FROM work.r") == [(60,)]
    assert sql(pl, "SELECT pg_catalog.to_regclass('public.r') IS NULL") == [(True,)]
    (checked,) = sql(pl, "SELECT sbc.verify('t', 'r', 3)")[0]
    assert json.loads(checked)["ok"] is True


@pytest.mark.parametrize(
    ("setup", "extra", "needles"),
    [
        (
            "UPDATE t SET seen = 'infinity' WHERE id % 7 = 0",
            "",
            ["numeric quasi-identifier 'seen' (", "infinite value(s)", "keep => ...", "drop_columns => ..."],
        ),
        (
            "SELECT 1",
            ", beta_likeness => 'Infinity'",
            ["beta_likeness => 'inf' is not a finite number above 0", "beta_likeness => 1"],
        ),
    ],
    ids=["infinite timestamp", "infinite beta"],
)
def test_a_refusal_names_the_functions_own_arguments_and_the_fix(pl: str, setup, extra, needles) -> None:
    """An infinite timestamp QI failed with an unexplained 0A000 advising 'debug => ...', an
    argument sbc.anonymize does not have; an infinite beta was 'not above 0'."""
    state, message = failure(pl, setup, ANONYMIZE.format(extra=extra))
    assert state == "22023", message
    for needle in needles:
        assert needle in message, (needle, message)
    assert "debug" not in message and "sql =>" not in message and "--" not in message


def test_a_kept_column_that_determines_a_qi_is_refused_in_the_functions_terms_unless_allowed(pl: str) -> None:
    """sex_code codes the QI sex one to one: sbc.anonymize refuses it kept, naming its own
    arguments as the fix, takes allow_determinant, and sbc.verify reports it until the
    auditor accepts it."""
    code = "ALTER TABLE t ADD COLUMN sex_code text GENERATED ALWAYS AS ('c' || sex) STORED"
    state, message = failure(pl, code, ANONYMIZE.format(extra=", keep => ARRAY['sex_code']"))
    assert state == "22023", message
    for needle in (
        "column 'sex_code' is released as it is (keep => ...)",
        "determines quasi-identifier 'sex'",
        "qi => 'sex_code'",
        "drop_columns => 'sex_code'",
        "allow_determinant => 'sex_code'",
    ):
        assert needle in message, (needle, message)
    assert "--" not in message
    allowed = ", keep => ARRAY['sex_code'], allow_determinant => ARRAY['sex_code']"
    (summary,) = sql(pl, ANONYMIZE.format(extra=allowed))[0]
    assert json.loads(summary)["rows"] == 60
    verdict = json.loads(sql(pl, "SELECT sbc.verify('t', 'r', 3)::text")[0][0])
    assert not verdict["ok"]
    assert any("determines quasi-identifier 'sex'" in p for p in verdict["problems"]), verdict
    accepted = sql(pl, "SELECT sbc.verify('t', 'r', 3, allow_determinant => ARRAY['sex_code'])::text")
    assert json.loads(accepted[0][0])["ok"] is True


def test_verify_takes_the_auditors_suppression_bound_and_an_upgrade_leaves_one_verify(
    pl: str, server_path: list[str]
) -> None:
    """sbc.verify's max_suppression: a copy of a release without provenance that lacks a
    class fails unless the auditor allows that many rows; an install over one whose verify
    took fewer arguments leaves a single sbc.verify (CREATE OR REPLACE would add an overload
    beside it, and a call would be ambiguous)."""
    sql(pl, ANONYMIZE.format(extra=""))
    sql(
        pl,
        "CREATE TABLE c AS SELECT * FROM r",
        "DELETE FROM c WHERE eq_class = (SELECT MIN(eq_class) FROM c)",
    )
    verdict = json.loads(sql(pl, "SELECT sbc.verify('t', 'c', 3)::text")[0][0])
    assert not verdict["ok"]
    assert any("no provenance records them as suppressed" in p for p in verdict["problems"]), verdict
    allowed = json.loads(sql(pl, "SELECT sbc.verify('t', 'c', 3, max_suppression => 0.5)::text")[0][0])
    assert allowed["ok"], allowed
    # the auditor's own roles: an identifier the auditor names is refused in the release
    said = json.loads(sql(pl, "SELECT sbc.verify('t', 'r', 3, identifier => ARRAY['age'])::text")[0][0])
    assert not said["ok"] and any("which the auditor declares an identifier" in p for p in said["problems"])
    state, message = failure(pl, "SELECT sbc.verify('t', 'r', 3, keep => ARRAY[NULL])")
    assert state == "22023" and message.startswith("Error: keep => holds 1 NULL(s)"), message
    # the verify of the version before the argument, as an earlier install left it
    sql(
        pl,
        "CREATE FUNCTION sbc.verify(text, text, integer, integer DEFAULT NULL, text DEFAULT 'distinct', "
        "double precision DEFAULT NULL, double precision DEFAULT NULL, boolean DEFAULT false) "
        "RETURNS jsonb LANGUAGE sql AS $$ SELECT '{}'::jsonb $$",
    )
    install_sql.install(pl, python_path=server_path)
    assert sql(
        pl, "SELECT count(*) FROM pg_proc WHERE proname = 'verify' AND pronamespace = 'sbc'::regnamespace"
    ) == [(1,)]
    assert json.loads(sql(pl, "SELECT sbc.verify('t', 'r', 3)::text")[0][0])["ok"]
