-- The SQL functions of `sbc-sql install-sql` in the schema sbc, which run sbc-sql inside
-- the server, in the caller's session and transaction. This file is the pair of functions
-- install-sql creates for each of them (anonymize, verify, measure, version: __NAME__):
-- * sbc.python___NAME__, a PL/Python (plpython3u) function. Its body's prelude (written in
--   by install-sql) checks the directories it imports from, makes the sbc_sql package
--   importable from where install-sql found it and imports sbc_sql.server.call, which
--   takes the arguments in declaration order and returns JSON: the command's document, or
--   {"sbc_error": {"message": ..., "sqlstate": ...}} for an error. The session's sys.path is
--   put back as it was when the call returns, so that later PL/Python functions of the
--   session import what they did before.
-- * sbc.__NAME__, the function callers call: PL/pgSQL, which passes its arguments on and
--   returns the document, or raises the error as a PostgreSQL error of that SQLSTATE whose
--   text is the command line's Error: line, and nothing else: an error raised by PL/Python
--   itself would carry a Python traceback as its CONTEXT, and RAISE gives none.
-- Each function runs with search_path = pg_catalog, pg_temp (pg_temp explicitly last): no
-- function, operator or table of a schema another role may create in is found by name while
-- it runs (sbc_sql.engines.postgres.SEARCH_PATH).
-- The arguments (__ARGUMENTS__) are written in by install-sql from the options' catalogue
-- (sbc_sql/plan/catalogue.py): their names, types, defaults and order, which positional
-- callers rely on, are those of the matching command's options; __PASSED__ is each of them
-- in order ($1, $2, ...).
-- Statements are separated by a line holding only ';'.
CREATE OR REPLACE FUNCTION sbc.python___NAME__(__ARGUMENTS__) RETURNS jsonb LANGUAGE plpython3u VOLATILE
SET search_path = pg_catalog, pg_temp AS $sbc$
import sys
sbc_sys_path = list(sys.path)
__PRELUDE__
try:
    return call(plpy, "__NAME__", args)
finally:
    sys.path[:] = sbc_sys_path
$sbc$
;
CREATE OR REPLACE FUNCTION sbc.__NAME__(__ARGUMENTS__) RETURNS jsonb LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp AS $sbc$
DECLARE
    answer jsonb := sbc.python___NAME__(__PASSED__);
BEGIN
    IF answer ? 'sbc_error' THEN
        RAISE EXCEPTION USING
            MESSAGE = answer #>> '{sbc_error,message}',
            ERRCODE = answer #>> '{sbc_error,sqlstate}';
    END IF;
    RETURN answer;
END
$sbc$
;
