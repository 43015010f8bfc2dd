-- The SQL functions of `sbc-sql install-sql`: PL/Python (plpython3u) functions in the schema
-- sbc that run sbc-sql inside the server, in the caller's session and transaction. Each
-- body's prelude (written in by install-sql) makes the sbc_sql package importable from where
-- install-sql found it and imports sbc_sql.server.call, which takes the arguments in
-- declaration order and returns JSON.
-- Statements are separated by a line holding only ';'.

CREATE OR REPLACE FUNCTION sbc.anonymize(
    source text,
    k integer,
    output text DEFAULT NULL,
    qi text[] DEFAULT NULL,
    sensitive text[] DEFAULT NULL,
    drop_columns text[] DEFAULT NULL,
    keep text[] DEFAULT NULL,
    replace boolean DEFAULT false,
    leftover text DEFAULT 'nearest',
    weights text DEFAULT NULL,
    algorithm text DEFAULT 'sbca',
    mode text DEFAULT 'auto',
    max_suppression double precision DEFAULT 0.01,
    l_diversity integer DEFAULT NULL,
    l_model text DEFAULT 'distinct',
    t_closeness double precision DEFAULT NULL,
    beta_likeness double precision DEFAULT NULL,
    beta_basic boolean DEFAULT false,
    seed integer DEFAULT NULL
) RETURNS jsonb LANGUAGE plpython3u VOLATILE AS $sbc$
__PRELUDE__
return call(plpy, "anonymize", args)
$sbc$
;
CREATE OR REPLACE FUNCTION sbc.verify(
    original text,
    release text,
    k integer,
    l_diversity integer DEFAULT NULL,
    l_model text DEFAULT 'distinct',
    t_closeness double precision DEFAULT NULL,
    beta_likeness double precision DEFAULT NULL,
    beta_basic boolean DEFAULT false
) RETURNS jsonb LANGUAGE plpython3u VOLATILE AS $sbc$
__PRELUDE__
return call(plpy, "verify", args)
$sbc$
;
CREATE OR REPLACE FUNCTION sbc.measure(
    original text,
    release text,
    weights text DEFAULT NULL
) RETURNS jsonb LANGUAGE plpython3u VOLATILE AS $sbc$
__PRELUDE__
return call(plpy, "measure", args)
$sbc$
;
CREATE OR REPLACE FUNCTION sbc.version() RETURNS jsonb LANGUAGE plpython3u VOLATILE AS $sbc$
__PRELUDE__
return call(plpy, "version", args)
$sbc$
