-- The SQL functions of `sbc-sql install-sql`: PL/Python (plpython3u) functions in the schema
-- sbc that run sbc-sql inside the server, in the caller's session and transaction. Each
-- body's prelude (written in by install-sql) makes the sbc_sql package importable from where
-- install-sql found it and imports sbc_sql.server.call, which takes the arguments in
-- declaration order and returns JSON; the session's sys.path is put back as it was when the
-- call returns, so that later PL/Python functions of the session import what they did before.
-- Each function runs with search_path = pg_catalog, pg_temp (pg_temp explicitly last): no
-- function, operator or table of a schema another role may create in is found by name while
-- it runs (sbc_sql.engines.postgres.SEARCH_PATH).
-- Each function's arguments (__ARGUMENTS__) are written in by install-sql from the options'
-- catalogue (sbc_sql/plan/catalogue.py): their names, types, defaults and order, which
-- positional callers rely on, are those of the matching command's options.
-- Statements are separated by a line holding only ';'.

CREATE OR REPLACE FUNCTION sbc.anonymize(
__ARGUMENTS__
) RETURNS jsonb LANGUAGE plpython3u VOLATILE
SET search_path = pg_catalog, pg_temp AS $sbc$
import sys
sbc_sys_path = list(sys.path)
__PRELUDE__
try:
    return call(plpy, "anonymize", args)
finally:
    sys.path[:] = sbc_sys_path
$sbc$
;
CREATE OR REPLACE FUNCTION sbc.verify(
__ARGUMENTS__
) RETURNS jsonb LANGUAGE plpython3u VOLATILE
SET search_path = pg_catalog, pg_temp AS $sbc$
import sys
sbc_sys_path = list(sys.path)
__PRELUDE__
try:
    return call(plpy, "verify", args)
finally:
    sys.path[:] = sbc_sys_path
$sbc$
;
CREATE OR REPLACE FUNCTION sbc.measure(
__ARGUMENTS__
) RETURNS jsonb LANGUAGE plpython3u VOLATILE
SET search_path = pg_catalog, pg_temp AS $sbc$
import sys
sbc_sys_path = list(sys.path)
__PRELUDE__
try:
    return call(plpy, "measure", args)
finally:
    sys.path[:] = sbc_sys_path
$sbc$
;
CREATE OR REPLACE FUNCTION sbc.version() RETURNS jsonb LANGUAGE plpython3u VOLATILE
SET search_path = pg_catalog, pg_temp AS $sbc$
import sys
sbc_sys_path = list(sys.path)
__PRELUDE__
try:
    return call(plpy, "version", args)
finally:
    sys.path[:] = sbc_sys_path
$sbc$
